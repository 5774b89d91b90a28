#!/usr/bin/perl

# ngx_http_airlock_llm_module: the provider key never reaches a client or
# a log.  A provider that echoes the key it was sent (error bodies, JSON
# bodies, event streams, a response header, raw and in base64) hands the
# client "[REDACTED]"; no log line carries it, whatever log_format asks
# for ($http_authorization, $http_x_api_key).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Uncompress::Gunzip qw(gunzip);
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;
$t->run;

plan tests => 36;

my $agent = $l->token('agent');
my $true = JSON::PP::true;
my ($r, @all);

sub check {
    my ($r, $name) = @_;
    push @all, $r->{raw};
    is(Airlock::LLM::leaks($r->{raw}), 0, "$name: no key in the response");
    like($r->{raw}, qr/\[REDACTED\]/, "$name: redacted");
}

$l->script({ status => 429, echo_auth => 1, echo_b64 => 1 });
$r = $l->chat(token => $agent);
is($r->{status}, 429, 'openai 429 echoing the key: passes');
check($r, 'openai 429');
like($r->{headers}{'x-echo-auth'} // '', qr/\[REDACTED\]/,
     'openai 429: header redacted');

$l->script({ status => 500, echo_auth => 1, echo_b64 => 1 });
$r = $l->messages(token => $agent);
is($r->{status}, 500, 'anthropic 500 echoing the key: passes');
check($r, 'anthropic 500');
like($r->{json}{error}{message} // '', qr/fixture error 500/,
     'anthropic 500: the error body is the provider\'s');

$l->script({ echo_auth => 1, echo => 1, echo_b64 => 1 });
$r = $l->chat(token => $agent);
is($r->{status}, 200, 'openai 200 echoing the request');
check($r, 'openai 200 echo');
is($r->{json}{echo}{headers}{authorization}, '[REDACTED]',
   'openai echo: "Bearer key" redacted as a whole');

$l->script({ echo_auth => 1, echo => 1 });
$r = $l->messages(token => $agent);
check($r, 'anthropic 200 echo');
is($r->{json}{echo}{headers}{'x-api-key'}, '[REDACTED]',
   'anthropic echo: x-api-key redacted');

$l->script({ status => 503, echo_auth => 1, sse_on_error => 1 });
$r = $l->chat(token => $agent, fields => { stream => $true });
check($r, 'stream error echo');

$l->script({ echo_auth => 1, pieces => ["key: $Airlock::LLM::OPENAI_KEY",
                                        ' and more'] });
$r = $l->chat(token => $agent, fields => { stream => $true });
check($r, 'stream content with the key');
like($r->{body}, qr/key: \[REDACTED\]/, 'stream: the key redacted in place');
like($r->{body}, qr/data: \[DONE\]/, 'stream: complete');

$l->script({ pieces => [substr($Airlock::LLM::OPENAI_KEY, 0, 10),
                        substr($Airlock::LLM::OPENAI_KEY, 10)],
             split => 3 });
$r = $l->chat(token => $agent, fields => { stream => $true });
is(Airlock::LLM::leaks($r->{body}), 0,
   'a key split across events and buffers: the bytes never arrive whole');
push @all, $r->{raw};

# every key the proxy holds, not only the entry's own: an OpenAI answer
# carrying the Anthropic key, and the other way round

$l->script({ pieces => ["other: $Airlock::LLM::ANTHROPIC_KEY"] });
$r = $l->chat(token => $agent, fields => { stream => $true });
check($r, 'openai stream with the anthropic key');

$l->script({ echo_auth => 1, pieces => ["other: $Airlock::LLM::OPENAI_KEY"] });
$r = $l->messages(token => $agent);
check($r, 'anthropic answer with the openai key');

# a compressed answer cannot be scrubbed: every Content-Encoding counts,
# not only the last, and so does a Transfer-Encoding other than chunked

sub gunzipped {
    my ($r) = @_;
    my $body = $r->{body} // '';
    my $plain;

    if ($body =~ /^\x1f\x8b/) {
        gunzip(\$body => \$plain) or return '(bad gzip)';
        $body = $plain;
    }

    return $r->{raw} . $body;
}

for my $c (['gzip then identity', content_encoding => ['gzip', 'identity']],
           ['gzip then empty', content_encoding => ['gzip', '']],
           ['gzip, chunked', transfer_encoding => 'gzip, chunked'])
{
    my ($name, @script) = @$c;

    $l->script({ echo_auth => 1, gzip => 1, @script });
    $r = $l->chat(token => $agent);
    is($r->{status}, 502, "$name: refused, 502");
    is(Airlock::LLM::leaks(gunzipped($r)), 0, "$name: no key");
}

is(Airlock::LLM::leaks(join '', @all), 0, 'no response carried the key');

# ---- logs ------------------------------------------------------------------

my $logs = join '', map { $t->read_file($_) // '' }
                    qw(access.log usage.log deny.log error.log stderr.log);

is(Airlock::LLM::leaks($logs), 0, 'no key in any log');
like($t->read_file('error.log'),
     qr/scrubbed an injected credential from the response on route "openai"/,
     'error log: the scrub is reported, without the value');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
