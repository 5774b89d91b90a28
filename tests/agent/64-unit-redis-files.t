#!/usr/bin/perl

# airlock-agent's unit: group redis, which it has to connect to Redis's
# socket (SupplementaryGroups=redis), is also the group of Redis's
# configuration and data on Debian (/etc/redis 2770 redis:redis, its
# redis.conf 0640; /var/lib/redis 0750 redis:redis, the dump and the
# append-only files in it).  ProtectSystem=strict makes them read-only,
# not unreadable: the agent could read every client's Redis password or
# ACL line in redis.conf, and every session and job result of every run
# in the dump, past whatever Redis's ACL lets it see.  Its unit now takes
# both directories away (InaccessiblePaths=), as it does the appliance's
# key and credentials.  A check of the unit file; systemd-analyze verify
# where it is installed.

use strict;
use warnings;

use Cwd ();
use FindBin;
use Test::More;

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $unit = "$top/conf/airlock-agent.service";

plan tests => 4;

open my $fh, '<', $unit or die "$unit: $!";
my $text = do { local $/; <$fh> };
$text =~ s/\\\n\s*/ /g;                     # continued lines

my (@groups, @gone);
for (split /\n/, $text) {
    next if /^\s*(#|;|\[|$)/;
    push @groups, split ' ', $1 if /^\s*SupplementaryGroups=(.*)$/;
    push @gone, map { s/^-//r } split ' ', $1
        if /^\s*InaccessiblePaths=(.*)$/;
}

ok((grep { $_ eq 'redis' } @groups),
   'the agent is in group redis (Redis\'s socket)');

for my $dir (qw(/etc/redis /var/lib/redis)) {
    ok((grep { $_ eq $dir } @gone), "$dir is out of the agent's reach")
        or diag("InaccessiblePaths: @gone");
}

SKIP: {
    my $sa = `command -v systemd-analyze 2>/dev/null`;
    chomp $sa;
    skip 'systemd-analyze is missing', 1 unless $sa;
    my $out = `$sa verify $unit 2>&1`;
    my @bad = grep { !/Command \/usr\/bin\/airlock\S* is not executable/ }
              grep { /\S/ } split /\n/, $out;
    ok(!@bad, 'systemd-analyze verify airlock-agent.service')
        or diag(join "\n", @bad);
}
