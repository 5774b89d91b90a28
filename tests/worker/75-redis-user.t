#!/usr/bin/perl

# airlock-worker as a Redis user of its own.  The worker and the agent
# were both Redis's default user, with every key and every command but
# the admin ones; now the default user is off and the worker is user
# airlock-worker (redis_user), its password in redis_password_file, with
# only what it uses (conf/redis-acl.conf).  Here: it runs a job end to
# end as that user, and again after Redis restarts (the file is read
# once at start, while the worker is root, and kept: the process that
# talks to Redis runs as the worker's user); a wrong password is logged
# as Redis's refusal and retried, so the worker connects and runs the
# job once Redis takes the password, without a restart; -t refuses a
# user without a file, a group-readable or malformed file, and says a
# missing one is missing (the first boot writes it; the worker itself
# does not start without it).  And
# redis_host takes an IPv6 address in brackets, "[::1]", as the agent's
# --redis does: hiredis looked "[::1]" up as a host name, and the worker
# never connected.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
my $d = $t->testdir;
$w->start_proxy;
$w->start_redis;

plan tests => 25;

sub wait_for {
    my ($cond) = @_;
    for (1 .. 800) {
        return 1 if $cond->();
        sleep 0.025;
    }
    return 0;
}

my $pass = $t->redis_pass('airlock-worker');
my $secret = do { open my $fh, '<', $pass or die; local $/; <$fh> };
chomp $secret;

sub set_pass {
    my ($file, $p, $mode) = @_;
    chmod 0600, $file;
    open my $fh, '>', $file or die "$file: $!";
    print $fh $p;
    close $fh;
    chmod $mode // 0400, $file;
}

# ---- a job end to end, as airlock-worker -----------------------------------
my $pid = $w->start_worker;
like($w->worker_log($pid), qr/connected to redis/, 'the worker connects');
my $r = $w->run_job(job_id => 'user-1', script => "print(6 * 7)");
is($r && $r->{status}, 'ok', 'a job runs as Redis user airlock-worker');
is($r && $r->{stdout}, "42\n", 'with its output');
is($w->pending_after, 0, 'acknowledged');
my @who = grep { / user=airlock-worker / }
          split /\n/, $w->redis('CLIENT', 'LIST');
ok(@who >= 1, 'its connection is user airlock-worker')
    or diag($w->redis('CLIENT', 'LIST'));
$w->kill_worker('TERM', $pid);

# ---- Redis restarted: the worker, no longer root, connects again -------
# (its password file is root's alone: read once at start, kept)
$pid = $w->start_worker;
$w->stop_redis;
$w->start_redis;
$r = $w->run_job(job_id => 'user-again', script => "print('again')");
is($r && $r->{stdout}, "again\n",
   'after a Redis restart: connected again, the job runs');
$w->kill_worker('TERM', $pid);

# ---- a wrong password: logged, retried, taken once Redis takes it ------
set_pass($pass, "FAKE-wrong-worker-pass\n");
$pid = $w->start_worker;
ok(wait_for(sub { $w->worker_log($pid)
                  =~ /redis AUTH as airlock-worker refused: WRONGPASS/ }),
   'a wrong password: Redis\'s refusal logged') or diag($w->worker_log($pid));
like($w->worker_log($pid), qr/check its password file against Redis's ACL/,
     'saying what to check');
unlike($w->worker_log($pid), qr/FAKE-wrong/, 'not the password');
$w->add_job(job_id => 'user-2', script => "print('late')");
ok(wait_for(sub { my @n = $w->worker_log($pid) =~ /WRONGPASS/g; @n >= 2 }),
   'it tries again');
ok(kill(0, $pid), 'and keeps running');
$w->redis('ACL', 'SETUSER', 'airlock-worker', '>FAKE-wrong-worker-pass');
$r = $w->wait_result('user-2', 60);
is($r && $r->{stdout}, "late\n",
   'Redis given that password: the worker connects, runs the job');
$w->kill_worker('TERM', $pid);
$w->redis('ACL', 'SETUSER', 'airlock-worker', '<FAKE-wrong-worker-pass');
set_pass($pass, "$secret\n");

# ---- redis_host [::1] ------------------------------------------------------
$w->redis('CONFIG', 'SET', 'bind', '127.0.0.1 ::1');
$pid = $w->start_worker(redis_host => '[::1]');
like($w->worker_log($pid), qr/connected to redis/,
     'redis_host [::1]: connected') or diag($w->worker_log($pid));
$r = $w->run_job(job_id => 'user-v6', script => "print('v6')");
is($r && $r->{stdout}, "v6\n", 'and runs a job');
$w->kill_worker('TERM', $pid);

# ---- -t: what is refused at start -------------------------------------------
sub check {
    my (%o) = @_;
    my $conf = $w->write_conf(name => 'check.conf', %o);
    my $out = qx{$w->{worker} -c $conf -t 2>&1};
    return ($? >> 8, $out);
}

my ($rc, $out) = check();
is($rc, 0, '-t: the test\'s configuration') or diag($out);
set_pass("$d/group.pass", "$secret\n", 0640);
set_pass("$d/space.pass", "FAKE pass\n");
set_pass("$d/long.pass", ('x' x 257) . "\n");
my @bad = (
    [ { redis_password_file => undef },
      qr/redis_user and redis_password_file go together/, 'a user alone' ],
    [ { redis_password_file => "$d/group.pass" },
      qr/group or others may read.*chmod 0400/, 'a group-readable file' ],
    [ { redis_password_file => "$d/space.pass" },
      qr/one line of 1 to 256 bytes, no control/, 'a space in it' ],
    [ { redis_password_file => "$d/long.pass" },
      qr/one line of 1 to 256 bytes/, 'a password over 256 bytes' ],
    [ { redis_host => '[::1' },
      qr/redis_host "\[::1": an IPv6 address in brackets/, '[::1' ],
    [ { redis_host => '[::1]:6379' },
      qr/an IPv6 address in brackets is \[::1\], the port apart/,
      '[::1]:6379' ],
    [ { redis_host => '[127.0.0.1]' },
      qr/redis_host "\[127\.0\.0\.1\]": not an IPv6 address/,
      '[127.0.0.1]' ],
);
for my $b (@bad) {
    ($rc, $out) = check(%{$b->[0]});
    ok($rc != 0 && $out =~ $b->[1], "-t: $b->[2]: refused, said")
        or diag("$rc: $out");
}
($rc, $out) = check(redis_host => '::1');
is($rc, 0, '-t: a bare IPv6 address (the port is apart)') or diag($out);

# a missing file: an image root before its first boot, which writes it;
# -t says so and passes, the worker does not start
($rc, $out) = check(redis_password_file => "$d/none.pass");
ok($rc == 0 && $out =~ /warn: .*none\.pass: No such file/,
   '-t: a missing file: said, passes (the first boot writes it)')
    or diag("$rc: $out");
my $conf = $w->write_conf(name => 'none.conf',
                          redis_password_file => "$d/none.pass");
$out = qx{$w->{worker} -c $conf 2>&1};
ok($? >> 8 == 1 && $out =~ /emerg: .*none\.pass: No such file/,
   'and the worker refuses to start') or diag($out);
