#!/usr/bin/perl
# Sinks that fail (500, a dropped connection, 400, down, failing until told
# otherwise, too slow to answer) get every alert once they recover, each id
# at least once and nothing else; a healthy sink beside them is not held up.
#
# Nothing is timed.  That the healthy sink is not held up is shown by
# what it has while the others still fail: one is down, one fails until
# told otherwise, and the slow one's first attempt has not ended (it
# answers after 30 s, so only alertd's 10 s attempt timeout ends it).
# That a stop does not wait for a slow attempt is shown by the log: with
# an attempt in flight, SIGTERM cuts it short, it does not time out.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'a-test-secret-of-some-length-0123456789');

my %r;
$r{e500} = $t->receiver(secret => $secret, fail => 3);
$r{close} = $t->receiver(secret => $secret, fail => 2, fail_mode => 'close');
$r{e400} = $t->receiver(secret => $secret, fail => 1, fail_mode => 400);
$r{until} = $t->receiver(secret => $secret,
                         fail_until => $t->dir . '/until-ok');
$r{ok} = $t->receiver(secret => $secret);
$r{slow} = $t->receiver(secret => $secret, delay => 30);

# a sink that is down: nothing listens on its port yet
my $down_port = AlertdTest::free_port();
my $down_url = "http://127.0.0.1:$down_port/hook";

# the healthy sink last: a sink that held up the ones after it would hold
# up this one; -v logs each attempt as it starts
$t->policy((map { { webhook => $r{$_}{url}, secret => 'hook' } }
            qw(slow e500 close e400 until)),
           { webhook => $down_url, secret => 'hook' },
           { webhook => $r{ok}{url}, secret => 'hook' });

$t->alertd('--poll-interval', '1h', '-v');

my @ids = map { $t->alert(reason => "reason$_") } 1 .. 5;

ok($t->wait_for(sub { $t->delivered($r{ok}, @ids) }),
   'the healthy sink gets every alert while the others fail: one down, '
   . 'one failing until told otherwise');
unlike($t->alertd_log, qr/\Q$r{slow}{url}\E: alert \w+ not delivered/,
       'and the slow sink\'s first attempt has not ended yet');

# each failing sink has failed before it recovers
ok($t->log_has(qr/\Q$down_url\E: alert \w+ not delivered: /),
   'down: an attempt failed');
ok($t->wait_for(sub {
       grep { $_->{status} eq '500' } $t->records($r{until})
   }), 'until: an attempt was answered 500');
$r{down} = $t->receiver(secret => $secret, port => $down_port);
$t->write_file('until-ok', '');

# generous: a sink that failed for a while waits up to twice as long
# before it tries again (full jitter), 5 minutes at the most
for my $k (qw(e500 close e400 until down)) {
    ok($t->wait_for(sub { $t->delivered($r{$k}, @ids) }, 120),
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

# the slow sink's attempt times out (10 s) and is retried
ok($t->log_has(qr/:$r{slow}{port}\S*: alert \w+ not delivered: .*timed out/,
               60), 'an attempt that takes too long times out');

# stopping does not wait for the slow sink's attempt to end: SIGTERM
# while one is in flight (started, not ended) cuts it short
ok($t->wait_for(sub { $t->in_flight($r{slow}{url}) }, 60),
   'the slow sink is tried again: an attempt in flight');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'SIGTERM with an attempt in '
   . 'flight: exit 0');
my ($stop) = $t->alertd_log =~ /(\binfo: SIGTERM: stopping.*)\z/s;
like($stop // '', qr/^info: SIGTERM: stopping, [1-9]\d* attempt\(s\) in /,
     'the stop sees the attempt in flight');
like($stop // '', qr/alert \w+ to \Q$r{slow}{url}\E: attempt cut short /,
     'and cuts the slow sink\'s attempt short');
unlike($stop // '', qr/\Q$r{slow}{url}\E: alert \w+ not delivered/,
       'rather than wait for it to time out');
ok(scalar($t->outbox) >= 1, 'the slow sink\'s alerts stay queued');

$t->done;
