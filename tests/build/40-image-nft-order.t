#!/usr/bin/perl
# The egress rule is in the kernel before anything that may use the
# network starts.  Debian's nftables.service is ordered before
# network-pre.target only, which systemd-networkd waits for;
# systemd-timesyncd and systemd-resolved start before sysinit.target
# with no default dependencies, and nothing ordered sysinit.target (after
# which every unit with default dependencies starts) after the rule: on
# the appliance timesyncd could ask its NTP servers, and resolved its
# DNS servers, with no rule loaded.  The image's drop-in
# nftables.service.d/airlock-before-network.conf orders the rule before
# sysinit.target, networkd, resolved and timesyncd, and after
# systemd-sysusers (a user it makes is one nft can resolve).
#
# Read as systemd merges them, without systemd: Debian's units as the
# host has them (systemd-resolved's, which bookworm packages apart, as
# systemd 252 orders it when the host lacks it), the overlay's
# /etc/systemd/system over them, and a service with default
# dependencies; the order is Before=/After= of either side and the
# default dependencies (tests/lib/Airlock/UnitOrder.pm); and no cycle
# (none of them is also ordered before the rule).  Then systemd-analyze
# verify reads the drop-ins.
# tests/image/10-root.t checks the same order on the built root's own
# units.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);
use Airlock::UnitOrder qw(unit_merged starts_before);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $etc = "$top/appliance-image/root/etc/systemd/system";
my $lib = '/lib/systemd/system';

need_cmd(qw(systemd-analyze));
for my $u (qw(nftables.service systemd-networkd.service
              systemd-timesyncd.service systemd-sysusers.service
              sysinit.target network-pre.target)) {
    absent("$lib/$u missing (Debian's nftables, systemd, "
           . 'systemd-timesyncd)') unless -f "$lib/$u";
}

my $t = tempdir(CLEANUP => 1);
mkdir "$t/lib" or die $!;
for my $u (qw(nftables.service systemd-networkd.service
              systemd-timesyncd.service systemd-sysusers.service
              systemd-resolved.service sysinit.target basic.target
              network-pre.target network.target)) {
    copy("$lib/$u", "$t/lib/$u") if -f "$lib/$u";
}
unless (-f "$t/lib/systemd-resolved.service") {
    # the [Unit] ordering of systemd 252's systemd-resolved.service
    open my $fh, '>', "$t/lib/systemd-resolved.service" or die $!;
    print $fh <<'EOT';
[Unit]
Description=stand-in for systemd-resolved (systemd 252's ordering)
DefaultDependencies=no
After=systemd-sysctl.service systemd-sysusers.service
Before=sysinit.target network.target nss-lookup.target shutdown.target
Conflicts=shutdown.target

[Service]
ExecStart=/bin/true
EOT
    close $fh;
}
# any service of the appliance's (nginx, Redis, the worker, alertd, ...)
open my $fh, '>', "$t/lib/airlock-sample-40.service" or die $!;
print $fh "[Unit]\nDescription=a unit with default dependencies\n\n"
    . "[Service]\nExecStart=/bin/true\n";
close $fh;

my @dirs = ($etc, "$t/lib");

ok(unit_merged(\@dirs, 'nftables.service')->{ExecStart},
   'nftables.service: Debian\'s, with the overlay\'s drop-ins');

for my $u (qw(systemd-networkd.service systemd-resolved.service
              systemd-timesyncd.service airlock-sample-40.service
              sysinit.target)) {
    my @p = starts_before(\@dirs, 'nftables.service', $u);
    ok(@p, "the egress rule loads before $u starts")
        and note(join ' -> ', @p);
    my @back = starts_before(\@dirs, $u, 'nftables.service');
    ok(!@back, "and not after it (no cycle)")
        or diag(join ' -> ', @back);
}
my @p = starts_before(\@dirs, 'systemd-sysusers.service', 'nftables.service');
ok(@p, 'after systemd-sysusers (the users it makes at boot resolve)');

# systemd's own reading: the drop-ins parse (it reports no ordering
# cycle here: the "not after it" checks above are those)
{
    local $ENV{SYSTEMD_UNIT_PATH} = "$etc:$t/lib:";
    my $out = `systemd-analyze verify $t/lib/nftables.service 2>&1`;
    my @bad = grep { !m{Command /usr/lib/airlock/\S+ is not executable} }
              grep { /\S/ } split /\n/, $out;
    ok(!@bad, 'systemd-analyze verify nftables.service with the drop-ins')
        or diag(join "\n", @bad);
}

done_testing();
