#!/usr/bin/perl

# What the fetch process holds: it reads the answers of the fetches
# (written by upstreams the agent's model chose), so it keeps nothing it
# does not need.  The worker keeps the supplementary groups it was
# started with (the unit's SupplementaryGroups=redis, for Redis's
# socket); the fetch, which only talks to the proxy, had them too, as the
# worker's child.  It now comes from a process split off as root that
# dropped every supplementary group: the worker's user and group only,
# no capability, no new privileges, stdio and its pipe only.  The worker
# is started here with group redis (or 4242 where there is none) and the
# fetch caught while the upstream holds its input.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');

Airlock::Prereq::absent('setpriv not installed') unless -x '/usr/bin/setpriv';

my $dir = $t->testdir;

# /nested/1 says it is held (a file) and answers once the test lets it
$t->write_file('held.pl', <<'PL');
use strict;
use IO::Socket::INET;
use Time::HiRes qw(sleep);
$SIG{PIPE} = 'IGNORE';
my ($port, $dir) = @ARGV;
my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
    LocalPort => $port, Listen => 16, ReuseAddr => 1) or die "$!";
while (my $c = $s->accept) {
    my $req = '';
    while ($req !~ /\r\n\r\n/) {
        my $n = sysread($c, $req, 4096, length $req) or last;
    }
    if ($req !~ m{^GET /nested/1 }) {
        close $c;
        next;
    }
    open(my $f, '>', "$dir/held") or die "$dir/held: $!";
    close $f;
    sleep 0.02 until -e "$dir/release";
    my $b = '{"held":true}';
    print {$c} "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               . "Content-Length: " . length($b) . "\r\n"
               . "Connection: close\r\n\r\n" . $b;
    close $c;
}
PL
$w->start_proxy;
$w->start_redis;
$t->run_daemon($^X, "$dir/held.pl", $t->port(8082), $dir);
$t->wait_for_port(8082) or die 'the held upstream did not start';

plan tests => 27;

my $uid = getpwnam('airlock-worker');
my $gid = (getpwnam('airlock-worker'))[3];
my $extra = getgrnam('redis') // 4242;

# whether process $p's memory holds $needle (read as root from /proc)
sub memory_has {
    my ($p, $needle) = @_;
    no warnings 'portable';             # 64-bit addresses
    open(my $maps, '<', "/proc/$p/maps") or return undef;
    open(my $mem, '<:raw', "/proc/$p/mem") or return undef;
    my $seen = 0;
    while (<$maps>) {
        my ($lo, $hi, $perm, $name) =
            /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/ or next;
        next unless $perm =~ /^r/ && $name !~ /^\[(vvar|vsyscall)/;
        my $len = hex($hi) - hex($lo);
        next if $len > 512 * 1024 * 1024;
        sysseek($mem, hex($lo), 0) or next;
        my $buf = '';
        my $n = sysread($mem, $buf, $len) // next;
        $seen += $n;
        return 1 if index($buf, $needle) >= 0;
    }
    return $seen ? 0 : undef;
}

sub status_of {
    my ($pid) = @_;
    my %s;
    for (split /\n/, Airlock::Worker::_slurp("/proc/$pid/status") // '') {
        $s{$1} = $2 if /^(\w+):\s*(.*)$/;
    }
    return \%s;
}

my $pid = $w->start_worker(wrap => [ '/usr/bin/setpriv', "--groups=$extra",
                                     '--' ]);

# the worker: the group it was started with stays (Redis's socket)
my $wst = status_of($pid);
ok(grep({ $_ == $extra } split / /, $wst->{Groups} // ''),
   "the worker keeps group $extra ($wst->{Groups})");

$w->add_job(job_id => 'creds',
    script => "import json\n"
              . "print(json.load(open('/app/data/data.json'))['n1']"
              . "['body']['held'])\n",
    blueprint => { inputs => [ { name => 'n1', route => 'nested',
                                 params => { n => '1' } } ] });

my $held = 0;
for (1 .. 2400) {
    $held = 1, last if -e "$dir/held";
    sleep 0.025;
}
ok($held, 'the fetch process asks for its input');

my ($child) = grep {
    my $st = status_of($_);
    ($st->{PPid} // 0) == $pid && ($st->{Name} // '') eq 'aw-fetch'
} map { m{/proc/(\d+)} ? $1 : () } glob('/proc/[0-9]*');
ok(defined $child, "the fetch process is the worker's child")
    or diag(join "\n", map { my $s = status_of($_); "$_ $s->{Name} $s->{PPid}" }
            grep { (status_of($_)->{PPid} // 0) == $pid }
            map { m{/proc/(\d+)} ? $1 : () } glob('/proc/[0-9]*'));

my $st = status_of($child // 0);
my @fds = sort { $a <=> $b }
          map { m{/(\d+)$} ? $1 : () } glob('/proc/' . ($child // 0) . '/fd/*');

is($st->{Groups} // 'none', '', 'it has no supplementary group')
    or diag("Groups: " . ($st->{Groups} // 'none'));
is(scalar(grep { $_ == $uid } split /\s+/, $st->{Uid} // ''), 4,
   "its uids are airlock-worker's ($st->{Uid})");
is(scalar(grep { $_ == $gid } split /\s+/, $st->{Gid} // ''), 4,
   "its gids are airlock-worker's ($st->{Gid})");
like($st->{CapEff} // '', qr/^0+$/, 'no effective capability');
like($st->{CapPrm} // '', qr/^0+$/, 'no permitted capability');
like($st->{CapInh} // '', qr/^0+$/, 'no inheritable capability');
like($st->{CapAmb} // '', qr/^0+$/, 'no ambient capability');
is($st->{NoNewPrivs}, 1, 'no new privileges');
# 0 to 2, its pipe to the worker (3) and the proxy's socket (curl's)
my @other = grep { $_ > 3 && readlink("/proc/$child/fd/$_") !~ /^socket:/ }
            @fds;
is("@other", '', 'no descriptor but stdio, its pipe and its connection')
    or diag(join ' ', map { "$_ -> " . (readlink("/proc/$child/fd/$_") // '?') }
                      @fds);

# the Redis password: the worker's alone
my $pass = Airlock::Worker::_slurp($t->redis_pass('airlock-worker')) // '';
$pass =~ s/\s+$//;
ok(length $pass >= 16, 'the worker has a Redis password');
ok(memory_has($pid, $pass), "which the worker's memory holds");
is(memory_has($child // 0, $pass), 0, "the fetch process's does not");

# the spawner it came from: the same, with no pipe and no connection
my ($sp) = grep {
    my $s = status_of($_);
    ($s->{PPid} // 0) == $pid && ($s->{Name} // '') eq 'aw-fetchd'
} map { m{/proc/(\d+)} ? $1 : () } glob('/proc/[0-9]*');
my $sst = status_of($sp // 0);
ok(defined $sp && ($sst->{Groups} // 'none') eq ''
   && scalar(grep { $_ == $uid } split /\s+/, $sst->{Uid}) == 4
   && scalar(grep { $_ == $gid } split /\s+/, $sst->{Gid}) == 4,
   'the fetch spawner: the worker\'s user and group, no other group')
    or diag explain $sst;
ok(defined $sp && $sst->{CapEff} =~ /^0+$/ && $sst->{CapPrm} =~ /^0+$/
   && $sst->{NoNewPrivs} == 1, 'no capability, no new privileges');
my @sfds = map { m{/(\d+)$} ? $1 : () } glob('/proc/' . ($sp // 0) . '/fd/*');
is(scalar(grep { $_ > 2 } @sfds), 1, 'one descriptor but stdio: its socket')
    or diag(join ' ', map { "$_ -> " . (readlink("/proc/$sp/fd/$_") // '?') }
                      @sfds);
is(memory_has($sp // 0, $pass), 0, 'and not the Redis password');

$t->write_file('release', '');
my $r = $w->wait_result('creds', 120);
is($r && $r->{status}, 'ok', 'the job runs with its input')
    or diag explain $r;

# the state letter of process $p (R, S, Z...), '' once it is gone
sub state_of {
    my ($p) = @_;
    my $stat = Airlock::Worker::_slurp("/proc/$p/stat") // return '';
    return $stat =~ /^\d+ \(.*\) (\S)/s ? $1 : '';
}

# waits (60 s at most) until &$cond holds; true when it does
sub wait_until {
    my ($cond) = @_;
    my $deadline = time + 60;
    until ($cond->()) {
        return 0 if time > $deadline;
        sleep 0.02;
    }
    return 1;
}

# a job added and the spawner killed while the worker (stopped) waits
# for an entry: it finds the spawner gone at the job's fetch, and exits
# 1 as with its launcher, the job left pending.  The worker is stopped
# once it is done with the first job (its line said) and blocked in its
# read of the next (Redis's CLIENT LIST says so); it goes on once the
# spawner is dead (a zombie its stopped parent has not reaped), not
# merely sent SIGKILL.
wait_until(sub {
    $w->worker_log($pid) =~ /job creds: ok in/
        && ($w->redis('CLIENT', 'LIST') // '')
           =~ /^(?=.*\bcmd=xreadgroup\b)(?=.*\bflags=\S*b).*$/m
});
kill 'STOP', $pid;
$w->add_job(job_id => 'lost', script => "print(1)\n",
    blueprint => { inputs => [ { name => 'n1', route => 'nested',
                                 params => { n => '1' } } ] });
kill 'KILL', $sp if $sp;
wait_until(sub { state_of($sp // 0) =~ /^[ZX]?$/ });
kill 'CONT', $pid;
my $ws;
wait_until(sub {
    return 0 unless waitpid($pid, POSIX::WNOHANG()) == $pid;
    $ws = $?;
    return 1;
});
ok($sp && defined $ws && ($ws >> 8) == 1,
   'the spawner killed: the worker exits 1')
    or diag('wait status ' . ($ws // 'none'));
$t->{daemons} = [ grep { $_ != $pid } @{$t->{daemons}} ];
like($w->worker_log($pid), qr/the fetch spawner is gone/, 'and says why');
like($w->worker_log($pid),
     qr/job lost \(entry [^)]+\): no result, left pending for its next/,
     'and that the job is left pending');
like($w->worker_log($pid), qr/stopping \(exit 1\): the launcher or the /,
     'it stops through its main loop');
my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
is(ref $p ? $p->[0] : -1, 1, 'the job is still pending');
ok(!defined $w->result('lost'), 'with no result');

unlike($w->all_worker_logs, qr/Sanitizer|runtime error/,
       'no sanitizer reports in the logs');
