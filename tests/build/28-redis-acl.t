#!/usr/bin/perl
# Redis's clients, airlock-agent (which a model drives) and
# airlock-worker, are its default user: no password, the socket's group
# is the door.  That user was Redis's admin: CONFIG SET appendonly no
# with CONFIG REWRITE, FLUSHALL, SHUTDOWN NOSAVE or REPLICAOF lost the
# queued jobs and stored results without a trace.  conf/redis-acl.conf,
# which the image's redis.conf and the demo's Redis take, leaves it
# every command Airlock's programs send, directly or from their EVAL
# scripts (whose redis.call()s Redis checks too), and none of the admin
# ones.  A redis-server is started with it, and asked as the agent asks.

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

my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    open STDOUT, '>', "$t/redis.log";
    open STDERR, '>&', \*STDOUT;
    exec('redis-server', "$top/conf/redis-acl.conf", '--port', '0',
         '--unixsocket', $sock, '--save', '', '--appendonly', 'no',
         '--dir', $t) or die "redis-server: $!";
}
for (1 .. 100) {
    last if -S $sock;
    select(undef, undef, undef, 0.05);
}
ok(-S $sock, 'redis-server starts with conf/redis-acl.conf')
    or diag(`cat $t/redis.log`);

# one command, as the agent sends it: no AUTH, the default user
sub cmd {
    my $q = join ' ', map { my $a = $_; $a =~ s/'/'\\''/g; "'$a'" } @_;
    my $r = `redis-cli -s $sock $q 2>&1`;
    chomp $r;
    return $r;
}

# what Airlock's programs send (agent/, worker/, the image's checks and
# the demo's), as they send it; each as a command and from a script
my @used = (
    [ 'PING' ], [ qw(SET s v EX 60) ], [ qw(SET l v NX EX 60) ],
    [ qw(GET s) ], [ qw(STRLEN s) ], [ qw(TYPE s) ], [ qw(TTL l) ],
    [ qw(EXPIRE l 60) ], [ qw(EXISTS s) ], [ qw(DEL l) ],
    [ qw(HSET h f v) ], [ qw(HGET h f) ], [ qw(HEXISTS h f) ],
    [ qw(HSCAN h 0 MATCH * COUNT 10) ], [ qw(HDEL h f) ],
    [ qw(PUBLISH c m) ], [ 'TIME' ],
    [ qw(ZADD z NX 1 m) ], [ qw(ZADD z XX 2 m) ], [ qw(ZSCORE z m) ],
    [ qw(ZRANGEBYSCORE z -inf +inf LIMIT 0 1) ], [ qw(ZREM z m) ],
    [ qw(XGROUP CREATE j g 0 MKSTREAM) ], [ qw(XADD j * job x) ],
    [ qw(XADD j MAXLEN ~ 100 * job x) ], [ qw(XLEN j) ],
    [ qw(XREADGROUP GROUP g c COUNT 1 STREAMS j >) ],
    [ qw(XPENDING j g) ], [ qw(XPENDING j g - + 1 c) ],
    [ qw(XAUTOCLAIM j g c 0 0-0 COUNT 1) ],
    [ qw(XCLAIM j g c 0 0-1 JUSTID) ], [ qw(XRANGE j - +) ],
    [ qw(XACK j g 0-1) ], [ qw(XDEL j 0-1) ],
);
my %cover;
for my $c (@used) {
    my $name = lc $c->[0];
    $cover{$name} = 1;
    my $r = cmd(@$c);
    unlike($r, qr/NOPERM|ERR/, "@$c");
    next if $name eq 'ping';
    my @a = $name eq 'xgroup' ? map { $_ eq 'g' ? 'g2' : $_ } @$c : @$c;
    my $lua = 'redis.pcall(' . join(', ', map { "'$_'" } @a) . ')';
    $lua .= "['ok'] or 'x'" if $name eq 'type';
    $r = cmd('EVAL', "local r = $lua if type(r) == 'table' and r.err then "
             . "return 'E ' .. r.err end return 'OK'", 0);
    is($r, 'OK', "from EVAL: @$c");
}
$cover{$_} = 1 for qw(eval subscribe);
my $r = `timeout 1 redis-cli -s $sock SUBSCRIBE response:x 2>&1`;
like($r, qr/^subscribe/m, 'SUBSCRIBE');
like(cmd('EVAL', "return redis.call('get', KEYS[1])", 1, 's'), qr/^v$/,
     'EVAL');

# what must be refused: each would lose jobs or results, or hand the
# server to someone else
my @admin = (
    [ qw(CONFIG SET appendonly no) ], [ qw(CONFIG SET appendfsync no) ],
    [ qw(CONFIG REWRITE) ], [ qw(CONFIG GET *) ], [ qw(FLUSHALL) ],
    [ qw(FLUSHDB) ],
    [ qw(REPLICAOF 127.0.0.1 9) ], [ qw(SLAVEOF 127.0.0.1 9) ],
    [ qw(SAVE) ], [ qw(BGSAVE) ], [ qw(BGREWRITEAOF) ],
    [ qw(ACL SETUSER default +@all) ], [ qw(CLIENT KILL TYPE normal) ],
    [ qw(CLIENT PAUSE 1000) ],
    [ qw(MIGRATE 127.0.0.1 9 k 0 1000) ], [ qw(RESTORE k 0 x) ],
    [ qw(SWAPDB 0 1) ], [ qw(FAILOVER) ], [ qw(CLUSTER RESET) ],
);
for my $c (@admin) {
    like(cmd(@$c), qr/^NOPERM/, "@$c: NOPERM");
}
# off in Redis 7.0 whatever the user (enable-debug-command and
# enable-module-command no): their refusal comes before the ACL's
for my $c ([ qw(DEBUG SLEEP 0) ], [ qw(MODULE LOAD /nonexistent.so) ]) {
    like(cmd(@$c), qr/^(?:NOPERM|ERR \w+ command not allowed)/,
         "@$c: refused");
}
# SYNC, PSYNC and MONITOR hold the connection: the refusal is the
# ACL's all the same
for my $c ([ 'SYNC' ], [ qw(PSYNC ? -1) ], [ 'MONITOR' ]) {
    my $r = `timeout 5 redis-cli -s $sock @$c 2>&1`;
    like($r, qr/NOPERM/, "@$c: NOPERM");
}
# a script's commands are the user's: these three Redis runs from
# scripts (CONFIG, SHUTDOWN it never does)
for my $c ('FLUSHALL', 'FLUSHDB', "SWAPDB', '0', '1") {
    like(cmd('EVAL', "return redis.call('$c')", 0),
         qr/can't run this command/, "EVAL of redis.call('$c'): refused");
}
like(cmd(qw(SHUTDOWN NOSAVE)), qr/^NOPERM/, 'SHUTDOWN NOSAVE: NOPERM');
is(cmd('PING'), 'PONG', 'the server is still up');

# every command the programs' sources send is one of those above: a new
# one is tried here before an appliance refuses it
my %seen;
for my $f (glob("$top/agent/*.c $top/worker/*.c $top/redis/*.c")) {
    my $src = do { local (@ARGV, $/) = $f; <> };
    $seen{lc $1}{$f} = 1 while $src =~ /redis\.p?call\(\s*'(\w+)'/g;
    $seen{lc $1}{$f} = 1
        while $src =~ /redis(?:Append)?Command\(\s*[\w>-]+,\s*"(\w+)/g;
    $seen{lc $1}{$f} = 1 while $src =~ /\[\]\s*=\s*\{\s*"([A-Z]+)"/g;
    $seen{lc $1}{$f} = 1 while $src =~ /argv\[0\]\s*=\s*"([A-Z]+)"/g;
}
for my $f ("$top/tests/image/guest-check.sh",
           "$top/tests/build/30-demo-redis.t") {
    my $src = do { local (@ARGV, $/) = $f; <> };
    $seen{lc $1}{$f} = 1 while $src =~ /\$redis\s+([A-Z]+)/g;
    $seen{lc $1}{$f} = 1
        while $src =~ /redis-cli -s \$\w+ ([A-Z]+)/g;
}
ok(scalar(keys %seen) >= 20, 'the sources\' commands found')
    or diag(join ' ', sort keys %seen);
for my $c (sort keys %seen) {
    ok($cover{$c}, "$c (" . join(', ', map { s{^\Q$top\E/}{}r }
                                 sort keys %{$seen{$c}}) . ') is tried');
}

kill 'TERM', $pid;
waitpid($pid, 0);

done_testing();
