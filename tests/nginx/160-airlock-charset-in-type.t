#!/usr/bin/perl

# ngx_http_airlock_module: "charset" in the media type itself.  Since
# 5110ad8 a body read as JSON is refused when "charset" is anywhere in
# its Content-Type but as a charset parameter's name, as Tomcat's
# getCharacterEncoding() takes whatever follows the first "charset=" in
# the header.  That counted the media type too, so
# "application/vnd.charset+json" was refused with no charset in it.  The
# media type holds no '=' (a type with one is refused: its parameters do
# not parse), so no reader finds a charset there; now only the
# parameters are searched.  Tomcat's reading stays refused: "charset="
# after the type, in another parameter's name or a quoted value, or in
# the type itself.

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
  - name: typed
    clients: [local]
    match: { method: POST, path: /typed }
    upstream: echo
    to: /typed
    body:
      max_bytes: 1024
      content_type: application/vnd.charset+json
      json: { a: { type: integer } }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $vnd = 'application/vnd.charset+json';

# [name, path, Content-Type]
my @refused = (
    [ 'no rules: then xcharset=shift_jis', '/raw',
      "$vnd; xcharset=shift_jis" ],
    [ 'no rules: then in a quoted value', '/raw',
      "$vnd; x=\"a;charset=shift_jis;\"" ],
    [ 'no rules: then charset=utf-7', '/raw', "$vnd; charset=utf-7" ],
    [ 'no rules: charset= in the type', '/raw',
      'application/vnd.charset=shift_jis+json' ],
    [ 'no rules: after a comma', '/raw', "$vnd,charset=utf-7" ],
    [ 'content_type: then xcharset=shift_jis', '/typed',
      "$vnd; xcharset=shift_jis" ],
    [ 'content_type: then charset=utf-7', '/typed', "$vnd; charset=utf-7" ],
);

my @passed = (
    [ 'no rules: the type alone', '/raw', $vnd ],
    [ 'no rules: and charset=utf-8', '/raw', "$vnd; charset=utf-8" ],
    [ 'content_type: the type alone', '/typed', $vnd ],
    [ 'content_type: and charset=utf-8', '/typed', "$vnd; charset=utf-8" ],
    [ 'content_type: another case, and v=1', '/typed',
      'Application/Vnd.Charset+JSON; v=1' ],
);

plan tests => 2 * @refused + @passed + 1;

sub post {
    my ($path, $ct, $body) = @_;
    return "POST $path HTTP/1.0\r\n"
           . "Content-Type: $ct\r\n"
           . "Content-Length: " . length($body) . "\r\n\r\n$body";
}

for my $c (@refused) {
    my ($name, $path, $ct) = @$c;
    my $before = $p->echo_count;
    my $raw = http(post($path, $ct, '{"a":1}'));
    my $r = parse_response($raw);
    my $j = json_body($raw);

    ok($r->{status} == 403 && $j && $j->{reason} eq 'body',
       "refused: $name") or diag("status $r->{status}");
    is($p->echo_count, $before, "and not forwarded: $name");
}

for my $c (@passed) {
    my ($name, $path, $ct) = @$c;
    is(parse_response(http(post($path, $ct, '{"a":1}')))->{status}, 200,
       "passes: $name");
}

is($t->error_log_check, '', 'no alerts');
