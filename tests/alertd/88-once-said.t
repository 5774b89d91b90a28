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
#
# The failures are made for real: a receiver that refuses every alert
# (401) until a file exists; fsync() on STATE/outbox, and stat() of
# the journal's directory, fail with EIO through the fault injector (lib/fault.c, LD_PRELOAD) while the test
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

$t->done;
