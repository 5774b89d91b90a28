#!/usr/bin/perl

# Only the proxy module forwards from an Airlock location, and nothing
# that runs after the scrubber prints what the upstream sent.  A route's
# credential is a removed header of the request: scgi_pass (fastcgi_pass,
# uwsgi_pass and grpc_pass alike) would send it to its own backend, and
# SSI would print it when the upstream's answer, here the client's body
# echoed, asks for $upstream_http_NAME (the upstream's headers as they
# came, before the scrubber).  nginx -t refuses both
# (50-airlock-location-checks.t); here a reload to each changes nothing:
# the SCGI backend gets nothing and the answer holds no credential.  A
# module that took them leaks the credential both ways.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use JSON::PP;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;
my $tok = 'content-handler-secret-0123456789';
my $sealed = $p->seal($tok);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
alerts:
  deny: { threshold: 1000, window: 60s }
routes:
  - name: scgi
    clients: [local]
    match: { method: GET, path: /scgi }
    upstream: echo
    to: /scgi
    inject: { Authorization: "Bearer {tok}" }
  - name: ssi
    clients: [local]
    match: { method: POST, path: /ssi }
    upstream: echo
    to: /__reflect-headers/ssi
    body: { max_bytes: 1000 }
    inject: { Authorization: "Bearer {tok}" }
EOF

# the standard configuration: both routes go through "location /"
$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);

my $scgi_log = $t->write_file('scgi.log', '');
$t->run_daemon($^X, "$FindBin::Bin/../lib/scgi-upstream.pl",
               $t->port(8085), '--log', $scgi_log);
$t->wait_for_port(8085) or die "scgi backend did not start";

$t->run;

plan tests => 10;

# the headers the SCGI backend got, as "NAME: value"
sub scgi_headers {
    return map { map { "$_->[0]: $_->[1]" } @{decode_json($_)->{headers}} }
           grep { length } split /\n/, $t->read_file('scgi.log');
}

sub get_scgi {
    return $t->http("GET /scgi HTTP/1.1\r\nHost: localhost\r\n"
                    . "Connection: close\r\n\r\n");
}

sub post_ssi {
    my $body = q{<!--# echo var='upstream_http_x_echo_authorization' -->};
    return $t->http("POST /ssi HTTP/1.1\r\nHost: localhost\r\n"
                    . "Content-Type: text/plain\r\n"
                    . 'Content-Length: ' . length($body) . "\r\n"
                    . "Connection: close\r\n\r\n$body");
}

# scgi_pass in an Airlock location

$t->write_file_expand('nginx.conf', $p->conf(locations => <<'EOF'));
        location = /scgi {
            airlock on;
            scgi_pass 127.0.0.1:%%PORT_8085%%;
        }
EOF

my ($ok, $why) = $t->reload(allow_fail => 1);
ok(!$ok, 'scgi_pass: the reload is refused');
like($why // '', qr/airlock location "\/scgi" has "scgi_pass"/,
     'scgi_pass: the message names the location and the directive');

my $raw = get_scgi();
like($raw, qr{^HTTP/1\.1 200}, 'scgi: the route still answers');

# the SCGI backend answers at once: anything sent to it is logged by now
my @h = scgi_headers();
ok(!grep({ index($_, $tok) >= 0 } @h), 'the SCGI backend gets no credential')
    or diag(join "\n", @h);

my @e = grep { $_->{target} eq '/scgi' } $t->echo_requests(8081);
ok(@e && grep({ lc $_->[0] eq 'authorization'
                && $_->[1] eq "Bearer $tok" } @{$e[-1]{headers}}),
   'scgi: the route\'s upstream gets the credential');

# SSI in an Airlock location, its command in the client's body, echoed by
# the upstream with the credential in a header

$t->write_file_expand('nginx.conf', $p->conf(locations => <<'EOF'));
        location = /ssi {
            airlock on;
            %%AIRLOCK_LOCATION%%
            ssi on;
            ssi_types *;
        }
EOF

($ok, $why) = $t->reload(allow_fail => 1);
ok(!$ok, 'ssi on: the reload is refused');
like($why // '', qr/airlock location "\/ssi" has "ssi on"/,
     'ssi on: the message names the location');

$raw = post_ssi();
like($raw, qr{^HTTP/1\.1 200}, 'ssi: the route still answers');
unlike($raw, qr/\Q$tok\E/, 'ssi: no credential in the answer')
    or diag($raw);

is($t->error_log_check(qr/airlock location "\/(scgi|ssi)" has/), '',
   'no alerts');
