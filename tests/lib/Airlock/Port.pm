package Airlock::Port;

# A free loopback TCP port for a server a test starts later (nginx, a
# fixture), reserved against every other test on this machine.
#
# Asking the kernel for port 0 and closing the socket leaves a window:
# until the server binds the port, another test (prove -j, or a second
# suite on the same machine) may be handed the same one, and then a
# gateway under test talks to the other test's fixture.  So a port is
# taken from below the kernel's ephemeral range (which it never hands
# out for port 0), a lock file for it is held (flock) for as long as
# this process lives, and it is checked free by binding it.  A test that
# exits lets its ports go with its locks.

use strict;
use warnings;

use Exporter qw(import);
use Fcntl qw(:flock O_CREAT O_RDWR);
use IO::Socket::INET;

our @EXPORT_OK = qw(free_port);

my $dir = ($ENV{TMPDIR} // '/tmp') . '/airlock-test-ports';
my (%held, @locks);

# ports 20000 to 32767: below Linux's default ephemeral range (the
# suite's own test of this module narrows it: AIRLOCK_TEST_PORTS=N:COUNT)
my ($FIRST, $COUNT) = (20000, 12768);

if (($ENV{AIRLOCK_TEST_PORTS} // '') =~ /\A(\d+):(\d+)\z/) {
    ($FIRST, $COUNT) = ($1, $2);
}


sub free_port {
    mkdir $dir, 01777 unless -d $dir;

    for (1 .. 1000) {
        my $p = $FIRST + int(rand($COUNT));
        next if $held{$p};

        sysopen(my $fh, "$dir/$p", O_CREAT | O_RDWR, 0666) or next;

        unless (flock($fh, LOCK_EX | LOCK_NB)) {
            close $fh;
            next;
        }

        my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
                                      LocalPort => $p, Proto => 'tcp',
                                      ReuseAddr => 1);
        unless ($s) {
            close $fh;
            next;
        }
        close $s;

        $held{$p} = 1;
        push @locks, $fh;
        return $p;
    }

    die "no free loopback port in $FIRST to " . ($FIRST + $COUNT - 1) . "\n";
}

1;
