#!/usr/bin/perl
# alertd killed with SIGKILL mid-delivery, and at random moments while
# alerts arrive: after a restart every alert is delivered; an alert may
# come twice, and then only with the same webhook-id.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(sleep time);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'crash-test-secret-0123456789abcdef');

# a slow receiver: each answer takes 5 s; -v logs each attempt as it
# starts
my $slow = $t->receiver(secret => $secret, delay => 5);
$t->policy({ webhook => $slow->{url}, secret => 'hook' });
$t->alertd('-v');

my @ids = map { $t->alert(reason => "slow$_") } 1 .. 6;
ok($t->wait_for(sub { $t->in_flight($slow->{url}) }),
   'the first attempt is in flight');

kill 'KILL', $t->alertd_pid;
$t->reap($t->alertd_pid);
pass('alertd killed with SIGKILL while an attempt was in flight');

ok(scalar($t->outbox) >= 5, 'the undelivered alerts are in the outbox: '
   . scalar($t->outbox));

# the same receiver comes back fast
$t->stop($slow->{pid}, 'TERM');
my $fast = $t->receiver(secret => $secret, port => $slow->{port});
$t->alertd;

ok($t->wait_for(sub {
       my %got = map { $_->{id} => 1 }
                 $t->accepted($slow), $t->accepted($fast);
       !grep { !$got{$_} } @ids;
   }), 'after the restart every alert is delivered');

my @acc = map { $_->{id} } $t->accepted($slow), $t->accepted($fast);
my %want = map { $_ => 1 } @ids;
is(scalar(grep { !$want{$_} } @acc), 0, 'no unexpected ids');
is_deeply([sort(AlertdTest::uniq(@acc))], [sort @ids],
          'the set of ids received is the set written');
diag(sprintf '%d deliveries for %d alerts', scalar(@acc), scalar(@ids));

# SIGKILL at random moments while alerts are written
my @more;
srand(42);
for my $round (1 .. 4) {
    for (1 .. 5) {
        push @more, $t->alert(reason => "round${round}_$_",
                              client => "c$round");
        sleep rand(0.05);
    }
    sleep rand(0.3);
    kill 'KILL', $t->alertd_pid;
    $t->reap($t->alertd_pid);
    $t->alertd;
}

ok($t->wait_for(sub { $t->delivered($fast, @more) }),
   'alerts written around four SIGKILLs are all delivered');

ok($t->drained($slow, $fast), 'every delivery alertd made is recorded');
my @all = (@ids, @more);
%want = map { $_ => 1 } @all;
@acc = map { $_->{id} } $t->accepted($slow), $t->accepted($fast);
is(scalar(grep { !$want{$_} } @acc), 0, 'still no unexpected ids');
is_deeply([sort(AlertdTest::uniq(@acc))], [sort @all],
          'the set of ids received is the set written');
is(scalar(grep { !$_->{verified} } $t->records($slow), $t->records($fast)),
   0, 'every request verified');
ok($t->wait_for(sub { !$t->outbox }), 'the outbox drains');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'a clean stop at the end');

$t->done;
