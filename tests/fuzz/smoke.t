#!/usr/bin/perl
# A short run of every libFuzzer target over its seeds and a few thousand
# generated inputs: `make fuzz` is the long run, this keeps the targets
# building and catches what a fresh mutation finds in seconds.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use POSIX ();

# a long run: make test runs it beside its other tests (PROVE_RULES in the
# Makefile), at a lower priority, so that they keep their timing
POSIX::nice(10);

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $runs = $ENV{AIRLOCK_FUZZ_RUNS} // 20000;

my @targets = map { m{/(fuzz_\w+)\.c$} ? $1 : () }
    glob("$top/tests/fuzz/fuzz_*.c");

plan skip_all => 'no fuzz targets' unless @targets;
plan tests => scalar @targets;

for my $t (@targets) {
    my $bin = "$build/fuzz/$t";
    SKIP: {
        skip "$t not built (make fuzz-build needs clang)", 1 unless -x $bin;
        my $corpus = tempdir(CLEANUP => 1);
        my $seeds = "$top/tests/fuzz/seeds/$t";
        my @dirs = ($corpus, -d $seeds ? $seeds : ());
        my $out = `$bin -runs=$runs -max_len=4096 -seed=1 @dirs 2>&1`;
        my $ok = $? == 0 && $out =~ /Done \d+ runs/;
        ok($ok, "$t: $runs runs, no crash")
            or diag(join "\n", (split /\n/, $out)[-30 .. -1]);
    }
}
