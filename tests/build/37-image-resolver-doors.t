#!/usr/bin/perl
# systemd-resolved sends whatever name it is asked for to the network's
# DNS servers: each question is a way out for the local user who asks.
# Its stub on loopback is the egress rule's (tests/build/36-image-egress.t);
# its two other doors are the image's overlay's:
#
# - D-Bus: /etc/dbus-1/system.d/airlock-resolve1.conf denies the
#   resolving methods (ResolveHostname, ResolveAddress, ResolveRecord,
#   ResolveService) to every user but root.  Tried on a dbus-daemon of
#   the test's own, its policy as the system bus's (the default context
#   of Debian's system.conf, then resolved's own policy file as
#   systemd 252 ships it, then the overlay's, in the order system.conf
#   includes them), with a stand-in for resolved that answers each
#   question: nobody is refused, root answered, and both may still
#   call a method that asks nothing of the network.
# - varlink: the drop-in systemd-resolved.service.d/airlock.conf makes
#   /run/systemd/resolve/io.systemd.Resolve (0666 as resolved makes
#   it) root's alone, with full privileges, after the start (through
#   /usr/lib/airlock/set-mode, which follows no link:
#   tests/build/59-image-resolver-links.t), and a failure fails the
#   unit.  The window between resolved's bind and
#   that chmod is closed too: the drop-in's commands are run in their
#   order on a directory of the test's own, around a stand-in for
#   resolved's bind (a socket made 0666), and nobody may connect to it
#   at no point, while resolv.conf beside it is nobody's to read once
#   the unit has started.  Checked in the booted image by make
#   image-test (tests/image/guest-check.sh, "resolver-doors").

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use IO::Socket::UNIX;
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $ov = "$top/appliance-image/root";
my $policy = "$ov/etc/dbus-1/system.d/airlock-resolve1.conf";
my $dropin = "$ov/etc/systemd/system/systemd-resolved.service.d/airlock.conf";

absent('a bus whose clients are other users needs root') if $> != 0;
need_cmd(qw(dbus-daemon dbus-send setpriv python3));
# Debian's own, whose modules python3-dbus and python3-gi are
my $py = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
absent('python3-dbus and python3-gi are missing (auto/deps test)')
    if system("$py -c " . ' "import dbus, dbus.service, '
              . 'dbus.mainloop.glib; from gi.repository import GLib" '
              . '2>/dev/null') != 0;

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return '';
    local $/;
    return <$fh>;
}

# --- varlink: the drop-in

{
    (my $s = slurp($dropin)) =~ s/\\\n\s*/ /g;
    my @post = grep { !/^\s*#/ } $s =~ /^\s*ExecStartPost=(.*)$/mg;
    ok((grep { m{^\+/usr/lib/airlock/set-mode\s+0?[0-7]00\s+/run/systemd/resolve/io\.systemd\.Resolve$} }
        @post),
       'systemd-resolved: its varlink socket is made root\'s alone, with '
       . 'full privileges, after it starts')
        or diag("ExecStartPost: @post");
    like($s, qr/^\[Service\]$/m, 'in the drop-in\'s [Service] section');

    my @pre = grep { !/^\s*#/ } $s =~ /^\s*ExecStartPre=(.*)$/mg;
    my $t = tempdir(CLEANUP => 1);
    chmod 0755, $t;
    my $dir = "$t/resolve";
    my $sock = "$dir/io.systemd.Resolve";
    # RuntimeDirectory=systemd/resolve (0755), resolv.conf kept in it
    # from an earlier start (RuntimeDirectoryPreserve=yes)
    mkdir $dir, 0755 or die $!;
    chmod 0755, $dir;
    open my $rc, '>', "$dir/resolv.conf" or die $!;
    print $rc "nameserver 127.0.0.53\n";
    close $rc;
    chmod 0644, "$dir/resolv.conf";

    my $run = sub {
        my ($what, @cmds) = @_;
        for my $c (@cmds) {
            (my $l = $c) =~ s{/run/systemd/resolve\b}{$dir}g;
            $l =~ s{/usr/lib/airlock/}{$ov/usr/lib/airlock/}g;
            unlike($l, qr/^[+!:@]*-/, "$what $c: a failure fails the unit");
            $l =~ s/^[-+!:@]+//;
            is(system(split ' ', $l), 0, "$what $c runs");
        }
    };
    $run->('ExecStartPre', @pre);
    # resolved's bind: its socket, 0666 whatever the unit's umask
    my $srv = IO::Socket::UNIX->new(Local => $sock, Listen => 8)
        or die "listen $sock: $!";
    chmod 0666, $sock;
    is(connect_as('nobody', $sock), 'no',
       'between resolved\'s bind and ExecStartPost=, nobody cannot '
       . 'connect to its varlink socket');
    $run->('ExecStartPost', @post);
    is(connect_as('nobody', $sock), 'no',
       'once started, nobody cannot connect to its varlink socket');
    is(connect_as('root', $sock), 'yes', 'root can');
    is(read_as('nobody', "$dir/resolv.conf"), 'yes',
       'once started, nobody reads resolv.conf beside it');
    close $srv;
}


# --- D-Bus: a bus of the test's own

my $t = tempdir(CLEANUP => 1);
chmod 0755, $t;
my $addr = "unix:path=$t/bus";

open my $fh, '>', "$t/resolve1.conf" or die $!;
# systemd 252's src/resolve/org.freedesktop.resolve1.conf, its owner
# root here (the stand-in runs as root)
print $fh <<'EOT';
<busconfig>
  <policy user="root">
    <allow own="org.freedesktop.resolve1"/>
    <allow send_destination="org.freedesktop.resolve1"/>
    <allow receive_sender="org.freedesktop.resolve1"/>
  </policy>
  <policy context="default">
    <allow send_destination="org.freedesktop.resolve1"/>
    <allow receive_sender="org.freedesktop.resolve1"/>
  </policy>
</busconfig>
EOT
close $fh;

sub bus_conf {
    my ($with) = @_;
    my $inc = $with ? "  <include ignore_missing=\"yes\">$policy</include>\n" : '';
    return <<"EOT";
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>$addr</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <include>$t/resolve1.conf</include>
$inc</busconfig>
EOT
}

open $fh, '>', "$t/resolved.py" or die $!;
print $fh <<'EOT';
import sys
import dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])
name = dbus.service.BusName('org.freedesktop.resolve1', bus)
M = 'org.freedesktop.resolve1.Manager'

class Manager(dbus.service.Object):
    @dbus.service.method(M, in_signature='isit', out_signature='s')
    def ResolveHostname(self, i, n, f, fl):
        return 'asked:' + n

    @dbus.service.method(M, in_signature='iiayt', out_signature='s')
    def ResolveAddress(self, i, f, a, fl):
        return 'asked:address'

    @dbus.service.method(M, in_signature='isqqt', out_signature='s')
    def ResolveRecord(self, i, n, c, t, fl):
        return 'asked:' + n

    @dbus.service.method(M, in_signature='isssit', out_signature='s')
    def ResolveService(self, i, n, t, d, f, fl):
        return 'asked:' + d

    @dbus.service.method(M, in_signature='i', out_signature='s')
    def GetLink(self, i):
        return 'link'

Manager(bus, '/org/freedesktop/resolve1')
print('ready', flush=True)
GLib.MainLoop().run()
EOT
close $fh;

# a call with no interface field, which the D-Bus protocol allows
open $fh, '>', "$t/bare.py" or die $!;
print $fh <<'EOT';
import sys
import dbus
bus = dbus.bus.BusConnection(sys.argv[1])
try:
    r = bus.call_blocking('org.freedesktop.resolve1',
                          '/org/freedesktop/resolve1', None,
                          'ResolveHostname', 'isit',
                          (0, 'FAKE-data.example.com', 0, 0))
    print('string "' + r + '"')
except dbus.exceptions.DBusException as e:
    print(e.get_dbus_name())
EOT
close $fh;

my @calls = (
    ['ResolveHostname', 'int32:0 string:FAKE-data.example.com int32:0 '
                        . 'uint64:0'],
    ['ResolveAddress', 'int32:0 int32:2 array:byte:192,0,2,1 uint64:0'],
    ['ResolveRecord', 'int32:0 string:FAKE-data.example.com uint16:1 '
                      . 'uint16:16 uint64:0'],
    ['ResolveService', 'int32:0 string: string: '
                       . 'string:FAKE-data.example.com int32:0 uint64:0'],
    ['GetLink', 'int32:1'],
    ['bare', ''],
);

# runs a bus with or without the overlay's policy and the stand-in;
# returns { "user method" => "answered" | "denied" | other }
sub try_bus {
    my ($with) = @_;
    my (%got, $daemon, $svc);

    unlink "$t/bus";
    open my $c, '>', "$t/bus.conf" or die $!;
    print $c bus_conf($with);
    close $c;
    $daemon = fork() // die "fork: $!";
    if ($daemon == 0) {
        open STDOUT, '>', "$t/daemon.log";
        open STDERR, '>&', \*STDOUT;
        exec('dbus-daemon', '--nofork', '--nopidfile',
             "--config-file=$t/bus.conf") or die "dbus-daemon: $!";
    }
    for (1 .. 100) {
        last if -S "$t/bus";
        select(undef, undef, undef, 0.05);
    }
    $svc = open(my $sv, '-|', $py, "$t/resolved.py", $addr)
        or die "$py: $!";
    my $ready = <$sv> // '';
    if ($ready ne "ready\n") {
        diag('the stand-in did not start: ' . slurp("$t/daemon.log"));
    }
    for my $user (qw(root nobody)) {
        for my $call (@calls) {
            my ($m, $args) = @$call;
            my @as = $user eq 'root' ? ()
                   : ('setpriv', '--reuid=nobody', '--regid=nogroup',
                      '--clear-groups');
            my $out = $m eq 'bare' ? `@as $py $t/bare.py $addr 2>&1` :
                `@as dbus-send --bus=$addr --print-reply --reply-timeout=5000 --dest=org.freedesktop.resolve1 /org/freedesktop/resolve1 org.freedesktop.resolve1.Manager.$m $args 2>&1`;
            $got{"$user $m"} = $out =~ /string "(asked:|link)/ ? 'answered'
                             : $out =~ /AccessDenied/ ? 'denied'
                             : $out =~ s/\s+/ /gr;
        }
    }
    kill 'TERM', $svc, $daemon;
    close $sv;
    waitpid $daemon, 0;
    return \%got;
}

my $got = try_bus(1);
for my $call (@calls) {
    my $m = $call->[0];
    if ($m eq 'bare') {
        is($got->{"nobody $m"}, 'denied', 'nobody may not call '
           . 'ResolveHostname without naming its interface');
        next;
    }
    is($got->{"root $m"}, 'answered', "root may call resolve1's $m");
    is($got->{"nobody $m"}, $m eq 'GetLink' ? 'answered' : 'denied',
       "nobody " . ($m eq 'GetLink' ? 'may' : 'may not')
       . " call resolve1's $m");
}

# the stand-in, without the overlay's policy: every user is answered
$got = try_bus(0);
is($got->{'nobody ResolveHostname'}, 'answered',
   'without the overlay\'s policy nobody is answered (the bus and the '
   . 'stand-in work)');

done_testing();


# connect_as USER SOCKET: whether USER, with its own group alone, can
# connect to the unix socket SOCKET ("yes" or "no")
sub connect_as {
    my ($user, $path) = @_;
    return as_user($user, sub {
        IO::Socket::UNIX->new(Peer => $path) ? 'yes' : 'no'
    });
}


sub read_as {
    my ($user, $path) = @_;
    return as_user($user, sub {
        my $fh;
        open($fh, '<', $path) && defined <$fh> ? 'yes' : 'no'
    });
}


sub as_user {
    my ($user, $code) = @_;
    my (undef, undef, $uid, $gid) = getpwnam($user)
        or die "no user $user";
    pipe my $rd, my $wr or die "pipe: $!";
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        close $rd;
        POSIX::setgid($gid);
        $) = "$gid $gid";
        POSIX::setuid($uid);
        print $wr ($< == $uid ? $code->() : 'no-setuid');
        close $wr;
        POSIX::_exit(0);
    }
    close $wr;
    my $r = <$rd> // 'no-result';
    waitpid $pid, 0;
    return $r;
}
