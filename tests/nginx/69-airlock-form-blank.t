#!/usr/bin/perl

# ngx_http_airlock_module: a form's _method field, with the form's media
# type written among bytes a reader upstream trims from it.  Rack 3 takes
# the type as the text before ';' or ',' with String#rstrip (NUL, \t, \n,
# \v, \f, \r, space), Rack 2 splits on /\s*[;,]\s*/, Express 5 (the
# content-type package) trims with String#trim(), which on a header Node
# reads as Latin-1 takes 0xA0 too, and Go's mime.ParseMediaType trims
# with strings.TrimSpace, UTF-8 U+00A0 included.  Puma passes \v and \f
# in a header value, Node passes 0xA0, Go passes 0xC2 0xA0.  Each of
# these is a form to its reader, so a _method field in it is refused as
# in any form; the same bytes around a type that is not a form still
# pass.  Go trims the same spaces around a multipart parameter's "=" and
# ends a token at a byte that is not a token's: name\xc2\xa0=_method\xc2\xa0
# is the field _method to it.

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
  - name: raw
    clients: [local]
    match: { method: POST, path: /raw }
    upstream: echo
    to: /raw
    body: { max_bytes: 1024 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $form = 'application/x-www-form-urlencoded';
my $mp = 'multipart/form-data; boundary=b';
sub mp_part {
    my ($params) = @_;
    return "--b\r\nContent-Disposition: form-data; $params\r\n\r\n"
           . "DELETE\r\n--b--\r\n";
}
my $part = mp_part('name="_method"');

# [name, Content-Type, body]
my @refused = (
    [ 'trailing \v (Rack 3)', "$form\x0b", '_method=DELETE' ],
    [ 'trailing \f (Rack 3)', "$form\x0c", '_method=DELETE' ],
    [ '\v before ";" (Rack 2)', "$form\x0b; charset=utf-8",
      '_method=DELETE' ],
    [ 'trailing 0xA0 (Express 5 on Node)', "$form\xa0", '_method=DELETE' ],
    [ 'trailing UTF-8 U+00A0 (Go)', "$form\xc2\xa0", '_method=DELETE' ],
    [ 'leading \v', "\x0b$form", '_method=DELETE' ],
    [ 'leading UTF-8 U+00A0, multipart (Go)', "\xc2\xa0$mp", $part ],
    [ 'U+00A0 around a multipart name\'s "=" (Go)', $mp,
      mp_part("name\xc2\xa0=\xc2\xa0\"_method\"") ],
    [ 'U+00A0 after an unquoted multipart name (Go)', $mp,
      mp_part("name=_method\xc2\xa0") ],
);

my @passed = (
    [ 'a form without _method, trailing \v', "$form\x0b", 'a=1' ],
    [ 'not a form, trailing \v', "text/plain\x0b", '_method=DELETE' ],
    [ 'not a form, trailing 0xA0', "text/plain\xa0", '_method=DELETE' ],
);

plan tests => @refused + @passed + 1;

for my $c (@refused) {
    my ($name, $ct, $body) = @$c;
    $p->is_refused(post_request('/raw', $ct, $body), "refused: $name");
}

for my $c (@passed) {
    my ($name, $ct, $body) = @$c;
    $p->is_passed(post_request('/raw', $ct, $body), "passes: $name");
}

is($t->error_log_check, '', 'no alerts');
