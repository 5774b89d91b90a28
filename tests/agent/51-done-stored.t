#!/usr/bin/perl

# airlock-agent: a question's "done" comes after its session is stored
# and its lock let go, so a client that asks again as soon as it sees
# "done" (without waiting for the connection to close) is answered, not
# refused 409 session_busy.  "done" used to be written first, then the
# session stored (waiting up to 10 s for a Redis that is restarting) and
# the lock let go.
#
# The test holds the store: Redis's writes are paused (CLIENT PAUSE
# WRITE) before the model answers, and the test waits until the run's
# store is seen waiting in Redis (CLIENT LIST); then it looks at what the
# client has.  The old order had "done" there already, and a question
# asked then, held behind the store, found the lock still taken.  With
# the writes let go, "done" comes with the lock free and the question
# stored.  Events, never a time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Select;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup;

plan tests => 9;

my $sock = $a->{agents}{a}{sock};

sub rcli {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

sub start_ask {
    my ($session, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return $t->http("POST /v1/sessions/$session/ask HTTP/1.1\r\nHost: a\r\n"
                    . "Content-Length: " . length($body) . "\r\n"
                    . "Connection: close\r\n\r\n$body",
                    unix => $sock, start => 1);
}

# waits until a client's command is held by the pause (flag b) and
# matches $want; returns whether one was
sub held {
    my ($want) = @_;
    for (1 .. 1000) {
        for my $c (split /\n/, rcli('CLIENT', 'LIST')) {
            my ($flags) = $c =~ / flags=(\S+)/;
            return 1 if ($flags // '') =~ /b/ && $want->($c);
        }
        sleep 0.02;
    }
    return 0;
}

# what the socket has now, without waiting for more
sub now_read {
    my ($s) = @_;
    my $raw = '';
    my $sel = IO::Select->new($s);
    while ($sel->can_read(0)) {
        last unless sysread($s, $raw, 1 << 20, length $raw);
    }
    return $raw;
}

$a->script({ wait_file => "$d/go", pieces => [ 'first' ] },
           { pieces => [ 'second' ] });

my $n0 = scalar $a->provider_requests;
my $prompt = 'q' x 10000;
my $s = start_ask('again', $prompt);

for (1 .. 3000) {
    last if scalar($a->provider_requests) > $n0;
    sleep 0.02;
}

# the model answers while Redis takes no write: the run's store waits
is(rcli(qw(CLIENT PAUSE 20000 WRITE)), 'OK', 'Redis\'s writes paused');
$t->write_file('go', '');

ok(held(sub {
       my ($m) = $_[0] =~ / argv-mem=(\d+)/;
       $_[0] =~ / cmd=eval / && ($m // 0) >= 10000 }),
   'the run\'s store waits for Redis');

my $raw = now_read($s);
ok($raw !~ /event: done/, 'no "done" before the session is stored');

# a client that asks again at "done": held behind the store, as it is
my $s2;
if ($raw =~ /event: done/) {
    $s2 = start_ask('again', 'once more');
    held(sub { $_[0] =~ / cmd=set / });
}

rcli('CLIENT', 'UNPAUSE');

# "done": the lock is free, the question stored
my ($lock, $stored) = ('?', '');
my $sel = IO::Select->new($s);
while ($raw !~ /event: done\n.*\n\n/ && $sel->can_read(30)) {
    last unless sysread($s, $raw, 1 << 20, length $raw);
}
if ($raw =~ /event: done\n/) {
    $lock = rcli(qw(EXISTS airlock:session:again:lock));
    $stored = rcli(qw(GET airlock:session:again));
}
is($lock, '0', 'at "done", the session\'s lock is free');
like($stored, qr/"content":"first"/, 'at "done", the question is stored');
close $s;

$s2 //= start_ask('again', 'once more');
my $raw2 = '';
$sel = IO::Select->new($s2);
while ($sel->can_read(30)) {
    last unless sysread($s2, $raw2, 1 << 20, length $raw2);
}
close $s2;
my @ev = AgentTest::events($raw2);
is(join(' ', ($raw2 =~ m{^HTTP/1.1 (\d+)}), map { $_->{text} }
                 of_type('answer', \@ev)),
   '200 second', 'the question asked at "done" is answered');

# ---- a store that takes past the client's send deadline -------------------

# The client has the run's wall time and --send-timeout to take its
# events; the time the store takes (up to 10 s for a Redis that is
# restarting) is not the client's, and "done" still comes.  Agent b's
# run ends at its wall time (1 s: the model never answers), its client's
# deadline 200 ms later; the store is held past it.

$a->start_agent('b', '--max-wall', 1000, '--send-timeout', 200);
$sock = $a->{agents}{b}{sock};
$a->script({ wait_file => "$d/never", pieces => [ 'never' ] });
$n0 = scalar $a->provider_requests;
$s = start_ask('late', 'p' x 4000);
for (1 .. 3000) {
    last if scalar($a->provider_requests) > $n0;
    sleep 0.02;
}
rcli(qw(CLIENT PAUSE 20000 WRITE));
ok(held(sub { $_[0] =~ / cmd=eval / && $_[0] =~ / argv-mem=(\d+)/
              && $1 >= 4000 }),
   'late: the run\'s store waits for Redis');
sleep 0.5;                              # past the client's deadline
rcli('CLIENT', 'UNPAUSE');

$raw = '';
$sel = IO::Select->new($s);
while ($sel->can_read(30)) {
    last unless sysread($s, $raw, 1 << 20, length $raw);
}
close $s;
@ev = AgentTest::events($raw);
is(join(',', map { $_->{type} } grep { $_->{type} =~ /limit|done/ } @ev),
   'limit,done', 'late: "done" comes all the same');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
