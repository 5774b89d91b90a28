#!/usr/bin/perl
# A gRPC upstream (HTTP/2 over plain TCP, prior knowledge) for the
# trailer tests: to every connection it answers stream 1 with a 200, a
# body of "hello" and the trailers given on the command line, whatever
# the request, then waits for the peer to close.
# Usage: grpc-upstream.pl PORT NAME=VALUE ...
use strict;
use warnings;
use IO::Socket::INET;

my ($port, @trailers) = @ARGV;

# HPACK: a literal header field without indexing, a new name, no Huffman
sub field {
    my ($name, $value) = @_;
    return pack('C', 0) . pack('C', length $name) . lc($name)
         . pack('C', length $value) . $value;
}

sub frame {
    my ($type, $flags, $stream, $payload) = @_;
    my $len = length $payload;
    return pack('CnCCN', $len >> 16, $len & 0xffff, $type, $flags, $stream)
         . $payload;
}

my $headers = pack('C', 0x88)                   # :status 200
            . field('content-type', 'application/grpc');
my $trailers = join '', map { field(split /=/, $_, 2) } @trailers;

my $answer = frame(4, 0, 0, '')                 # SETTINGS
           . frame(4, 1, 0, '')                 # SETTINGS ACK
           . frame(1, 4, 1, $headers)           # HEADERS, END_HEADERS
           . frame(0, 0, 1, 'hello')            # DATA
           . frame(1, 5, 1, $trailers);         # HEADERS, END_STREAM

$SIG{CHLD} = 'IGNORE';
my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
                              Listen => 64, ReuseAddr => 1) or die "$!";
while (my $c = $l->accept) {
    if (fork) { close $c; next; }
    my $req = '';
    while (length $req < 24) {
        sysread($c, $req, 65536, length $req) or exit 0;
    }
    syswrite($c, $answer);
    1 while sysread($c, my $buf, 65536);
    exit 0;
}
