#!/usr/bin/perl
# An alert that one sink's full outbox drops while another sink cannot
# queue it (its file cannot be written: a full disk, an I/O error) is
# tried again as a whole, a second later.  The drop must be counted
# once, also when other alerts are read and dropped in between: the
# retry of a group's folded alert comes after the journal's new lines.
#
# The write that fails is made to fail by a directory where alertd
# writes the file before it renames it into place (.tmp-NAME): the
# test knows the name, the sink key and the folded alert's id, and
# takes the directory away when alertd has tried again after a later
# alert.  The windows are in the alerts' own time: no time passes.
#
# A failure that repeats is an error line when it begins, not at every
# try; B, queued for the sink that is up in between, ends it (said so),
# and A-1 failing after it begins another, said again.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Digest::SHA qw(sha256_hex);
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $d = $t->dir;
my $secret = $t->secret('hook', 'emit-retry-secret-0123456789abcdef');
my $hour = 3600;

# the down sink holds its first attempt (an hour) and so its queue, with
# no failure and no backoff to wait for once it is back
my $down = $t->receiver(secret => $secret, delay => 3600);
my $ok = $t->receiver(secret => $secret);
$t->policy({ webhook => $down->{url}, secret => 'hook' },
           { webhook => $ok->{url}, secret => 'hook' });
$t->alertd('--outbox-max', '2', '--repeat-interval', '1h',
           '--attempt-timeout', '1h');

my $key = substr(sha256_hex("webhook\n$ok->{url}"), 0, 16);

# X and Y fill the down sink's outbox; the other sink takes them
my $x = $t->alert(reason => 'rx');
my $y = $t->alert(reason => 'ry');
ok($t->wait_for(sub { $t->delivered($ok, $x, $y) }), 'X and Y are queued, '
   . 'and sent to the sink that is up');
ok($t->wait_for(sub {
       my @f = $t->outbox;
       @f == 2 && !grep { /^\Q$key\E-/ } @f
   }), '... which has none left');

# A and a repeat, an hour and a half ago: A-1 is made at once (the
# window is over by the clock), dropped for the full sink, and cannot
# be written for the other
my $t0 = time - $hour - 1800;
my ($a, $la) = $t->alert_line(reason => 'ra',
                              time => AlertdTest::now_rfc3339($t0));
my (undef, $lr) = $t->alert_line(reason => 'ra',
                                 time => AlertdTest::now_rfc3339($t0 + 1));
my $block = $t->state . "/outbox/.tmp-$key-$a~1.json";
mkdir $block or die "mkdir $block: $!";

my $fail = qr/\berror: cannot queue alert \Q$a\E~1 in the outbox/;
ok($t->log_more($fail, sub { $t->append($la . $lr) }),
   'A-1 cannot be queued for the sink that is up')
    or diag($t->alertd_log);

# B is read, and dropped, before A-1 is tried again
my $b;
ok($t->log_more($fail, sub { $b = $t->alert(reason => 'rb') }),
   'B is read, then A-1 is tried again and fails again');
my $over = qr/\binfo: queueing alerts in the outbox works again, after /
           . qr/\d+ failure\(s\)/;
like($t->alertd_log, qr/$over(?s:.*)alert \Q$b\E: (?s:.*)$fail/,
     '... in that order: queueing B ended the failure, said');

rmdir $block or die "rmdir: $!";
ok($t->wait_for(sub { $t->delivered($ok, $a, "$a~1", $b) }),
   'the sink that is up gets A, A-1 and B once the file can be written');

# the down sink comes back: the report of A, A-1 and B, X and Y
$t->stop($down->{pid}, 'TERM');
my $back = $t->receiver(secret => $secret, port => $down->{port});
ok($t->drained($back, $ok), 'everything queued is delivered');
my ($rep) = grep { ($_->{json}{kind} // '') eq 'alerts_dropped' }
            $t->accepted($back);
ok($rep, 'the down sink is told what it missed');
is($rep && $rep->{json}{count}, 3, 'A, A-1 and B, each counted once')
    or diag($rep && $rep->{body});
is($rep && $rep->{json}{dropped}{first_id}, $a, 'from A on');

$t->done;
