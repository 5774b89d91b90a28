#!/usr/bin/perl

# tests/lib/Airlock/Port.pm: the loopback ports the suite's servers are
# given are reserved against every other test running on the machine (a
# lock held while the test lives) and are never ports something already
# listens on.  Before, a port was the kernel's answer to a bind of port 0,
# closed at once, so two tests running together (prove -j2, or two
# suites) could be given the same port, and a gateway under test then
# spoke to the other test's fixture.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Handle;
use IO::Socket::INET;
use Test::More tests => 7;

my $lib = "$FindBin::Bin/../lib";

# two adjacent ports nothing listens on, as a range of two
my $base;
for (1 .. 200) {
    my $p = 33000 + 2 * int(rand(10000));
    my @s = map {
        IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $_,
                              Proto => 'tcp', ReuseAddr => 1)
    } $p, $p + 1;
    next if grep { !defined } @s;
    close $_ for @s;
    $base = $p;
    last;
}
die "no two free adjacent ports\n" unless defined $base;

# a process that takes one port of the range and holds it until killed
sub holder {
    my ($range) = @_;
    pipe(my $r, my $w) or die "pipe: $!";
    my $pid = fork // die "fork: $!";

    if ($pid == 0) {
        close $r;
        $ENV{AIRLOCK_TEST_PORTS} = $range;
        my $p = eval {
            require Airlock::Port;
            Airlock::Port::free_port();
        };
        $w->autoflush(1);
        print $w defined $p ? "$p\n" : "none: $@";
        close $w;
        sleep 1 while 1;                # hold until killed
    }

    close $w;
    my $got = <$r>;
    close $r;
    chomp $got if defined $got;
    return { pid => $pid, port => $got };
}

sub release {
    my ($h) = @_;
    kill 'KILL', $h->{pid};
    waitpid $h->{pid}, 0;
}

my $a = holder("$base:2");
my $b = holder("$base:2");

like($a->{port}, qr/\A\d+\z/, 'a port for the first test');
like($b->{port}, qr/\A\d+\z/, 'a port for the second');
isnt($a->{port}, $b->{port}, 'never the same port while both live');

my $c = holder("$base:2");
like($c->{port}, qr/\Anone: no free loopback port/,
     'a third, with both taken, is told there is none');
release($c);

release($a);
my $d = holder("$base:2");
is($d->{port}, $a->{port}, 'a port comes free when its test exits');
release($d);
release($b);

# a port something listens on is not given, lock or none
my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $base,
                              Proto => 'tcp', Listen => 1, ReuseAddr => 1)
    or die "listen on $base: $!";
my $e = holder("$base:1");
like($e->{port}, qr/\Anone: /, 'a port in use is not given');
release($e);
close $l;

my $f = holder("$base:1");
is($f->{port}, $base, '... and is given once it is free');
release($f);
