#!/usr/bin/perl
# The outbox is bounded per sink (--outbox-max, default 10000).  A sink that stays down
# while new groups keep coming holds its oldest alerts and no more: the
# new ones are counted, not queued; the count survives a stop and a
# kill -9, and once the sink takes an alert again it is sent an
# "alerts_dropped" alert with it, ahead of the rest of its queue.  A
# healthy sink beside it gets everything.  A full sink folds the later
# folded alerts of a queued group into it instead of dropping them.
# Bad values of --outbox-max are refused in one line.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);

my $JSON = JSON::PP->new->canonical;

my $t = AlertdTest->new;
my $d = $t->dir;
my $secret = $t->secret('hook', 'cap-test-secret-0123456789abcdef');


# --- the default bound, no option given: a burst of 10050 new groups
# for a sink that is down queues 10000 and counts 50 (an alertd without
# the bound queues all 10050: this part fails on it for that reason)

my $v = AlertdTest->new;
{
    my $sv = $v->secret('hook', 'cap-test-secret-0123456789abcdef');
    my $down = $v->receiver(secret => $sv, fail_until => $v->dir . '/never');
    $v->policy({ webhook => $down->{url}, secret => 'hook' });
    $v->alertd;

    my $burst = '';
    my $last;
    for my $i (1 .. 10050) {
        ($last, my $line) = $v->alert_line(reason => "burst$i");
        $burst .= $line;
    }
    $v->append($burst);

    ok($v->log_has(qr/alert \Q$last\E: /, 120), 'the burst is read');
    is(scalar($v->outbox), 10000,
       'default bound: 10000 alerts queued for the dead sink, no more');
    is($v->stop($v->alertd_pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
    my $st = decode_json($v->read_file($v->state . '/offset') || '{}');
    is(($st->{dropped} // [{}])->[0]{count}, 50,
       'the 50 others are counted in the state file');
}


# --- the setting: shown in --help, bad values refused in one line

$t->policy({ webhook => 'http://127.0.0.1:9/hook', secret => 'hook' });
$t->append('');

my @base = ('--policy', "$d/policy.yaml", '--keyring', $t->keyring,
            '--journal', $t->journal, '--state', "$d/cli-state");

my $help = `\Q${\$t->bin}\E --help`;
like($help, qr/--outbox-max N\s+the most alerts queued for one sink: 1 to\s+1000000, default 10000/,
     '--help names --outbox-max, its range and its default');

for my $bad ('0', '-1', 'abc', '10x', '1e3', ' 5', '5 ', '+5', '',
             '1000001', '99999999999999999999999')
{
    my ($rc, $err) = $t->run_alertd(@base, '--outbox-max', $bad);
    is($rc, 2, "--outbox-max \"$bad\": exit 2");
    like($err, qr/^airlock-alertd: --outbox-max "\Q$bad\E" is not a number of alerts from 1 to 1000000\n\z/,
         "--outbox-max \"$bad\": says why, in one line");
}

{
    my ($rc, $err) = $t->run_alertd(@base, '--outbox-max');
    is($rc, 2, '--outbox-max without a value: exit 2');
    like($err, qr/--outbox-max needs a value/, 'and says so');
}

for my $good ('1', '1000000') {
    my ($rc, $err) = $t->run_alertd(@base, '--outbox-max', $good, '--once');
    is($rc, 0, "--outbox-max $good is taken") or diag($err);
}


# --- a dead sink and a healthy one; the dead one holds 5 alerts at most

my $until = "$d/dead-recovers";
my $dead = $t->receiver(secret => $secret, fail_until => $until);
my $ok = $t->receiver(secret => $secret);

$t->policy({ webhook => $dead->{url}, secret => 'hook' },
           { webhook => $ok->{url}, secret => 'hook' });

my @cap = ('--outbox-max', '5');
$t->alertd(@cap);
like($t->alertd_log, qr/at most 5 alert\(s\) queued per sink/,
     'the start line says the bound');

# 12 groups, two of the dropped ones critical (quarantines), one at a
# time as a storm brings them: the healthy sink takes each before the
# next, so only the dead sink's outbox fills (a burst of more than the
# bound in one read would fill the healthy one's too)
my @ids;
for my $i (1 .. 12) {
    my %f = (reason => "reason$i");
    %f = (%f, kind => 'quarantine', severity => 'critical',
          quarantine_until => AlertdTest::now_rfc3339(time + 600))
        if $i == 8 || $i == 10;
    push @ids, $t->alert(%f);
    $t->wait_for(sub { $t->delivered($ok, $ids[-1]) });
}

ok($t->delivered($ok, @ids), 'the healthy sink gets all 12 alerts');

# The receiver writes its record once it has answered, alertd removes
# the outbox file once it has the answer: either may come first.  The
# removal follows alertd's log line in the same call, so once the line
# is there, a round of alertd's loop since (settle) has it done, and
# only the dead sink's files are left.
ok($t->log_has(qr/\bdelivered alert \Q$ids[-1]\E to webhook \Q$ok->{label}\E /)
   && $t->settle, 'alertd has taken the healthy sink\'s last answer');
my $id11 = quotemeta $ids[11];
ok($t->log_has(qr/dropped \(outbox full\): alert $id11|$id11: .*dropped for 1/),
   'the 12th alert is logged as dropped for the dead sink');

sub dead_files {
    my $key = shift;
    return grep { /^\Q$key\E-/ } $t->outbox;
}

# the dead sink's key: its queued files all start with it
my ($dead_key) = map { /^([0-9a-f]{16})-/ } $t->outbox;
my @files = dead_files($dead_key);
is(scalar(@files), 5, 'the dead sink has 5 alerts queued, no more')
    or diag(join "\n", $t->outbox);
is(scalar($t->outbox), 5, 'and nothing else is queued');
is_deeply([sort map { /^[0-9a-f]{16}-(\w+)\.json$/ } @files],
          [sort @ids[0 .. 4]], 'the 5 kept are the oldest');

my $log = $t->alertd_log;
my @start = $log =~ /warning: webhook \S+: 5 alert\(s\) queued, the most --outbox-max allows: alert (\w+)/g;
is_deeply(\@start, [$ids[5]],
          'one warning when dropping begins, naming the first dropped');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
like($t->alertd_log, qr/stopped: 5 alert\(s\) queued, \d+ group\(s\) open, 7 alert\(s\) dropped/,
     'the stop line counts the dropped alerts');

my $st = decode_json($t->read_file($t->state . '/offset') || '{}');
my ($rec) = @{$st->{dropped} // []};
is($rec && $rec->{count}, 7, 'the state file holds the count, 7');
is($rec && $rec->{sink}, $dead_key, 'for the dead sink');
is($rec && $rec->{dropped}{critical}, 2, 'two of them critical');
is($rec && $rec->{dropped}{first_id}, $ids[5], 'the first dropped');
is($rec && $rec->{dropped}{last_id}, $ids[11], 'the last dropped');


# --- restarted while the sink is still down: the count goes on

$t->alertd(@cap);
ok($t->log_has(qr/warning: webhook \S+: 7 alert\(s\) \(2 critical\) not queued since /),
   'the restart says what is dropped and not told yet');

my @more;
for my $i (1 .. 3) {
    push @more, $t->alert(reason => "more$i");
    $t->wait_for(sub { $t->delivered($ok, $more[-1]) });
}
ok($t->delivered($ok, @more), 'the healthy sink gets the new alerts');
ok($t->log_has(qr/alert \Q$more[2]\E: .*dropped for 1\b/),
   'the dead sink drops them');
is(scalar(dead_files($dead_key)), 5, 'still 5 queued for the dead sink');

# a crash: the count saved with the journal position, or the lines read
# again, either way counted once
kill 'KILL', $t->alertd_pid;
$t->reap($t->alertd_pid);


# --- the sink recovers; restarted once more

# the sink is back before alertd starts again, and a restart keeps no
# backoff: its first attempt is taken, and the rest follow at once, so
# this wait does not follow a backoff
$t->write_file($until, '');
$t->alertd(@cap);

my @want = (@ids[0 .. 4]);
ok($t->wait_for(sub {
       (grep { ($_->{json}{kind} // '') eq 'alerts_dropped' }
             $t->accepted($dead))
       && $t->delivered($dead, @want);
   }, 60),
   'after recovery the dead sink gets its 5 alerts and a report');

my @acc = $t->accepted($dead);
my @reports = grep { ($_->{json}{kind} // '') eq 'alerts_dropped' } @acc;
is(scalar(AlertdTest::uniq(map { $_->{id} } @reports)), 1, 'one report');
my $r = $reports[0]{json} // {};
is($r->{count}, 10, 'it counts the 10 dropped alerts, across the restarts');
is($r->{severity}, 'critical', 'critical, since critical ones were lost');
is($r->{dropped}{critical}, 2, 'two of them critical');
is($r->{dropped}{first_id}, $ids[5], 'it names the first dropped');
is($r->{dropped}{last_id}, $more[2], 'and the last');
is($r->{reason}, 'outbox_full', 'reason outbox_full');
is($r->{client}, undef, 'no client');
like($r->{id} // '', qr/^dropped~\Q$dead_key\E-\d+$/,
     'its id names the sink and when dropping began');

# the order: the alert that showed the sink is back, then the report,
# then the rest of the queue
my @order = map { $_->{id} } @acc;
is_deeply([AlertdTest::uniq(@order)], [$ids[0], $r->{id}, @ids[1 .. 4]],
          'the report goes out as soon as the sink has room, ahead of '
          . 'the rest');

my %want = map { $_ => 1 } @want, $r->{id};
is(scalar(grep { !$want{$_} } @order), 0,
   'no dropped alert reached the dead sink');
is(scalar(grep { ($_->{json}{kind} // '') eq 'alerts_dropped' }
           $t->accepted($ok)), 0, 'the healthy sink gets no report');

ok($t->log_has(qr/warning: webhook \S+: 10 alert\(s\) \(2 critical\) were not queued for it while its outbox was full, from \S+ \(alert \Q$ids[5]\E\) to \S+ \(alert \Q$more[2]\E\)/),
   'the summary is logged when dropping ends');

ok($t->wait_for(sub { scalar($t->outbox) == 0 }), 'the outbox drains');

# back to normal: a new alert is queued and delivered, the count is gone
my $after = $t->alert(reason => 'after');
ok($t->wait_for(sub { $t->delivered($dead, $after) }),
   'a new alert reaches the recovered sink');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
$st = decode_json($t->read_file($t->state . '/offset') || '{}');
ok(!exists $st->{dropped}, 'nothing dropped is left in the state file');


# --- a full sink folds a queued group's later repeats into it

my $u = AlertdTest->new;
my $s2 = $u->secret('hook', 'cap-test-secret-0123456789abcdef');
my $until2 = $u->dir . '/recovers';
my $hook = $u->receiver(secret => $s2, fail_until => $until2);
my $am = $u->receiver(secret => $s2, fail_until => $until2);
$u->policy({ webhook => $hook->{url}, secret => 'hook' },
           { alertmanager => "http://127.0.0.1:$am->{port}" });
$u->alertd('--outbox-max', '3', '--repeat-interval', '1s');

# in alert time, a backlog: group A opens, B opens, A's first window
# ends with one repeat (A-1: the sink is full), C opens (dropped), A's
# second and third windows end with one repeat each (folded into A-1)
my $t0 = time - 100;
my ($a1, $la1) = $u->alert_line(reason => 'ra',
                                time => AlertdTest::now_rfc3339($t0));
my ($b1, $lb1) = $u->alert_line(reason => 'rb',
                                time => AlertdTest::now_rfc3339($t0));
my (undef, $la2) = $u->alert_line(reason => 'ra',
                                  time => AlertdTest::now_rfc3339($t0 + 0.2));
my (undef, $la3) = $u->alert_line(reason => 'ra',
                                  time => AlertdTest::now_rfc3339($t0 + 1.5));
my ($c1, $lc1) = $u->alert_line(reason => 'rc',
                                time => AlertdTest::now_rfc3339($t0 + 1.6));
my (undef, $la4) = $u->alert_line(reason => 'ra',
                                  time => AlertdTest::now_rfc3339($t0 + 2.5));
# a line claiming to be alertd's own report is not taken from the journal
my ($forged, $lf) = $u->alert_line(kind => 'alerts_dropped',
                                   reason => 'outbox_full');
$u->append($la1 . $lb1 . $la2 . $la3 . $lc1 . $la4 . $lf);

ok($u->log_has(qr/folded alert \Q$a1\E~3 into \Q$a1\E~1, queued for webhook /),
   'the third folded alert is folded into the queued first one');
ok($u->alertd_log =~ /folded alert \Q$a1\E~2 into \Q$a1\E~1, queued for webhook /,
   'so is the second');
ok($u->alertd_log =~ /dropped \(outbox full\): alert \Q$c1\E/,
   'a new group is dropped');
like($u->alertd_log, qr/skipped a malformed line: unknown "kind" "alerts_dropped"/,
     'a journal line of kind alerts_dropped is refused');
is(scalar($u->outbox), 6, '3 alerts queued for each of the two sinks');

# The sinks recover while alertd runs: each tries again when its backoff
# ends.  A sink that failed n times waits up to 2^(n-1) s (full jitter),
# 5 minutes at the most, and how often these failed before the file
# was written depends on how fast the machine got here.  One deadline
# of the cap and the generous wait for both: only a broken alertd
# reaches it, and the waits end as soon as the deliveries are there.
$u->write_file($until2, '');
my $deadline = time + 300 + $AlertdTest::WAIT;

ok($u->wait_for(sub { $u->delivered($hook, $a1, $b1, "$a1~1") },
                $deadline - time),
   'after recovery: A, B and the folded A-1');
my %h = map { $_->{id} => $_->{json} } $u->accepted($hook);
is($h{"$a1~1"}{count}, 3, 'A-1 counts the three folded repeats');
is($h{"$a1~1"}{window}, 3, 'over three windows');
ok($h{"$a1~1"}{folded}, 'and is a folded alert');
ok(!grep({ /^\Q$a1\E~[23]$/ } keys %h), 'no A-2 or A-3 of their own');
my ($rep) = grep { ($_->{kind} // '') eq 'alerts_dropped' } values %h;
is($rep && $rep->{count}, 1, 'the report counts the one dropped alert');
is($rep && $rep->{dropped}{first_id}, $c1, 'C');
is($rep && $rep->{severity}, 'warning', 'none critical: a warning');
ok(!$h{$c1} && !$h{$forged}, 'C and the forged line are not delivered');

# Alertmanager gets the report under an alert name of its own
ok($u->wait_for(sub {
       grep { $_->{status} =~ /^2/ && $_->{body} =~ /AirlockAlertsDropped/ }
            $u->records($am)
   }, $deadline - time), 'Alertmanager gets the report');
my ($amr) = map { @{$_->{json} // []} }
            grep { $_->{status} =~ /^2/ && $_->{body} =~ /AirlockAlertsDropped/ }
            $u->records($am);
is($amr->{labels}{alertname}, 'AirlockAlertsDropped', 'alertname');
is($amr->{labels}{reason}, 'outbox_full', 'reason label');
is($amr->{annotations}{count}, '1', 'count annotation');
is($amr->{annotations}{first_id}, $c1, 'first_id annotation');
like($amr->{annotations}{summary}, qr/^1 alerts \(0 critical\) were not sent here/,
     'a summary');

# the other directories' logs, as done() checks the first's
for my $o ($v, $u) {
    $o->cleanup;
    my @bad;
    for my $f (glob($o->dir . '/*.log'), glob($o->dir . '/*.err')) {
        push @bad, grep { /AddressSanitizer|LeakSanitizer|runtime error:/ }
                   split /\n/, $o->read_file($f);
    }
    is(join("\n", @bad), '', 'no sanitizer reports in ' . $o->dir);
}

$t->done;
