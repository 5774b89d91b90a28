#!/usr/bin/perl

# ngx_http_airlock_llm_module: a provider key cut short (less its last
# few characters, as an echo cut at a length writes it) or split in two
# with something between (two events of a stream, a quote) does not reach
# the client whole: the first and last halves of each key are scrubbed
# (AL_SCRUB_HALF), so what is left of a cut or split key lacks half its
# characters.  Before, only the whole key was: a key less one character
# passed.  A part shorter than half (a provider's "sk-...XYZ" naming the
# key) still passes.

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
$l->setup;
$t->run;
plan tests => 20;

my $agent = $l->token('agent');
my $true = JSON::PP::true;
my $ok = $Airlock::LLM::OPENAI_KEY;
my $ak = $Airlock::LLM::ANTHROPIC_KEY;

# each key's halves, (length + 1) / 2 characters each
my @halves = map { my $n = int((length($_) + 1) / 2);
                   (substr($_, 0, $n), substr($_, -$n)) } $ok, $ak;

# occurrences of a half of a key, in the text as it came and with its
# \u escapes decoded
sub halves {
    my ($text) = @_;
    my $n = 0;

    (my $plain = $text // '') =~ s/\\u([0-9a-fA-F]{4})/chr hex $1/ge;

    for my $s ($text // '', $plain) {
        for my $h (@halves) {
            $n++ while $s =~ /\Q$h\E/g;
        }
    }

    return $n;
}

sub json_answer {
    my ($body) = @_;
    return { raw => ["HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     . "Content-Length: " . length($body) . "\r\n"
                     . "Connection: close\r\n\r\n", $body] };
}

sub content {
    my ($text) = @_;
    return encode_json({ id => 'chatcmpl-1', object => 'chat.completion',
                         model => 'gpt-4o-mini',
                         choices => [{ index => 0, finish_reason => 'stop',
                                       message => { role => 'assistant',
                                                    content => $text } }],
                         usage => { prompt_tokens => 1,
                                    completion_tokens => 1,
                                    total_tokens => 2 } });
}

my $r;

# ---- JSON answers -----------------------------------------------------------

for my $c (['the openai key less its last 4 characters', substr($ok, 0, -4)],
           ['the anthropic key less its last character', substr($ak, 0, -1)],
           ['the openai key split early', substr($ok, 0, 8) . ' ... '
                                          . substr($ok, 8)],
           ['the anthropic key split late', substr($ak, 0, 26) . '", "'
                                            . substr($ak, 26)],
           ['the openai key cut short, \u-escaped',
            join('', map { sprintf '\\u%04x', ord } split //,
                         substr($ok, 0, -3))])
{
    my ($name, $text) = @$c;
    my $body = content('x');

    $body =~ s/"content":"x"/"content":"you sent $text"/;
    $l->script(json_answer($body));
    $r = $l->chat(token => $agent);
    is($r->{status}, 200, "$name: 200");
    is(halves($r->{raw}), 0, "$name: neither half of a key");
    like($r->{body}, qr/\[REDACTED\]/, "$name: redacted");
}

# ---- a stream, the key split between two events ------------------------------

$l->script({ pieces => ['key: ' . substr($ok, 0, 20), substr($ok, 20)] });
$r = $l->chat(token => $agent, fields => { stream => $true });
is($r->{status}, 200, 'a stream: 200');
is(halves($r->{raw}), 0, 'a stream, the key split between events: neither '
                         . 'half of it');

$l->script({ pieces => [substr($ak, 0, -2)] });
$r = $l->messages(token => $agent, fields => { stream => $true });
is(halves($r->{raw}), 0, 'an anthropic stream, the key cut short: neither '
                         . 'half of it');

# ---- what passes -------------------------------------------------------------

my $named = substr($ok, 0, 8) . '...' . substr($ok, -4);
$l->script(json_answer(content("the key $named is invalid")));
$r = $l->chat(token => $agent);
like($r->{body}, qr/the key \Q$named\E is invalid/,
     'a key named by its first and last characters passes');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
