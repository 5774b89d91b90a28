#!/usr/bin/perl

# ngx_http_airlock_module: who the client is.  Unix-socket peers by
# SO_PEERCRED, TCP peers by address, and bearer tokens from
# Proxy-Authorization, which never reaches an upstream.  The address is the
# socket's real peer: realip, which rewrites the connection's address from
# a header, cannot choose it (here realip runs in a location without
# Airlock that hands the request to an Airlock one; in an Airlock location
# "nginx -t" refuses it, see 14-airlock-config.t).  The kernel is asked
# once per connection, by its first request; the requests after it on the
# connection get the same peer (the error log's debug lines count the
# asks).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use POSIX ();
use Test::More;
use Airlock::Prereq qw(absent);
use Airlock::Test;
use Airlock::Proxy;

# the debug lines count how often the kernel is asked for a peer
local $ENV{AIRLOCK_LOG_LEVEL} = 'debug';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

absent('needs root for unix_uid 0 and a second uid') if $> != 0;

$p->keygen;
my $tools = $p->token_sha256('tools-token-1');
my $more = $p->token_sha256('more-token-2');

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  agent: { unix_uid: 0 }
  nobody: { unix_uid: 65534 }
  tools: { token_sha256: "$tools" }
  more: { token_sha256: ["$more"] }
  forwarded: { cidr: 10.9.9.9/32 }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: agent
    clients: [agent]
    match: { method: GET, path: /agent }
    upstream: echo
    to: /agent
  - name: nobody
    clients: [nobody]
    match: { method: GET, path: /nobody }
    upstream: echo
    to: /nobody
  - name: tools
    clients: [tools, more]
    match: { method: GET, path: /tools }
    upstream: echo
    to: /tools
  - name: more
    clients: [more]
    match: { method: GET, path: /more }
    upstream: echo
    to: /more
  - name: forwarded
    clients: [forwarded]
    match: { method: GET, path: /r/forwarded }
    upstream: echo
    to: /forwarded
alerts:
  deny: { threshold: 3, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(
    listen => 'listen unix:%%TESTDIR%%/airlock.sock;',
    locations => <<'EOF'));
        location /r/ {
            set_real_ip_from 127.0.0.1;
            set_real_ip_from unix:;
            real_ip_header X-Forwarded-For;
            try_files /nonexistent @airlocked;
        }

        location @airlocked {
            airlock on;
            %%AIRLOCK_LOCATION%%
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 37;

my $sock = $t->testdir . '/airlock.sock';
my ($r, $j);

sub status { parse_response($_[0])->{status} }
sub reason { my $b = json_body($_[0]); $b ? $b->{reason} : undef }

sub upstream_headers {
    my @all = $t->echo_requests(8081);
    return map { lc $_->[0] } @{$all[-1]{headers}};
}

# unix socket: uid 0 is client "agent"

$r = http_get('/agent', unix => $sock);
is(status($r), 200, 'unix peer uid 0: agent allowed');
is(reason(http_get('/nobody', unix => $sock)), 'no_route',
   'unix peer uid 0: not the route of another client');
is(reason(http_get('/agent')), 'client_unknown',
   'TCP peer without a client: client_unknown');

# a peer with another uid, through the same socket

SKIP: {
    my $pid = open(my $fh, '-|') // die "fork: $!";

    if ($pid == 0) {
        POSIX::setgid(65534);
        POSIX::setuid(65534) or POSIX::_exit(1);
        print http_get('/nobody', unix => $sock) // '';
        print "\n---\n";
        print http_get('/agent', unix => $sock) // '';
        POSIX::_exit(0);
    }

    local $/;
    my $out = <$fh>;
    close $fh;
    my ($nobody, $agent) = split /\n---\n/, $out;

    skip 'could not connect as uid 65534', 2 unless $nobody;

    is(status($nobody), 200, 'unix peer uid 65534: nobody allowed');
    is(reason($agent), 'no_route', 'unix peer uid 65534: not agent');
}

# tokens

$r = http_get('/tools', headers => {
    'Proxy-Authorization' => 'Bearer tools-token-1' });
is(status($r), 200, 'token client allowed');
ok(!grep({ $_ eq 'proxy-authorization' } upstream_headers()),
   'Proxy-Authorization not forwarded');

is(status(http_get('/tools', headers => {
    'Proxy-Authorization' => 'bearer   more-token-2' })), 200,
   'scheme is case-insensitive, spaces skipped');

is(reason(http_get('/agent', headers => {
    'Proxy-Authorization' => 'Bearer tools-token-1' })), 'no_route',
   'token client: route of another client');

is(reason(http_get('/tools', headers => {
    'Proxy-Authorization' => 'Bearer tools-token-x' })), 'client_unknown',
   'unknown token');
is(reason(http_get('/tools', headers => {
    'Proxy-Authorization' => 'Basic dG9vbHM6eA==' })), 'client_unknown',
   'not a bearer token');
is(reason(http_get('/tools', headers => {
    'Proxy-Authorization' => 'Bearer ' })), 'client_unknown',
   'empty token');
is(reason(http_get('/tools', headers => [
    'Proxy-Authorization' => 'Bearer tools-token-1',
    'Proxy-Authorization' => 'Bearer more-token-2' ])), 'request',
   'two Proxy-Authorization headers');

# a token never falls back to the peer, and both must agree

is(reason(http_get('/agent', unix => $sock, headers => {
    'Proxy-Authorization' => 'Bearer wrong' })), 'client_unknown',
   'unix peer with an unknown token');
is(reason(http_get('/tools', unix => $sock, headers => {
    'Proxy-Authorization' => 'Bearer tools-token-1' })), 'client_unknown',
   'token and peer name different clients');

# the deny line and the variables name the client

my @log = $p->deny_log;
is($log[0]{client}, 'agent', 'deny line: unix client');
is($log[1]{client}, undef, 'deny line: unknown client is null');
ok(!grep({ ($_->{detail} // '') =~ /tools-token/ } @log),
   'deny lines hold no token');

my $access = $t->read_file('airlock.log');
like($access, qr/^agent agent - \S+ 0 200$/m, '$airlock_client: agent');
like($access, qr/^tools tools - \S+ 0 200$/m, '$airlock_client: tools');

# realip: X-Forwarded-For names the cidr client 10.9.9.9/32

my $echoed = $p->echo_count;

$r = http_get('/r/forwarded', headers => {
    'X-Forwarded-For' => '10.9.9.9' });
is(reason($r), 'client_unknown',
   'realip: X-Forwarded-For does not make a TCP peer a cidr client');
is($p->echo_count, $echoed, 'realip: the upstream saw nothing');

$r = http_get('/r/forwarded', unix => $sock, headers => {
    'X-Forwarded-For' => '10.9.9.9' });
is(reason($r), 'no_route',
   'realip: a unix peer stays its uid (agent), not the forwarded address');

@log = $p->deny_log;
is($log[-2]{client}, undef, 'realip: deny line of the TCP peer: unknown');
is($log[-1]{client}, 'agent', 'realip: deny line of the unix peer: agent');

# one connection, several requests: the peer is read once, and realip on
# the first request does not become the peer of the next

sub peer_reads {
    my @n = ($t->read_file('error.log') // '')
        =~ /airlock: real peer of connection \d+ read/g;
    return scalar @n;
}

sub pipelined {
    my ($path, $n, %o) = @_;
    my $xff = $o{xff} ? "X-Forwarded-For: $o{xff}\r\n" : '';
    my $req = join '', map {
        "GET $path HTTP/1.1\r\nHost: localhost\r\n$xff"
        . ($_ == $n ? "Connection: close\r\n" : '') . "\r\n"
    } 1 .. $n;
    return $t->http($req, %o) // '';
}

sub count { my ($re, $s) = @_; my @m = $s =~ /$re/g; scalar @m }

my $reads = peer_reads();

$r = pipelined('/agent', 3, unix => $sock);
is(count(qr{^HTTP/1\.1 200 }m, $r), 3,
   'keepalive: three requests of the unix peer uid 0 allowed');
is(peer_reads() - $reads, 1, 'keepalive: unix peer read once');

$reads = peer_reads();
$r = pipelined('/r/forwarded', 3, unix => $sock, xff => '10.9.9.9');
is(count(qr/"reason":\s*"no_route"/, $r), 3,
   'keepalive, realip: every request of the unix peer stays agent');
is(peer_reads() - $reads, 1, 'keepalive, realip: unix peer read once');

$reads = peer_reads();
$echoed = $p->echo_count;
$r = pipelined('/r/forwarded', 3, xff => '10.9.9.9');
is(count(qr/"reason":\s*"client_unknown"/, $r), 3,
   'keepalive, realip: every request of the TCP peer stays unknown');
is($p->echo_count, $echoed, 'keepalive, realip: the upstream saw nothing');
is(peer_reads() - $reads, 1, 'keepalive, realip: TCP peer read once');

# one connection, tokens changing from request to request: each request
# is the client of its own token; the connection keeps its last answer
# for the same token only

sub kept {
    my @n = ($t->read_file('error.log') // '')
        =~ /airlock: client of connection \d+ kept/g;
    return scalar @n;
}

my $kept = kept();
# (tools-token-9 differs from the token before it in its last byte only)
my @tokens = ('tools-token-1', 'more-token-2', 'more-token-2',
              'tools-token-1', 'tools-token-9', 'wrong-token-3',
              'more-token-2', undef);
$r = $t->http(join('', map {
        "GET /more HTTP/1.1\r\nHost: localhost\r\n"
        . (defined $tokens[$_]
           ? "Proxy-Authorization: Bearer $tokens[$_]\r\n" : '')
        . ($_ == $#tokens ? "Connection: close\r\n" : '') . "\r\n"
    } 0 .. $#tokens)) // '';
is(join(' ', $r =~ m{^HTTP/1\.1 (\d+) }mg),
   '403 200 200 403 403 403 200 403',
   'keepalive, tokens: each request is the client of its own token');
is(join(' ', map { $_->{reason} // '' } ($p->deny_log)[-5 .. -1]),
   'no_route no_route client_unknown client_unknown client_unknown',
   'keepalive, tokens: the refusals name the right reasons');
is(kept() - $kept, 1, 'keepalive, tokens: only the repeated token is kept');

$reads = peer_reads();
http_get('/agent', unix => $sock);
http_get('/agent');
is(peer_reads() - $reads, 2, 'a new connection reads its own peer');

is($t->error_log_check, '', 'no alerts');
