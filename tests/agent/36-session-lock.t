#!/usr/bin/perl

# airlock-agent: a session's lock holds as long as its run lives, and only
# the run that holds it stores the session.
#
# A client that reads the event stream slowly, or not at all, keeps its
# run alive (the run waits to write its events) past the run's wall time
# (up to --send-timeout more, 41-slow-reader.t) and past any fixed lease.  The lock's lease is
# renewed while the run lives: the test cuts the lease short, as if its
# time had run out, and waits until the lease is renewed (or, on code
# that does not renew it, gone); a second question in the session is
# still refused (409).  And a run whose lock was lost anyway (deleted
# here, as a Redis that lost its data would) does not write the session
# over the run that took the lock after it.  The test waits for events
# (a request at the model, the lease renewed or gone, the end of a
# stream), never for a time.

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

$a->setup;

plan tests => 19;

my $sock = $a->{agents}{a}{sock};

sub rcli {
    my $out = `redis-cli -s $d/redis.sock @_`;
    chomp $out;
    return $out;
}

# an answer far larger than the socket's buffer: its run cannot end while
# its client does not read
my $big = { pieces => [ ('x' x 10000) x 100 ] };

# starts a question and does not read its stream; returns the socket once
# the run has asked the model (it holds the lock then)
sub start_stalled {
    my ($session, $prompt) = @_;
    my $n0 = scalar $a->provider_requests;
    my $body = encode_json({ prompt => $prompt });
    my $s = $t->http("POST /v1/sessions/$session/ask HTTP/1.1\r\nHost: a\r\n"
                     . "Content-Length: " . length($body) . "\r\n"
                     . "Connection: close\r\n\r\n$body",
                     unix => $sock, start => 1);
    for (1 .. 3000) {
        last if scalar($a->provider_requests) > $n0;
        sleep 0.02;
    }
    return $s;
}

# reads the rest of a stream; the run has ended (and stored or not) when
# the agent closes it
sub drain {
    my ($s) = @_;
    my $raw = '';
    my $sel = IO::Select->new($s);
    while ($sel->can_read(60)) {
        last unless sysread($s, $raw, 1 << 20, length $raw);
    }
    close $s;
    return $raw;
}

sub ask_raw {
    my ($session, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return $t->http("POST /v1/sessions/$session/ask HTTP/1.1\r\nHost: a\r\n"
                    . "Content-Length: " . length($body) . "\r\n"
                    . "Connection: close\r\n\r\n$body", unix => $sock,
                    timeout => 60) // '';
}

# the agent's processes: the server, and while a run lives its own and
# its lock's keeper
sub agent_procs {
    my $n = 0;
    for my $f (glob '/proc/[0-9]*/cmdline') {
        open(my $fh, '<', $f) or next;
        my $cmd = <$fh> // '';
        close $fh;
        $n++ if index($cmd, "airlock-agent\0--listen\0$sock\0") >= 0;
    }
    return $n;
}

# ---- the lease is renewed while the run lives -------------------------------

$a->script($big);
my $s1 = start_stalled('lock-1', 'a long answer');
my $lock = 'airlock:session:lock-1:lock';

is(rcli("PEXPIRE $lock 10000"), '1', 'the run holds the lock');

# renewed (the lease is longer than what is left) or gone
my $ttl;
for (1 .. 3000) {
    $ttl = rcli("PTTL $lock");
    last if $ttl > 10000 || $ttl == -2;
    sleep 0.02;
}
cmp_ok($ttl, '>', 10000, 'the lease is renewed while the run lives');

$a->script({ pieces => [ 'not now' ] });
like(ask_raw('lock-1', 'a second question'), qr{^HTTP/1.1 409 .*session_busy}s,
     'a second question while the first run still writes: 409');

my $raw = drain($s1);
like($raw, qr/event: done/, 'the first run ended once its client read');
is(rcli("EXISTS $lock"), '0', 'its lock is released');
my $r = $a->session('lock-1');
is(scalar(@{$r->{json}{runs} // []}), 1, 'its run is stored');

$a->script({ pieces => [ 'now' ] });
my $ev = $a->ask('lock-1', 'and now?');
is((of_type('answer', $ev))[0]{text}, 'now', 'the session takes a question');

# ---- a lost lock: the run does not write over the next run's session --------
#
# Its keeper, which takes a lost lock again (79-lock-lost.t), is stopped
# while the lock is gone and the second run takes the session, stores it
# and lets it go; continued, it takes the lock again: the first run's
# lock is its own once more, and still it must not store.

# the keeper of a run: an agent process whose parent is one, and whose
# parent's parent is one too (the server, the run, its keeper)
sub keeper_pid {
    my %ppid;
    for my $f (glob '/proc/[0-9]*/cmdline') {
        my ($pid) = $f =~ m{/proc/(\d+)/};
        open(my $fh, '<', $f) or next;
        my $cmd = <$fh> // '';
        close $fh;
        next if index($cmd, "airlock-agent\0--listen\0$sock\0") < 0;
        my $stat = Airlock::Test::_slurp("/proc/$pid/stat") // '';
        $ppid{$pid} = $1 if $stat =~ /\) \S+ (\d+)/;
    }
    my @k = grep { exists $ppid{$ppid{$_}} && exists $ppid{$ppid{$ppid{$_}}} }
            keys %ppid;
    return @k == 1 ? $k[0] : undef;
}

$a->script($big);
my $s2 = start_stalled('lock-2', 'the first question');
my $keeper = keeper_pid();
ok($keeper, 'the run has a keeper');
kill 'STOP', $keeper if $keeper;
is(rcli('DEL airlock:session:lock-2:lock'), '1', 'the lock is lost');

$a->script({ pieces => [ 'second' ] });
$ev = $a->ask('lock-2', 'the second question');
is((of_type('answer', $ev))[0]{text}, 'second',
   'a second run takes the session');
is(rcli('EXISTS airlock:session:lock-2:lock'), '0',
   'and lets it go when it ends');

kill 'CONT', $keeper if $keeper;
my $took;
for (1 .. 3000) {
    $took = $a->agent_log =~ /session lock-2: its lock was lost .*taken again/;
    last if $took;
    sleep 0.02;
}
ok($took, "the first run's keeper takes the lock again");

$raw = drain($s2);
like($raw, qr/event: done/, 'the first run ended');
like($raw, qr/"code":"not_stored".*\nevent: done\n/s,
     'its client is told, before "done", that it was not stored');

$r = $a->session('lock-2');
my @prompts = map { $_->{prompt} } @{$r->{json}{runs} // []};
is_deeply(\@prompts, [ 'the second question' ],
          'the session is the second run\'s, not written over');
my @msgs = @{$r->{json}{messages} // []};
is(@msgs && $msgs[-1]{content}, 'second', '... with its answer');
like($a->agent_log,
     qr/session lock-2 not stored: another run stored the session since/,
     'the first run said it did not store the session, and why');

# no keeper outlives its run
my $procs;
for (1 .. 3000) {
    $procs = agent_procs();
    last if $procs == 1;
    sleep 0.02;
}
is($procs, 1, 'no process of the agent\'s left but the server');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
