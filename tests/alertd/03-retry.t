#!/usr/bin/perl
# Sinks that fail (500, a dropped connection, 400, down, failing until told
# otherwise, too slow to answer) get every alert once they recover, each id
# at least once and nothing else; a healthy sink beside them is not held up.
#
# Nothing is timed.  The slow sink answers after an hour and alertd's
# attempt timeout is an hour (--attempt-timeout 1h): within the test only
# a stop can end an attempt to it.  That the healthy sink is not held up
# is shown by what it has while the others still fail: one is down, one
# fails until told otherwise, and the slow one's first attempt is still
# in flight.  That a stop does not wait for a slow attempt is shown by
# the log: SIGTERM cuts it short.  That an attempt times out is shown
# after a restart with --attempt-timeout 1s: the timeout is then the
# only thing that can end the slow sink's attempt, and the test waits
# for it to say so, and for the attempt after it.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'a-test-secret-of-some-length-0123456789');

my %r;
$r{e500} = $t->receiver(secret => $secret, fail => 3);
$r{close} = $t->receiver(secret => $secret, fail => 2, fail_mode => 'close');
$r{e400} = $t->receiver(secret => $secret, fail => 1, fail_mode => 400);
$r{until} = $t->receiver(secret => $secret,
                         fail_until => $t->dir . '/until-ok');
$r{ok} = $t->receiver(secret => $secret);
$r{slow} = $t->receiver(secret => $secret, delay => 3600);

# a sink that is down: nothing listens on its port yet
my $down_port = AlertdTest::free_port();
my $down_url = "http://127.0.0.1:$down_port/hook";

# the healthy sink last: a sink that held up the ones after it would hold
# up this one; -v logs each attempt as it starts
$t->policy((map { { webhook => $r{$_}{url}, secret => 'hook' } }
            qw(slow e500 close e400 until)),
           { webhook => $down_url, secret => 'hook' },
           { webhook => $r{ok}{url}, secret => 'hook' });

$t->alertd('--poll-interval', '1h', '--attempt-timeout', '1h', '-v');
like($t->alertd_log, qr/\binfo: started .*, attempt timeout 3600000 ms,/,
     'alertd says an attempt may take an hour');

my @ids = map { $t->alert(reason => "reason$_") } 1 .. 5;

# the slow sink is first in the policy: its attempt starts before the
# healthy sink's first one
ok($t->wait_for(sub { $t->delivered($r{ok}, @ids) }),
   'the healthy sink gets every alert while the others fail: one down, '
   . 'one failing until told otherwise');
ok($t->in_flight($r{slow}{url}),
   'and the slow sink\'s first attempt is still in flight');

# each failing sink has failed before it recovers
ok($t->log_has(qr/\Q${\ AlertdTest::label($down_url)}\E: alert \w+ not delivered: /),
   'down: an attempt failed');
ok($t->wait_for(sub {
       grep { $_->{status} eq '500' } $t->records($r{until})
   }), 'until: an attempt was answered 500');
$r{down} = $t->receiver(secret => $secret, port => $down_port);
$t->write_file('until-ok', '');

# A sink that failed n times waits up to 2^(n-1) s before it tries
# again (full jitter), 5 minutes at the most.  How often "down" and
# "until" failed before they recovered depends on how fast the machine
# got here, and so does their wait; it is not longer than the cap.  One
# deadline for all five: a broken alertd fails them in that time.
my $deadline = time + 300 + $AlertdTest::WAIT;
for my $k (qw(e500 close e400 until down)) {
    ok($t->wait_for(sub { $t->delivered($r{$k}, @ids) },
                    $deadline - time),
       "$k: every alert delivered after recovery");
}

# exactly the ids written: retries repeat an id, never invent one
my %want = map { $_ => 1 } @ids;
for my $k (sort keys %r) {
    my @rec = $t->records($r{$k});
    my @bad = grep { !defined $_->{id} || !$want{$_->{id}} } @rec;
    is(scalar(@bad), 0, "$k: no request with an unexpected id");
    is(scalar(grep { !$_->{verified} } @rec), 0, "$k: every one verified");
    next if $k eq 'slow';
    my @acc = map { $_->{id} } $t->accepted($r{$k});
    is_deeply([sort(AlertdTest::uniq(@acc))], [sort @ids],
              "$k: the accepted ids are the alerts written");
}

# the slow sink never answers, so it records nothing: its attempts are
# in alertd's log
my @tried = $t->alertd_log
            =~ /\bsending alert (\w+) to webhook \Q$r{slow}{label}\E /g;
ok(@tried && !grep({ !$want{$_} } @tried),
   'slow: tried, and only with the ids written');

is(scalar(grep { $_->{status} eq '500' } $t->records($r{e500})), 3,
   'e500: three answers were 500');
is(scalar(grep { $_->{status} eq 'closed' } $t->records($r{close})), 2,
   'close: two connections were dropped');
ok(scalar(grep { $_->{status} eq '500' } $t->records($r{until})) >= 1,
   'until: it failed before it was told to stop failing');

my $log = $t->alertd_log;
like($log, qr/warning: webhook \S+: alert \w+ not delivered: HTTP 500 /,
     '500 is logged as a warning');
like($log, qr/not delivered: .*(Empty reply|Couldn't connect)/,
     'a dropped connection or refused connect is logged');
like($log, qr/error: webhook \S+ refused alert \w+ with HTTP 400\b.*retrying/,
     '400 is logged as an error, and retried');

# stopping does not wait for the slow sink's attempt to end: SIGTERM
# while one is in flight (started, not ended) cuts it short
unlike($t->alertd_log, qr/\Q$r{slow}{label}\E: alert \w+ not delivered/,
       'the slow sink\'s first attempt has not ended');
ok($t->in_flight($r{slow}{url}), 'it is in flight');
# (stop() gives up after its generous wait, and the status is undef)
my $st = $t->stop($t->alertd_pid, 'TERM');
ok(defined $st && $st == 0, 'SIGTERM with an attempt in flight: exit 0');
my ($stop) = $t->alertd_log =~ /(\binfo: SIGTERM: stopping.*)\z/s;
like($stop // '', qr/^info: SIGTERM: stopping, [1-9]\d* attempt\(s\) in /,
     'the stop sees the attempt in flight');
like($stop // '', qr/alert \w+ to \Q$r{slow}{label}\E: attempt cut short /,
     'and cuts the slow sink\'s attempt short');
unlike($stop // '', qr/\Q$r{slow}{label}\E: alert \w+ not delivered/,
       'rather than wait for it to end');
ok(scalar($t->outbox) >= 5, 'the slow sink\'s alerts stay queued');

# an attempt that takes too long times out, and the sink tries again:
# with --attempt-timeout 1s the timeout is the only thing that can end
# an attempt to the slow sink
my $sent = qr/\bdebug: sending alert \w+ to webhook \Q$r{slow}{label}\E \(/;
my $timed = qr/\Q$r{slow}{label}\E: alert \w+ not delivered: .*timed out/;
ok($t->log_more($timed, sub {
       $t->alertd('--poll-interval', '1h', '--attempt-timeout', '1s', '-v');
   }), 'restarted with --attempt-timeout 1s: the slow sink\'s attempt '
       . 'times out') or diag($t->alertd_log);
ok($t->wait_for(sub { $t->alertd_log =~ /$timed.*\n(?s:.*)$sent/ }),
   'and is tried again');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');

$t->done;
