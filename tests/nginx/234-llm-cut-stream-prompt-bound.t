#!/usr/bin/perl

# ngx_http_airlock_llm_module: a stream that ends without a count of its
# prompt, cut by the client after the text and before the final usage,
# cut before Anthropic's message_start, or ended without the usage the
# gateway asked for, is charged its prompt at the bound, a token a byte
# of the text the estimate counts, not at the estimate's four bytes a
# token.  The client decides each of these, and a token-dense prompt
# (digits, base64, code, other scripts) is billed near a token a byte:
# charged the estimate, such a call spent up to four times what its
# token and dollar budgets were charged.  The bound's tokens are priced
# as input, at the long_context prices when the bound is above their
# above_input_tokens, as the reservation was.  So is a call the client
# hangs up on before its answer: it is charged its reservation, the
# output cap and the prompt, at its bound.  A JSON answer without usage,
# which the client cannot bring about, is charged its reservation, the
# prompt at its estimate, as before.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $dense = 'al-dense-token-FAKE-234234';
my $sha = $l->proxy->token_sha256($dense);

# gpt-4o-mini at 0.15 and 0.6 a million tokens, 1.5 and 6 above 3000
# input tokens
$l->setup(
    clients => qq{  dense: { token_sha256: "$sha" }\n},
    openai_fields => "    prices:\n"
        . "      gpt-4o-mini:\n"
        . "        input: 0.15\n"
        . "        output: 0.6\n"
        . "        long_context: { above_input_tokens: 3000, input: 1.5, "
        . "output: 6 }\n",
    openai_clients => "      dense:\n        models: [gpt-4o-mini]\n"
        . "        tokens_per_day: 1000000\n"
        . "        usd_per_day: 5\n        default_max_tokens: 100\n",
    anthropic_clients => "      dense:\n        max_tokens: 100\n"
        . "        over_max_tokens: clamp\n");
$t->run;
plan tests => 15;

my $true = JSON::PP::true;
my $n = 0;

# 4000 digits: the estimate counts them and the message's "role",
# "user" and "content", 4015 bytes, as 1004 tokens; a provider's
# tokenizer makes 1,300 or more of the digits alone
my $digits = '0123456789' x 400;
my $bound = 4 + 4 + 7 + 4000;
my $estimate = int(($bound + 3) / 4);

# ---- the client closes after the text, before the final usage ------------

my $gate = $t->testdir . '/gate';
$l->script({ pause_after => 2, gate => $gate });

my $s = $l->raw_chat($dense, encode_json({
    model => 'gpt-4o-mini', stream => $true,
    messages => [{ role => 'user', content => $digits }] }));
my ($got, $sel) = ('', IO::Select->new($s));
while ($got !~ /"content": ?"[^"]+"/ && $sel->can_read(10)) {
    sysread($s, $got, 4096, length $got) or last;
}
like($got, qr/"content": ?"[^"]+"/, 'client cut: text read before closing');
close $s;

my $u = $l->last_usage(++$n);
open(my $fh, '>', $gate) or die "$gate: $!";
close $fh;

is($u->{usage_source}, 'estimated', 'client cut: estimated');
is_deeply([@$u{qw(prompt_tokens completion_tokens total_tokens)}],
          [$bound, 100, $bound + 100],
          'client cut: the prompt at its bound, a token a byte '
          . "($bound, not the estimate's $estimate), the output cap");

# 4015 input tokens are above 3000: 4015 * 1.5 + 100 * 6 microdollars
is($u->{cost_usd}, '0.0066225',
   'client cut: the bound priced as input, at the long_context prices');

# the budget was charged the same: what remains after the next call's
# reservation (the estimate of "Hi" and its keys, 5, and the cap, 100)

my $r = $l->chat(token => $dense);
is($r->{headers}{'x-ratelimit-remaining-tokens'},
   1000000 - ($bound + 100) - (5 + 100),
   'client cut: the day budget was charged the bound');
$l->last_usage(++$n);

# ---- a stream that ends without the usage the gateway asked for -----------

$l->script({ no_usage => 1 });
$r = $l->chat(token => $dense, prompt => $digits,
              fields => { stream => $true });
is($r->{status}, 200, 'no usage: answered');
$u = $l->last_usage(++$n);

# the text, "Hello from fixture", 18 bytes at four a token

is_deeply([@$u{qw(prompt_tokens completion_tokens usage_source)}],
          [$bound, 5, 'estimated'],
          'no usage: the prompt at its bound, the text seen');

# ---- Anthropic cut before message_start ------------------------------------

$l->script({ cut_after => 0 });
$r = $l->messages(token => $dense, prompt => $digits,
                  fields => { stream => $true });
$u = $l->last_usage(++$n);
is_deeply([@$u{qw(prompt_tokens completion_tokens usage_source)}],
          [$bound, 100, 'estimated'],
          'anthropic cut before message_start: the prompt at its bound');

# ... and after it: the provider's count

$l->script({ cut_after => 1 });
$r = $l->messages(token => $dense, prompt => $digits,
                  fields => { stream => $true });
$u = $l->last_usage(++$n);
is_deeply([@$u{qw(prompt_tokens completion_tokens usage_source)}],
          [11, 100, 'estimated'],
          'anthropic cut after message_start: the prompt it counted');

# ---- a stream that ends with its usage: as the provider counts ------------

$l->script();
$r = $l->chat(token => $dense, prompt => $digits,
              fields => { stream => $true });
is($r->{status}, 200, 'usage: answered');
$u = $l->last_usage(++$n);
is_deeply([@$u{qw(prompt_tokens completion_tokens usage_source)}],
          [11, 3, 'stream'], 'usage: as counted');

# ---- a JSON answer without usage: its reservation, as before --------------

$l->script({ no_usage => 1 });
$r = $l->chat(token => $dense, prompt => $digits);
is($r->{status}, 200, 'JSON without usage: answered');
$u = $l->last_usage(++$n);
is_deeply([@$u{qw(prompt_tokens completion_tokens usage_source)}],
          [$estimate, 100, 'estimated'],
          'JSON without usage: its reservation, the prompt estimate');

# ---- the client hangs up before the answer ---------------------------------

my $go = $t->testdir . '/go';
my $before = scalar $l->provider_requests;
$s = $l->held_chat({ wait_file => $go }, token => $dense,
                   body => encode_json({ model => 'gpt-4o-mini',
                       messages => [{ role => 'user', content => $digits }] }));
ok(scalar $l->provider_requests > $before, 'hung up: the provider has it');
close $s;
$u = $l->last_usage(++$n);
open($fh, '>', $go) or die "$go: $!";
close $fh;
is_deeply([@$u{qw(status prompt_tokens completion_tokens usage_source)}],
          [499, $bound, 100, 'estimated'],
          'hung up before the answer: the output cap, the prompt at its '
          . 'bound');

$l->script();
