#!/usr/bin/perl

# "proxy_pass_request_headers off" in an Airlock location, here or
# inherited, fails "nginx -t", naming the location.  The body was checked
# as its Content-Type says and would reach the upstream without one: a
# text/plain body "_method=DELETE" passes (it is not a form), and Rack
# reads a POST without a Content-Type as a form, so the route's POST ran
# as a DELETE there (the same bytes sent untyped are refused).  The
# directive outside Airlock locations, and "on", pass; with the standard
# location body the upstream gets the Content-Type the body was checked
# as.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

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
    body: { max_bytes: 256 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

# nginx -t of this nginx.conf
sub conf_test { $p->conf_test(@_) }

my $msg = qr/airlock location "\/" has "proxy_pass_request_headers off": (?x)
              the\ upstream\ would\ read\ the\ checked\ body\ without
              \ the\ Content-Type/;

my @refused = (
    [ 'in the location', location => 'proxy_pass_request_headers off;' ],
    [ 'inherited from the server',
      server => 'proxy_pass_request_headers off;' ],
    [ 'inherited from the http level',
      http => 'proxy_pass_request_headers off;' ],
);

my @accepted = (
    [ 'proxy_pass_request_headers on',
      location => 'proxy_pass_request_headers on;' ],
    [ 'off outside Airlock locations', locations => <<'EOF' ],
        location /side/ {
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
            proxy_pass_request_headers off;
        }
EOF
);

plan tests => 2 * @refused + @accepted + 4;

my ($status, $out);

for my $c (@refused) {
    my ($name, %o) = @$c;
    ($status, $out) = conf_test($p->conf(%o));
    isnt($status, 0, "$name: nginx -t fails");
    like($out, $msg, "$name: the message names the location and why");
}

for my $c (@accepted) {
    my ($name, %o) = @$c;
    ($status, $out) = conf_test($p->conf(%o));
    is($status, 0, "$name: passes") or diag($out);
}

# the standard location: the body goes with the type it was checked as

$t->write_file_expand('nginx.conf', $p->conf);
$t->start_echo(8081);
$t->run;

my $r = parse_response(http_post('/raw', '_method=DELETE',
                  headers => { 'Content-Type' => 'text/plain' }));
is($r->{status}, 200, 'text/plain "_method=DELETE": 200');

my @seen = $t->echo_requests(8081);
is_deeply([ map { $_->[1] } grep { lc $_->[0] eq 'content-type' }
            @{$seen[-1]{headers}} ],
          [ 'text/plain' ], 'the upstream got the Content-Type checked');

$r = parse_response(http_post('/raw', '_method=DELETE', headers => {}));
is($r->{status}, 403, 'the same body untyped: refused');

is($t->error_log_check, '', 'no alerts');
