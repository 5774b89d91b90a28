#!/usr/bin/perl

# The proxy variables (http_proxy, HTTP_PROXY, https_proxy, HTTPS_PROXY,
# ALL_PROXY, all_proxy; no_proxy empty) never send a call anywhere but
# where it is meant to go: the airlock CLI's --url went to the proxy
# they named (libcurl reads them), question, session id and a password
# in the URL with it; the CLI and the agent now tell libcurl to use no
# proxy.  The agent's calls go to the gateway's unix socket, where
# libcurl 7.88 already used no proxy: it is checked here on the host's
# network, where the proxy could be reached, so a libcurl that did use
# one would fail the test.  A fake proxy on a loopback port counts the
# connections it gets: none.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Socket::INET;
use POSIX ();
use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;
my $cli = "$t->{build}/airlock";

$a->setup(agent => [ '--sandbox', 'none' ]);

plan tests => 12;

# the fake proxy: one line per connection, then a 502 and close
my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                              Listen => 8, ReuseAddr => 1)
    or die "cannot listen: $!";
my $pport = $l->sockport;
$t->write_file('proxied', '');

my $proxy = fork // die;
if ($proxy == 0) {
    while (my $c = $l->accept) {
        my $req = '';
        sysread($c, $req, 4096);
        my ($line) = $req =~ /^([^\r\n]*)/;
        open my $fh, '>>', "$d/proxied" or die;
        print $fh (($line // '') . "\n");
        close $fh;
        print {$c} "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n"
                   . "Connection: close\r\n\r\n";
        close $c;
    }
    POSIX::_exit(0);
}
close $l;

END { kill 'TERM', $proxy if $proxy; }

my $to = "http://127.0.0.1:$pport";
my %env = (http_proxy => $to, HTTP_PROXY => $to, https_proxy => $to,
           HTTPS_PROXY => $to, ALL_PROXY => $to, all_proxy => $to,
           no_proxy => '', NO_PROXY => '');

sub run_cli {
    my (@args) = @_;
    my $pid = fork // die;
    if ($pid == 0) {
        delete @ENV{qw(AIRLOCK_URL AIRLOCK_AGENT_SOCKET)};
        @ENV{keys %env} = values %env;
        open(STDOUT, '>', "$d/cli.out");
        open(STDERR, '>', "$d/cli.err");
        exec($cli, @args) or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    return ($? >> 8, $t->read_file('cli.out') // '',
            $t->read_file('cli.err') // '');
}

my $url = 'http://user:FAKE-pass@127.0.0.1:' . $t->port(8080) . '/api/';
my ($rc, $out, $err);

$a->script({ pieces => [ 'direct' ] });
($rc, $out, $err) = run_cli('ask', '--url', $url, '--session', 'px1',
                            'through nginx?');
is("$rc $out", "0 direct\n", 'airlock ask --url: answered by nginx')
    or diag($err);

($rc, $out) = run_cli('history', '--url', $url, 'px1');
like("$rc $out", qr/\A0 .*through nginx\?/, 'airlock history --url: read');

$a->script({ pieces => [ 'socket' ] });
($rc, $out) = run_cli('ask', '--socket', $a->{agents}{a}{sock},
                      '--session', 'px2', 'through the socket?');
is("$rc $out", "0 socket\n", 'airlock ask --socket: answered');

is($t->read_file('proxied'), '', 'the CLI: no connection to the proxy');

# an agent on the host's network, with the variables: a tool call and
# the model's two calls
$t->write_file('proxied', '');
my $n0 = () = $a->provider_requests;
$a->start_agent_with('px', { netns => 0, env => \%env },
                     '--sandbox', 'none');

$a->script({ tool_calls => [
                 { name => 'prometheus-query',
                   arguments => { query => { query => 'node_load1' } } } ] },
           { pieces => [ 'the load is fine' ] });
my $ev = $a->ask('px3', 'the load?', agent => 'px');
my ($done) = of_type('done', $ev);
is($done && $done->{outcome}, 'answer', 'the agent: answered');
my ($tool) = of_type('tool_result', $ev);
is($tool && $tool->{status}, 200, 'its tool call answered 200');
is(scalar(() = $a->provider_requests) - $n0, 2,
   'the provider got the model\'s two calls');
is($t->read_file('proxied'), '', 'the agent: no connection to the proxy');

my $log = $a->agent_log('px');
unlike($log, qr/127\.0\.0\.1:\Q$pport\E/, 'the proxy is not in its log');

# the variables do reach the programs: curl itself uses them
$t->write_file('proxied', '');
my $c = `http_proxy=$to curl -s -o /dev/null -w '%{http_code}' \\
         http://127.0.0.1:1/ 2>/dev/null`;
is($c, '502', 'curl with http_proxy goes to the fake proxy');
like($t->read_file('proxied'), qr{\AGET http://127\.0\.0\.1:1/ },
     'the fake proxy counts it');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
