#!/usr/bin/perl

# Worker processes hold the decrypted credentials and build every upstream
# request with them: they are not dumpable (no core file, no ptrace by
# their own user) unless "airlock_worker_dumpable on".  The kernel shows it
# in /proc: a process that is not dumpable has the files in /proc/PID owned by
# root, whatever user it runs as.  As root, the workers run as nobody here
# so that the two differ.
#
# The master reads the configuration and opens the policy's secrets: it
# is never dumpable, whatever airlock_worker_dumpable says.  A master run
# as root owns /proc/PID either way, so a second nginx runs as nobody,
# master and all, for that check.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Find;
use IO::Socket::INET;
use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::Prereq qw(absent need_cmd);

absent('needs root to run nginx as another user') if $> != 0;
need_cmd('setpriv');

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
    my ($n) = @_;
    http_get('/ok');
    my ($w) = grep { $_->[1] !~ /shutting down/ } $n->_workers
        or return (undef, undef);
    my $status = $n->read_file("/proc/$w->[0]/status") // '';
    my ($uid) = $status =~ /^Uid:\s+(\d+)/m;
    my @st = stat("/proc/$w->[0]/environ");
    return ($uid, $st[4]);
}

write_conf('');
$t->start_echo(8081);
$t->run;

plan tests => 8;

my ($uid, $owner) = worker_ids($t);
isnt($uid, 0, 'the worker does not run as root');
is($owner, 0, 'by default the worker is not dumpable (/proc/PID/environ is root\'s)');

# a client in the middle of its request line keeps the old worker until
# it is done: the reload leaves it shutting down beside the new one

my $slow = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                 PeerPort => $t->port(8080),
                                 Proto => 'tcp', Timeout => 5)
    or die "connect: $!";
print $slow "GET /ok HTTP/1.1\r\n";
$slow->flush;
wait_peer_read($slow) or die "nginx did not read the request line\n";

write_conf('airlock_worker_dumpable on;');
$t->reload;

($uid, $owner) = worker_ids($t);
close $slow;
is($owner, $uid, 'airlock_worker_dumpable on: dumpable (/proc/PID/environ is its '
   . 'user\'s)');

is($t->error_log_check, '', 'no alerts');

$t->stop;

# the same location, and nginx started as nobody (setpriv, util-linux)

my $u = Airlock::Test->new;
my $q = Airlock::Proxy->new($u);
my $d = $u->testdir;
my @nobody = getpwnam('nobody') or die "no user nobody\n";

$q->echo_policy;
my $conf = $u->expand($q->conf(key => 0,
                               http => 'airlock_worker_dumpable on;'));
$conf =~ s/^user root;\n//m or die "no user line\n";
$u->write_file('nginx.conf', $conf);
$u->write_file('nginx-as-nobody', "#!/bin/sh\nexec setpriv --reuid=nobody "
               . "--regid=$nobody[3] --clear-groups " . $t->nginx_bin
               . ' "$@"' . "\n");
chmod 0755, "$d/nginx-as-nobody";
find(sub { chown $nobody[2], $nobody[3], $_ }, $d);
$u->nginx_bin("$d/nginx-as-nobody");
$u->start_echo(8081);
$u->run;

my $master = $u->nginx_pid;
my ($muid) = ($u->read_file("/proc/$master/status") // '') =~ /^Uid:\s+(\d+)/m;
is($muid, $nobody[2], 'the second nginx\'s master runs as nobody');
is((stat "/proc/$master/environ")[4], 0,
   'the master is not dumpable (/proc/PID/environ is root\'s)');

($uid, $owner) = worker_ids($u);
is($owner, $nobody[2], 'its worker is, with airlock_worker_dumpable on');
is($u->error_log_check, '', 'no alerts');
