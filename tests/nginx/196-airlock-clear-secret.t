#!/usr/bin/perl

# ngx_http_airlock_module: a route that injects a secret sends it over
# http:// only to this host, unless its upstream says allow_insecure_http:
# true.  "nginx -t" and a reload refuse, in one line naming the route, the
# upstream and the fix, an address of another host, a host name with a
# port, a name that is no upstream block, and an upstream block with a
# server that is not on this host (a block of the url's name decides for
# localhost too, as the proxy module takes it).  localhost is a name like
# any other: nginx asks its resolver for it per request, not /etc/hosts,
# and anyone on the network path may forge the answer; it passes only as
# a block of loopback servers.  Loopback addresses, a block whose servers
# are all loopback addresses or unix sockets, allow_insecure_http: true
# and a route that injects no secret load; a refused reload keeps the old
# policy serving.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;
my $sealed = $p->seal('FAKE-clear-secret-value');

# the policy: upstream "up" of the url (and fields) given, a route /s
# that injects the secret, a route /n to "plain" that injects none
sub policy {
    my ($url, $fields, $plain) = @_;
    $fields = $fields ? ", $fields" : '';
    $plain //= 'http://plain.example';
    return <<"EOF";
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  up: { url: "$url"$fields }
  plain: { url: "$plain" }
routes:
  - name: secret-route
    clients: [local]
    match: { method: GET, path: /s }
    upstream: up
    to: /s
    inject: { X-Service-Token: "Bearer {tok}", Accept: text/plain }
  - name: fixed-only
    clients: [local]
    match: { method: GET, path: /n }
    upstream: plain
    to: /n
    inject: { Accept: text/plain }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF
}

sub conf_test {
    my ($url, $http, $fields) = @_;
    $t->write_file_expand('policy.yaml', policy($url, $fields));
    $t->write_file_expand('nginx.conf', $p->conf(http => $http // ''));
    my ($rc, $out) = $t->reload_test;
    return ($rc, $out // '');
}

my $sock = $t->testdir . '/backend.sock';

my @refused = (
    # name, url, http-level lines, message
    [ 'an address of another host', 'http://192.0.2.7:8080', '',
      qr/route "secret-route" sends a secret to upstream "up" over http:\/\/ to "192\.0\.2\.7", not this host: .*set allow_insecure_http: true on upstream "up"/ ],
    [ 'an IPv6 address of another host', 'http://[2001:db8::7]', '',
      qr/over http:\/\/ to "\[2001:db8::7\]", not this host/ ],
    [ 'a host name with a port', 'http://backend.example:8080', '',
      qr/route "secret-route" sends a secret to upstream "up" over http:\/\/ to "backend\.example:8080", a host name with a port/ ],
    [ 'a name that is no upstream block', 'http://backend.example', '',
      qr/airlock: route "secret-route" \(\S+policy\.yaml line \d+\) sends a secret to upstream "up" over http:\/\/ to "backend\.example", which is neither this host nor an upstream block: the credential would cross the network in clear; use https:\/\/, .*or set allow_insecure_http: true on upstream "up" in \S+nginx\.conf:\d+/ ],
    [ 'a trailing dot makes a name', 'http://127.0.0.1.', '',
      qr/to "127\.0\.0\.1\.", which is neither this host nor an upstream block/ ],
    [ 'a block with a server of another host', 'http://backend',
      "upstream backend {\n        server 127.0.0.1:%%PORT_8081%%;\n"
      . "        server 192.0.2.7:8080 backup;\n    }",
      qr/to "backend", an upstream block with a server not on this host \("192\.0\.2\.7:8080"\): .*on upstream "up"/ ],
    [ 'localhost with a port', 'http://localhost:%%PORT_8081%%', '',
      qr/over http:\/\/ to "localhost:\d+", a host name with a port/ ],
    [ 'localhost without a block', 'http://localhost', '',
      qr/to "localhost", which is neither this host nor an upstream block/ ],
    [ 'a block named localhost, of another host', 'http://localhost',
      "upstream localhost {\n        server 192.0.2.7:8080;\n    }",
      qr/to "localhost", an upstream block with a server not on this host/ ],
    [ 'a block named like the host, used only with a port',
      'http://backend:8080',
      "upstream backend {\n        server 127.0.0.1:%%PORT_8081%%;\n    }",
      qr/to "backend:8080", a host name with a port/ ],
);

my @loaded = (
    [ 'a loopback address', 'http://127.0.0.1:%%PORT_8081%%', '' ],
    [ '127.0.0.0/8', 'http://127.3.2.1:%%PORT_8081%%', '' ],
    [ '::1', 'http://[::1]:%%PORT_8081%%', '' ],
    [ 'a block named localhost, of loopback servers', 'http://localhost',
      "upstream localhost {\n        server 127.0.0.1:%%PORT_8081%%;\n    }" ],
    [ 'a block of loopback servers and a unix socket', 'http://backend',
      "upstream backend {\n        server 127.0.0.1:%%PORT_8081%%;\n"
      . "        server [::1]:%%PORT_8081%% backup;\n"
      . "        server unix:$sock backup;\n    }" ],
    [ 'a name with allow_insecure_http: true', 'http://backend.example',
      '', 'allow_insecure_http: true' ],
    [ 'an address with allow_insecure_http: true', 'http://192.0.2.7:8080',
      '', 'allow_insecure_http: true' ],
);

plan tests => 2 * @refused + @loaded + 7;

for my $c (@refused) {
    my ($name, $url, $http, $re) = @$c;
    my ($rc, $out) = conf_test($url, $http);
    isnt($rc, 0, "$name: nginx -t fails");
    like($out, $re, "$name: the error names the route, upstream and fix")
        or diag($out);
}

for my $c (@loaded) {
    my ($name, $url, $http, $fields) = @$c;
    my ($rc, $out) = conf_test($url, $http, $fields);
    is($rc, 0, "$name: loads") or diag($out);
}

my ($rc, $out) = conf_test('http://backend.example', '',
                           'allow_insecure_http: false');
isnt($rc, 0, 'allow_insecure_http: false: refused as without it');

($rc, $out) = conf_test('http://backend.example', '',
                        'allow_insecure_http: "yes"');
like($out, qr/allow_insecure_http must be true or false/,
     'allow_insecure_http: "yes": refused') or diag($out);

# running: a block of loopback servers gets the secret; a reload to a
# block with a server elsewhere is refused and the old policy serves

my $block = "upstream backend {\n        server 127.0.0.1:%%PORT_8081%%;\n"
            . "    }";
$t->write_file_expand('policy.yaml', policy('http://backend'));
$t->write_file_expand('nginx.conf', $p->conf(http => $block));
$t->start_echo(8081);
$t->run;

my $j = echo_json(http_get('/s'));
is($j && $j->{target}, '/s', 'a block of loopback servers: forwarded');
my ($req) = $t->echo_requests(8081);
ok($req && grep({ lc $_->[0] eq 'x-service-token'
                  && $_->[1] eq 'Bearer FAKE-clear-secret-value' }
                @{ $req->{headers} // [] }),
   'a block of loopback servers: the secret injected');

$t->write_file_expand('nginx.conf', $p->conf(http =>
    "upstream backend {\n        server 127.0.0.1:%%PORT_8081%%;\n"
    . "        server 192.0.2.7:8080;\n    }"));
my ($ok, $why) = $t->reload(allow_fail => 1);
ok(!$ok && $why =~ /to "backend", an upstream block with a server not on this host/,
   'reload to a block with a server elsewhere: refused') or diag($why);
$j = echo_json(http_get('/s'));
is($j && $j->{target}, '/s', 'refused reload: the old configuration serves');

is($t->error_log_check(qr/an upstream block with a server not on this host/),
   '', 'no alerts');
