#!/usr/bin/perl

# airlock-agent's options and the airlock CLI's options and variables:
# a bad value is refused at start, whole, on one line that names it,
# with the usage-error status (2; 1 for an --llm-prefix the policy has
# no llm entry for, as for a --client it lacks), never cut to fit or
# sent.  --llm-prefix was joined into a 512-byte request target and cut
# there, and could carry '?', '#', '%' or a newline into it; an empty
# socket path (--listen, --gateway, --socket, "unix:" in --redis) named
# an abstract socket that anything in the namespace may bind; hiredis cut
# a long unix: path; a number or a --redis port took leading spaces, a
# sign or trailing junk; a newline in a value split the error line.
# --url with a '?' or a '#' sent the session's path as a query, or not
# at all.  Good values still work: an agent started with all of them
# explicit answers through the CLI.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Socket::INET;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;
my $cli = "$t->{build}/airlock";

$a->setup(agent => [ '--llm-prefix', '/v1/proxy/openai',
                     '--model', 'gpt-4o-mini',
                     '--system', "Be brief.\n\tAnd exact.",
                     '--client', 'agent', '--sandbox', 'none',
                     '--max-steps', '4', '--history-bytes', '0',
                     '--redis', "unix:$d/redis.sock" ]);

my @agent_bad = (
    # [ option, value, status ]
    [ 'llm-prefix', '/v1/proxy/' . ('a' x 4990), 2 ],
    [ 'llm-prefix', '/v1/proxy/' . ('a' x 490), 2 ],
    [ 'llm-prefix', "/v1/proxy/openai\r\nX-Forged: 1", 2 ],
    [ 'llm-prefix', '/v1/proxy/openai?x=', 2 ],
    [ 'llm-prefix', '/v1/proxy/openai#', 2 ],
    [ 'llm-prefix', '/v1/proxy/%6fpenai', 2 ],
    [ 'llm-prefix', '/v1/proxy/open ai', 2 ],
    [ 'llm-prefix', 'v1/proxy/openai', 2 ],
    [ 'llm-prefix', '', 2 ],
    [ 'llm-prefix', '/v1/proxy/other', 1 ],
    [ 'llm-prefix', '/v1/proxy/openai/../openai', 1 ],
    [ 'listen', '', 2 ],
    [ 'gateway', '', 2 ],
    [ 'gateway', '/tmp/' . ('g' x 200), 2 ],
    [ 'gateway', "$d/airlock.sock\n", 2 ],
    [ 'redis', 'unix:', 2 ],
    [ 'redis', 'unix:/tmp/' . ('r' x 200), 2 ],
    [ 'redis', '127.0.0.1:6379x', 2 ],
    [ 'redis', '127.0.0.1: 6379', 2 ],
    [ 'redis', '127.0.0.1:0', 2 ],
    [ 'redis', ':6379', 2 ],
    [ 'model', '', 2 ],
    [ 'model', "gpt-4o-mini\nx", 2 ],
    [ 'model', 'm' x 5000, 2 ],
    [ 'client', '', 2 ],
    [ 'sandbox', '', 2 ],
    [ 'system', '', 2 ],
    [ 'system', "text\x1b[2J", 2 ],
    [ 'max-steps', ' 4', 2 ],
    [ 'max-steps', '+4', 2 ],
    [ 'max-steps', '4x', 2 ],
    [ 'max-steps', "\n4", 2 ],
    [ 'max-steps', '99999999999999999999', 2 ],
    [ 'max-wall', '-1', 2 ],
    [ 'history-bytes', '', 2 ],
);

plan tests => 2 * @agent_bad + 18;

# the agent with one bad value: it must exit at once, before it listens
sub run_agent {
    my ($opt, $value) = @_;
    return $a->run_briefly("--$opt" => $value);
}

for my $c (@agent_bad) {
    my ($opt, $value, $status) = @$c;
    my $shown = length($value) > 40 ? substr($value, 0, 40) . '...'
                                    : $value;
    $shown =~ s/([\x00-\x1f])/sprintf('\\x%02x', ord $1)/ge;

    my ($rc, $err) = run_agent($opt, $value);
    is($rc, $status, "--$opt \"$shown\": refused, exit $status");
    like($err, qr/\Aairlock-agent: --\Q$opt\E wants [^\n]*\n\z/,
         "--$opt \"$shown\": one line that names it");
}

# the CLI: a fake agent on a loopback port records what reaches it
my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                              Listen => 8, ReuseAddr => 1)
    or die "cannot listen: $!";
my $port = $l->sockport;

my $server = fork // die;
if ($server == 0) {
    while (my $c = $l->accept) {
        my $req = '';
        while ($req !~ /\r\n\r\n/) {
            sysread($c, $req, 4096, length $req) or last;
        }
        my ($line) = $req =~ /^([^\r\n]*)/;
        open my $fh, '>>', "$d/requests" or die;
        print $fh "$line\n";
        close $fh;
        print {$c} "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                   . "Connection: close\r\n\r\n";
        close $c;
    }
    POSIX::_exit(0);
}
close $l;

END { kill 'TERM', $server if $server; }

sub run_cli {
    my ($env, @args) = @_;
    my $pid = fork // die;
    if ($pid == 0) {
        delete @ENV{qw(AIRLOCK_URL AIRLOCK_AGENT_SOCKET)};
        @ENV{keys %$env} = values %$env;
        open(STDOUT, '>', "$d/cli.out");
        open(STDERR, '>', "$d/cli.err");
        exec($cli, @args) or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    my @r = ($? >> 8, $t->read_file('cli.out') // '',
             $t->read_file('cli.err') // '',
             $t->read_file('requests') // '');
    unlink "$d/requests";
    return @r;
}

my $sock = $a->{agents}{a}{sock};
my $base = "http://127.0.0.1:$port/api";
my ($rc, $out, $err, $sent);

$a->script({ pieces => [ 'forty-two' ] });
($rc, $out) = run_cli({}, 'ask', '--socket', $sock, 'good values?');
is($rc, 0, 'an agent with every value explicit answers');
is($out, "forty-two\n", 'the answer');

($rc, $out, $err) = run_cli({}, 'ask', '--socket', '', 'q');
is($rc, 2, 'ask --socket "": exit 2');
like($err, qr/\Aairlock: --socket wants [^\n]*\n\z/, '--socket named');

($rc, $out, $err) = run_cli({}, 'ask', '--socket', '/tmp/' . 's' x 200,
                            'q');
like($err, qr/\Aairlock: --socket wants [^\n]*\n\z/,
     'a socket path over 107 bytes: refused, named');

($rc, $out, $err) = run_cli({ AIRLOCK_AGENT_SOCKET => '/tmp/' . 's' x 200 },
                            'history', 'abc');
like($err, qr/\Aairlock: \$AIRLOCK_AGENT_SOCKET wants [^\n]*\n\z/,
     'the variable: refused, named');

for my $u ("$base?x=1", "$base#x") {
    ($rc, $out, $err, $sent) = run_cli({}, 'ask', '--url', $u,
                                       '--session', 'abc', 'q');
    is("$rc $sent", '2 ', "--url $u: exit 2, nothing sent");
    like($err, qr/\Aairlock: --url wants [^\n]*\n\z/, "--url $u: named");
}

($rc, $out, $err, $sent) = run_cli({ AIRLOCK_URL => "$base?x=1" },
                                   'history', 'abc');
is("$rc $sent", '2 ', '$AIRLOCK_URL with a query: exit 2, nothing sent');

($rc, $out, $err) = run_cli({}, 'history', '--url', "file://$d", 'abc');
like($err, qr/\Aairlock: --url wants [^\n]*\n\z/, 'a file: URL refused');

($rc, $out, $err, $sent) = run_cli({}, 'history', '--url', $base, 'abc');
is($sent, "GET /api/v1/sessions/abc HTTP/1.1\n", 'a good --url is used');

# an empty variable counts as unset: the socket is used, not a URL ""
$a->script({ pieces => [ 'unset' ] });
($rc, $out) = run_cli({ AIRLOCK_URL => '', AIRLOCK_AGENT_SOCKET => $sock },
                      'ask', 'empty url?');
is("$rc $out", "0 unset\n", 'AIRLOCK_URL "": unset, the socket answers');

($rc, $out, $err) = run_cli({}, 'ask', '--socket', $sock, "\xff\xfe");
is("$rc $err", "2 airlock: the question is not UTF-8 text\n",
   'a question that is not UTF-8: refused as such');

($rc, $out, $err) = run_cli({}, 'ask', '--socket', $sock, 'q' x 70000);
like("$rc $err", qr/\A2 airlock: the question is 70000 bytes, over/,
     'a question over 65536 bytes: refused before it is sent');

($rc, $out, $err) = run_cli({}, 'history', '--socket', $sock,
                            '--session', 'abc', 'def');
is($rc, 2, 'history --session: refused');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
