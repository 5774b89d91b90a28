#!/usr/bin/perl
# A journal backlog is read in rounds: a bounded number of lines and of
# alerts queued (each a file written and fsync()ed per sink) per round,
# then the loop takes its signals and runs its deliveries before the
# next.  An alertd that reads the whole backlog in one round holds its
# signals and starts no delivery for as long as thousands of new groups'
# files take to write and sync: it fails the tests that look for the
# stop, and for a delivery started, before the end of the backlog.
#
# 1. a backlog of 300 new peers, and a SIGTERM already pending when
#    alertd starts (blocked, then sent to itself, before the exec): it
#    stops after its first round, with most of the backlog unread;
# 2. a second backlog of 300 written while it is stopped, and started
#    again: a delivery starts before the last alert of the backlog is
#    queued, and every alert is queued once, in the journal's order;
# 3. --once still reads a whole backlog (more lines than a round takes),
#    round after round, to its end;
# 4. 300 group windows that ended while alertd was stopped, each with a
#    repeat to fold, and a SIGTERM pending at start: it stops after the
#    first 64 folded alerts, and makes the others at the next start.
#
# Nothing is timed: what alertd did is read from its log, in order.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use JSON::PP;
use POSIX qw(:signal_h);
use Time::HiRes qw(time);

my $n = 300;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'backlog-test-secret-0123456789abcdef');
my $r = $t->receiver(secret => $secret);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my @opt = ('-v', '--repeat-interval', '1h', '--poll-interval', '1h');

sub peer_alert {
    my ($u, $i) = @_;
    return $u->alert_line(client => undef, reason => 'no_route',
                          peer => sprintf('10.7.%d.%d', $i >> 8, $i & 255));
}

# new peers from, to: the journal text and the ids
sub backlog {
    my ($u, $from, $to) = @_;
    my ($text, @ids) = ('');
    for my $i ($from .. $to) {
        my ($id, $line) = peer_alert($u, $i);
        push @ids, $id;
        $text .= $line;
    }
    return ($text, @ids);
}


# runs alertd to its end with a SIGTERM pending from its start (blocked,
# sent, then the exec); its exit status, or 'running'
sub run_term_pending {
    my ($u) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGTERM))
            or POSIX::_exit(127);
        kill 'TERM', $$;
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>>', $u->dir . '/alertd.log') or POSIX::_exit(127);
        open(STDERR, '>&', \*STDOUT);
        exec { $u->bin } $u->bin, '--policy', $u->dir . '/policy.yaml',
             '--keyring', $u->keyring, '--journal', $u->journal,
             '--state', $u->state, '--foreground', @opt
            or POSIX::_exit(127);
    }
    my $st = $u->reap($pid, 120);
    unless (defined $st) {
        kill 'KILL', $pid;
        $u->reap($pid, 5);
    }
    return defined $st ? $st >> 8 : 'running';
}


# 1. SIGTERM pending at start

my ($text, @first) = backlog($t, 1, $n);
$t->append($text);

is(run_term_pending($t), 0,
   'a SIGTERM pending at start: alertd stops, exit 0');

my $log = $t->alertd_log;
my $queued = () = $log =~ /\binfo: queued alert /g;
like($log, qr/\binfo: SIGTERM: stopping/, 'it took the SIGTERM');
cmp_ok($queued, '<', $n / 2, "after a round: $queued of $n alerts queued")
    or diag('the whole backlog was read before the signal was taken');
cmp_ok($queued, '>', 0, 'the round queued some');


# 2. a second backlog; started again

($text, my @ids) = backlog($t, $n + 1, 2 * $n);
$t->append($text);

my $mark = length $t->alertd_log;
$t->alertd(@opt);
ok($t->log_has(qr/\bqueued alert \Q$ids[-1]\E: /, 120),
   'started again: the backlog is read to its end');

my @lines = split /\n/, substr($t->alertd_log, $mark);
my ($send) = grep { $lines[$_] =~ /\bdebug: sending alert / } 0 .. $#lines;
my ($end) = grep { $lines[$_] =~ /\bqueued alert \Q$ids[-1]\E: / }
            0 .. $#lines;
ok(defined $send && defined $end && $send < $end,
   'a delivery starts before the end of the backlog is read')
    or diag('no delivery started until the whole backlog was queued');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');

my @order = $t->alertd_log =~ /\binfo: queued alert (\S+): /g;
is_deeply(\@order, [@first, @ids],
          'each alert of both backlogs queued once, in the journal order');
my %have = map { $_->{id} => 1 } $t->accepted($r);
for my $f ($t->outbox) {
    $have{$1} = 1 if $f =~ /^[0-9a-f]{16}-(.*)\.json$/;
}
is(scalar(grep { !$have{$_} } @first, @ids), 0,
   'each is delivered or queued: none lost');


# 3. --once: a backlog of more lines than a round takes, to its end

my $u = AlertdTest->new;
$u->policy();
my $deny = '';
$deny .= $u->deny_line for 1 .. 5000;
($text, @ids) = backlog($u, 1, 150);
$u->append($deny . $text);

my ($rc, $err) = $u->run_alertd('--policy', $u->dir . '/policy.yaml',
                                '--keyring', $u->keyring,
                                '--journal', $u->journal,
                                '--state', $u->state, '--once');
is($rc, 0, '--once: exit 0');
my $told = () = $err =~ /\binfo: no sinks for alert /g;
is($told, 150, '--once: every alert after 5000 deny lines is read');
like($err, qr/no sinks for alert \Q$ids[-1]\E: /, 'to the last');
is($u->saved_state->{offset}, -s $u->journal,
   'and the position saved is the end');



# 4. windows ended while stopped: a state of 300 groups, each with a
#    repeat, whose windows ended an hour ago

my $w = AlertdTest->new;
$w->policy();
$w->append('');
mkdir $w->state or die "mkdir: $!";

my $start = int(time * 1000) - 7_200_000;
my (@groups, @folded);
for my $i (1 .. $n) {
    my ($id, $line) = peer_alert($w, $i);
    my $a = decode_json($line);
    delete $a->{type};
    $a->{source} = 'airlock';
    $a->{time} = AlertdTest::now_rfc3339($start / 1000);
    push @groups, { first_id => $id, seq => 0, start => $start,
                    end => $start + 3_600_000, count => 1, last => $a };
    push @folded, "$id~1";
}
my @js = stat $w->journal;
$w->write_state({ version => 1, journal => $w->journal, dev => $js[0],
                  ino => $js[1], offset => 0, gen => 0,
                  groups => \@groups });

is(run_term_pending($w), 0, 'windows ended, a SIGTERM pending: exit 0');
my $made = () = $w->alertd_log =~ /\binfo: no sinks for folded alert /g;
cmp_ok($made, '<', $n / 2, "$made of $n folded alerts made before the stop")
    or diag('every window was ended before the signal was taken');
cmp_ok($made, '>', 0, 'the round made some');

$w->alertd(@opt);
ok($w->log_has(qr/started (?s:.*)no sinks for folded alert \Q$folded[-1]\E:/),
   'started again: the rest are made');
ok($w->wait_for(sub {
    (() = $w->alertd_log =~ /\binfo: no sinks for folded alert /g) == $n }),
   "$n folded alerts in all");
my %once;
$once{$_}++ for $w->alertd_log =~ /\bno sinks for folded alert (\S+):/g;
is(scalar(grep { ($once{$_} // 0) != 1 } @folded), 0,
   'each window folded once');
is($w->stop($w->alertd_pid, 'TERM') >> 8, 0, 'stopped');

$w->done_logs;
$u->done_logs;
$t->done;
