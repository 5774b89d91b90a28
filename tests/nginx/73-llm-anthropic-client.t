#!/usr/bin/perl

# ngx_http_airlock_llm_module with the official @anthropic-ai/sdk package
# (tests/llm-client/package-lock.json), pointed at the gateway the way
# docs/nginx.md says: baseURL .../v1/proxy/anthropic, the client's Airlock
# token as its API key.  The SDK appends /v1/messages to its base URL; the
# gateway takes that path as /messages.  Skipped (failed under CI) when
# node or npm is missing or the package cannot be installed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Copy qw(copy);
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;
use Airlock::Prereq qw(absent need_cmd);

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

need_cmd(qw(node npm));

my $dir = $t->testdir . '/llm-client';
mkdir $dir;
copy("$t->{top}/tests/llm-client/$_", "$dir/$_") or die "copy $_: $!"
    for qw(package.json package-lock.json);
copy("$t->{top}/tests/lib/anthropic-client.mjs", "$dir/anthropic-client.mjs")
    or die "copy: $!";

my $npm = `cd $dir && timeout 120 npm ci --no-audit --no-fund --loglevel=error 2>&1`;
absent("npm ci failed (no registry?): " . ((split /\n/, $npm)[-1] // ''))
    if $? || !-d "$dir/node_modules/\@anthropic-ai/sdk";

$l->setup;
$t->run;

plan tests => 10;

sub sdk {
    my ($token, @steps) = @_;
    local $ENV{AIRLOCK_BASE_URL} = 'http://127.0.0.1:' . $t->port(8080)
                                   . '/v1/proxy/anthropic';
    local $ENV{AIRLOCK_API_KEY} = $token;
    my $out = `cd $dir && timeout 60 node anthropic-client.mjs @steps 2>&1`;
    my %r;

    for (split /\n/, $out) {
        my $j = eval { decode_json($_) } or next;
        $r{$j->{step}} = $j;
    }

    diag($out) if keys %r != @steps;

    return \%r;
}

my $r = sdk($l->token('agent'), qw(messages stream bad-model));

ok($r->{messages}{ok}, 'messages: the SDK gets an answer')
    or diag(encode_json($r->{messages} // {}));
is($r->{messages}{result}{text}, 'Hello from fixture', 'messages: the text');
ok(($r->{messages}{result}{usage}{input_tokens} // 0) > 0,
   'messages: the usage');

ok($r->{stream}{ok}, 'stream: the SDK reads the stream')
    or diag(encode_json($r->{stream} // {}));
is($r->{stream}{result}{text}, 'Hello from fixture', 'stream: the text');

is($r->{'bad-model'}{status}, 403, 'a model not allowed: 403 from the SDK');

my $p = $l->last_provider_request;
is($p->{path}, '/v1/messages', 'the provider gets /v1/messages');
is($p->{headers}{'x-api-key'}, $Airlock::LLM::ANTHROPIC_KEY,
   'the provider gets the provider key, not the client token');

my @u = grep { $_->{client} eq 'agent' } $l->usage_log;
is(scalar @u, 2, 'two usage lines');
is($u[-1]{endpoint}, 'messages', 'usage line: messages');
