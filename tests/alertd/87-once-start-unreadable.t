#!/usr/bin/perl
# alertd --once that cannot read, at its start, the file its saved
# position is in (the journal's bytes before the offset, or a rotated
# file beside it: an I/O error), or cannot open the journal (something
# other than a regular file under its name), stopped there with exit
# status 2, "a usage or configuration error", which the unit does not
# restart: as if an operator had to fix it.  An I/O error, or a file
# that a rotation puts right, can go away by itself: the daemon tries
# again; and the same failure one read later already made --once exit
# 1, lines left for the next run.  Now --once runs on: the position is
# kept (saved as it was), the outbox is delivered, and it exits 1 with
# "lines of the journal are left unread"; the next run, the failure
# gone, reads the lines from there.
#
#   1. the journal's bytes before the saved offset cannot be read;
#   2. rotated while alertd was stopped, the rotated file (the saved
#      position's) cannot be read: the journal is not read before it;
#   3. a FIFO under the journal's name.
#
# An alert queued while its sink was down is in the outbox each time:
# --once delivers it all the same.  (The attempt that failed said
# "retrying in 1.0 s", though --once tries it no more: it now says that
# the next run tries it again.)  The failure is made for real:
# pread() fails with EIO through the fault injector (lib/fault.c,
# LD_PRELOAD) while the test holds it on.  Nothing is timed: each run
# of --once is waited for.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use POSIX qw(mkfifo);

my $t = AlertdTest->new;
my $j = $t->journal;
my $base = (split m{/}, $j)[-1];
my $env_j = $t->fault('pread', $base, 5);
my $env_r = $t->fault('pread', "$base.1", 5);
my $up = $t->dir . '/up';

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_FAKE' . 'F' x 28),
                     fail_until => $up);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my $left = qr/\bwarning: lines of the journal are left unread \(said /
           . qr/above\); the next run goes on from where this one /
           . qr/stopped; exit status 1/;
$left = qr/$left/;
my $lost = qr/were not read|lost in this run/;
my @ids;

# an alert queued while the sink is down: --once exits 1, it stays
sub queue_one {
    my ($reason) = @_;
    unlink $up;
    my $q = $t->alert(reason => $reason);
    push @ids, $q;
    my ($st, $log) = $t->once_run({});
    is($st, 1, "$reason is left queued, the sink down") or diag($log);
    ok(!$t->delivered($r, $q), "$reason is not delivered");
    like($log, qr/\bwarning: webhook \S+: alert \Q$q\E not delivered: (?#
                  )HTTP 500 \(attempt 1, \d+ ms\); it stays queued, the (?#
                  )next run tries it again$/m,
         'the failed attempt says the next run tries it again') or diag($log);
    unlike($log, qr/retrying in/, 'not that it is retried in a while');
    $t->write_file($up, '');
    return ($q, -s $j);
}


# 1. the journal's bytes before the saved offset cannot be read

my ($q1, $at) = queue_one('q1');
my $b = $t->alert(reason => 'rb');
push @ids, $b;
$t->fault_on;
my ($st, $log) = $t->once_run($env_j);
is($st, 1, 'the journal cannot be read at the saved offset: --once exits '
   . '1, not 2') or diag($log);
like($log, qr/\berror: reading journal \Q$j\E at offset $at: Input/,
     'the failed read is said');
like($log, $left, 'the last line says lines are left for the next run');
unlike($log, $lost, 'none said lost');
ok($t->delivered($r, $q1), 'the queued alert is delivered meanwhile');
ok(!$t->delivered($r, $b), 'B is not read');
is($t->saved_state->{offset}, $at, 'the saved position is where it was');
ok($t->fault_made > 0, 'the failure was made');
$t->fault_off;

($st, $log) = $t->once_run({});
is($st, 0, 'the next run, the failure gone, exits 0') or diag($log);
ok($t->delivered($r, $b), 'B is delivered');


# 2. rotated while stopped, the rotated file cannot be read

my $q2;
($q2, $at) = queue_one('q2');
my $ino = (stat $j)[1];
rename $j, "$j.1" or die "rename: $!";
my $c = $t->alert(reason => 'rc');
my $d = $t->alert(reason => 'rd');
push @ids, $c, $d;

$t->fault_on;
($st, $log) = $t->once_run($env_r);
is($st, 1, 'the rotated file cannot be read: --once exits 1, not 2')
    or diag($log);
like($log, qr/\berror: reading \Q$j.1\E at offset $at: Input.*; it may be (?#
              )the journal file alertd was reading \(inode $ino\): it (?#
              )stays in the saved position, the next run tries it (?#
              )again; the journal is not read before it/,
     'the failed read is said, and what is left') or diag($log);
unlike($log, qr/rotate-grace/, 'no grace is said: --once waits for none');
like($log, $left, 'the last line says lines are left for the next run');
unlike($log, $lost, 'none said lost');
ok($t->delivered($r, $q2), 'the queued alert is delivered meanwhile');
ok(!$t->delivered($r, $c) && !$t->delivered($r, $d),
   'the new journal is not read before the rotated file');
my $s = $t->saved_state;
is("$s->{ino},$s->{offset}", "$ino,$at", 'the saved position is where it '
   . 'was');
ok($t->fault_made > 0, 'the failure was made');
$t->fault_off;

($st, $log) = $t->once_run({});
is($st, 0, 'the next run, the failure gone, exits 0') or diag($log);
ok($t->delivered($r, $c, $d), 'C and D are delivered');
unlike($log, qr/$lost|$left/, 'nothing said lost or left');
unlink "$j.1" or die "unlink: $!";


# 3. a FIFO under the journal's name

my $q3;
($q3, $at) = queue_one('q3');
rename $j, "$j.1" or die "rename: $!";
mkfifo($j, 0600) or die "mkfifo: $!";
($st, $log) = $t->once_run({});
is($st, 1, 'a FIFO under the name: --once exits 1, not 2') or diag($log);
like($log, qr/\berror: cannot open the journal \Q$j\E: not a regular (?#
              )file; its lines are left for the next run/,
     'it says why, and what is left') or diag($log);
unlike($log, qr/poll-interval/, 'no poll is said: --once waits for none');
like($log, $left, 'the last line says lines are left for the next run');
ok($t->delivered($r, $q3), 'the queued alert is delivered meanwhile');

unlink $j or die "unlink: $!";
my $e = $t->alert(reason => 're');
push @ids, $e;
($st, $log) = $t->once_run({});
is($st, 0, 'a journal there again: the next run exits 0') or diag($log);
ok($t->delivered($r, $e), 'E is delivered');

my %sent;
$sent{$_->{id}}++ for $t->accepted($r);
is(join(',', map { $sent{$_} // 0 } @ids), join(',', map { 1 } @ids),
   'each alert was sent once');

$t->done;
