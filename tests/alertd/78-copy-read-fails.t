#!/usr/bin/perl
# copytruncate while alertd runs, and the copy (journal.log.1, which
# holds the lines alertd had not read yet) cannot be read (an I/O
# error) when alertd finds the journal truncated.  That was taken as "no
# copy": alertd said the lines were not read and went on with the
# journal from its start, and the lines in the copy were never read.  An
# I/O error tells neither way: as at start (77-rotated-read-fails.t),
# the position is kept (and saved as it was), the failed read is said
# and tried again at every wake-up and poll, and the journal waits, its
# lines being later.  Only after --rotate-grace is the copy given up,
# and its lines said lost.
#
#   1. the copy read once it can be, then the journal from its start;
#   2. alertd stopped while it waits: the saved position is the copy's,
#      found again at start;
#   3. a copy that never can be read: given up after --rotate-grace (1 s
#      here), said as lost lines, and the journal read.
#
# The failure is made for real: pread() on the copy fails with EIO
# through the fault injector (lib/fault.c, LD_PRELOAD) while the test
# holds it on.  alertd is held (SIGSTOP) over the copy and the
# truncation, so that it finds the journal truncated and the copy there
# (09-truncate.t).  Nothing is timed: the test waits for the log's lines.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $r = $t->beside_setup('pread', 5);

my $read = qr/\berror: reading \Q$j.1\E at offset \d+: Input.* it may be /
           . qr/the copy a copytruncate kept of the journal file /;
my $lost = qr/were not read/;

$t->beside_alertd;
my $a = $t->beside_alert('ra');
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'A is delivered');
ok($t->settle, 'alertd has read everything so far');
my $at = -s $j;


# 1. the copy cannot be read for a while

my ($b, $c) = $t->copytruncate('rb', 'rc');
ok($t->log_has($read), 'the failed read of the copy is said')
    or diag($t->alertd_log);
ok($t->settle, 'a round after it');
ok(!$t->delivered($r, $b), 'B, in the copy, is not read meanwhile');
ok(!$t->delivered($r, $c), 'nor C, in the journal: it waits');
unlike($t->alertd_log, $lost, 'no line is said lost');
unlike($t->alertd_log, qr/no copy holds them/, 'nor the copy said absent');

$t->fault_off;
ok($t->wait_for(sub { $t->delivered($r, $b, $c) }),
   'once it can be read, B and then C are delivered')
    or diag($t->alertd_log);
my $fin = "\Qwarning: journal $j was truncated (we were at $at): \E"
          . "\Qfinishing its copy $j.1 from \E";
like($t->alertd_log, qr/\b$fin/,
     'the log says the copy is finished first') or diag($t->alertd_log);
like($t->alertd_log, qr/\binfo: reading \Q$j.1\E works again, /,
     'and that reading it works again');
ok($t->sent_before($b, $c), 'B before C');
is($t->times_sent($a, $b, $c), '1,1,1', 'A, B and C were each sent once');


# 2. stopped while it waits: the position saved is the copy's

ok($t->settle, 'alertd has read everything so far');
$at = -s $j;
my ($d, $e);
ok($t->log_more($read, sub { ($d, $e) = $t->copytruncate('rd', 're') }),
   'the failed read of the copy is said again')
    or diag($t->alertd_log);
is($t->stop($t->alertd_pid), 0, 'alertd stops while it waits');
is($t->saved_state->{offset}, $at, 'the saved position is where it was, '
   . 'in the copy');

my $start = qr/\berror: reading \Q$j.1\E at offset $at: Input.* it may be /
            . qr/the journal file alertd was reading /;
$t->beside_alertd;
ok($t->log_has($start), 'at start the copy still cannot be read: said')
    or diag($t->alertd_log);
ok($t->settle, 'a round after it');
ok(!$t->delivered($r, $d) && !$t->delivered($r, $e),
   'D and E are not read meanwhile');

$t->fault_off;
ok($t->wait_for(sub { $t->delivered($r, $d, $e) }),
   'once it can be read, D and E are delivered')
    or diag($t->alertd_log);
$fin = "\Qinfo: the journal was truncated and this copy of it kept \E"
       . "\Qwhile alertd was stopped: finishing $j.1 from offset $at first\E";
like($t->alertd_log, qr/\b$fin/,
     'the copy is finished first') or diag($t->alertd_log);
unlike($t->alertd_log, $lost, 'no line is said lost');


# 3. a copy that never can be read: given up after --rotate-grace

ok($t->settle, 'alertd has read everything so far');
is($t->stop($t->alertd_pid), 0, 'alertd stops again');
$t->beside_alertd('1s');
ok($t->settle, 'restarted with a grace of 1 s');
$at = -s $j;
my ($x, $g);
ok($t->log_more($read, sub { ($x, $g) = $t->copytruncate('rx', 'rg') }),
   'the failed read is said')
    or diag($t->alertd_log);
ok($t->log_has(qr/\bwarning: \Q$j.1\E could not be read for 1000 ms /
               . qr/\(--rotate-grace\): Input.*taken for not the copy /),
   'after the grace it is given up')
    or diag($t->alertd_log);
ok($t->log_has(qr/\bwarning: journal \Q$j\E was truncated \(we were at /
               . qr/$at\): reading it from the start; lines written after /
               . qr/offset $at before the truncation were not read/),
   'and its lines said lost');
ok($t->wait_for(sub { $t->delivered($r, $g) }),
   'G, in the journal, is delivered')
    or diag($t->alertd_log);
ok($t->settle && $t->drained($r), 'alertd is done');
ok(!$t->delivered($r, $x), 'X, in the copy that cannot be read, is not');
$t->forget($x);
$t->sent_once;
$t->fault_off;

$t->done;
