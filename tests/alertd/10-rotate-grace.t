#!/usr/bin/perl
# A rotated journal is read for --rotate-grace (5 s) more for the lines
# a worker writes before it reopens its log.  That grace survives a
# restart (the rotated file's position is saved with the current one
# while it lasts), and a second rotation within it: late lines are
# delivered either way.  When the grace is over alertd says so, the
# rotated file leaves the saved position, and a line written to it
# after that is not read.
#
# Nothing is timed.  Where the grace must last, it is an hour: within
# the test's generous waits nothing but a restart or a rotation changes
# what alertd reads.  Where it must end, it is 1 s, and the test waits
# for the line saying it is over before it writes a late line, then
# checks that line was not read once alertd has been round its loop
# since (settle) and sent what it queued (drained).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use JSON::PP;
use Test::More;

my $t = AlertdTest->new;
my $whsec = 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0';
my $r = $t->receiver(secret => $t->secret('hook', $whsec));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my $j = $t->journal;
my @long = ('--rotate-grace', '1h');
my @short = ('--rotate-grace', '1s');
my $over = 'stopped reading the rotated journal \(inode \d+\) at offset '
         . '\d+: its grace of 1000 ms is over';
$over = qr/\binfo: $over$/m;
my @all;

# distinct reasons: no grouping gets in the way
my $n = 0;
sub alert_to {
    my ($path) = @_;
    my ($id, $line) = $t->alert_line(reason => 'r' . ++$n);
    $t->append($line, $path);
    push @all, $id;
    return $id;
}

# a line no alertd may read: not in @all
sub late_to {
    my ($path) = @_;
    my ($id, $line) = $t->alert_line(reason => 'late' . ++$n);
    $t->append($line, $path);
    return $id;
}

sub state {
    return $t->saved_state;
}

sub restart {
    my (@opt) = @_;
    is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
    return $t->alertd(@opt);
}

$t->append('');
$t->alertd(@long);
like($t->alertd_log, qr/\binfo: started .*, rotation grace 3600000 ms,/,
     'alertd says the grace is an hour');

my $a = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'first alert');

# 1. rotated, then alertd restarted within the grace
rename $j, "$j.1" or die;
my $b = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $b) }), 'new file followed');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0,
   'stopped within the grace (systemctl restart)');
ok(state()->{rotated}, 'the rotated file is in the saved position');

my $c = alert_to("$j.1");       # a worker that has not reopened yet
$t->alertd(@long);
ok($t->wait_for(sub { $t->delivered($r, $c) }),
   'a line written to the rotated file while alertd was stopped')
    or diag($t->alertd_log);

my $d = alert_to("$j.1");
ok($t->wait_for(sub { $t->delivered($r, $d) }),
   'and one written after the restart, within the grace');

# 2. the grace ends: after a restart that resumes it, and after a
#    rotation seen live; a late line after either is not read
ok($t->log_more($over, sub { restart(@short) }),
   'restarted with a grace of 1 s: the rotated file\'s resumed grace ends')
    or diag($t->alertd_log);
my $x = late_to("$j.1");
my $e = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $e) && !state()->{rotated} }),
   'the grace over, the rotated file leaves the saved position');

ok($t->log_more($over, sub {
       rename $j, "$j.1" or die;
       my $f = alert_to($j);
       ok($t->wait_for(sub { $t->delivered($r, $f) }), 'rotated again');
   }), 'the grace of a rotation seen live ends');
my $y = late_to("$j.1");
my $g = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $g) }), 'the new file is read');

ok($t->settle && $t->drained($r), 'alertd has read both late lines\' files '
   . 'since, and sent what it queued');
for my $late ($x, $y) {
    unlike($t->alertd_log, qr/\balert \Q$late\E\b/,
           'a line written to the rotated file after its grace is not read');
}

# 3. rotated twice within the grace; a late line in the first rotated
#    file lands before alertd looks (SIGSTOP makes sure of it)
restart(@long);
rename $j, "$j.1" or die;
my $h = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $h) }), 'rotated again');
kill 'STOP', $t->alertd_pid;
my $i = alert_to("$j.1");
rename "$j.1", "$j.2" or die;
rename $j, "$j.1" or die;
my $k = alert_to($j);
kill 'CONT', $t->alertd_pid;
ok($t->wait_for(sub { $t->delivered($r, $i, $k) }),
   'a late line in a file rotated twice within its grace')
    or diag($t->alertd_log);

# every id exactly once, nothing else: alertd has read the journal and
# sent what it queued
ok($t->settle && $t->drained($r), 'alertd is done');
my @got = map { $_->{id} } $t->accepted($r);
is_deeply([sort @got], [sort @all], 'each alert delivered exactly once');

$t->done;
