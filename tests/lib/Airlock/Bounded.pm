package Airlock::Bounded;

# Runs a program that may block for ever (in an open of a FIFO, say),
# for a test that looks for exactly that:
#
#   use Airlock::Bounded qw(run_bounded);
#   my ($rc, $out) = run_bounded(60, sub { $ENV{PATH} = ...; },
#                                'chroot', $root, '/bin/sh', '/postrm');
#
# The program runs in a process group of its own, its standard output and
# error into one pipe that is read while it runs (so a talkative program
# is never held by a full pipe).  The optional code runs in the child
# before the exec.  Returns its exit status and what it wrote; the status
# is -1 when it was still running after the given seconds, and then it
# and its group were killed.  The bound is a give-up point, not a
# measure: a program that ends is never cut short by a slow machine in
# any way a test depends on.

use strict;
use warnings;

use Exporter qw(import);
use POSIX ();

our @EXPORT_OK = qw(run_bounded blocked);


sub run_bounded {
    my ($seconds, $setup, @cmd) = @_;
    my ($rc, $out, $pid) = (-1, '');

    pipe my $rd, my $wr or die "pipe: $!";
    $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $rd;
        setpgrp(0, 0);
        open STDOUT, '>&', $wr or POSIX::_exit(127);
        open STDERR, '>&', $wr or POSIX::_exit(127);
        $setup->() if $setup;
        { exec @cmd; }
        POSIX::_exit(127);
    }
    close $wr;

    my $open = 1;
    for (1 .. $seconds * 10) {
        if ($open) {
            my $in = '';
            vec($in, fileno($rd), 1) = 1;
            if (select($in, undef, undef, 0.1) > 0) {
                my $n = sysread($rd, my $buf, 65536);
                $open = 0 if !$n;
                $out .= $buf if $n;
            }
        } else {
            select(undef, undef, undef, 0.1);
        }
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            $rc = $? >> 8;
            last;
        }
    }
    if ($rc == -1) {
        kill 'KILL', -$pid;
        waitpid $pid, 0;
    }
    # what is left: the program is gone, so this read ends unless
    # something it started still holds the pipe
    while ($open) {
        my $n = sysread($rd, my $buf, 65536);
        last if !$n;
        $out .= $buf;
    }
    close $rd;
    return ($rc, $out);
}


# what a run_bounded status and output say, for a test's diagnostics
sub blocked {
    my ($rc, $out, $seconds) = @_;
    return $rc == -1 ? "still running after $seconds s" : $out;
}


1;
