#!/usr/bin/perl
# The appliance's egress rule (conf/nftables-airlock.conf) as the kernel
# runs it: loaded into a network namespace of the test's own (unshare
# -n; the host's rules are not touched), with listeners where the
# appliance has them on loopback (systemd-resolved's stub on 127.0.0.53
# and 127.0.0.54 port 53, the clients' listener 3128, the agent's /api/
# 8080, the status 9901) and a route off the box (a veth pair),
# each local user is tried in turn.
#
# Loopback is no way around the proxy: the stub sends whatever name it
# is asked for to the network's DNS servers, so only those that resolve
# names for the appliance (root, nginx's www-data, airlock-alertd,
# systemd-timesync) are answered; nobody, redis and the agent's and
# worker's users are not.  The status listener is root's and nginx's.
# The clients' listener (3128, on loopback and on the box's own address,
# which is loopback too) and /api/ (8080) are the operators': root and
# the people's accounts (uids 1000 to 59999), no system user, not
# nobody, not uid 60000 and up (DynamicUser='s among them).  The agent's
# and the worker's users reach nothing on loopback.  Off the box only
# www-data, alertd (TCP, to its sinks alone), the resolver and
# timesyncd go, and networkd's DHCP (from port 68 to 67) and DHCPv6
# (from port 546 to 547); any user may bind those ports in the
# namespace, so that the rule, not the port, is what is tried.
#
# alertd's sinks are those of a policy of the test's own, put in the
# rule's sets by the image's airlock-alertd-egress (with this build's
# airlockctl): an address and port of it is let out, another address,
# or another port of the same address, is not.
#
# The users the host lacks (alertd's, systemd-resolve, ...) are given
# spare uids in the copy of the ruleset loaded here.

use strict;
use warnings;
use Errno ();
use FindBin;
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use IO::Socket::IP;
use POSIX ();
use Socket qw(SOCK_DGRAM SOCK_STREAM);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::UnitRun qw(egress_setup in_own_netns netns_run egress_bin
                        sinks_policy slurp spew);

my %p = egress_setup(qw(nft unshare ip sysctl getent cut sort));
my $top = $p{top};

# the users tried, and the name each has in the ruleset
# (uid-N: a person's account of that uid, named nowhere in the ruleset)
my @users = qw(root www-data airlock-alertd systemd-timesync
               systemd-resolve systemd-network airlock-agent airlock-worker
               redis nobody uid-1000 uid-59999 uid-60000);

# the targets: name => [proto, address, port]
my %target = (
    'stub-udp'   => ['udp', '127.0.0.53', 53],
    'stub-tcp'   => ['tcp', '127.0.0.53', 53],
    'stub54-udp' => ['udp', '127.0.0.54', 53],
    'proxy'      => ['tcp', '127.0.0.1', 3128],
    'proxy-own'  => ['tcp', '192.0.2.2', 3128],
    'api'        => ['tcp', '127.0.0.1', 8080],
    'status'     => ['tcp', '127.0.0.1', 9901],
    'out-dns'    => ['udp-out', '198.51.100.7', 53],
    'out-ntp'    => ['udp-out', '198.51.100.7', 123],
    'out6-dns'   => ['udp-out', '2001:db8:1::7', 53],
    'out-https'  => ['tcp-out', '198.51.100.7', 443],
    'out-other'  => ['tcp-out', '198.51.100.8', 443],
    'out-port'   => ['tcp-out', '198.51.100.7', 8443],
    'out6-am'    => ['tcp-out', '2001:db8:1::7', 9093],
    'out6-other' => ['tcp-out', '2001:db8:1::7', 443],
    'dhcp4'      => ['udp68-out', '198.51.100.7', 67],
    'dhcp6'      => ['udp546-out', 'ff02::1:2%v0', 547],
    'dhcp6-uni'  => ['udp546-out', '2001:db8:1::7', 547],
);

# inside the namespace: prints "uid target outcome" lines
if (in_own_netns()) {
    in_netns(@ARGV[1 .. $#ARGV]);
    POSIX::_exit(0);
}

my $t = tempdir(CLEANUP => 1);

# alertd's sinks: an address off the box on 443, an Alertmanager at an
# IPv6 address, and one on this host by name (localhost: /etc/hosts)
sinks_policy("$t/policy.yaml", undef,
             'alertmanager: { url: "https://198.51.100.7" }',
             'alertmanager: { url: "http://[2001:db8:1::7]:9093" }',
             'alertmanager: { url: "http://localhost:9093" }');
egress_bin($t);

# the ruleset, each user name a uid: the host's own, or a spare one
my %uid;
my $spare = 61000;
for my $u (@users) {
    my $n = $u =~ /^uid-(\d+)$/ ? $1 : getpwnam($u);
    $uid{$u} = defined $n ? $n : $spare++;
}
my $rules = slurp("$top/conf/nftables-airlock.conf");
my %named;
$rules =~ s{"([a-z_][a-z0-9_-]*)"}{
    my $n = $1;
    $n eq 'lo' ? '"lo"'
               : defined $uid{$n} ? ($named{$n} = 1, $uid{$n})
               : die "the ruleset names $n, which this test does not know"
}ge;
for my $u (qw(www-data airlock-alertd airlock-agent airlock-worker
              systemd-resolve systemd-timesync systemd-network)) {
    ok($named{$u}, "the ruleset names $u");
}
# deny by default, both ways, IPv6 too (one table of the inet family)
for my $c (qw(input output forward)) {
    like($rules, qr/chain $c \{\s*type filter hook $c priority filter; policy drop;/,
         "the $c chain drops what no rule accepts");
}
# the DHCPv6 servers' answers come in (from 547 to networkd's 546; a
# reply to a multicast question is no connection conntrack knows)
my ($input) = $rules =~ /chain input \{(.*?)\n    \}/s;
like($input // '', qr/^\s*udp sport 547 udp dport 546 accept$/m,
     'the input chain lets DHCPv6 answers in');
my @tables = $rules =~ /^table\s+(\S+)/mg;
is("@tables", 'inet', 'one table, of the inet family (IPv4 and IPv6)');

spew("$t/rules.nft", $rules);

my $out = netns_run($t, @uid{@users});
my %got;
for (split /\n/, $out) {
    $got{"$1 $2"} = $3 if /^probe (\d+) (\S+) (\S+)$/;
}
ok(%got, 'the probes ran in a namespace with the ruleset loaded')
    or diag($out);

# user => { target => outcome }; a target left out is not asserted
my $dns = { 'stub-udp' => 'answer', 'stub-tcp' => 'open',
            'stub54-udp' => 'answer' };
# a datagram the rule rejects fails to send (EPERM)
my $nodns = { 'stub-udp' => 'eperm', 'stub-tcp' => 'refused',
              'stub54-udp' => 'eperm' };
# the listeners for people (3128, 8080), and DHCPv6 off the box
my $people = { proxy => 'open', 'proxy-own' => 'open', api => 'open' };
my $daemon = { proxy => 'refused', 'proxy-own' => 'refused',
               api => 'refused' };
my $nodhcp6 = { dhcp6 => 'eperm', 'dhcp6-uni' => 'eperm' };
my %want = (
    root => { %$dns, %$people, %$nodhcp6, status => 'open',
              'out-dns' => 'eperm', 'out6-dns' => 'eperm',
              'out-https' => 'dropped' },
    'www-data' => { %$dns, %$daemon, %$nodhcp6, status => 'open',
                    'out-https' => 'sent', 'out-other' => 'sent',
                    'out6-am' => 'sent', 'out-dns' => 'eperm',
                    'out6-dns' => 'eperm' },
    'airlock-alertd' => { %$dns, %$daemon, %$nodhcp6,
                          status => 'refused', 'out-dns' => 'eperm',
                          'out-https' => 'sent', 'out-other' => 'dropped',
                          'out-port' => 'dropped', 'out6-am' => 'sent',
                          'out6-other' => 'dropped' },
    'systemd-timesync' => { %$dns, %$daemon, status => 'refused',
                            'out-ntp' => 'sent', 'out-dns' => 'eperm' },
    'systemd-resolve' => { %$daemon, 'out-dns' => 'sent',
                           'out6-dns' => 'sent', status => 'refused' },
    'systemd-network' => { %$nodns, %$daemon, status => 'refused',
                           dhcp4 => 'sent',
                           dhcp6 => 'sent', 'dhcp6-uni' => 'sent',
                           'out-dns' => 'eperm', 'out-ntp' => 'eperm',
                           'out-https' => 'dropped' },
    'airlock-agent' => { %$nodns, %$daemon, %$nodhcp6,
                         status => 'refused', 'out-dns' => 'eperm',
                         'out-ntp' => 'eperm' },
    'airlock-worker' => { %$nodns, %$daemon, %$nodhcp6,
                          status => 'refused', 'out-dns' => 'eperm',
                          'out-ntp' => 'eperm' },
    redis => { %$nodns, %$daemon, status => 'refused',
               'out-dns' => 'eperm' },
    nobody => { %$nodns, %$daemon, %$nodhcp6,
                status => 'refused', 'out-dns' => 'eperm',
                'out-ntp' => 'eperm', 'out6-dns' => 'eperm',
                'out-https' => 'dropped' },
    'uid-1000' => { %$nodns, %$people, %$nodhcp6, status => 'refused',
                    'out-dns' => 'eperm', 'out-https' => 'dropped' },
    'uid-59999' => { %$nodns, %$people, status => 'refused' },
    'uid-60000' => { %$nodns, %$daemon, status => 'refused' },
);
# DHCP off the box: networkd's alone
for my $u (grep { $_ ne 'systemd-network' } @users) {
    $want{$u}{dhcp4} = 'eperm';
}

for my $u (@users) {
    for my $k (sort keys %{$want{$u}}) {
        is($got{"$uid{$u} $k"} // 'no probe', $want{$u}{$k},
           "$u, $k ($target{$k}[0] $target{$k}[1]:$target{$k}[2])");
    }
}

done_testing();


# in the namespace: lo and a route off the box, the ruleset, listeners
# (a child, as root), then one probe per user and target (a child each,
# with the user's uid and gid and no other group)
sub in_netns {
    my ($t, @uids) = @_;
    my $rules = "$t/rules.nft";
    my (@srv, $pid);

    system("ip link set lo up && ip link add v0 type veth peer name v1 "
           . "&& ip addr add 192.0.2.2/24 dev v0 "
           . "&& ip link set v1 up && ip link set v0 up "
           . "&& ip route add default via 192.0.2.1 "
           . "&& ip -6 addr add 2001:db8::2/64 dev v0 nodad "
           . "&& ip -6 route add default via 2001:db8::1 "
           . "&& sysctl -q -w net.ipv4.ip_unprivileged_port_start=0") == 0
        or die "ip: $?";
    system('nft', '-f', $rules) == 0 or die "nft -f $rules: $?";
    # alertd's sinks into the rule's sets, as the image does (what it
    # keeps, in a directory of the test's own)
    system("RUNTIME_DIRECTORY=$t/run PATH=$t/bin:\$PATH "
           . "sh $top/appliance-image/root/usr/lib/airlock/"
           . "alertd-egress --alertd $t/policy.yaml >&2") == 0
        or die "alertd-egress: $?";

    for my $k (sort keys %target) {
        my ($proto, $addr, $port) = @{$target{$k}};
        next if $proto =~ /-out$/;
        push @srv, IO::Socket::INET->new(
            LocalAddr => $addr, LocalPort => $port, ReuseAddr => 1,
            $proto eq 'tcp' ? (Proto => 'tcp', Listen => 64)
                            : (Proto => 'udp'))
            or die "listen $proto $addr:$port: $!";
    }
    $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        # the UDP listeners answer each datagram with itself
        my $sel = IO::Select->new(grep { $_->socktype == SOCK_DGRAM } @srv);
        while (1) {
            for my $s ($sel->can_read) {
                my $from = $s->recv(my $buf, 512) // next;
                $s->send($buf, 0, $from);
            }
        }
    }

    for my $u (@uids) {
        for my $k (sort keys %target) {
            my $r;
            if ($target{$k}[0] eq 'tcp-out') {
                # a SYN off the box gets no answer either way: whether
                # the rule dropped it is its last rule's counter
                my $before = dropped();
                probe($u, @{$target{$k}});
                $r = dropped() > $before ? 'dropped' : 'sent';
            } else {
                $r = probe($u, @{$target{$k}});
            }
            print "probe $u $k $r\n";
        }
    }
    kill 'KILL', $pid;
    waitpid $pid, 0;
}


# the packets the output chain's last rule ("counter drop") dropped
sub dropped {
    my ($n) = `nft list chain inet airlock output`
        =~ /counter packets (\d+) bytes \d+ drop\s*$/m;
    return $n // die 'no "counter drop" rule in the output chain';
}


sub probe {
    my ($uid, $proto, $addr, $port) = @_;
    my ($pid, $r);

    pipe my $rd, my $wr or die "pipe: $!";
    $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        close $rd;
        POSIX::setgid($uid == 0 ? 0 : $uid);
        $) = ($uid == 0 ? 0 : $uid) . ' ' . ($uid == 0 ? 0 : $uid);
        POSIX::setuid($uid);
        print $wr ($< == $uid ? attempt($proto, $addr, $port) : 'no-setuid');
        close $wr;
        POSIX::_exit(0);
    }
    close $wr;
    $r = <$rd> // 'no-result';
    waitpid $pid, 0;
    return $r;
}


sub attempt {
    my ($proto, $addr, $port) = @_;
    my ($s, $buf);

    if ($proto eq 'tcp-out') {
        IO::Socket::IP->new(PeerHost => $addr, PeerPort => $port,
                            Proto => 'tcp', Timeout => 0.3);
        return 'tried';
    }
    if ($proto eq 'tcp') {
        $s = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port,
                                   Proto => 'tcp', Timeout => 3);
        return 'open' if $s;
        return $!{ECONNREFUSED} ? 'refused'
               : $!{EPERM} ? 'eperm' : 'none';
    }

    $s = IO::Socket::IP->new(PeerHost => $addr, PeerPort => $port,
                             Proto => 'udp',
                             $proto =~ /^udp(\d+)-out$/ ? (LocalPort => $1)
                                                       : ())
        or return "socket-$!";
    if (!defined $s->send('airlock-36')) {
        return $!{EPERM} ? 'eperm' : $!{ECONNREFUSED} ? 'none' : "send-$!";
    }
    return 'sent' if $proto =~ /-out$/;
    return 'none' unless IO::Select->new($s)->can_read(3);
    return defined $s->recv($buf, 512) && $buf eq 'airlock-36'
           ? 'answer' : 'none';
}
