#!/usr/bin/perl
# copytruncate (copy the journal, then truncate it in place) when the
# journal grows back past the position before alertd looks: the file is
# the same inode and no shorter than the position, so only what comes
# before the position tells that it is another file.  Stopped and
# running, with lines alertd had not read yet left in the copy; and a
# state file from before the position had a fingerprint still loads.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);

my $t = AlertdTest->new;
my $whsec = 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0';
my $r = $t->receiver(secret => $t->secret('hook', $whsec));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my $j = $t->journal;
my @all;

# a line read twice would be folded into its group and hidden: with a
# short window the fold is sent, with an id the final check sees
my @opt = ('--repeat-interval', '1s');

# distinct reasons: no grouping gets in the way
my $n = 0;
sub lines {
    my ($count) = @_;
    my ($text, @ids) = ('');
    for (1 .. $count) {
        my ($id, $line) = $t->alert_line(reason => 'r' . ++$n);
        $text .= $line;
        push @ids, $id;
    }
    push @all, @ids;
    return ($text, @ids);
}

sub append_alerts {
    my ($count) = @_;
    my ($text, @ids) = lines($count);
    $t->append($text);
    return @ids;
}

# logrotate's copytruncate, then nginx goes on writing; more bytes than
# the position, so the file is never shorter than it
sub copytruncate {
    my ($count) = @_;
    system('cp', $j, "$j.1") == 0 or die "cp: $?";
    truncate $j, 0 or die "truncate: $!";
    return append_alerts($count);
}

sub stop {
    is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, $_[0]);
}

$t->append('');
$t->alertd(@opt);

my @first = append_alerts(5);
ok($t->wait_for(sub { $t->delivered($r, @first) }), 'first 5 delivered');

# 1. stopped; everything before the truncation had been read
stop('stopped');
my $size = -s $j;
my @after = copytruncate(8);
ok(-s $j > $size, 'the journal grew past the old position');
$t->alertd(@opt);
ok($t->wait_for(sub { $t->delivered($r, @after) }),
   'stopped: every alert written after the truncation is delivered')
    or diag($t->alertd_log);
like($t->alertd_log, qr/changed in place|truncated/,
     'and the truncation is logged');

# 2. stopped; two lines were written before the copy and never read
stop('stopped again');
my @unread = append_alerts(2);
@after = copytruncate(8);
$t->alertd(@opt);
ok($t->wait_for(sub { $t->delivered($r, @unread, @after) }),
   'stopped: the unread lines are taken from the copy, then the new file')
    or diag($t->alertd_log);
like($t->alertd_log, qr/finishing \S+\.1 from offset/,
     'and the copy is named');

# 3. running: alertd does not look between the truncation and the burst
#    (SIGSTOP makes sure of it)
ok($t->settle, 'alertd has read everything so far');
kill 'STOP', $t->alertd_pid;
@unread = append_alerts(1);
@after = copytruncate(8);
kill 'CONT', $t->alertd_pid;
ok($t->wait_for(sub { $t->delivered($r, @unread, @after) }),
   'running: the unread line from the copy and every new one delivered')
    or diag($t->alertd_log);

# 4. a state file written before the fingerprint existed still loads,
#    and alertd goes on from its position
ok($t->settle, 'alertd has read everything so far');
stop('stopped for the upgrade check');
my $json = JSON::PP->new->canonical;
my $state = $json->decode($t->read_file($t->state . '/offset'));
ok(exists $state->{print}, 'the state file has a fingerprint');
delete $state->{print};
delete $state->{rotated};
$t->write_file($t->state . '/offset', $json->encode($state));
my @late = append_alerts(2);
$t->alertd(@opt);
ok($t->wait_for(sub { $t->delivered($r, @late) }),
   'an old state file loads and alertd goes on from its position')
    or diag($t->alertd_log);

# every id exactly once, nothing else (and no fold of a line read twice:
# a line read again is a repeat in its own group, folded and sent when
# the window, 1 s, ends).  Time has to pass for the last window to end;
# then alertd, once it has been round its loop, has queued any such
# fold, and once drained has sent it
sleep 1.5;
ok($t->settle && $t->drained($r), 'alertd is done');
my @got = map { $_->{id} } $t->accepted($r);
is_deeply([sort @got], [sort @all], 'each alert delivered exactly once');

$t->done;
