#!/usr/bin/perl
# Redis's users for Airlock's clients (conf/redis-acl.conf, made into
# Redis's ACL file by conf/airlock-redis-users, as the image, the demo
# and the tests have it): each client may send every command it sends,
# on the keys it sends it on, directly or from its EVAL scripts (whose
# redis.call()s Redis checks too), and no admin command (CONFIG SET
# appendonly no with CONFIG REWRITE, FLUSHALL, SHUTDOWN NOSAVE or
# REPLICAOF lost the queued jobs and stored results without a trace).
# A redis-server is started with it, and asked as each client asks.
# What the agent's user may not do to the worker's keys:
# tests/build/29-redis-users.t.

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
my %pass = ('airlock-agent' => 'FAKE-agent-pass-28',
            'airlock-worker' => 'FAKE-worker-pass-28');

for my $u (keys %pass) {
    open my $fh, '>', "$t/$u.pass" or die $!;
    print $fh "$pass{$u}\n";
    close $fh;
    chmod 0400, "$t/$u.pass";
}
system("$top/conf/airlock-redis-users", "$top/conf/redis-acl.conf",
       "$t/users.acl", "$t/airlock-agent.pass", "$t/airlock-worker.pass")
    == 0 or die "airlock-redis-users failed";

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

# one command, as USER sends it (AUTH USER its password)
sub cmd {
    my ($user, @c) = @_;
    my $q = join ' ', map { my $a = $_; $a =~ s/'/'\\''/g; "'$a'" } @c;
    local $ENV{REDISCLI_AUTH} = $pass{$user};
    my $r = `redis-cli -s $sock --user $user $q 2>&1`;
    chomp $r;
    return $r;
}

# what each program sends (agent/, worker/), on the keys it sends it on,
# as a command and from a script; the agent's scripts that read a
# result are EVAL_RO (EVAL's keys are taken for written ones)
my %used = (
    'airlock-agent' => [
        [ qw(SET airlock:session:s v EX 60) ],
        [ qw(SET airlock:session:s:lock v NX EX 60) ],
        [ qw(GET airlock:session:s) ], [ qw(STRLEN airlock:session:s) ],
        [ qw(GETRANGE airlock:session:s 0 99) ],
        [ qw(TYPE airlock:session:s) ], [ qw(TTL airlock:session:s:lock) ],
        [ qw(EXPIRE airlock:session:s:lock 60) ],
        [ qw(DEL airlock:session:s:lock) ],
        [ qw(XADD airlock:jobs * job x) ], [ qw(XLEN airlock:jobs) ],
        [ qw(XPENDING airlock:jobs airlock-workers - + 1) ],
        [ qw(XDEL airlock:jobs 0-1) ],
        [ qw(TYPE airlock:jobs:awaited) ],
        [ qw(HSET airlock:jobs:awaited f v) ],
        [ qw(HSCAN airlock:jobs:awaited 0 COUNT 10) ],
        [ qw(HDEL airlock:jobs:awaited f) ],
        [ qw(EXISTS result:j) ], [ qw(GET result:j) ],
        [ qw(STRLEN result:j) ], [ 'TIME' ],
        [ qw(TYPE airlock:quota:sessions:uid:1) ],
        [ qw(ZADD airlock:quota:sessions:uid:1 1 s) ],
        [ qw(ZRANGE airlock:quota:sessions:uid:1 -1 -1 WITHSCORES) ],
        [ qw(ZRANGEBYSCORE airlock:quota:sessions:uid:1 -inf 1
             LIMIT 0 1024) ],
        [ qw(ZREM airlock:quota:sessions:uid:1 s) ],
        [ qw(PEXPIREAT airlock:quota:sessions:uid:1 9999999999999) ],
        [ qw(TYPE airlock:quota:bytes:uid:1) ],
        [ qw(HSET airlock:quota:bytes:uid:1 s 1) ],
        [ qw(HGET airlock:quota:bytes:uid:1 s) ],
        [ qw(HINCRBY airlock:quota:bytes:uid:1 !total 1) ],
        [ qw(HDEL airlock:quota:bytes:uid:1 s) ],
        [ qw(PEXPIREAT airlock:quota:bytes:uid:1 9999999999999) ],
        [ qw(TYPE airlock:quota:tokens:uid:1) ],
        [ qw(GET airlock:quota:tokens:uid:1) ],
        [ qw(INCRBY airlock:quota:tokens:uid:1 1) ],
        [ qw(PEXPIREAT airlock:quota:tokens:uid:1 9999999999999) ],
        [ qw(TYPE airlock:quota:tokens:!held:uid:1) ],
        [ qw(ZADD airlock:quota:tokens:!held:uid:1 1 m) ],
        [ qw(ZRANGE airlock:quota:tokens:!held:uid:1 0 -1) ],
        [ qw(ZREMRANGEBYSCORE airlock:quota:tokens:!held:uid:1 -inf 1) ],
        [ qw(ZREM airlock:quota:tokens:!held:uid:1 m) ],
        [ qw(PEXPIREAT airlock:quota:tokens:!held:uid:1 9999999999999) ],
        [ qw(TYPE airlock:quota:denials:uid:1) ],
        [ qw(ZREMRANGEBYSCORE airlock:quota:denials:uid:1 -inf 1) ],
        [ qw(ZADD airlock:quota:denials:uid:1 1 m) ],
        [ qw(ZREM airlock:quota:denials:uid:1 m) ],
        [ qw(ZRANGE airlock:quota:denials:uid:1 0 0 WITHSCORES) ],
        [ qw(PEXPIRE airlock:quota:denials:uid:1 60000) ],
    ],
    'airlock-worker' => [
        [ qw(XGROUP CREATE airlock:jobs airlock-workers 0 MKSTREAM) ],
        [ qw(XADD airlock:jobs:dead MAXLEN ~ 100 * job x) ],
        [ qw(XREADGROUP GROUP airlock-workers c COUNT 1 STREAMS
             airlock:jobs >) ],
        [ qw(XPENDING airlock:jobs airlock-workers) ],
        [ qw(XPENDING airlock:jobs airlock-workers - + 1 c) ],
        [ qw(XAUTOCLAIM airlock:jobs airlock-workers c 0 0-0 COUNT 1) ],
        [ qw(XCLAIM airlock:jobs airlock-workers c 0 0-1 JUSTID) ],
        [ qw(XRANGE airlock:jobs - +) ],
        [ qw(XACK airlock:jobs airlock-workers 0-1) ],
        [ qw(XDEL airlock:jobs 0-1) ],
        [ qw(SET result:j v NX EX 60) ], [ qw(GET result:j) ],
        [ qw(TYPE result:j) ], [ qw(PUBLISH response:j m) ],
        [ qw(SET airlock:jobs:errors:gone:0-1 v EX 60) ],
        [ qw(GET airlock:jobs:errors:gone:0-1) ],
        [ qw(HSET airlock:jobs:errors f v) ],
        [ qw(HGET airlock:jobs:errors f) ],
        [ qw(HEXISTS airlock:jobs:errors f) ],
        [ qw(HDEL airlock:jobs:errors f) ],
        [ qw(ZADD airlock:jobs:errors:held NX 1 m) ],
        [ qw(ZADD airlock:jobs:errors:held XX 2 m) ],
        [ qw(ZSCORE airlock:jobs:errors:held m) ],
        [ qw(ZRANGEBYSCORE airlock:jobs:errors:held -inf +inf LIMIT 0 1) ],
        [ qw(ZREM airlock:jobs:errors:held m) ], [ 'TIME' ],
    ],
);
my %ro = map { $_ => 1 } qw(result:j);
my %cover;

# the workers' group, which the worker makes (the agent may not)
is(cmd('airlock-worker', qw(XGROUP CREATE airlock:jobs airlock-workers 0
                            MKSTREAM)), 'OK', 'the worker makes the group');
for my $user (sort keys %used) {
    for my $c (@{$used{$user}}) {
        my $name = lc $c->[0];
        $cover{$user}{$name} = 1;
        my $r = cmd($user, @$c);
        unlike($r, qr/NOPERM|NOAUTH|WRONGPASS|ERR/, "$user: @$c");

        # from a script: its key declared, as the programs declare them
        my @a = $name eq 'xgroup'
            ? map { $_ eq 'airlock-workers' ? "g-$user" : $_ } @$c : @$c;
        my $key = $name eq 'xreadgroup' ? 'airlock:jobs'
                : $name =~ /^(?:time|publish)$/ ? undef
                : $name eq 'xgroup' ? $a[2] : $a[1];
        my $lua = 'redis.pcall(' . join(', ', map { "'$_'" } @a) . ')';
        $lua .= "['ok'] or 'x'" if $name eq 'type';
        my $eval = $user eq 'airlock-agent' && defined $key && $ro{$key}
            ? 'EVAL_RO' : 'EVAL';
        next if $user eq 'airlock-agent' && $name eq 'exists';
        $r = cmd($user, $eval, "local r = $lua if type(r) == 'table' "
                 . "and r.err then return 'E ' .. r.err end return 'OK'",
                 defined $key ? (1, $key) : (0));
        is($r, 'OK', "$user: @$c from $eval");
        $cover{$user}{lc $eval} = 1;
    }
}
my $r = `REDISCLI_AUTH=$pass{'airlock-agent'} timeout 1 redis-cli -s $sock \\
    --user airlock-agent SUBSCRIBE response:x 2>&1`;
like($r, qr/^subscribe/m, 'airlock-agent: SUBSCRIBE response:x');
$cover{'airlock-agent'}{subscribe} = 1;
$cover{$_}{auth} = 1 for keys %used;

# what must be refused to either: each would lose jobs or results, or
# hand the server to someone else
my @admin = (
    [ qw(CONFIG SET appendonly no) ], [ qw(CONFIG SET appendfsync no) ],
    [ qw(CONFIG REWRITE) ], [ qw(CONFIG GET *) ], [ qw(FLUSHALL) ],
    [ qw(FLUSHDB) ],
    [ qw(REPLICAOF 127.0.0.1 9) ], [ qw(SLAVEOF 127.0.0.1 9) ],
    [ qw(SAVE) ], [ qw(BGSAVE) ], [ qw(BGREWRITEAOF) ],
    [ qw(ACL SETUSER default on nopass +@all) ],
    [ qw(ACL SETUSER airlock-agent +@all) ], [ qw(ACL LIST) ],
    [ qw(CLIENT KILL TYPE normal) ], [ qw(CLIENT PAUSE 1000) ],
    [ qw(MIGRATE 127.0.0.1 9 airlock:jobs 0 1000) ],
    [ qw(RESTORE airlock:jobs 0 x) ],
    [ qw(SWAPDB 0 1) ], [ qw(FAILOVER) ], [ qw(CLUSTER RESET) ],
    [ qw(KEYS *) ], [ qw(SCAN 0) ],
);
for my $user (sort keys %used) {
    for my $c (@admin) {
        like(cmd($user, @$c), qr/^NOPERM/, "$user: @$c: NOPERM");
    }
    for my $c ([ qw(DEBUG SLEEP 0) ], [ qw(MODULE LOAD /nonexistent.so) ]) {
        like(cmd($user, @$c),
             qr/^(?:NOPERM|ERR \w+ command not allowed)/,
             "$user: @$c: refused");
    }
    # SYNC, PSYNC and MONITOR hold the connection
    for my $c ([ 'SYNC' ], [ qw(PSYNC ? -1) ], [ 'MONITOR' ]) {
        local $ENV{REDISCLI_AUTH} = $pass{$user};
        my $o = `timeout 5 redis-cli -s $sock --user $user @$c 2>&1`;
        like($o, qr/NOPERM/, "$user: @$c: NOPERM");
    }
    for my $c ('FLUSHALL', 'FLUSHDB', "SWAPDB', '0', '1") {
        like(cmd($user, 'EVAL', "return redis.call('$c')", 0),
             qr/can't run this command|NOPERM/,
             "$user: EVAL of redis.call('$c'): refused");
    }
    like(cmd($user, qw(SHUTDOWN NOSAVE)), qr/^NOPERM/,
         "$user: SHUTDOWN NOSAVE: NOPERM");
}
like(cmd('airlock-agent', 'XLEN', 'airlock:jobs'), qr/^\d+$/,
     'the server is still up');

# every command the programs' sources send is one of those above, for
# the program that sends it: a new one is tried here before an
# appliance refuses it
my %seen;
my %who = (agent => 'airlock-agent', worker => 'airlock-worker');
for my $f (glob("$top/agent/*.c $top/worker/*.c $top/redis/*.c")) {
    my ($dir) = $f =~ m{/(agent|worker|redis)/[^/]+$};
    my @users = $dir eq 'redis' ? values %who : ($who{$dir});
    my $src = do { local (@ARGV, $/) = $f; <> };
    my @c;
    push @c, lc $1 while $src =~ /redis\.p?call\(\s*'(\w+)'/g;
    push @c, lc $1
        while $src =~ /redis(?:Append)?Command\(\s*[\w>-]+,\s*"(\w+)/g;
    push @c, lc $1 while $src =~ /\[\]\s*=\s*\{\s*"([A-Z]+)"/g;
    push @c, lc $1 while $src =~ /argv\[0\]\s*=\s*"([A-Z]+)"/g;
    for my $u (@users) {
        $seen{$u}{$_}{$f} = 1 for @c;
    }
}
# the image's check queues a job and reads its result as the agent
my $gc = "$top/tests/image/guest-check.sh";
my $src = do { local (@ARGV, $/) = $gc; <> };
$seen{'airlock-agent'}{lc $1}{$gc} = 1 while $src =~ /\$redis\s+([A-Z]+)/g;

ok(scalar(keys %{$seen{'airlock-agent'}}) >= 10
   && scalar(keys %{$seen{'airlock-worker'}}) >= 15,
   'the sources\' commands found')
    or diag(explain \%seen);
for my $u (sort keys %seen) {
    for my $c (sort keys %{$seen{$u}}) {
        ok($cover{$u}{$c}, "$u: $c ("
           . join(', ', map { s{^\Q$top\E/}{}r } sort keys %{$seen{$u}{$c}})
           . ') is tried');
    }
}

kill 'TERM', $pid;
waitpid($pid, 0);

done_testing();
