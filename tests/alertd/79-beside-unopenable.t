#!/usr/bin/perl
# A file beside the journal that alertd cannot open (EACCES: logrotate
# made it with a mode alertd's user cannot read, for a while) was
# skipped as "not ours" when alertd looked for the file its position is
# in: a copytruncate's copy while running, or the rotated file at start.
# Its lines were said lost (or the file gone), and never read once it
# could be opened.  A file that cannot be opened tells neither way, as
# one that cannot be read (77-rotated-read-fails.t, 78-copy-read-fails.t):
# the position is kept, the failure said, naming the file and the error,
# and tried again at every wake-up and poll, the journal waiting; after
# --rotate-grace the file is given up and its lines said lost.
#
#   1. running: a copytruncate's copy, opened once it can be;
#   2. at start: the journal rotated while alertd was stopped, the
#      rotated file opened once it can be;
#   3. a rotated file that never can be opened: given up after
#      --rotate-grace (1 s here), said as lost lines, the journal read.
#
# The failure is made for real: open() and openat() of the file fail
# with EACCES through the fault injector (lib/fault.c, LD_PRELOAD) while
# the test holds it on (a mode would not do: the tests may run as root).
# Nothing is timed: the test waits for the log's lines.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $r = $t->beside_setup('open', 13);

my $denied = qr/\berror: reading \Q$j.1\E at offset \d+: Permission denied; /
             . qr/it may be the /;
my $lost = qr/were not read/;

$t->beside_alertd;
my $a = $t->beside_alert('ra');
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'A is delivered');
ok($t->settle, 'alertd has read everything so far');


# 1. running: copytruncate, the copy cannot be opened for a while (held
# over it, so that alertd finds the journal truncated: 09-truncate.t,
# AlertdTest::copytruncate)

my ($b, $c) = $t->copytruncate('rb', 'rc');

ok($t->log_has(qr/$denied/ . qr/copy a copytruncate kept/),
   'the copy that cannot be opened is said, with the error')
    or diag($t->alertd_log);
ok($t->settle, 'a round after it');
ok(!$t->delivered($r, $b), 'B, in the copy, is not read meanwhile');
ok(!$t->delivered($r, $c), 'nor C, in the journal: it waits');
unlike($t->alertd_log, $lost, 'no line is said lost');

$t->fault_off;
ok($t->wait_for(sub { $t->delivered($r, $b, $c) }),
   'once it can be opened, B and then C are delivered')
    or diag($t->alertd_log);
ok($t->log_has(qr/\bfinishing its copy \Q$j.1\E from offset /),
   'the copy is finished first');
is($t->times_sent($a, $b, $c), '1,1,1', 'A, B and C were each sent once');


# 2. at start: rotated while alertd was stopped, the rotated file cannot
# be opened for a while

ok($t->settle, 'alertd has read everything so far');
is($t->stop($t->alertd_pid), 0, 'alertd stops');
rename $j, "$j.1" or die "rename: $!";
my $d = $t->beside_alert('rd', "$j.1");
my $e = $t->beside_alert('re');

$t->fault_on;
ok($t->log_more($denied, sub { $t->beside_alertd }),
   'the rotated file that cannot be opened is said')
    or diag($t->alertd_log);
ok($t->alertd_log =~ qr/$denied/ . qr/journal file alertd was reading /,
   'as the file alertd may have been reading')
    or diag($t->alertd_log);
ok($t->settle, 'a round after it');
ok(!$t->delivered($r, $d), 'D, in the rotated file, is not read meanwhile');
ok(!$t->delivered($r, $e), 'nor E, in the new journal: it waits');
unlike($t->alertd_log, $lost, 'no line is said lost');

$t->fault_off;
ok($t->wait_for(sub { $t->delivered($r, $d, $e) }),
   'once it can be opened, D and then E are delivered')
    or diag($t->alertd_log);
ok($t->log_has(qr/\bthe journal was rotated while alertd was stopped: /
               . qr/finishing \Q$j.1\E from offset /),
   'the rotated file is finished first');


# 3. a rotated file that never can be opened: given up after
# --rotate-grace

ok($t->settle, 'alertd has read everything so far');
is($t->stop($t->alertd_pid), 0, 'alertd stops again');
unlink "$j.1" or die "unlink: $!";
rename $j, "$j.1" or die "rename: $!";
my $x = $t->beside_alert('rx', "$j.1");
$t->forget($x);
my $g = $t->beside_alert('rg');

$t->fault_on;
ok($t->log_more($denied, sub { $t->beside_alertd('1s') }),
   'the rotated file that cannot be opened is said')
    or diag($t->alertd_log);
ok($t->log_has(qr/\bwarning: \Q$j.1\E could not be read for 1000 ms /
               . qr/\(--rotate-grace\): Permission denied; it is taken for /
               . qr/not the journal file alertd was reading/),
   'after the grace it is given up, the error said')
    or diag($t->alertd_log);
ok($t->log_has(qr/\bwarning: the journal file alertd was reading .* /
               . qr/lines written to it after offset \d+ were not read/),
   'and its lines said lost');
ok($t->wait_for(sub { $t->delivered($r, $g) }),
   'G, in the new journal, is delivered')
    or diag($t->alertd_log);
ok($t->settle && $t->drained($r), 'alertd is done');
ok(!$t->delivered($r, $x), 'X, in the file that cannot be opened, is not');
$t->sent_once;
$t->fault_off;

$t->done;
