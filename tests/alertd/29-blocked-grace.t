#!/usr/bin/perl
# A rotated journal's grace ending while alertd is blocked (an alert of
# the rotated file cannot be queued: here a directory where its outbox
# file is written) does not make alertd spin.  Its poll timeout was the
# grace's deadline, passed, so 0, while its loop did nothing until the
# block's retry: a CPU at 100% for as long as queueing kept failing (a
# full disk).  The CPU alertd uses while blocked is read from
# /proc/PID/stat across two retries (a second apart): spinning, it is
# about all of that time; waiting, next to none.
#
# Only the first failure, and one now and then, is an error line; each
# try is a line with -v (a debug line): they are what is counted here.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use POSIX ();
use Test::More;

my $t = AlertdTest->new;
my $d = $t->dir;
my $up = "$d/up";
my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'D' x 32),
                     fail_until => $up);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

$t->append('');
$t->alertd('--rotate-grace', '2s', '--verbose');

# the sink is down: A stays queued, and its file names the sink's key
my $a = $t->alert(reason => 'ra');
my $file;
ok($t->wait_for(sub { ($file) = grep { /-\Q$a\E\.json$/ } $t->outbox;
                      defined $file }), 'A is queued');
(my $key = $file) =~ s/-\Q$a\E\.json$//;

# rotated: C in the new file is read once alertd follows it, and the
# rotated one is then read for its grace (2 s); B, written there within
# it, cannot be queued
my $j = $t->journal;
rename $j, "$j.1" or die "rename: $!";
my ($b, $line) = $t->alert_line(reason => 'rb');
my $block = $t->state . "/outbox/.tmp-$key-$b.json";
mkdir $block or die "mkdir $block: $!";
my $c = $t->alert(reason => 'rc');
ok($t->wait_for(sub { grep { /-\Q$c\E\.json$/ } $t->outbox }),
   'rotated: C, in the new file, is queued');
$t->append($line, "$j.1");

my $fail = qr/\b(?:error|debug): cannot queue alert \Q$b\E/;
ok($t->wait_for(sub { $t->log_count($fail) >= 4 }),
   'B, in the rotated file, cannot be queued; tried again past the grace')
    or diag($t->alertd_log);

sub cpu {
    my @f = split ' ', $t->read_file('/proc/' . $t->alertd_pid . '/stat');
    return ($f[13] + $f[14]) / POSIX::sysconf(POSIX::_SC_CLK_TCK());
}

my $n = $t->log_count($fail);
my $c0 = cpu();
ok($t->wait_for(sub { $t->log_count($fail) >= $n + 2 }),
   'two more tries');
my $used = cpu() - $c0;
cmp_ok($used, '<', 0.5, 'alertd waits between them, it does not spin')
    or diag("CPU: $used s");

cmp_ok($t->log_count(qr/\berror: cannot queue alert \Q$b\E/), '<',
       $t->log_count($fail), 'not every try is an error line');

rmdir $block or die "rmdir: $!";
ok($t->log_has(qr/\binfo: queueing alerts in the outbox works again, /
               . qr/after \d+ failure\(s\)/),
   'queueing B works again: said');
$t->write_file($up, '');
ok($t->wait_for(sub { $t->delivered($r, $b) }, 330),
   'B is queued and delivered once it can be');

$t->done;
