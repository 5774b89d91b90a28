#!/usr/bin/perl

# The agent's socket, /run/airlock/agent/agent.sock, is 0660 and group
# airlock-api's (70-socket-group.t): nginx publishes it at /api/, and
# whoever connects to it may ask, with the agent's tools and tokens, in
# sessions of its own uid's.  The daemons that parse what others wrote
# and have no use for it are not in the group, and do not see it at
# all: the worker (its main process parses every sandbox's output; its
# unit binds /run/airlock for the proxy's socket) and alertd (it parses
# the deny log, whose fields clients write).  A check of the unit files,
# and systemd-analyze verify of each; tests/image/boot.sh checks the
# worker's as systemd runs it, by connecting from its mount namespace.

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

my %units = (alertd => "$top/conf/airlock-alertd.service",
             worker => "$top/conf/airlock-worker.service");

plan tests => 2 * keys %units;

for my $who (sort keys %units) {
    my $unit = $units{$who};
    my @gone = unit_paths(unit_directives($unit), 'InaccessiblePaths');

    ok((grep { $_ eq '/run/airlock/agent' || $_ eq '/run/airlock' } @gone),
       "the agent's socket is out of the $who\'s reach")
        or diag("InaccessiblePaths: @gone");

    my @bad = unit_verify($unit);
    ok(!@bad, "systemd-analyze verify " . ($unit =~ s{.*/}{}r))
        or diag(join "\n", @bad);
}
