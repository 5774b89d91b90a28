#!/usr/bin/perl

# ngx_http_airlock_module: nginx's own error-log lines do not carry an
# injected credential.  nginx logs a response header line it cannot parse
# as the upstream sent it ("upstream sent invalid header: ..."), so an
# upstream that echoes the credential in such a line (a NUL in the value,
# a space in the name) would put it in the error log.  On a route that
# injects a credential, or through the LLM gateway, the lines nginx logs
# for the request are scrubbed as its response is, in every error_log the
# location writes to; a line nginx cut at its length limit loses a tail
# that could begin a credential.  Other requests' lines are untouched.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 's3cr3t-token-XYZ-0123456789';
my $key = 'sk-llm-key-ABCDEFGH-987654321';
my $sealed = $p->seal($tok);
my $sealed_key = $p->seal($key);

# The upstream: tests/lib/raw-upstream.pl answers what X-Raw holds.

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
  key: { sealed: "$sealed_key" }
upstreams:
  raw: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: bearer
    clients: [local]
    match: { method: GET, path: "/bearer/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    query: { allow: [r] }
    inject: { Authorization: "Bearer {tok}" }
  - name: plain
    clients: [local]
    match: { method: GET, path: "/plain/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    query: { allow: [r] }
llm:
  - name: prov
    prefix: /v1/proxy/prov
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%"
    secret: key
    models: [m1]
    max_body_bytes: 4096
    clients:
      local: {}
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

my $ok = "Content-Length: 2\r\nConnection: close\r\n\r\nok";
my %raw = (
    nul => "HTTP/1.1 200 OK\r\nX-Echo: %AUTH%\0tail\r\n$ok",
    name => "HTTP/1.1 200 OK\r\nX-%TOK% x: v\r\n$ok",
    # the line nginx logs is cut at 2048 bytes, inside the credential
    map({ ("cut$_" => "HTTP/1.1 200 OK\r\nX-Pad: " . ('p' x (1900 + $_))
                      . "%AUTH%\0\r\n$ok") } 0 .. 60),
);

my $map = join '', map {
    "        $_ \"" . encode_base64($raw{$_}, '') . "\";\n"
} sort keys %raw;

my $http = <<"EOF";
    airlock_llm_zone llm 1m;
    airlock_llm_log %%TESTDIR%%/usage.log;

    map \$arg_r \$raw_answer {
        default "";
$map    }
EOF

$t->write_file_expand('nginx.conf', $p->conf(http => $http,
    server => "error_log %%TESTDIR%%/error.log info;\n"
              . "    error_log %%TESTDIR%%/second.log info;\n"
              . "    error_log %%TESTDIR%%/debug.log debug;\n",
    location => 'proxy_set_header X-Raw $raw_answer;',
    locations => <<"EOF"));
        location /v1/proxy/prov/ {
            airlock_llm prov;
            %%AIRLOCK_LOCATION%%
            proxy_set_header X-Raw "@{[ encode_base64($raw{nul}, '') ]}";
        }
EOF

$t->run_daemon($^X, "$FindBin::Bin/../lib/raw-upstream.pl",
              $t->port(8081));
$t->wait_for_port(8081) or die 'raw upstream did not start';
$t->run;

sub leaks {
    my ($text, @s) = @_;
    return scalar grep { index($text, $_) >= 0 } @s;
}

# a prefix of 10 or more of the credential's bytes
sub prefix {
    my ($text, $s) = @_;
    return scalar grep { index($text, substr($s, 0, $_)) >= 0 }
        10 .. length $s;
}

my $r = parse_response($t->http_get('/bearer/a?r=nul'));
is($r->{status}, 502, 'NUL in a header line: 502');
$r = parse_response($t->http_get('/bearer/a?r=name'));
is($r->{status}, 502, 'space in a header name: 502');

my $log = $t->read_file('error.log');
like($log, qr/upstream sent invalid header: "X-Echo: (?#
              )\[REDACTED\]\\x00\.\.\."/,
     'the NUL line is logged, the credential redacted');
like($log, qr/upstream sent invalid header: "X-\[REDACTED\]\\x20/,
     'the bad name is logged, the credential redacted');
is(leaks($log, $tok), 0, 'error.log: no credential');
is(leaks($t->read_file('second.log'), $tok), 0,
   'a second error_log: no credential');

# cut lines

for my $i (0 .. 60) {
    $t->http_get("/bearer/a?r=cut$i");
}

$log = $t->read_file('error.log');
my @cut = grep { /X-Pad: p{1900}/ } split /\n/, $log;
is(scalar @cut, 61, 'the long lines are logged');
is(prefix($log, $tok), 0, 'no line ends in a credential cut short');

# through the LLM gateway, the provider key

$r = parse_response($t->http("POST /v1/proxy/prov/chat/completions "
    . "HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    . "Content-Length: 45\r\n\r\n"
    . '{"model":"m1","messages":[],"stream":false}  '));
is($r->{status}, 502, 'llm: NUL in a header line: 502');
$log = $t->read_file('error.log');
like($log, qr/upstream sent invalid header: "X-Echo: \[REDACTED\]/,
     'llm: logged, the key redacted');
is(leaks($log, $key), 0, 'llm: no key in the error log');

# a route without a credential logs what nginx logs

$t->http_get('/plain/a?r=name');
like($t->read_file('error.log'), qr/upstream sent invalid header: "X-\\x20/,
     'plain route: the line as nginx logs it');

# nginx's debug lines print the request sent upstream

SKIP: {
    skip 'nginx without --with-debug', 2
        unless $t->nginx_with_debug || $ENV{CI};

    my $debug = $t->read_file('debug.log') // '';
    like($debug, qr/http proxy header: "Authorization: \[REDACTED\]"/,
         'debug log: the injected header, redacted');
    is(leaks($debug, $tok, $key), 0, 'debug log: no credential');
}

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
