#!/usr/bin/perl

# airlock, the user CLI: a run shown as it happens (tool calls with route
# and status, jobs with exit and time, denials, the answer on stdout),
# --json for the raw events, --session to continue, --url for nginx's
# /api/, an exit status that says how the run ended, and what the agent
# sends shown with its terminal controls escaped.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Socket::INET;
use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;
my $cli = "$t->{build}/airlock";
$a->setup(agent => [ '--max-steps', 2 ]);
$a->start_worker;

plan tests => 60;

sub run_cli {
    my (@args) = @_;
    my $out = "$d/cli.out";
    my $err = "$d/cli.err";
    my $pid = fork // die;
    if ($pid == 0) {
        open(STDOUT, '>', $out);
        open(STDERR, '>', $err);
        exec($cli, @args) or exit 127;
    }
    waitpid($pid, 0);
    return ($? >> 8, $t->read_file('cli.out'), $t->read_file('cli.err'));
}

my @sock = ('--socket', $a->{agents}{a}{sock});

$a->script(
    { tool_calls => [ { name => 'prometheus-query',
                        arguments => { query => { query => 'up' } } },
                      { name => 'run_python', arguments => {
                        script => 'print(6 * 7)' } } ] },
    { pieces => [ 'All ', 'fine.' ] });

my ($rc, $out, $err) = run_cli('ask', @sock, '--session', 'cli-1',
                               'is everything up?');
is($rc, 0, 'answered: exit 0');
is($out, "All fine.\n", 'the answer on stdout');
like($err, qr/^session cli-1$/m, 'the session');
like($err, qr{-> prometheus-query  GET /prometheus/query\?query=up}m,
     'the tool call with its route');
like($err, qr/^   200  \d+ bytes$/m, 'its status');
like($err, qr/-> run_python  job [0-9a-f]{32}/, 'the sandbox job');
like($err, qr/job ok, exit 0, \d+ ms \(none\)/, 'with exit and time');
like($err, qr/answer: 2 steps/, 'a summary');

# --json: the raw events; the session continues
$a->script({ pieces => [ 'Yes.' ] });
($rc, $out) = run_cli('ask', @sock, '--session', 'cli-1', '--json',
                      'still?');
is($rc, 0, '--json: exit 0');
my @ev = map { decode_json($_) } split /\n/, $out;
is($ev[0]{type}, 'run', '--json: every event, one a line');
is($ev[-1]{type}, 'done', '--json: done last');
is((grep { $_->{type} eq 'answer' } @ev)[0]{text}, 'Yes.', '--json: answer');
my @prov = $a->provider_requests;
is(scalar(grep { $_->{role} eq 'user' } @{$prov[-1]{body}{messages}}), 2,
   '--session continued the session');

# a denial, then the steps limit: exit 3
$a->script({ tool_calls => [ { name => 'logs', arguments => {
               params => { service => 'api' }, query => { x => '1' } } } ] },
           { tool_calls => [ { name => 'logs', arguments => {
               params => { service => 'api' } } } ] });
($rc, $out, $err) = run_cli('ask', @sock, 'try');
is($rc, 3, 'stopped by a limit: exit 3');
like($err, qr/^session [0-9a-f]{64}$/m,
     'no --session: a new one, 128 random bits and their tag (the '
     . 'agent\'s, for its asker)');
like($err, qr/DENIED 403 \(query\)/, 'the denial shown');
like($err, qr/stopped: the steps limit \(2, at most 2\)/, 'the limit shown');
like($err, qr/^   the run was stopped by a limit per question$/m,
     'and the limit\'s message (--max-user-tokens: when the day ends)');

# an error: exit 1
$a->script({ status => 500 });
($rc, $out, $err) = run_cli('ask', @sock, 'broken');
is($rc, 1, 'an error: exit 1');

# a session id the agent would not take is refused, never cut or sent:
# cut to 64 characters, or with a '?', it named another session
my $long = 's' x 64;
$a->script({ pieces => [ 'Long one.' ] });
$a->ask($long, 'a session with the longest id');
for my $bad ("${long}X", 'cli-1?x', 'cli-1/ask', '') {
    ($rc, $out, $err) = run_cli('history', @sock, $bad);
    is($rc, 2, "history \"$bad\": exit 2");
    like($err, qr/a session id is 1 to 64 of/,
         "history \"$bad\": the rule said");
    is($out, '', "history \"$bad\": no session shown");
}
($rc, $out, $err) = run_cli('ask', @sock, '--session', "${long}X", 'hi');
is($rc, 2, 'ask --session with a bad id: exit 2');
like($err, qr/a session id is 1 to 64 of/, 'ask --session: the rule said');

# through nginx's /api/
$a->script({ pieces => [ 'Via nginx.' ] });
($rc, $out) = run_cli('ask', '--url',
                      'http://127.0.0.1:' . $t->port(8080) . '/api/', 'hi');
is($out, "Via nginx.\n", '--url: through /api/');

# no agent there: exit 2
($rc) = run_cli('ask', '--socket', "$d/nothing.sock", 'hi');
is($rc, 2, 'no agent: exit 2');

# a URL's user and password are not in the error message
my $closed = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1:0')
    or die "listen: $!";
my $port = $closed->sockport;
close $closed;
for my $cmd ([ 'ask', 'hi' ], [ 'history', 'cli-1' ]) {
    ($rc, $out, $err) = run_cli($cmd->[0], '--url',
                                "http://op:s3cr3t-pw\@127.0.0.1:$port/api/",
                                $cmd->[1]);
    is($rc, 2, "$cmd->[0], no agent at --url: exit 2");
    like($err, qr{^airlock: http://\*\*\*\@127\.0\.0\.1:$port/api/v1/}m,
         "$cmd->[0]: the URL named, its user and password left out");
    unlike($err, qr/s3cr3t|op:/, "$cmd->[0]: no password in the message");
}

# what the agent sends is shown with the characters a terminal acts on
# escaped: a fake agent sends an error event that clears the screen and
# sets the clipboard (OSC 52), an answer that moves up and overwrites the
# line above, a C1 CSI and a DEL in a route, raw ones in --json, in the
# history and in an error body
my $fake = "$d/fake-agent.sock";
$t->write_file('fake-agent.pl', <<'PL');
use strict;
use warnings;
use IO::Socket::UNIX;

my $sse = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        . "Connection: close\r\n\r\n";
my $done = qq(data: {"type":"done","outcome":"answer","steps":1,)
         . qq("tokens":1,"ms":1}\n\n);
my $run = qq(data: {"type":"run","session":"cut"}\n\n);
my %answer = (
    '/v1/sessions/esc/ask' => $sse
        . qq(data: {"type":"error","code":"tool","message":"no tool )
        . qq(\\u001b[2J\\u001b]52;c;aGk=\\u0007"}\n\n)
        . qq(data: {"type":"tool_call","tool":"x","route":"r\\u009b31m",)
        . qq("method":"GET","target":"/t\\u007f"}\n\n)
        . qq(data: {"type":"answer","text":"\\u001b[1A\\u001b[2K\\r)
        . qq(Load: 0.1 (ok)\\n\\tfine"}\n\n)
        . $done,
    '/v1/sessions/esc-json/ask' => $sse
        . qq(data: {"type":"answer","text":"a\xc2\x9bb\x7f"}\n\n) . $done,
    '/v1/sessions/esc' => "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
        . qq({"messages":["\e[2J\xc2\x9b\x7f\r"]}),
    '/v1/sessions/esc-500/ask' => "HTTP/1.1 500 Oops\r\n"
        . "Connection: close\r\n\r\nbad \e]52;c;aGk=\a",
    # the longest answer an agent sends: 1 MiB of controls, 6 MiB escaped
    '/v1/sessions/big/ask' => $sse
        . qq(data: {"type":"answer","text":") . ('\u0001' x (1 << 20))
        . qq("}\n\n) . $done,
    # longer than any agent sends
    '/v1/sessions/huge/ask' => $sse
        . qq(data: {"type":"answer","text":") . ('\u0001' x (2 << 20))
        . qq("}\n\n) . $done,
    # the run's stream cut, as nginx's is when the agent dies in a run:
    # its last chunk never comes
    '/v1/sessions/cut/ask' => "HTTP/1.1 200 OK\r\n"
        . "Content-Type: text/event-stream\r\n"
        . "Transfer-Encoding: chunked\r\n\r\n"
        . sprintf("%x\r\n%s\r\n", length($run), $run),
    # a session over 4 MiB, C1 controls at odd and even offsets
    '/v1/sessions/big' => "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
        . qq({"messages":["x) . ("\xc2\x9bz" x (2 << 20)) . qq("]}),
);
$SIG{PIPE} = 'IGNORE';
unlink $ARGV[0];
my $s = IO::Socket::UNIX->new(Local => $ARGV[0], Listen => 8) or die $!;
while (my $c = $s->accept) {
    my $req = '';
    while ($req !~ /\r\n\r\n/) {
        sysread($c, $req, 4096, length $req) or last;
    }
    my ($len) = $req =~ /^Content-Length: (\d+)/mi;
    while (length($req) - index($req, "\r\n\r\n") - 4 < ($len // 0)) {
        sysread($c, $req, 4096, length $req) or last;
    }
    my ($path) = $req =~ m{^\w+ (\S+)};
    print {$c} $answer{$path // ''}
               // "HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n";
    close $c;
}
PL
$t->run_daemon('/usr/bin/perl', "$d/fake-agent.pl", $fake);
$t->wait_for_port("unix:$fake") or die "the fake agent did not start";

my $raw = qr/[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]/;

($rc, $out, $err) = run_cli('ask', '--socket', $fake, '--session', 'esc',
                            'load?');
is($out, "\\u001b[1A\\u001b[2K\\u000dLoad: 0.1 (ok)\n\tfine\n",
   'escapes: the answer\'s controls shown, newline and tab kept');
like($err, qr/error tool: no tool \\u001b\[2J\\u001b\]52;c;aGk=\\u0007$/m,
     'escapes: the error message\'s');
like($err, qr{-> r\\u009b31m  GET /t\\u007f$}m,
     'escapes: a C1 control and DEL in a tool call');
unlike($out . $err, $raw,
       'escapes: no control character reaches the terminal');

($rc, $out) = run_cli('ask', '--socket', $fake, '--session', 'esc-json',
                      '--json', 'load?');
is((split /\n/, $out)[0], '{"type":"answer","text":"a\u009bb\u007f"}',
   'escapes: --json, as JSON escapes');
is(decode_json((split /\n/, $out)[0])->{text}, "a\x{9b}b\x{7f}",
   'escapes: --json, the line decodes to the text the agent sent');

($rc, $out) = run_cli('history', '--socket', $fake, 'esc');
is($out, qq({"messages":["\\u001b[2J\\u009b\\u007f\\u000d"]}\n),
   'escapes: history');

($rc, $out, $err) = run_cli('ask', '--socket', $fake, '--session', 'esc-500',
                            'load?');
like($err, qr/answered 500: bad \\u001b\]52;c;aGk=\\u0007$/m,
     'escapes: an error answer');

# an answer as long as the agent sends is shown; a longer line is said
# to be too long, not "unreachable"; a session of any size is shown
($rc, $out, $err) = run_cli('ask', '--socket', $fake, '--session', 'big',
                            'big?');
is($rc, 0, 'a 1 MiB answer of controls: exit 0');
ok($out eq ('\u0001' x (1 << 20)) . "\n",
   'a 1 MiB answer of controls: shown whole, escaped');

($rc, $out, $err) = run_cli('ask', '--socket', $fake, '--session', 'huge',
                            'huge?');
is($rc, 1, 'an event longer than an agent sends: exit 1');
like($err, qr/an event from the agent is over \d+ bytes/,
     'an event longer than an agent sends: said so');
unlike($err, qr/Failed writing|airlock: http:/,
       'an event longer than an agent sends: not a transport error');

# a run whose stream is cut was reached: it ran, and ended early
($rc, $out, $err) = run_cli('ask', '--socket', $fake, '--session', 'cut',
                            'cut?');
is($rc, 1, 'a stream cut in the run: exit 1, not "could not be reached"');
like($err, qr/the run's stream ended early/, 'a stream cut: said so');
unlike($err, qr/airlock: http:/, 'a stream cut: not a transport error');

($rc, $out, $err) = run_cli('history', '--socket', $fake, 'big');
is($rc, 0, 'history over 4 MiB: exit 0');
ok($out eq qq({"messages":["x) . ('\u009bz' x (2 << 20)) . qq("]}\n),
   'history over 4 MiB: shown whole, escaped');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
