#!/usr/bin/perl
# Deny by default even when the egress rule fails to load.  Debian's
# nftables.service loads /etc/nftables.conf with `nft -f`, all of it or
# none: a ruleset that fails (here: a user name nft cannot resolve) left
# the kernel with no rule at all, everything out for every local user.
# The image's drop-in nftables.service.d/airlock-failsafe.conf runs
# /usr/lib/airlock/nftables-failsafe after a failed start
# (ExecStopPost=, SERVICE_RESULT set to why): a rule that lets nothing
# but loopback in or out.  After a stop that succeeded it does nothing.
#
# Tried in network namespaces of the test's own (unshare -n; the host's
# rules are not touched), with a veth route off the box: a UDP datagram
# sent off the box, as root and as www-data, and one over loopback.
# Whether systemd runs it so in the booted image: make image-test
# (tests/image/guest-check.sh, "nft-failsafe").

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $ov = "$top/appliance-image/root";
my $dropin = "$ov/etc/systemd/system/nftables.service.d/airlock-failsafe.conf";
my $script = "$ov/usr/lib/airlock/nftables-failsafe";
my $unit = '/lib/systemd/system/nftables.service';

absent('loading a ruleset in a namespace of its own needs root') if $> != 0;
need_cmd(qw(nft unshare ip systemd-analyze));
absent("$unit missing (Debian's nftables)") unless -f $unit;

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return '';
    local $/;
    return <$fh>;
}

# --- the drop-in

(my $d = slurp($dropin)) =~ s/\\\n\s*/ /g;
my @post = grep { !/^\s*#/ } $d =~ /^\s*ExecStopPost=(.*)$/mg;
is("@post", '/usr/lib/airlock/nftables-failsafe',
   'nftables.service: the fail-safe rule after a failed start');
ok(-x $script, 'the fail-safe is a program of the overlay');
SKIP: {
    skip 'not a git checkout', 1
        if system("git -C $top rev-parse --git-dir >/dev/null 2>&1") != 0;
    my $mode = `git -C $top ls-files -s appliance-image/root/usr/lib/airlock/nftables-failsafe`;
    like($mode, qr/^100755 /, 'git keeps it executable (a fresh checkout, '
         . 'whose modes the image takes)')
        or diag($mode);
}

{
    my $t = tempdir(CLEANUP => 1);
    mkdir "$t/nftables.service.d";
    copy($unit, "$t/nftables.service") or die "copy: $!";
    copy($dropin, "$t/nftables.service.d/airlock-failsafe.conf");
    local $ENV{SYSTEMD_UNIT_PATH} = "$t:";
    my @bad = grep { !m{Command /usr/lib/airlock/\S+ is not executable} }
              grep { /\S/ }
              split /\n/, `systemd-analyze verify $t/nftables.service 2>&1`;
    ok(!@bad, 'systemd-analyze verify nftables.service with the drop-in')
        or diag(join "\n", @bad);
}

# --- in a namespace

my $t = tempdir(CLEANUP => 1);
# the image's ruleset, with a user nft cannot resolve, as a broken edit
(my $broken = slurp("$top/conf/nftables-airlock.conf"))
    =~ s/"www-data"/"airlock-no-such-user-39"/g;
open my $fh, '>', "$t/broken.nft" or die $!;
print $fh $broken;
close $fh;

my $www = getpwnam('www-data') // 33;
my $probe = q{use IO::Socket::INET; my ($a, $p) = @ARGV; }
    . q{my $s = IO::Socket::INET->new(PeerAddr => $a, PeerPort => $p, }
    . q{Proto => 'udp') or die "socket: $!"; }
    . q{print defined $s->send('airlock-39') ? 'sent' : $!{EPERM} ? 'eperm' : "err-$!"};

# runs, in a new namespace: the broken ruleset as nftables.service's
# ExecStart would, then the fail-safe with SERVICE_RESULT, then probes
sub in_ns {
    my ($result) = @_;
    open my $sh, '>', "$t/ns.sh" or die $!;
    print $sh <<"EOT";
ip link set lo up && ip link add v0 type veth peer name v1 \\
    && ip addr add 192.0.2.2/24 dev v0 && ip link set v1 up \\
    && ip link set v0 up && ip route add default via 192.0.2.1 \\
    || { echo "ip failed"; exit 1; }
nft -f $t/broken.nft >/dev/null 2>&1
echo "load=\$?"
echo "tables=\$(nft list tables | tr '\\n' ' ')"
SERVICE_RESULT=$result $script 2>/dev/null
echo "failsafe=\$?"
echo "tables-after=\$(nft list tables | tr '\\n' ' ')"
echo "root-out=\$($^X -e '$probe' 198.51.100.7 443)"
echo "www-out=\$(setpriv --reuid=$www --regid=$www --clear-groups $^X -e '$probe' 198.51.100.7 443)"
echo "root-lo=\$($^X -e '$probe' 127.0.0.1 9)"
EOT
    close $sh;
    my %r;
    for (split /\n/, `unshare -n sh $t/ns.sh 2>&1`) {
        $r{$1} = $2 if /^([a-z-]+)=(.*?)\s*$/;
    }
    return \%r;
}

my $r = in_ns('exit-code');
isnt($r->{load}, '0', 'a ruleset nft cannot load fails (as the unit\'s '
     . 'ExecStart would)');
is($r->{tables} // 'none', '', 'and leaves no rule at all');
is($r->{failsafe}, '0', 'the fail-safe loads after a failed start');
is($r->{'tables-after'}, 'table inet airlock-failsafe',
   'its table is the only one');
is($r->{'root-out'}, 'eperm', 'root sends nothing off the box');
is($r->{'www-out'}, 'eperm', 'nor does nginx\'s user');
is($r->{'root-lo'}, 'sent', 'loopback still carries');

$r = in_ns('success');
is($r->{failsafe}, '0', 'after a stop that succeeded the fail-safe exits 0');
is($r->{'tables-after'} // 'none', '', 'and loads nothing');
is($r->{'root-out'}, 'sent', 'root sends as Debian\'s stop leaves it');

done_testing();
