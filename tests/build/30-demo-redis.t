#!/usr/bin/perl
# make demo-up's Redis (conf/demo/run.sh --keep): it holds the job stream
# and the agent's sessions, so, as on the appliance
# (unixsocketperm 770, group redis), only what the demo runs reaches it:
# Redis (root), the worker and the agent (airlock-agent), both in group
# redis.  Another local user would otherwise queue jobs the worker
# fetches inputs for as the proxy's client "worker", and read or rewrite
# the operator's sessions.  Its Redis takes conf/redis-acl.conf as the appliance's
# does (through conf/airlock-redis-users): the agent and the worker, run
# by the demo as users of their own, need none of the commands it
# refuses them.  The agent's socket, as the appliance's, is 0660 and
# one group's, www-data's (nginx's workers): no other local user
# connects.  The demo itself is left running for
# the probe, then stopped with run.sh --down.  It runs what
# AIRLOCK_BUILD names (make demo's BUILD=DIR), here through a path of
# its own, nginx's module too.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_demo);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";

need_demo($top, $build);

# the build through a link: a path the demo can only have from
# AIRLOCK_BUILD, not from where the tree is
my $link = tempdir(CLEANUP => 1) . '/build';
symlink($build, $link) or die "symlink $link: $!";

# Redis bounded as on the appliance (redis-maxmemory), here at 16 MiB,
# which the test fills
my $out = `AIRLOCK_REDIS_MAXMEMORY=16mb AIRLOCK_BUILD=$link \\
           $top/conf/demo/run.sh --keep 2>&1`;
my $rc = $? >> 8;
my $state = -s '/run/airlock-demo.state'
    ? `cat /run/airlock-demo.state` : '';
chomp $state;
is($rc, 0, 'the demo runs, kept up')
    or diag(join "\n", grep { defined } (split /\n/, $out)[-20 .. -1]);

SKIP: {
    skip 'no demo state', 21 unless $state ne '' && -d $state;
    my $conf = do { local (@ARGV, $/) = "$state/nginx.conf"; <> } // '';
    like($conf,
         qr{^load_module \Q$link\E/modules/ngx_http_airlock_module\.so;}m,
         'nginx loads the module of the build it was given');
    my $sock = "$state/redis/redis.sock";
    ok(-S $sock, 'its Redis socket') or last;

    # as Redis user airlock-agent, with the password only it may read
    # ($state/redis-agent.pass, 0400): the default user is off
    my $as = sub {
        my ($user, $cmd) = @_;
        $cmd //= 'PING';
        my $auth = "REDISCLI_AUTH=\$(cat $state/redis-agent.pass)";
        my $g = $user eq 'airlock-agent' ? '-G redis' : '';
        my $r = `runuser -u $user $g -- sh -c '$auth exec redis-cli \\
            --user airlock-agent -s $sock $cmd' 2>&1`;
        chomp $r;
        return $r;
    };
    like($as->('airlock-agent', 'XLEN airlock:jobs'), qr/^\d+$/,
         'the agent reaches Redis');
    like(`runuser -u airlock-agent -G redis -- redis-cli -s $sock PING \
          2>&1`,
         qr/NOAUTH/, 'not as the default user: it is off');
    isnt($as->('nobody'), 'PONG', 'another local user does not')
        or diag("stat: " . `stat -c '%a %U %G' $state/redis $sock`);

    # and, as on the appliance, none of its admin commands
    # (conf/redis-acl.conf): the demo above ran its agent and worker
    # under that, and they were refused nothing
    for my $c ('CONFIG SET appendonly no', 'FLUSHALL',
               'REPLICAOF 127.0.0.1 9', 'SHUTDOWN NOSAVE') {
        like($as->('airlock-agent', $c), qr/^NOPERM/,
             "the agent is refused $c");
    }
    # the agent's socket, as on the appliance (--listen-group, 0660):
    # root's and the group nginx's workers run as, www-data's, which
    # publish it at /api/; no other local user's (it was 0666: anyone
    # asked with the agent's tools and LLM tokens)
    my $asock = "$state/agent/agent.sock";
    my @st = stat $asock;
    ok(@st && !($st[2] & 0007), 'the agent\'s socket: nothing for others')
        or diag(sprintf('mode %o', $st[2] // 0));
    is(@st ? (getgrgid($st[5]))[0] : '', 'www-data',
       'the agent\'s socket: group www-data (nginx\'s workers\')');
    my $probe = sub {
        my ($user) = @_;
        my $c = `runuser -u $user -- curl -s -o /dev/null -w '%{http_code}' \\
                 --unix-socket $asock http://agent/v1/sessions/x 2>&1`;
        return $c;
    };
    is($probe->('nobody'), '000', 'another local user does not connect');
    like($probe->('www-data'), qr/^[1-5]\d\d$/,
         'www-data (nginx\'s workers) does');

    # its memory bounded, noeviction: a session too many is refused as
    # "Redis is full", nothing evicted (it had no bound: one user's
    # sessions could grow Redis until the kernel killed it or nginx)
    my $mem = do { local (@ARGV, $/) = "$state/redis/memory.conf"; <> }
        // '';
    like($mem, qr/^maxmemory 16777216$/m, 'Redis: maxmemory as asked');
    like($mem, qr/^maxmemory-policy noeviction$/m, 'Redis: noeviction');
    # as the agent (its password; root reaches the socket), argument by
    # argument: no shell to quote the script for
    my $agent = sub {
        my $pass = do { local (@ARGV, $/) = "$state/redis-agent.pass"; <> }
            // '';
        chomp $pass;
        local $ENV{REDISCLI_AUTH} = $pass;
        open(my $fh, '-|', 'redis-cli', '--user', 'airlock-agent',
             '-s', $sock, @_) or return '';
        my $r = do { local $/; <$fh> } // '';
        close $fh;
        chomp $r;
        return $r;
    };
    my ($filled, $full) = (0, '');
    for my $i (1 .. 40) {
        my $r = $agent->('EVAL', "return redis.call('SET', KEYS[1], "
                         . "string.rep('x', 1048576))", 1,
                         "airlock:session:fill-$i");
        if ($r ne 'OK') {
            $full = $r;
            last;
        }
        $filled++;
    }
    like($full, qr/OOM/, 'Redis refuses a write once full')
        or diag("$filled MiB stored");
    ok($filled >= 4 && $filled <= 16, 'after at most its 16 MiB')
        or diag("$filled MiB stored");
    is(length($agent->('GET', 'airlock:session:fill-1')), 1048576,
       'and evicted nothing');
    $agent->('DEL', "airlock:session:fill-$_") for 1 .. $filled;

    for my $log ('agent.log', 'worker.log', 'redis.log') {
        my $text = do { local (@ARGV, $/) = "$state/$log"; <> } // '';
        unlike($text, qr/NOPERM|no permissions/, "$log: nothing refused");
    }
}

system("$top/conf/demo/run.sh --down >/dev/null 2>&1");
ok(!-e '/run/airlock-demo.state', 'make down stops it');

done_testing();
