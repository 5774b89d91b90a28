#!/usr/bin/perl

# tests/unit/nfkc.h, the table al_path.c's dot-, slash- and space-likes
# are checked against, is what tests/unit/nfkc.py derives from this
# machine's Python: a Python with a newer Unicode that adds a character
# NFKC makes a dot, a slash or a space fails here until the table and
# al_path.c's lists are redone.  The lines that only name the versions
# are left out of the comparison.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Airlock::Prereq qw(need_cmd);

my $dir = $FindBin::Bin;

need_cmd('python3');
plan tests => 1;

sub tables {
    return join '', grep { !/Python \d|Unicode \d|NFKC_UNICODE/ } @_;
}

open(my $fh, '<', "$dir/nfkc.h") or die "nfkc.h: $!";
my @have = <$fh>;
close($fh);

my @made = `python3 $dir/nfkc.py`;
die "nfkc.py failed\n" if $? != 0;

my ($version) = map { /NFKC_UNICODE\s+"([^"]+)"/ ? $1 : () } @made;

is(tables(@made), tables(@have),
   "nfkc.h is what nfkc.py makes of Unicode $version")
    or diag("python3 tests/unit/nfkc.py > tests/unit/nfkc.h, then bring "
            . "the lists in policy/al_path.c up to it");
