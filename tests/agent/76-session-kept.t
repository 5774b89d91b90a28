#!/usr/bin/perl

# airlock-agent: a question is kept in its session.  One that alone
# would make its session over the 16 MiB a session keeps is stored all
# the same, its largest strings cut to a note.  What the model writes
# is bounded per step (16 calls of 256 KiB of arguments), and JSON
# writes a control character in six bytes: one answer of 16 calls
# whose arguments are control characters is 24 MiB as JSON.  Such a
# question was not stored at all: the prompt and the run's record (what
# the model did in it) were lost, and the model could make it so
# whenever it liked.  Now each of the largest strings of the question
# (arguments, texts, results) is replaced by a note of its size, the
# largest first, until the session fits; the next question goes on
# from it, the note in its history.  And a run whose lock Redis lost
# stores its question when no other run can have stored since (below).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
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

my $MAX = 16 * 1024 * 1024;

# the model's side: the first answer 16 calls of 256 KiB less a little
# of \u0001 each, in pieces an event line takes; every later one "done"

$t->write_file('bulky.py', <<'EOF');
import json, os, socketserver, sys

path, log = sys.argv[1], sys.argv[2]
count = [0]

def event(obj):
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() \
           + b"\n\n"

def chunk(delta, finish=None):
    return event({"choices": [{"index": 0, "delta": delta,
                               "finish_reason": finish}]})

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        length = 0
        if not self.rfile.readline():
            return
        while True:
            line = self.rfile.readline()
            if not line or line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        body = self.rfile.read(length)
        count[0] += 1
        with open(log, "a") as f:
            f.write(body.decode() + "\n")

        out = []
        if count[0] == 1:
            for i in range(16):
                out.append(chunk({"tool_calls": [{
                    "index": i, "id": "call_%d" % i, "type": "function",
                    "function": {"name": "nope-%d" % i,
                                 "arguments": ""}}]}))
                for k in range(8):
                    out.append(chunk({"tool_calls": [{
                        "index": i, "function": {
                            "arguments": "\x01" * (32 * 1024 - 8)}}]}))
            out.append(chunk({}, "tool_calls"))
        else:
            out.append(chunk({"content": "done"}))
            out.append(chunk({}, "stop"))
        out.append(b"data: [DONE]\n\n")

        self.wfile.write(b"HTTP/1.1 200 OK\r\n"
                         b"Content-Type: text/event-stream\r\n"
                         b"Connection: close\r\n\r\n" + b"".join(out))

class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

if os.path.exists(path):
    os.unlink(path)
srv = Server(path, Handler)
os.chmod(path, 0o666)
srv.serve_forever()
EOF

$t->write_file('bulky.log', '');
$t->run_daemon('python3', "$d/bulky.py", "$d/bulky.sock", "$d/bulky.log");
$t->wait_for_port("unix:$d/bulky.sock")
    or die "bulky.py did not start\n";

# the bulky answers are counted as millions of tokens: no limit on them
# here, per question or a day (93-user-tokens.t)
$a->start_agent('b', '--gateway', "$d/bulky.sock", '--max-wall', 60000,
                '--max-tokens', 1000000000, '--max-user-tokens', 0);

sub redis {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

my $ev = $a->ask('cut-1', 'a bulky question', agent => 'b', timeout => 90);

is(join(',', map { $_->{code} } of_type('error', $ev)),
   join(',', ('bad_tool_arguments') x 16),
   'sixteen calls whose arguments are no JSON, nothing else');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer', 'answered');

my $len = redis(qw(STRLEN airlock:session:cut-1));
ok($len > 0 && $len <= $MAX, "stored, at most 16 MiB ($len)");

my $r = $a->session('cut-1', agent => 'b');
my $s = $r->{json} // {};
is(join(',', map { $_->{prompt} } @{$s->{runs} // []}), 'a bulky question',
   'its run\'s record kept');
is(scalar(grep { $_->{type} eq 'error' }
          @{(($s->{runs} // [])->[0] // {})->{events} // []}), 16,
   'with the sixteen calls\' errors');

my @calls = map { @{$_->{tool_calls} // []} } @{$s->{messages} // []};
is(scalar @calls, 16, 'the sixteen calls kept');
my @cut = grep { (((eval { decode_json($_->{function}{arguments}) } // {})
                      ->{not_kept}) // '') =~ /^\d+ bytes as JSON/ } @calls;
ok(@cut > 0 && @cut < 16, scalar(@cut) . ' arguments cut to a note, '
   . 'as many as it takes');
is(scalar(grep { $_->{role} eq 'user' } @{$s->{messages} // []}), 1,
   'the prompt kept');

# the next question goes on from it, the notes in its history

$ev = $a->ask('cut-1', 'and then?', agent => 'b', timeout => 90);
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer',
   'the next question answered');
$r = $a->session('cut-1', agent => 'b');
is(join(',', map { $_->{prompt} } @{($r->{json} // {})->{runs} // []}),
   'a bulky question,and then?', 'and stored after it');

# ---- a lock Redis lost: the question stored all the same ---------------
#
# Redis that crashes or restarts without the lock (it was made after its
# last snapshot, or Redis keeps none) used to lose the question: its run
# found its lock gone and stored nothing, though no other run had taken
# the session.  With none there, and the session as the run read it or
# not there at all (Redis lost everything: the run holds it whole), it
# is stored; another run's store since is never written over
# (tests/agent/36-session-lock.t).

use IO::Select;

my $n = 0;

# asks in SESSION, and while the model's answer is held, runs @lost
sub ask_losing {
    my ($session, $prompt, @lost) = @_;
    my $gate = "$d/gate-" . ++$n;
    $a->script({ pieces => [ "answer $n" ], wait_file => $gate });
    my $n0 = scalar $a->provider_requests;
    my $body = encode_json({ prompt => $prompt });
    my $s = $t->http("POST /v1/sessions/$session/ask HTTP/1.1\r\n"
                     . "Host: a\r\nContent-Length: " . length($body)
                     . "\r\n\r\n$body",
                     unix => $a->{agents}{a}{sock}, start => 1);
    for (1 .. 2500) {
        last if scalar($a->provider_requests) > $n0;
        sleep 0.02;
    }
    redis(@$_) for @lost;
    $t->write_file("gate-$n", '');

    my $raw = '';
    my $sel = IO::Select->new($s);
    my $deadline = time + 60;
    while (time < $deadline && $sel->can_read($deadline - time)) {
        last unless sysread($s, $raw, 65536, length $raw);
    }
    close $s;
    return [ AgentTest::events($raw) ];
}

$a->script({ pieces => [ 'first' ] });
$a->ask('lost-1', 'the first question');

$ev = ask_losing('lost-1', 'the lock lost',
                 [ qw(DEL airlock:session:lost-1:lock) ]);
is(join(',', map { $_->{code} } of_type('error', $ev)), '',
   'lock lost: no error, not_stored none');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer',
   'lock lost: answered');
$r = $a->session('lost-1');
is(join(',', map { $_->{prompt} } @{($r->{json} // {})->{runs} // []}),
   'the first question,the lock lost', 'lock lost: the question stored');
like($a->agent_log, qr/session lost-1: its lock was lost .*: stored/,
     'lock lost: logged');

$ev = ask_losing('lost-1', 'all lost',
                 [ qw(DEL airlock:session:lost-1:lock airlock:session:lost-1) ]);
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer',
   'all lost: answered');
is(join(',', map { $_->{code} } of_type('error', $ev)), '',
   'all lost: no error');
$r = $a->session('lost-1');
is(join(',', map { $_->{prompt} } @{($r->{json} // {})->{runs} // []}),
   'the first question,the lock lost,all lost',
   'all lost: the whole session stored again, as the run held it');
is(($r->{json} // {})->{owner}, 'uid:' . $>, 'all lost: its owner kept');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
