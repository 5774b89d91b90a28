#!/usr/bin/perl

# Every user's questions reach the gateway as one client, the agent's:
# one user (a uid, or one of the --api-peer's) could spend the gateway's
# token budget for everyone.  --max-user-tokens bounds the tokens one
# owner's questions use in a UTC day, as the gateway reports each model
# call's: counted after each call in airlock:quota:tokens:<owner>
# (expiring at the day's end, 00:00 UTC), against the same owner the
# bytes quota charges.  A question of an owner at or over it is refused,
# 429 "quota", before the model is called; a run going on ends with a
# "limit" event before its next model call, its session stored; another
# owner is served; root is held to it too; once the count expires,
# questions are taken again.  A usage without total_tokens counts as its
# parts added (prompt and completion, or input and output tokens).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use AgentTest;

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 30000 ]);

# q: 1000 tokens a day an owner past what a short question's first call
# is counted before it is made (its whole request: the quota would not
# let it be made at all); z: no limit
my $F = $a->first_prompt('x' x 16, '--max-user-tokens', 0);
my $Q = $F + 1000;
$a->start_agent('q', '--max-wall', 30000, '--max-user-tokens', $Q,
                '--max-tokens', 100000);
$a->start_agent('z', '--max-wall', 30000, '--max-user-tokens', 0,
                '--max-tokens', 100000);

plan tests => 41;

my ($ALICE, $BOB) = (61931, 61932);
my $logs = { name => 'logs', arguments => {
    params => { service => 'api' } } };

sub redis { return $a->redis_cli(@_) }

sub ask {
    my ($name, $uid, $id, $prompt, $extra) = @_;
    my $body = encode_json({ prompt => $prompt });
    my $raw = scalar $a->as_uid($a->{agents}{$name}{sock}, $uid,
                                "POST /v1/sessions/$id/ask HTTP/1.1\r\n"
                                . "Host: a\r\n" . ($extra // '')
                                . "Content-Length: "
                                . length($body)
                                . "\r\nConnection: close\r\n\r\n$body");
    my $r = Airlock::Test::parse_response($raw);
    $r->{events} = [ AgentTest::events($raw) ];
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    $r->{what} = ($r->{status} // 0) . ' ' . ($r->{json}{error} // '');
    return $r;
}

sub answered {
    my ($r) = @_;
    return ($r->{status} // 0) == 200
           && scalar(AgentTest::of_type('answer', $r->{events})) == 1;
}

sub calls { scalar(() = $a->provider_requests) }

sub tokens { redis('GET', "airlock:quota:tokens:$_[0]") }

# ms from Redis's clock to the next 00:00 UTC
sub to_midnight {
    my ($s, $us) = split /\n/, redis('TIME');
    return 86400000 - (($s % 86400) * 1000 + int($us / 1000));
}

# the counts are of one UTC day: the test starts well inside one, its
# last minutes waited out (Redis's clock, polled)
for (1 .. 4000) {
    last if to_midnight() > 300000 && to_midnight() < 86400000 - 1000;
    sleep 0.1;
}

$a->llm->script_all({ pieces => [ 'fine' ] });

# ---- alice's calls are counted, across her sessions -------------------------
$a->script({ pieces => [ 'one' ],
             usage => { prompt => 600, completion => 100 } });
my $r = ask('q', $ALICE, 'alice-1', 'first');
ok(answered($r), 'alice asks: answered')
    or diag("$r->{what}: " . ($r->{body} // ''));
is(tokens("uid:$ALICE"), '700', '... her day counts the call\'s 700 tokens');
my $pttl = redis('PTTL', "airlock:quota:tokens:uid:$ALICE");
my $left = to_midnight();
ok($pttl > 0 && abs($pttl - $left) < 5000,
   "... expiring at 00:00 UTC ($pttl ms, the day's end in $left ms)");

# a run that crosses the quota ends before its next model call
my $before = calls();
$a->script({ tool_calls => [ $logs ],
             usage => { prompt => $F + 300, completion => 100 } },
           { pieces => [ 'never' ] });
$r = ask('q', $ALICE, 'alice-2', 'look at the logs');
is($r->{status}, 200, 'her next question, a new session: taken (700 used)');
my @l = AgentTest::of_type('limit', $r->{events});
is(scalar(@l) == 1 && $l[0]{limit}, 'user_tokens',
   '... its run ends with a user_tokens limit');
like($l[0]{message} // '', qr/--max-user-tokens \($Q\)/,
     '... naming --max-user-tokens');
is($l[0]{value}, $F + 1100, '... her day\'s count');
is((AgentTest::of_type('done', $r->{events}))[0]{outcome}, 'limit',
   '... outcome limit');
is(scalar(AgentTest::of_type('answer', $r->{events})), 0, '... no answer');
is(calls(), $before + 1, '... the model called once, not again');
is(tokens("uid:$ALICE"), $F + 1100, '... counted in the same day: 1100 '
   . 'past the first call\'s count');
my $s = decode_json(redis('GET', 'airlock:session:alice-2') || '{}');
is($s->{runs}[-1]{outcome}, 'limit', '... the run stored in her session');
ok((grep { ($_->{role} // '') eq 'tool' } @{$s->{messages} // []}),
   '... its tool result too');

# ---- over: refused before the model is called -------------------------------
$before = calls();
$r = ask('q', $ALICE, 'alice-3', 'one more');
is($r->{what}, '429 quota', 'her next question, a new session: 429 quota');
like($r->{json}{message} // '', qr/--max-user-tokens \($Q\)/,
     '... naming --max-user-tokens');
my ($in) = ($r->{json}{message} // '') =~ /until the day ends, in (\d+) s/;
$left = to_midnight();
ok(defined $in && abs($in * 1000 - $left) < 5000,
   '... and when the day ends (in ' . ($in // 'none') . " s; $left ms)");
is(calls(), $before, '... the model not called');
is(redis('EXISTS', 'airlock:session:alice-3', 'airlock:session:alice-3:lock'),
   '0', '... nothing stored, its lock let go');
my $len = redis('STRLEN', 'airlock:session:alice-1');
is(ask('q', $ALICE, 'alice-1', 'again')->{what}, '429 quota',
   'her question in her stored session: 429 quota');
is(redis('STRLEN', 'airlock:session:alice-1'), $len, '... it is unchanged');
is(calls(), $before, '... the model not called');
is(tokens("uid:$ALICE"), $F + 1100, '... her count unchanged');

# ---- another owner, root ----------------------------------------------------
$a->script({ pieces => [ 'his' ],
             usage => { prompt => 8, completion => 2 } });
ok(answered(ask('q', $BOB, 'bob-1', 'mine')), 'bob is served meanwhile');
is(calls(), $before + 1, '... the model called for him');
is(tokens("uid:$BOB"), '10', '... his own count');
is(ask('q', 0, 'alice-1', 'root in hers',
        "X-Airlock-Others-Session: yes\r\n")->{what}, '429 quota',
   'root in alice\'s session: her quota, 429');
$a->script({ pieces => [ 'big' ],
             usage => { prompt => $F + 1000, completion => 500 } });
ok(answered(ask('q', 0, 'root-1', 'a big one')), 'root uses his own');
is(tokens('uid:0'), $F + 1500, '... counted');
is(ask('q', 0, 'root-2', 'more')->{what}, '429 quota',
   '... and is held to it too');
ok(answered(ask('z', 0, 'root-3', 'no limit here')),
   'an agent with --max-user-tokens 0 on the same Redis: served');
is(tokens('uid:0'), $F + 1500, '... and counts nothing');

# ---- once the count expires (at the day's end), questions are taken ---------
redis('PEXPIRE', "airlock:quota:tokens:uid:$ALICE", 100);
my $gone = 0;
for (1 .. 100) {
    $gone = redis('EXISTS', "airlock:quota:tokens:uid:$ALICE") eq '0';
    last if $gone;
    sleep 0.1;
}
ok($gone, 'her count expires');
$a->script({ pieces => [ 'new' ],
             usage => { prompt => 8, completion => 2 } });
ok(answered(ask('q', $ALICE, 'alice-1', 'a new day')),
   '... then her question is taken');
is(tokens("uid:$ALICE"), '10', '... counted from nothing');

# ---- a usage without total_tokens: its parts added --------------------------
# a gateway whose answers report prompt_tokens and completion_tokens
# (the first), input_tokens and output_tokens (the next), no total
$t->write_file('parts.py', <<'EOF');
import json, os, socketserver, sys

path = sys.argv[1]
count = [0]

def event(obj):
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() \
           + b"\n\n"

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
        self.rfile.read(length)
        count[0] += 1
        usage = ({"prompt_tokens": 300, "completion_tokens": 50}
                 if count[0] == 1 else
                 {"input_tokens": 20, "output_tokens": 5})
        out = [event({"choices": [{"index": 0, "delta": {"content": "ok"},
                                   "finish_reason": None}]}),
               event({"choices": [{"index": 0, "delta": {},
                                   "finish_reason": "stop"}]}),
               event({"choices": [], "usage": usage}),
               b"data: [DONE]\n\n"]
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
my $d = $t->testdir;
$t->run_daemon('python3', "$d/parts.py", "$d/parts.sock");
$t->wait_for_port("unix:$d/parts.sock") or die "parts.py did not start\n";
$a->start_agent('p', '--gateway', "$d/parts.sock", '--max-wall', 30000,
                '--max-user-tokens', $Q);
my $CAROL = 61933;
ok(answered(ask('p', $CAROL, 'carol-1', 'parts')),
   'a usage of prompt_tokens and completion_tokens: answered');
is(tokens("uid:$CAROL"), '350', '... counted as their sum');
ok(answered(ask('p', $CAROL, 'carol-2', 'parts')),
   'a usage of input_tokens and output_tokens: answered');
is(tokens("uid:$CAROL"), '375', '... counted as their sum');

# ---- the option -------------------------------------------------------------
like(`$t->{build}/airlock-agent --help`, qr/--max-user-tokens N/,
     '--help names --max-user-tokens');
for my $bad ('1k', '-1') {
    my $out = `$t->{build}/airlock-agent --max-user-tokens '$bad' 2>&1`;
    my $rc = $? >> 8;
    like("$rc $out", qr/^2 airlock-agent: --max-user-tokens wants a number /,
         "--max-user-tokens $bad: refused at start, exit status 2");
}
