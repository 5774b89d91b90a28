#!/usr/bin/perl

# An Airlock location that forwards checks the upstream's certificate
# whenever the policy has an https upstream (a route's or an LLM
# entry's): without "proxy_ssl_verify on" (nginx's default is off, and
# only the location body turns it on) a route's credential went to
# whoever answered at the upstream's address, a spoofed DNS answer or a
# host on the path.  "nginx -t" refuses such a location, naming it, as
# it refuses one without the X-Accel-* line of the same body.  The
# standard location body passes, and a policy with http upstreams only
# needs no verification.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $key = $p->keygen;
my $sealed = $p->seal('tls-verify-secret');

sub policy {
    my ($url, $llm) = @_;
    my $p = <<"EOF";
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  api: { url: "$url" }
routes:
  - name: v1
    clients: [local]
    match: { method: GET, path: /x/v1 }
    upstream: api
    to: /one
    inject: { X-Service-Token: "{tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
EOF
    $p .= <<"EOF" if $llm;
llm:
  - name: openai
    prefix: /v1/proxy/openai
    provider: openai
    upstream: "$llm"
    secret: tok
    models: [gpt-4o-mini]
    clients:
      local: {}
EOF
    return $p;
}

sub conf_test {
    my ($policy, $conf) = @_;
    $t->write_file_expand('policy.yaml', $policy);
    $t->write_file_expand('nginx.conf', $conf);
    return $t->reload_test;
}

# a location /x/ with "airlock on" and the given body
sub loc { $p->x_location_conf(@_) }

my $bare = 'proxy_pass $airlock_upstream$airlock_uri;' . "\n"
         . 'proxy_ignore_headers X-Accel-Redirect X-Accel-Expires '
         . 'X-Accel-Limit-Rate X-Accel-Buffering X-Accel-Charset;';

my $https = policy('https://api.example');
my $http = policy('http://127.0.0.1:%%PORT_8081%%');
my $llm = policy('http://127.0.0.1:%%PORT_8081%%', 'https://llm.example/v1');

my @refused = (
    # name, policy, body, message
    [ 'no proxy_ssl_verify', $https, $bare,
      qr/airlock location "\/x\/" must have "proxy_ssl_verify on": the policy has https upstreams/ ],
    [ 'proxy_ssl_verify off', $https, "$bare\nproxy_ssl_verify off;",
      qr/airlock location "\/x\/" must have "proxy_ssl_verify on"/ ],
    [ 'proxy_ssl_verify off inherited from the server', $https, $bare,
      qr/airlock location "\/(x\/)?" must have "proxy_ssl_verify on"/,
      server => 'proxy_ssl_verify off;' ],
    [ 'an LLM entry\'s https upstream', $llm, $bare,
      qr/airlock location "\/x\/" must have "proxy_ssl_verify on"/ ],
);

my @accepted = (
    [ 'the standard location body', $https, '%%AIRLOCK_LOCATION%%' ],
    [ 'proxy_ssl_verify on by hand', $https,
      "$bare\nproxy_ssl_verify on;" ],
    [ 'proxy_ssl_verify on at the http level', $https, $bare,
      http => 'proxy_ssl_verify on;' ],
    [ 'http upstreams only', $http, $bare ],
);

plan tests => 2 * @refused + @accepted;

my ($status, $out);

for my $c (@refused) {
    my ($name, $policy, $body, $re, %o) = @$c;
    ($status, $out) = conf_test($policy, loc($body, %o));
    isnt($status, 0, "$name: nginx -t fails");
    like($out, $re, "$name: the message names the location");
}

for my $c (@accepted) {
    my ($name, $policy, $body, %o) = @$c;
    ($status, $out) = conf_test($policy, loc($body, %o));
    is($status, 0, "$name: passes") or diag($out);
}
