#!/usr/bin/perl

# ngx_http_airlock_llm_module: a shared log buffer's region whose owner
# was killed, and whose pid another process got since, is still written.
# An old worker (kept alive after a reload by a call in flight) holds
# lines in its region and is killed; no worker replaces an old one, so
# the new worker finds the region when it next writes its own lines.  By
# then a process that is not nginx has the old worker's pid (made so with
# /proc/sys/kernel/ns_last_pid): the owner must be told by its start time
# as well as its pid, or the lines wait as long as that process lives.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::LLM;
use Airlock::Prereq qw(absent);

my $last = '/proc/sys/kernel/ns_last_pid';
absent("$last is not writable (this test runs as root)") unless -w $last;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# the same buffer= (the same zone) with two flush times
$l->setup(log => ' buffer=64k flush=1h');
$t->run;

plan tests => 8;

my @ids;

# the calls' request ids, and their usage lines
sub calls { $l->chats($_[0], \@ids) }
sub lines { $l->usage_lines(@_) }

my ($old) = map { $_->[0] } $t->_workers;
is(calls(5), 5, '5 calls; their lines wait (flush=1h)');

# a call in flight keeps the old worker alive after the reload
my $s = $l->held_chat({ delay_first_ms => 9000 });

$t->write_file_expand('nginx.conf', $l->conf(log => ' buffer=64k flush=1s'));
$t->reload;

# the old worker is killed; another process gets its pid
kill 'KILL', $old;

my $other;
my $deadline = time + 10;
while (time < $deadline) {
    open(my $fh, '>', $last) or die "$last: $!";
    print $fh $old - 1;
    close $fh;

    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        exec('sleep', '60') or POSIX::_exit(1);
    }
    if ($pid == $old) {
        $other = $pid;
        last;
    }
    kill 'KILL', $pid;
    waitpid($pid, 0);
    sleep 0.02;
}
# Another process of the machine may have taken the pid first: the case
# is the same while it lives.  If it took the pid and let it go, there
# is nothing to test this time.
my $taken = $other || kill(0, $old);

SKIP: {
skip "pid $old was taken by another process and is free again", 6
    unless $taken;

ok($taken, "a process that is not nginx has the old worker's pid");

# the new worker's lines are written a second after its call, and it then
# looks at the other regions
is(calls(1), 1, 'a call to the new worker');

$l->check_lines('the killed worker\'s lines too', \@ids,
               lines(scalar @ids, 10));
like($t->read_file('error.log') // '',
     qr/writing \d+ bytes of lines to "[^"]*usage\.log" that process $old /,
     'the error log says whose they were');
}

# the start time a worker keeps is the kernel's (field 22 of
# /proc/PID/stat, after the command's name); it is in a debug line
SKIP: {
skip 'no debug lines in error.log', 1 unless $t->has_debug_log;

my ($new) = map { $_->[0] } $t->_workers;
my $stat = Airlock::Test::_slurp("/proc/$new/stat") // '';
my ($start) = $stat =~ /^.*\)((?: \S+){20})/s;
$start = (split ' ', $start // '')[-1] // -1;
like($t->read_file('error.log') // '',
     qr/airlock: process $new started at @{[ $start % 2**32 ]}$/m,
     'the worker\'s start time, as the kernel gives it');
}

if ($other) {
    kill 'KILL', $other;
    waitpid($other, 0);
}
close $s;
