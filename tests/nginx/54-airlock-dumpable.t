#!/usr/bin/perl

# Worker processes hold the decrypted credentials and build every upstream
# request with them: they are not dumpable (no core file, no ptrace by
# their own user) unless "airlock_worker_dumpable on".  The kernel shows it
# in /proc: a process that is not dumpable has the files in /proc/PID owned by
# root, whatever user it runs as.  As root, the workers run as nobody here
# so that the two differ.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->echo_policy;

sub write_conf {
    my ($http) = @_;
    my $conf = $t->expand($p->conf(key => 0, http => $http));
    $conf =~ s/^user root;$/user nobody nogroup;/m;
    $t->write_file('nginx.conf', $conf);
}

# [uid the worker runs as, owner of its /proc entry] of the one worker
# serving requests (not one a reload left shutting down), once it has
# served a request (so it has run its init_process)
sub worker_ids {
    http_get('/ok');
    my ($w) = grep { $_->[1] !~ /shutting down/ } $t->_workers
        or return (undef, undef);
    my $status = $t->read_file("/proc/$w->[0]/status") // '';
    my ($uid) = $status =~ /^Uid:\s+(\d+)/m;
    my @st = stat("/proc/$w->[0]/environ");
    return ($uid, $st[4]);
}

write_conf('');
$t->start_echo(8081);
$t->run;

plan tests => 4;

my ($uid, $owner) = worker_ids();
isnt($uid, 0, 'the worker does not run as root');
is($owner, 0, 'by default the worker is not dumpable (/proc/PID/environ is root\'s)');

# a client in the middle of its request line keeps the old worker until
# it is done: the reload leaves it shutting down beside the new one

my $slow = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                 PeerPort => $t->port(8080),
                                 Proto => 'tcp', Timeout => 5)
    or die "connect: $!";
print $slow "GET /ok HTTP/1.1\r\n";
sleep 0.2;

write_conf('airlock_worker_dumpable on;');
$t->reload;

($uid, $owner) = worker_ids();
close $slow;
is($owner, $uid, 'airlock_worker_dumpable on: dumpable (/proc/PID/environ is its '
   . 'user\'s)');

is($t->error_log_check, '', 'no alerts');
