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
use Airlock::ScrubForms qw(echo_units);

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

# [route, name, form]; header => 1: also echoed in a response header
# (a form without a line break)
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
      's3cr3t=2ft0k=2bn=3fx=3e~9-0123456789abcdefghij', header => 1 ],
    [ bearer => 'base64, its padding as =3D', qp($b64), header => 1 ],
);

ok($b64 =~ /=$/, 'the secret\'s base64 has padding');

# each form held whole, streamed in pieces and longer than the hold
echo_units($t, $p, tok => $tok, cred => $cred, forms => \@forms);

done_testing();
