#!/usr/bin/perl

# airlock-agent: the job stream is bounded.  A run_python job is added
# only while airlock:jobs holds fewer than --max-queued-jobs entries (the
# look and the XADD one script); past that the call is an error the model
# is told, no entry is added and the run goes on.  Entries that no
# worker takes (none runs, or a run's process died before it withdrew
# its job) used to pile up without end.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-queued-jobs', 2, '--max-wall', 30000 ]);

plan tests => 8;

sub redis {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

# two entries no worker takes: left by runs whose process died
redis(qw(XADD airlock:jobs * job), "{\"job_id\":\"left-$_\"}") for 1, 2;
is(redis(qw(XLEN airlock:jobs)), 2, 'two entries in the stream');

$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('third')" } } ] },
           { pieces => [ 'no job' ] });
my $ev = $a->ask('full-1', 'a job while the stream is full');
my @err = of_type('error', $ev);

is(join(',', map { $_->{code} } @err), 'job', 'the call is an error');
like(($err[0] // {})->{message} // '', qr/--max-queued-jobs/,
     'that says the stream is full');
is(scalar(of_type('limit', $ev)), 0, 'no wait: no limit reached');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer',
   'the run went on and answered');
is(redis(qw(XLEN airlock:jobs)), 2, 'no entry added');

# with room again, a job is added and run
redis(qw(XTRIM airlock:jobs MAXLEN 0));
$a->start_worker;
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('room')" } } ] },
           { quote => '"stdout":"(\w+)', pieces => [ '{{1}}' ] });
$ev = $a->ask('full-2', 'a job with room');
is(((of_type('answer', $ev))[0] // {})->{text}, 'room',
   'with room, the job ran');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
