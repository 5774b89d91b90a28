#!/usr/bin/perl

# airlock-agent: a run takes for its job's result only one that names
# its job and its session.  result:<job> and response:<job> are keyed
# by the job's id alone, so a result another job of that id had (another
# session's, docs/jobs.md "One job_id, one entry") was taken for the
# run's own: shown to the model and the client of another session.  Now
# a message that names another session is not the run's result, and a
# result:<job> that does is an error the model is told of, never shown.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 60000 ]);

plan tests => 6;

# a run waits for its job, no worker running
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('mine')" } } ] },
           { pieces => [ 'done' ] });
my $asker = fork;
die "fork: $!\n" unless defined $asker;
if ($asker == 0) {
    my (undef, $raw) = $a->ask('mine', 'a job');
    $t->write_file('events.txt', $raw);
    POSIX::_exit(0);
}

my ($job) = $a->redis_cli(qw(XREAD BLOCK 30000 STREAMS airlock:jobs 0-0))
            =~ /^(\{.*\})$/m;
my $env = eval { decode_json($job // '') } // {};
my $jid = $env->{job_id} // 'none';
is($env->{session_id}, 'mine', 'the job is in the stream');

# the run subscribed to its channel
my $subscribed = 0;
my $until = time + 10;
while (time < $until) {
    $subscribed = ($a->redis_cli('PUBSUB', 'NUMSUB', "response:$jid")
                   =~ /^1$/m) ? 1 : 0;
    last if $subscribed;
    sleep 0.05;
}
ok($subscribed, 'the run awaits its result');

# another session's job of that id: its result stored and published
my $theirs = encode_json({ job_id => $jid, session_id => 'theirs',
                           status => 'ok', exit_code => 0,
                           stdout => "THEIRS\n", stderr => '' });
$a->redis_cli('SET', "result:$jid", $theirs, 'EX', '600');
$a->redis_cli('PUBLISH', "response:$jid", $theirs);

waitpid($asker, 0);
my @ev = AgentTest::events($t->read_file('events.txt') // '');
my @jobs = grep { ($_->{status} // '') eq 'ok' } of_type('job', \@ev);
is(scalar @jobs, 0, 'another session\'s result is not the run\'s');
like(join("\n", map { $_->{message} // '' } of_type('error', \@ev)),
     qr/the job result is another job's/, 'the run says so');
unlike(join("\n", map { encode_json($_) } $a->provider_requests),
       qr/THEIRS/, 'the model never saw it');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
