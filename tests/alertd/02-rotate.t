#!/usr/bin/perl
# The journal is rotated (rename + new file) and truncated under alertd,
# and rotated while alertd is stopped: every alert is delivered once.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

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

$t->append('');                 # the journal exists before alertd starts
$t->alertd;

my $a = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'first alert');

# logrotate: rename, nginx still writes the old inode until it reopens
rename $j, "$j.1" or die;
my $b = alert_to("$j.1");
ok($t->wait_for(sub { $t->delivered($r, $b) }),
   'a line written to the renamed file before the reopen is delivered');

# nginx reopens: a new file under the name
my $c = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $c) }),
   'the new file is followed');
like($t->alertd_log, qr/was rotated/, 'the rotation is logged');

# a worker that reopens late still writes a line to the old file
my $d = alert_to("$j.1");
ok($t->wait_for(sub { $t->delivered($r, $d) }),
   'a late line in the rotated file is delivered');

my $e = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $e) }),
   'the new file is still followed');

# copytruncate: the file shrinks under us
truncate $j, 0 or die;
ok($t->log_has(qr/was truncated/),
   'the truncation is noticed');
my $f = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $f) }),
   'after truncation the file is read from the start');

# the file is removed and created again
unlink $j or die;
my $g = alert_to($j);
ok($t->wait_for(sub { $t->delivered($r, $g) }),
   'a journal removed and created again is followed');

# rotated while alertd is stopped: the old inode is found beside the name
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');
my $h = alert_to($j);
rename $j, "$j.2" or die;
my $i = alert_to($j);
$t->alertd;
ok($t->wait_for(sub { $t->delivered($r, $h, $i) }),
   'rotated while stopped: the rest of the old file and the new file');
like($t->alertd_log, qr/rotated while alertd was stopped: finishing \S+\.2/,
     'and it says so');

# every id exactly once, nothing else: alertd has read the journal and
# sent what it queued
ok($t->settle && $t->drained($r), 'alertd is done');
my @got = map { $_->{id} } $t->accepted($r);
is_deeply([sort @got], [sort @all], 'each alert delivered exactly once');
is(scalar(grep { !$_->{verified} } $t->records($r)), 0,
   'every request verified');

$t->done;
