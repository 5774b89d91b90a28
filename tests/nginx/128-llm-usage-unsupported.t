#!/usr/bin/perl

# ngx_http_airlock_llm_module: a usage that is valid JSON holding what
# jansson does not take (a "\u0000", a lone surrogate, an integer past 64
# bits), in a member the gateway does not read, is charged its counts, as
# every client (JSON.parse, json.loads) reads them, in JSON answers and
# streams alike; so is a Responses stream whose output text (repeated in
# response.completed) holds a "\u0000", which the model writes.  Before,
# the usage was taken for none: the JSON answer was charged its
# reservation and the stream the estimate, whatever its counts said.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
$l->setup(tight_tpm => 1000000);
$t->run;
plan tests => 7;

my $tok = $l->token('tight');
my $true = JSON::PP::true;
my $n = 0;
my ($r, $u);

# the next answer's script, as JSON text: a lone surrogate or an integer
# past 64 bits cannot go through encode_json
sub script_text {
    $t->write_file("provider-$l->{provider}.control", "[$_[0]]");
}

sub charged {
    my ($u, $source) = @_;
    return $u->{prompt_tokens} == 700 && $u->{completion_tokens} == 90
        && $u->{total_tokens} == 790 && $u->{usage_source} eq $source;
}

sub responses {
    my (%o) = @_;
    return $l->request('POST', '/v1/proxy/openai/responses', token => $tok,
                       body => { model => 'gpt-4o-mini', input => 'Hi',
                                 %o });
}

my $ascii = JSON::PP->new->ascii->canonical;

# cached_tokens "\u0000": a detail the gateway reads no count of

script_text($ascii->encode(
    { usage => { prompt => 700, completion => 90, cached => "\x{0}" } }));
$r = $l->chat(token => $tok, prompt => 'Hi');
$u = $l->last_usage(++$n);
is($r->{status}, 200, 'JSON, a "\u0000" in the usage: 200');
ok(charged($u, 'response'), '... charged its counts, not the reservation')
    or diag(explain $u);

script_text('{"usage":{"prompt":700,"completion":90,"cached":"\ud800"}}');
responses();
$u = $l->last_usage(++$n);
ok(charged($u, 'response'), 'responses JSON, a lone surrogate: its counts')
    or diag(explain $u);

script_text('{"usage":{"prompt":700,"completion":90,'
            . '"cached":[100000000000000000000,-100000000000000000000]}}');
$l->chat(token => $tok, prompt => 'Hi');
$u = $l->last_usage(++$n);
ok(charged($u, 'response'), 'JSON, integers past 64 bits: its counts')
    or diag(explain $u);

# streams

script_text($ascii->encode(
    { usage => { prompt => 700, completion => 90, cached => "\x{0}" } }));
$l->chat(token => $tok, prompt => 'Hi', fields => { stream => $true });
$u = $l->last_usage(++$n);
ok(charged($u, 'stream'), 'chat stream, a "\u0000" in the usage: its counts')
    or diag(explain $u);

script_text('{"usage":{"prompt":700,"completion":90,"cached":"\udc00"}}');
$l->chat(token => $tok, prompt => 'Hi', fields => { stream => $true });
$u = $l->last_usage(++$n);
ok(charged($u, 'stream'), 'chat stream, a lone surrogate: its counts')
    or diag(explain $u);

# the model's text, "\u0000" in it, in response.completed's output

script_text($ascii->encode({ usage => { prompt => 700, completion => 90 },
                             pieces => [ "a\x{0}b", " c" ] }));
responses(stream => $true);
$u = $l->last_usage(++$n);
ok(charged($u, 'stream'), 'responses stream, a "\u0000" in the output: '
   . 'its counts') or diag(explain $u);
