#!/usr/bin/perl
# Something that is not a regular file under the journal's name (a FIFO,
# a device) is not opened as the journal: alertd neither hangs on it
# (an open() of a FIFO waits for a writer, with every signal held on
# the signalfd: only SIGKILL ended it, and nothing was delivered
# meanwhile) nor reads it.  It says so and tries again at each poll, as
# for a journal it cannot open: said as a failure that repeats
# (ad_fail()), when it begins, again after 5 s with the count of tries
# (each a debug line with -v), and once when a file opens again; a
# rotated file still in its grace is read meanwhile, and a regular file
# under the name is read once it is there.  At start likewise; --once
# exits 1, its lines left for the next run (87-once-start-unreadable.t).
#
# Nothing is timed: each step waits for a delivery or a log line (the
# 5 s before the second line have to pass: the test waits for it).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use POSIX qw(mkfifo);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'fifo-test-secret-0123456789abcdef');
my $r = $t->receiver(secret => $secret);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my $j = $t->journal;
my $not_reg = qr/cannot open the journal \Q$j\E: not a regular file/;
my $reopen = qr/\binfo: opening the journal \Q$j\E works again, /;
my @run = ('--poll-interval', '1s', '--rotate-grace', '1h',
           '--repeat-interval', '1h', '--verbose');

$t->alertd(@run);
my $one = $t->alert(reason => 'fifo-one');
ok($t->wait_for(sub { $t->delivered($r, $one) }), 'the first is sent');

# rotated, and a FIFO made under the name
rename $j, "$j.1" or die "rename: $!";
mkfifo($j, 0600) or die "mkfifo: $!";
ok($t->log_has($not_reg), 'the FIFO is not taken for the journal');

# (nothing is written to the FIFO: a writer would wait for a reader)
my ($rot, $line) = $t->alert_line(reason => 'fifo-rotated');
$t->append($line, "$j.1");
ok($t->wait_for(sub { $t->delivered($r, $rot) }),
   'a late line of the rotated file is read and sent meanwhile');

ok($t->log_has(qr/\berror: $not_reg.*still failing/),
   'the FIFO is said again after a while, with the count')
    or diag($t->alertd_log);
my $f = $t->failures($not_reg, $reopen);
like($f->{tries}[0], qr/\berror: $not_reg/, 'the first try is an error line');
$t->said_checks($f, '');

unlink $j or die "unlink: $!";
my $two = $t->alert(reason => 'fifo-two');
ok($t->wait_for(sub { $t->delivered($r, $two) }),
   'a regular journal under the name is read once it is there');
ok($t->log_has($reopen), 'and opening it is said to work again');
$f = $t->failures($not_reg, $reopen);
$t->over_checks($f, '');
is($t->log_count($not_reg), scalar @{$f->{tries}}, 'no failure since');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');

# at start
unlink $j or die "unlink: $!";
mkfifo($j, 0600) or die "mkfifo: $!";
$t->alertd(@run);
like($t->alertd_log, qr/\binfo: started .*\n(?s:.*)$not_reg|$not_reg(?s:.*)\binfo: started /,
     'alertd starts with a FIFO under the name, and says so');
unlink $j or die "unlink: $!";
my $three = $t->alert(reason => 'fifo-three');
ok($t->wait_for(sub { $t->delivered($r, $three) }),
   'and reads the journal made there after it');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');

# --once does not wait for a journal under the name: exit 1
unlink $j or die "unlink: $!";
mkfifo($j, 0600) or die "mkfifo: $!";
my $pid = $t->spawn('once', $t->bin, '--policy', $t->dir . '/policy.yaml',
                    '--keyring', $t->keyring, '--journal', $j,
                    '--state', $t->state, '--once');
my $st = $t->reap($pid);
unless (defined $st) {
    kill 'KILL', $pid;
    $t->reap($pid, 5);
}
is(defined $st ? $st >> 8 : 'hung', 1, '--once exits 1, at once');
like($t->read_file('once.log'),
     qr/cannot open the journal \Q$j\E: not a regular file; its lines are (?#
        )left for the next run/,
     'and says why');

$t->done;
