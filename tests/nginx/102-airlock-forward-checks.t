#!/usr/bin/perl

# What an Airlock location may not change in the request it forwards,
# after the decision: the upstream must read what the policy checked.
# "nginx -t" refuses, naming the location and the directive:
#
#   - proxy_set_header Content-Length or Transfer-Encoding (any value,
#     "" too): the upstream would frame the body otherwise than nginx
#     sends it, and read the rest of a checked body as a request of its
#     own (a "Transfer-Encoding: chunked" and a body "0\r\n\r\nDELETE
#     /admin ..." had the upstream run the DELETE);
#   - proxy_set_header Content-Type or Content-Encoding: the upstream
#     would read the checked body as another type, or decode it;
#   - proxy_pass_request_body off, here or inherited: the checked body's
#     Content-Length without the body (proxy_pass_request_headers off,
#     the body without its Content-Type: 172);
#   - proxy_set_header Host other than $airlock_host (the location body's;
#     the gateway's $airlock_llm_host too): "Host $host" let the client
#     choose the site the upstream serves, with the route's credential;
#   - proxy_set_header of the method override headers the gate refuses
#     from clients (X-HTTP-Method-Override, X-HTTP-Method,
#     X-Method-Override) and of the path overrides X-Original-URL and
#     X-Rewrite-URL, any value: the upstream would read another method or
#     path than the route matched;
#   - proxy_set_header X-Forwarded-Host or Forwarded with a variable the
#     client chooses ($host, $http_*, $arg_*, ...): upstreams behind a
#     proxy take it for the Host;
#   - proxy_ssl_name with such a variable, here or inherited
#     ("proxy_ssl_name $host" is a common line): the TLS name sent and
#     checked would be the client's, not the route's upstream's;
#   - in those three, any variable but the few nginx or Airlock set
#     themselves ($airlock_host, $server_name, $scheme, $hostname...;
#     the peer's address only in Forwarded's for=, see 109): a map or
#     set of a client's variable is not seen through;
#   - each of those header names also with '_' for '-'
#     (X_Forwarded_Host, X_Service_Token): CGI, WSGI, PHP and Rack read
#     both spellings as the same HTTP_X_FORWARDED_HOST.
#
# The standard location body passes, and so do headers of other names
# with fixed values and proxy_http_version 1.0 (the body is forwarded
# from memory with its length, never chunked).

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
my $sealed = $p->seal('forward-check-secret');

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: v1
    clients: [local]
    match: { method: POST, path: /x/v1 }
    upstream: echo
    to: /one
    body: { max_bytes: 256 }
    inject: { X-Service-Token: "{tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
EOF

# nginx -t of this nginx.conf
sub conf_test { $p->conf_test(@_) }

# a location /x/ with "airlock on" and the given body
sub loc { $p->x_location_conf(@_) }

my $L = '%%AIRLOCK_LOCATION%%';

# a location body that sets no header: it inherits proxy_set_header
my $bare = 'proxy_pass $airlock_upstream$airlock_uri;' . "\n"
         . 'proxy_ignore_headers X-Accel-Redirect X-Accel-Expires '
         . 'X-Accel-Limit-Rate X-Accel-Buffering X-Accel-Charset;';

my @refused = (
    # name, body, message
    [ 'proxy_set_header Content-Length',
      "$L\nproxy_set_header Content-Length 10;",
      qr/airlock location "\/x\/" has "proxy_set_header Content-Length": nginx frames the body/ ],
    [ 'proxy_set_header Content-Length ""',
      "$L\nproxy_set_header Content-Length \"\";",
      qr/airlock location "\/x\/" has "proxy_set_header Content-Length"/ ],
    [ 'proxy_set_header Content-Length with a variable',
      "$L\nproxy_set_header content-length \$http_x_length;",
      qr/airlock location "\/x\/" has "proxy_set_header content-length"/ ],
    [ 'proxy_set_header Transfer-Encoding',
      "$L\nproxy_set_header Transfer-Encoding chunked;",
      qr/airlock location "\/x\/" has "proxy_set_header Transfer-Encoding": nginx frames the body/ ],
    [ 'proxy_set_header Content-Type',
      "$L\nproxy_set_header Content-Type application/json;",
      qr/airlock location "\/x\/" has "proxy_set_header Content-Type": the body was checked as/ ],
    [ 'proxy_set_header Content-Type ""',
      "$L\nproxy_set_header CONTENT-TYPE \"\";",
      qr/"proxy_set_header CONTENT-TYPE"/ ],
    [ 'proxy_set_header Content-Encoding',
      "$L\nproxy_set_header Content-Encoding gzip;",
      qr/airlock location "\/x\/" has "proxy_set_header Content-Encoding": the body was checked as the bytes sent/ ],
    [ 'proxy_set_header Content-Type inherited from the server',
      $bare, qr/airlock location "\/(x\/)?" has "proxy_set_header Content-Type"/,
      server => 'proxy_set_header Content-Type text/plain;' ],
    [ 'proxy_set_header Host $host',
      "$bare\nproxy_set_header Host \$host;",
      qr/airlock location "\/x\/" has "proxy_set_header Host \$host": the Host is the route's upstream's/ ],
    [ 'proxy_set_header Host with a client header',
      "$bare\nproxy_set_header host \$http_x_host;",
      qr/airlock location "\/x\/" has "proxy_set_header host \$http_x_host"/ ],
    [ 'proxy_set_header Host, fixed',
      "$bare\nproxy_set_header Host other.example;",
      qr/airlock location "\/x\/" has "proxy_set_header Host other\.example"/ ],
    [ 'proxy_set_header Host with more than $airlock_host',
      "$bare\nproxy_set_header Host \$airlock_host.other.example;",
      qr/"proxy_set_header Host \$airlock_host\.other\.example"/ ],
    [ 'proxy_set_header X-HTTP-Method-Override',
      "$L\nproxy_set_header X-HTTP-Method-Override DELETE;",
      qr/airlock location "\/x\/" has "proxy_set_header X-HTTP-Method-Override": the upstream would read another method/ ],
    [ 'proxy_set_header X-HTTP-Method from the query',
      "$L\nproxy_set_header x-http-method \$arg_m;",
      qr/"proxy_set_header x-http-method": the upstream would read another method/ ],
    [ 'proxy_set_header X-Method-Override',
      "$L\nproxy_set_header X-Method-Override PUT;",
      qr/"proxy_set_header X-Method-Override"/ ],
    [ 'proxy_set_header X-Original-URL',
      "$L\nproxy_set_header X-Original-URL /admin;",
      qr/airlock location "\/x\/" has "proxy_set_header X-Original-URL": the upstream would route on another path/ ],
    [ 'proxy_set_header X-Rewrite-URL',
      "$L\nproxy_set_header X-Rewrite-URL \$request_uri;",
      qr/"proxy_set_header X-Rewrite-URL"/ ],
    [ 'proxy_set_header X-Forwarded-Host $host',
      "$L\nproxy_set_header X-Forwarded-Host \$host;",
      qr/airlock location "\/x\/" has "proxy_set_header X-Forwarded-Host \$host": \$host is the client's/ ],
    [ 'proxy_set_header X-Forwarded-Host from a query parameter',
      "$L\nproxy_set_header x-forwarded-host \$ARG_site;",
      qr/"proxy_set_header x-forwarded-host \$ARG_site": \$ARG_site is the client's/ ],
    [ 'proxy_set_header Forwarded with ${host}',
      "$L\nproxy_set_header Forwarded \"proto=https;host=\${host}\";",
      qr/"proxy_set_header Forwarded proto=https;host=\$\{host\}": \$host is the client's/ ],
    [ 'proxy_set_header X-Forwarded-Host with a capture',
      "$L\nproxy_set_header X-Forwarded-Host \$1.example;",
      qr/"proxy_set_header X-Forwarded-Host \$1\.example": \$1 is the client's/ ],
    [ 'proxy_ssl_name $host',
      "$L\nproxy_ssl_name \$host;",
      qr/airlock location "\/x\/" has "proxy_ssl_name \$host": \$host is the client's/ ],
    [ 'proxy_ssl_name with a client header, inherited from the http level',
      $L, qr/airlock location "\/(x\/)?" has "proxy_ssl_name \$http_x_sni"/,
      http => 'proxy_ssl_name $http_x_sni;' ],
    [ 'proxy_set_header X-Forwarded-Host with a map of the Host',
      "$L\nproxy_set_header X-Forwarded-Host \$site;",
      qr/"proxy_set_header X-Forwarded-Host \$site": \$site is not one nginx or Airlock sets itself .* a map or set may hold what the client sent, and the upstream takes this header for the site/,
      http => 'map $host $site { default $host; }' ],
    [ 'proxy_set_header Forwarded with a set of the Host',
      "$L\nset \$h \$host;\nproxy_set_header Forwarded \"host=\$h\";",
      qr/"proxy_set_header Forwarded host=\$h": \$h is not one nginx or Airlock sets itself/ ],
    [ 'proxy_ssl_name with a map of a query parameter',
      "$L\nproxy_ssl_name \$sni;",
      qr/airlock location "\/x\/" has "proxy_ssl_name \$sni": \$sni is not one nginx or Airlock sets itself .*; the upstream's TLS name/,
      http => 'map $arg_sni $sni { default $arg_sni; }' ],
    [ 'set of a variable the check takes for the server\'s',
      "$L\nset \$scheme \$http_x_scheme;",
      qr/the duplicate "scheme" variable/ ],
    [ 'proxy_set_header X_Forwarded_Host $host',
      "$L\nproxy_set_header X_Forwarded_Host \$host;",
      qr/airlock location "\/x\/" has "proxy_set_header X_Forwarded_Host \$host": \$host is the client's/ ],
    [ 'proxy_set_header X_Service_Token (injected)',
      "$L\nproxy_set_header X_Service_Token \$http_x_token;",
      qr/airlock location "\/x\/" has "proxy_set_header X_Service_Token": Airlock removes client credentials/ ],
    [ 'proxy_set_header Proxy_Authorization',
      "$L\nproxy_set_header Proxy_Authorization x;",
      qr/"proxy_set_header Proxy_Authorization": Airlock removes client credentials/ ],
    [ 'proxy_set_header X_HTTP_Method_Override',
      "$L\nproxy_set_header X_HTTP_Method_Override DELETE;",
      qr/"proxy_set_header X_HTTP_Method_Override": the upstream would read another method/ ],
    [ 'proxy_set_header Content_Type',
      "$L\nproxy_set_header content_type text/plain;",
      qr/"proxy_set_header content_type": the body was checked as/ ],
    [ 'proxy_pass_request_body off',
      "$L\nproxy_pass_request_body off;",
      qr/airlock location "\/x\/" has "proxy_pass_request_body off"/ ],
    [ 'proxy_pass_request_body off inherited from the http level',
      $L, qr/airlock location "\/(x\/)?" has "proxy_pass_request_body off"/,
      http => 'proxy_pass_request_body off;' ],
);

my @accepted = (
    [ 'the standard location body', $L ],
    [ 'a header of another name, fixed',
      "$L\nproxy_set_header X-Echo-Size 3;" ],
    [ 'proxy_http_version 1.0', "$bare\nproxy_http_version 1.0;" ],
    [ 'proxy_set_header Host ${airlock_host}',
      "$bare\nproxy_set_header Host \${airlock_host};" ],
    [ 'proxy_set_header Host $airlock_llm_host',
      "$bare\nproxy_set_header Host \$airlock_llm_host;" ],
    [ 'no proxy_set_header Host (nginx sends the proxy_pass host)', $bare ],
    [ 'proxy_set_header X-Forwarded-Host, fixed or $airlock_host',
      "$L\nproxy_set_header X-Forwarded-Host \$airlock_host;\n"
      . "proxy_set_header Forwarded \"host=proxy.example\";" ],
    [ 'proxy_set_header of another name with a client variable',
      "$L\nproxy_set_header X-Echo-Size \$arg_size;\n"
      . "proxy_set_header X-Request-Id \$request_id;" ],
    [ 'proxy_ssl_name, fixed', "$L\nproxy_ssl_name api.example;" ],
    [ 'proxy_ssl_name $airlock_host', "$L\nproxy_ssl_name \$airlock_host;" ],
    [ 'X-Forwarded-Host and Forwarded with the server\'s variables',
      "$L\nproxy_set_header X-Forwarded-Host \$Server_Name;\n"
      . "proxy_set_header Forwarded \"for=\$remote_addr;by=\$server_addr;"
      . "host=\${airlock_host};proto=\$scheme\";" ],
    [ 'proxy_pass_request_body off outside Airlock locations',
      $L, locations => <<"EOF" ],
        location /side/ {
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
        }
EOF
);

plan tests => 2 * @refused + @accepted + 1;

my ($status, $out);

for my $c (@refused) {
    my ($name, $body, $re, %o) = @$c;
    ($status, $out) = conf_test(loc($body, %o));
    isnt($status, 0, "$name: nginx -t fails");
    like($out, $re, "$name: the message names the location and why");
}

for my $c (@accepted) {
    my ($name, $body, %o) = @$c;
    my $conf = $o{locations} ? $p->conf(locations => $o{locations})
                             : loc($body);
    ($status, $out) = conf_test($conf);
    is($status, 0, "$name: passes") or diag($out);
}

is($t->error_log_check, '', 'no alerts');
