#!/usr/bin/perl
# Thousands of open groups (every unidentified peer is one): a save
# writes what changed, not the whole table.  alertd saves its position
# and groups after every alert line it reads; with 1500 groups open the
# old whole-file save wrote about 550 KB per alert line (an alertd
# without the change log fails the first test for that reason).  The
# groups survive kill -9 from the change log, also one whose last line
# a crash cut short, and a stop leaves the whole state in "offset"; a
# group closed since the snapshot stays closed.
#
# Before a kill -9 the test waits for the save it needs, on disk: the
# saved position at the journal's end.  Before it checks what a kill -9
# leaves, it checks on disk that the case is there to check.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use JSON::PP;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'groups-test-secret-0123456789abcdef');

# a sink that refuses connections: alertd writes no request bodies, so
# what it writes is its files and its log
my $port = AlertdTest::free_port();
$t->policy({ webhook => "http://127.0.0.1:$port/hook", secret => 'hook' });
$t->append('');

my @opt = ('--repeat-interval', '1h', '--outbox-max', '100000');
my $st = $t->state;
my $n = 0;

sub peer_alert {
    my ($i) = @_;
    return $t->alert_line(client => undef, reason => 'no_route',
                          peer => sprintf('10.9.%d.%d', $i >> 8, $i & 255));
}

sub wchar {
    my ($pid) = @_;
    my $io = $t->read_file("/proc/$pid/io");
    return $io =~ /^wchar: (\d+)/m ? $1 : die "no /proc/$pid/io";
}

sub queued { my ($id) = @_; $t->log_has(qr/queued alert \Q$id\E: /) }

# the save of everything read so far is on disk (the last one of a read
# follows the log lines of the alerts it read)
sub saved_to_end {
    my ($u) = @_;
    return $u->wait_for(sub {
        my $s = eval { $u->saved_state } or return 0;
        return ($s->{offset} // -1) == -s $u->journal;
    });
}

my $pid = $t->alertd(@opt);

# 1500 groups at once: read in rounds of 64 alerts, a save after each
my ($text, $last) = ('');
for my $i (1 .. 1500) {
    ($last, my $line) = peer_alert(++$n);
    $text .= $line;
}
$t->append($text);
ok(queued($last), '1500 peers read: 1500 groups open');
ok(saved_to_end($t), 'and saved');

# then 100 new peers and 100 repeats, one line at a time, each read
# before the next is written: one save each
my $w0 = wchar($pid);
my @repeats;
for my $i (1 .. 100) {
    my ($id, $line) = peer_alert(++$n);
    $t->append($line);
    queued($id) or last;

    ($id, $line) = peer_alert($i);          # folded: no outbox file
    push @repeats, $id;
    $t->append($line);
}
my ($mark, $line) = peer_alert(++$n);
$t->append($line);
ok(queued($mark), 'every line read');
my $per = (wchar($pid) - $w0) / 200;
cmp_ok($per, '<', 20_000,
       sprintf('written per alert line with 1600 groups open: %.0f bytes',
               $per));

my $snap = -s "$st/offset";
ok(-s "$st/offset.log" <= ($snap > 65536 ? $snap : 65536),
   'the change log is no larger than the snapshot (or 64 KiB)');

# kill -9 once the last line's save is done: the groups come back from
# the snapshot and the change log
ok(saved_to_end($t), 'the last line is saved');
kill 'KILL', $pid;
$t->reap($pid);

my $open = 1500 + 100 + 1;
{
    open(my $fh, '>>', "$st/offset.log") or die;
    print $fh '{"version":1,"journal":"cut sh';
    close $fh;
}

my $before = () = $t->alertd_log =~ /queued alert /g;
$pid = $t->alertd(@opt);
my ($started) = ($t->alertd_log =~ /.*\binfo: started (.*)/g)[-1];
like($started, qr/ $open group\(s\) open/,
     "after kill -9: all $open groups restored");
like($t->alertd_log, qr/offset\.log: the last \d+ bytes are not a whole save/,
     'a last line cut short is said and skipped');

# a repeat of a peer whose group is only in the change log is folded;
# a new peer after it is queued, and by then alertd has read all before
my ($rep, $rline) = peer_alert(1600);
$t->append($rline);
($mark, $line) = peer_alert(++$n);
$t->append($line);
ok(queued($mark), 'a new peer after the restart is queued');
my $after = () = $t->alertd_log =~ /queued alert /g;
is($after, $before + 1, 'and nothing else: no line from before the kill '
   . 'is read again, no alert queued again');
unlike($t->alertd_log, qr/alert \Q$rep\E: /,
       'a repeat of a peer from before the kill is folded, not sent');
is(scalar($t->outbox), $open + 1, 'one outbox file per group, no more');

# a stop leaves the whole state in "offset", the log empty
is($t->stop($pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
is(-s "$st/offset.log", 0, 'the change log is empty after a stop');
my $state = decode_json($t->read_file("$st/offset"));
is(scalar(@{$state->{groups}}), $open + 1, 'and offset holds every group');
is($state->{offset}, -s $t->journal, 'and the journal end');
my ($folded) = grep { ($_->{last}{peer} // '') eq '10.9.6.64' }
               @{$state->{groups}};
is($folded && $folded->{count}, 1, 'the repeat is counted in its group');

# a group closed since the snapshot stays closed after kill -9.  The
# case needs the group saved open in the snapshot, then its closing in
# the change log.  Both alerts are stamped an hour ahead: alertd takes
# an alert that far ahead of its clock at its clock, so a group's window
# (1 s) opens when alertd reads its line, and the save of that read has
# it open, however long the line took to be read.  The window then ends
# empty (time has to pass; with -v alertd says when), and the next
# save, the second alert's, appends the first group's key as closed.
my $u = AlertdTest->new;
$u->secret('hook', 'groups-test-secret-0123456789abcdef');
$u->policy({ webhook => "http://127.0.0.1:$port/hook", secret => 'hook' });
$u->append('');
my @uopt = ('--repeat-interval', '1s', '-v');
$pid = $u->alertd(@uopt);
my $ust = $u->state;
my $ahead = AlertdTest::now_rfc3339(time + 3600);
my $x = $u->alert(client => undef, peer => '10.8.0.1', reason => 'closed',
                  time => $ahead);
ok($u->log_has(qr/queued alert \Q$x\E: /), 'a group opens');
ok(saved_to_end($u), 'and is saved');
my $usnap = decode_json($u->read_file("$ust/offset"));
ok(grep({ $_->{first_id} eq $x } @{$usnap->{groups}}),
   'open, in the snapshot (the first save after a start)');
ok($u->log_has(qr/debug: closed the group of alert \Q$x\E: .*, peer /
               . qr/10\.8\.0\.1, .*its window ended with no repeat/),
   'its window ends empty: the group is closed');
my $y = $u->alert(client => undef, peer => '10.8.0.2', reason => 'open',
                  time => $ahead);
ok($u->log_has(qr/queued alert \Q$y\E: /), 'another opens');
ok(saved_to_end($u), 'and is saved, with the first one closed');
my @log = map { decode_json($_) } split /\n/,
          $u->read_file("$ust/offset.log");
ok(grep({ ($_->{gen} // -1) == ($usnap->{gen} // 0)
          && grep({ ($_->{peer} // '') eq '10.8.0.1' } @{$_->{closed}}) }
        @log),
   'the change log, after the snapshot, says the first group closed');
kill 'KILL', $pid;
$u->reap($pid);
my @groups = @{$u->saved_state->{groups}};
is(join(' ', map { $_->{last}{peer} // '' } @groups), '10.8.0.2',
   'the state saved holds the second group only');
$pid = $u->alertd(@uopt);
($started) = ($u->alertd_log =~ /.*\binfo: started (.*)/g)[-1];
like($started, qr/ 1 group\(s\) open/,
     'after kill -9 the closed group is not restored, the other is');
is($u->stop($pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
unlike($u->alertd_log, qr/AddressSanitizer|LeakSanitizer|runtime error:/,
       'no sanitizer reports there');

$t->done;
