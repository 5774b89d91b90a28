#!/usr/bin/perl
# Redis's users, one per client.  The agent and the worker were both
# Redis's default user, with every key and every non-admin command: the
# agent, which a model drives, could DEL or XTRIM the job stream, DEL
# the stored results or write false ones, read the dead letters and the
# worker's records, or XREADGROUP, XACK and XCLAIM entries that no
# worker would then run: queued jobs and results lost, against "nothing
# is lost".  conf/redis-acl.conf now has the default user off and a user
# per client with its own keys and commands, and conf/airlock-redis-users
# writes Redis's ACL file from it with each password's SHA-256 (Redis
# holds no password), each password in a file of the client's own.
# A kept password file is given its mode and owner again at each run (a
# file others could read stayed so).
# Here: that script's files, and a redis-server started with them, asked
# what the agent's user must be refused.  What each user is allowed:
# tests/build/28-redis-acl.t.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

need_cmd(qw(redis-server redis-cli sha256sum));

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $t = tempdir(CLEANUP => 1);
my $sock = "$t/redis.sock";
my $gen = "$top/conf/airlock-redis-users";
my $tpl = "$top/conf/redis-acl.conf";

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return undef;
    local $/;
    return scalar <$fh>;
}

# ---- the script: passwords made once, kept, hashed into the ACL file --
ok(-x $gen && system($gen, $tpl, "$t/users.acl", "$t/agent.pass",
                     "$t/worker.pass") == 0,
   'airlock-redis-users writes the files');
my %pass;
for my $c (qw(agent worker)) {
    my $p = slurp("$t/$c.pass") // '';
    like($p, qr/^[0-9a-f]{64}\n\z/, "$c.pass: 64 hex digits, one line");
    is((stat "$t/$c.pass")[2] & 07777, 0400, "$c.pass: mode 0400");
    chomp($pass{$c} = $p);
}
isnt($pass{agent}, $pass{worker}, 'a password per client');
my $acl = slurp("$t/users.acl") // '';
is((stat "$t/users.acl")[2] & 07777, 0640, 'users.acl: mode 0640');
for my $c (qw(agent worker)) {
    my $h = `printf %s '$pass{$c}' | sha256sum | cut -c1-64`;
    chomp $h;
    like($acl, qr/^user airlock-$c on #\Q$h\E /m,
         "users.acl: airlock-$c by its password's SHA-256");
    unlike($acl, qr/\Q$pass{$c}\E/, "users.acl: not $c\'s password");
}
like($acl, qr/^user default off /m, 'users.acl: the default user off');
unlike($acl, qr/^#|@[A-Z0-9_]+@/m, 'no comment, no placeholder left');

ok(system($gen, $tpl, "$t/users.acl", "$t/agent.pass", "$t/worker.pass")
   == 0 && (slurp("$t/agent.pass") // '') eq "$pass{agent}\n"
   && (slurp("$t/users.acl") // '') eq $acl,
   'run again: the passwords and the ACL file are kept');

# a kept password file others may read (a backup restored with its
# umask's mode, a copy made by hand) was kept so at every boot: it gets
# its mode again, and keeps its password
chmod 0644, "$t/agent.pass", "$t/worker.pass";
ok(system($gen, $tpl, "$t/users.acl", "$t/agent.pass", "$t/worker.pass")
   == 0 && (slurp("$t/agent.pass") // '') eq "$pass{agent}\n",
   'run again over a password file others may read: kept');
for my $c (qw(agent worker)) {
    is(sprintf('%04o', (stat "$t/$c.pass")[2] & 07777), '0400',
       "$c.pass: mode 0400 again");
}
SKIP: {
    skip 'chown to another user needs root', 1 if $> != 0;
    chown 1, 1, "$t/agent.pass";
    system($gen, '--agent-owner', 'root', $tpl, "$t/users.acl",
           "$t/agent.pass", "$t/worker.pass");
    is((stat "$t/agent.pass")[4], 0, 'and its owner (--agent-owner) again');
}

open my $fh, '>', "$t/bad.conf" or die;
print $fh "user airlock-agent on #\@AGENT_SHA256\@ +get\n"
          . "user x on #\@OTHER\@\n";
close $fh;
my $out = `$gen $t/bad.conf $t/bad.acl $t/agent.pass $t/worker.pass 2>&1`;
ok($? != 0 && $out =~ /placeholder left over/ && !-e "$t/bad.acl",
   'a template with another placeholder: refused, no file')
    or diag($out);

# ---- Redis with it, as the image has it (aclfile) ----------------------
# and a user of the test's own, to look at what the clients may not
open $fh, '>>', "$t/users.acl" or die;
print $fh "user airlock-test on >FAKE-admin-29 ~* &* +\@all\n";
close $fh;
$pass{test} = 'FAKE-admin-29';
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
ok(-S $sock, 'redis-server starts with it') or diag(slurp("$t/redis.log"));

sub cmd {
    my ($user, @c) = @_;
    my $q = join ' ', map { my $a = $_; $a =~ s/'/'\\''/g; "'$a'" } @c;
    my $as = defined $user ? "--user airlock-$user" : '';
    local $ENV{REDISCLI_AUTH} = defined $user ? $pass{$user} : undef;
    delete $ENV{REDISCLI_AUTH} unless defined $user;
    my $r = `redis-cli -s $sock $as $q 2>&1`;
    chomp $r;
    return $r;
}

like(cmd(undef, 'PING'), qr/^NOAUTH/, 'no AUTH: nothing (default user off)');
like(cmd(undef, qw(AUTH default x)), qr/WRONGPASS/,
     'AUTH as the default user: refused');
{
    local $pass{agent} = 'FAKE-wrong';
    like(cmd('agent', qw(XLEN airlock:jobs)), qr/WRONGPASS/,
         'a wrong password: WRONGPASS');
}
{
    local $pass{agent} = $pass{worker};
    like(cmd('agent', qw(XLEN airlock:jobs)), qr/WRONGPASS/,
         'the worker\'s password for the agent: WRONGPASS');
}

# the state the refusals are tried on: a queued job, one a worker holds,
# its result, a dead letter, the worker's records
is(cmd('worker', qw(XGROUP CREATE airlock:jobs airlock-workers 0
                    MKSTREAM)), 'OK', 'the worker makes the group');
my $e1 = cmd('agent', qw(XADD airlock:jobs * job j1));
like($e1, qr/^\d+-\d+$/, 'the agent queues a job');
my $e2 = cmd('agent', qw(XADD airlock:jobs * job j2));
like(cmd('worker', qw(XREADGROUP GROUP airlock-workers w1 COUNT 1 STREAMS
                      airlock:jobs >)), qr/j1/, 'a worker reads the first');
is(cmd('worker', qw(SET result:j0 {"status":"ok"} NX EX 600)), 'OK',
   'the worker stores a result');
like(cmd('worker', qw(XADD airlock:jobs:dead * job d)), qr/^\d+-\d+$/,
     'and a dead letter');
like(cmd('worker', qw(HSET airlock:jobs:errors x y)), qr/^\d+$/,
     'and a record');

# the agent's user: none of these, each of which loses or forges jobs
# or results, or reads what is the worker's
my @refused = (
    [ qw(DEL airlock:jobs) ], [ qw(UNLINK airlock:jobs) ],
    [ qw(XTRIM airlock:jobs MAXLEN 0) ],
    [ qw(XTRIM airlock:jobs MINID 9999999999999) ],
    [ qw(FLUSHDB) ], [ qw(FLUSHALL) ],
    [ qw(XGROUP DESTROY airlock:jobs airlock-workers) ],
    [ qw(XGROUP SETID airlock:jobs airlock-workers $) ],
    [ qw(XGROUP DELCONSUMER airlock:jobs airlock-workers w1) ],
    [ qw(XREADGROUP GROUP airlock-workers evil COUNT 10 STREAMS
         airlock:jobs >) ],
    [ 'XACK', 'airlock:jobs', 'airlock-workers', $e1 ],
    [ 'XCLAIM', 'airlock:jobs', 'airlock-workers', 'evil', '0', $e1 ],
    [ qw(XAUTOCLAIM airlock:jobs airlock-workers evil 0 0-0) ],
    [ qw(XRANGE airlock:jobs - +) ], [ qw(XREAD STREAMS airlock:jobs 0) ],
    [ qw(RENAME airlock:jobs x) ], [ qw(EXPIRE airlock:jobs 1) ],
    [ qw(DEL result:j0) ], [ qw(SET result:j9 forged) ],
    [ qw(EXPIRE result:j0 1) ], [ qw(PUBLISH response:j9 forged) ],
    [ qw(XRANGE airlock:jobs:dead - +) ], [ qw(DEL airlock:jobs:dead) ],
    [ qw(HGETALL airlock:jobs:errors) ], [ qw(DEL airlock:jobs:errors) ],
    [ qw(ZRANGE airlock:jobs:errors:held 0 -1) ],
    [ qw(KEYS *) ], [ qw(SCAN 0) ], [ qw(CONFIG SET appendonly no) ],
    [ 'EVAL', "return redis.call('del', KEYS[1])", 1, 'airlock:jobs' ],
    [ 'EVAL', "return redis.call('xtrim', KEYS[1], 'MAXLEN', 0)", 1,
      'airlock:jobs' ],
    [ 'EVAL', "return redis.call('set', KEYS[1], 'forged')", 1,
      'result:j0' ],
    [ 'EVAL', "return redis.call('del', 'result:j0')", 1,
      'airlock:jobs' ],
    [ 'EVAL_RO', "return redis.call('xrange', KEYS[1], '-', '+')", 1,
      'airlock:jobs:dead' ],
);
for my $c (@refused) {
    like(cmd('agent', @$c), qr/NOPERM|can't access|can't run|no permissions/,
         "the agent: @$c: refused");
}
is(cmd('agent', qw(XLEN airlock:jobs)), 2, 'both jobs still queued');
like(cmd('worker', qw(XPENDING airlock:jobs airlock-workers)),
     qr/^1\n\Q$e1\E/, 'the first still the worker\'s, pending');
is(cmd('agent', qw(GET result:j0)), '{"status":"ok"}',
   'the result kept, and the agent reads it');
like(cmd('test', qw(XRANGE airlock:jobs:dead - +)), qr/^\d+-\d+\njob\nd$/,
     'the dead letter kept');

# nor the worker's: the agent's sessions, and what loses the stream
for my $c ([ qw(GET airlock:session:s) ], [ qw(DEL airlock:jobs) ],
           [ qw(XTRIM airlock:jobs MAXLEN 0) ], [ qw(FLUSHDB) ],
           [ qw(XGROUP DESTROY airlock:jobs airlock-workers) ],
           [ qw(HGETALL airlock:jobs:awaited) ]) {
    like(cmd('worker', @$c), qr/NOPERM/, "the worker: @$c: refused");
}

kill 'TERM', $pid;
waitpid($pid, 0);

done_testing();
