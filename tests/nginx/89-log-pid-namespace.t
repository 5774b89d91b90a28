#!/usr/bin/perl

# ngx_http_airlock_module: nginx in a pid namespace of its own, with the
# /proc of another.  A shared log buffer's region is owned by a pid and
# the owner's start time, read from /proc; there, /proc/PID/stat is
# another process's, whose start time would later tell a live worker
# from "a process that got a dead worker's pid" wrongly.  A worker that
# finds its /proc is not its namespace's keeps no start time (0), and is
# known by its pid alone.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::Proxy;
use Airlock::Prereq qw(absent need_cmd);

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

need_cmd('unshare');
absent('a pid namespace needs root') unless $> == 0;
absent('nginx without --with-debug: the start time is in a debug line')
    unless $t->nginx_with_debug;

$p->echo_policy;

$t->write_file('nginx.conf',
               $t->expand($p->conf(http => <<'EOF'))
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log buffer=64k flush=1h;
EOF
               =~ s/^error_log (\S+) \S+;/error_log $1 debug;/mr);

plan tests => 3;

my $d = $t->testdir;

# unshare forks nginx as pid 1 of a new namespace; /proc stays the
# machine's
my $pid = $t->_spawn("$d/stderr.log", $t->_nginx_env,
                     'unshare', '--pid', '--kill-child', '--',
                     $t->{nginx}, '-p', "$d/", '-c', 'nginx.conf',
                     '-e', "$d/error.log");

my ($start, $log);
my $deadline = time + 10;
while (time < $deadline) {
    $log = $t->read_file('error.log') // '';
    last if ($start) = $log =~ /airlock: process (\d+ started at \d+)/;
    sleep 0.05;
}

like($start // '', qr/^\d+ started at \d+$/, 'a worker started')
    or diag $log;
my ($wpid, $ticks) = ($start // '') =~ /^(\d+) started at (\d+)$/;
cmp_ok($wpid // 0, '<', 10, 'its pid is its namespace\'s (a small one)');
is($ticks, 0, 'it keeps no start time: /proc is not its namespace\'s');

kill 'TERM', -$pid;
waitpid($pid, 0);
