#!/usr/bin/perl

# airlock-agent's and airlock-worker's units: group redis, which each has
# to connect to Redis's socket (SupplementaryGroups=redis), is also the
# group of Redis's configuration and data on Debian (/etc/redis 2770
# redis:redis, its redis.conf 0640 and the users' ACL file; /var/lib/redis
# 0750 redis:redis, the dump and the append-only files in it), and the
# worker's launcher is root with CAP_DAC_OVERRIDE, which reads them
# whatever their group.  ProtectSystem=strict makes them read-only, not
# unreadable: a client could read every Redis user's ACL line and every
# session and job result of every run in the dump, past whatever Redis's
# ACL lets it see.  Both units take both directories away
# (InaccessiblePaths=), as they do the appliance's key and credentials.
# Each binds Redis's socket directory read-only: a client connects to the
# socket, and needs to make nothing there.  A check of the unit files;
# systemd-analyze verify of each.

use strict;
use warnings;

use Cwd ();
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Airlock::Prereq qw(need_cmd);
use Airlock::Unit qw(unit_directives unit_paths unit_verify);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

need_cmd('systemd-analyze');

my %units = (agent => "$top/conf/airlock-agent.service",
             worker => "$top/conf/airlock-worker.service");

plan tests => 6 * keys %units;

for my $who (sort keys %units) {
    my $unit = $units{$who};
    my $d = unit_directives($unit);
    my @groups = unit_paths($d, 'SupplementaryGroups');
    my @gone = unit_paths($d, 'InaccessiblePaths');
    my @ro = unit_paths($d, 'BindReadOnlyPaths');
    my @rw = unit_paths($d, 'BindPaths');

    ok((grep { $_ eq 'redis' } @groups),
       "the $who is in group redis (Redis's socket)");

    for my $dir (qw(/etc/redis /var/lib/redis)) {
        ok((grep { $_ eq $dir } @gone), "$dir is out of the $who\'s reach")
            or diag("InaccessiblePaths: @gone");
    }

    ok((grep { $_ eq '/run/redis' } @ro),
       "the $who binds /run/redis read-only") or diag("BindReadOnlyPaths: @ro");
    ok(!(grep { $_ eq '/run/redis' } @rw),
       "the $who does not bind /run/redis writable") or diag("BindPaths: @rw");

    my @bad = unit_verify($unit);
    ok(!@bad, "systemd-analyze verify " . ($unit =~ s{.*/}{}r))
        or diag(join "\n", @bad);
}
