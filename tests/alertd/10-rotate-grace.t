#!/usr/bin/perl
# A rotated journal is read for 5 s more for the lines a worker writes
# before it reopens its log.  That grace survives a restart (the rotated
# file's position is saved with the current one while it lasts), and a
# second rotation within it: late lines are delivered either way.

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

# distinct reasons: no grouping gets in the way
my $n = 0;
sub alert_to {
    my ($path) = @_;
    my ($id, $line) = $t->alert_line(reason => 'r' . ++$n);
    $t->append($line, $path);
    push @all, $id;
    return $id;
}

sub state {
    return $t->saved_state;
}

$t->append('');
$t->alertd;

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
$t->alertd;
ok($t->wait_for(sub { $t->delivered($r, $c) }),
   'a line written to the rotated file while alertd was stopped')
    or diag($t->alertd_log);

my $d = alert_to("$j.1");
ok($t->wait_for(sub { $t->delivered($r, $d) }),
   'and one written after the restart, within the grace');

sleep 5.5;                      # time has to pass: the grace ends
my $e = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $e) && !state()->{rotated} }),
   'the grace over, the rotated file leaves the saved position');

# 2. rotated twice within the grace; a late line in the first rotated
#    file lands before alertd looks (SIGSTOP makes sure of it)
rename $j, "$j.1" or die;
my $f = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $f) }), 'rotated again');
kill 'STOP', $t->alertd_pid;
my $g = alert_to("$j.1");
rename "$j.1", "$j.2" or die;
rename $j, "$j.1" or die;
my $h = alert_to($j);
kill 'CONT', $t->alertd_pid;
ok($t->wait_for(sub { $t->delivered($r, $g, $h) }),
   'a late line in a file rotated twice within its grace')
    or diag($t->alertd_log);

# every id exactly once, nothing else: alertd has read the journal and
# sent what it queued
ok($t->settle && $t->drained($r), 'alertd is done');
my @got = map { $_->{id} } $t->accepted($r);
is_deeply([sort @got], [sort @all], 'each alert delivered exactly once');

$t->done;
