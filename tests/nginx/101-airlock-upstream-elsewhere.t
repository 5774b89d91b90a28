#!/usr/bin/perl

# The route's upstream and URI are the decision's, for the location that
# decided: $airlock_upstream, $airlock_uri and $airlock_host (and the
# gateway's $airlock_llm_upstream, $airlock_llm_uri, $airlock_llm_host)
# are empty in a location that is not an Airlock location.  An error_page
# to a URI makes nginx redirect a POST as a GET; a location outside
# Airlock that forwarded with "proxy_pass $airlock_upstream$airlock_uri"
# would send the upstream a GET of the URI a POST-only route allowed,
# which the policy never matched (without the credential, which is taken
# out there: an upstream that needs none would serve it).  Such a
# location now has no target: nginx answers 500 and nothing more reaches
# the upstream.  The same error_page into an Airlock location still
# forwards as decided (tests/nginx/66-airlock-error-page-method.t).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;
my $sealed = $p->seal('upstream-elsewhere-secret-0123456789');

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
  - name: named
    clients: [local]
    match: { method: POST, path: /named }
    upstream: echo
    to: /named-items
    body: { max_bytes: 256 }
    inject: { Authorization: "Bearer {tok}", X-Echo-Status: "502" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(locations => <<"EOF"));
        location = /create {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_intercept_errors on;
            error_page 502 /retry;
        }

        location = /named {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_intercept_errors on;
            error_page 502 = \@retry;
        }

        location = /retry {
            airlock off;
            proxy_set_header X-Host \$airlock_host;
            proxy_pass \$airlock_upstream\$airlock_uri;
        }

        location \@retry {
            airlock off;
            proxy_pass \$airlock_upstream\$airlock_uri;
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 11;

# the upstream's requests for a target: it logs each before answering,
# so all of them are there once the client has its answer
sub got {
    my ($target) = @_;
    return grep { $_->{target} eq $target } $t->echo_requests(8081);
}

sub post {
    my ($uri, $body) = @_;
    return $t->http("POST $uri HTTP/1.1\r\nHost: localhost\r\n"
                    . "Content-Type: application/json\r\n"
                    . "Content-Length: " . length($body) . "\r\n"
                    . "Connection: close\r\n\r\n$body");
}

my $raw = post('/create', '{"name":"x"}');
like($raw, qr{^HTTP/1\.1 500}, 'error_page to a URI outside Airlock: 500');

my @r = got('/items');
is(scalar @r, 1, 'error_page to a URI: the upstream got the POST only');
is_deeply([ map { $_->{method} } @r ], [ 'POST' ],
          'error_page to a URI: never a GET the route did not allow');

$raw = post('/named', '{"name":"y"}');
like($raw, qr{^HTTP/1\.1 500}, 'error_page to a named location outside '
     . 'Airlock: 500');

@r = got('/named-items');
is(scalar @r, 1, 'named location: the upstream got the decided request '
   . 'only');

like($t->read_file('error.log') // '', qr/invalid URL prefix in ""/,
     'nginx says why: an empty proxy_pass target');

is($t->error_log_check, '', 'no alerts');

# the gateway's variables, the same way

my $t2 = Airlock::Test->new;
my $l = Airlock::LLM->new($t2);

$l->setup(location => "proxy_intercept_errors on;\n"
                      . 'error_page 500 /retry;',
          locations => <<"EOF");
        location = /retry {
            proxy_pass \$airlock_llm_upstream\$airlock_llm_uri;
        }
EOF

$t2->run;

my $r = $l->chat(token => $l->token('agent'));
is($r->{status}, 200, 'LLM: a call is served');

$l->script({ status => 500 });
$r = $l->chat(token => $l->token('agent'));
$l->script();

is($r->{status}, 500, 'LLM: error_page to a URI outside Airlock: 500');

my @calls = $l->provider_requests;
is(scalar @calls, 2, 'LLM: the provider got the two calls only');

is($t2->error_log_check, '', 'LLM: no alerts');
