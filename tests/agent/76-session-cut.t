#!/usr/bin/perl

# airlock-agent: a question that alone would make its session over the
# 16 MiB a session keeps is stored all the same, its largest strings cut
# to a note.  What the model writes is bounded per step (16 calls of
# 256 KiB of arguments), and JSON writes a control character in six
# bytes: one answer of 16 calls whose arguments are control characters
# is 24 MiB as JSON.  Such a question was not stored at all: the prompt
# and the run's record (what the model did in it) were lost, and the
# model could make it so whenever it liked.  Now each of the largest
# strings of the question (arguments, texts, results) is replaced by a
# note of its size, the largest first, until the session fits; the
# next question goes on from it, the note in its history.

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

plan tests => 11;

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

$a->start_agent('b', '--gateway', "$d/bulky.sock", '--max-wall', 60000,
                '--max-tokens', 1000000000);

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
my @cut = grep { $_->{function}{arguments} =~ /^\[not kept: \d+ bytes/ }
          @calls;
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

is($a->agent_errors, '', 'no sanitizer reports from the agents');
