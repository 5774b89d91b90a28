#!/usr/bin/perl
# A FIFO (or a device) under the name of a file of the state directory
# is not opened as one: alertd neither hangs on it (an open() of a FIFO
# waits for a writer, a read of one for data, with every signal held on
# the signalfd: only SIGKILL ended it) nor takes it for state, as for
# the journal (31-journal-fifo.t).
#
#   offset, offset.log, lock   exit 2 at start: "not a regular file"
#   outbox/<sink>-<id>.json    renamed *.bad, said, alertd runs
#   .tmp-offset                (a save's scratch name) replaced: saves
#                              work, alertd stops when told
#
# An alertd that opens them as it opens a regular file hangs at start
# or at its first save: it fails the tests that wait for its exit.
#
# Nothing is timed: each step waits for an exit, a log line or a save.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use POSIX qw(mkfifo);

my $t = AlertdTest->new;
$t->policy();
$t->append('');

my $st = $t->state;
my @args = ('--policy', $t->dir . '/policy.yaml', '--keyring', $t->keyring,
            '--journal', $t->journal, '--state', $st, '--foreground');

# a state left by a stop: offset, offset.log, lock, outbox/
my $pid = $t->alertd;
my $id = $t->alert(reason => 'before');
ok($t->log_has(qr/no sinks for alert \Q$id\E: /), 'a state to start from');
is($t->stop($pid, 'TERM') >> 8, 0, 'stopped');

# starts alertd on the state; its exit status, or 'hung', and its log
sub start {
    my $run = $t->spawn('run', $t->bin, @args);
    my $s = $t->reap($run);
    unless (defined $s) {
        kill 'KILL', $run;
        $t->reap($run, 5);
        return ('hung', '');
    }
    my $log = $t->read_file('run.log');
    $t->write_file('run.log', '');
    return ($s >> 8, $log);
}

for my $name ('offset', 'offset.log', 'lock') {
    rename "$st/$name", "$st/$name.kept" or die "rename $name: $!";
    mkfifo("$st/$name", 0600) or die "mkfifo $name: $!";

    my ($rc, $log) = start();
    is($rc, 2, "$name a FIFO: exit 2 at start, not hung");
    like($log, qr/\Q$st\E\S*\b\Q$name\E\b.*: not a regular file/,
         "$name: the log says why");

    unlink "$st/$name" or die "unlink $name: $!";
    rename "$st/$name.kept", "$st/$name" or die "rename $name: $!";
}

# an outbox file
my $fifo = '0123456789abcdef-fifo.json';
mkfifo("$st/outbox/$fifo", 0600) or die "mkfifo: $!";
$pid = $t->alertd('--poll-interval', '1h');
like($t->alertd_log,
     qr/\Q$fifo\E is not an outbox entry \(not a regular file\): renamed to \Q$fifo\E\.bad/,
     'a FIFO in the outbox is renamed *.bad, and said');
ok(-p "$st/outbox/$fifo.bad", 'it is there as *.bad');
$id = $t->alert(reason => 'after-outbox');
ok($t->log_has(qr/no sinks for alert \Q$id\E: /), 'alertd runs');
is($t->stop($pid, 'TERM') >> 8, 0, 'stopped');

# a save's scratch name
mkfifo("$st/.tmp-offset", 0600) or die "mkfifo: $!";
$pid = $t->alertd('--poll-interval', '1h');
$id = $t->alert(reason => 'after-tmp');
ok($t->log_has(qr/no sinks for alert \Q$id\E: /), 'a FIFO as .tmp-offset: '
   . 'alertd reads on');
ok($t->wait_for(sub {
    (eval { $t->saved_state->{offset} } // -1) == -s $t->journal }),
   'and saves its position');
is($t->stop($pid, 'TERM') // 'hung', 0, 'and stops when told');
ok(!-e "$st/.tmp-offset", 'the FIFO is gone');

$t->done;
