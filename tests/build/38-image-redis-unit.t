#!/usr/bin/perl
# The image's Redis has no network (the overlay's drop-in
# /etc/systemd/system/redis-server.service.d/airlock-hardening.conf): a
# network namespace of its own (PrivateNetwork=), unix sockets only
# (RestrictAddressFamilies= reset, then AF_UNIX: the option adds to
# Debian's AF_INET AF_INET6 AF_UNIX otherwise), and neither D-Bus nor
# systemd-resolved's sockets nor /run/airlock (the proxy's, the agent's).  Debian's redis-server.service with the
# drop-in passes systemd-analyze verify (which reads the drop-in: a
# bogus key in it is reported).
#
# And Redis needs no more: started as the image starts it (its settings
# from configure-root.sh: port 0, its unix socket, AOF; Type=notify's
# socket), in a network namespace of its own and traced, it answers on
# its socket and makes no socket but AF_UNIX ones.  Whether the unit
# starts so confined in the booted image: make image-test
# (tests/image/guest-check.sh, "redis-net").

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $dropin = "$top/appliance-image/root/etc/systemd/system/"
    . 'redis-server.service.d/airlock-hardening.conf';
my $unit = '/lib/systemd/system/redis-server.service';

need_cmd(qw(systemd-analyze redis-server redis-cli strace unshare));
absent("$unit missing (Debian's redis-server)") unless -f $unit;
absent('a network namespace of its own needs root') if $> != 0;

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return '';
    local $/;
    return <$fh>;
}

# the directives of the files given, in order, each list as systemd
# merges it: an empty assignment resets it
sub merged {
    my %d;
    for my $f (@_) {
        (my $s = slurp($f)) =~ s/\\\n\s*/ /g;
        for (split /\n/, $s) {
            next if /^\s*(#|;|\[|$)/;
            my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
            if ($v eq '') {
                $d{$k} = [];
            } else {
                push @{$d{$k}}, $v;
            }
        }
    }
    return \%d;
}

ok(-f $dropin, 'the image has a drop-in for redis-server.service');
my $d = merged($unit, $dropin);
is($d->{PrivateNetwork} ? $d->{PrivateNetwork}[-1] : undef, 'yes',
   'Redis: a network namespace of its own');
is(join(' ', sort map { split ' ' } @{$d->{RestrictAddressFamilies} || []}),
   'AF_UNIX', 'Redis: unix sockets only');
my %gone = map { s/^-//r => 1 }
           map { split ' ' } @{$d->{InaccessiblePaths} || []};
ok($gone{'/run/dbus'} && $gone{'/run/systemd/resolve'},
   'Redis: neither D-Bus nor systemd-resolved\'s sockets');
ok($gone{'/run/airlock'}, 'Redis: nor the proxy\'s and the agent\'s');
# what Debian's unit has and the drop-in must not take away
is($d->{User}[-1], 'redis', 'Redis still runs as redis');
ok($d->{CapabilityBoundingSet} && !@{$d->{CapabilityBoundingSet}},
   'Redis still has no capability (an empty bounding set)');

my $t = tempdir(CLEANUP => 1);
mkdir "$t/units";
mkdir "$t/units/redis-server.service.d";
copy($unit, "$t/units/redis-server.service") or die "copy: $!";
copy($dropin, "$t/units/redis-server.service.d/airlock-hardening.conf");
{
    local $ENV{SYSTEMD_UNIT_PATH} = "$t/units:";
    my $out = `systemd-analyze verify $t/units/redis-server.service 2>&1`;
    my @bad = grep { /\S/ } split /\n/, $out;
    ok(!@bad, 'systemd-analyze verify redis-server.service with the '
       . 'drop-in') or diag($out);
    open my $fh, '>>', "$t/units/redis-server.service.d/"
        . 'airlock-hardening.conf' or die $!;
    print $fh "AirlockBogusKey=1\n";
    close $fh;
    $out = `systemd-analyze verify $t/units/redis-server.service 2>&1`;
    like($out, qr/AirlockBogusKey/, 'which reads the drop-in');
}

# Redis as the image runs it, in a network namespace of its own, traced
my $sock = "$t/redis.sock";
my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    open STDOUT, '>', "$t/redis.log";
    open STDERR, '>&', \*STDOUT;
    $ENV{NOTIFY_SOCKET} = "$t/notify";
    exec('unshare', '-n', 'strace', '-f', '-qq', '-e', 'trace=socket',
         '-o', "$t/strace", 'redis-server', '--port', '0',
         '--unixsocket', $sock, '--unixsocketperm', '770',
         '--appendonly', 'yes', '--appendfsync', 'always', '--save', '',
         '--dir', $t, '--supervised', 'systemd', '--daemonize', 'no')
        or die "unshare: $!";
}
for (1 .. 200) {
    last if -S $sock;
    select(undef, undef, undef, 0.05);
}
my $pong = `redis-cli -s $sock ping 2>&1`;
is($pong, "PONG\n", 'Redis answers on its unix socket')
    or diag(slurp("$t/redis.log"));
is(`redis-cli -s $sock set airlock:38 x 2>&1`, "OK\n",
   'and takes a write (AOF, fsync always)');
system("redis-cli -s $sock shutdown nosave >/dev/null 2>&1");
# gone within 10 s, else killed (a Redis that never answered)
my $gone = 0;
for (1 .. 200) {
    $gone = waitpid($pid, POSIX::WNOHANG()) == $pid and last;
    select(undef, undef, undef, 0.05);
}
if (!$gone) {
    kill 'KILL', $pid;
    waitpid $pid, 0;
}
my @sockets = grep { /socket\(/ } split /\n/, slurp("$t/strace");
ok(@sockets, 'its sockets were traced') or diag(slurp("$t/strace"));
my @ip = grep { !/socket\(AF_UNIX,/ } @sockets;
is("@ip", '', 'Redis makes no socket but AF_UNIX ones');

done_testing();
