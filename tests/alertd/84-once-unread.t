#!/usr/bin/perl
# alertd --once reads the journal to its end and exits.  A read that
# failed (an I/O error) left lines of the journal unread, or had them
# said lost (a copytruncate's copy whose lines cannot be read: --once
# does not wait --rotate-grace for it), and --once still exited 0, as
# if it had read everything: only its log told.  Its exit status now
# says so: 1, as for alerts left queued, with a last line that says
# whether the lines are lost or left for the next run, which goes on
# where this one stopped.
#
#   1. the journal's own lines cannot be read: left unread, exit 1; the
#      next run, the failure gone, reads them and exits 0;
#   2. copytruncate while alertd was stopped, the copy's lines cannot be
#      read: left for the next run (86-once-beside-kept.t), exit 1; the
#      journal is read all the same;
#   3. copytruncate while alertd was stopped and no copy kept: the lines
#      after the position are said lost, exit 1;
#   4. an alert read cannot be queued (the outbox cannot be synced):
#      its line is left unread, exit 1;
#   5. nothing lost or left: exit 0, no such line.
#
# The failure is made for real: pread() fails with EIO through the
# fault injector (lib/fault.c, LD_PRELOAD) while the test holds it on,
# for reads of 8192 bytes or more only: alertd's reads of a file's tail
# (at most 4096 bytes) tell the file as the one, its reads of the lines
# fail.  Nothing is timed: each run of --once is waited for.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $base = (split m{/}, $j)[-1];
my $env_j = $t->fault('pread', $base, 5, 8192);
my $env_c = $t->fault('pread', "$base.1", 5, 8192);
my $env_q = $t->fault('fsync', '.json', 5);

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_FAKE' . 'F' x 28));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my $lost = qr/\bwarning: lines of the journal were lost in this run /
           . qr/\(said above\); exit status 1/;
$lost = qr/$lost/;
my $left = qr/\bwarning: lines of the journal are left unread \(said /
           . qr/above\); the next run goes on from where this one /
           . qr/stopped; exit status 1/;
$left = qr/$left/;

my $a = $t->alert(reason => 'ra');
my ($st, $log) = $t->once_run({});
is($st, 0, 'a first run reads A and exits 0') or diag($log);
ok($t->delivered($r, $a), 'A is delivered');
my $at = -s $j;


# 1. the journal's lines cannot be read: left unread

my $b = $t->alert(reason => 'rb');
$t->fault_on;
($st, $log) = $t->once_run($env_j);
is($st, 1, 'the journal\'s lines cannot be read: --once exits 1')
    or diag($log);
like($log, qr/\berror: reading journal \Q$j\E at offset $at: Input/,
     'the failed read is said');
like($log, $left, 'and the last line says lines are left for the next run')
    or diag($log);
unlike($log, $lost, 'none lost');
ok(!$t->delivered($r, $b), 'B is not read');
is($t->saved_state->{offset}, $at, 'the saved position is before B');
ok($t->fault_made > 0, 'the failure was made');
$t->fault_off;

($st, $log) = $t->once_run({});
is($st, 0, 'the next run, the failure gone, exits 0') or diag($log);
ok($t->delivered($r, $b), 'B is delivered');
unlike($log, qr/$lost|$left/, 'nothing said lost or left');


# 2. copytruncate while stopped, the copy's lines cannot be read

$at = -s $j;
my $c = $t->alert(reason => 'rc');
system('cp', $j, "$j.1") == 0 or die "cp: $?";
truncate $j, 0 or die "truncate: $!";
my $d = $t->alert(reason => 'rd');
$t->fault_on;
($st, $log) = $t->once_run($env_c);
is($st, 1, 'the copy\'s lines cannot be read: --once exits 1')
    or diag($log);
like($log, qr/\bwarning: the rotated journal \(inode \d+\) could not be (?#
              )read at offset $at: it stays in the saved position/,
     'the copy is kept for the next run') or diag($log);
like($log, $left, 'and the last line says lines are left for the next run')
    or diag($log);
unlike($log, $lost, 'none lost');
ok($t->delivered($r, $d), 'D, in the journal, is delivered');
ok(!$t->delivered($r, $c), 'C, in the copy, is not');
$t->fault_off;

($st, $log) = $t->once_run({});
is($st, 0, 'the next run, the failure gone, exits 0') or diag($log);
ok($t->delivered($r, $c), 'C is delivered');
unlink "$j.1" or die "unlink: $!";


# 3. copytruncate while stopped, no copy kept

$at = -s $j;
my $e = $t->alert(reason => 're');
truncate $j, 0 or die "truncate: $!";
my $f = $t->alert(reason => 'rf');
($st, $log) = $t->once_run({});
is($st, 1, 'truncated, no copy: --once exits 1') or diag($log);
like($log, qr/\bwarning: journal \Q$j\E was truncated or rewritten while (?#
              )alertd was stopped .* after offset $at were not read/,
     'the lines after the position are said lost') or diag($log);
like($log, $lost, 'and the last line says so');
ok($t->delivered($r, $f), 'F is delivered');


# 4. the alert read cannot be queued (the outbox's fsync fails): the
# line is left unread

my $h = $t->alert(reason => 'rh');
$t->fault_on;
($st, $log) = $t->once_run($env_q);
is($st, 1, 'an alert that cannot be queued: --once exits 1') or diag($log);
like($log, $left, 'the last line says lines are left for the next run')
    or diag($log);
ok(!$t->delivered($r, $h), 'H is not delivered');
$t->fault_off;


# 5. nothing lost or left

my $g = $t->alert(reason => 'rg');
($st, $log) = $t->once_run({});
is($st, 0, 'every line read: --once exits 0') or diag($log);
ok($t->delivered($r, $h, $g), 'H, left by the run before, and G are '
   . 'delivered');
unlike($log, qr/$lost|$left/, 'nothing said lost or left');

my %sent;
$sent{$_->{id}}++ for $t->accepted($r);
is(join(',', map { $sent{$_} // 0 } $a, $b, $c, $d, $f, $h, $g),
   '1,1,1,1,1,1,1', 'A, B, C, D, F, H and G were each sent once');

$t->done;
