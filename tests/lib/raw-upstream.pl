#!/usr/bin/perl
# A raw upstream for the scrub tests: it answers the bytes a request's
# X-Raw header holds (base64), with "%AUTH%" replaced by the request's
# Authorization (or x-api-key) value and "%TOK%" by its part after the
# scheme, then closes.  So a test writes the answer an upstream that
# echoes the credential would send: status line, headers, trailers, 103s.
# Usage: raw-upstream.pl PORT
use strict;
use warnings;
use IO::Socket::INET;
use MIME::Base64 qw(decode_base64);

$SIG{CHLD} = 'IGNORE';
my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $ARGV[0],
                              Listen => 64, ReuseAddr => 1) or die "$!";
while (my $c = $l->accept) {
    if (fork) { close $c; next; }
    my $req = '';
    while ($req !~ /\r\n\r\n/) {
        my $n = sysread($c, $req, 65536, length $req) or exit 0;
    }
    my ($auth) = $req =~ /^(?:Authorization|x-api-key): ([^\r\n]*)/mi;
    my ($raw) = $req =~ /^X-Raw: ([^\r\n]*)/mi;
    $raw = decode_base64($raw // '');
    $auth //= '';
    (my $tok = $auth) =~ s/^\S+ //;
    $raw =~ s/%AUTH%/$auth/g;
    $raw =~ s/%TOK%/$tok/g;
    syswrite($c, $raw);
    exit 0;
}
