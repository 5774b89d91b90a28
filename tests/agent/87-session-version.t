#!/usr/bin/perl

# airlock-agent: a run stores its session only over the session as it
# read it, and that is told by the session's version, kept beside it
# (airlock:session:<id>:version, "<n> <run>"), not by the whole text.
# The store used to send Redis the text the run read, up to 16 MiB, on
# every question, for the script to read the stored session and compare
# the two: a question in a large session cost Redis twice its size.
# Now the text read is sent only to a session stored without a version
# (by an agent of before versions): compared whole once, and given one.
#
# The guarantees stay (tests/agent/36-session-lock.t has the lost lock):
# a session stored by another run since, with a version or without, or
# rewritten by a writer that keeps no version, is not written over; nor
# is one that Redis lost and another run stored anew, its number of
# stores the same as the one the first run read (the run that stored is
# in the version).  And a store sent again, its reply lost with the
# connection, finds its own version and stores.  The test counts the
# bytes Redis received, not the time, and waits for files and log
# lines, never for a time.

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

plan tests => 27;

my $sock = $a->{agents}{a}{sock};
my $OWNER = 'uid:' . $>;
my $SIZE = 8 << 20;

sub redis { return $a->redis_cli(@_) }

# bytes Redis has received from its clients
sub received {
    my ($n) = redis('INFO', 'stats') =~ /^total_net_input_bytes:(\d+)/m;
    return $n // -1;
}

sub prompts {
    my ($id) = @_;
    my $r = $a->session($id);
    return join ',', map { $_->{prompt} }
                     grep { $_->{run} ne 'old' }
                     @{($r->{json} // {})->{runs} // []};
}

# a session as an agent of before versions stored it: no version
sub plant {
    my ($id, $bulk, @prompts) = @_;
    my $s = encode_json({ id => $id, owner => $OWNER, messages => [],
                          runs => [ map { { run => 'old', prompt => $_,
                                            outcome => 'answer',
                                            events => [] } }
                                    ($bulk, @prompts) ] });
    $t->write_file("$id.json", $s);
    system("redis-cli -s $d/redis.sock -x SET airlock:session:$id "
           . "< $d/$id.json >/dev/null") == 0 or die "SET failed\n";
    return length $s;
}

my $n = 0;

# asks in SESSION; while the model's answer is held (the run has read
# the session), calls $meanwhile; returns the events
sub ask_while {
    my ($session, $prompt, $meanwhile, @more) = @_;
    my $gate = "$d/gate-" . ++$n;
    $a->script({ pieces => [ "answer $n" ], wait_file => $gate }, @more);
    my $n0 = scalar $a->provider_requests;
    my $body = encode_json({ prompt => $prompt });
    my $s = $t->http("POST /v1/sessions/$session/ask HTTP/1.1\r\n"
                     . "Host: a\r\nContent-Length: " . length($body)
                     . "\r\nConnection: close\r\n\r\n$body",
                     unix => $sock, start => 1);
    for (1 .. 3000) {
        last if scalar($a->provider_requests) > $n0;
        sleep 0.02;
    }
    $meanwhile->();
    $t->write_file("gate-$n", '');

    my $raw = '';
    my $sel = IO::Select->new($s);
    while ($sel->can_read(60)) {
        last unless sysread($s, $raw, 65536, length $raw);
    }
    close $s;
    return [ AgentTest::events($raw) ];
}

sub codes {
    my ($ev) = @_;
    return join ',', map { $_->{code} } AgentTest::of_type('error', $ev);
}

# ---- a large session: its version, not its text ----------------------------

my $len = plant('big', 'x' x $SIZE);
is(redis(qw(EXISTS airlock:session:big:version)), '0',
   'a session of 8 MiB stored without a version');

$a->script({ pieces => [ 'one' ] });
my $ev = $a->ask('big', 'the first question');
is(codes($ev), '', 'asked in it: no error');
is(prompts('big'), 'the first question', '... and stored');
like(redis(qw(GET airlock:session:big:version)), qr/^1 [0-9a-f]{32}$/,
     '... which gave it a version, its first');
my $ttl = redis(qw(TTL airlock:session:big:version));
ok($ttl > 0 && abs($ttl - redis(qw(TTL airlock:session:big))) <= 1,
   '... with the session\'s TTL');

$a->script({ pieces => [ 'two' ] });
my $before = received();
$ev = $a->ask('big', 'the second question');
my $used = received() - $before;
is(codes($ev), '', 'a second question: no error');
is(prompts('big'), 'the first question,the second question',
   '... stored');
cmp_ok($used, '<', $len * 1.5,
       "... Redis received the session once for it, not twice "
       . "($used bytes for $len)");
my $last = ($a->session('big')->{json}{runs} // [])->[-1] // {};
is(redis(qw(GET airlock:session:big:version)), "2 " . ($last->{run} // ''),
   '... its version counted on, and naming the run that stored');

# ---- stored by another since: not written over -----------------------------

# without a version, as an agent of before versions stores it
plant('old-1', 'bulk', 'one');
$ev = ask_while('old-1', 'lost', sub { plant('old-1', 'bulk', 'another') });
like(codes($ev), qr/not_stored/,
     'a session without a version, stored by another meanwhile: '
     . 'not stored');
is(redis(qw(GET airlock:session:old-1)), $t->read_file('old-1.json'),
   '... the other\'s kept as it was');
is(redis(qw(EXISTS airlock:session:old-1:version)), '0', '... and no version');

# with one, by a writer that keeps none (an agent of before versions,
# while an upgrade runs): the length tells
$a->script({ pieces => [ 'one' ] });
$a->ask('old-2', 'one');
my $v = redis(qw(GET airlock:session:old-2:version));
$ev = ask_while('old-2', 'lost', sub { plant('old-2', 'bulk', 'another') });
like(codes($ev), qr/not_stored/,
     'a session with a version, rewritten without: not stored');
is(redis(qw(GET airlock:session:old-2)), $t->read_file('old-2.json'),
   '... the other\'s kept as it was');
is(redis(qw(GET airlock:session:old-2:version)), $v,
   '... its version as it was');

# ---- Redis lost all, and another run stored the session anew ---------------
#
# The first run read the session at its first store; the second found
# none and stored it, its first store too.  A version of the number
# alone would be the same, and only the session's length, were it not
# the same too, would keep the first run's store off the second's
# question: the version names the run that stored.  The first run's
# keeper, which would take its lock again at once, is stopped meanwhile.

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

$a->script({ pieces => [ 'one' ] });
$a->ask('aba', 'the first question');
like(redis(qw(GET airlock:session:aba:version)), qr/^1 /,
     'a session stored once');

my ($keeper, $second);
$ev = ask_while('aba', 'the lost run', sub {
    $keeper = keeper_pid();
    kill 'STOP', $keeper if $keeper;
    redis(qw(DEL airlock:session:aba:lock airlock:session:aba
             airlock:session:aba:version));
    $second = $a->ask('aba', 'the second run');
    kill 'CONT', $keeper if $keeper;
}, { pieces => [ 'second' ] });
ok($keeper, 'the first run had a keeper');
is(codes($second), '', 'Redis lost all: a second run stored the session');
my $r = $a->session('aba');
is(redis(qw(GET airlock:session:aba:version)),
   '1 ' . ((($r->{json} // {})->{runs} // [])->[-1] // {})->{run},
   '... its first store, by that run');
like(codes($ev), qr/not_stored/, 'the first run did not store');
is(prompts('aba'), 'the second run', '... over the second\'s');
like($a->agent_log,
     qr/session aba not stored: another run stored the session since/,
     '... and said why');

# ---- a store whose reply is lost, sent again: the run's own ----------------
#
# A proxy in front of Redis runs the first store's script and drops the
# connection in place of its reply; the run stores again on a new
# connection and finds the version its own store made.

$t->write_file('drop-proxy.pl', <<'PL');
use strict;
use warnings;
use IO::Select;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);

my ($listen, $redis, $mark) = @ARGV;
$SIG{PIPE} = 'IGNORE';
unlink $listen;
my $l = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $listen,
                              Listen => 64) or die "listen: $!";
chmod 0777, $listen;
my $sel = IO::Select->new($l);
my (%peer, %drop, $dropped);

for (;;) {
    for my $s ($sel->can_read) {
        if ($s == $l) {
            my $c = $l->accept or next;
            my $r = IO::Socket::UNIX->new(Type => SOCK_STREAM,
                                          Peer => $redis)
                or do { close $c; next };
            @peer{$c, $r} = ($r, $c);
            $sel->add($c, $r);
            next;
        }
        my $o = $peer{$s};
        my $n = sysread($s, my $buf, 65536);
        if (!$n || ($drop{$s} && !$dropped)) {
            if ($n) {
                $dropped = 1;
                open(my $fh, '>', $mark);
                close $fh;
            }
            for my $x ($s, $o) {
                $sel->remove($x);
                delete $peer{$x};
                delete $drop{$x};
                close $x;
            }
            next;
        }
        # a client's command that stores a session: its reply, from
        # Redis, is dropped
        $drop{$o} = 1 if !$dropped && $buf =~ /'set', KEYS\[2\]/;
        syswrite($o, $buf);
    }
}
PL
$t->run_daemon('/usr/bin/perl', "$d/drop-proxy.pl", "$d/drop.sock",
               "$d/redis.sock", "$d/dropped");
$t->wait_for_port("unix:$d/drop.sock")
    or BAIL_OUT('the proxy did not start');
$a->start_agent('c', '--redis', "unix:$d/drop.sock");

$a->script({ pieces => [ 'one' ] });
$ev = $a->ask('again', 'stored twice', agent => 'c');
ok(-e "$d/dropped", 'the reply to a store was lost with its connection');
is(codes($ev), '', '... and the question stored all the same');
$r = $a->session('again');
is(prompts('again'), 'stored twice', '... once');
is(redis(qw(GET airlock:session:again:version)),
   '1 ' . ((($r->{json} // {})->{runs} // [])->[-1] // {})->{run},
   '... its version the one store\'s');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
