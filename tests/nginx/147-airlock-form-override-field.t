#!/usr/bin/perl

# ngx_http_airlock_module: a form field named X-HTTP-Method-Override is
# a method override, as _method is.  ASP.NET MVC (System.Web.Mvc's
# GetHttpMethodOverride(), by which [HttpDelete], [HttpPut] and
# AcceptVerbs select an action) reads the override from that header,
# then from the form field of the same name, in any case, then from the
# query: a POST the route allowed reaches the action as a DELETE.  The
# header is refused (reason "request"); the field, urlencoded or as a
# multipart name, is refused with reason "body" as _method is, and
# reaches no upstream, "%uXXXX" escapes too, which System.Web's
# HttpUtility.UrlDecode (the form MVC reads) decodes.  A longer name,
# and the name as a value, pass.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: items
    clients: [local]
    match: { method: POST, path: /items }
    upstream: echo
    to: /items
    body: { max_bytes: 1024 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $form = 'application/x-www-form-urlencoded';
my $mp = 'multipart/form-data; boundary=b';

sub part {
    my ($name) = @_;
    return "--b\r\nContent-Disposition: form-data; name=\"$name\"\r\n\r\n"
           . "DELETE\r\n--b--\r\n";
}

# [name, Content-Type, body]
my @refused = (
    [ 'urlencoded', $form, 'a=1&X-HTTP-Method-Override=DELETE' ],
    [ 'in lower case', $form, 'x-http-method-override=DELETE' ],
    [ 'percent-encoded', $form, 'X%2DHTTP%2DMethod%2DOverride=DELETE' ],
    [ '%u escapes (System.Web\'s UrlDecode)', $form,
      '%u0058-HTTP-Method-%u004Fverride=DELETE' ],
    [ 'with brackets', $form, 'X-HTTP-Method-Override[]=DELETE' ],
    [ 'no Content-Type', undef, 'X-HTTP-Method-Override=DELETE' ],
    [ 'a multipart name', $mp, part('X-Http-Method-Override') ],
);

my @passed = (
    [ 'a longer name', $form, 'X-HTTP-Method-Overrides=DELETE' ],
    [ 'the name as a value', $form, 'a=X-HTTP-Method-Override' ],
    [ 'not a form', 'text/plain', 'X-HTTP-Method-Override=DELETE' ],
);

plan tests => 2 * @refused + @passed + 2;

sub post {
    my ($ct, $body) = @_;
    return "POST /items HTTP/1.0\r\n"
           . (defined $ct ? "Content-Type: $ct\r\n" : '')
           . "Content-Length: " . length($body) . "\r\n\r\n$body";
}

for my $c (@refused) {
    my ($name, $ct, $body) = @$c;
    my $before = $p->echo_count;
    my $denied = $p->deny_count;
    my $d = deny_json(http(post($ct, $body)));
    my @l = $p->deny_log;

    is_deeply([ @$d, $p->echo_count - $before ], [ 403, 'body', 0 ],
              "refused, not forwarded: $name");
    like(@l > $denied ? $l[-1]{detail} // '' : '',
         qr/field "X-HTTP-Method-Override" would change the method upstream/,
         "the deny log names it: $name");
}

for my $c (@passed) {
    my ($name, $ct, $body) = @$c;
    is(parse_response(http(post($ct, $body)))->{status}, 200,
       "passes: $name");
}

is_deeply(deny_json(http("POST /items HTTP/1.0\r\n"
                         . "X-HTTP-Method-Override: DELETE\r\n"
                         . "Content-Type: $form\r\nContent-Length: 3\r\n"
                         . "\r\na=1")),
          [ 403, 'request' ], 'the header is refused as before');

is($t->error_log_check, '', 'no alerts');
