#!/usr/bin/perl

# Anthropic answers an account with Priority Tier capacity with
# anthropic-priority-input-tokens-limit, -remaining, -reset and the same
# for output tokens: the capacity of the account the provider key
# belongs to, which every client's calls draw down, as its rate-limit
# headers describe its limits.  They are removed as those are, on JSON
# answers, streams and errors alike.

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

plan tests => 3 * 3 + 1;

my %priority = (
    'anthropic-priority-input-tokens-limit' => '7000001',
    'anthropic-priority-input-tokens-remaining' => '7000002',
    'anthropic-priority-input-tokens-reset' => '2026-12-06T01:00:00Z',
    'anthropic-priority-output-tokens-limit' => '7000003',
    'anthropic-priority-output-tokens-remaining' => '7000004',
    'anthropic-priority-output-tokens-reset' => '2026-12-06T01:00:00Z',
);

for my $c (['JSON', {}], ['stream', { stream => JSON::PP::true }],
           ['error', { status => 529 }])
{
    my ($name, $f) = @$c;
    my %script = (headers => \%priority);
    $script{status} = $f->{status} if $f->{status};

    $l->script(\%script);
    my $r = $l->messages(token => $l->token('agent'),
                         fields => $f->{stream} ? { stream => $f->{stream} }
                                                : {});

    is($r->{status}, $f->{status} // 200, "$name: answered");

    my @left = grep { $r->{raw} =~ /^\Q$_\E:/mi } keys %priority;
    is(join(',', sort @left), '', "$name: no Priority Tier header");
    unlike($r->{raw}, qr/700000\d/, "$name: none of their values");
}

is($t->error_log_check, '', 'no alerts or sanitizer reports');
