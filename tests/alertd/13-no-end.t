#!/usr/bin/perl
# A receiver that answers 200 and never ends the body has taken the
# alert: the status is the answer.  The attempt times out reading the
# body, the alert counts as delivered, once, with a note in the log,
# and the alert queued behind it on the same sink is sent next.
#
# Nothing is timed.  The receiver never ends a body, so only the attempt
# timeout can end an attempt; it is 15 s (--attempt-timeout 15s), far more
# than a status takes to come back over loopback, and the test waits for
# alertd to say the attempt ended rather than for a clock.  The two
# alerts are written in one go, so alertd queues both before it sends
# either: that the second waits for the first is shown by the order of
# events (-v: it is sent only after the first is logged as delivered),
# not by catching the first attempt in flight.  (Were a 200 to reach
# alertd later than the timeout, that attempt would be a failure; the
# test says so apart from the checks of the body's handling.)

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'no-end-test-secret-0123456789abcdef');

# every answer is unended
my $r = $t->receiver(secret => $secret, no_end => 100);

$t->policy({ webhook => $r->{url}, secret => 'hook' });
$t->alertd('--attempt-timeout', '15s', '-v');
like($t->alertd_log, qr/\binfo: started .*, attempt timeout 15000 ms,/,
     'alertd says an attempt may take 15 s');

# each attempt ends by its timeout (15 s); a wait for one allows that
# too, beside the generous one
my $wait = 15 + $AlertdTest::WAIT;

my ($one, $l1) = $t->alert_line(reason => 'no-end-one');
my ($two, $l2) = $t->alert_line(reason => 'no-end-two');
$t->append($l1 . $l2);

my $sent_two = qr/\bdebug: sending alert \Q$two\E to webhook /;
my $got_one = qr/\bdelivered alert \Q$one\E to webhook \S+ \(HTTP 200, /
            . qr/attempt 1, \d+ ms; the answer's body was not read to /
            . qr/its end: .*timed out/;
$got_one = qr/$got_one/;

ok($t->log_has(qr/\Q$r->{label}\E: alert \S+ not delivered: |$got_one/,
               $wait), 'the first attempt ends');
unlike($t->alertd_log, qr/\Q$r->{label}\E: alert \S+ not delivered: /,
       'not as a failure (a 200 later than the 15 s timeout would be one)')
    or diag($t->alertd_log);
like($t->alertd_log, $got_one,
     'the first is delivered at its first attempt, the unended body logged');
# the second's "sending" line may come a moment after the first's
# "delivered": wait for it before reading the order
$t->log_has($sent_two, $wait);
like($t->alertd_log, qr/$got_one.*\n(?s:.*)$sent_two/,
     'the second is sent after it, not beside it');

ok($t->wait_for(sub { $t->delivered($r, $two) }, $wait),
   'the alert queued behind it is sent too');
ok($t->log_has(qr/delivered alert \Q$two\E to webhook \S+ \(HTTP 200, /
               . qr/attempt 1, \d+ ms; the answer's body was not read to /,
               $wait),
   'the second is delivered at its first attempt');

my @rec = $t->records($r);
is(scalar(grep { $_->{id} eq $one } @rec), 1, 'the first was sent once');
is(scalar(grep { $_->{id} eq $two } @rec), 1, 'the second was sent once');
ok(!grep({ !$_->{unended} } @rec), 'every answer was unended');
unlike($t->alertd_log, qr/not delivered/, 'no attempt counted as failed');
ok($t->wait_for(sub { scalar($t->outbox) == 0 }),
   'the outbox is empty');

$t->done;
