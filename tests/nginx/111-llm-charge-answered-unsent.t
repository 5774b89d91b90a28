#!/usr/bin/perl

# ngx_http_airlock_llm_module: a stream the provider answered 200 whose
# client hangs up before any byte of it was sent (nginx holds the
# header until the first event, and then logs 499) is charged as a
# stream cut short: at least its output cap, the prompt at its bound
# (a token a byte of its text: the provider never counted it).  The
# provider has the prompt and is generating; before, such a call was
# charged nothing, as if the provider had answered an error.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
$l->setup(tight_tpm => 1000000);
$t->run;
plan tests => 5;

my $tok = $l->token('tight');           # max_tokens 20
my $d = $t->testdir;
my $prompt = 'x' x 4000;                # an estimate of 1000 tokens at least
my $body = '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":'
         . '"user","content":"' . $prompt . '"}]}';

sub wait_file {
    my ($f) = @_;
    my $deadline = time + 60;
    sleep 0.02 while !-e $f && time < $deadline;
    return -e $f;
}

my $r = $l->chat(token => $tok);
is($r->{status}, 200, 'a normal call');

# the provider answers its headers, then holds the first event

my $log = -s "$d/error.log" // 0;
my $s = $l->held_chat({ head_gate => "$d/go" }, token => $tok,
                      body => $body);
ok(wait_file("$d/go.head"), 'the provider has answered 200');

# nginx reads the header at once; the client cannot see it (held until
# the first event), so wait until nginx has it: its debug line once the
# header went through the filters (without debug lines, a moment)

if ($t->has_debug_log) {
    my $deadline = time + 60;
    sleep 0.02
        while substr($t->read_file('error.log') // '', $log)
              !~ /http upstream process non buffered upstream/
              && time < $deadline;
} else {
    sleep 0.3;
}
close $s;

my $u = $l->last_usage(2);
$t->write_file('go', '');

is($u->{status}, 499, 'the client hung up before a byte: 499');
ok($u->{completion_tokens} == 20 && $u->{prompt_tokens} >= 4000
   && $u->{usage_source} eq 'estimated',
   '... charged as a stream cut short: the cap and the prompt\'s bound')
    or diag(explain $u);
is($u->{total_tokens}, $u->{prompt_tokens} + 20, '... in total');
