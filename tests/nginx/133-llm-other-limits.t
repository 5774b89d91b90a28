#!/usr/bin/perl

# The output limits and answer counts of the other APIs: max_tokens on
# the Responses API, max_output_tokens on chat, max_completion_tokens on
# completions and messages, "n" on responses and messages.  The
# providers do not read them there, a router behind an entry may, so the
# gateway holds them to the client's cap (clamp or reject) and reserves
# for them, as it does the endpoint's own.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(tight_tpm => 1000);
$t->run;

plan tests => 12;

my $tight = $l->token('tight');
my $worker = $l->token('worker');

sub sent { $l->last_provider_request->{body} // {} }

my $r = $l->chat(token => $worker,
                 fields => { max_output_tokens => 99999 });
is($r->{status}, 400, 'chat: max_output_tokens over a reject cap: 400');
like($r->{body}, qr/max_output_tokens.{0,8} 99999 is over/,
     'the detail names it');

$r = $l->request('POST', '/v1/proxy/openai/completions', token => $worker,
                 body => { model => 'gpt-4o-mini', prompt => 'x',
                           max_completion_tokens => 99999 });
is($r->{status}, 400, 'completions: max_completion_tokens over it: 400');

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $tight,
                 body => { model => 'gpt-4o-mini', input => 'x',
                           max_tokens => 100000 });
is($r->{status}, 200, 'responses: max_tokens over a clamp cap: 200');
is(sent()->{max_tokens}, 20, 'the provider gets max_tokens clamped');
is(sent()->{max_output_tokens}, 20, 'and its own limit added');

$r = $l->messages(token => $tight, max_tokens => 10,
                  fields => { max_completion_tokens => 50000 });
is($r->{status}, 200, 'messages: max_completion_tokens: 200');
is(sent()->{max_completion_tokens}, 20, 'clamped');

$r = $l->messages(token => $tight, max_tokens => 10,
                  fields => { max_output_tokens => 0 });
is($r->{status}, 400, 'messages: a limit of 0 under another name: 400');

# tight has 1000 tokens a minute: 20 an answer times 60 answers is over

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $tight,
                 body => { model => 'gpt-4o-mini', input => 'x', n => 60 });
is($r->{status}, 429, 'responses: n answers reserved, over the budget');

$r = $l->messages(token => $tight, max_tokens => 10,
                  fields => { n => 1000 });
is($r->{status}, 400, 'messages: n over 128: 400');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
