#!/usr/bin/perl

# ngx_http_airlock_module: a charset named anywhere in the Content-Type.
# The body checks read a JSON body as UTF-8 and a form as ASCII, and
# refuse a Content-Type whose charset parameter says otherwise; they
# read the header as RFC 9110 writes it.  Tomcat does not: its
# getCharacterEncoding() takes whatever follows the first "charset=" in
# the header, inside another parameter's name ("xcharset=") or a quoted
# value (x="a;charset=shift_jis;") too, and Spring MVC reads a JSON body
# in that charset (ServletServerHttpRequest fills in the one Tomcat
# found), a form's fields too (Tomcat's getParameter(), read by
# HiddenHttpMethodFilter for "_method").  So "application/json;
# xcharset=shift_jis" passed a json route, and a form under
# "application/x-www-form-urlencoded; xcharset=utf-16" whose UTF-16
# "_method=DELETE" has no ASCII "_method" reached such an upstream as a
# DELETE.  Now on a body read as JSON, "charset" anywhere in the header
# (any case) but as the name of a charset parameter is refused; on a
# form, every "charset=" counts, whatever byte is before it, and must
# name an ASCII charset.  Reason "body" either way, never forwarded.
# Bodies read neither way (text/plain) take any header, as before.

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
  - name: pr
    clients: [local]
    match: { method: POST, path: /github/pull-request }
    upstream: echo
    to: /repos/acme/infra/pulls
    body:
      max_bytes: 1024
      json:
        head: '^remediation/[A-Za-z0-9._/-]+$'
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

my $json = 'application/json';
my $form = 'application/x-www-form-urlencoded';
my $ok = '{"head":"remediation/x"}';

# "_method=DELETE" as Tomcat reads a form in UTF-16 (big endian without
# a byte order mark): it splits on the byte '=', then decodes each side
my $utf16 = join('', map { "\0$_" } split //, '_method') . '='
          . join('', map { "\0$_" } split //, 'DELETE');

# [name, path, Content-Type, body]
my @refused = (
    [ 'json: in a parameter name', '/github/pull-request',
      "$json; xcharset=shift_jis", $ok ],
    [ 'json: in a quoted value', '/github/pull-request',
      "$json; x=\"a;charset=shift_jis;\"", $ok ],
    [ 'json: after a charset of utf-8', '/github/pull-request',
      "$json; charset=utf-8; x=\"charset=utf-16\"", $ok ],
    [ 'json: in upper case, in a name', '/github/pull-request',
      "$json; X-CHARSET=utf-7", $ok ],
    [ 'json without rules: in a parameter name', '/raw',
      "$json; xcharset=utf-7", '{"a":1}' ],
    [ 'form: in a parameter name', '/raw', "$form; xcharset=utf-16",
      $utf16 ],
    [ 'form: after a digit', '/raw', "$form; a1charset=utf-16", $utf16 ],
);

my @passed = (
    [ 'json: charset=utf-8', '/github/pull-request', "$json; charset=utf-8",
      $ok ],
    [ 'json: charset="UTF-8" and another parameter', '/github/pull-request',
      "$json; charset=\"UTF-8\"; v=1", $ok ],
    [ 'form: in a parameter name, an ASCII charset', '/raw',
      "$form; xcharset=utf-8", 'a=1' ],
    [ 'text/plain: any parameter', '/raw', 'text/plain; xcharset=utf-7',
      '{"a":1}' ],
);

plan tests => 2 * @refused + @passed + 1;

# each refused case: 403, reason "body", and not forwarded
$p->posts_refused(\@refused);
$p->posts_passed(\@passed);

is($t->error_log_check, '', 'no alerts');
