#!/usr/bin/perl

# ngx_http_airlock_module: a form field named like a checked param with
# a letter outside ASCII that a case-insensitive reader folds to an
# ASCII one.  Go's strings.EqualFold, by which Echo binds a form field to
# a struct field when no key matches exactly (its body binding runs
# after the path params', and wins), takes the Kelvin sign (U+212A) for
# "k" and the long s (U+017F) for "s": "\x{212a}ey=../x" in a form body
# stood for the path param {key} its pattern checked, "\x{17f}ince=" for
# the checked query parameter "since".  A JSON key was already read so
# (al_folds_to(): those two, and U+0130 and U+0131 for "i"); a form
# field, urlencoded (raw or percent-encoded) or a multipart name, now is
# too, and is refused with reason "body", reaching no upstream; so is
# a name written with "%uXXXX" escapes, which System.Web's
# HttpUtility.UrlDecode (ASP.NET MVC's form, whose value provider comes
# before the route's) decodes.  A letter that folds to none (U+212B
# ANGSTROM SIGN) passes.

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
  - name: task
    clients: [local]
    match: { method: POST, path: "/tasks/{key}/{id}" }
    params: { key: '^[a-z0-9]+$', id: '^[0-9]+$' }
    upstream: echo
    to: "/tasks/{key}/{id}"
    query: { allow: [since], patterns: { since: '^[0-9]{1,2}m$' } }
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
           . "../x\r\n--b--\r\n";
}

# [name, Content-Type, body]
my @refused = (
    [ 'KEY (control)', $form, 'KEY=../x' ],
    [ 'Kelvin sign for k, encoded', $form, '%E2%84%AAey=../x' ],
    [ 'Kelvin sign for k, raw', $form, "\xe2\x84\xaaey=../x" ],
    [ 'long s for s (a checked query param)', $form, '%C5%BFince=99999m' ],
    [ 'dotless i for i', $form, '%C4%B1d=../x' ],
    [ 'dotted capital I for i', $form, '%C4%B0D=../x' ],
    [ 'Kelvin sign in a multipart name', $mp, part("\xe2\x84\xaaEY") ],
    [ '%u escape of a letter (System.Web)', $form, '%u006Bey=../x' ],
    [ 'Kelvin sign as a %u escape', $form, '%u212Aey=../x' ],
);

my @passed = (
    [ 'the Angstrom sign folds to no ASCII letter', $form,
      '%E2%84%ABey=../x' ],
    [ 'a Kelvin sign in a longer name', $form, '%E2%84%AAeys=../x' ],
    [ 'the Angstrom sign as a %u escape', $form, '%u212Bey=../x' ],
);

plan tests => @refused + @passed + 1;

sub post {
    my ($ct, $body) = @_;
    return "POST /tasks/abc/1?since=5m HTTP/1.0\r\nContent-Type: $ct\r\n"
           . "Content-Length: " . length($body) . "\r\n\r\n$body";
}

for my $c (@refused) {
    my ($name, $ct, $body) = @$c;
    my $before = $p->echo_count;
    my $d = deny_json(http(post($ct, $body)));

    is_deeply([ @$d, $p->echo_count - $before ], [ 403, 'body', 0 ],
              "refused, not forwarded: $name");
}

for my $c (@passed) {
    my ($name, $ct, $body) = @$c;
    is(parse_response(http(post($ct, $body)))->{status}, 200,
       "passes: $name");
}

is($t->error_log_check, '', 'no alerts');
