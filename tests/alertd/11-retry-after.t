#!/usr/bin/perl
# A sink's Retry-After is honoured up to the 5-minute cap: a small one as
# it is, a huge one (seconds that overflow when made milliseconds) as the
# cap, never as no wait at all.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'retry-after-test-secret-0123456789ab');

my $small = $t->receiver(secret => $secret, fail => 1, fail_mode => 503,
                         retry_after => 2);
my $huge = $t->receiver(secret => $secret, fail => 1, fail_mode => 503,
                        retry_after => '10000000000000000');

$t->policy({ webhook => $small->{url}, secret => 'hook' },
           { webhook => $huge->{url}, secret => 'hook' });
$t->alertd;

my $id = $t->alert(reason => 'retry-after');

ok($t->log_has(qr/\Q$small->{label}\E: alert \Q$id\E not delivered: HTTP 503 .*retrying in 2\.0 s/),
   'Retry-After: 2 is waited as it is');
ok($t->log_has(qr/\Q$huge->{label}\E: alert \Q$id\E not delivered: HTTP 503 .*retrying in 300\.0 s/),
   'a Retry-After past what milliseconds hold is the 5-minute cap');
ok($t->wait_for(sub { $t->delivered($small, $id) }),
   'the sink that asked for 2 s gets the alert after them');
ok(!$t->delivered($huge, $id), 'the other is not asked again yet');

$t->done;
