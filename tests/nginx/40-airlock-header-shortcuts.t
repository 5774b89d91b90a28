#!/usr/bin/perl

# ngx_http_airlock_module: the request header shortcuts after the header
# rewrite.  nginx keeps pointers to some request headers (r->headers_in.host,
# .content_length, .cookies, ...); variables and other modules read the
# header through them.  After Airlock removes the client's headers and adds
# the route's credentials, every one of them must point at a kept header or
# at nothing: never at a removed header, and never at the slot an injected
# credential took.  Each request below sends the headers nginx 1.22 keeps a
# pointer to, in an order that puts a removed header where the credential
# goes, and the access log prints every variable that reads a pointer.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

# nginx's own debug log prints the request headers, credentials too
local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 'shortcut-s3cr3t-TOKEN-0123456789';
my $sealed = $p->seal($tok);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: post
    clients: [local]
    match: { method: POST, path: /post }
    upstream: echo
    to: /post
    body: { max_bytes: 1000 }
    inject: { Authorization: "Bearer {tok}" }
  - name: get
    clients: [local]
    match: { method: GET, path: /get }
    upstream: echo
    to: /get
    inject: { Authorization: "Bearer {tok}", X-Extra: "x-{tok}" }
  - name: cookies
    clients: [local]
    match: { method: GET, path: /cookies }
    upstream: echo
    to: /cookies
    cookies: true
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

# every variable nginx 1.22 reads through a headers_in pointer, and a few
# that read the list
my @vars = qw(content_length content_type http_host http_user_agent
              http_referer http_via http_x_forwarded_for http_cookie
              cookie_a cookie_c remote_user http_authorization
              http_content_length http_x_extra http_accept
              http_x_api_key);

my $fmt = join ' ', map { "$_=[\$$_]" } @vars;

$t->write_file_expand('nginx.conf', $p->conf(
    http => "log_format shortcuts '$fmt';",
    server => 'access_log %%TESTDIR%%/shortcuts.log shortcuts;'));

$t->start_echo(8081);
$t->run;

plan tests => 35;

# the headers nginx 1.22 has a pointer for (ngx_http_headers_in[]), each
# with a value that names it, but those that change how nginx reads the
# request (Content-Length, Transfer-Encoding, Expect, Connection)
my @every = (
    'Referer'             => 'ref-value',
    'Via'                 => 'via-value',
    'X-Forwarded-For'     => '10.1.2.3',
    'Cookie'              => 'a=removed-cookie',
    'Authorization'       => 'Bearer client-own-value',
    'Proxy-Connection'    => 'pc-value',
    'If-Modified-Since'   => 'Thu, 01 Jan 1970 00:00:00 GMT',
    'If-Unmodified-Since' => 'Thu, 01 Jan 1970 00:00:01 GMT',
    'If-Match'            => '"im-value"',
    'If-None-Match'       => '"inm-value"',
    'Content-Range'       => 'bytes 0-1/2',
    'Range'               => 'bytes=0-1',
    'If-Range'            => '"ir-value"',
    'TE'                  => 'te-value',
    'Upgrade'             => 'up-value',
    'Accept-Encoding'     => 'identity',
    'Keep-Alive'          => 'timeout=5',
    'X-Real-IP'           => '10.3.2.1',
    'Accept'              => 'accept/value',
    'Accept-Language'     => 'xx-value',
    'Depth'               => '1',
    'Destination'         => 'http://localhost/dest',
    'Overwrite'           => 'F',
    'Date'                => 'Thu, 01 Jan 1970 00:00:02 GMT',
    'User-Agent'          => 'ua-value',
);

sub request {
    my ($method, $uri, $body, @h) = @_;
    my $req = "$method $uri HTTP/1.1\r\n";

    while (my ($k, $v) = splice @h, 0, 2) {
        $req .= "$k: $v\r\n";
    }

    return http($req . "Connection: close\r\n\r\n" . ($body // ''));
}

# the access log line of the next request, as name => value
my $logged = 0;

sub logged {
    my ($line);

    $logged++;

    for (1 .. 250) {
        my @l = split /\n/, $t->read_file('shortcuts.log') // '';
        $line = $l[$logged - 1];
        last if defined $line;
        select undef, undef, undef, 0.02;
    }

    return ($line // '', { ($line // '') =~ /(\w+)=\[([^\]]*)\]/g });
}

my ($raw, $line, $v, $body);

# the order of the report: Host, Content-Length, Content-Type; the
# credential takes the slot Content-Length had

$body = 'x' x 17;
$raw = request('POST', '/post', $body,
               'Host' => 'localhost', 'Content-Length' => length $body,
               'Content-Type' => 'text/plain');
like($raw, qr/^HTTP\/1.1 200 /, 'POST: 200');
($line, $v) = logged();
is(index($line, $tok), -1, 'POST: no credential in the log line');
is($v->{content_length}, 17, 'POST: $content_length is the body length');
is($v->{content_type}, 'text/plain', 'POST: $content_type kept');
is($v->{http_host}, '-', 'POST: $http_host removed');
is($v->{http_authorization}, '-', 'POST: $http_authorization not seen');

# every header with a pointer, after the framing ones

$raw = request('POST', '/post', $body,
               'Host' => 'localhost', 'Content-Length' => length $body,
               'Content-Type' => 'text/plain', @every);
like($raw, qr/^HTTP\/1.1 200 /, 'POST, every header: 200');
($line, $v) = logged();
is(index($line, $tok), -1, 'POST, every header: no credential in the log');
is($v->{content_length}, 17, 'POST, every header: $content_length');
is($v->{content_type}, 'text/plain', 'POST, every header: $content_type');
is($v->{http_user_agent}, 'ua-value', 'POST, every header: $http_user_agent');
is($v->{http_accept}, 'accept/value', 'POST, every header: $http_accept');
is(join(',', map { $v->{$_} } qw(http_host http_referer http_via
                                 http_x_forwarded_for http_cookie cookie_a
                                 remote_user http_authorization
                                 http_content_length)),
   join(',', ('-') x 9), 'POST, every header: removed ones read as absent');

# a chunked body: Transfer-Encoding in the slot the credential takes

$raw = request('POST', '/post', "5\r\nhello\r\n0\r\n\r\n",
               'Host' => 'localhost', 'Transfer-Encoding' => 'chunked',
               'Content-Type' => 'text/plain', 'Referer' => 'ref-value');
like($raw, qr/^HTTP\/1.1 200 /, 'chunked: 200');
($line, $v) = logged();
is(index($line, $tok), -1, 'chunked: no credential in the log line');
isnt($v->{http_referer}, 'ref-value', 'chunked: $http_referer removed');

# no body: Content-Length: 0 where the first credential goes

$raw = request('GET', '/get', undef,
               'Host' => 'localhost', 'Content-Length' => 0,
               'Accept' => 'accept/value', 'Referer' => 'ref-value');
like($raw, qr/^HTTP\/1.1 200 /, 'GET: 200');
($line, $v) = logged();
is(index($line, $tok), -1, 'GET: no credential in the log line');
is($v->{content_length}, 0, 'GET: $content_length 0');
is($v->{http_referer}, '-', 'GET: $http_referer removed');
is($v->{http_x_extra}, '-', 'GET: injected X-Extra not seen');
is($v->{http_accept}, 'accept/value', 'GET: $http_accept kept');

$raw = request('GET', '/get', undef, 'Host' => 'localhost', @every);
like($raw, qr/^HTTP\/1.1 200 /, 'GET, every header: 200');
($line, $v) = logged();
is(index($line, $tok), -1, 'GET, every header: no credential in the log');
is(join(',', map { $v->{$_} } qw(content_length http_host http_referer
                                 http_via http_x_forwarded_for http_cookie
                                 cookie_a remote_user http_authorization)),
   '-,-,-,-,-,-,-,-,-', 'GET, every header: removed ones read as absent');
is($v->{http_user_agent}, 'ua-value', 'GET, every header: $http_user_agent');

# cookies on a route that keeps them: both Cookie headers, none other

$raw = request('GET', '/cookies', undef,
               'Host' => 'localhost', 'Content-Length' => 0,
               'Cookie' => 'a=1; b=2', 'Referer' => 'ref-value',
               'Cookie' => 'c=3', 'X-Forwarded-For' => '10.1.2.3');
like($raw, qr/^HTTP\/1.1 200 /, 'cookies: 200');
($line, $v) = logged();
is(index($line, $tok), -1, 'cookies: no credential in the log line');
is($v->{cookie_a}, '1', 'cookies: $cookie_a');
is($v->{cookie_c}, '3', 'cookies: $cookie_c from the second header');
is($v->{http_cookie}, 'a=1; b=2; c=3', 'cookies: $http_cookie');
is($v->{http_x_forwarded_for}, '-', 'cookies: $http_x_forwarded_for removed');

# a refused request: the client's own credentials leave its headers too

$raw = request('GET', '/nowhere', undef, 'Host' => 'localhost',
               'Authorization' => 'Basic dXNlcjpGQUtFLXBhc3M=',
               'X-Api-Key' => 'FAKE-client-own-key');
like($raw, qr/^HTTP\/1.1 403 /, 'refused: 403');
($line, $v) = logged();
is(join(',', map { $v->{$_} } qw(remote_user http_authorization
                                 http_x_api_key)),
   '-,-,-', 'refused: the client\'s credentials read as absent');

is($t->error_log_check, '', 'no alerts');
