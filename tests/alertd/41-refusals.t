#!/usr/bin/perl
# Sinks that refuse alerts (a 4xx other than 408 and 429).
#
# 1. A refusal that quotes the webhook's URL does not put its secret in
#    the log.
#
# A sink that refuses an alert (a 4xx other than 408 and 429) has the
# start of its answer logged, for the operator who must fix the
# receiver.  Many servers' 404 and 405 pages quote the request
# ("Cannot POST /services/T0/B0/XXXX"), and a Slack or Teams webhook's
# path is its secret: that is why alertd logs a sink's URL as its label
# only (38-url-label.t).  The answer is now logged with every piece of
# the URL's path (and userinfo, should it have one) of 4 bytes or more
# replaced by "...", and so is the start of one that the 1024 bytes
# kept of the answer cut off, which the pieces taken out before it can
# bring into the 160 bytes logged.
#
# The receiver (AlertdTest::answering_server) answers 404 to every
# POST, "Cannot POST <target>", or, for an alert whose reason is "long",
# the target's last piece over and over (its 1024 bytes end inside
# one).
#
# 2. A receiver that refuses every alert (a wrong secret: 401) was sent
#    the whole queue one alert after another, each alert waiting only
#    its own backoff: with thousands queued, tens of requests and error
#    lines a second for as long as it lasted.  Two alerts refused in a
#    row now make the sink wait too, as a failure does, said in the
#    second refusal's line; an alert it takes ends that, and once it
#    takes them all, every alert is delivered.
#
# Nothing is timed: the test waits for the log lines and the deliveries
# (a wait that follows a sink's backoff allows its cap, 5 minutes).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $token = 'FAKEsecretTOKEN' . ('0123456789' x 4) . 'FAKEend';

my $t = AlertdTest->new;
$t->secret('hook', 'whsec_FAKE' . 'E' x 28);

my $port = $t->answering_server(sub {
    my ($target, $body) = @_;
    return ('404 Not Found', $body =~ /"reason":"long"/
                             ? ('/' . $token) x 30 : "Cannot POST $target");
});
ok($port, 'the receiver runs');

my $url = "http://127.0.0.1:$port/services/T0FAKE01/B0FAKE02/$token";
$t->policy({ webhook => $url, secret => 'hook' });
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

my $label = quotemeta AlertdTest::label($url);
my $a = $t->alert(reason => 'short');
ok($t->log_has(qr/\berror: webhook $label refused alert \Q$a\E with HTTP 404: Cannot POST /),
   'a refusal is logged with the answer') or diag($t->alertd_log);
like($t->alertd_log,
     qr{refused alert \Q$a\E with HTTP 404: Cannot POST /\.\.\./\.\.\./\.\.\./\.\.\. \(attempt},
     'the path in it is taken out');

my $b = $t->alert(reason => 'long');
ok($t->log_has(qr/refused alert \Q$b\E with HTTP 404: /),
   'an answer that repeats a piece of the URL');
my ($line) = $t->alertd_log =~ /^(.*refused alert \Q$b\E with HTTP 404: .*)$/m;
like($line // '', qr{HTTP 404: (?:/\.\.\.)+/? \(attempt},
     'each piece taken out, the one cut off at the end too');

my $log = $t->alertd_log;
for my $secret ($token, substr($token, 0, 12), 'T0FAKE01', 'B0FAKE02')
{
    unlike($log, qr/\Q$secret\E/, "the log does not hold $secret");
}

$t->done_logs;

# 2. every alert refused, until the receiver is fixed
my $u = AlertdTest->new;
my $up = $u->dir . '/up';
my $r = $u->receiver(secret => $u->secret('hook', 'whsec_FAKE' . 'F' x 28),
                     fail_until => $up, fail_mode => 401);
$u->policy({ webhook => $r->{url}, secret => 'hook' });
$u->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

my ($text, @ids) = ('');
for my $i (1 .. 8) {
    my ($id, $l) = $u->alert_line(reason => "r$i");
    $text .= $l;
    push @ids, $id;
}
$u->append($text);

my $refused = qr/\berror: webhook \S+ refused alert \w+ with HTTP 401\b/;
ok($u->log_has(qr/$refused.*; it refused the alert before too, and is sent nothing for \d+\.\d s: /),
   'a second refusal in a row: the sink waits too')
    or diag($u->alertd_log);
my ($first) = $u->alertd_log =~ /^(.*$refused.*)$/m;
unlike($first // '', qr/before too/, 'not after the first one');

$u->write_file($up, '');
{
    local $AlertdTest::WAIT = 330;
    ok($u->wait_for(sub { $u->delivered($r, @ids) }),
       'fixed: every alert is delivered');
    ok($u->drained($r), 'nothing is left queued');
}

$u->done;
