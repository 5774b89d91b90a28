#!/usr/bin/perl
# The journal rotated (renamed) while alertd runs, and the rotated file
# it still reads cannot be read (an I/O error) when alertd stops reading
# it: its grace over, or a second rotation within it.  The lines after
# its offset were dropped without a word (the grace's end was said, as
# after a complete read).  They are now said lost, with the file and the
# offset; the new journal is read meanwhile, as before.
#
#   1. the rotated file fails until its grace (1 s here) is over;
#   2. a second rotation within the grace (an hour) while it fails (to
#      journal.0 here: the failing file keeps its name).
#
# The failure is made for real: pread() on the rotated file (the path of
# its descriptor ends with .1 once renamed) fails with EIO through the
# fault injector (lib/fault.c, LD_PRELOAD) while the test holds it on.
# alertd is held (SIGSTOP) over the rotation, so that the line written
# before it is read from the rotated file.  Nothing is timed: the test
# waits for the log's lines.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $env = $t->fault('pread', (split m{/}, $j)[-1] . '.1', 5);

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'F' x 32));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my @args = ('--verbose', '--repeat-interval', '1h', '--poll-interval',
            '1s');
my $lost = qr/\bwarning: the rotated journal \(inode \d+\) could not be /
           . qr/read at offset \d+ and is no longer read \(([^)]*)\): /
           . qr/lines written to it after the offset were not read/;
my @all;

sub alert {
    my ($reason) = @_;
    my ($id, $line) = $t->alert_line(reason => $reason);
    $t->append($line);
    return $id;
}

# held over it: a line alertd has not read, the journal renamed to .1
# (the failure on) and a line written to a new one
sub rotate {
    my ($unread, $after) = @_;
    kill 'STOP', $t->alertd_pid;
    my $b = alert($unread);
    rename $j, "$j.1" or die "rename: $!";
    $t->fault_on;
    my $c = alert($after);
    push @all, $c;
    kill 'CONT', $t->alertd_pid;
    return ($b, $c);
}


# 1. the grace ends while the rotated file fails

$t->alertd_env($env, @args, '--rotate-grace', '1s');
my $a = alert('ra');
push @all, $a;
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'A is delivered');
ok($t->settle, 'alertd has read everything so far');

my ($b, $c) = rotate('rb', 'rc');
ok($t->wait_for(sub { $t->delivered($r, $c) }),
   'C, in the new journal, is delivered')
    or diag($t->alertd_log);
ok($t->log_has(qr/\berror: reading the rotated journal \(inode \d+, was (?#
                  )\Q$j\E\) at offset \d+: Input/),
   'the failed read is said, with the rotated file')
    or diag($t->alertd_log);
ok($t->log_has($lost), 'once its grace is over, the lines after the '
   . 'offset are said lost')
    or diag($t->alertd_log);
my ($why) = $t->alertd_log =~ $lost;
is($why, 'its grace is over', 'and why');
unlike($t->alertd_log, qr/ends with an incomplete line/,
       'they are not taken for an incomplete line');
ok(!$t->delivered($r, $b), 'B is not delivered');
$t->fault_off;


# 2. rotated again within the grace while the rotated file fails

ok($t->settle, 'alertd has read everything so far');
is($t->stop($t->alertd_pid), 0, 'alertd stops');
unlink "$j.1" or die "unlink: $!";
$t->alertd_env($env, @args, '--rotate-grace', '1h');
ok($t->settle, 'restarted with a grace of an hour');

my ($d, $e) = rotate('rd', 're');
ok($t->wait_for(sub { $t->delivered($r, $e) }),
   'E, in the new journal, is delivered')
    or diag($t->alertd_log);
my $n = $t->log_count($lost);
rename $j, "$j.0" or die "rename: $!";   # the failing one stays .1
my $f = alert('rf');
push @all, $f;
ok($t->wait_for(sub { $t->log_count($lost) > $n }),
   'rotated again: the lines after the failing file\'s offset are said '
   . 'lost')
    or diag($t->alertd_log);
my @why = $t->alertd_log =~ /$lost/g;
is($why[-1], 'the journal was rotated again', 'and why');
$t->fault_off;
ok($t->wait_for(sub { $t->delivered($r, $f) }), 'F is delivered')
    or diag($t->alertd_log);
ok($t->settle && $t->drained($r), 'alertd is done');
ok(!$t->delivered($r, $d), 'D, in the file that failed, is not');
my %n;
$n{$_->{id}}++ for $t->accepted($r);
is(join(',', map { $n{$_} // 0 } @all), join(',', map { 1 } @all),
   'every other alert sent once');

$t->done;
