#!/usr/bin/perl
# copytruncate while alertd runs: the copy (journal.log.1, which holds
# the lines alertd had not read yet) is found and taken (its bytes
# before alertd's offset read back), but reading the lines after them
# fails (an I/O error).  The copy was then closed at the next round, its
# lines said lost: one failed read and they were gone, where a file
# beside the journal that cannot be read yet is tried again for
# --rotate-grace (78-copy-read-fails.t).  It now is too: tried again at
# every wake-up and poll, the journal waiting (its lines are later),
# for --rotate-grace from the first failure; only then given up, its
# lines said lost.
#
#   1. the copy read once it can be, then the journal from its start;
#   2. a copy that never can be read: given up after --rotate-grace (1 s
#      here), its lines said lost, and the journal read.
#
# The failure is made for real: pread() on the copy fails with EIO
# through the fault injector (lib/fault.c, LD_PRELOAD) while the test
# holds it on, for reads of 8192 bytes or more only: alertd's reads of a
# file's tail (at most 4096 bytes) tell the copy as the one, its reads of
# the lines fail.  alertd is held (SIGSTOP) over the copy and the
# truncation, so that it finds the journal truncated and the copy there
# (09-truncate.t).  Nothing is timed: the test waits for the log's lines
# and for rounds of alertd's loop (SIGUSR1, SIGUSR2).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $r = $t->beside_setup('pread', 5, 8192);

my $waits = qr/\bwarning: the copy a copytruncate kept of the journal /
            . qr/\(inode \d+\) could not be read at offset (\d+): tried /
            . qr/again at every poll for up to (\d+) ms \(--rotate-grace\), /
            . qr/the journal waits for it/;
my $lost = qr/\bwarning: the rotated journal \(inode \d+\) could not be /
           . qr/read at offset (\d+) and is no longer read \(([^)]*)\): /
           . qr/lines written to it after the offset were not read/;
$lost = qr/$lost/;
$waits = qr/$waits/;


# 1. the copy's lines cannot be read for a while

$t->beside_alertd;
my $a = $t->beside_alert('ra');
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'A is delivered');
ok($t->settle, 'alertd has read everything so far');
my $at = -s $j;

my ($b, $c) = $t->copytruncate('rb', 'rc');
ok($t->log_has($waits), 'the failed read of the copy is said, and that '
   . 'it is tried again')
    or diag($t->alertd_log);
my ($off, $grace) = $t->alertd_log =~ $waits;
is($off, $at, '... at the offset alertd was at');
is($grace, 3600000, '... for --rotate-grace');
my $made = $t->fault_made;
ok($t->settle, 'a round after it');
ok($t->wait_for(sub { $t->fault_made > $made }),
   'the copy is read again')
    or diag($t->alertd_log);
ok($t->settle, 'and a round after that');
ok(!$t->delivered($r, $b), 'B, in the copy, is not read meanwhile');
ok(!$t->delivered($r, $c), "nor C, in the journal: it waits")
    or diag($t->alertd_log);
unlike($t->alertd_log, $lost, 'no line is said lost');

$t->fault_off;
ok($t->wait_for(sub { $t->delivered($r, $b, $c) }),
   'once it can be read, B and then C are delivered')
    or diag($t->alertd_log);
ok($t->sent_before($b, $c), 'B before C');
unlike($t->alertd_log, $lost, 'no line is said lost');
ok($t->settle && $t->drained($r), 'alertd is done');
is($t->times_sent($a, $b, $c), '1,1,1', 'A, B and C were each sent once');


# 2. a copy whose lines never can be read: given up after --rotate-grace

is($t->stop($t->alertd_pid), 0, 'alertd stops');
unlink "$j.1" or die "unlink: $!";
$t->beside_alertd('1s');
ok($t->settle, 'restarted with a grace of 1 s');
$at = -s $j;
my ($x, $g);
ok($t->log_more($waits, sub { ($x, $g) = $t->copytruncate('rx', 'rg') }),
   'the failed read is said')
    or diag($t->alertd_log);
$t->forget($x);
ok($t->wait_for(sub { $t->log_has($lost) }),
   'after the grace it is given up, its lines said lost')
    or diag($t->alertd_log);
my ($loff, $why) = $t->alertd_log =~ $lost;
is($loff, $at, '... after the offset alertd was at');
is($why, 'it could not be read for 1000 ms, --rotate-grace', '... and why');
ok($t->wait_for(sub { $t->delivered($r, $g) }),
   'G, in the journal, is delivered')
    or diag($t->alertd_log);
$t->fault_off;
ok($t->settle && $t->drained($r), 'alertd is done');
ok(!$t->delivered($r, $x), 'X, in the copy that cannot be read, is not');
$t->sent_once;

$t->done;
