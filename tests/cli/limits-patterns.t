#!/usr/bin/perl
# A policy's compiled patterns are bounded.  A pattern of 30 bytes,
# '^(?:(?:ab|cd|ef){1,40}x){1,40}$', compiles to about 50 KB (PCRE2
# copies a bounded repeat of a group once for each time, and JIT code
# beside it), so a policy file well under its 16 MiB of distinct such
# patterns took gigabytes to load, in airlockctl check and in nginx's
# master alike.  Patterns compiling to more than 256 MiB in all are
# refused at the one that crosses it; a policy under it loads as before.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

# n routes, each with its own copy of the pattern (a comment tells them
# apart, so none is shared)
sub policy {
    my ($name, $n) = @_;
    my $text = "version: 1\nclients:\n  a: { unix_uid: 1000 }\n"
               . "upstreams:\n  u: { url: \"http://127.0.0.1:9000\" }\n"
               . "routes:\n";

    $text .= "  - { name: r$_, clients: [a], match: { method: GET, "
             . "path: '/p$_/{x}' }, params: { x: "
             . "'^(?:(?:ab|cd|ef){1,40}x){1,40}(?#$_)\$' }, upstream: u, "
             . "to: '/q/{x}' }\n"
        for 0 .. $n - 1;
    $text .= "alerts:\n  deny: { threshold: 3, window: 60s }\n";

    my $path = write_file($name, $text);
    chmod 0600, $path or die;
    return $path;
}

plan tests => 4;

# 7000 are 350 MB without JIT code (49812 bytes each), more with it

my $over = policy('over.yaml', 7000);
my $under = policy('under.yaml', 1000);

my ($rc, $out) = run_ctl('check', $over);
is($rc, 1, 'patterns compiling to over 256 MiB: invalid, exit 1');
my $why = "param pattern: the policy's patterns compile to more than "
          . '256 MiB here';
like($out, qr/^\Q$over\E:\d+:\d+: \Q$why\E/m,
     'named at the pattern that crosses it') or diag($out);

($rc, $out) = run_ctl('check', $under);
is($rc, 0, 'under it: valid') or diag($out);
like($out, qr/ok \(1 clients, 1000 routes/, 'every route loaded');
