#!/usr/bin/perl

# A TCP proxy in front of Redis for the worker tests: it forwards every
# connection both ways until a client sends bytes that match PATTERN (a
# Perl regular expression); from there on it forwards nothing more that
# client sends (the command, and the rest, never reach Redis) and
# appends "held" to MARK.  A worker pointed at it stops at that command,
# for a test to kill it there (Airlock::Worker::hold_proxy()).
#
#   redis-hold.pl PORT REDIS_PORT PATTERN MARK
#
# Listens on 127.0.0.1:PORT.  Commands are matched as they come, a read
# at a time, with the last 64 bytes of the read before (a command cut
# between two reads).

use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;

my ($port, $redis, $pattern, $mark) = @ARGV;
die "usage: redis-hold.pl PORT REDIS_PORT PATTERN MARK\n"
    unless defined $mark;
my $re = qr/$pattern/;

my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
                              Listen => 64, ReuseAddr => 1)
    or die "listen $port: $!";
my $sel = IO::Select->new($l);
my (%peer, %client, %tail, %held);

for (;;) {
    for my $s ($sel->can_read) {
        if ($s == $l) {
            my $c = $l->accept or next;
            my $r = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                          PeerPort => $redis)
                or do { close $c; next };
            $peer{$c} = $r;
            $peer{$r} = $c;
            $client{$c} = 1;
            $tail{$c} = '';
            $sel->add($c, $r);
            next;
        }

        my $buf;
        my $n = sysread($s, $buf, 65536);
        my $o = $peer{$s};

        if (!$n) {
            for my $x ($s, $o) {
                $sel->remove($x);
                delete $peer{$x};
                delete $client{$x};
                delete $tail{$x};
                delete $held{$x};
                close $x;
            }
            next;
        }

        if ($client{$s}) {
            next if $held{$s};
            if (($tail{$s} . $buf) =~ $re) {
                $held{$s} = 1;
                open my $fh, '>>', $mark or die "$mark: $!";
                print {$fh} "held\n";
                close $fh;
                next;
            }
            $tail{$s} = substr($tail{$s} . $buf, -64);
        }

        my $off = 0;
        while ($off < length $buf) {
            my $w = syswrite($o, $buf, length($buf) - $off, $off);
            last unless defined $w;
            $off += $w;
        }
    }
}
