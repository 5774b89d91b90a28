#!/usr/bin/perl

# ngx_http_airlock_module: a client's own credentials never reach a
# log_format, allowed or refused.  Every request below carries the
# client's token (Proxy-Authorization), Basic credentials in
# Authorization, x-api-key, api-key and a Cookie; the access log prints
# every variable that reads them.  The token headers go when the token is
# read, on every path (ngx_http_airlock_token()); Cookie goes on a route
# without "cookies: true" when allowed, and on every refusal: one refused
# by the decision (no route, a method, a query, a body, an unknown
# token), one nginx refused before it (TRACE, 405) and one whose body
# nginx refused while it was read (a bad chunk, 400).  The LLM gateway's
# refusals go the same way: a budget refusal (429) logs no key, no Cookie.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::LLM;

# nginx's own debug log prints the request headers
local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $token = 'FAKE-agent-token-143';
my $sha = $p->token_sha256($token);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  agent: { token_sha256: "$sha" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: get
    clients: [agent]
    match: { method: GET, path: /get }
    upstream: echo
    to: /get
  - name: cookies
    clients: [agent]
    match: { method: GET, path: /cookies }
    upstream: echo
    to: /cookies
    cookies: true
  - name: post
    clients: [agent]
    match: { method: POST, path: /post }
    upstream: echo
    to: /post
    body: { max_bytes: 10 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

my @vars = qw(status airlock_reason http_proxy_authorization
              http_authorization remote_user http_x_api_key http_api_key
              http_cookie cookie_a);

my $fmt = join ' ', map { "$_=[\$$_]" } @vars;

$t->write_file_expand('nginx.conf', $p->conf(key => 0,
    http => "log_format creds '$fmt';",
    server => 'access_log %%TESTDIR%%/creds.log creds;'));

$t->start_echo(8081);
$t->run;

plan tests => 39;

my @creds = (
    'Proxy-Authorization' => "Bearer $token",
    'Authorization'       => 'Basic dXNlcjpGQUtFLXBhc3M=',
    'X-Api-Key'           => 'FAKE-x-api-key',
    'Api-Key'             => 'FAKE-api-key',
    'Cookie'              => 'a=FAKE-cookie',
);

sub request {
    my ($head, $body, @h) = @_;
    my $req = "$head HTTP/1.1\r\nHost: localhost\r\n";

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

    for (1 .. 500) {
        my @l = split /\n/, $t->read_file('creds.log') // '';
        $line = $l[$logged - 1];
        last if defined $line;
        select undef, undef, undef, 0.02;
    }

    return ($line // '', { ($line // '') =~ /(\w+)=\[([^\]]*)\]/g });
}

my @tokens = qw(http_proxy_authorization http_authorization remote_user
                http_x_api_key http_api_key);

sub absent {
    my ($v, @names) = @_;
    return join(',', map { $v->{$_} // 'none' } @names);
}

my ($raw, $line, $v);

# allowed, without and with cookies

$raw = request('GET /get', undef, @creds);
like($raw, qr/^HTTP\/1.1 200 /, 'allowed: 200');
($line, $v) = logged();
unlike($line, qr/FAKE/, 'allowed: no credential in the log line');
is(absent($v, @tokens, 'http_cookie', 'cookie_a'), join(',', ('-') x 7),
   'allowed: the token headers and Cookie read as absent');

$raw = request('GET /cookies', undef, @creds);
like($raw, qr/^HTTP\/1.1 200 /, 'allowed with cookies: 200');
($line, $v) = logged();
is(absent($v, @tokens), join(',', ('-') x 5),
   'allowed with cookies: the token headers read as absent');
is($v->{http_cookie}, 'a=FAKE-cookie', 'allowed with cookies: Cookie kept');

# refused by the decision

my @refused = (
    [ 'no route', 'GET /nowhere', undef, 'no_route' ],
    [ 'a method the route does not take', 'DELETE /get', undef,
      'method' ],
    [ 'a query on a route with cookies', 'GET /cookies?x=1', undef,
      'query' ],
    [ 'a body over max_bytes', 'POST /post', 'x' x 20, 'body_too_large' ],
);

for my $c (@refused) {
    my ($name, $head, $body, $reason) = @$c;
    my @h = defined $body ? ('Content-Length' => length $body) : ();

    $raw = request($head, $body, @creds, @h);
    like($raw, qr/^HTTP\/1.1 403 /, "$name: 403");
    ($line, $v) = logged();
    like($v->{airlock_reason} // '', qr/^\Q$reason\E/, "$name: $reason");
    unlike($line, qr/FAKE/, "$name: no credential in the log line");
    is(absent($v, @tokens, 'http_cookie', 'cookie_a'), join(',', ('-') x 7),
       "$name: the token headers and Cookie read as absent");
}

# an unknown token: client_unknown

$raw = request('GET /get', undef, @creds[2 .. $#creds],
               'Proxy-Authorization' => 'Bearer FAKE-unknown-token');
like($raw, qr/^HTTP\/1.1 403 /, 'an unknown token: 403');
($line, $v) = logged();
unlike($line, qr/FAKE/, 'an unknown token: no credential in the log line');
is(absent($v, @tokens, 'http_cookie', 'cookie_a'), join(',', ('-') x 7),
   'an unknown token: the token headers and Cookie read as absent');

# refused by nginx before the decision (TRACE), counted for the client

$raw = request('TRACE /get', undef, @creds);
like($raw, qr/^HTTP\/1.1 405 /, 'TRACE: 405');
($line, $v) = logged();
is($v->{airlock_reason}, 'refused', 'TRACE: a refusal of the client');
unlike($line, qr/FAKE/, 'TRACE: no credential in the log line');

# a body nginx refused while it was read

$raw = request('POST /post', "zz\r\nabc\r\n0\r\n\r\n", @creds,
               'Transfer-Encoding' => 'chunked');
like($raw, qr/^HTTP\/1.1 400 /, 'a bad chunk: 400');
($line, $v) = logged();
is($v->{airlock_reason}, 'refused', 'a bad chunk: a refusal of the client');
unlike($line, qr/FAKE/, 'a bad chunk: no credential in the log line');

is($t->error_log_check, '', 'no alerts or sanitizer reports');

# ---- the LLM gateway: a budget refusal goes through the same refusal -------

my $t2 = Airlock::Test->new;
my $l = Airlock::LLM->new($t2);

$l->setup(
    http => "log_format creds '$fmt';",
    location => 'access_log %%TESTDIR%%/creds.log creds;');

$t2->run;

my $tight = $l->token('tight');
my $r;

$r = $l->chat(token => $tight, headers => [ [ 'Cookie', 'a=FAKE-cookie' ] ]);
is($r->{status}, 200, 'LLM, allowed: 200');

$r = $l->chat(token => $tight, prompt => 'x' x 600,
              headers => [ [ 'Cookie', 'a=FAKE-cookie' ] ]);
is($r->{status}, 429, 'LLM, a call over the whole budget: 429');

# logged() reads the access log of $t, from its first line
$t = $t2;
$logged = 0;

for my $name ('LLM, allowed', 'LLM, budget refused') {
    ($line, $v) = logged();
    unlike($line, qr/FAKE|\Q$tight\E/,
           "$name: no credential in the log line");
    is(absent($v, 'http_authorization', 'http_cookie', 'cookie_a'), '-,-,-',
       "$name: Authorization and Cookie read as absent");
}

is($t2->error_log_check, '', 'LLM: no alerts or sanitizer reports');
