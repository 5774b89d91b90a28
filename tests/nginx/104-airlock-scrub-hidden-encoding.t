#!/usr/bin/perl

# ngx_http_airlock_module: an encoded answer is refused on a scrubbed route
# also when the location hides its Content-Encoding.  The scrubber cannot
# search a gzip body; it refused one by the Content-Encoding nginx passes
# on.  With "proxy_hide_header Content-Encoding" (nginx -t takes it in an
# Airlock location) nginx passes none, and the client got the upstream's
# gzip bytes, the credential in them, unsearched, with nothing saying they
# were encoded: one gunzip away.  The upstream's own headers are read.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Compress::Gzip qw(gzip $GzipError);
use IO::Uncompress::Gunzip qw(gunzip);
use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 's3cr3t-token-XYZ-0123456789';
my $sealed = $p->seal($tok);

# tests/lib/raw-upstream.pl answers what X-Raw holds

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  raw: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: bearer
    clients: [local]
    match: { method: GET, path: "/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    query: { allow: [r] }
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

gzip(\"echo: Bearer $tok\n", \my $gz) or die $GzipError;

my $close = "Connection: close\r\n";
my %raw = (
    gzip => "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
        . "Content-Length: " . length($gz) . "\r\n$close\r\n$gz",
    # streamed: no Content-Length
    stream => "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n$close\r\n$gz",
    # a second header of the name, the last one identity
    second => "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
        . "Content-Encoding: identity\r\n$close\r\n$gz",
    identity => "HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\n"
        . "Content-Length: 33\r\n$close\r\nplain %TOK%",
);

my $map = join '', map {
    "        $_ \"" . encode_base64($raw{$_}, '') . "\";\n"
} sort keys %raw;

$t->write_file_expand('nginx.conf', $p->conf(
    http => "    map \$arg_r \$raw_answer {\n        default \"\";\n"
        . "$map    }\n",
    server => "error_log %%TESTDIR%%/error.log info;\n",
    location => "proxy_set_header X-Raw \$raw_answer;\n"
        . "            proxy_hide_header Content-Encoding;"));

$t->run_daemon($^X, "$FindBin::Bin/../lib/raw-upstream.pl",
               $t->port(8081));
$t->wait_for_port(8081) or die 'raw upstream did not start';
$t->run;

# the credential, in the body or in what it gunzips to
sub leaks {
    my ($body) = @_;
    my $plain;

    return 1 if index($body, $tok) >= 0;
    return 1 if gunzip(\$body => \$plain) && index($plain // '', $tok) >= 0;
    return 0;
}

for my $name (qw(gzip stream second)) {
    my $r = parse_response($t->http_get("/a?r=$name"));
    is($r->{status}, 502, "$name, Content-Encoding hidden: refused");
    ok(!leaks($r->{body}), "$name: the client has no gzip of the credential");
}

my $r = parse_response($t->http_get('/a?r=identity'));
is($r->{status}, 200, 'identity, hidden: passes');
is($r->{body}, 'plain [REDACTED]', 'identity: scrubbed');

like($t->read_file('error.log'),
     qr/upstream sent "Content-Encoding: gzip" on route "bearer"/,
     'the refusal is logged');

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
