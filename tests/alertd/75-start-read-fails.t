#!/usr/bin/perl
# The journal cannot be read (an I/O error) when alertd starts: the
# check that the file is still the one it was reading, its bytes before
# the saved offset, fails to read them.  That was taken as proof the
# file had been truncated or rewritten: alertd said lines were lost and
# read the journal from the start, sending every alert in it again.  An
# I/O error tells neither way: alertd says it as a read that fails, and
# goes on from the saved offset once the bytes can be read, checked; if
# they are not the journal's bytes then, it does what it does at start
# (a copytruncate's copy beside it is finished first).
#
# The failure is made for real: pread() on the journal fails with EIO
# through the fault injector (lib/fault.c, LD_PRELOAD) while the test
# holds it on.  Nothing is timed: the test waits for the log's lines.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $env = $t->fault('pread', '/journal/airlock.journal', 5);

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_FAKE' . 'S' x 28));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my @args = ('--verbose', '--repeat-interval', '1h', '--poll-interval',
            '1s');
$t->alertd_env($env, @args);

my $a = $t->alert(reason => 'ra');
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'A is delivered');
ok($t->wait_for(sub { ($t->saved_state->{offset} // -1) == -s $j }),
   'the position after A is saved');
is($t->stop($t->alertd_pid), 0, 'alertd stops');

my $b = $t->alert(reason => 'rb');
my $read = qr/\berror: reading journal \Q$j\E at offset \d+: Input/;
my $over = qr/\binfo: reading journal \Q$j\E works again, /;

$t->fault_on;
$t->alertd_env($env, @args);
ok($t->log_has($read), 'the failed read at the start is said')
    or diag($t->alertd_log);
ok($t->settle, 'a round after it');
unlike($t->alertd_log, qr/truncated or rewritten/,
       'the journal is not said to be rewritten');
ok(!$t->delivered($r, $b), 'B is not read meanwhile');

$t->fault_off;
ok($t->log_has($over), 'reading works again: said once it does')
    or diag($t->alertd_log);
ok($t->wait_for(sub { $t->delivered($r, $b) }),
   'B, written while alertd was stopped, is delivered');
my $c = $t->alert(reason => 'rc');
ok($t->wait_for(sub { $t->delivered($r, $c) }), 'and C after it');
is(join(',', map { my $id = $_; scalar grep { $_->{id} eq $id }
                   $t->accepted($r) } $a, $b, $c),
   '1,1,1', 'A, B and C were each sent once');
unlike($t->alertd_log, qr/truncated or rewritten|were not read/,
       'no line is said lost');


# 2. the journal copied and truncated while alertd was stopped (its copy
# beside it holds the bytes before the position), and the read at the
# start fails: once it can be read, the copy is found and finished

ok($t->wait_for(sub { ($t->saved_state->{offset} // -1) == -s $j }),
   'the position after C is saved');
is($t->stop($t->alertd_pid), 0, 'alertd stops again');
my $d = $t->alert(reason => 'rd');
system('cp', $j, "$j.1") == 0 or die "cp: $?";
truncate($j, 0) or die "truncate: $!";
my $e = $t->alert(reason => 're');

$t->fault_on;
my $n = $t->log_count($read);
$t->alertd_env($env, @args);
ok($t->wait_for(sub { $t->log_count($read) > $n }),
   'the failed read at the second start is said');
ok($t->settle, 'a round after it');
ok(!$t->delivered($r, $d), 'D is not read meanwhile');

$t->fault_off;
ok($t->wait_for(sub { $t->delivered($r, $d, $e) }),
   'D, in the copy, and E, in the journal written anew, are delivered');
my $kept = 'the journal was truncated and this copy of it kept';
like($t->alertd_log, qr/\binfo: \Q$kept\E.*: finishing \Q$j.1\E from/,
     'the log says the copy is finished first');
is(join(',', map { my $id = $_; scalar grep { $_->{id} eq $id }
                   $t->accepted($r) } $a, $b, $c, $d, $e),
   '1,1,1,1,1', 'each alert was sent once');

$t->done;
