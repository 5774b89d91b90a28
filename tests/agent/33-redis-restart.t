#!/usr/bin/perl

# airlock-agent through a Redis restart: the run awaits a run_python job
# when Redis restarts (with its data, as a server with persistence does;
# the job is in its stream).  Every connection the agent has is closed.
# The agent connects again, subscribes again and looks the result up
# again, so the worker that takes the job after the restart answers the
# run; the session is stored on a new connection.  Nothing is lost,
# nothing runs twice.  Redis refusing to take the session's lock (out of
# memory) is a 503 that says so, not a 409 "session busy".

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

$a->setup(agent => [ '--max-wall', 60000 ]);

plan tests => 14;

$a->script(
    { tool_calls => [ { name => 'run_python',
                        arguments => { script => 'print(6 * 7)' } } ] },
    { quote => '"stdout":"(\d+)', pieces => [ 'it is {{1}}' ] });

my $body = encode_json({ prompt => 'what is six times seven?' });
my $s = $t->http("POST /v1/sessions/restart-1/ask HTTP/1.1\r\nHost: a\r\n"
                 . "Content-Length: " . length($body) . "\r\n"
                 . "Connection: close\r\n\r\n$body",
                 unix => $a->{agents}{a}{sock}, start => 1);

# the job is in the stream, and no worker has it yet
my $queued = 0;
for (1 .. 1500) {
    $queued = `redis-cli -s $d/redis.sock XLEN airlock:jobs` + 0;
    last if $queued;
    select(undef, undef, undef, 0.02);
}
is($queued, 1, 'the job is in the stream');

$a->restart_redis;
$a->start_worker;

my $raw = '';
while (sysread($s, $raw, 65536, length $raw)) { }
my @ev = AgentTest::events($raw);

my ($job) = of_type('job', \@ev);
is($job->{status}, 'ok', 'the job ran after the restart');
is(scalar(of_type('limit', \@ev)), 0, 'no limit: the wall time was not up');
my ($answer) = of_type('answer', \@ev);
my ($done) = of_type('done', \@ev);
is($answer && $answer->{text}, 'it is 42', 'the answer quotes the result');
is($done && $done->{outcome}, 'answer', 'outcome answer');
is(scalar(of_type('error', \@ev)), 0, 'no error events');

my @jobs = $a->jsonl('jobs.log');
is(scalar(@jobs), 1, 'the job ran once');

my $r = $a->session('restart-1');
is($r->{status}, 200, 'the session was stored after the restart');
my @msgs = @{$r->{json}{messages} // []};
is(@msgs && $msgs[-1]{content}, 'it is 42', 'the session has the answer');
is(scalar(grep { $_->{role} eq 'tool' } @msgs), 1,
   'the session has the job result');

# Redis refusing writes (out of memory) is said as such: not a session
# another question holds
system("redis-cli -s $d/redis.sock CONFIG SET maxmemory 1 >/dev/null");
my $raw2 = $t->http("POST /v1/sessions/oom-1/ask HTTP/1.1\r\nHost: a\r\n"
                    . "Content-Length: " . length($body) . "\r\n"
                    . "Connection: close\r\n\r\n$body",
                    unix => $a->{agents}{a}{sock}) // '';
system("redis-cli -s $d/redis.sock CONFIG SET maxmemory 0 >/dev/null");
like($raw2, qr{^HTTP/1.1 503 }, 'Redis refusing the lock: 503');
like($raw2, qr{"error":"redis".*OOM}s, 'the answer gives Redis\'s reply');

$a->script({ pieces => [ 'fine' ] });
my $ev = $a->ask('oom-1', 'and now?');
is((of_type('answer', $ev))[0]{text}, 'fine',
   'the session takes a question once Redis accepts writes');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
