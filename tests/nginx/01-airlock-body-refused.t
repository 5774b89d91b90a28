#!/usr/bin/perl

# ngx_http_airlock_module: a request body nginx refuses while Airlock reads
# it (a bad chunk, a chunked body over client_max_body_size) is a framing
# attack on a route that takes a body, as those refused before the
# decision are (53-airlock-refused-early.t): it writes one deny line with
# reason "refused" and the status in the detail, and is counted toward
# the client's alerts.  nginx's own answer is unchanged, also when an
# error_page leads it to an Airlock location (the body error answered
# there in JSON).  A body that is read writes no such line.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Time::HiRes qw(sleep time);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: raw
    clients: [local]
    match: { method: POST, path: /raw }
    upstream: echo
    to: /raw
    body: { max_bytes: 100 }
  - name: paged
    clients: [local]
    match: { method: POST, path: /paged/raw }
    upstream: echo
    to: /raw
    body: { max_bytes: 100 }
alerts:
  deny: { threshold: 3, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(key => 0,
    http => <<'EOF',
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log;
    client_max_body_size 200;
EOF
    locations => <<'EOF'));
        location /paged/ {
            airlock on;
            %%AIRLOCK_LOCATION%%
            error_page 400 413 /paged-error;
        }

        location = /paged-error {
            airlock on;
            airlock_error_json;
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 20;

sub status { parse_response($_[0] // '')->{status} // 0 }

# nginx logs a request when it is done with it, after a lingering close
# for some: wait for the line (a bound, not a measure)
sub deny_lines_after {
    my ($before) = @_;
    my $until = time + 10;
    my @log;

    while (time < $until) {
        @log = $p->deny_log;
        last if @log > $before;
        sleep 0.05;
    }

    return @log;
}

sub head {
    my ($uri) = @_;
    return "POST $uri HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
         . "Transfer-Encoding: chunked\r\n\r\n";
}

my $bad = "zz\r\nabc\r\n0\r\n\r\n";
my $big = sprintf("%x\r\n%s\r\n0\r\n\r\n", 300, 'x' x 300);

my @cases = (
    [ 'a bad chunk', [ head('/raw') . $bad ], 400 ],
    [ 'a bad chunk, sent late', [ head('/raw'), $bad ], 400 ],
    [ 'a chunked body over client_max_body_size',
      [ head('/raw') . $big ], 413 ],
    [ 'a bad chunk, error_page to an Airlock location',
      [ head('/paged/raw'), $bad ], 400 ],
    [ 'over client_max_body_size, error_page to an Airlock location',
      [ head('/paged/raw'), $big ], 413 ],
);

for my $c (@cases) {
    my ($name, $req, $code) = @$c;
    my $before = $p->deny_count;
    my $route = $req->[0] =~ /paged/ ? 'paged' : 'raw';

    is(status(http($req, pause => 0.2)), $code, "$name: nginx answers $code");

    my @log = deny_lines_after($before);
    is(scalar(@log), $before + 1, "$name: one deny line");
    my $l = $log[-1] // {};
    ok(($l->{reason} // '') eq 'refused' && ($l->{client} // '') eq 'local'
       && ($l->{route} // '') eq $route
       && ($l->{detail} // '') eq "nginx answered $code while the body "
                                  . "was read",
       "$name: reason refused, client and route, the status in the detail");
}

# counted: the third crossed alerts.deny.threshold 3

my @alerts = grep { /"type":"alert"/ } split /\n/,
             $t->read_file('journal.log') // '';
like($alerts[0] // '',
     qr/"kind":"deny_threshold".*"client":"local".*"reason":"refused"/,
     'the refusals raise a deny_threshold alert');

# a body that is read, over max_bytes or not, is decided as before

my $before = $p->deny_count;
my $ok = sprintf("%x\r\n%s\r\n0\r\n\r\n", 10, 'y' x 10);

is(status(http(head('/raw') . $ok)), 200, 'a good chunked body: 200');

my $over = sprintf("%x\r\n%s\r\n0\r\n\r\n", 150, 'y' x 150);
is(status(http(head('/raw') . $over)), 403,
   'over max_bytes, under client_max_body_size: 403');

my @log = deny_lines_after($before);
is_deeply([ map { $_->{reason} } @log[$before .. $#log] ],
          [ 'body_too_large' ], 'only the refusal of the route is logged');

is($t->error_log_check, '', 'no alerts');
