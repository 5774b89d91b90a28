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
# $remote_addr and $remote_port are the connection's only until realip
# rewrites them from a header (a location without Airlock that runs it
# and hands the request on with error_page or try_files), and an address
# names no site: they are refused in these headers, in X-Forwarded-Host
# and proxy_ssl_name, and pass only in the "for=" of Forwarded.
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
  - name: peer
    clients: [local]
    match: { method: GET, path: /peer/read }
    upstream: echo
    to: /public/peer
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
    [ 'X-Forwarded-Host $remote_addr',
      "$L\nproxy_set_header X-Forwarded-Host \$remote_addr;",
      qr/"proxy_set_header X-Forwarded-Host \$remote_addr": \$remote_addr is the client's address, which realip rewrites from a header, and names no site/ ],
    [ 'X-Host $remote_addr:$remote_port',
      "$L\nproxy_set_header X-Host \$remote_addr:\$remote_port;",
      qr/"proxy_set_header X-Host \$remote_addr:\$remote_port": \$remote_addr is the client's address/ ],
    [ 'Forwarded host=$remote_addr after a for=',
      "$L\nproxy_set_header Forwarded \"for=\$remote_addr;Host=\$remote_addr\";",
      qr/"proxy_set_header Forwarded for=\$remote_addr;Host=\$remote_addr": \$remote_addr is the client's address.*only be the "for="/ ],
    [ 'Forwarded host=${remote_addr}',
      "$L\nproxy_set_header Forwarded \"host=\${remote_addr}\";",
      qr/"proxy_set_header Forwarded host=\$\{remote_addr\}": \$remote_addr is the client's address/ ],
    [ 'Forwarded with the address outside any parameter',
      "$L\nproxy_set_header Forwarded \$remote_addr;",
      qr/"proxy_set_header Forwarded \$remote_addr": \$remote_addr is the client's address/ ],
    [ 'proxy_ssl_name $remote_addr',
      "$L\nproxy_ssl_name \$remote_addr;",
      qr/"proxy_ssl_name \$remote_addr": \$remote_addr is the client's address/ ],
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
    [ 'the peer\'s address and port in Forwarded\'s for=',
      "$L\nproxy_set_header Forwarded "
      . "\"For = \\\"[\$remote_addr]:\${remote_port}\\\";by=\$server_addr;"
      . "host=\$airlock_host, for=\$remote_addr\";" ],
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

plan tests => 2 * @refused + @accepted + 4;

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

# why $remote_addr is not the server's own: realip in a location without
# Airlock, and try_files hands the request to an Airlock one
$t->write_file_expand('nginx.conf', $p->conf(locations => <<"EOF"));
        location = /peer/read {
            set_real_ip_from 127.0.0.1;
            real_ip_header X-Real-IP;
            root %%TESTDIR%%;
            try_files /none \@peer;
        }

        location \@peer {
            airlock on;
            $L
            proxy_set_header X-Peer \$remote_addr;
        }
EOF
$t->start_echo(8081);
$t->run;

my $r = http("GET /read HTTP/1.0\r\n" . join('', map { "$_\r\n" } @sent)
             . "\r\n");
my $j = Airlock::Test::echo_json($r);

is($j && $j->{target}, '/public/read',
   'client path and host overrides: the route\'s target is forwarded');
is_deeply([ map { $_->[0] } @{$j ? $j->{headers} : []} ], [ 'Host' ],
          'none of them reaches the upstream');

$r = http("GET /peer/read HTTP/1.0\r\nX-Real-IP: 192.0.2.7\r\n\r\n");
$j = Airlock::Test::echo_json($r);

is_deeply([ map { $_->[1] } grep { $_->[0] eq 'X-Peer' }
            @{$j ? $j->{headers} : []} ], [ '192.0.2.7' ],
          'realip on the way: $remote_addr is the address the client wrote');

is($t->error_log_check, '', 'no alerts');
