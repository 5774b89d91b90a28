#!/usr/bin/perl

# Self-test of the test harness (tests/lib/Airlock/Test.pm) and the echo
# upstream, with plain nginx: no Airlock module needed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;

my $t = Airlock::Test->new;

my $conf = <<'EOF';
%%TEST_GLOBALS%%

http {
    %%TEST_GLOBALS_HTTP%%

    upstream echo {
        server 127.0.0.1:%%PORT_8081%%;
        keepalive 4;
    }

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        listen unix:%%TESTDIR%%/nginx.sock;
        server_name localhost;

        location / {
            proxy_pass http://echo;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }

        location = /version {
            return 200 "VERSION";
        }
    }
}
EOF

(my $v1 = $conf) =~ s/VERSION/v1/;
(my $v2 = $conf) =~ s/VERSION/v2/;

$t->start_echo(8081);
$t->write_file_expand('nginx.conf', $v1);
$t->run;

plan tests => 34;

# requests reach the upstream intact

my $r = parse_response(http_get('/path/x?a=1&b=%20',
                                headers => [ 'X-Test' => 'one',
                                             'X-Test' => 'two' ]));
my $j = echo_json($r->{body});

is($r->{status}, 200, 'GET proxied');
is($j->{method}, 'GET', 'GET method');
is($j->{target}, '/path/x?a=1&b=%20', 'GET target');
is($j->{path}, '/path/x', 'GET path');
is($j->{query}, 'a=1&b=%20', 'GET query');
is($j->{version}, 'HTTP/1.1', 'upstream HTTP/1.1');
is_deeply([ grep { $_->[0] eq 'X-Test' } @{$j->{headers}} ],
          [ [ 'X-Test', 'one' ], [ 'X-Test', 'two' ] ],
          'GET headers in order');

my $text = "caf\xc3\xa9 \x00 end\n";
$j = echo_json(http_post('/post', $text));
is($j->{method}, 'POST', 'POST method');
is($j->{body}, $text, 'POST UTF-8 body intact');

my $binary = join '', map { chr } 0 .. 255;
$j = echo_json(http_post('/bin', $binary));
is($j->{body}, $binary, 'POST binary body intact');

my $chunked = http("POST /chunked HTTP/1.1\r\nHost: localhost\r\n"
                   . "Transfer-Encoding: chunked\r\nConnection: close\r\n"
                   . "\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
is(echo_json($chunked)->{body}, 'hello world', 'chunked request body');

my @seen = $t->echo_requests(8081);
is(scalar @seen, 4, 'upstream log: one line per request');
is($seen[1]{body}, $text, 'upstream log holds the body');
is($seen[3]{conn}, $seen[0]{conn}, 'upstream keepalive reused');

# the echo upstream's special behaviours, through nginx

$r = parse_response(http_get('/', headers => { 'X-Echo-Status' => 418 }));
is($r->{status}, 418, 'X-Echo-Status');

$r = parse_response(http_get('/__reflect-headers',
    headers => [ 'X-Echo-Header' => 'Set-Cookie: s=1', 'X-Probe' => 'p' ]));
is($r->{headers}{'set-cookie'}, 's=1', 'X-Echo-Header');
is($r->{headers}{'x-echo-x-probe'}, 'p', '/__reflect-headers');

$r = parse_response(http_get('/',
    headers => { 'X-Echo-Redirect' => 'http://example.com/next' }));
is($r->{headers}{location}, 'http://example.com/next', 'X-Echo-Redirect');

$r = parse_response(http_get('/', headers => { 'X-Echo-Size' => 100000 }));
is(length $r->{body}, 100000, 'X-Echo-Size');

# HTTP/1.1 to nginx so that the response stays chunked end to end
$r = parse_response(http("GET /slow HTTP/1.1\r\nHost: localhost\r\n"
                         . "X-Echo-Chunked: 1\r\nX-Echo-Delay-Ms: 5\r\n"
                         . "Connection: close\r\n\r\n"));
is(echo_json($r->{body})->{path}, '/slow', 'X-Echo-Chunked body');
ok(@{$r->{chunks}} > 5, 'X-Echo-Chunked in pieces');

# the client: raw bytes, keep-alive, unix sockets

my $before = () = $t->echo_requests(8081);

like(http("GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n"
          . "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
     qr{^HTTP/1\.1 400 }, 'Content-Length with Transfer-Encoding: 400');
like(http("get / HTTP/1.0\r\n\r\n"), qr{^HTTP/1\.1 400 },
     'lower-case method: 400');
like(http("GET / HTTP/1.0\r\nX-Nul: a\x00b\r\n\r\n"), qr{^HTTP/1\.1 400 },
     'NUL in a header: 400');
is(scalar(() = $t->echo_requests(8081)), $before,
   'malformed requests never reach the upstream');

my $s = http("GET /ka1 HTTP/1.1\r\nHost: localhost\r\n\r\n", start => 1);
my $r1 = http(undef, socket => $s, one => 1);
my $r2 = http("GET /ka2 HTTP/1.1\r\nHost: localhost\r\n\r\n",
              socket => $s, one => 1);
close $s;
is(echo_json($r2)->{path}, '/ka2', 'keep-alive: second response')
    or diag($r1, $r2);

is(echo_json(http_get('/via-unix', unix => $t->testdir . '/nginx.sock'))
   ->{path}, '/via-unix', 'unix socket');

# reload

like(http_get('/version'), qr/v1$/, 'before reload');
$t->write_file_expand('nginx.conf', $v2);
$t->reload;
like(http_get('/version'), qr/v2$/, 'after reload');

# nginx -t

$t->write_file_expand('nginx.conf', $v2 =~ s/server_name/bogus_directive/r);
my ($status, $out) = $t->reload_test;
isnt($status, 0, 'broken config: nginx -t fails');
like($out, qr/unknown directive "bogus_directive"/, 'broken config: message');

# run() returns once every worker has its title ("nginx: worker
# process"), by which _workers() knows it: the master listens before it
# forks them, and 32 workers do not all have it by then (the old run()
# returned with some unnamed, every time)

my $many = Airlock::Test->new;
$many->write_file('nginx.conf', $many->expand(<<'CONF')
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    server { listen 127.0.0.1:%%PORT_8080%%; }
}
CONF
    =~ s/worker_processes 1;/worker_processes 32;/r);
$many->run;
is(scalar(my @w32 = $many->_workers), 32, "run(): all 32 workers named");
$many->stop;

# cleanup when a test dies: a child script starts nginx and the echo
# upstream, then dies; nothing it started may outlive it

my $child = <<'EOF';
use Airlock::Test;
my $t = Airlock::Test->new;
my $echo = $t->start_echo(8081);
$t->write_file_expand('nginx.conf', <<'CONF');
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    server { listen 127.0.0.1:%%PORT_8080%%; }
}
CONF
$t->run;
print join(' ', $echo, $t->nginx_pid, map { $_->[0] } $t->_workers), "\n";
die "on purpose\n";
EOF

my $script = $t->write_file('dies.pl', $child);
my @pids = split ' ', qx{$^X -I$FindBin::Bin/../lib $script 2>/dev/null};

# nginx's workers leave after their master, and a process the test killed
# is gone only once reaped (by init, when its parent died first): a live
# process is one that exists and is not a zombie, after a generous wait
sub alive {
    my ($pid) = @_;
    return 0 unless kill 0, $pid;
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    my $stat = <$fh> // '';
    return $stat !~ /^\d+ \(.*\) Z /s;
}
my @alive = grep { alive($_) } @pids;
for (1 .. 100) {
    last unless @alive;
    select undef, undef, undef, 0.1;
    @alive = grep { alive($_) } @alive;
}
ok(@pids >= 3 && !@alive, 'processes stopped when a test dies')
    or diag("pids: @pids; alive: @alive");

is($t->error_log_check, '', 'no alerts');
