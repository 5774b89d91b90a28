#!/usr/bin/perl
# A sink removed by one reload and added back by the next while an
# attempt to it is in flight.  The attempt goes on (the entry stays
# queued for a sink that may come back), so the sink, back, still has
# it in flight: it must not start a second attempt beside it.  A sink
# sends its queue one alert at a time, in order, and backs off on the
# result of its one attempt.
#
# Nothing is timed: the receiver answers the first alert 200 and never
# ends the body, and the attempt timeout is an hour, so the first
# attempt is in flight until the receiver goes away.  With -v every
# attempt is logged as it starts: a second attempt would be logged in
# the round of the reload that adds the sink back, which is over once
# alertd has been round its loop after it (settle).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'reload-in-flight-secret-0123456789ab');

my $r = $t->receiver(secret => $secret, no_end => 1);
my $with = $t->read_file($t->policy({ webhook => $r->{url},
                                      secret => 'hook' }));
my $pid = $t->alertd('--attempt-timeout', '1h', '-v');

my ($one, $l1) = $t->alert_line(reason => 'in-flight-one');
my ($two, $l2) = $t->alert_line(reason => 'in-flight-two');
$t->append($l1 . $l2);

ok($t->wait_for(sub { grep { $_->{id} eq $one } $t->records($r) }),
   'the first alert is sent, its answer never ends');
ok($t->in_flight($r->{url}), '... its attempt is in flight');

# the sink goes, and comes back
$t->policy();
ok($t->log_more(qr/\breloaded .*: 0 sink\(s\)/, sub { kill 'HUP', $pid }),
   'reloaded without the sink');
$t->write_file('policy.yaml', $with);
ok($t->log_more(qr/\breloaded .*: 1 sink\(s\)/, sub { kill 'HUP', $pid }),
   'reloaded with it again');
ok($t->settle, 'alertd went round its loop after it');

unlike($t->alertd_log, qr/\bsending alert \Q$two\E /,
       'no second attempt to the sink while its first is in flight')
    or diag($t->alertd_log);

# the receiver goes away: the 200 it sent delivered the first alert;
# another on its port takes the second
$t->stop($r->{pid}, 'TERM');
is(scalar(grep { $_->{id} eq $two } $t->records($r)), 0,
   '... the receiver that holds the first did not get the second');
ok($t->log_has(qr/\bdelivered alert \Q$one\E /), 'the first is delivered');
my $r2 = $t->receiver(secret => $secret, port => $r->{port});
ok($t->log_has(qr/\bdelivered alert \Q$two\E /, 300 + $AlertdTest::WAIT),
   'then the second');
ok($t->delivered($r2, $two), '... to the receiver that came next');
ok($t->drained($r, $r2), 'nothing is left');
is($t->logged_deliveries($r->{url}), 2, 'each delivered once');

$t->done;
