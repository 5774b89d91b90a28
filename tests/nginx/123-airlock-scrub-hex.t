#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that shows the bytes it got in hex
# (a debug page, a request inspector, an S3-style signature error whose
# CanonicalRequestBytes list the signed headers' bytes as "41 57 53 ...")
# does not leak the injected credential: the secret and, for Basic auth,
# the password, each as hex digits side by side, a space or a ":" between
# bytes, lower or upper case, come back as "[REDACTED]" in a header, a
# held body, a body streamed in 2- and 5-byte pieces (cut at every
# offset), and a long body through 1 KB buffers.  (The hex of "Bearer x"
# holds the secret's: that part of it is redacted, unit/scrub.c.)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::ScrubForms qw(echo_forms);

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 's3cr3t/t0k+n?x>~9';
my $cred = 'alice:pa55/w0rd~Q:z';
(my $pass = $cred) =~ s/^[^:]*://;

sub hex_of {
    my ($s, $sep, $upper) = @_;
    my $h = join $sep, map { sprintf($upper ? '%02X' : '%02x', ord) }
                       split //, $s;
    return $h;
}

my @forms = (
    [ bearer => 'hex, side by side', hex_of($tok, '') ],
    [ bearer => 'hex, upper case', hex_of($tok, '', 1) ],
    [ bearer => 'hex, spaced', hex_of($tok, ' ') ],
    [ bearer => 'hex, colons, upper case', hex_of($tok, ':', 1) ],
    [ bearer => 'hex, colons, lower case', hex_of($tok, ':') ],
    [ basic => 'basic: the password in hex', hex_of($pass, '') ],
    [ basic => 'basic: the password in hex, spaced, upper case',
      hex_of($pass, ' ', 1) ],
);

echo_forms($t, $p, tok => $tok, cred => $cred, forms => \@forms);

done_testing();
