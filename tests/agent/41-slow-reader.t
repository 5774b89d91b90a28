#!/usr/bin/perl

# airlock-agent: a client that takes its answer a little at a time cannot
# hold its process (one of --max-connections) and the session's lock for
# as long as it likes.  It has until the run's wall time and
# --send-timeout to take the question's events, and --send-timeout to
# take a session it asked for; then it is cut, the run ends and stores
# the session, and its place is free.  The slow client here reads a
# little every 50 ms: on code without the bound it would hold its place
# until it had read all (a minute); the test waits for the session to be
# stored, and for a second question to be served, not for a time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Select;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 2000, '--send-timeout', 1000,
                     '--max-connections', 1 ]);

plan tests => 9;

my $sock = $a->{agents}{a}{sock};

sub rcli {
    my $out = `redis-cli -s $d/redis.sock @_`;
    chomp $out;
    return $out;
}

# reads s a little at a time until cond holds or s ends (at most 25 s);
# returns what it read and whether cond held
sub trickle {
    my ($s, $cond) = @_;
    my ($raw, $held, $i) = ('', 0, 0);
    my $sel = IO::Select->new($s);
    my $until = time + 25;

    while (time < $until) {
        if ($i++ % 4 == 0 && $cond->()) {
            $held = 1;
            last;
        }
        if ($sel->can_read(0)) {
            if (!sysread($s, $raw, 1024, length $raw)) {
                # cut: what cond waits for may come a moment after
                sleep 0.05 while !($held = $cond->()) && time < $until;
                last;
            }
        }
        sleep 0.05;
    }

    return ($raw, $held);
}

# ---- the events of a question -----------------------------------------------

# an answer far larger than the socket's buffers, in many events
$a->script({ pieces => [ ('x' x 10000) x 100 ] });

my $body = encode_json({ prompt => 'a long answer' });
my $s = $t->http("POST /v1/sessions/slow-1/ask HTTP/1.1\r\nHost: a\r\n"
                 . "Content-Length: " . length($body) . "\r\n"
                 . "Connection: close\r\n\r\n$body",
                 unix => $sock, start => 1);

my ($raw, $held) = trickle($s,
                           sub { rcli('EXISTS airlock:session:slow-1') });
ok($held, 'a slow reader is cut: the run ended and stored its session')
    or diag('read ' . length($raw) . " bytes; the agent's log:\n"
            . $a->agent_log);
unlike($raw, qr/event: done/, 'it did not get all of its events');

# the session is stored a moment before the cut connection's place is
# free, and the agent has one (--max-connections 1): ask until served
my $r;
for (1 .. 100) {
    $r = $a->session('slow-1');
    last if ($r->{status} // 0) == 200;
    sleep 0.05;
}
is(scalar(@{$r->{json}{runs} // []}), 1, 'the run is in the session')
    or diag(explain($r), "the agent's log:\n", $a->agent_log);
is(rcli('EXISTS airlock:session:slow-1:lock'), '0', 'its lock is free');

# its place is free: the one connection is served
my $ev;
for (1 .. 100) {
    $a->script({ pieces => [ 'next' ] });
    $ev = $a->ask('slow-2', 'the next question');
    last if of_type('answer', $ev);
    sleep 0.05;
}
is((of_type('answer', $ev))[0]{text}, 'next',
   'the next question is served');
close $s;

# ---- a session --------------------------------------------------------------

# a session larger than the socket's buffers
open(my $p, '|-', "redis-cli -s $d/redis.sock -x SET airlock:session:big "
                 . ">/dev/null") or die "redis-cli: $!\n";
print $p encode_json({ id => 'big', runs => [],
                       messages => [ map { { role => 'user',
                                             content => 'y' x 10000 } }
                                     1 .. 200 ] });
close $p;
cmp_ok(rcli('STRLEN airlock:session:big'), '>', 200 * 10000,
       'a session of 2 MB');

$s = $t->http("GET /v1/sessions/big HTTP/1.1\r\nHost: a\r\n"
              . "Connection: close\r\n\r\n", unix => $sock, start => 1);

my $served = sub {
    my $x = $t->http("GET /healthz HTTP/1.1\r\nHost: a\r\n"
                     . "Connection: close\r\n\r\n", unix => $sock,
                     timeout => 5) // '';
    return $x =~ m{^HTTP/1.1 200};
};

($raw, $held) = trickle($s, $served);
ok($held, 'a slow reader of a session is cut: its place is free');
cmp_ok(length($raw), '<', 200 * 10000, 'it did not get all of it');
close $s;

is($a->agent_errors, '', 'no sanitizer reports from the agents');
