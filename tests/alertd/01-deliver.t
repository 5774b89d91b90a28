#!/usr/bin/perl
# airlock-alertd delivers journal alerts to webhooks, signed the Standard
# Webhooks way; deny lines and malformed lines are skipped; a partial last
# line waits for its end.
#
# Delivery is driven by the journal write: alertd runs with
# --poll-interval 1h, so an alert that reaches the webhooks within the
# test's (generous) wait was read because its write woke alertd, not
# because a timer came round.  No latency is measured.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Digest::SHA qw(hmac_sha256);
use JSON::PP;
use MIME::Base64 qw(encode_base64 decode_base64);
use Test::More;

my $t = AlertdTest->new;

# two webhooks: one with a "whsec_" secret (the key is its base64 part),
# one with a raw secret (the key is its bytes)
my $key = join '', map { chr int rand 256 } 1 .. 32;
my $whsec = 'whsec_' . encode_base64($key, '');
my $raw = 'raw-secret-' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 24);

my $r1 = $t->receiver(secret => $t->secret('hook_whsec', $whsec));
my $r2 = $t->receiver(secret => $t->secret('hook_raw', "$raw\n"));

$t->policy({ webhook => $r1->{url}, secret => 'hook_whsec' },
           { webhook => $r2->{url}, secret => 'hook_raw' });

# nginx writes the journal; it may not exist yet when alertd starts
my @opt = ('--poll-interval', '1h');
$t->alertd(@opt);
like($t->alertd_log, qr/, poll interval 3600000 ms,/,
     'alertd polls the journal once an hour only');

$t->append($t->deny_line);
my $id = $t->alert(client => 'agent', route => 'prom', count => 5,
                   sample => 'GET /x');

ok($t->wait_for(sub { $t->delivered($r1, $id) && $t->delivered($r2, $id) }),
   'an alert line reaches both webhooks, read when its write woke alertd '
   . '(the poll is an hour away)');

my ($rec) = $t->accepted($r1);
my ($rec2) = $t->accepted($r2);

ok($rec && $rec->{verified}, 'whsec_ secret: the receiver verifies it');
ok($rec2 && $rec2->{verified}, 'raw secret: the receiver verifies it');
ok($rec && $rec->{timestamp_ok}, 'webhook-timestamp is now');
is($rec->{id}, $id, 'webhook-id is the journal alert id');
is($rec->{content_type}, 'application/json', 'Content-Type');
like($rec->{user_agent}, qr{^airlock-alertd/\d}, 'User-Agent');
is($rec->{path}, '/hook', 'POSTed to the sink URL');

# our own check of the signature, independent of the receiver
sub sign {
    my ($k, $r) = @_;
    return 'v1,' . encode_base64(
        hmac_sha256("$r->{id}.$r->{timestamp}.$r->{body}", $k), '');
}
is($rec->{signature}, sign($key, $rec), 'signature: HMAC-SHA256 under the '
   . 'base64-decoded whsec_ key');
is($rec2->{signature}, sign($raw, $rec2), 'signature: HMAC-SHA256 under '
   . 'the raw secret bytes (one trailing newline of the file dropped)');

my $b = $rec->{json};
is_deeply([sort keys %$b],
          [sort qw(id time kind severity client reason route count window
                   sample source)], 'body members');
is($b->{source}, 'airlock', 'source is airlock');
is($b->{kind}, 'deny_threshold', 'kind');
is($b->{severity}, 'warning', 'severity');
is($b->{client}, 'agent', 'client');
is($b->{route}, 'prom', 'route');
is($b->{reason}, 'no_route', 'reason');
is($b->{count}, 5, 'count');
is($b->{window}, 60, 'window');
is($b->{sample}, 'GET /x', 'sample');

# malformed lines, deny lines and unknown types are skipped, not fatal
$t->append("this is not json\n");
$t->append("[1,2,3]\n");
$t->append("{\"type\":\"alert\",\"time\":\"2026-01-01T00:00:00Z\"}\n");
$t->append("{\"type\":\"alert\",\"id\":\"../../etc\",\"time\":\"x\"}\n");
$t->append("{\"type\":\"stats\",\"n\":1}\n");
$t->append("{\"time\":\"2026-01-01T00:00:00Z\",\"reason\":\"path\"}\n");
$t->append($t->deny_line x 3);
$t->append("\n");
my $q = $t->alert(kind => 'quarantine', severity => 'critical',
                  client => undef, reason => 'client_unknown',
                  count => 20, quarantine_until => '2026-12-01T00:10:00Z');

ok($t->wait_for(sub { $t->delivered($r1, $q) }),
   'an alert after malformed lines is delivered');
my ($qr) = grep { $_->{id} eq $q } $t->accepted($r1);
is($qr->{json}{client}, undef, 'client null stays null');
is($qr->{json}{route}, undef, 'route null stays null');
is($qr->{json}{quarantine_until}, '2026-12-01T00:10:00Z',
   'quarantine_until is passed on');
is($qr->{json}{severity}, 'critical', 'quarantine severity');

# a long sample is cut at 512 bytes, on a UTF-8 character boundary
my $long = $t->alert(reason => 'long', sample => "GET /" . ("\x{e9}" x 600));
ok($t->wait_for(sub { $t->delivered($r1, $long) }),
   'an alert with a long sample is delivered');
my ($lr) = grep { $_->{id} eq $long } $t->accepted($r1);
my $sample = $lr->{json}{sample} // '';
ok(length($sample) > 200, 'with its sample');
{
    use bytes;
    ok(length($sample) <= 512, 'cut to at most 512 bytes');
}
like($sample, qr/^GET \/\x{e9}+$/, 'whole characters only');

my $log = $t->alertd_log;
my $bad = () = $log =~ /skipped a malformed line/g;
is($bad, 5, 'each malformed line (the empty one too) is logged once');
like($log, qr/offset \d+: skipped a malformed line: not JSON/,
     'the log says where and why');
is(scalar(grep { 1 } $t->records($r1)), 3,
   'only alert lines were sent (no deny, no malformed)');

# a partial last line is not consumed until its newline arrives (settle:
# alertd has read the journal since the half line was written)
my ($pid_, $line) = $t->alert_line(client => 'agent', reason => 'method');
my $half = int(length($line) / 2);
$t->append(substr($line, 0, $half));
ok($t->settle, 'alertd has read the journal with half a line at its end');
ok(!$t->delivered($r1, $pid_), 'half a line is not delivered');
is(scalar($t->records($r1)), 3, 'nor anything else');
$t->append(substr($line, $half));
ok($t->wait_for(sub { $t->delivered($r1, $pid_) }),
   'the completed line is delivered');

# and a partial line survives a restart: the offset stays at its start
my ($pid2, $line2) = $t->alert_line(client => 'agent', reason => 'path');
$t->append(substr($line2, 0, 20));
ok($t->settle, 'alertd has read the start of a line');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
$t->append(substr($line2, 20));
$t->alertd(@opt);
ok($t->wait_for(sub { $t->delivered($r1, $pid2) }),
   'a line completed while alertd was stopped is delivered after start');

ok($t->wait_for(sub { !$t->outbox }), 'the outbox is empty again');

# each id exactly once per receiver
for my $r ($r1, $r2) {
    my @ids = map { $_->{id} } $t->accepted($r);
    is(scalar(@ids), scalar(AlertdTest::uniq(@ids)),
       "$r->{name}: every id once");
}

# secrets never reach the log
$log = $t->alertd_log;
unlike($log, qr/\Q$raw\E/, 'the raw secret is not logged');
unlike($log, qr/\Q$whsec\E/, 'the whsec_ secret is not logged');

is($t->stop($t->alertd_pid, 'INT') >> 8, 0, 'SIGINT: exit 0');
like($t->alertd_log, qr/stopped: 0 alert\(s\) queued/, 'stop is logged');

my $state = decode_json($t->read_file($t->state . '/offset'));
is($state->{offset}, -s $t->journal, 'the saved offset is the journal end');
is($state->{ino}, (stat $t->journal)[1], 'and names its inode');

$t->done;
