#!/usr/bin/perl

# What an Airlock location may not do.  "nginx -t" refuses, naming the
# location, an Airlock location (named routes and the LLM gateway) that
# sets a credential header with proxy_set_header, forwards anywhere but
# $airlock_upstream$airlock_uri, enables realip, lets an upstream steer
# nginx with X-Accel-* headers, or lets a response reach the disk
# (proxy_max_temp_file_size other than 0, proxy_cache, proxy_store),
# sends another body (proxy_set_body) or another method (proxy_method,
# set in the location or inherited into it), has a content handler other
# than the proxy module's (scgi_pass, fastcgi_pass, uwsgi_pass, grpc_pass,
# memcached_pass, any other), or prints upstream data after the scrubber
# (ssi, here or inherited; a sub_filter replacement with a variable).  The
# standard location body, conf/airlock-location.conf, passes, and so do a
# "return", fixed sub_filter strings and add_after_body.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;
my $sealed = $p->seal('location-check-secret');

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
    match: { method: GET, path: /x/v1 }
    upstream: echo
    to: /one
    inject: { X-Service-Token: "{tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
EOF

# nginx -t of this nginx.conf
sub conf_test { $p->conf_test(@_) }

# a location /x/ with "airlock on" and the given body
sub loc { $p->x_location_conf(@_) }

my $ignore = 'proxy_ignore_headers X-Accel-Redirect X-Accel-Expires '
           . 'X-Accel-Limit-Rate X-Accel-Buffering X-Accel-Charset;';
my $pass = 'proxy_pass $airlock_upstream$airlock_uri;';

my @refused = (
    # name, body, message
    [ 'realip', "%%AIRLOCK_LOCATION%%\nset_real_ip_from 127.0.0.1;",
      qr/airlock location "\/x\/" has "set_real_ip_from"/ ],
    [ 'proxy_set_header Authorization',
      "%%AIRLOCK_LOCATION%%\nproxy_set_header Authorization \$http_x_auth;",
      qr/airlock location "\/x\/" has "proxy_set_header Authorization"/ ],
    [ 'proxy_set_header Proxy-Authorization',
      "%%AIRLOCK_LOCATION%%\nproxy_set_header Proxy-Authorization x;",
      qr/"proxy_set_header Proxy-Authorization"/ ],
    [ 'proxy_set_header Cookie',
      "%%AIRLOCK_LOCATION%%\nproxy_set_header cookie \$http_cookie;",
      qr/"proxy_set_header cookie"/ ],
    [ 'proxy_set_header of an injected header',
      "%%AIRLOCK_LOCATION%%\nproxy_set_header X-Service-Token x;",
      qr/"proxy_set_header X-Service-Token"/ ],
    [ 'proxy_pass without $airlock_uri',
      "$ignore\nproxy_pass \$airlock_upstream;",
      qr/airlock location "\/x\/" must forward with "proxy_pass \$airlock_upstream\$airlock_uri"/ ],
    [ 'proxy_pass to a fixed upstream',
      "$ignore\nproxy_pass http://127.0.0.1:%%PORT_8081%%;",
      qr/must forward with/ ],
    [ 'proxy_pass with the client\'s URI',
      "$ignore\nproxy_pass \$airlock_upstream\$request_uri;",
      qr/must forward with/ ],
    [ 'proxy_pass with more after $airlock_uri',
      "$ignore\nproxy_pass \$airlock_upstream\$airlock_uri/x;",
      qr/must forward with/ ],
    [ 'X-Accel-* not ignored', $pass,
      qr/airlock location "\/x\/" must have "proxy_ignore_headers X-Accel-Redirect/ ],
    [ 'X-Accel-* partly ignored',
      "$pass\nproxy_ignore_headers X-Accel-Redirect X-Accel-Expires;",
      qr/must have "proxy_ignore_headers/ ],
    [ 'proxy_max_temp_file_size 1m',
      "$pass\n$ignore\nproxy_max_temp_file_size 1m;",
      qr/airlock location "\/x\/" has "proxy_max_temp_file_size 1048576"/ ],
    [ 'proxy_set_body', "%%AIRLOCK_LOCATION%%\nproxy_set_body x;",
      qr/airlock location "\/x\/" has "proxy_set_body"/ ],
    [ 'proxy_method', "%%AIRLOCK_LOCATION%%\nproxy_method DELETE;",
      qr/airlock location "\/x\/" has "proxy_method"/ ],
    [ 'proxy_method with a variable',
      "%%AIRLOCK_LOCATION%%\nproxy_method \$http_x_method;",
      qr/airlock location "\/x\/" has "proxy_method"/ ],
    [ 'proxy_method inherited from the server',
      "%%AIRLOCK_LOCATION%%",
      qr/airlock location "\/(x\/)?" has "proxy_method"/,
      server => 'proxy_method PUT;' ],
    [ 'proxy_store', "%%AIRLOCK_LOCATION%%\nproxy_store on;",
      qr/airlock location "\/x\/" has "proxy_store"/ ],
    [ 'proxy_cache', "%%AIRLOCK_LOCATION%%\nproxy_cache c;",
      qr/airlock location "\/x\/" has "proxy_cache"/,
      http => 'proxy_cache_path %%TESTDIR%%/cache keys_zone=c:1m;' ],

    # another content handler: each of these sends the request's headers,
    # the injected credentials among them, to its own backend
    [ 'scgi_pass', "scgi_pass 127.0.0.1:%%PORT_8085%%;",
      qr/airlock location "\/x\/" has "scgi_pass"/ ],
    [ 'scgi_pass after the location body',
      "%%AIRLOCK_LOCATION%%\nscgi_pass 127.0.0.1:%%PORT_8085%%;",
      qr/airlock location "\/x\/" has "scgi_pass"/ ],
    [ 'scgi_pass with a variable', "scgi_pass \$airlock_upstream;",
      qr/airlock location "\/x\/" has "scgi_pass"/ ],
    [ 'fastcgi_pass', "fastcgi_pass 127.0.0.1:%%PORT_8085%%;",
      qr/airlock location "\/x\/" has "fastcgi_pass"/ ],
    [ 'uwsgi_pass', "uwsgi_pass 127.0.0.1:%%PORT_8085%%;",
      qr/airlock location "\/x\/" has "uwsgi_pass"/ ],
    [ 'grpc_pass', "grpc_pass 127.0.0.1:%%PORT_8085%%;",
      qr/airlock location "\/x\/" has "grpc_pass"/ ],
    [ 'memcached_pass',
      "set \$memcached_key \$uri;\nmemcached_pass 127.0.0.1:%%PORT_8085%%;",
      qr/airlock location "\/x\/" has "memcached_pass"/ ],
    [ 'scgi_pass in an if block',
      "%%AIRLOCK_LOCATION%%\n"
      . "if (\$http_x_other) { scgi_pass 127.0.0.1:%%PORT_8085%%; }",
      qr/airlock location "\/x\/" has "scgi_pass"/ ],
    [ 'another content handler', "empty_gif;",
      qr/airlock location "\/x\/" has a content handler other than "proxy_pass"/ ],

    # output filters after the scrubber that print variables
    [ 'ssi on', "%%AIRLOCK_LOCATION%%\nssi on;",
      qr/airlock location "\/x\/" has "ssi on"/ ],
    [ 'ssi on inherited from the server', "%%AIRLOCK_LOCATION%%",
      qr/airlock location "\/(x\/)?" has "ssi on"/,
      server => 'ssi on;' ],
    [ 'sub_filter with a variable',
      "%%AIRLOCK_LOCATION%%\n"
      . "sub_filter x \$upstream_http_x_echo_authorization;",
      qr/airlock location "\/x\/" has "sub_filter" with a variable/ ],
);

plan tests => 2 * @refused + 17;

my ($status, $out);

($status, $out) = conf_test($p->conf);
is($status, 0, 'the standard location body passes') or diag($out);

for my $c (@refused) {
    my ($name, $body, $re, %o) = @$c;
    ($status, $out) = conf_test(loc($body, %o));
    isnt($status, 0, "$name: nginx -t fails");
    like($out, $re, "$name: the message names the location");
}

# inherited: realip at the http level reaches every Airlock location

($status, $out) = conf_test($p->conf(http => 'set_real_ip_from 10.0.0.0/8;'));
like($out, qr/airlock location "\/" has "set_real_ip_from"/,
     'realip at the http level: refused in location "/"');

($status, $out) = conf_test($p->conf(http => 'proxy_method POST;'));
like($out, qr/airlock location "\/" has "proxy_method"/,
     'proxy_method at the http level: refused in location "/"');

# inherited from the server: "airlock on" at the server level is checked
# there too (realip would rewrite the address before any location)

($status, $out) = conf_test($p->conf(server => "airlock on;\n"
                                     . "set_real_ip_from 10.0.0.0/8;"));
like($out, qr/airlock location "\(server level\)" has "set_real_ip_from"/,
     'realip with "airlock on" at the server level: refused');

# a proxy_max_temp_file_size elsewhere does not reach Airlock locations
# that include the body; 0 written by hand is accepted

($status, $out) = conf_test($p->conf(http => 'proxy_max_temp_file_size 1m;'));
is($status, 0, 'proxy_max_temp_file_size 1m at the http level: the '
   . 'location body sets 0') or diag($out);

($status, $out) = conf_test(loc("$pass\n$ignore\nproxy_max_temp_file_size 0;"));
is($status, 0, 'a hand-written body with everything passes') or diag($out);

# a location without proxy_pass (an error page under "airlock on") is
# not a forwarding location

($status, $out) = conf_test($p->conf(server => 'airlock on;'));
is($status, 0, '"airlock on" server: @airlock_error without proxy_pass '
   . 'passes') or diag($out);

# what stays allowed: a location answered by "return", sub_filter with
# fixed replacements (a variable in what it looks for prints nothing),
# add_after_body (a subrequest, which gets no credential), and SSI in a
# location that is not an Airlock location

($status, $out) = conf_test(loc('return 403;'));
is($status, 0, 'a location answered by "return" passes') or diag($out);

($status, $out) = conf_test(loc("%%AIRLOCK_LOCATION%%\nsub_filter x y;\n"
                                . "sub_filter \$upstream_http_x z;\n"
                                . 'add_after_body /side/;'));
is($status, 0, 'sub_filter with fixed replacements and add_after_body '
   . 'pass') or diag($out);

($status, $out) = conf_test($p->conf(locations => <<'EOF'));
        location /side/ {
            ssi on;
            return 200 '<!--# echo var="uri" -->';
        }
EOF
is($status, 0, 'ssi in a location that is not an Airlock location passes')
    or diag($out);

# the LLM gateway: the same checks

my $t2 = Airlock::Test->new;
my $l = Airlock::LLM->new($t2);
$l->setup;

sub llm_test {
    my (%o) = @_;
    $t2->write_file_expand('nginx.conf', $l->conf(%o));
    return $t2->reload_test;
}

($status, $out) = llm_test();
is($status, 0, 'LLM: the standard location body passes') or diag($out);

($status, $out) = llm_test(location => 'proxy_set_header X-Api-Key k;');
like($out, qr/airlock location "\/v1\/proxy\/(openai|anthropic)\/" has "proxy_set_header X-Api-Key"/,
     'LLM: proxy_set_header x-api-key refused');

($status, $out) = llm_test(location => 'set_real_ip_from 127.0.0.1;');
like($out, qr/airlock location "\/v1\/proxy\/(openai|anthropic)\/" has "set_real_ip_from"/,
     'LLM: realip refused');

($status, $out) = llm_test(location => 'proxy_method GET;');
like($out, qr/airlock location "\/v1\/proxy\/(openai|anthropic)\/" has "proxy_method"/,
     'LLM: proxy_method refused');

($status, $out) = llm_test(location => 'scgi_pass 127.0.0.1:%%PORT_8085%%;');
like($out, qr/airlock location "\/v1\/proxy\/(openai|anthropic)\/" has "scgi_pass"/,
     'LLM: scgi_pass refused');

($status, $out) = llm_test(location => 'ssi on;');
like($out, qr/airlock location "\/v1\/proxy\/(openai|anthropic)\/" has "ssi on"/,
     'LLM: ssi on refused');

($status, $out) = llm_test(http => 'proxy_cache_path %%TESTDIR%%/cache '
                                   . 'keys_zone=c:1m;',
                           location => 'proxy_cache c;');
like($out, qr/airlock location "\/v1\/proxy\/(openai|anthropic)\/" has "proxy_cache"/,
     'LLM: proxy_cache refused');
