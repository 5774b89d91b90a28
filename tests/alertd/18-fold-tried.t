#!/usr/bin/perl
# A full outbox folds a group's later repeats into the folded alert it
# has queued for the sink only while no attempt has sent that alert: an
# attempt that failed after the request went out (the connection closed
# before the answer, a timeout) may have reached the receiver, which then
# has the id, and drops the same id sent again with the counts added.
# One id is one body, whatever the retries; a repeat that cannot be
# folded is dropped and counted, and the sink told, as any other.
#
# Time has to pass: the group window is 5 s (--repeat-interval), and
# the test waits for alertd's log and the receiver's records, not for
# a time.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(sleep time);

my $t = AlertdTest->new;
my $d = $t->dir;
my $secret = $t->secret('hook', 'fold-tried-secret-0123456789abcdef');
my $up = "$d/up";

$t->write_file($up, '');
my $r = $t->receiver(secret => $secret, fail_until => $up,
                     fail_mode => 'close');
$t->policy({ webhook => $r->{url}, secret => 'hook' });
$t->alertd('--outbox-max', '1', '--repeat-interval', '5s');

# A opens its group and is delivered; a repeat inside the window, with
# the sink now closing every connection before it answers
my $a1 = $t->alert(reason => 'ra');
ok($t->wait_for(sub { $t->delivered($r, $a1) }), 'A is delivered');
unlink $up;
$t->alert(reason => 'ra');

# the window ends: A-1 is queued, the outbox is full, and A-1 is sent:
# the receiver reads all of it and closes the connection
ok($t->wait_for(sub { grep { ($_->{id} // '') eq "$a1~1" } $t->records($r) }),
   'A-1 reaches the receiver, which closes without an answer');
ok($t->log_has(qr/alert \Q$a1\E~1 not delivered/), '... a failure to alertd');

# a repeat in the next window: A-2 when it ends
$t->alert(reason => 'ra');
my $a2 = qr/folded alert \Q$a1\E~2 into|outbox full\): folded alert \Q$a1\E~2:/;
ok($t->log_has($a2), 'A-2 comes while A-1 waits');
unlike($t->alertd_log, qr/folded alert \Q$a1\E~2 into \Q$a1\E~1/,
       '... and is not folded into A-1, which the receiver may have');
like($t->alertd_log, qr/dropped \(outbox full\): folded alert \Q$a1\E~2:/,
     '... it is dropped and counted');

# the sink recovers
$t->write_file($up, '');
ok($t->wait_for(sub { $t->delivered($r, "$a1~1") },
                300 + $AlertdTest::WAIT),
   'after recovery: A-1');
my $rep;
ok($t->wait_for(sub {
       ($rep) = grep { ($_->{json}{kind} // '') eq 'alerts_dropped' }
                $t->accepted($r);
       $rep
   }), '... and the report of what was dropped');
is($rep && $rep->{json}{dropped}{first_id}, "$a1~2", '... A-2');

# every id the receiver saw came with one body
my %bodies;
for my $rec ($t->records($r)) {
    next unless defined $rec->{id};
    $bodies{$rec->{id}}{$rec->{body}} = 1;
}
my @two = grep { keys %{$bodies{$_}} > 1 } sort keys %bodies;
is("@two", '', 'no id was sent with two different bodies');

$t->done;
