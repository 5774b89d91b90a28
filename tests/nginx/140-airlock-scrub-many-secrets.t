#!/usr/bin/perl

# ngx_http_airlock_module: a policy of nine secrets, of the kinds an
# appliance holds, has more two-byte starts (about thirty: each secret
# raw, in base64 and in hex, the rendered values) than the scrub walk
# gives a bit each (16).  The AVX2 walk then lets starts share its bits
# (ngx_http_airlock_nibbles_share()), where such a list was walked a byte
# at a time before.  Every secret, in each form, at every offset from a
# 32-byte block's start, is redacted; text made of the starts' bytes in
# other orders passes as sent.  Sanitizer builds check every lane of the
# walk against the exact test (at least the lanes it wants).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

# made up, each of a real kind's shape (FAKE in every one): none is a key
my @keys = ('ghp_FAKE0test0token0not0real', 'glpat-FAKE-test-token-0000',
            'prometheus:FAKE-test-password', 'xoxb-0000-0000-FAKEtestTOKEN',
            'AKIAFAKE0TEST0KEY000', 'sk-ant-api03-FAKE-test-key-0000',
            'lt_FAKE_test_token_0000', 'whsec_FAKEtestSECRET000000',
            'sk-proj-FAKE-test-key-00000000');

my ($secrets, $routes) = ('', '');
for my $i (0 .. $#keys) {
    my $s = $p->seal($keys[$i]);
    $secrets .= "  s$i: { sealed: \"$s\" }\n";
    my $tmpl = $keys[$i] =~ /:/ ? "Basic {s$i|base64}" : "Bearer {s$i}";
    $routes .= <<"EOF";
  - name: r$i
    clients: [local]
    match: { method: GET, path: "/r$i/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    query: { allow: [r] }
    inject: { Authorization: "$tmpl" }
EOF
}

# tests/lib/raw-upstream.pl answers what X-Raw holds

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
$secrets
upstreams:
  raw: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
$routes
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

sub answer {
    my ($body) = @_;
    return "HTTP/1.1 200 OK\r\nContent-Length: " . length($body)
        . "\r\nConnection: close\r\n\r\n$body";
}

sub hex_of { return join '', map { sprintf '%02x', ord } split //, $_[0] }

sub url_of { return join '', map { sprintf '%%%02X', ord } split //, $_[0] }

# each form of each key after 0 to 32 bytes of text, a line each (raw),
# or 0 to 7 (the longer forms: a map value holds at most 4 KB)
my (%raw, %want);
for my $i (0 .. $#keys) {
    my %forms = (raw => $keys[$i], b64 => encode_base64($keys[$i], ''),
                 hex => hex_of($keys[$i]), url => url_of($keys[$i]));
    for my $f (sort keys %forms) {
        my $last = $f eq 'raw' ? 32 : 7;
        my ($body, $exp) = ('', '');
        for my $k (0 .. $last) {
            my $pad = substr('the answer: ' x 3, 0, $k);
            $body .= "$pad$forms{$f}\n";
            $exp .= "$pad\[REDACTED]\n";
        }
        $raw{"k$i$f"} = answer($body);
        $want{"k$i$f"} = $exp;
    }
}

# the starts' bytes, as pairs no string begins with
my $decoy = join ' ', map { substr($_, 1, 2) . substr($_, 0, 1) } @keys;
$decoy = "$decoy gH pg hg 6g 6G 53 68 58 63 Qm Z2 ghx glx prx\n" x 4;
$raw{decoy} = answer($decoy);

my $map = join '', map {
    "        $_ \"" . encode_base64($raw{$_}, '') . "\";\n"
} sort keys %raw;

$t->write_file_expand('nginx.conf', $p->conf(
    http => "    map \$arg_r \$raw_answer {\n        default \"\";\n"
        . "$map    }\n",
    location => "proxy_set_header X-Raw \$raw_answer;"));

$t->run_daemon($^X, "$FindBin::Bin/../lib/raw-upstream.pl",
               $t->port(8081));
$t->wait_for_port(8081) or die 'raw upstream did not start';
$t->run;

for my $i (0 .. $#keys) {
    for my $f (qw(raw b64 hex url)) {
        my $r = parse_response($t->http_get("/r0/x?r=k$i$f"));
        is($r->{body}, $want{"k$i$f"},
           "key $i ($f), at every offset, redacted")
            or diag(substr($r->{body} // '', 0, 300));
    }
}

my $r = parse_response($t->http_get('/r3/x?r=decoy'));
is($r->{status}, 200, 'text of the starts\' bytes: 200');
is($r->{body}, $decoy, 'and passed as sent');

my $logs = $t->read_file('access.log') . $t->read_file('error.log');
is(scalar(grep { index($logs, $_) >= 0 } @keys), 0, 'no key in the logs');

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
