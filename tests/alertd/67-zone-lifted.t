#!/usr/bin/perl
# nginx keeps the quarantines in its deny zone; when it makes the zone
# anew (a restart, a reload that renames or resizes it) every quarantine
# is lifted, and it writes one journal line of type "zone", state "new".
# A quarantine sent to Alertmanager that ends after that line's time is
# sent again with the same labels and endsAt at that time, resolved;
# one that ended before is not sent again, nor is one sent again twice,
# nor is a webhook sent anything.  alertd restarted between the
# quarantine and the zone line still knows it.
#
# The Alertmanager and the webhook are the receiver fixture, which
# records the bodies posted to it.  Nothing is timed.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'zone-test-secret-FAKE-0123456789abcdef');
my $am = $t->receiver(secret => $secret);
my $hook = $t->receiver(secret => $secret);
$t->policy({ alertmanager => "http://127.0.0.1:$am->{port}" },
           { webhook => $hook->{url}, secret => 'hook' });

sub at { AlertdTest::now_rfc3339(@_) }
sub am_posts {
    my ($prefix) = @_;
    return grep {
        ($_->{annotations}{id} // '') =~ /^\Q$prefix\E/
    } map { ref $_->{json} eq 'ARRAY' ? $_->{json}[0] : () }
      $t->records($am);
}

$t->alertd('--repeat-interval', '1m', '--poll-interval', '1h');

my $now = time;
my $live = $t->alert(kind => 'quarantine', severity => 'critical',
                     client => 'agent', reason => 'no_route',
                     time => at($now), quarantine_until => at($now + 3600));
my $over = $t->alert(kind => 'quarantine', severity => 'critical',
                     client => 'agent', reason => 'method_not_allowed',
                     time => at($now - 7200),
                     quarantine_until => at($now - 3600));

ok($t->wait_for(sub { am_posts($live) && am_posts($over) }),
   'both quarantines are posted to Alertmanager');
ok($t->wait_for(sub { $t->delivered($hook, $live, $over) }),
   '... and to the webhook');
my ($first) = am_posts($live);

$t->stop($t->alertd_pid);
$t->alertd('--repeat-interval', '1m', '--poll-interval', '1h');

my $zone = at(time);
$t->append(qq({"type":"zone","time":"$zone","zone":"airlock",)
           . qq("state":"new"}\n));

ok($t->wait_for(sub { grep { $_->{annotations}{lifted} } am_posts($live) }),
   'the running quarantine is posted again once the zone is made anew');
my ($lifted) = grep { $_->{annotations}{lifted} } am_posts($live);
$lifted //= {};
is($lifted->{endsAt}, $zone, '... ending when the zone was made');
is($lifted->{startsAt}, $first->{startsAt}, '... from when it began');
is_deeply($lifted->{labels}, $first->{labels},
          '... with its labels: the same alert');
is($t->log_count(qr/lifted alert/), 1,
   'the quarantine that had ended is not posted again');
ok(!grep({ /lifted/ } $t->outbox), 'the webhook is queued nothing');

# a second zone line: the quarantine was resolved already
$t->append(qq({"type":"zone","time":"${\ at(time)}","zone":"airlock",)
           . qq("state":"new"}\n));
my $after = $t->alert(kind => 'quarantine', severity => 'critical',
                      client => 'agent', reason => 'body_too_large',
                      time => at(time), quarantine_until => at(time + 3600));
ok($t->wait_for(sub { am_posts($after) }),
   'a quarantine after the zone line is posted');
is(scalar(am_posts($live)), 2, 'the lifted one is not posted a third time');
ok(!grep({ ($_->{id} // '') =~ /lifted/
           || ($_->{json}{lifted} // '') ne '' } $t->records($hook)),
   'the webhook was sent nothing of the lift');

$t->done;
