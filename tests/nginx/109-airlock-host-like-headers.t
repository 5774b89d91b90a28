#!/usr/bin/perl

# Headers an upstream behind a proxy takes for the site it serves, or
# for the start of its links, besides Host, X-Forwarded-Host and
# Forwarded: X-Host, X-Forwarded-Server, X-Original-Host and
# X-HTTP-Host-Override (read for the Host by frameworks and caches), and
# X-Forwarded-Prefix (the path every link and redirect starts with in
# Spring, Symfony, Werkzeug and ASP.NET Core: "//evil.example" is another
# site).  "nginx -t" refuses a proxy_set_header of one of them with a
# variable the client chooses, or any but the server's own, as it does
# X-Forwarded-Host's; a fixed value and $airlock_host pass.
#
# From the client, none of them reaches the upstream of a named route,
# nor the path overrides X-Original-URL and X-Rewrite-URL, which IIS
# (URL Rewrite) and Symfony read as the request's path: only the kept
# headers go on, and the upstream gets the target the route built.

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

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: read
    clients: [local]
    match: { method: GET, path: /read }
    upstream: echo
    to: /public/read
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

my $L = '%%AIRLOCK_LOCATION%%';

# a location body that sets no header: it inherits proxy_set_header
my $bare = 'proxy_pass $airlock_upstream$airlock_uri;' . "\n"
         . 'proxy_ignore_headers X-Accel-Redirect X-Accel-Expires '
         . 'X-Accel-Limit-Rate X-Accel-Buffering X-Accel-Charset;';

sub conf_test {
    my ($body, %o) = @_;
    $t->write_file_expand('nginx.conf', $p->conf(%o, locations => <<"EOF"));
        location /x/ {
            airlock on;
$body
        }
EOF
    return $t->reload_test;
}

my $why = qr/, and the upstream takes this header for the site it serves/;

my @refused = (
    # name, body, message
    [ 'X-Host $http_x_host',
      "$L\nproxy_set_header X-Host \$http_x_host;",
      qr/airlock location "\/x\/" has "proxy_set_header X-Host \$http_x_host": \$http_x_host is the client's$why/ ],
    [ 'X-Forwarded-Server $host',
      "$L\nproxy_set_header X-Forwarded-Server \$host;",
      qr/"proxy_set_header X-Forwarded-Server \$host": \$host is the client's$why/ ],
    [ 'X-Original-Host from the query',
      "$L\nproxy_set_header x-original-host \$arg_site;",
      qr/"proxy_set_header x-original-host \$arg_site": \$arg_site is the client's/ ],
    [ 'X-HTTP-Host-Override ${host}',
      "$L\nproxy_set_header X-HTTP-Host-Override \${host};",
      qr/"proxy_set_header X-HTTP-Host-Override \$\{host\}": \$host is the client's/ ],
    [ 'X-Forwarded-Prefix from a client header',
      "$L\nproxy_set_header X-Forwarded-Prefix \$http_x_forwarded_prefix;",
      qr/"proxy_set_header X-Forwarded-Prefix \$http_x_forwarded_prefix": \$http_x_forwarded_prefix is the client's$why/ ],
    [ 'X_Forwarded_Prefix with a capture',
      "$L\nproxy_set_header X_Forwarded_Prefix /\$1;",
      qr/"proxy_set_header X_Forwarded_Prefix \/\$1": \$1 is the client's/ ],
    [ 'X-Host with a map',
      "$L\nproxy_set_header X-Host \$site;",
      qr/"proxy_set_header X-Host \$site": \$site is not one nginx or Airlock sets itself/,
      http => 'map $host $site { default $host; }' ],
    [ 'X-Forwarded-Prefix inherited from the server level',
      $bare, qr/airlock location "\/(x\/)?" has "proxy_set_header X-Forwarded-Prefix \$uri"/,
      server => 'proxy_set_header X-Forwarded-Prefix $uri;' ],
);

my @accepted = (
    [ 'fixed values and $airlock_host',
      "$L\nproxy_set_header X-Forwarded-Prefix /airlock;\n"
      . "proxy_set_header X-Host \$airlock_host;\n"
      . "proxy_set_header X-Forwarded-Server \$hostname;\n"
      . "proxy_set_header X-Original-Host proxy.example;" ],
);

my @sent = (
    'X-Original-URL: /admin',
    'X-Rewrite-URL: /admin',
    'X-Forwarded-Prefix: //evil.example',
    'X-Host: evil.example',
    'X-Forwarded-Server: evil.example',
    'X-Original-Host: evil.example',
    'X-HTTP-Host-Override: evil.example',
    'X-Forwarded-Host: evil.example',
    'Forwarded: host=evil.example',
);

plan tests => 2 * @refused + @accepted + 3;

for my $c (@refused) {
    my ($name, $body, $re, %o) = @$c;
    my ($status, $out) = conf_test($body, %o);
    isnt($status, 0, "$name: nginx -t fails");
    like($out, $re, "$name: the message names the location and why");
}

for my $c (@accepted) {
    my ($name, $body) = @$c;
    my ($status, $out) = conf_test($body);
    is($status, 0, "$name: passes") or diag($out);
}

$t->write_file_expand('nginx.conf', $p->conf);
$t->start_echo(8081);
$t->run;

my $r = http("GET /read HTTP/1.0\r\n" . join('', map { "$_\r\n" } @sent)
             . "\r\n");
my $j = Airlock::Test::echo_json($r);

is($j && $j->{target}, '/public/read',
   'client path and host overrides: the route\'s target is forwarded');
is_deeply([ map { $_->[0] } @{$j ? $j->{headers} : []} ], [ 'Host' ],
          'none of them reaches the upstream');

is($t->error_log_check, '', 'no alerts');
