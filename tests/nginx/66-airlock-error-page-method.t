#!/usr/bin/perl

# An error_page to a URI (not a named location) makes nginx redirect the
# request as a GET (ngx_http_send_error_page(): every method but HEAD
# becomes GET).  When that URI lands in an Airlock location, the first
# decision stands and the request forwards to the route's upstream with
# its credential: it must go out with the method the route allowed, not
# as a GET the policy never matched.  A location that answers itself (a
# static error page) keeps nginx's GET.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;
my $tok = 'error-page-method-secret-0123456789';
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
  - name: create
    clients: [local]
    match: { method: POST, path: /create }
    upstream: echo
    to: /items
    body: { max_bytes: 256 }
    inject: { Authorization: "Bearer {tok}", X-Echo-Status: "502" }
  - name: page
    clients: [local]
    match: { method: DELETE, path: /page }
    upstream: echo
    to: /items/2
    inject: { Authorization: "Bearer {tok}", X-Echo-Status: "502" }
  - name: remove
    clients: [local]
    match: { method: DELETE, path: /remove }
    upstream: echo
    to: /items/1
    inject: { Authorization: "Bearer {tok}", X-Echo-Status: "502" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

# /retry has no location of its own: it falls in "location /", an
# Airlock location, as any URI of a server with Airlock on "/" does

$t->write_file_expand('nginx.conf', $p->conf(locations => <<"EOF"));
        location = /create {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_intercept_errors on;
            error_page 502 /retry;
        }

        location = /page {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_intercept_errors on;
            error_page 502 /page.html;
        }

        location = /page.html {
            airlock on;
            root %%TESTDIR%%;
        }

        location = /remove {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_intercept_errors on;
            error_page 502 /retry;
        }
EOF

$t->write_file('page.html', "a static error page\n");
$t->start_echo(8081);
$t->run;

plan tests => 9;

sub got {
    my ($target, $count) = @_;
    my @r;

    for (1 .. 100) {
        @r = grep { $_->{target} eq $target } $t->echo_requests(8081);
        last if @r >= $count;
        sleep 0.05;
    }

    return @r;
}

my $body = '{"name":"x"}';

my $raw = $t->http("POST /create HTTP/1.1\r\nHost: localhost\r\n"
                   . "Content-Type: application/json\r\n"
                   . "Content-Length: " . length($body) . "\r\n"
                   . "Connection: close\r\n\r\n$body");
like($raw, qr{^HTTP/1\.1 502}, 'POST: the upstream\'s 502 after the retry');

my @r = got('/items', 2);
is(scalar @r, 2, 'POST: the route\'s upstream got the request twice');
is_deeply([ map { $_->{method} } @r ], [ 'POST', 'POST' ],
          'POST: the error_page\'s forward keeps the method the route '
          . 'allowed');
is($r[1]{body}, $body, 'POST: and its body');

$raw = $t->http("DELETE /remove HTTP/1.1\r\nHost: localhost\r\n"
                . "Connection: close\r\n\r\n");
like($raw, qr{^HTTP/1\.1 502}, 'DELETE: the upstream\'s 502 after the retry');

@r = got('/items/1', 2);
is_deeply([ map { $_->{method} } @r ], [ 'DELETE', 'DELETE' ],
          'DELETE: never a GET the policy did not allow');

# a static page is no forward: nginx's GET stays, and the page is served

$raw = $t->http("DELETE /page HTTP/1.1\r\nHost: localhost\r\n"
                . "Connection: close\r\n\r\n");
like($raw, qr{^HTTP/1\.1 502.*a static error page}s,
     'static error page: served after a DELETE');
is(scalar(got('/items/2', 1)), 1, 'static error page: no second forward');

is($t->error_log_check, '', 'no alerts');
