#!/usr/bin/perl
# alertd --once said some things as the daemon does, though --once
# tries nothing again in its run:
#
#   1. an alert the sink refused was said "retrying it in N s", and a
#      second refusal in a row "is sent nothing for N s" (the sink is
#      sent its other alerts all the same): it now says that the alert
#      stays queued and the next run tries it again;
#   2. the outbox directory that cannot be synced said "the journal
#      position is saved once it works": it now says that the position
#      is not saved and the next run reads the journal again from the
#      last one saved, which it does (an alert the run delivered is
#      sent again, with the same id); --once exits 1.
#   3. the journal's directory whose stat() fails with an I/O error
#      made --once exit 2, "a usage or configuration error", which the
#      unit does not restart: it now exits 1, as for the state
#      directory's I/O error; a directory missing, or not a directory,
#      still exits 2.
#   4. the journal rotated while alertd runs, and the old file's last
#      read failed (an I/O error): the rotation said "read the old
#      file (inode N) to offset M", and the failed read "reading
#      journal JOURNAL", the name now another file's.  The rotation
#      now says the old file could not be read to its end, and the
#      read names the rotated file, its inode and the path it had, as
#      does the line that says it reads again (the journal's own reads,
#      which worked, said the failure over at each round);
#   5. the same with --once, rotated while it was not running: the
#      read names the rotated file by its inode and its path now.
#
# The failures are made for real: a receiver that refuses every alert
# (401) until a file exists; fsync() on STATE/outbox, and stat() of
# the journal's directory, and pread() of the rotated journal (reads of
# 8 KiB and more: its tail reads back), fail with EIO through the fault
# injector (lib/fault.c, LD_PRELOAD) while the test
# holds it on.  Nothing is timed: each run of --once is waited for.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $st_dir = $t->state;
my $env_sync = $t->fault('fsync', '/state/outbox', 5);
my $jdir = $j =~ s{/[^/]+$}{}r;
my $env_dir = $t->fault('stat', '/' . (split m{/}, $jdir)[-1], 5);
my $up = $t->dir . '/up';

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_FAKE' . 'F' x 28),
                     fail_until => $up, fail_mode => 401);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my $left = qr/\bwarning: lines of the journal are left unread \(said /
           . qr/above\); the next run goes on from where this one /
           . qr/stopped; exit status 1/;
$left = qr/$left/;


# 1. every alert refused

my @ids;
my $text = '';
for my $i (1 .. 3) {
    my ($id, $l) = $t->alert_line(reason => "r$i");
    $text .= $l;
    push @ids, $id;
}
$t->append($text);

my ($st, $log) = $t->once_run({});
is($st, 1, 'every alert refused: --once exits 1') or diag($log);
for my $id (@ids) {
    like($log, qr/\berror: webhook \S+ refused alert \Q$id\E with HTTP 401(?#
                  )\b.* \(attempt 1\); it stays queued, the next run tries (?#
                  )it again: fix the receiver, or rm STATE\/outbox\/\S+ (?#
                  )to drop it$/m,
         "the refusal of $id says the next run tries it again")
        or diag($log);
}
unlike($log, qr/retrying it in/, 'none says it is retried in a while');
unlike($log, qr/is sent nothing for/,
       'nor that the sink is sent nothing for a while');
is(scalar(() = $log =~ /refused alert/g), 3,
   'the sink was sent its other alerts all the same, each once');
is(scalar(() = $t->outbox), 3, 'the three stay queued');

$t->write_file($up, '');
($st, $log) = $t->once_run({});
is($st, 0, 'the receiver fixed, the next run exits 0') or diag($log);
ok($t->delivered($r, @ids), 'and delivers them');


# 2. the outbox directory cannot be synced

my $at = -s $j;
my $b = $t->alert(reason => 'rb');
$t->fault_on;
($st, $log) = $t->once_run($env_sync);
isnt($st, 0, 'the outbox cannot be synced: --once does not exit 0')
    or diag($log);
is($st, 1, 'it exits 1') or diag($log);
like($log, qr/\berror: cannot sync \Q$st_dir\E\/outbox: Input\/output (?#
              )error; the journal position is not saved in this run, the (?#
              )next run reads the journal again from the last one saved (?#
              )\(an alert delivered meanwhile is sent again, with the (?#
              )same id\)$/m,
     'the failure says the position is not saved and the next run reads '
     . 'again') or diag($log);
unlike($log, qr/saved once it works/, 'not that it is saved once it works');
like($log, $left, 'the last line says lines are left for the next run');
is($t->saved_state->{offset}, $at, 'the saved position is before B');
ok($t->fault_made > 0, 'the failure was made');
$t->fault_off;

($st, $log) = $t->once_run({});
is($st, 0, 'the next run, the failure gone, exits 0') or diag($log);
like($log, qr/\binfo: (?:queued|folded into a queued alert:) alert \Q$b\E/,
     'it reads B again from the last position saved') or diag($log);
ok($t->delivered($r, $b), 'B is delivered');
is(scalar(grep { $_->{id} eq $b } $t->accepted($r)), 2,
   'B, delivered by the run that could not save, is sent again, with the '
   . 'same id');
is($t->saved_state->{offset}, -s $j, 'the position after B is saved');


# 3. the journal's directory cannot be looked at

my $c = $t->alert(reason => 'rc');
$t->fault_on;
($st, $log) = $t->once_run($env_dir);
is($st, 1, 'the journal directory\'s stat() fails with EIO: --once exits '
   . '1, not 2') or diag($log);
like($log, qr/\berror: cannot use the journal directory \Q$jdir\E: (?#
              )Input\/output error$/m, 'the failure is said') or diag($log);
ok($t->fault_made > 0, 'the failure was made');
$t->fault_off;

rename $jdir, "$jdir.away" or die "rename: $!";
($st, $log) = $t->once_run({});
is($st, 2, 'a journal directory missing: --once still exits 2')
    or diag($log);
like($log, qr/\berror: cannot use the journal directory \Q$jdir\E: (?#
              )No such file or directory$/m, 'and says so') or diag($log);

$t->write_file($jdir, '');
($st, $log) = $t->once_run({});
is($st, 2, 'a journal directory that is not one: --once still exits 2')
    or diag($log);
like($log, qr/\berror: the journal directory \Q$jdir\E is not a (?#
              )directory$/m, 'and says so') or diag($log);
unlink $jdir or die "unlink: $!";
rename "$jdir.away", $jdir or die "rename: $!";

($st, $log) = $t->once_run({});
is($st, 0, 'the directory back, the next run exits 0') or diag($log);
ok($t->delivered($r, $c), 'C is delivered');


# 4. rotated while alertd runs, the old file's last read fails

my $u = AlertdTest->new;
my $uj = $u->journal;
my $env_rot = $u->fault('pread', (split m{/}, $uj)[-1] . '.1', 5, 8192);
my $ur = $u->receiver(secret => $u->secret('hook', 'whsec_FAKE' . 'F' x 28));
$u->policy({ webhook => $ur->{url}, secret => 'hook' });
my $misread = qr/read the old file \(inode \d+\) to offset/;
my $bare = qr/reading journal \Q$uj\E at offset/;

$u->alertd_env($env_rot, '--verbose', '--repeat-interval', '1h',
               '--poll-interval', '1s', '--rotate-grace', '1h');
my $ua = $u->alert(reason => 'ua');
ok($u->wait_for(sub { $u->delivered($ur, $ua) }), 'A is delivered');
ok($u->settle, 'alertd has read everything so far');

kill 'STOP', $u->alertd_pid;
my $ub = $u->alert(reason => 'ub');
my $uoff = -s $uj;
my $uoff_a = $uoff - length(($u->alert_line(reason => 'ub'))[1]);
my $ino = (stat $uj)[1];
rename $uj, "$uj.1" or die "rename: $!";
$u->fault_on;
my $uc = $u->alert(reason => 'uc');
my $new_ino = (stat $uj)[1];
kill 'CONT', $u->alertd_pid;

ok($u->wait_for(sub { $u->delivered($ur, $uc) }),
   'C, in the new journal, is delivered') or diag($u->alertd_log);
ok($u->log_has(qr/\bwarning: journal \Q$uj\E was rotated: the old file (?#
                  )\(inode $ino, was \Q$uj\E\) could not be read to its (?#
                  )end, only to offset \d+ \(said above\); now reading (?#
                  )inode $new_ino$/m),
   'the rotation says the old file could not be read to its end')
    or diag($u->alertd_log);
unlike($u->alertd_log, $misread, 'not that it was read to the offset');
like($u->alertd_log, qr/\berror: reading the rotated journal \(inode (?#
                        )$ino, was \Q$uj\E\) at offset \d+: Input\/output (?#
                        )error$/m,
     'the failed read names the rotated file and the path it had')
    or diag($u->alertd_log);
unlike($u->alertd_log, $bare, 'not the journal under the name');
ok($u->fault_made > 0, 'the failure was made');
$u->fault_off;

ok($u->wait_for(sub { $u->delivered($ur, $ub) }),
   'the failure gone, B, in the rotated file, is delivered')
    or diag($u->alertd_log);
ok($u->log_has(qr/\binfo: reading the rotated journal \(inode $ino, was (?#
                  )\Q$uj\E\) works again, /),
   'and the rotated file is said to read again') or diag($u->alertd_log);
unlike($u->alertd_log, qr/reading journal \Q$uj\E works again/,
       'the journal under the name, which read all along, is not');
is($u->stop($u->alertd_pid), 0, 'alertd stops');


# 5. --once, rotated while it was not running, the rotated file fails

my ($st5, $log5) = $u->once_run({});
is($st5, 0, 'a run with nothing left exits 0') or diag($log5);
my $ud = $u->alert(reason => 'ud');
$ino = (stat $uj)[1];
rename $uj, "$uj.1" or die "rename: $!";
my $ue = $u->alert(reason => 'ue');
$new_ino = (stat $uj)[1];
$u->fault_on;
($st5, $log5) = $u->once_run($env_rot);
is($st5, 1, 'the rotated file fails to read: --once exits 1')
    or diag($log5);
like($log5, qr/\berror: reading the rotated journal \(inode $ino, (?#
               )\Q$uj.1\E\) at offset \d+: Input\/output error$/m,
     'the failed read names the rotated file and its path') or diag($log5);
unlike($log5, $bare, 'not the journal under the name');
unlike($log5, $misread, 'nor is the old file said read to the offset');
ok($u->fault_made > 0, 'the failure was made');
$u->fault_off;

($st5, $log5) = $u->once_run({});
is($st5, 0, 'the next run, the failure gone, exits 0') or diag($log5);
ok($u->delivered($ur, $ud, $ue), 'D and E are delivered');
$u->done_logs;

$t->done;
