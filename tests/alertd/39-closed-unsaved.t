#!/usr/bin/perl
# Groups closed while the state cannot be saved.
#
# A save that appends to offset.log says which groups closed since the
# last save: their keys, kept in memory until a save works.  While saves
# fail (a full disk, for hours) alertd goes on reading the journal, and
# every new peer opens a group whose window ends and closes it: the
# list grew by a key per group, without bound.  It now holds no more
# keys than groups are open (or 64): past that the next save writes the
# whole state to offset, which says the same in no more bytes, and the
# keys are let go, said once.
#
# With -v every failed save says what it holds for the next one (the
# groups open, changed and closed): the test reads the number of keys
# held from there.  An alertd without that line fails the first test on
# it, as one that holds a key per closed group fails the bound.
#
# The saves fail because a directory is where alertd writes the new
# state file before it renames it into place (STATE/.tmp-offset).  No
# sink: what an alert costs is its group, nothing else.  The windows
# are measured in the alerts' own time, so no time has to pass.  Once
# the directory is gone a save works: the groups on disk are the open
# ones, and after a kill -9 a repeat of a closed group is sent at once
# while one of an open group is folded.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $hour = 3600;
my $batch = 600;

my $t = AlertdTest->new;
$t->policy();
$t->append('');

my $st = $t->state;
my $block = "$st/.tmp-offset";
mkdir $st or die "mkdir: $!";
mkdir $block or die "mkdir $block: $!";

my @opt = ('-v', '--repeat-interval', '1h', '--poll-interval', '1h');
$t->alertd(@opt);

my $old = AlertdTest::now_rfc3339(time - 2 * $hour);

sub peer_alert {
    my ($peer, $time) = @_;
    return $t->alert_line(client => undef, reason => 'no_route',
                          peer => $peer, time => $time // $old);
}

sub sent {
    my ($id) = @_;
    return $t->log_has(qr/no sinks for alert \Q$id\E: /);
}

# the most keys of closed groups a failed save held, and the count of
# lines that say it
sub held {
    my ($most, $n) = (0, 0);
    for ($t->alertd_log =~ /held for the next save: (.*)$/mg) {
        $n++;
        $most = $1 if /, (\d+) closed$/ && $1 > $most;
    }
    return ($most, $n);
}

# two open groups, then batches of peers whose windows ended an hour
# ago: each opens a group that the end of the read closes
my (undef, $l1) = peer_alert('10.2.0.1', AlertdTest::now_rfc3339());
my ($k2, $l2) = peer_alert('10.2.0.2', AlertdTest::now_rfc3339());
$t->append($l1 . $l2);
ok(sent($k2), 'two groups open');
ok($t->log_has(qr/\berror: cannot save /), 'the state cannot be saved');

my @closed;
for my $b (1 .. 2) {
    my ($text, $last) = ('');
    for my $i (1 .. $batch) {
        my ($id, $line) = peer_alert(sprintf('10.3.%d.%d', $b, $i));
        $text .= $line;
        $last = $id;
    }
    push @closed, sprintf('10.3.%d.1', $b);

    # each try: an error line the first time, then now and then, and
    # with -v a debug line the others
    my $fail = qr/\b(?:error|debug): cannot save /;
    my $before = $t->log_count($fail);
    $t->append($text);
    ok(sent($last), "batch $b: $batch new peers read");
    ok($t->wait_for(sub { $t->log_count($fail) > $before + 1 }),
       "batch $b: a failed save since");
}

my ($most, $lines) = held();
ok($lines > 0, 'a failed save says what it holds') or diag($t->alertd_log);
cmp_ok($most, '<=', 64, "at most 64 keys of closed groups held, not "
       . 2 * $batch);
like($t->alertd_log, qr/held for the next save: 2 alert group\(s\) open, .*it writes them all/,
     'the next save writes the whole state');
is($t->log_count(qr/\binfo: \d+ alert groups closed since the last save/),
   1, 'said once');

# saves work again
rmdir $block or die "rmdir: $!";
ok($t->wait_for(sub { -s "$st/offset" }), 'saved once it can be');
ok($t->wait_for(sub { (eval { $t->saved_state } // {})->{offset} // -1
                          == -s $t->journal }),
   'the position saved is the journal\'s end');
my @peers = sort map { $_->{last}{peer} } @{$t->saved_state->{groups}};
is("@peers", '10.2.0.1 10.2.0.2', 'the groups saved are the open ones');

# a crash: what is on disk is all there is
kill 'KILL', $t->alertd_pid;
$t->reap($t->alertd_pid);
$t->alertd(@opt);
like($t->alertd_log, qr/started .*, 2 group\(s\) open,/,
     'restarted with the two open groups');

my ($r1, $m1) = peer_alert('10.2.0.1', AlertdTest::now_rfc3339());
my ($r2, $m2) = peer_alert($closed[0]);
my ($r3, $m3) = peer_alert($closed[1], AlertdTest::now_rfc3339());
$t->append($m1 . $m2 . $m3);
ok(sent($r2) && sent($r3), 'a repeat of a closed group is sent at once');
ok(!$t->log_has(qr/no sinks for alert \Q$r1\E: /, 0),
   'a repeat of an open group is folded, not sent');

$t->done;
