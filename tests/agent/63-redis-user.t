#!/usr/bin/perl

# airlock-agent as a Redis user of its own.  The agent and the worker
# were both Redis's default user, which had every key and every command
# but the admin ones: the agent, which a model drives, could DEL or
# XTRIM the job stream, destroy the workers' group, or DEL the results,
# losing other jobs, and read or acknowledge entries not its own.  Now
# Redis's default user is off, and the agent is user airlock-agent
# (--redis-user), with the password in --redis-password-file: a
# question runs end to end (a job for the worker, which is
# airlock-worker, and its result), and that user is refused what would
# lose jobs or results.  A wrong password is a 503 "redis" naming the
# refusal, to that question; the file is read at each connect, so the
# next question, once it is right, runs without a restart.  A missing,
# unreadable, malformed or group-readable file, or one option without
# the other, stops the agent at start (status 2).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 60000 ]);

plan tests => 37;

my $pass = $t->redis_pass('airlock-agent');
my $secret = do { open my $fh, '<', $pass or die; local $/; <$fh> };
chomp $secret;

# redis-cli as the agent's user (the tests' redis-cli is their admin
# user; a later --user and --pass win)
sub as_agent {
    my $q = join ' ', map { my $x = $_; $x =~ s/'/'\\''/g; "'$x'" } @_;
    my $r = `redis-cli -s $d/redis.sock --user airlock-agent --pass \\
             '$secret' $q 2>&1`;
    chomp $r;
    return $r;
}

sub admin {
    my $q = join ' ', map { my $x = $_; $x =~ s/'/'\\''/g; "'$x'" } @_;
    my $r = `redis-cli -s $d/redis.sock $q 2>&1`;
    chomp $r;
    return $r;
}

# ---- a question end to end, a job and its result --------------------------
$a->start_worker;
$a->script(
    { tool_calls => [ { name => 'run_python',
                        arguments => { script => 'print(6 * 7)' } } ] },
    { quote => '"stdout":"(\d+)', pieces => [ 'it is {{1}}' ] });
my $ev = $a->ask('user-1', 'what is six times seven?');
my ($job) = AgentTest::of_type('job', $ev);
is($job && $job->{status}, 'ok', 'the job ran (the worker as its user)');
is((AgentTest::of_type('answer', $ev))[0]{text}, 'it is 42',
   'the answer quotes its result');
is(scalar(AgentTest::of_type('error', $ev)), 0, 'no error events');
like($a->agent_log, qr/redis unix:\S+ as airlock-agent/,
     'the agent says which user it is');

# ---- what the agent's user may not do --------------------------------------
# a job queued for nobody (the worker stopped), held in the stream
kill 'TERM', $a->{worker};
waitpid($a->{worker}, 0);
my $e = admin(qw(XADD airlock:jobs * job {"job_id":"other"}));
like($e, qr/^\d+-\d+$/, 'another job is queued');
my $len = admin(qw(XLEN airlock:jobs));
admin(qw(SET result:other-result {"status":"ok"} EX 600));

like(as_agent('PING'), qr/NOPERM/, 'the agent\'s user: authenticated, '
     . 'and only its commands (no PING)');
for my $c ([ qw(DEL airlock:jobs) ], [ qw(XTRIM airlock:jobs MAXLEN 0) ],
           [ qw(FLUSHDB) ], [ qw(FLUSHALL) ],
           [ qw(XGROUP DESTROY airlock:jobs airlock-workers) ],
           [ qw(XGROUP SETID airlock:jobs airlock-workers $) ],
           [ qw(XREADGROUP GROUP airlock-workers evil STREAMS
                airlock:jobs >) ],
           [ 'XACK', 'airlock:jobs', 'airlock-workers', $e ],
           [ qw(XRANGE airlock:jobs - +) ],
           [ qw(DEL result:other-result) ], [ qw(SET result:x forged) ],
           [ qw(PUBLISH response:x forged) ],
           [ qw(XRANGE airlock:jobs:dead - +) ],
           [ qw(HGETALL airlock:jobs:errors) ],
           [ 'EVAL', "return redis.call('del', KEYS[1])", 1,
             'airlock:jobs' ]) {
    like(as_agent(@$c), qr/NOPERM|can't access|can't run/,
         "the agent's user: @$c refused");
}
is(admin(qw(XLEN airlock:jobs)), $len, 'the stream kept every entry');
is(admin(qw(GET result:other-result)), '{"status":"ok"}',
   'the result kept');
admin(qw(XDEL airlock:jobs), $e);

# ---- a wrong password: that question's 503, the next one runs ---------
sub set_pass {
    my ($p) = @_;
    chmod 0600, $pass;
    open my $fh, '>', $pass or die "$pass: $!";
    print $fh "$p\n";
    close $fh;
    chmod 0400, $pass;
}
set_pass('FAKE-wrong-redis-pass');
my $body = encode_json({ prompt => 'hello?' });
my $raw = $t->http("POST /v1/sessions/user-2/ask HTTP/1.1\r\nHost: a\r\n"
                   . "Content-Length: " . length($body) . "\r\n"
                   . "Connection: close\r\n\r\n$body",
                   unix => $a->{agents}{a}{sock}) // '';
like($raw, qr{^HTTP/1.1 503 }, 'a wrong password: 503');
like($raw, qr{"error":"redis".*AUTH as airlock-agent refused: WRONGPASS}s,
     'naming the refusal') or diag($raw);
unlike($raw, qr/FAKE-wrong/, 'not the password');

set_pass($secret);
$a->script({ pieces => [ 'fine' ] });
$ev = $a->ask('user-2', 'and now?');
is((AgentTest::of_type('answer', $ev))[0]{text}, 'fine',
   'the right password again: the next question runs, no restart');

# ---- at start: both options, a file that is the agent's alone --------------
my ($rc, $err) = $a->run_briefly('--redis-password-file' => undef);
ok($rc eq '2' && $err =~ /--redis-user and --redis-password-file go/,
   '--redis-user alone: status 2, said') or diag("$rc: $err");
($rc, $err) = $a->run_briefly('--redis-user' => undef);
ok($rc eq '2' && $err =~ /--redis-user and --redis-password-file go/,
   '--redis-password-file alone: status 2, said') or diag("$rc: $err");
($rc, $err) = $a->run_briefly();
is($rc, 'listening', 'both, a file of its own: it starts');
$t->write_file('group.pass', "$secret\n");
chmod 0640, "$d/group.pass";
$t->write_file('space.pass', "FAKE pass\n");
chmod 0400, "$d/space.pass";
$t->write_file('empty.pass', '');
chmod 0400, "$d/empty.pass";
my @bad = (
    [ { '--redis-password-file' => "$d/none.pass" },
      qr/none\.pass: No such file/, 'a missing file' ],
    [ { '--redis-password-file' => "$d/group.pass" },
      qr/group or others may read.*chmod 0400/, 'a group-readable file' ],
    [ { '--redis-password-file' => "$d/space.pass" },
      qr/one line of 1 to 256 bytes/, 'a password with a space' ],
    [ { '--redis-password-file' => "$d/empty.pass" },
      qr/one line of 1 to 256 bytes/, 'an empty file' ],
    [ { '--redis-user' => 'airlock agent' },
      qr/--redis-user wants .*no control character or space/,
      'a user name with a space' ],
);
for my $b (@bad) {
    ($rc, $err) = $a->run_briefly(%{$b->[0]});
    ok($rc eq '2' && $err =~ $b->[1], "$b->[2]: status 2, said")
        or diag("$rc: $err");
}
unlike(join('', map { $t->read_file($_) // '' } 'agent.err'), qr/FAKE/,
       'no password in what it says');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
