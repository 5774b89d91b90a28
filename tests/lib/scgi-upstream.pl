#!/usr/bin/perl

# Fixture SCGI backend for the nginx tests.  Answers every request with
# 200 "ok" and appends what it received as one JSON line to the --log
# file: headers ([[name, value], ...], the SCGI header netstring as sent)
# and body.  A test reads the log to tell what, and whether anything,
# reached the backend.
#
#   scgi-upstream.pl PORT --log FILE
#
# Listens on 127.0.0.1:PORT, one connection at a time.

use strict;
use warnings;

use IO::Socket::INET;
use JSON::PP;

my $JSON = JSON::PP->new->canonical->utf8;
my $MAX = 1 << 20;

my ($port, $log);

while (@ARGV) {
    my $arg = shift @ARGV;

    if ($arg eq '--log') {
        $log = shift @ARGV;
    } elsif ($arg =~ /^\d+$/) {
        $port = $arg;
    } else {
        die "usage: $0 PORT --log FILE\n";
    }
}

die "usage: $0 PORT --log FILE\n" unless defined $port && defined $log;

my $listen = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
                                   LocalPort => $port, Listen => 64,
                                   ReuseAddr => 1, Proto => 'tcp')
    or die "listen 127.0.0.1:$port: $!\n";

$SIG{PIPE} = 'IGNORE';

while (my $c = $listen->accept) {
    serve($c);
    close $c;
}


sub serve {
    my ($c) = @_;
    my $in = '';

    # "LEN:" then LEN bytes of NUL-separated names and values, then ","
    while ($in !~ /^(\d+):/ || length($in) < length($1) + 2 + $1) {
        return if length($in) > $MAX;
        my $n = sysread($c, $in, 65536, length $in);
        return unless $n;
    }

    my ($len) = $in =~ /^(\d+):/;
    my $start = length($len) + 1;
    my $netstring = substr($in, $start, $len);
    my $rest = substr($in, $start + $len + 1);

    my @f = split /\0/, $netstring, -1;
    pop @f if @f % 2;
    my @headers;
    push @headers, [ splice @f, 0, 2 ] while @f;

    my ($cl) = map { $_->[1] } grep { $_->[0] eq 'CONTENT_LENGTH' } @headers;
    $cl = 0 unless defined $cl && $cl =~ /^\d+$/ && $cl <= $MAX;

    while (length($rest) < $cl) {
        my $n = sysread($c, $rest, $cl - length($rest), length $rest);
        last unless $n;
    }

    open(my $fh, '>>', $log) or die "open $log: $!\n";
    print $fh $JSON->encode({ headers => \@headers,
                              body => substr($rest, 0, $cl) }), "\n";
    close $fh;

    print $c "Status: 200 OK\r\nContent-Type: text/plain\r\n"
             . "Content-Length: 3\r\n\r\nok\n";
}
