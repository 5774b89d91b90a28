#!/usr/bin/perl
# The benchmarks' CPU placement (Airlock::Test): allowed_cpus() lists the
# CPUs this process may use, as the kernel counts them; pin_cpus() puts
# every thread of a process on the CPUs given, and says when it cannot
# (taskset -a alone reports success for a process that is gone).

use strict;
use warnings;
use FindBin;
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);
use Airlock::Test;

need_cmd(qw(taskset nproc));

my @cpus = allowed_cpus();
ok(@cpus >= 1, 'allowed_cpus() lists at least one CPU: ' . "@cpus");
is(scalar(@cpus), `nproc` + 0, 'as many as nproc counts');
is_deeply([@cpus], [sort { $a <=> $b } keys %{{ map { $_ => 1 } @cpus }}],
          'each once, lowest first');

# a child pinned to the last allowed CPU, read back from /proc
my $pid = fork // die "fork: $!";
if ($pid == 0) {
    sleep 30;
    POSIX::_exit(0);
}

ok(pin_cpus($pid, $cpus[-1]), "pin_cpus() onto CPU $cpus[-1]");
open(my $fh, '<', "/proc/$pid/status") or die "/proc/$pid/status: $!";
my ($list) = join('', <$fh>) =~ /^Cpus_allowed_list:\s*(\S+)/m;
close $fh;
is($list, $cpus[-1], 'the process may run there and nowhere else');

ok(pin_cpus($pid, join(',', @cpus)), 'and back onto all of them ('
   . join(',', @cpus) . ')');

kill 'KILL', $pid;
waitpid($pid, 0);

ok(!pin_cpus($pid, $cpus[0]), 'pin_cpus() of a process gone: false');

done_testing();
