#!/usr/bin/perl
# A receiver that answers 200 and never ends the body has taken the
# alert: the status is the answer.  The attempt times out reading the
# body (10 s), the alert counts as delivered, once, with a note in the
# log, and the alert queued behind it on the same sink is sent next.

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
$t->alertd;

my $one = $t->alert(reason => 'no-end-one');
ok($t->wait_for(sub { scalar($t->records($r)) >= 1 }),
   'the first alert is sent');
my $two = $t->alert(reason => 'no-end-two');

ok($t->wait_for(sub { $t->delivered($r, $two) }, 30),
   'the alert queued behind it is sent too');
ok($t->log_has(qr/delivered alert \Q$one\E to webhook \S+ \(HTTP 200, /
               . qr/attempt 1, \d+ ms; the answer's body was not read to /
               . qr/its end: .*timed out/),
   'the first is delivered at its first attempt, the unended body logged');
ok($t->log_has(qr/delivered alert \Q$two\E to webhook /),
   'the second is delivered');

my @rec = $t->records($r);
is(scalar(grep { $_->{id} eq $one } @rec), 1, 'the first was sent once');
is(scalar(grep { $_->{id} eq $two } @rec), 1, 'the second was sent once');
ok(!grep({ !$_->{unended} } @rec), 'every answer was unended');
unlike($t->alertd_log, qr/not delivered/, 'no attempt counted as failed');
ok($t->wait_for(sub { scalar($t->outbox) == 0 }),
   'the outbox is empty');

$t->done;
