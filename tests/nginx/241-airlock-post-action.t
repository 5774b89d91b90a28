#!/usr/bin/perl

# A post_action never enters an Airlock location.  nginx runs it once the
# answer has gone and throws its answer away unread (the header and body
# filters never see it), so a decided request led there would go to its
# upstream again: a named route's, credential included, and a gateway
# call to its provider with the provider's key, billed twice and charged
# once, the second answer's usage never read.  Whether the post_action
# names an Airlock location of named routes, the gateway location
# itself, or the fallback's, it ends there unsent, the request reaches
# its upstream once, and the usage line keeps the status and usage of
# the answer the client got.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $locations = <<'L';
        location @again {
            airlock on;
            %%AIRLOCK_LOCATION%%
        }

        location /v1/proxy/openai/chat/ {
            airlock_llm openai;
            %%AIRLOCK_LOCATION%%
            post_action @again;
        }

        location = /v1/proxy/openai/embeddings {
            airlock_llm openai;
            %%AIRLOCK_LOCATION%%
            post_action @airlock_llm_fallback;
        }

        location = /v1/proxy/anthropic/messages {
            airlock_llm anthropic;
            %%AIRLOCK_LOCATION%%
            post_action /v1/proxy/anthropic/messages;
        }

        location @airlock_llm_fallback {
            airlock_llm_fallback;
            %%AIRLOCK_LOCATION%%
        }

        location = /post {
            airlock on;
            %%AIRLOCK_LOCATION%%
            post_action /post;
        }
L

my $routes = <<'Y';
  deny: { threshold: 1000, window: 60s }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8083%%" }
routes:
  - name: post
    clients: [agent]
    match: { method: GET, path: /post }
    upstream: echo
    to: /post
    inject: { X-Route-Key: "FAKE-route-key" }
Y

$l->setup(locations => $locations, alerts => $routes,
          tight_tpm => 1000000);
$t->start_echo(8083);
$t->run;

plan tests => 20;

# the access log has a line once the request, post_action included, ends
sub access_lines {
    my ($want) = @_;
    my @l;

    for (1 .. 100) {
        @l = split /\n/, ($t->read_file('access.log') // '');
        last if @l >= $want;
        sleep 0.05;
    }

    return scalar @l;
}

my $calls = 0;

for my $c (['post_action to a location of named routes', 12,
            sub { $l->chat(token => $l->token('tight')) }],
           ['post_action to the gateway location', 12,
            sub { $l->messages(token => $l->token('tight')) }],
           ['post_action to the fallback location', 7,
            sub { $l->request('POST', '/v1/proxy/openai/embeddings',
                              token => $l->token('tight'),
                              body => { model => 'text-embedding-3-small',
                                        input => 'Hi' }) }])
{
    my ($name, $total, $call) = @$c;

    $l->script({ usage => { prompt => 7, completion => 5 } },
               { usage => { prompt => 70, completion => 50 } });

    my $before = () = $l->provider_requests;
    my $r = $call->();
    $calls++;

    is($r->{status}, 200, "$name: answered");
    is(access_lines($calls), $calls, "$name: the request ended");
    is(scalar($l->provider_requests) - $before, 1,
       "$name: the provider got the call once");

    my $u = $l->last_usage($calls);
    is(join(' ', map { $_ // 'null' } @$u{qw(status total_tokens)}),
       "200 $total", "$name: usage line: the status and usage the client got");
}

my $raw = $t->http("GET /post HTTP/1.1\r\nHost: localhost\r\n"
                   . "Proxy-Authorization: Bearer " . $l->token('agent')
                   . "\r\nConnection: close\r\n\r\n");
like($raw, qr{^HTTP/1\.1 200}, 'named route: answered');
is(access_lines($calls + 1), $calls + 1, 'named route: the request ended');
is(scalar(grep { $_->{target} eq '/post' } $t->echo_requests(8083)), 1,
   'named route: the upstream got the request once');

my @access = split /\n/, $t->read_file('access.log');
is((split / /, $access[-1])[3], '200', 'named route: the access log\'s status');

# the connection goes on after a refused post_action

my $s = $t->http("GET /post HTTP/1.1\r\nHost: localhost\r\n"
                 . "Proxy-Authorization: Bearer " . $l->token('agent')
                 . "\r\n\r\n", start => 1);
$raw = $t->http(undef, socket => $s, one => 1);
like($raw, qr{^HTTP/1\.1 200}, 'keep-alive: the first answer');
$raw = $t->http("GET /post HTTP/1.1\r\nHost: localhost\r\n"
                . "Proxy-Authorization: Bearer " . $l->token('agent')
                . "\r\nConnection: close\r\n\r\n", socket => $s);
like($raw // '', qr{^HTTP/1\.1 200}, 'keep-alive: the next request answered');

like($t->read_file('error.log'),
     qr/airlock: post_action to "\/post" refused/,
     'the refusal is logged');

is($t->error_log_check, '', 'no alerts');
