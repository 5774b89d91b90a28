#!/usr/bin/perl
# The journal was rotated while alertd was stopped, and the rotated file
# cannot be read (an I/O error) when alertd starts and looks for the
# file its saved position is in.  That was taken as "not ours": alertd
# said the file was gone and lines were lost, and the late lines in it
# were never read.  An I/O error tells neither way: the position is
# kept (and saved as it was), the failed read is said and tried again at
# every wake-up and poll, and the journal waits, its lines being later.
# Only after --rotate-grace is the file taken for not ours, and its lines
# said lost: a bad sector in an old file does not hold the new journal
# for ever.
#
#   1. the file the position is in: read once it can be, then the new
#      journal after it;
#   2. the rotated file still read for late lines at the stop: its late
#      line is read once it can be, the journal read meanwhile;
#   3. a file that never can be read: given up after --rotate-grace (1 s
#      here), said as lost lines, and the new journal read.
#
# The failure is made for real: pread() on the rotated file fails with
# EIO through the fault injector (lib/fault.c, LD_PRELOAD) while the test
# holds it on.  Nothing is timed: the test waits for the log's lines.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $r = $t->beside_setup('pread', 5);

my $read = qr/\berror: reading \Q$j.1\E at offset \d+: Input.* it may be /;
my $lost = qr/were not read/;

$t->beside_alertd;
my $a = $t->beside_alert('ra');
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'A is delivered');
ok($t->wait_for(sub { ($t->saved_state->{offset} // -1) == -s $j }),
   'the position after A is saved');
my $ino = (stat $j)[1];
is($t->stop($t->alertd_pid), 0, 'alertd stops');


# 1. rotated while alertd was stopped, a late line in the rotated file

rename $j, "$j.1" or die "rename: $!";
my $b = $t->beside_alert('rb', "$j.1");
my $c = $t->beside_alert('rc');

$t->fault_on;
$t->beside_alertd;
ok($t->log_has($read), 'the failed read of the rotated file is said')
    or diag($t->alertd_log);
ok($t->settle, 'a round after it');
ok(!$t->delivered($r, $b), 'B, in the rotated file, is not read meanwhile');
ok(!$t->delivered($r, $c), 'nor C, in the new journal: it waits');
is($t->saved_state->{ino}, $ino, 'the saved position stays in the rotated '
   . 'file');
unlike($t->alertd_log, $lost, 'no line is said lost');

$t->fault_off;
ok($t->wait_for(sub { $t->delivered($r, $b, $c) }),
   'once it can be read, B and then C are delivered')
    or diag($t->alertd_log);
my $fin = 'the journal was rotated while alertd was stopped: finishing';
like($t->alertd_log, qr/\binfo: \Q$fin $j.1\E from offset/,
     'the log says the rotated file is finished first');
like($t->alertd_log, qr/\binfo: reading \Q$j.1\E works again, /,
     'and that reading it works again');
is($t->times_sent($a, $b, $c), '1,1,1', 'A, B and C were each sent once');


# 2. stopped while the rotated file was still read for late lines (an
# hour's grace): a late line in it, which cannot be read at the start

ok($t->wait_for(sub { $t->saved_state->{rotated} }),
   'the rotated file is in the saved position');
is($t->stop($t->alertd_pid), 0, 'alertd stops again');
my $d = $t->beside_alert('rd', "$j.1");

$t->fault_on;
ok($t->log_more($read, sub { $t->beside_alertd }),
   'the failed read of the rotated file is said again')
    or diag($t->alertd_log);
my $e = $t->beside_alert('re');
ok($t->wait_for(sub { $t->delivered($r, $e) }),
   'E, in the journal, is read meanwhile');
ok($t->settle, 'a round after it');
ok(!$t->delivered($r, $d), 'D, in the rotated file, is not');
ok($t->saved_state->{rotated}, 'the rotated file stays in the saved '
   . 'position');
unlike($t->alertd_log, $lost, 'no line is said lost');

$t->fault_off;
ok($t->wait_for(sub { $t->delivered($r, $d) }),
   'once it can be read, D, a late line, is delivered')
    or diag($t->alertd_log);
like($t->alertd_log, qr/\binfo: reading the rotated journal \Q$j.1\E from /,
     'the log says the rotated file is read again');


# 3. the rotated file never can be read: given up after --rotate-grace

my $over = qr/\binfo: stopped reading the rotated journal .* is over$/m;
ok($t->log_more($over, sub {
       is($t->stop($t->alertd_pid), 0, 'alertd stops again');
       $t->beside_alertd('1s');
   }), 'restarted with a grace of 1 s: the rotated file\'s grace ends')
    or diag($t->alertd_log);
my $f = $t->beside_alert('rf');
ok($t->wait_for(sub { $t->delivered($r, $f)
                     && !$t->saved_state->{rotated} }),
   'the grace over, the rotated file leaves the saved position');
is($t->stop($t->alertd_pid), 0, 'alertd stops again');

unlink "$j.1" or die "unlink: $!";
rename $j, "$j.1" or die "rename: $!";
my $x = $t->beside_alert('rx', "$j.1");
$t->forget($x);
my $g = $t->beside_alert('rg');

$t->fault_on;

# --once does not wait: the position stays for its next run, exit 1 (an
# I/O error is no configuration error: 87-once-start-unreadable.t)
my ($st, $once) = $t->once_run;
is($st, 1, '--once exits 1');
like($once, qr/$read.*: it stays in the saved position, the next run (?#
               )tries it again/, 'and says why') or diag($once);
unlike($once, $lost, 'it says no line lost');
ok(!$t->delivered($r, $g), 'G, in the new journal, is not read before it');

ok($t->log_more($read, sub { $t->beside_alertd('1s') }),
   'the failed read is said')
    or diag($t->alertd_log);
ok($t->log_has(qr/\bwarning: \Q$j.1\E could not be read for 1000 ms /
               . qr/\(--rotate-grace\): Input.*taken for not the journal/),
   'after the grace it is given up')
    or diag($t->alertd_log);
ok($t->log_has(qr/\bwarning: the journal file alertd was reading .* /
               . qr/lines written to it after offset \d+ were not read/),
   'and its lines said lost');
ok($t->wait_for(sub { $t->delivered($r, $g) }),
   'G, in the new journal, is delivered')
    or diag($t->alertd_log);
ok($t->settle && $t->drained($r), 'alertd is done');
ok(!$t->delivered($r, $x), 'X, in the file that cannot be read, is not');
$t->sent_once;
$t->fault_off;

$t->done;
