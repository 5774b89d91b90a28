#!/usr/bin/perl
# .ci/run, the CI entry point, with auto/deps and make stubbed out: it
# runs the README's test command, stops when auto/deps fails, and runs
# the suite with CI set, so that a test whose prerequisite is missing
# fails (tests/lib/Airlock/Prereq.pm) instead of skipping, whatever the
# machine that runs it puts in the environment.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $tmp = tempdir(CLEANUP => 1);

sub put {
    my ($path, $text, $mode) = @_;
    open(my $fh, '>', $path) or die "write $path: $!";
    print $fh $text;
    close $fh;
    chmod $mode, $path;
}

sub slurp {
    my ($f) = @_;
    open(my $fh, '<', $f) or return '';
    local $/;
    return <$fh>;
}

# a tree with .ci/run and a stub auto/deps; a stub make on PATH
my $tree = "$tmp/tree";
mkdir $tree;
mkdir "$tree/$_" for qw(.ci auto);
put("$tree/.ci/run", slurp("$top/.ci/run"), 0755);
put("$tree/auto/deps",
    "echo \"deps \$*\" >> $tmp/log\nexit \${DEPS_RC:-0}\n", 0755);
mkdir "$tmp/bin";
put("$tmp/bin/make", "#!/bin/sh\necho \"make \$* CI=\${CI:-}\" >> $tmp/log\n",
    0755);

sub ci_run {
    my ($env) = @_;
    unlink "$tmp/log";
    my $out = `env -u CI $env PATH=$tmp/bin:\$PATH $tree/.ci/run 2>&1`;
    return ($? >> 8, slurp("$tmp/log"), $out);
}

my ($rc, $log, $out) = ci_run('');
is($rc, 0, '.ci/run') or diag($out);
like($log, qr/^deps test$/m, 'it installs the test set (auto/deps test)');
like($log, qr/^make test CI=\S+$/m,
     'and runs make test with CI set, so a missing prerequisite fails')
    or diag($log);

($rc, $log, $out) = ci_run('CI=true');
like($log, qr/^make test CI=true$/m, 'a CI value given is kept');

($rc, $log, $out) = ci_run('DEPS_RC=1');
isnt($rc, 0, '.ci/run fails when auto/deps fails');
unlike($log, qr/^make /m, 'and runs no test');

done_testing();
