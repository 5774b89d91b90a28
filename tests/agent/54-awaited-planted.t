#!/usr/bin/perl

# airlock-agent: a key of another type planted under the name of the
# awaited jobs' records (airlock:jobs:awaited, a string here, by
# anything that can write Redis) makes a job refused, not added: the
# script that adds a job and records it would add the entry, then fail
# at the record, and the run, told the add failed, never withdrew the
# entry it did not know of; a worker ran it for no one, one for each
# run_python while the key stood.  The key is kept as it is.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 20000 ]);

plan tests => 7;

sub redis {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

redis(qw(SET airlock:jobs:awaited planted));

# no worker runs: an entry added would stay in the stream
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('planted')" } } ] },
           { pieces => [ 'done' ] });
my $ev = $a->ask('s1', 'a job while the records key is a string');

is(((of_type('answer', $ev))[0] // {})->{text}, 'done', 'answered');
my @err = grep { ($_->{code} // '') eq 'job' } of_type('error', $ev);
is(scalar(@err), 1, 'the job is an error');
like(($err[0] // {})->{message} // '', qr/airlock:jobs:awaited/,
     'which names the key');
is(redis(qw(XLEN airlock:jobs)), 0, 'no entry was added to the stream');
is(redis(qw(GET airlock:jobs:awaited)), 'planted', 'the key is kept');
like($a->agent_log, qr/job \w+ of session s1 not added: .*jobs:awaited/,
     'the log says so');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
