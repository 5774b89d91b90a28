#!/usr/bin/perl
# The list of commands (airlockctl --help, -h, help), one command's help
# (airlockctl help COMMAND) and the version, when they cannot be
# written (a full disk under "> out.txt"), exit 2 and say so, as every
# command's output does, and as COMMAND --help does: they exited 0, an
# empty file taken for what was asked.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";

absent("$ctl not built") unless -x $ctl;
absent('/dev/full is needed') unless -c '/dev/full';

for my $args ([ '--help' ], [ '-h' ], [ 'help' ], [ 'help', 'usage' ],
              [ 'help', 'check' ], [ '--version' ], [ 'check', '--help' ])
{
    my $cmd = join ' ', map { quotemeta } $ctl, @$args;
    my $e = `$cmd 2>&1 >/dev/full`;
    is($? >> 8, 2, "@$args: output not written: exit 2");
    like($e, qr/cannot write the output/, "@$args: and says so");

    my $out = `$cmd 2>/dev/null`;
    is($? >> 8, 0, "@$args: written: exit 0");
    like($out, qr/\S/, "@$args: and printed");
}

done_testing();
