#!/usr/bin/perl
# A policy's routes times its clients is bounded: each route keeps a
# byte for every client, so a file of 80000 routes for 150000 clients
# (12 MB, under the 16 MiB a policy may be) took 12 GB to load, twice
# over, in airlockctl check and in nginx's master alike.  Routes times
# (clients + 1) over 64 Mi is refused at the routes, naming both counts,
# before any table is built; a policy under it loads as before.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

# nroutes routes, each for one of nclients clients
sub policy {
    my ($name, $nclients, $nroutes) = @_;
    my $text = "version: 1\nclients:\n";

    $text .= "  c$_: { unix_uid: " . (10000 + $_) . " }\n"
        for 0 .. $nclients - 1;
    $text .= "upstreams:\n  u: { url: \"http://127.0.0.1:9000\" }\n"
             . "routes:\n";
    $text .= "  - { name: r$_, clients: [c" . ($_ % $nclients) . "], "
             . "match: { method: GET, path: /p$_ }, upstream: u, to: /q }\n"
        for 0 .. $nroutes - 1;
    $text .= "alerts:\n  deny: { threshold: 3, window: 60s }\n";

    my $path = write_file($name, $text);
    chmod 0600, $path or die;
    return $path;
}

plan tests => 4;

# 8001 * 8400 = 67208400, just over 64 Mi; 8001 * 8380 is just under
my $over = policy('over.yaml', 8000, 8400);
my $under = policy('under.yaml', 8000, 8380);

my ($rc, $out) = run_ctl('check', $over);
is($rc, 1, 'routes times clients over 64 Mi: invalid, exit 1');
my $why = '8400 routes for 8000 clients are too many: each route keeps a '
          . 'table of every client';
like($out, qr/^\Q$over\E:\d+:\d+: \Q$why\E/m,
     'named at the routes, with both counts') or diag($out);

($rc, $out) = run_ctl('check', $under);
is($rc, 0, 'just under: valid') or diag($out);
like($out, qr/ok \(8000 clients, 8380 routes/, 'every route loaded');
