#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that serves a text as a MIME part
# or a mail in quoted-printable (a raw message of a mail API, a multipart
# echo) does not leak the injected credential: an encoder cuts every line
# longer than 76 characters with a soft line break ("=" and CRLF or LF),
# so a long key is split at any place, and writes "=" as "=3D" (base64
# padding).  Each form comes back as "[REDACTED]" in a body held whole, a
# body streamed in 2- and 5-byte pieces (cut at every offset), and a body
# longer than airlock_scrub_hold (512 here: the bodies are given in the
# configuration) through 1 KB buffers; a form without a line break also
# in a header.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

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

# a soft line break after byte $at; every "=" as "=3D"
sub qp {
    my ($s, $at, $lf) = @_;
    (my $q = $s) =~ s/=/=3D/g;
    substr($q, $at, 0) = $lf ? "=\n" : "=\r\n" if defined $at;
    return $q;
}

my $b64 = encode_base64($tok, '');

my @forms = (
    [ bearer => 'a soft line break, CRLF', qp($tok, 5) ],
    [ bearer => 'a soft line break, LF', qp($tok, 1, 1) ],
    [ bearer => '"Bearer x" broken after the space', qp("Bearer $tok", 7) ],
    [ bearer => 'bytes as =XX and a break',
      "s3cr3t=2Ft0k=2B=\r\nn=3Fx=3E~9-0123456789abcdefghij" ],
    [ bearer => 'base64, its padding as =3D, broken', qp($b64, 20) ],
    [ basic => 'basic: the password, broken', qp($pass, 4) ],
    [ basic => 'basic: user:password, broken', qp($cred, 10, 1) ],
    [ bearer => 'bytes as =XX, lower case',
      's3cr3t=2ft0k=2bn=3fx=3e~9-0123456789abcdefghij', 1 ],
    [ bearer => 'base64, its padding as =3D', qp($b64), 1 ],
);

ok($b64 =~ /=$/, 'the secret\'s base64 has padding');

echo_policy($t, $p, $tok, $cred,
            'query: { allow: [f, n, chunked, piece, hdr] }');

# ?f=I&n=N: the upstream answers "<<form I>>;" N times, given as
# X-Echo-Body-B64 (a header cannot carry the line breaks); with hdr=I,
# also a header "X-Leak: <<form I>>;"

my (%held, %long, $map, $hdr);

$map = '';
$hdr = '';

for my $i (0 .. $#forms) {
    my $unit = "<<$forms[$i][2]>>;";

    $held{$i} = int(500 / length $unit);
    $long{$i} = int(2500 / length $unit) + 1;

    for my $n (4, $held{$i}, $long{$i}) {
        $map .= "        \"$i:$n\" \"" . encode_base64($unit x $n, '')
              . "\";\n";
    }

    $hdr .= "        $i \"X-Leak: $unit\";\n" if $forms[$i][3];
}

$t->write_file_expand('nginx.conf', $p->conf(http => <<"EOF",
    map "\$arg_f:\$arg_n" \$echo_body {
        default "";
$map    }

    map \$arg_hdr \$echo_leak {
        default "";
$hdr    }
EOF
                                             location => <<'EOF'));
            proxy_set_header X-Echo-Body-B64 $echo_body;
            proxy_set_header X-Echo-Header $echo_leak;
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
    my ($route, $name, $form, $header) = @{$forms[$i]};
    my $want = '<<[REDACTED]>>;';
    my ($raw, $r);

    if ($header) {
        ($raw, $r) = $get->($route, f => $i, n => 4, hdr => $i);
        is($r->{headers}{'x-leak'}, $want, "$name: header");
        ok(index($raw, $form) < 0, "$name: header: not in the response");
    }

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
