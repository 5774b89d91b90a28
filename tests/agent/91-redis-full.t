#!/usr/bin/perl

# Redis full: at its maxmemory, under noeviction (the appliance's Redis,
# conf and docs/agent.md, "Redis's memory"), Redis refuses whatever
# would store more and evicts nothing.  Each of the agent's writes that
# a full Redis refuses answers as its other Redis failures do, 503
# "redis", with a message that says Redis is full and names maxmemory
# (Redis's own text is "OOM command not allowed when used memory >
# 'maxmemory'. script: <hash>, on @user_script:1."), and writes nothing:
# a question in a stored session (its lock refused: the session as it
# was, no lock left), a question in a new one, POST /v1/sessions, and a
# run_python job (the call an error the model is told, no entry in the
# job stream, no record of it awaited; the run goes on, and its question,
# not stored, says why).  With room again, a question is answered and
# stored.  The Redis is the test's own, filled, then given a maxmemory
# below what it holds.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 30000 ]);

plan tests => 29;

my $FULL = qr/Redis is full.*maxmemory/;

sub redis { return $a->redis_cli(@_) }

sub used { return (redis('INFO', 'memory') =~ /^used_memory:(\d+)/m)[0] }

# 2 MiB of other data, then a maxmemory 256 KiB below what Redis holds:
# full, whatever a client's buffers come to meanwhile
sub fill {
    redis('SET', "fill:$_", 'f' x 65536) for 1 .. 32;
    redis('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    redis('CONFIG', 'SET', 'maxmemory', used() - 262144);
}

sub request {
    my ($req) = @_;
    my $r = Airlock::Test::parse_response(
        $t->http($req, unix => $a->{agents}{a}{sock}, timeout => 30) // '');
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}

sub ask_raw {
    my ($id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return request("POST /v1/sessions/$id/ask HTTP/1.1\r\nHost: a\r\n"
                   . 'Content-Length: ' . length($body)
                   . "\r\nConnection: close\r\n\r\n$body");
}

# ---- a session stored while there is room ---------------------------------
$a->script({ pieces => [ 'stored' ] });
my $ev = $a->ask('kept', 'a question with room');
is(((of_type('answer', $ev))[0] // {})->{text}, 'stored',
   'with room: answered');
my $kept = redis('GET', 'airlock:session:kept');
like($kept, qr/a question with room/, 'and stored');

# ---- a job, Redis full once the model has answered ------------------------
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('full')" } } ],
             head_gate => "$d/gate" },
           { pieces => [ 'no job' ] });
my $pid = fork // die "fork: $!\n";
if ($pid == 0) {
    my (undef, $raw) = $a->ask('job-1', 'a job while Redis fills');
    $t->write_file('job-answer', $raw);
    POSIX::_exit(0);
}
my $n = 0;
$n++ until -e "$d/gate.head" || $n > 600 || !sleep 0.05;
ok(-e "$d/gate.head", 'the model answers the job question');
fill();
like(redis('SET', 'one-more', 'x'), qr/^OOM /, 'Redis is full');
$t->write_file('gate', '');
waitpid $pid, 0;
$ev = [ AgentTest::events($t->read_file('job-answer') // '') ];

my @err = of_type('error', $ev);
my ($job) = grep { $_->{code} eq 'job' } @err;
ok($job, 'the job call is an error') or diag(explain($ev));
like(($job // {})->{message} // '', $FULL,
     'that says Redis is full, naming maxmemory');
is(((of_type('answer', $ev))[0] // {})->{text}, 'no job',
   'the run went on and answered');
is(redis(qw(XLEN airlock:jobs)), 0, 'no entry in the job stream');
is(redis(qw(HLEN airlock:jobs:awaited)), 0, 'no job awaited');
my ($ns) = grep { $_->{code} eq 'not_stored' } @err;
like(($ns // {})->{reason} // '', $FULL,
     'the question was not stored: Redis is full');
is(redis(qw(EXISTS airlock:session:job-1 airlock:session:job-1:version
            airlock:session:job-1:lock)), 0,
   'nothing of its session is in Redis');
is(redis(qw(HGET airlock:quota:bytes:uid:0 job-1)), '',
   'nor counted against its owner');

# ---- a question in the stored session --------------------------------------
my $calls = scalar(() = $a->provider_requests);
my $r = ask_raw('kept', 'a question when full');
is($r->{status}, 503, 'a question in a stored session: 503');
is($r->{json}{error}, 'redis', 'error "redis", as Redis failing');
like($r->{json}{message} // '', $FULL, 'Redis is full, maxmemory');
unlike($r->{json}{message} // '', qr/script: [0-9a-f]{40}/,
       'without the script hash of Redis\'s text');
is(redis('GET', 'airlock:session:kept'), $kept, 'the session as it was');
is(redis(qw(EXISTS airlock:session:kept:lock)), 0, 'no lock left');
is(scalar(() = $a->provider_requests), $calls, 'the model not asked');

# ---- a question in a new session ------------------------------------------
$r = ask_raw('new-1', 'a new question when full');
is($r->{status}, 503, 'a question in a new session: 503');
is($r->{json}{error}, 'redis', 'error "redis"');
like($r->{json}{message} // '', $FULL, 'Redis is full, maxmemory');
is(redis(qw(EXISTS airlock:session:new-1 airlock:session:new-1:version
            airlock:session:new-1:lock)), 0, 'nothing of it in Redis');

# ---- POST /v1/sessions -----------------------------------------------------
$r = request("POST /v1/sessions HTTP/1.1\r\nHost: a\r\n"
             . "Content-Length: 0\r\nConnection: close\r\n\r\n");
is($r->{status}, 503, 'POST /v1/sessions: 503');
is($r->{json}{error}, 'redis', 'error "redis"');
like($r->{json}{message} // '', $FULL, 'Redis is full, maxmemory');

# ---- room again ------------------------------------------------------------
redis('DEL', map { "fill:$_" } 1 .. 32);
redis('CONFIG', 'SET', 'maxmemory', 0);
$a->script({ pieces => [ 'room' ] });
$ev = $a->ask('kept', 'a question with room again');
is(((of_type('answer', $ev))[0] // {})->{text}, 'room',
   'with room again: answered');
like(redis('GET', 'airlock:session:kept'), qr/with room again/,
     'and stored');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
