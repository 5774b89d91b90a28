#!/usr/bin/perl

# ngx_http_airlock_module: the scrubber passes the bytes between matches on
# without copying them, pointing into nginx's upstream buffers, and gives
# each buffer back only once all of it has been sent.  Large bodies with a
# credential every few dozen bytes, through small proxy buffers and a
# rate-limited (slow) writer, buffered and unbuffered (never spooled to a
# temporary file: an Airlock location cannot have one), the client must get
# exactly the scrubbed bytes.  A buffer
# given back too early would be refilled under the writer and show up as
# corrupted bytes here.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 's3cr3t-token-XYZ-0123456789';
my $sealed = $p->seal($tok);

# 13 + 27 + 5 + 34 + 11 + 20 = odd-sized unit: matches land on every offset
# of every buffer boundary; "Bearer s3cr3t-t" is a prefix of the longer
# scrub string that does not complete
my $unit = 'abcdefghijklm' . $tok . 'nopqr' . "Bearer $tok"
         . 'Bearer s3cr' . 'Q' x 20;
my $size = 150001;

# "many": a route whose scrub list has more two-byte starts than the
# search compares at once (four secrets), so the candidates are found by
# their first bytes alone
my @names = qw(pattern small unbuffered many);

# bodies of up to 64 KB with a Content-Length are held whole, scrubbed and
# sent with their new length; these cross many small proxy buffers too
my $held = 60001;
my @held = qw(held held-unbuffered);

my @cut = qw(held-cut stream-cut);

# a small body usually comes in one buffer of exactly its length: left
# where it is and passed on when it holds no credential, copied when it
# does; buffered and not
my $whole = 900;
my @whole = qw(whole whole-unbuffered whole-match whole-match-unbuffered
               whole-accel);

# airlock_scrub_hold sets how long a body may be to be held: name, body
# size, the location's hold size, whether it is held
my @limit = ([ 'hold-1k-small', 900, '1k', 1 ],
             [ 'hold-1k-long', 2000, '1k', 0 ],
             [ 'hold-0', 900, '0', 0 ]);

my @routes = (@names, @held, @cut, @whole, map { $_->[0] } @limit);
my $routes = join '', map { <<"EOF" } @routes;
  - name: $_
    clients: [local]
    match: { method: GET, path: /$_ }
    upstream: echo
    to: /$_
    inject: { Authorization: "Bearer {tok}"@{[ $_ eq 'many'
        ? ', X-Two: "{two}", X-Three: "{three}", X-Four: "{four}"' : '' ]} }
EOF

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
  two: { sealed: "@{[ $p->seal('zz-second-secret-0002') ]}" }
  three: { sealed: "@{[ $p->seal('yy-third-secret-0003') ]}" }
  four: { sealed: "@{[ $p->seal('xx-fourth-secret-0004') ]}" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
$routes
alerts:
  deny: { threshold: 3, window: 60s }
EOF

my $base = <<"EOF";
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_set_header X-Echo-Size \$echo_size;
EOF
my $loc = $base . <<"EOF";
            proxy_set_header X-Echo-Pattern "$unit";
EOF

my $small = <<'EOF';
            proxy_buffer_size 1k;
            proxy_buffers 4 1k;
            proxy_busy_buffers_size 2k;
            limit_rate 100k;
EOF

$t->write_file_expand('nginx.conf', $p->conf(locations => <<"EOF"));
        location = /pattern {
$loc
            set \$echo_size $size;
        }

        location = /many {
$loc
            set \$echo_size $size;
        }

        location = /small {
$loc
            set \$echo_size $size;
$small
        }

        location = /unbuffered {
$loc
            set \$echo_size $size;
            proxy_buffering off;
            proxy_buffer_size 1k;
            limit_rate 100k;
        }

        location = /held {
$loc
$small
            set \$echo_size $held;
        }

        location = /held-cut {
$loc
            set \$echo_size $held;
            proxy_set_header X-Echo-Truncate 30000;
        }

        location = /stream-cut {
$loc
            set \$echo_size $size;
            proxy_set_header X-Echo-Truncate 100000;
        }

        location = /whole {
$base
            set \$echo_size $whole;
            proxy_set_header X-Echo-Pattern "clean-0123456789";
        }

        location = /whole-unbuffered {
$base
            set \$echo_size $whole;
            proxy_set_header X-Echo-Pattern "clean-0123456789";
            proxy_buffering off;
        }

        # the upstream asks for no buffering (X-Accel-Buffering), which
        # the Airlock location body ignores
        location = /whole-accel {
$base
            set \$echo_size $whole;
            proxy_set_header X-Echo-Pattern "clean-0123456789";
            proxy_set_header X-Echo-Header "X-Accel-Buffering: no";
        }

        location = /whole-match {
$loc
            set \$echo_size $whole;
        }

        location = /whole-match-unbuffered {
$loc
            set \$echo_size $whole;
            proxy_buffering off;
        }

        location = /hold-1k-small {
$loc
            set \$echo_size 900;
            airlock_scrub_hold 1k;
        }

        location = /hold-1k-long {
$loc
            set \$echo_size 2000;
            airlock_scrub_hold 1k;
        }

        location = /hold-0 {
$loc
            set \$echo_size 900;
            airlock_scrub_hold 0;
        }

        location = /held-unbuffered {
$loc
            proxy_buffering off;
            proxy_buffer_size 1k;
            set \$echo_size $held;
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 7 * (@names + @held) + 4 * @whole + 4 * @limit + 7;

sub scrubbed {
    my ($size) = @_;
    my $body = substr($unit x (int($size / length $unit) + 2), 0, $size);
    (my $want = $body) =~ s/(?:Bearer )?\Q$tok\E/[REDACTED]/g;
    my $matches = () = $body =~ /\Q$tok\E/g;
    return ($want, $matches);
}

for my $name (@names, @held) {
    my $is_held = grep { $_ eq $name } @held;
    my ($want, $matches) = scrubbed($is_held ? $held : $size);

    my $raw = http("GET /$name HTTP/1.1\r\nHost: localhost\r\n"
                   . "Connection: close\r\n\r\n");
    my $r = parse_response($raw);

    is($r->{status}, 200, "$name: 200");
    ok($r->{complete}, "$name: complete body");
    if ($is_held) {
        is($r->{headers}{'content-length'}, length $want,
           "$name: Content-Length of the scrubbed body");
    } else {
        like($r->{headers}{'transfer-encoding'} // '', qr/chunked/i,
             "$name: streamed, chunked");
    }
    is(index($raw, $tok), -1, "$name: no credential in the response");
    is(length $r->{body}, length $want,
       "$name: length is the scrubbed length");

    # the first differing offset says more than two 150 KB strings
    my $diff = -1;
    if ($r->{body} ne $want) {
        my $got = $r->{body};
        for my $i (0 .. length $want) {
            if (substr($got, $i, 1) ne substr($want, $i, 1)) {
                $diff = $i;
                last;
            }
        }
    }
    is($diff, -1, "$name: every byte as scrubbed ($matches matches)");

    my $n = () = $r->{body} =~ /\[REDACTED\]/g;
    is($n, $matches, "$name: one [REDACTED] per credential");
}

for my $name (@whole) {
    my $clean = $name !~ /match/;
    my ($want) = $clean
        ? (substr('clean-0123456789' x 100, 0, $whole))
        : scrubbed($whole);

    my $raw = http("GET /$name HTTP/1.1\r\nHost: localhost\r\n"
                   . "Connection: close\r\n\r\n");
    my $r = parse_response($raw);

    is($r->{status}, 200, "$name: 200");
    is($r->{headers}{'content-length'}, length $want,
       "$name: Content-Length of what is sent");
    is($r->{body}, $want, "$name: the body as it should be");
    is(index($raw, $tok), -1, "$name: no credential in the response");
}

for my $l (@limit) {
    my ($name, $size, $hold, $held) = @$l;
    my ($want) = scrubbed($size);

    my $raw = http("GET /$name HTTP/1.1\r\nHost: localhost\r\n"
                   . "Connection: close\r\n\r\n");
    my $r = parse_response($raw);

    is($r->{body}, $want, "$name: the body as it should be");
    is(index($raw, $tok), -1, "$name: no credential in the response");
    if ($held) {
        is($r->{headers}{'content-length'}, length $want,
           "$name: $size bytes held under airlock_scrub_hold $hold");
        ok(!exists $r->{headers}{'transfer-encoding'}, "$name: not chunked");
    } else {
        ok(!exists $r->{headers}{'content-length'},
           "$name: $size bytes not held under airlock_scrub_hold $hold");
        like($r->{headers}{'transfer-encoding'} // '', qr/chunked/i,
             "$name: streamed, chunked");
    }
}

# an upstream that closes before the length it announced: a held body is
# never sent (not even its header), a streamed one stops without its last
# chunk; either way the client cannot take it for complete

my $raw = http("GET /held-cut HTTP/1.1\r\nHost: localhost\r\n"
               . "Connection: close\r\n\r\n");
is($raw, '', 'held-cut: nothing sent, the connection closed');

$raw = http("GET /stream-cut HTTP/1.1\r\nHost: localhost\r\n"
            . "Connection: close\r\n\r\n");
my $r = parse_response($raw);
is($r->{status}, 200, 'stream-cut: 200 sent before the upstream failed');
ok(!$r->{complete}, 'stream-cut: no last chunk');
ok(length $r->{body} < 100000, 'stream-cut: only what came');
is(index($raw, $tok), -1, 'stream-cut: no credential');

like($t->read_file('error.log'), qr/upstream prematurely closed/,
     'the error log says why');

is($t->error_log_check, '', 'no alerts');
