#!/usr/bin/perl
# A sink gets its queue in the order the alerts were queued, also after
# a restart that follows a step back of the wall clock: an alert queued
# while the clock was an hour ahead holds a "queued" time an hour after
# those queued once it was set right, and the outbox, read back at
# start, was sorted on that time, so the older alert went last.  The
# order is the queue's own sequence number.
#
# The step is not made to the machine's clock: the first alert's file
# is given the "queued" time an alertd an hour ahead would have written.
# Nothing is timed: each step waits for files, log lines or deliveries.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use JSON::PP;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'order-test-secret-0123456789abcdef');
my $until = $t->dir . '/until-ok';
my $r = $t->receiver(secret => $secret, fail_until => $until);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my @hour = ('--repeat-interval', '1h', '--poll-interval', '1h');
my $json = JSON::PP->new->canonical;

$t->alertd(@hour);
my @ids = map { $t->alert(reason => "order-$_") } 1 .. 3;
ok($t->wait_for(sub { scalar($t->outbox) == 3 }), 'three queued');
ok($t->log_has(qr/alert \Q$ids[0]\E not delivered/),
   'the sink is down');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');

# the first was queued by a clock an hour ahead of the others'
my %file = map { /-(\w+)\.json$/ ? ($1 => $_) : () } $t->outbox;
my $path = $t->state . "/outbox/$file{$ids[0]}";
my $o = $json->decode($t->read_file($path));
my $later = $json->decode($t->read_file($t->state
                                        . "/outbox/$file{$ids[2]}"));
$o->{queued} = $later->{queued} + 3600 * 1000;
$t->write_file($path, $json->encode($o));

$t->write_file($until, '');
$t->alertd(@hour);
ok($t->wait_for(sub { $t->delivered($r, @ids) }), 'all three delivered');
is(join(' ', map { $_->{id} } $t->accepted($r)), join(' ', @ids),
   'in the order they were queued');

$t->done;
