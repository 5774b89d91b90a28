#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that answers a longer text encoded
# whole in base64 (a JWT's payload, a Kubernetes Secret's data, a JSON
# document or a mail part) does not leak the injected credential inside
# it: the credential starts 0 to 5 bytes past a multiple of 3 in the
# encoded text, with 0 to 2 bytes after it, in the standard and the
# URL-safe alphabet; the Basic credential too.  Each comes back with its
# base64 redacted but for the characters it shares with the bytes around
# it, in a body held whole (at every offset of a 32-byte block), streamed
# in 2- and 7-byte pieces (cut at every offset) and through 1 KB buffers.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::ScrubForms qw(echo_blobs b64);

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

# 38 and 25 bytes: neither a multiple of 3
my $tok = 'FAKE-inside/t0k+n?x>~9-0123456789abcde';
my $cred = 'alice:FAKE-pa55/w0rd~Q:z';

my @forms;

for my $pre (0 .. 5) {
    for my $post (0 .. 2) {
        my $doc = substr('{"kind":"Secret","data":', 0, 18 + $pre)
                . $tok . substr('"}}', 0, $post);
        my $std = b64($doc);
        (my $url = $std) =~ tr{+/}{-_};
        $url =~ s/=+$//;

        for my $f ([ base64 => $std ], [ base64url => $url ]) {
            push @forms, [ bearer => "$f->[0], at $pre past 18, $post after",
                           "<<$f->[1]>>;", $tok ];
        }
    }
}

for my $pre (1, 2) {
    my $doc = ('x' x $pre) . $cred . "\n";
    my $unit = '<<' . b64($doc) . '>>;';
    push @forms, [ basic => "basic: user:password at $pre", $unit, $cred ];
}

# each unit's length odd and no multiple of 7 (see echo_blobs())
for my $f (@forms) {
    $f->[2] =~ s/^<</<< / while length($f->[2]) % 2 == 0
                                || length($f->[2]) % 7 == 0;
}

echo_blobs($t, $p, tok => $tok, cred => $cred, forms => \@forms);

done_testing();
