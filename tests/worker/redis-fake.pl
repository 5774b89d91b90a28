#!/usr/bin/perl

# A test fixture, not Redis: a TCP server that speaks just enough of
# Redis's protocol to fail a client in one way, for the worker tests
# (81-reconnect-backoff.t).  Each connection it accepts appends one
# byte to COUNT, so the file's size is the number of connections.
#
#   redis-fake.pl PORT MODE COUNT
#
# MODE:
#   close     closes each connection at once, reading nothing
#   auth      answers every command with a WRONGPASS error (a refused
#             AUTH), and closes only when the client does
#   loading   answers every command with a LOADING error
#   group     answers AUTH with +OK and XGROUP with a BUSYGROUP error
#             (the group is there), then closes the connection at the
#             next command, unanswered
#
# Listens on 127.0.0.1:PORT.

use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;

my ($port, $mode, $count) = @ARGV;
die "usage: redis-fake.pl PORT close|auth|loading|group COUNT\n"
    unless defined $count && $mode =~ /^(close|auth|loading|group)$/;

my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
                              Listen => 64, ReuseAddr => 1)
    or die "listen $port: $!";
my $sel = IO::Select->new($l);
my %buf;

$SIG{PIPE} = 'IGNORE';

# the first whole command in $$b, taken off it: a list of its words, or
# undef when more is to come; dies on what is not a command
sub command {
    my ($b) = @_;
    my ($n, $off, @words);

    return undef unless $$b =~ /\A\*(\d+)\r\n/;
    ($n, $off) = ($1, length $&);

    for (1 .. $n) {
        pos($$b) = $off;
        return undef unless $$b =~ /\G\$(\d+)\r\n/gc;
        my $len = $1;
        $off = pos($$b);
        return undef if length($$b) < $off + $len + 2;
        push @words, substr($$b, $off, $len);
        $off += $len + 2;
    }

    substr($$b, 0, $off) = '';
    return \@words;
}

sub answer {
    my ($c, $words) = @_;
    my $name = uc($words->[0] // '');

    if ($mode eq 'auth') {
        return "-WRONGPASS invalid username-password pair or user is "
               . "disabled.\r\n";
    }

    if ($mode eq 'loading') {
        return "-LOADING Redis is loading the dataset in memory\r\n";
    }

    # group
    return "+OK\r\n" if $name eq 'AUTH';
    return "-BUSYGROUP Consumer Group name already exists\r\n"
        if $name eq 'XGROUP';
    return undef;
}

for (;;) {
    for my $s ($sel->can_read) {
        if ($s == $l) {
            my $c = $l->accept or next;

            open my $fh, '>>', $count or die "$count: $!";
            syswrite $fh, 'c';
            close $fh;

            if ($mode eq 'close') {
                close $c;
                next;
            }

            $buf{$c} = '';
            $sel->add($c);
            next;
        }

        my $n = sysread($s, $buf{$s}, 65536, length $buf{$s});
        my $drop = !$n;

        while (!$drop) {
            my $words = eval { command(\$buf{$s}) };
            last if !$@ && !defined $words;

            my $a = $@ ? undef : answer($s, $words);
            if (!defined $a) {
                $drop = 1;
                last;
            }
            syswrite $s, $a;
        }

        if ($drop) {
            $sel->remove($s);
            delete $buf{$s};
            close $s;
        }
    }
}
