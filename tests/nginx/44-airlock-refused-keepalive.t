#!/usr/bin/perl

# ngx_http_airlock_module: after the scrubber refuses an encoded response
# with 502, the client's connection either answers its next request or is
# closed; a request sent on it is never left without an answer.  With and
# without an error_page for the 502, for a held (small) body and a streamed
# one.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = $ENV{AIRLOCK_LOG_LEVEL} // 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 'keepalive-s3cr3t-TOKEN-0123456789';
my $sealed = $p->seal($tok);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: gzip
    clients: [local]
    match: { method: GET, path: /gzip }
    upstream: echo
    to: /gzip
    inject: { Authorization: "Bearer {tok}" }
  - name: gzip-big
    clients: [local]
    match: { method: GET, path: /gzip-big }
    upstream: echo
    to: /gzip-big
    inject: { Authorization: "Bearer {tok}" }
  - name: bare
    clients: [local]
    match: { method: GET, path: /bare/gzip }
    upstream: echo
    to: /gzip
    inject: { Authorization: "Bearer {tok}" }
  - name: plain
    clients: [local]
    match: { method: GET, path: /plain }
    upstream: echo
    to: /plain
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

my $loc = <<'EOF';
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_set_header X-Echo-Header "Content-Encoding: gzip";
EOF

$t->write_file_expand('nginx.conf', $p->conf(locations => <<"EOF"));
        location = /gzip {
$loc
            error_page 502 \@airlock_error;
        }

        location = /gzip-big {
$loc
            proxy_set_header X-Echo-Size 300000;
            error_page 502 \@airlock_error;
        }

        location /bare/ {
$loc
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 13;

# Two requests on one connection.  Returns the first response, and the
# second one; when the first answer says "Connection: close", "closed" if
# the connection is then closed (the second request is not sent).
sub two {
    my ($first, $second) = @_;
    my $req = "GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n";
    my $s = http(sprintf($req, $first, ''), start => 1) or return;
    my $r1 = http(undef, socket => $s, one => 1);
    my $r2;

    if ((parse_response($r1)->{headers}{connection} // '') =~ /close/i) {
        my $buf = '';
        $r2 = IO::Select->new($s)->can_read(30)
              && defined sysread($s, $buf, 1) && !length $buf
              ? 'closed' : 'not closed';

    } else {
        $r2 = http(sprintf($req, $second, "Connection: close\r\n"),
                   socket => $s);
    }

    close $s;
    return ($r1, $r2);
}

my ($r1, $r2);

for my $case (['/gzip', 'held body, error_page'],
              ['/gzip-big', 'streamed body, error_page'],
              ['/bare/gzip', 'no error_page'])
{
    my ($uri, $name) = @$case;

    ($r1, $r2) = two($uri, '/plain');
    is(parse_response($r1)->{status}, 502, "$name: 502");
    ok(index($r1, $tok) < 0, "$name: no secret");
    ok($r2 eq 'closed' || (parse_response($r2)->{status} // 0) == 200,
       "$name: the next request is answered, or the connection closed");
}

# the connection stays usable after an ordinary answer

($r1, $r2) = two('/plain', '/plain');
is(parse_response($r1)->{status}, 200, 'plain: 200');
is(parse_response($r2)->{status}, 200, 'plain: the next request too');

my $log = $t->read_file('airlock.log') // '';
unlike($log, qr/ 499$/m, 'no request was lost (499)');

is($t->error_log_check, '', 'no alerts');
