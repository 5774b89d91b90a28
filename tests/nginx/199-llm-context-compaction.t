#!/usr/bin/perl

# ngx_http_airlock_llm_module: Anthropic's server-side compaction (a
# "context_management" edit of type compact_20260112) summarizes the
# conversation in a sampling step of its own, billed apart, whose input
# and output tokens the answer's usage leaves out (they are in its
# "iterations" alone): for a client with a budget such a call would be
# charged a fraction of what it costs.  Its edits must clear (tool
# results, thinking) and nothing else; clients without a budget may
# compact.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(tight_tpm => 100000);
$t->run;

plan tests => 12;

# tight: tokens_per_minute on the anthropic entry; agent: no budget
my $tight = $l->token('tight');
my $agent = $l->token('agent');
my ($r, $n);

my $compact = { edits => [ { type => 'compact_20260112',
                             trigger => { type => 'input_tokens',
                                          value => 50000 } } ] };
my $clear = { edits => [ { type => 'clear_tool_uses_20250919' },
                         { type => 'clear_thinking_20251015' } ] };

$n = $l->provider_requests;

$r = $l->messages(token => $tight,
                  fields => { context_management => $compact });
is($r->{status}, 400, 'a budget: compaction refused');
like($r->{body}, qr/compact_20260112.*not accepted/, 'the edit named');
like($r->{raw}, qr/^Airlock-Denial: body\r?$/mi, 'as a body refusal');

$r = $l->messages(token => $tight, fields => { context_management => {
    edits => [ { type => 'clear_tool_uses_20250919' },
               { type => 'compact_20260112' } ] } });
is($r->{status}, 400, 'a budget: compaction after a clearing edit refused');

$r = $l->messages(token => $tight, fields => { context_management => {
    edits => [ { type => 'something_new_20270101' } ] } });
is($r->{status}, 400, 'a budget: an edit of an unknown type refused');

$r = $l->messages(token => $tight, fields => { context_management => {
    edits => [ { type => 'clear_thinking_20251015',
                 Type => 'compact_20260112' } ] } });
is($r->{status}, 400, 'a budget: "type" in another case refused');

$r = $l->messages(token => $tight, fields => { context_management => {
    edits => [ { type => 'clear_thinking_20251015' } ],
    compaction => { trigger => 50000 } } });
is($r->{status}, 400, 'a budget: a key beside "edits" refused');

is(scalar $l->provider_requests, $n, 'none reached the provider');

$r = $l->messages(token => $tight,
                  fields => { context_management => $clear });
is($r->{status}, 200, 'a budget: clearing edits pass');
is($l->last_provider_request->{body}{context_management}{edits}[0]{type},
   'clear_tool_uses_20250919', 'as sent');

$r = $l->messages(token => $agent,
                  fields => { context_management => $compact });
is($r->{status}, 200, 'no budget: compaction passes');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
