#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that echoes the injected credential
# in a form a client decodes trivially does not leak it.  URL-encoded
# (upper, lower and mixed-case hex, every byte or only the reserved ones,
# "+" for the space of "Bearer x"), JSON-escaped ("\/", "\uXXXX" in either
# case), base64 without padding, base64url with and without, and for
# Basic auth "user:password" and the password alone.  Each form is echoed
# in a response header, in a body held whole (Content-Length), in a body
# streamed in pieces of 2 and 5 bytes (every form crosses buffer
# boundaries at many offsets), and in a long body through 1 KB proxy
# buffers; the client gets exactly "[REDACTED]" where the form was.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::ScrubForms qw(url_all url_reserved json_all b64 unpadded b64url
                          echo_forms);

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

# reserved characters, so that encoders have something to encode
my $tok = 's3cr3t/t0k+n?x>~9';
my $user = 'alice';
my $pass = 'pa55/w0rd~Q:z';
my $cred = "$user:$pass";

# ---- the forms --------------------------------------------------------------

srand(60);

my @forms = (
    [ bearer => 'url, reserved bytes, upper case', url_reserved($tok) ],
    [ bearer => 'url, reserved bytes, lower case', url_reserved($tok, 1) ],
    [ bearer => 'url, every byte, mixed case 1', url_all($tok) ],
    [ bearer => 'url, every byte, mixed case 2', url_all($tok) ],
    [ bearer => 'url, every byte, mixed case 3', url_all($tok) ],
    [ bearer => 'url, "Bearer x" with %20', 'Bearer%20' . url_reserved($tok) ],
    [ bearer => 'form-encoded, "Bearer+x"', 'Bearer+' . url_reserved($tok) ],
    [ bearer => 'json, \/', do { (my $s = $tok) =~ s{/}{\\/}g; $s } ],
    [ bearer => 'json, every char \uXXXX, mixed case', json_all($tok) ],
    [ bearer => 'json, some chars \uXXXX',
      's3cr3t\/t0k\u002bn\u003Fx\u003e~9' ],
    [ bearer => 'base64, no padding', unpadded(b64($tok)) ],
    [ bearer => 'base64url, padded', b64url($tok) ],
    [ bearer => 'base64url, no padding', unpadded(b64url($tok)) ],
    [ bearer => 'base64, URL-encoded', url_reserved(b64($tok)) ],
    [ bearer => 'base64 of "Bearer x"', b64("Bearer $tok") ],
    [ bearer => 'base64url of "Bearer x"', b64url("Bearer $tok") ],
    [ basic => 'basic: the password alone', $pass ],
    [ basic => 'basic: the password URL-encoded', url_all($pass) ],
    [ basic => 'basic: user:password JSON-escaped', json_all($cred) ],
    [ basic => 'basic: user:password', $cred ],
    [ basic => 'basic: base64url of user:password, no padding',
      unpadded(b64url($cred)) ],
    [ basic => 'basic: base64 of "Basic t"', b64('Basic ' . b64($cred)) ],
);

ok(b64($tok) =~ /=/ && b64url($tok) ne b64($tok),
   'the secret has padding and a base64url form of its own');

echo_forms($t, $p, tok => $tok, cred => $cred, forms => \@forms);

done_testing();
