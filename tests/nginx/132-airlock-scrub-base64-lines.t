#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that answers base64 with its lines
# wrapped (a PEM block, 64 characters a line with LF; a MIME part, 76 with
# CRLF; the same inside a JSON string, "\n" and "\r\n") does not leak the
# injected credential whose base64 a line end cuts, wherever it cuts it:
# the credential's own base64 with one line end at every place in it, and
# a longer text with the credential 0 to 47 bytes in, wrapped.  Each comes
# back with the credential's base64 redacted (but for the characters it
# shares with the bytes around it) in a body held whole (at every offset
# of a 32-byte block), streamed in 7-byte pieces (cut at every offset;
# every fourth also in 2-byte pieces) and through 1 KB buffers.

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

my $tok = 'FAKE-lines/t0k+n?x>~9-0123456789abcdef';
my $cred = 'alice:FAKE-pa55/w0rd~Q:z';

my @forms;

# one line end at every place of the credential's own base64 (CRLF at
# every third, each as a JSON string has it at every sixth)

my $own = b64($tok);

for my $end ([ LF => "\n", 1 ], [ CRLF => "\r\n", 3 ],
             [ 'JSON LF' => '\n', 6 ], [ 'JSON CRLF' => '\r\n', 6 ])
{
    for my $at (1 .. length($own) - 1) {
        next if $at % $end->[2];
        push @forms, [ bearer => "$end->[0] after $at",
                       '<<' . substr($own, 0, $at) . $end->[1]
                       . substr($own, $at) . '>>;', $tok ];
    }
}

# a longer text, wrapped, the credential 0 to 47 bytes in (24 of them,
# each of the three places modulo 3 eight times)

for my $pre (map { 2 * $_ + $_ % 2 } 0 .. 23) {
    my $enc = b64(('a' x $pre) . $tok . "\n}");

    (my $pem = $enc) =~ s/(.{64})(?=.)/$1\n/g;
    (my $mime = $enc) =~ s/(.{76})(?=.)/$1\r\n/g;

    push @forms, [ bearer => "PEM, $pre bytes in", "<<$pem>>;", $tok ],
                 [ bearer => "MIME, $pre bytes in", "<<$mime>>;", $tok ];
}

my $basic = b64('xy' . $cred . ('z' x 40));
$basic =~ s/(.{20})(?=.)/$1\r\n/;
push @forms, [ basic => 'basic: user:password, CRLF', "<<$basic>>;",
               $cred ];

# each unit's length odd and no multiple of 7 (see echo_blobs())
for my $f (@forms) {
    $f->[2] =~ s/^<</<< / while length($f->[2]) % 2 == 0
                                || length($f->[2]) % 7 == 0;
}

echo_blobs($t, $p, tok => $tok, cred => $cred, forms => \@forms,
           two_every => 4);

done_testing();
