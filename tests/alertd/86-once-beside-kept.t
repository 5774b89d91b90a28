#!/usr/bin/perl
# alertd --once does not wait --rotate-grace for a file beside the
# journal.  A copytruncate's copy, or a rotated file, whose lines failed
# to read (an I/O error) was given up at once: its lines were said lost
# "(its grace is over)", though --once had waited for nothing, and the
# next run never read them.  Now the file stays in the saved position
# (as the rotated file, "rotated" in the state), --once exits 1 saying
# its lines are left, not lost, and the next run, or the daemon, reads
# them from there; the journal is read meanwhile.  And an alert that
# cannot be queued no longer says "trying again in 1000 ms": --once
# exits, and says that the next run tries it again.
#
#   1. copytruncate while alertd was stopped, the copy's lines cannot be
#      read: kept; a second run, still failing, keeps it again and reads
#      the journal on; a third, the failure gone, reads the copy;
#   2. rotated while alertd was stopped, a late line in the rotated
#      file that cannot be read: kept; the daemon reads it;
#   3. an alert that cannot be queued: said as left for the next run.
#
# The failure is made for real: pread() fails with EIO through the
# fault injector (lib/fault.c, LD_PRELOAD) while the test holds it on,
# for reads of 8192 bytes or more of JOURNAL.1 only: alertd's reads of a
# file's tail (at most 4096 bytes) tell the file as the one, its reads
# of the lines fail.  Nothing is timed: each run of --once is waited
# for, and the daemon's delivery.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $r = $t->beside_setup('pread', 5, 8192);
my $env_q = $t->fault('fsync', '.json', 5);

my $lost = qr/\bwarning: lines of the journal were lost in this run /;
my $left = qr/\bwarning: lines of the journal are left unread \(said /
           . qr/above\); the next run goes on from where this one /
           . qr/stopped; exit status 1/;
$left = qr/$left/;
my $said_lost = qr/were not read|grace is over|no longer read/;
my $kept = qr/\bwarning: the rotated journal \(inode \d+\) could not be /
           . qr/read at offset (\d+): it stays in the saved position and /
           . qr/the next run reads it from there; the journal is read /
           . qr/meanwhile/;
$kept = qr/$kept/;

my $a = $t->beside_alert('ra');
my ($st, $log) = $t->once_run;
is($st, 0, 'a first run reads A and exits 0') or diag($log);
ok($t->delivered($r, $a), 'A is delivered');


# 1. copytruncate while stopped, the copy's lines cannot be read

my $at = -s $j;
my $c = $t->beside_alert('rc');
system('cp', $j, "$j.1") == 0 or die "cp: $?";
truncate $j, 0 or die "truncate: $!";
my $d = $t->beside_alert('rd');
my $ino = (stat "$j.1")[1];

$t->fault_on;
($st, $log) = $t->once_run;
is($st, 1, 'the copy\'s lines cannot be read: --once exits 1')
    or diag($log);
like($log, qr/\berror: reading the copy a copytruncate kept of the (?#
              )journal \(inode $ino, \Q$j.1\E\) at offset $at: Input/,
     'the failed read is said, with the copy') or diag($log);
ok($log =~ $kept && $1 == $at,
   'the copy is said kept in the saved position, at the offset')
    or diag($log);
unlike($log, $said_lost, 'its lines are not said lost');
unlike($log, $lost, 'nor does the last line say lines were lost');
like($log, $left, 'the last line says lines are left for the next run');
ok($t->delivered($r, $d), 'D, in the journal, is delivered');
ok(!$t->delivered($r, $c), 'C, in the copy, is not');
my $s = $t->saved_state;
is(($s->{rotated} // {})->{ino}, $ino, 'the copy is in the saved position');
is(($s->{rotated} // {})->{offset}, $at, 'at the offset it failed at');

my $e = $t->beside_alert('re');
($st, $log) = $t->once_run;
is($st, 1, 'a second run, the copy still failing, exits 1') or diag($log);
ok($log =~ $kept && $1 == $at, 'and keeps the copy again') or diag($log);
unlike($log, $said_lost, 'its lines are not said lost');
ok($t->delivered($r, $e), 'E, in the journal, is delivered meanwhile');
ok(!$t->delivered($r, $c), 'C is not');
is(($t->saved_state->{rotated} // {})->{offset}, $at,
   'the copy stays in the saved position');
ok($t->fault_made > 0, 'the failure was made');
$t->fault_off;

($st, $log) = $t->once_run;
is($st, 0, 'the failure gone, the next run exits 0') or diag($log);
ok($t->delivered($r, $c), 'C, in the copy, is delivered');
like($log, qr/\binfo: reading the rotated journal \Q$j.1\E from offset (?#
              )$at for late lines again/, 'from the saved position')
    or diag($log);
unlike($log, qr/$lost|$left|$said_lost/, 'nothing said lost or left');
ok(!$t->saved_state->{rotated}, 'the copy leaves the saved position');
unlink "$j.1" or die "unlink: $!";


# 2. rotated while stopped, a late line in the rotated file: the daemon
# reads it

rename $j, "$j.1" or die "rename: $!";
$at = -s "$j.1";
my $f = $t->beside_alert('rf', "$j.1");
my $g = $t->beside_alert('rg');

$t->fault_on;
($st, $log) = $t->once_run;
is($st, 1, 'the rotated file\'s lines cannot be read: --once exits 1')
    or diag($log);
ok($log =~ $kept && $1 == $at, 'the rotated file is said kept')
    or diag($log);
unlike($log, $said_lost, 'its lines are not said lost');
like($log, $left, 'the last line says lines are left for the next run');
ok($t->delivered($r, $g), 'G, in the new journal, is delivered');
ok(!$t->delivered($r, $f), 'F, in the rotated file, is not');
is(($t->saved_state->{rotated} // {})->{offset}, $at,
   'the rotated file is in the saved position');
$t->fault_off;

$t->beside_alertd;
ok($t->wait_for(sub { $t->delivered($r, $f) }),
   'the daemon reads F from there') or diag($t->alertd_log);
ok($t->settle && $t->drained($r), 'alertd is done');
unlike($t->alertd_log, $said_lost, 'no line said lost');
is($t->stop($t->alertd_pid), 0, 'alertd stops');


# 3. an alert that cannot be queued (the outbox's fsync fails)

my $h = $t->beside_alert('rh');
$t->fault_on;
($st, $log) = $t->once_run($env_q);
is($st, 1, 'an alert that cannot be queued: --once exits 1') or diag($log);
like($log, qr/\berror: cannot queue alert \Q$h\E in the outbox: Input(?#
              )[^;]*; this run stops reading here, the next run tries it (?#
              )again/, 'the failure says the next run tries it again')
    or diag($log);
unlike($log, qr/trying again in \d+ ms/, 'not that it tries again in a '
       . 'while');
like($log, $left, 'the last line says lines are left for the next run');
$t->fault_off;

($st, $log) = $t->once_run({});
is($st, 0, 'the next run exits 0') or diag($log);
ok($t->delivered($r, $h), 'H is delivered');

$t->sent_once;

$t->done;
