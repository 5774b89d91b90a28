#!/usr/bin/perl

# ngx_http_airlock_module: a scrubbed response in a charset the scrubber
# cannot read is refused.  The proxy keeps the client's Accept, and a
# Spring controller writes a String in the charset it names ("Accept:
# text/plain;charset=IBM037"): in EBCDIC no byte of the credential is its
# ASCII, and the client decodes it by the Content-Type's charset.  Such
# an answer (EBCDIC, UTF-7, a name the proxy does not know, an empty
# one, "charset" with blanks around "=" or after another parameter) is
# answered 502 and logged; the charsets that write ASCII as ASCII, UTF-16
# and UTF-32 pass, scrubbed, as does an answer that names none.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Encode qw(encode);
use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 'ghp_FAKE-Ebcd1c-Ch4rset-012345';
my $sealed = $p->seal($tok);

# [name, Content-Type, body, 1 when refused]
my @cases = (
    [ 'IBM037', 'text/plain;charset=IBM037',
      encode('cp37', "echo: Bearer $tok"), 1 ],
    [ 'cp500, quoted', 'text/plain; charset="cp500"',
      encode('cp37', "echo: Bearer $tok"), 1 ],
    [ 'UTF-7', 'text/plain; charset=UTF-7', "echo: Bearer $tok", 1 ],
    [ 'blanks around "="', 'text/plain; charset = x-ebcdic',
      "echo: Bearer $tok", 1 ],
    [ 'after another parameter', 'text/plain; format=flowed;charset=ibm1047',
      "echo: Bearer $tok", 1 ],
    [ 'an empty name', 'text/plain; charset=', "echo: Bearer $tok", 1 ],
    [ 'utf-8', 'application/json; charset=utf-8', "echo: Bearer $tok", 0 ],
    [ 'ISO-8859-1', 'text/plain; charset=ISO-8859-1', "echo: Bearer $tok",
      0 ],
    [ 'windows-1252, quoted', 'text/html; charset="windows-1252"',
      "echo: Bearer $tok", 0 ],
    [ 'UTF-16LE', 'text/plain; charset=UTF-16LE',
      encode('UTF-16LE', "echo: Bearer $tok"), 0 ],
    [ 'UTF-32BE', 'application/json;charset=UTF-32BE',
      encode('UTF-32BE', "echo: Bearer $tok"), 0 ],
    [ 'utf-16', 'text/plain; charset=utf-16',
      encode('UTF-16', "echo: Bearer $tok"), 0 ],
    [ 'koi8-r after another parameter', 'text/plain; q=1; charset=koi8-r',
      "echo: Bearer $tok", 0 ],
    [ 'none named', 'text/plain', "echo: Bearer $tok", 0 ],
);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: cs
    clients: [local]
    match: { method: GET, path: /cs }
    upstream: echo
    to: /cs
    query: { allow: [c] }
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

my ($types, $bodies) = ('', '');

for my $i (0 .. $#cases) {
    (my $ct = $cases[$i][1]) =~ s/(["\\])/\\$1/g;
    $types .= "        $i \"Content-Type: $ct\";\n";
    $bodies .= "        $i \"" . encode_base64($cases[$i][2], '') . "\";\n";
}

$t->write_file_expand('nginx.conf', $p->conf(http => <<"EOF",
    map \$arg_c \$echo_type {
        default "";
$types    }

    map \$arg_c \$echo_body {
        default "";
$bodies    }
EOF
                                             location => <<'EOF'));
            proxy_set_header X-Echo-Header $echo_type;
            proxy_set_header X-Echo-Body-B64 $echo_body;
EOF

$t->start_echo(8081);
$t->run;

for my $i (0 .. $#cases) {
    my ($name, $type, $body, $refused) = @{$cases[$i]};
    my $raw = $t->http_get("/cs?c=$i", timeout => 10);
    my $r = parse_response($raw);

    if ($refused) {
        is($r->{status}, 502, "$name: refused");
        ok(index($raw, $body) < 0, "$name: the body is not sent");

    } else {
        is($r->{status}, 200, "$name: passes");
        ok(index($raw, $tok) < 0, "$name: scrubbed");
    }
}

my $log = $t->read_file('error.log');
like($log, qr/\[error\].*airlock: upstream sent "Content-Type: (?#
              )text\/plain;charset=IBM037" on route "cs", a response that (?#
              )cannot be scrubbed/, 'error log: the refusal says why');
ok(index($log, $tok) < 0, 'error log: no secret');

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
