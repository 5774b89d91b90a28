#!/usr/bin/perl
# Each Redis command of a client on the keys it sends it on, no other
# (conf/redis-acl.conf).  The worker's user had every command it sends
# on every key it sends any on: SET on airlock:jobs replaced the job
# stream (every job queued or pending, its group and pending lists:
# gone, as a DEL would, which the user was refused), SET or HSET over
# the dead letters or the records did the same to them, and XADD on
# airlock:jobs forged a job, or with MAXLEN 0 dropped every one no
# worker had read yet.  The agent's user could XADD to its hash of
# awaited jobs and HSET the job stream.  Each key's commands are now a
# selector of their own; EVAL keeps every key a script of the client's
# declares, and Redis checks each redis.call() against the selectors,
# so a script is no way around them.  A redis-server is started with
# the ACL, and each client is asked as it asks.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

need_cmd(qw(redis-server redis-cli));

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $t = tempdir(CLEANUP => 1);
my $sock = "$t/redis.sock";
my %pass = ('airlock-agent' => 'FAKE-agent-pass-50',
            'airlock-worker' => 'FAKE-worker-pass-50',
            'airlock-test' => 'FAKE-admin-pass-50');

for my $u (qw(airlock-agent airlock-worker)) {
    open my $fh, '>', "$t/$u.pass" or die $!;
    print $fh "$pass{$u}\n";
    close $fh;
    chmod 0400, "$t/$u.pass";
}
system("$top/conf/airlock-redis-users", "$top/conf/redis-acl.conf",
       "$t/users.acl", "$t/airlock-agent.pass", "$t/airlock-worker.pass")
    == 0 or die "airlock-redis-users failed";

# the test's own user, to set the keys up and look at them
open my $fh, '>>', "$t/users.acl" or die $!;
print $fh "user airlock-test on >$pass{'airlock-test'} ~* &* +\@all\n";
close $fh;

my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    open STDOUT, '>', "$t/redis.log";
    open STDERR, '>&', \*STDOUT;
    exec('redis-server', '--aclfile', "$t/users.acl", '--port', '0',
         '--unixsocket', $sock, '--save', '', '--appendonly', 'no',
         '--dir', $t) or die "redis-server: $!";
}
for (1 .. 100) {
    last if -S $sock;
    select(undef, undef, undef, 0.05);
}
ok(-S $sock, 'redis-server starts with the ACL file')
    or diag(`cat $t/redis.log`);

sub cmd {
    my ($user, @c) = @_;
    my $q = join ' ', map { my $a = $_; $a =~ s/'/'\\''/g; "'$a'" } @c;
    local $ENV{REDISCLI_AUTH} = $pass{"airlock-$user"};
    my $r = `redis-cli -s $sock --user airlock-$user $q 2>&1`;
    chomp $r;
    return $r;
}

my $NO = qr/NOPERM|can't access|no permissions/;

# ---- the state: a job queued, one pending, a dead letter, records ----------
is(cmd('worker', qw(XGROUP CREATE airlock:jobs airlock-workers 0
                    MKSTREAM)), 'OK', 'the worker makes the group');
like(cmd('agent', 'EVAL', "local e = redis.call('xadd', KEYS[1], '*', "
         . "'job', 'j1') redis.call('hset', KEYS[2], e, 's r j1') "
         . "return e", 2, 'airlock:jobs', 'airlock:jobs:awaited'),
     qr/^\d+-\d+$/, 'the agent queues a job and records it, one script');
like(cmd('agent', qw(XADD airlock:jobs * job j2)), qr/^\d+-\d+$/,
     'and another');
like(cmd('worker', qw(XREADGROUP GROUP airlock-workers w1 COUNT 1 STREAMS
                      airlock:jobs >)), qr/j1/, 'a worker takes the first');
is(cmd('worker', 'EVAL', "local d = redis.call('xadd', KEYS[1], 'MAXLEN', "
       . "'~', 100, '*', 'job', 'd') redis.call('hset', KEYS[2], 'x:dead', "
       . "d) redis.call('set', KEYS[3], d, 'EX', 600) return 'OK'", 3,
       'airlock:jobs:dead', 'airlock:jobs:errors',
       'airlock:jobs:errors:gone:x'),
   'OK', 'the worker dead-letters one, records it, marks it: one script');
is(cmd('worker', 'EVAL', "local t = redis.call('time') "
       . "redis.call('zadd', KEYS[3], 'NX', t[1], 'x') "
       . "redis.call('xpending', KEYS[1], ARGV[1]) "
       . "redis.call('hget', KEYS[2], 'x:dead') "
       . "redis.call('set', KEYS[4], 'r', 'NX', 'EX', 600) "
       . "redis.call('publish', ARGV[2], 'r') return 'OK'", 4,
       'airlock:jobs', 'airlock:jobs:errors', 'airlock:jobs:errors:held',
       'result:j0', 'airlock-workers', 'response:j0'),
   'OK', 'a script over all its keys, each command on its own key');

# ---- the worker's user: each command on its own keys alone -----------------
my @worker = (
    [ qw(SET airlock:jobs x) ], [ qw(SET airlock:jobs x KEEPTTL) ],
    [ qw(SET airlock:jobs:dead x) ], [ qw(SET airlock:jobs:errors x) ],
    [ qw(SET airlock:jobs:errors:held x) ],
    [ qw(XADD airlock:jobs * job forged) ],
    [ qw(XADD airlock:jobs MAXLEN 0 * job forged) ],
    [ qw(XADD airlock:jobs MINID 9999999999999 * job forged) ],
    [ qw(XADD result:j0 * a b) ],
    [ qw(HSET airlock:jobs a b) ], [ qw(HSET result:j9 a b) ],
    [ qw(ZADD airlock:jobs:errors 1 m) ], [ qw(ZADD result:j9 1 m) ],
    [ qw(XDEL airlock:jobs:dead 0-1) ],
    [ qw(XACK airlock:jobs:dead g 0-1) ],
    [ qw(GET airlock:jobs:errors) ], [ qw(TYPE airlock:jobs) ],
    [ 'EVAL', "return redis.call('set', KEYS[1], 'x')", 1,
      'airlock:jobs' ],
    [ 'EVAL', "return redis.call('set', KEYS[1], 'x')", 1,
      'airlock:jobs:errors' ],
    [ 'EVAL', "return redis.call('xadd', KEYS[1], 'MAXLEN', 0, '*', "
      . "'job', 'forged')", 1, 'airlock:jobs' ],
);
for my $c (@worker) {
    like(cmd('worker', @$c), $NO, "the worker: @$c: refused");
}

# ---- the agent's user: the stream's commands and the hash's apart ---------
my @agent = (
    [ qw(XADD airlock:jobs:awaited * a b) ],
    [ qw(XDEL airlock:jobs:awaited 0-1) ],
    [ qw(HSET airlock:jobs a b) ], [ qw(HDEL airlock:jobs a) ],
    [ qw(XADD airlock:session:s * a b) ],
    [ qw(HSET airlock:session:s a b) ],
    [ 'EVAL', "return redis.call('hset', KEYS[1], 'a', 'b')", 1,
      'airlock:jobs' ],
    [ qw(ZADD airlock:session:s 1 m) ],
    [ qw(SET airlock:quota:sessions:uid:1 x) ],
    [ qw(SET airlock:quota:bytes:uid:1 x) ],
    [ qw(DEL airlock:quota:sessions:uid:1) ],
    [ qw(DEL airlock:quota:bytes:uid:1) ],
    [ qw(HSET airlock:quota:sessions:uid:1 a b) ],
    [ qw(ZADD airlock:quota:bytes:uid:1 1 m) ],
    [ qw(GET airlock:quota:bytes:uid:1) ],
    [ qw(EXPIRE airlock:quota:bytes:uid:1 1) ],
    [ qw(ZADD airlock:jobs:awaited 1 m) ],
    [ qw(SET airlock:quota:tokens:uid:1 0) ],
    [ qw(DEL airlock:quota:tokens:uid:1) ],
    [ qw(EXPIRE airlock:quota:tokens:uid:1 1) ],
    [ qw(PERSIST airlock:quota:tokens:uid:1) ],
    [ qw(DECRBY airlock:quota:tokens:uid:1 1) ],
    [ qw(HSET airlock:quota:tokens:uid:1 a b) ],
    [ qw(INCRBY airlock:session:s 1) ],
    [ qw(INCRBY airlock:quota:bytes:uid:1 1) ],
    [ qw(INCRBY airlock:quota:sessions:uid:1 1) ],
    [ 'EVAL', "return redis.call('set', KEYS[1], '0')", 1,
      'airlock:quota:tokens:uid:1' ],
    [ 'EVAL', "return redis.call('del', KEYS[1])", 1,
      'airlock:quota:tokens:uid:1' ],
    [ 'EVAL', "return redis.call('del', KEYS[1])", 1,
      'airlock:quota:bytes:uid:1' ],
    [ 'EVAL', "return redis.call('set', KEYS[1], 'x')", 1,
      'airlock:quota:sessions:uid:1' ],
);
for my $c (@agent) {
    like(cmd('agent', @$c), $NO, "the agent: @$c: refused");
}

# ---- the agent's quota keys: one script with its session's, each command
# ---- on its own key
is(cmd('agent', 'EVAL', "redis.call('set', KEYS[1], 'v', 'EX', 60) "
       . "local t = redis.call('time') "
       . "redis.call('zadd', KEYS[2], t[1] * 1000, 's') "
       . "redis.call('hincrby', KEYS[3], '!total', 1) "
       . "redis.call('pexpireat', KEYS[2], t[1] * 1000 + 60000) "
       . "redis.call('pexpireat', KEYS[3], t[1] * 1000 + 60000) "
       . "return 'OK'", 3, 'airlock:session:q', 'airlock:quota:sessions:uid:1',
       'airlock:quota:bytes:uid:1'),
   'OK', 'the agent stores a session and counts it: one script');
is(cmd('test', qw(TYPE airlock:quota:sessions:uid:1)), 'zset',
   'the quota\'s sorted set kept');
is(cmd('test', qw(TYPE airlock:quota:bytes:uid:1)), 'hash',
   'the quota\'s sizes kept');

# ---- the tokens' count: a script of its own key alone ---------------------
is(cmd('agent', 'EVAL', "redis.call('type', KEYS[1]) "
       . "redis.call('get', KEYS[1]) "
       . "redis.call('incrby', KEYS[1], 5) "
       . "local t = redis.call('time') "
       . "redis.call('pexpireat', KEYS[1], t[1] * 1000 + 60000) "
       . "return 'OK'", 1, 'airlock:quota:tokens:uid:1'),
   'OK', 'the agent counts tokens: one script');
is(cmd('test', qw(GET airlock:quota:tokens:uid:1)), '5',
   'the tokens\' count kept');
is(cmd('agent', 'EVAL', "redis.call('type', KEYS[2]) "
       . "redis.call('zremrangebyscore', KEYS[2], '-inf', 1) "
       . "redis.call('zadd', KEYS[2], 9999999999999, 'r 7') "
       . "redis.call('zrange', KEYS[2], 0, -1) "
       . "redis.call('pexpireat', KEYS[2], 9999999999999) "
       . "redis.call('zrem', KEYS[2], 'r 7') "
       . "redis.call('incrby', KEYS[3], 2) "
       . "redis.call('pexpireat', KEYS[3], 9999999999999) "
       . "return redis.call('incrby', KEYS[1], 0)", 3,
       'airlock:quota:tokens:uid:1', 'airlock:quota:tokens:!held:uid:1',
       'airlock:quota:tokens:!minute:uid:1'),
   '5', 'the agent holds a call\'s tokens against the count: one script');
like(cmd('agent', 'EVAL', "redis.call('incrby', KEYS[1], 1) "
         . "return redis.call('incrby', KEYS[2], 1)", 2,
         'airlock:quota:tokens:uid:1', 'airlock:session:q'),
     $NO, 'the agent: INCRBY on a session from the tokens\' script: '
     . 'refused');

# ---- nothing of it lost ---------------------------------------------------
is(cmd('test', qw(TYPE airlock:jobs)), 'stream', 'the job stream is one');
is(cmd('test', qw(XLEN airlock:jobs)), 2, 'both jobs still queued');
like(cmd('worker', qw(XPENDING airlock:jobs airlock-workers)), qr/^1\n/,
     'the first still pending');
is(cmd('test', qw(XLEN airlock:jobs:dead)), 1, 'the dead letter kept');
is(cmd('test', qw(TYPE airlock:jobs:errors)), 'hash', 'the records kept');
is(cmd('test', qw(TYPE airlock:jobs:errors:held)), 'zset',
   'the held set kept');
is(cmd('test', qw(TYPE airlock:jobs:awaited)), 'hash',
   'the awaited jobs\' hash kept');
is(cmd('agent', qw(GET result:j0)), 'r', 'the result kept');

kill 'TERM', $pid;
waitpid($pid, 0);

done_testing();
