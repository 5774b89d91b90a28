#!/usr/bin/perl

# ngx_http_airlock_llm_module: the provider key in the places a provider's
# answer can put it, beyond 33-llm-scrub.t and 39-llm-scrub-headers.t,
# reaches the client as "[REDACTED]" or not at all: WWW-Authenticate,
# Location, Set-Cookie and the status line's reason; the key with every
# character a JSON \u escape, and in base64url; an error event in the
# middle of a stream; a chunked body with the key past the scrubber's hold;
# the WWW-Authenticate nginx copies into the error page of a 401 that
# "proxy_intercept_errors" leads to a location outside Airlock.  And what
# the provider gets: never the client's Accept-Encoding; on an azure
# entry, the policy's api-version and key only, whatever the client puts
# in a header or in the query; after a fallback from an openai entry to an
# azure one, the fallback's key alone, in its own header (tests only).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $entries = <<'Y';
  - name: fbsrc
    prefix: /v1/proxy/fbsrc
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    fallback: az
    max_body_bytes: 65536
    clients:
      agent: {}
  - name: az
    prefix: /v1/proxy/az
    provider: azure
    upstream: "http://127.0.0.1:%%PORT_8081%%"
    api_version: "2024-10-21"
    secret: anthropic_key
    models: [gpt-4o-mini]
    max_body_bytes: 65536
    clients:
      agent: {}
Y

$l->setup(openai_clients => $entries, location => <<'L', locations => <<'L2');
            proxy_intercept_errors on;
            error_page 401 /err401;
L
        location /v1/proxy/fbsrc/ {
            airlock_llm fbsrc;

            %%AIRLOCK_LOCATION%%

            proxy_intercept_errors on;
            error_page 429 500 502 503 504 529 = @airlock_llm_fallback;
        }

        location /v1/proxy/az/ {
            airlock_llm az;

            %%AIRLOCK_LOCATION%%
        }

        location @airlock_llm_fallback {
            airlock_llm_fallback;

            %%AIRLOCK_LOCATION%%
        }

        location = /err401 {
            internal;
            return 401 '{"error":{"message":"unauthorized"}}';
        }
L2
$t->run;

plan tests => 32;

my $agent = $l->token('agent');
my $true = JSON::PP::true;
my ($r, @p);

# every form of either key a client could decode: raw, base64 in both
# alphabets, every character escaped
sub leaks {
    my ($text) = @_;
    my $n = Airlock::LLM::leaks($text);

    (my $plain = $text // '') =~ s/\\u([0-9a-fA-F]{4})/chr hex $1/ge;
    $n += Airlock::LLM::leaks($plain);

    for my $k ($Airlock::LLM::OPENAI_KEY, $Airlock::LLM::ANTHROPIC_KEY) {
        (my $u = encode_base64($k, '')) =~ tr{+/}{-_};
        $n++ while $plain =~ /\Q$u\E/g;
    }

    return $n;
}

my $key = $Airlock::LLM::OPENAI_KEY;
my $ukey = join '', map { sprintf '\\u%04x', ord } split //, $key;
(my $b64url = encode_base64($key, '')) =~ tr{+/}{-_};

# the provider's next answer, these bytes, each a write; "%KEY%" is the
# key, "%UKEY%" the key \u-escaped, "%B64URL%" the key in base64url
sub raw {
    my (@parts) = @_;
    s/%KEY%/$key/g, s/%UKEY%/$ukey/g, s/%B64URL%/$b64url/g for @parts;
    $l->script({ raw => \@parts });
}

sub chunk {
    my ($data) = @_;
    $data =~ s/%KEY%/$key/g;
    return sprintf("%x\r\n%s\r\n", length $data, $data);
}

sub json_answer {
    my ($status, $headers, $body) = @_;
    $body =~ s/%KEY%/$key/g, $body =~ s/%UKEY%/$ukey/g;
    $body =~ s/%B64URL%/$b64url/g;
    return "HTTP/1.1 $status\r\nContent-Type: application/json\r\n"
           . $headers . "Content-Length: " . length($body) . "\r\n"
           . "Connection: close\r\n\r\n" . $body;
}

sub since {
    my ($n) = @_;
    my @all = $l->provider_requests;
    return @all[$n .. $#all];
}

# ---- headers, the status line, escaped forms -------------------------------

raw(json_answer('400 bad key %KEY%',
                "WWW-Authenticate: Bearer error=\"invalid_token\", "
                . "error_description=\"%KEY%\"\r\n"
                . "Location: https://example.invalid/login?key=%KEY%\r\n"
                . "Set-Cookie: k=%KEY%; Path=/\r\n",
                '{"error":{"message":"Incorrect API key provided: %UKEY% '
                . '(%B64URL%)"}}'));
$r = $l->chat(token => $agent);
is($r->{status}, 400, 'headers and escapes: the provider\'s 400');
is(leaks($r->{raw}), 0, 'headers and escapes: no key in any form');
like($r->{raw}, qr/^HTTP\/1\.1 400 bad key \[REDACTED\]\r\n/,
     'the status line\'s reason: redacted');
like($r->{headers}{'www-authenticate'} // '', qr/"\[REDACTED\]"/,
     'WWW-Authenticate: redacted');
like($r->{headers}{location} // '', qr/key=\[REDACTED\]$/,
     'Location: redacted');
like($r->{headers}{'set-cookie'} // '', qr/^k=\[REDACTED\];/,
     'Set-Cookie: redacted');
like($r->{body}, qr/provided: \[REDACTED\] \(\[REDACTED\]\)/,
     'the key \\u-escaped and in base64url: redacted');

# ---- an error event in the middle of a stream ------------------------------

raw("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    chunk("data: {\"choices\":[{\"index\":0,\"delta\":"
          . "{\"content\":\"Hello\"}}]}\n\n"),
    chunk("event: error\ndata: {\"error\":{\"message\":\"you sent "
          . "Bearer %KEY%\"}}\n\n"),
    "0\r\n\r\n");
$r = $l->chat(token => $agent, fields => { stream => $true });
is($r->{status}, 200, 'stream with an error event: 200');
is(leaks($r->{raw}), 0, 'stream with an error event: no key');
like($r->{body}, qr/"content":"Hello"/, 'stream: the first event passes');
like($r->{body}, qr/you sent \[REDACTED\]/, 'stream: the error redacted');

# ---- a chunked body with the key past the hold -----------------------------

my $pad = 'x' x 70000;
raw("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
    . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    chunk("{\"error\":\"$pad " . substr($key, 0, 5)),
    chunk(substr($key, 5) . '"}'), "0\r\n\r\n");
$r = $l->chat(token => $agent);
is($r->{status}, 400, 'a long chunked body: 400');
is(leaks($r->{raw}), 0, 'a long chunked body: the key split across writes '
                        . 'does not arrive');
like($r->{body}, qr/x \[REDACTED\]"\}$/, 'a long chunked body: redacted');

# ---- a 401 led to a location outside Airlock -------------------------------

raw(json_answer('401 Unauthorized',
                "WWW-Authenticate: Bearer realm=\"%KEY%\"\r\n",
                '{"error":{"message":"%KEY%"}}'));
$r = $l->chat(token => $agent);
is($r->{status}, 401, 'an intercepted 401: the error page\'s');
like($r->{body}, qr/"unauthorized"/, 'an intercepted 401: its body');
is(leaks($r->{raw}), 0, 'an intercepted 401: no key');
like($r->{headers}{'www-authenticate'} // '', qr/realm="\[REDACTED\]"/,
     'an intercepted 401: the WWW-Authenticate nginx copies, redacted');

# ---- what the provider gets -------------------------------------------------

my $n = () = $l->provider_requests;

$l->script();
$r = $l->chat(token => $agent, headers => [['Accept-Encoding', 'gzip, br']]);
@p = since($n);
is($r->{status}, 200, 'Accept-Encoding: answered');
ok(@p == 1 && !exists $p[0]{headers}{'accept-encoding'},
   'Accept-Encoding: the provider is not asked to compress');

# azure: the client's api-version (a header, an encoded query name) and
# subscription key go; an api-key in the query is refused

$n = () = $l->provider_requests;
$r = $l->request('POST', '/v1/proxy/az/openai/deployments/gpt-4o-mini/chat/'
                 . 'completions?api%2Dversion=FAKE-evil',
                 token => $agent,
                 headers => [['api-version', 'FAKE-header'],
                             ['Ocp-Apim-Subscription-Key', 'FAKE-sub']],
                 body => { messages => [{ role => 'user',
                                          content => 'Hi' }] });
@p = since($n);
is($r->{status}, 200, 'azure: answered');
is(scalar @p, 1, 'azure: one provider request');
is($p[0]{path} // '', '/openai/deployments/gpt-4o-mini/chat/completions'
                      . '?api-version=2024-10-21',
   'azure: the policy\'s api-version only');
is($p[0]{headers}{'api-key'} // '', $Airlock::LLM::ANTHROPIC_KEY,
   'azure: the entry\'s key in api-key');
is(join(',', grep { /^(?:authorization|api-version|ocp-apim-.*|x-api-key)$/ }
             sort keys %{$p[0]{headers} // {}}), '',
   'azure: no client credential, version or subscription header');

$n = () = $l->provider_requests;
$r = $l->request('POST', '/v1/proxy/az/openai/deployments/gpt-4o-mini/chat/'
                 . 'completions?api-key=FAKE-key', token => $agent,
                 body => { messages => [{ role => 'user',
                                          content => 'Hi' }] });
is($r->{status}, 403, 'azure: an api-key in the query is refused');
@p = since($n);
is(scalar @p, 0, 'azure: ... and never sent');

# a fallback from an openai entry to an azure one: the fallback's key
# alone, in its header; nothing of the first answer reaches the client

$n = () = $l->provider_requests;
$l->script({ status => 429, echo_auth => 1,
             headers => { 'Set-Cookie' => 'first=answer' } }, {});
$r = $l->request('POST', '/v1/proxy/fbsrc/chat/completions', token => $agent,
                 body => { model => 'gpt-4o-mini',
                           messages => [{ role => 'user',
                                          content => 'Hi' }] });
@p = since($n);
is($r->{status}, 200, 'fallback: the azure entry answers');
ok(@p == 2 && $p[0]{headers}{authorization} eq
                  "Bearer $Airlock::LLM::OPENAI_KEY",
   'fallback: the first provider had its own key');
is_deeply([ map { $_ // '-' } @{$p[1]{headers} // {}}{qw(authorization
                                                          api-key)} ],
          [ '-', $Airlock::LLM::ANTHROPIC_KEY ],
          'fallback: the fallback has its key alone, in api-key');
ok(leaks($r->{raw}) == 0 && ($r->{headers}{'set-cookie'} // '') eq '',
   'fallback: nothing of the first answer reaches the client');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
