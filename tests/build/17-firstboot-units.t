#!/usr/bin/perl
# The first boot's units, which run as root before nginx: the key pair
# (conf/airlock-firstboot.service, in the package), the placeholder
# credentials and the ready line (appliance-image/).  Each passes
# `systemd-analyze verify` and is confined as far as its job allows, as
# the daemons' units are: a read-only system with only what it writes
# writable, no capability (root's own files in root's own directories need
# none), no network, no new privileges, a private /tmp and /dev, and never
# the secrets it has no use for.  Whether each still does its job so
# confined is for the booted image (make image-test).  Every unit that
# hides the appliance key hides the other name keygen may leave it under.

use strict;
use warnings;
use Cwd ();
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

need_cmd('systemd-analyze');

sub directives {
    my ($f) = @_;
    open my $fh, '<', $f or die "$f: $!";
    local $/;
    my $s = <$fh>;
    $s =~ s/\\\n\s*/ /g;
    my %d;
    for (split /\n/, $s) {
        next if /^\s*(#|;|\[|$)/;
        my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
        push @{$d{$k}}, $v;
    }
    return \%d;
}

my $img = "$top/appliance-image/root/etc/systemd/system";
# unit => [its file, what it may write, what it must not see]
my %units = (
    'airlock-firstboot' => ["$top/conf/airlock-firstboot.service",
                            ['/etc/airlock'],
                            ['/etc/airlock/credentials']],
    'airlock-credentials' => ["$img/airlock-credentials.service",
                              ['/etc/airlock/credentials'],
                              ['/etc/airlock/airlock.key']],
    'airlock-ready' => ["$img/airlock-ready.service", [],
                        ['/etc/airlock/credentials',
                         '/etc/airlock/airlock.key']],
);

my %want = (
    ProtectSystem => 'strict',
    ProtectHome => 'yes',
    PrivateTmp => 'yes',
    PrivateDevices => 'yes',
    PrivateNetwork => 'yes',
    RestrictAddressFamilies => 'AF_UNIX',
    NoNewPrivileges => 'yes',
    CapabilityBoundingSet => '',
    AmbientCapabilities => '',
    ProtectKernelTunables => 'yes',
    ProtectKernelModules => 'yes',
    ProtectControlGroups => 'yes',
    RestrictSUIDSGID => 'yes',
    RestrictNamespaces => 'yes',
    SystemCallArchitectures => 'native',
);

for my $u (sort keys %units) {
    my ($file, $rw, $hidden) = @{$units{$u}};
    my @bad = grep { !m{Command /usr/(bin|lib/airlock)/\S+ is not executable} }
              grep { /\S/ } split /\n/, `systemd-analyze verify $file 2>&1`;
    ok(!@bad, "systemd-analyze verify $u.service") or diag(join "\n", @bad);

    my $d = directives($file);
    for my $k (sort keys %want) {
        is($d->{$k} ? $d->{$k}[-1] : undef, $want{$k}, "$u: $k=$want{$k}");
    }
    my @filter = @{$d->{SystemCallFilter} || []};
    ok((grep { $_ eq '@system-service' } @filter)
       && (grep { /^~.*\@privileged/ } @filter),
       "$u: system calls of a service only, none of \@privileged");
    is(join(' ', sort map { split ' ' } @{$d->{ReadWritePaths} || []}),
       join(' ', @$rw), "$u: writes only " . (@$rw ? "@$rw" : 'nothing'));
    my %gone = map { s/^-//r => 1 }
               map { split ' ' } @{$d->{InaccessiblePaths} || []};
    for my $h (@$hidden) {
        ok($gone{$h}, "$u: $h is out of its reach");
    }
    # a command with full privileges ("+", "!") escapes all of the above
    my @full = grep { /^[-@:]*[+!]/ } @{$d->{ExecStart} || []};
    is("@full", '', "$u: its commands run confined");
}

# A keygen cut short after it linked the key into place and before it
# removed its .tmp leaves that .tmp: the same file, the private key, under
# another name.  A unit that hides the key (the worker, which runs as
# root with CAP_DAC_OVERRIDE) hides that name too.
for my $file (sort(glob("$top/conf/*.service"), glob("$img/*.service"))) {
    (my $u = $file) =~ s{.*/}{};
    my %gone = map { s/^-//r => 1 }
               map { split ' ' } @{directives($file)->{InaccessiblePaths}
                                   || []};
    next unless $gone{'/etc/airlock/airlock.key'};
    ok($gone{'/etc/airlock/airlock.key.tmp'},
       "$u hides the key's other name a cut short keygen leaves, "
       . '/etc/airlock/airlock.key.tmp');
}

done_testing();
