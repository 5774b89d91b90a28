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

# [route, name, form, kept => the bytes left before "[REDACTED]"]
my @forms = (
    [ bearer => 'utf-32le', encode('UTF-32LE', $tok), kept => '' ],
    [ bearer => 'utf-32be', encode('UTF-32BE', $tok), kept => "\0\0" ],
    [ bearer => 'utf-32le, "Bearer x"', encode('UTF-32LE', "Bearer $tok"),
      kept => '' ],
    [ bearer => 'utf-32be, "Bearer x"', encode('UTF-32BE', "Bearer $tok"),
      kept => "\0\0" ],
    [ basic => 'basic: the password, utf-32le', encode('UTF-32LE', $pass),
      kept => '' ],
    [ basic => 'basic: user:password, utf-32be', encode('UTF-32BE', $cred),
      kept => "\0\0" ],
);

# each form held whole, streamed in pieces and longer than the hold
echo_units($t, $p, tok => $tok, cred => $cred, forms => \@forms);

done_testing();
