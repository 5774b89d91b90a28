#!/usr/bin/perl
# A zone line (nginx made its deny zone anew) read while Alertmanager is
# down: the quarantine and the alert that ends it wait in the outbox,
# the latter on disk with the time it ends, survive a restart of alertd,
# and are posted in that order once Alertmanager is up, the second with
# endsAt at the zone line's time.
#
# The Alertmanager is the receiver fixture, failing until a file exists.
# Nothing is timed.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use JSON::PP;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $up = $t->dir . '/up';
my $secret = $t->secret('hook', 'zone-queued-secret-FAKE-0123456789abcdef');
my $am = $t->receiver(secret => $secret, fail_until => $up);
$t->policy({ alertmanager => "http://127.0.0.1:$am->{port}" });

sub at { AlertdTest::now_rfc3339(@_) }

$t->alertd('--repeat-interval', '1m', '--poll-interval', '1h');

my $now = time;
my $q = $t->alert(kind => 'quarantine', severity => 'critical',
                  client => 'agent', reason => 'no_route',
                  time => at($now), quarantine_until => at($now + 3600));
my $zone = at(time);
$t->append(qq({"type":"zone","time":"$zone","zone":"airlock",)
           . qq("state":"new"}\n));

ok($t->wait_for(sub { $t->log_count(qr/queued lifted alert \Q$q\E~lifted/) }),
   'the quarantine and its end are queued while Alertmanager is down');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stops');

my ($file) = grep { /~lifted\.json$/ } $t->outbox;
ok($file, 'the end waits in the outbox');
my $entry = $file
    ? JSON::PP->new->decode($t->read_file($t->state . "/outbox/$file"))
    : {};
is($entry->{alert}{lifted}, $zone, '... with the time it ends');

$t->write_file($up, '');
$t->alertd('--repeat-interval', '1m', '--poll-interval', '1h');

my @posts;
ok($t->wait_for(sub {
    @posts = grep { ($_->{annotations}{id} // '') =~ /^\Q$q\E/ }
             map { ref $_->{json} eq 'ARRAY' ? $_->{json}[0] : () }
             grep { ($_->{status} // 0) =~ /^2/ } $t->records($am);
    @posts >= 2;
}), 'both are posted once Alertmanager is up');
is($posts[0] && $posts[0]{annotations}{id}, $q, 'the quarantine first');
is($posts[1] && $posts[1]{annotations}{id}, "$q~lifted", '... then its end');
is($posts[1] && $posts[1]{endsAt}, $zone,
   '... ending at the zone line\'s time');
is_deeply($posts[1] && $posts[1]{labels}, $posts[0] && $posts[0]{labels},
          '... the same alert');

$t->done;
