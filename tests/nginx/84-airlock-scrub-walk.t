#!/usr/bin/perl

# ngx_http_airlock_module: the search for where a credential could begin
# (32 bytes at a time with AVX2 where the CPU has it, 16 otherwise) on
# bodies made of nothing but the bytes it looks at: a credential whose
# second byte is a space, so its two-byte starts include one ending in a
# space ("+" may stand for it), escapes ('%' and '\') everywhere, and the
# credential planted in each of its forms at every offset of the blocks.
# Every planted credential is redacted and nothing else changes, streamed
# and held.  Sanitizer builds (make asan) also check each lane the AVX2
# search decides against the 16-byte search's test, and abort on a
# difference.

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

my $tok = 'k s3cr3t-walk-0123456789';
my $sealed = $p->seal($tok);

# the forms al_scrub_match() reads, each from its first byte to its last
my @forms = ($tok,
             'k+s3cr3t-walk-0123456789',
             'k%20s3cr3t-walk-0123456789',
             '%6B%20s3cr3t-walk-0123456789',
             'k\\u0020s3cr3t-walk-0123456789',
             '\\u006b s3cr3t-walk-0123456789');

# noise: the bytes of the starts and the escapes, and others; no hex digit
# after a '%' and no 'u' after a '\' can begin an escaped credential
my @alphabet = split //, 'k +%\\xyz.-';
my $seed = 12345;

sub noise {
    my ($n) = @_;
    my $s = '';
    for (1 .. $n) {
        $seed = ($seed * 1103515245 + 12345) % 2147483648;
        $s .= $alphabet[($seed >> 16) % @alphabet];
    }
    return $s;
}

# one unit: noise of 1 to 40 bytes, a form, over and over; the unit's
# length lands the forms on every offset of 32-byte blocks as it repeats
my ($unit, $want_unit) = ('', '');
for my $i (0 .. 59) {
    my $n = noise(1 + $i % 40);
    my $f = $forms[$i % @forms];
    $unit .= $n . $f;
    $want_unit .= $n . '[REDACTED]';
}
my $tail = noise(37);
$unit .= $tail;
$want_unit .= $tail;

# the echo upstream repeats the unit to the size asked: whole units only
my %size = (stream => 60 * length $unit, held => 20 * length $unit);
my %times = (stream => 60, held => 20);

my $routes = join '', map { <<"EOF" } qw(stream held);
  - name: $_
    clients: [local]
    match: { method: GET, path: /$_ }
    upstream: echo
    to: /$_
    inject: { Authorization: "Bearer {tok}" }
EOF

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
$routes
alerts:
  deny: { threshold: 3, window: 60s }
EOF

# the pattern goes in a header value: nginx reads \\ there as \
(my $header = $unit) =~ s/\\/\\\\/g;

$t->write_file_expand('nginx.conf', $p->conf(locations => <<"EOF"));
        location = /stream {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_set_header X-Echo-Size $size{stream};
            proxy_set_header X-Echo-Pattern "$header";
            proxy_buffer_size 1k;
            proxy_buffers 4 1k;
        }

        location = /held {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_set_header X-Echo-Size $size{held};
            proxy_set_header X-Echo-Pattern "$header";
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 2 * 4 + 1;

for my $name (qw(stream held)) {
    my $want = $want_unit x $times{$name};
    my $raw = $t->http("GET /$name HTTP/1.1\r\nHost: localhost\r\n"
                       . "Connection: close\r\n\r\n") // '';
    my $r = parse_response($raw);

    is($r->{status}, 200, "$name: 200");

    if ($name eq 'held') {
        is($r->{headers}{'content-length'}, length $want,
           "$name: held, sent with its scrubbed length");
    } else {
        like($r->{headers}{'transfer-encoding'} // '', qr/chunked/i,
             "$name: streamed, chunked");
    }

    my $got = $r->{body} // '';
    my $diff = -1;
    if ($got ne $want) {
        for my $i (0 .. length $want) {
            if (substr($got, $i, 1) ne substr($want, $i, 1)) {
                $diff = $i;
                last;
            }
        }
    }
    is($diff, -1, "$name: each planted credential redacted, all else kept")
        or diag('got: ' . substr($got, $diff, 60) . "\nwant: "
                . substr($want, $diff, 60));
    is(index($raw, 's3cr3t-walk'), -1, "$name: no credential left");
}

is($t->error_log_check, '', 'no alerts or sanitizer reports');
