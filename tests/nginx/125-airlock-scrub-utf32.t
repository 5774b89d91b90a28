#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that answers in UTF-32 (a Spring
# controller with Jackson writes JSON in UTF-32BE or UTF-32LE when the
# client's Accept, a header the proxy keeps, asks for
# "application/json;charset=UTF-32BE"; Python's json.loads() takes bytes
# for UTF-32 by their NULs alone) does not leak the injected credential:
# the secret, "Bearer x" and the Basic password, each little- and
# big-endian, come back as "[REDACTED]" (big-endian: after the two NULs
# before the first character's byte) in a body held whole, a body
# streamed in 2- and 5-byte pieces (cut at every offset), and a body
# longer than airlock_scrub_hold (512 here: the bodies are given in the
# configuration) through 1 KB buffers.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Encode qw(encode);
use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::ScrubForms qw(echo_policy);

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 's3cr3t/t0k+n?x>~9-0123456789abcdefghij';
my $cred = 'alice:pa55/w0rd~Q:z';
(my $pass = $cred) =~ s/^[^:]*://;

my @forms = (
    [ bearer => 'utf-32le', encode('UTF-32LE', $tok), '' ],
    [ bearer => 'utf-32be', encode('UTF-32BE', $tok), "\0\0" ],
    [ bearer => 'utf-32le, "Bearer x"', encode('UTF-32LE', "Bearer $tok"),
      '' ],
    [ bearer => 'utf-32be, "Bearer x"', encode('UTF-32BE', "Bearer $tok"),
      "\0\0" ],
    [ basic => 'basic: the password, utf-32le', encode('UTF-32LE', $pass),
      '' ],
    [ basic => 'basic: user:password, utf-32be', encode('UTF-32BE', $cred),
      "\0\0" ],
);

echo_policy($t, $p, $tok, $cred, 'query: { allow: [f, n, chunked, piece] }');

# ?f=I&n=N: the upstream answers "<<form I>>;" N times, given as
# X-Echo-Body-B64 (a header cannot carry NULs)

my (%held, %long, $map);

$map = '';

for my $i (0 .. $#forms) {
    my $unit = "<<$forms[$i][2]>>;";

    $held{$i} = int(500 / length $unit);
    $long{$i} = int(2500 / length $unit) + 1;

    for my $n (4, $held{$i}, $long{$i}) {
        $map .= "        \"$i:$n\" \"" . encode_base64($unit x $n, '')
              . "\";\n";
    }
}

$t->write_file_expand('nginx.conf', $p->conf(http => <<"EOF",
    map "\$arg_f:\$arg_n" \$echo_body {
        default "";
$map    }
EOF
                                             location => <<'EOF'));
            proxy_set_header X-Echo-Body-B64 $echo_body;
            proxy_set_header X-Echo-Chunked $arg_chunked;
            proxy_set_header X-Echo-Chunk-Size $arg_piece;

            airlock_scrub_hold 512;

            # small proxy buffers: a long body crosses many of them
            proxy_buffer_size 1k;
            proxy_buffers 8 1k;
            proxy_busy_buffers_size 2k;
EOF

$t->start_echo(8081);
$t->run;

my $get = sub {
    my ($route, %q) = @_;
    my $q = join '&', map { "$_=$q{$_}" } sort keys %q;
    my $raw = $t->http_get("/$route?$q", timeout => 20);
    return ($raw, parse_response($raw));
};

for my $i (0 .. $#forms) {
    my ($route, $name, $form, $nuls) = @{$forms[$i]};
    my $want = "<<$nuls\[REDACTED]>>;";
    my ($raw, $r);

    ($raw, $r) = $get->($route, f => $i, n => $held{$i});
    is($r->{status}, 200, "$name: held: 200");
    ok($r->{body} eq $want x $held{$i}
       && $r->{headers}{'content-length'} == length $r->{body},
       "$name: held: every occurrence redacted, exact Content-Length")
        or diag(substr($r->{body}, 0, 200));
    ok(index($raw, $form) < 0, "$name: held: not in the response");

    for my $piece (2, 5) {
        ($raw, $r) = $get->($route, f => $i, n => 4, chunked => 1,
                            piece => $piece);
        ok($r->{body} eq $want x 4, "$name: streamed in $piece-byte pieces")
            or diag($r->{body});
        ok(index($raw, $form) < 0,
           "$name: $piece-byte pieces: not in the response");
    }

    ($raw, $r) = $get->($route, f => $i, n => $long{$i});
    ok(!defined $r->{headers}{'content-length'}
       && $r->{body} eq $want x $long{$i},
       "$name: long body streamed, every occurrence redacted");
    ok(index($raw, $form) < 0, "$name: long body: not in the response");
}

my $log = $t->read_file('error.log');
like($log, qr/scrubbed an injected credential from the response on (?#
              )route "basic"/, 'error log: the scrub on "basic" is reported');
ok(index($log, $pass) < 0 && index($log, $tok) < 0, 'error log: no secret');

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
