#!/usr/bin/perl

# airlock-agent's --model, checked at start against the policy it reads
# for --llm-prefix, as the gateway checks each call: a model of the
# client's own list (else the entry's), or an alias of the entry's for
# one of them.  Any other model, or a --client the entry does not list,
# is refused before the agent listens (exit 1, as for an --llm-prefix
# the policy lacks), on one line that names the option and the models it
# may name, however many the policy has.  It used to start, and every
# question's first call got the gateway's 403 "model".  An alias the
# client may use starts, and the provider is sent its model.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use POSIX ();
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

$a->setup(models => '[gpt-4o-mini, gpt-4o, big-model]',
          llm => '    aliases: { fast: gpt-4o-mini, big: big-model }',
          llm_agent => '{ models: [gpt-4o-mini, gpt-4o] }',
          agent => [ '--model', 'fast', '--sandbox', 'none' ]);

plan tests => 20;

# the agent with these options: its exit status (or 'listening') and its
# standard error
sub run_agent {
    my (@opt) = @_;
    return $a->run_briefly('--sandbox' => 'none', @opt);
}

my ($rc, $err);

for my $m ('gpt-4o-nano', 'big-model', 'big', 'FAST', 'gpt-4o-mini ') {
    ($rc, $err) = run_agent('--model', $m);
    is($rc, 1, "--model \"$m\": refused at start, exit 1");
    is($err, 'airlock-agent: --model wants a model the llm entry '
             . '"openai" allows client "agent" (gpt-4o-mini, gpt-4o, '
             . "fast), not \"$m\"\n",
         "--model \"$m\": one line, the models it may name");
}

($rc, $err) = run_agent('--model', 'gpt-4o');
is($rc, 'listening', '--model gpt-4o, of the client\'s list: starts');

# a client the entry does not list can use no model
($rc, $err) = run_agent('--client', 'worker', '--model', 'gpt-4o-mini');
is($rc, 1, '--client worker, not one of the entry\'s: refused, exit 1');
my $no = qr/\(--llm-prefix\) has no client "worker" \(--client\)/;
like($err, qr/\Aairlock-agent: the llm entry "openai" of \S+ $no[^\n]*\n\z/,
     'one line naming --client');

# a policy of many models, long and one with a control character: the
# line stays one, and short
my $many = join(', ', '"m\\x1bx"',
                map { sprintf('"model-%03d-%s"', $_, 'x' x 30) } 1 .. 300);
my $p = $t->read_file('policy.yaml');
$p =~ s/models: \[gpt-4o-mini, gpt-4o, big-model\]/models: [$many]/
    or die "no models line";
$p =~ s/aliases: \{[^}]*\}/aliases: { fast: model-002-${\('x' x 30)} }/
    or die "no aliases line";
$p =~ s/agent: \{ models: \[[^\]]*\] \}/agent: {}/ or die "no agent line";
$t->write_file('many.yaml', $p);

($rc, $err) = run_agent('--policy', "$d/many.yaml", '--model', 'other');
is($rc, 1, '301 models, --model other: refused');
like($err, qr/\Aairlock-agent:\ --model\ wants\ [^\n]*\(m\\x1bx,
              \ model-001-x{30},\ model-002-x{30},\ [^\n]*,\ and\ 2\d\d
              \ more\),\ not\ "other"\n\z/x,
     'the models that fit, a control character escaped, how many more');
cmp_ok(length($err), '<', 1024, 'the line is under 1024 bytes');

($rc, $err) = run_agent('--policy', "$d/many.yaml", '--model', 'fast');
is($rc, 'listening', 'an alias of one of the entry\'s models: starts');

# agent "a" was started with the alias: the provider gets its model
$a->script({ pieces => [ 'aliased' ] });
my $ev = $a->ask('s1', 'which model?');
my ($done) = of_type('done', $ev);
is($done && $done->{outcome}, 'answer', '--model fast: answered');
my @prov = $a->provider_requests;
is(@prov && $prov[-1]{body}{model}, 'gpt-4o-mini',
   'the provider is asked for the alias\'s model');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
