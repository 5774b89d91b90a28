#!/usr/bin/perl
# The appliance's egress rule (conf/nftables-airlock.conf) and the
# connections that come in: the input chain lets in what comes to the
# clients' port 3128 (and SSH's 22), whoever's socket is bound there,
# and the answers to such a connection leave as "established".  A local
# user who binds 3128 where nginx does not listen (nginx's "listen 3128"
# is IPv4 alone, so [::]:3128 at any time; any address while nginx is
# stopped or restarting, or once it listens on 127.0.0.1:3128 alone, as
# docs/nginx.md advises) would be answered through it: a way out for
# anyone around the proxy.  Only root's sockets (sshd, nginx's master's
# listeners), nginx's workers' (the connections they accept) and
# networkd's (its DHCP servers' datagrams come in) answer off the box.
#
# The rule is loaded in a network namespace of the test's own (unshare
# -n), joined by a veth pair to a second one, the outside, which
# connects in; each user listens in turn on 3128, on the box's IPv4 and
# IPv6 address, and answers a line.  nginx's way is tried too: a
# listener made by root, its connection accepted by www-data; and the
# kernel's answers to an echo request, which are no user's.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::IP;
use Net::Ping;
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::UnitRun qw(egress_setup in_own_netns netns_run slurp spew);

my $me = "$FindBin::Bin/$FindBin::Script";

# the outside: its own namespace, which the parent's veth end is moved
# into; one line in per connection ("ADDRESS PORT"), one line out
if (@ARGV && $ARGV[0] eq '--outside') {
    outside();
    POSIX::_exit(0);
}

my %p = egress_setup(qw(nft unshare ip sysctl));
my $top = $p{top};

my @users = qw(root www-data systemd-network airlock-alertd redis nobody
               uid-1000);
# who may answer a connection from outside (networkd: its DHCP server's
# datagrams to port 68 and 546 come in too)
my %answers = (root => 1, 'www-data' => 1, 'systemd-network' => 1);

my %uid;
my $spare = 61000;
for my $u (@users) {
    my $n = $u =~ /^uid-(\d+)$/ ? $1 : getpwnam($u);
    $uid{$u} = defined $n ? $n : $spare++;
}

if (in_own_netns()) {
    in_netns(@ARGV[1 .. $#ARGV]);
    POSIX::_exit(0);
}

my $t = tempdir(CLEANUP => 1);
my $rules = slurp("$top/conf/nftables-airlock.conf");
$rules =~ s{"([a-z_][a-z0-9_-]*)"}{
    my $n = $1;
    $n eq 'lo' ? '"lo"'
               : defined $uid{$n} ? $uid{$n}
               : defined getpwnam($n) ? scalar getpwnam($n)
               : $spare++
}ge;
spew("$t/rules.nft", $rules);

my $out = netns_run($t, map { "$_=$uid{$_}" } @users);
my %got;
for (split /\n/, $out) {
    $got{"$1 $2"} = $3 if /^probe (\S+) (\S+) (\S+)$/;
}
ok(%got, 'the connections were tried with the rule loaded') or diag($out);

for my $u (@users) {
    for my $fam (qw(ipv4 ipv6)) {
        is($got{"$u $fam"} // 'no probe', $answers{$u} ? 'answer' : 'none',
           "$u listening on 3128 ($fam): "
           . ($answers{$u} ? 'answers' : 'never answers') . ' off the box');
    }
}
for my $fam (qw(ipv4 ipv6)) {
    is($got{"nginx $fam"} // 'no probe', 'answer',
       "root's listener, accepted by www-data ($fam): answers");
    is($got{"ping $fam"} // 'no probe', 'answer',
       "an echo request ($fam): the kernel answers");
}

done_testing();


# in the namespace with the rule: the box (v0: 192.0.2.2, 2001:db8::2),
# the outside beyond v1 (192.0.2.1, 2001:db8::1)
sub in_netns {
    my ($t, @who) = @_;
    my ($to_out, $from_out, $pid);

    system('ip link set lo up '
           . '&& sysctl -q -w net.ipv6.conf.default.accept_dad=0 '
           . '&& sysctl -q -w net.ipv4.ip_unprivileged_port_start=0') == 0
        or die "ip: $?";

    pipe my $in_rd, $to_out or die "pipe: $!";
    pipe $from_out, my $out_wr or die "pipe: $!";
    $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        close $to_out;
        close $from_out;
        open STDIN, '<&', $in_rd or die "stdin: $!";
        open STDOUT, '>&', $out_wr or die "stdout: $!";
        exec('unshare', '-n', $^X, $me, '--outside') or die "unshare: $!";
    }
    close $in_rd;
    close $out_wr;
    $to_out->autoflush(1);
    # the outside has its namespace once it says so
    my $hello = <$from_out> // die 'the outside did not start';
    system("ip link add v0 type veth peer name v1 netns $pid "
           . '&& ip addr add 192.0.2.2/24 dev v0 '
           . '&& ip -6 addr add 2001:db8::2/64 dev v0 nodad '
           . '&& ip link set v0 up') == 0
        or die "ip: $?";
    print $to_out "setup\n";
    <$from_out> // die 'the outside did not set up';
    system('nft', '-f', "$t/rules.nft") == 0 or die "nft: $?";

    for my $w (@who, 'nginx=') {
        my ($name, $uid) = split /=/, $w, 2;
        for my $fam (qw(ipv4 ipv6)) {
            my $addr = $fam eq 'ipv4' ? '192.0.2.2' : '2001:db8::2';
            my $r = try_in($name, $uid, $addr, $to_out, $from_out);
            print "probe $name $fam $r\n";
        }
    }
    # the kernel's own answers (echo replies) are no socket's of a user
    for my $fam (qw(ipv4 ipv6)) {
        my $addr = $fam eq 'ipv4' ? '192.0.2.2' : '2001:db8::2';
        print $to_out "$addr ping\n";
        my $r = <$from_out> // 'no-result';
        chomp $r;
        print "probe ping $fam $r\n";
    }
    close $to_out;
    waitpid $pid, 0;
}


# USER (UID) listens on ADDR port 3128 and answers one line to the
# connection the outside makes; nginx: root listens, www-data accepts
sub try_in {
    my ($name, $uid, $addr, $to_out, $from_out) = @_;
    my ($pid, $r);

    pipe my $rd, my $wr or die "pipe: $!";
    $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        close $rd;
        my $acceptor = $name eq 'nginx' ? scalar getpwnam('www-data') : $uid;
        POSIX::_exit(1) unless defined $acceptor;
        become($uid) if $name ne 'nginx';
        my $l = IO::Socket::IP->new(LocalHost => $addr, LocalPort => 3128,
                                    Listen => 8, ReuseAddr => 1,
                                    Proto => 'tcp')
            or POSIX::_exit(1);
        become($acceptor) if $name eq 'nginx';
        print $wr "listening\n";
        close $wr;
        # the outside's connection, or nothing: it gives up first
        if (IO::Select->new($l)->can_read(30)) {
            my $c = $l->accept;
            if ($c) {
                $c->autoflush(1);
                print $c "airlock-56\n";
                IO::Select->new($c)->can_read(30);
            }
        }
        POSIX::_exit(0);
    }
    close $wr;
    if ((<$rd> // '') ne "listening\n") {
        waitpid $pid, 0;
        return 'no-listener';
    }
    print $to_out "$addr 3128\n";
    $r = <$from_out> // 'no-result';
    chomp $r;
    kill 'KILL', $pid;
    waitpid $pid, 0;
    return $r;
}


sub become {
    my ($uid) = @_;

    POSIX::setgid($uid);
    $) = "$uid $uid";
    POSIX::setuid($uid);
    POSIX::_exit(1) unless $< == $uid && $> == $uid;
}


sub outside {
    $| = 1;
    print "started\n";
    <STDIN> // return;
    system('ip link set lo up '
           . '&& sysctl -q -w net.ipv6.conf.default.accept_dad=0 '
           . '&& sysctl -q -w net.ipv6.conf.v1.accept_dad=0 '
           . '&& ip addr add 192.0.2.1/24 dev v1 '
           . '&& ip -6 addr add 2001:db8::1/64 dev v1 nodad '
           . '&& ip link set v1 up') == 0
        or die "ip: $?";
    print "ready\n";
    while (my $line = <STDIN>) {
        my ($addr, $port) = split ' ', $line;
        if ($port eq 'ping') {
            my $p = Net::Ping->new($addr =~ /:/ ? 'icmpv6' : 'icmp', 3);
            print $p->ping($addr) ? "answer\n" : "none\n";
            next;
        }
        my ($s, $buf) = (undef, '');
        # a dropped answer is never seen: the connection gives up (what
        # the rule lets out comes at once, well within the wait)
        $s = IO::Socket::IP->new(PeerHost => $addr, PeerPort => $port,
                                 Proto => 'tcp', Timeout => 3);
        if ($s && IO::Select->new($s)->can_read(3)) {
            sysread($s, $buf, 64);
        }
        print $buf eq "airlock-56\n" ? "answer\n" : "none\n";
    }
}
