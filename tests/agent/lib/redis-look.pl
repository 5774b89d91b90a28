#!/usr/bin/perl

# A proxy in front of Redis, on unix sockets, for tests that must put
# something between two of a client's commands without timing: it
# forwards every connection both ways and, for each command that names
# a session's lock key (airlock:session:ID:lock), holds Redis's reply,
# looks at the lock itself (PTTL: -2 none, -1 no lease, else its lease)
# and logs one line to LOG:
#
#   KEY COMMAND REPLY PTTL
#
# (REPLY is the reply's first line, CR LF left out).  On the first
# command that names a key listed in PLAN, and before that reply goes
# on, it runs the Redis command the plan gives the key, as another
# client would between the two.  PLAN is read at that moment, one line a
# key: "KEY WORD...", e.g. "airlock:session:s:lock DEL
# airlock:session:s:lock".  The side connection it runs them and its
# looks on is the tests' own Redis user (Airlock::Test::redis_args):
# the default user is off.
#
#   redis-look.pl LISTEN REDIS LOG PLAN

use strict;
use warnings;

use IO::Select;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);
use FindBin;
use lib "$FindBin::Bin/../../lib";
use Airlock::Test;

my ($listen, $redis, $log, $plan) = @ARGV;
die "usage: redis-look.pl LISTEN REDIS LOG PLAN\n" unless defined $plan;

my $LOCK = qr/^airlock:session:[A-Za-z0-9_-]+:lock$/;

# a client gone before its reply: the reply is dropped, not the proxy
$SIG{PIPE} = 'IGNORE';

unlink $listen;
my $l = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $listen,
                              Listen => 64)
    or die "listen $listen: $!";
chmod 0777, $listen;

my $side = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $redis)
    or die "redis $redis: $!";

side('AUTH', $Airlock::Test::REDIS_USER, $Airlock::Test::REDIS_PASS) eq '+OK'
    or die "redis AUTH refused\n";

my $sel = IO::Select->new($l);
my (%peer, %client, %in, %queue, %done);

for (;;) {
    for my $s ($sel->can_read) {
        if ($s == $l) {
            my $c = $l->accept or next;
            my $r = IO::Socket::UNIX->new(Type => SOCK_STREAM,
                                          Peer => $redis)
                or do { close $c; next };
            $peer{$c} = $r;
            $peer{$r} = $c;
            $client{$c} = 1;
            $in{$c} = $in{$r} = '';
            $queue{$c} = [];
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
                delete $in{$x};
                delete $queue{$x};
                close $x;
            }
            next;
        }

        $in{$s} .= $buf;

        if ($client{$s}) {
            # commands go on at once; what each names is kept for its
            # reply
            while (defined(my $end = resp_end($in{$s}, 0))) {
                my $cmd = substr($in{$s}, 0, $end, '');
                my @argv = resp_words($cmd);
                my ($key) = grep { $_ =~ $LOCK } @argv;
                push @{$queue{$s}}, [ $key, uc($argv[0] // '') ];
                put($o, $cmd);
            }
            next;
        }

        while (defined(my $end = resp_end($in{$s}, 0))) {
            my $reply = substr($in{$s}, 0, $end, '');
            my $q = shift @{$queue{$o}} // [ undef, '' ];
            my ($key, $name) = @$q;

            if (defined $key) {
                my ($first) = $reply =~ /^([^\r]*)/;
                my $ttl = side('PTTL', $key);
                $ttl =~ s/^://;

                open my $fh, '>>', $log or die "$log: $!";
                print {$fh} "$key $name $first $ttl\n";
                close $fh;

                if (!$done{$key}++) {
                    my @act = planned($key);
                    side(@act) if @act;
                }
            }

            put($o, $reply);
        }
    }
}


# the end of one complete RESP value at $p in $b, or undef
sub resp_end {
    my ($b, $p) = @_;
    my $nl = index($b, "\r\n", $p);
    return undef if $nl < 0;

    my $t = substr($b, $p, 1);
    my $v = substr($b, $p + 1, $nl - $p - 1);
    my $q = $nl + 2;

    if ($t eq '$') {
        return $q if $v < 0;
        return length($b) >= $q + $v + 2 ? $q + $v + 2 : undef;
    }

    if ($t eq '*') {
        for (1 .. ($v < 0 ? 0 : $v)) {
            $q = resp_end($b, $q);
            return undef unless defined $q;
        }
    }

    return $q;
}


# the words of a command (an array of bulk strings)
sub resp_words {
    my ($b) = @_;
    my @w;

    while ($b =~ /\G(?:\*\d+\r\n)?\$(\d+)\r\n/gc) {
        my $p = pos($b);
        push @w, substr($b, $p, $1);
        pos($b) = $p + $1 + 2;
    }

    return @w;
}


# a command on the side connection; its reply's first line
sub side {
    my (@w) = @_;
    my $cmd = '*' . @w . "\r\n";
    $cmd .= '$' . length($_) . "\r\n$_\r\n" for @w;
    put($side, $cmd);

    my $b = '';
    until (defined resp_end($b, 0)) {
        sysread($side, $b, 65536, length $b) or die "redis closed\n";
    }

    my ($first) = $b =~ /^([^\r]*)/;
    return $first;
}


sub planned {
    my ($key) = @_;
    open my $fh, '<', $plan or return ();
    while (my $line = <$fh>) {
        my ($k, @w) = split ' ', $line;
        return @w if defined $k && $k eq $key;
    }
    return ();
}


sub put {
    my ($s, $b) = @_;
    my $off = 0;
    while ($off < length $b) {
        my $w = syswrite($s, $b, length($b) - $off, $off);
        return unless defined $w;
        $off += $w;
    }
}
