#!/usr/bin/perl

# ngx_http_airlock_llm_module: a call sent to the provider that nginx
# ends before the provider's answer begins (the client hanging up: 499;
# proxy_read_timeout: 504) is charged what was reserved for it, the
# prompt estimate and the output cap: the provider has the prompt and
# may bill all of the output.  The client that hung up, and a call that
# timed out once sent whole (a client can bring that about), have the
# prompt charged at its bound, a token a byte of its text, as a stream
# the client cut is.  An error the provider answers itself is charged
# nothing, as before.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
$l->setup(tight_tpm => 1000000, location => 'proxy_read_timeout 1s;');
$t->write_file('nginx.conf',
               $t->read_file('nginx.conf') =~ s/proxy_read_timeout 10s;//gr);
$t->run;
plan tests => 8;

my $tok = $l->token('tight');           # max_tokens 20
my $prompt = 'x' x 4000;
my $body = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"'
         . $prompt . '"}]}';

# the prompt estimate of this body: four bytes a token, at least 1000;
# its bound, a token a byte, at least 4000

my $r = $l->chat(token => $tok);
is($r->{status}, 200, 'a normal call');

# the client hangs up while the provider holds its answer

my $go = $t->testdir . '/go';
my $n = scalar $l->provider_requests;
my $s = $l->held_chat({ wait_file => $go }, token => $tok, body => $body);
ok(scalar $l->provider_requests > $n, 'the provider has the prompt');
close $s;

my $u = $l->last_usage(2);
is($u->{status}, 499, 'the client hung up: 499');
ok($u->{prompt_tokens} >= 4000 && $u->{completion_tokens} == 20
   && $u->{usage_source} eq 'estimated',
   '... charged its reservation, the prompt at its bound, and the cap')
    or diag(explain $u);
$t->write_file('go', '');

# the provider slower than proxy_read_timeout: nginx answers 504

$l->script({ delay_first_ms => 2500 });
$r = $l->chat(token => $tok, body => { model => 'gpt-4o-mini',
    messages => [ { role => 'user', content => $prompt } ] });
$u = $l->last_usage(3);
is($u->{status}, 504, 'a timeout: 504');
ok($u->{prompt_tokens} >= 4000 && $u->{completion_tokens} == 20,
   '... charged its reservation, the prompt at its bound')
    or diag(explain $u);

# an error the provider answers is not charged

$l->script({ status => 500 });
$r = $l->chat(token => $tok);
$u = $l->last_usage(4);
is($u->{status}, 500, 'the provider answers 500');
$l->script();

is($u->{total_tokens}, 0, '... charged nothing');
