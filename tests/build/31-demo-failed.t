#!/usr/bin/perl
# A demo kept up (conf/demo/run.sh --keep, make demo-up) that stops on
# the way, after it started its services (here its agent, a stand-in
# that exits at once), fails and stops what it started: it is not up, so
# make down could not stop them.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_demo);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";

need_demo($top, $build);

# the processes of any demo: their command lines name its state directory
sub demo_pids {
    my %p;
    for my $d (glob('/proc/[0-9]*')) {
        open(my $fh, '<', "$d/cmdline") or next;
        local $/;
        my $cmd = <$fh> // '';
        $p{$1} = $cmd if $cmd =~ m{/tmp/airlock-demo\.} && $d =~ m{(\d+)$};
    }
    return \%p;
}

# a build of its own: the real one's files, but for the agent
my $tmp = tempdir(CLEANUP => 1);
my $fake = "$tmp/build";
mkdir $fake or die "mkdir $fake: $!";
opendir(my $dh, $build) or die "opendir $build: $!";
for my $e (grep { !/^\.\.?$/ && $_ ne 'airlock-agent' } readdir $dh) {
    symlink("$build/$e", "$fake/$e") or die "symlink $e: $!";
}
closedir $dh;
open(my $fh, '>', "$fake/airlock-agent") or die "write: $!";
print $fh "#!/bin/sh\necho 'a stand-in agent that stops at once' >&2\n"
    . "exit 1\n";
close $fh;
chmod 0755, "$fake/airlock-agent";

my $before = demo_pids();
my $out = `AIRLOCK_BUILD=$fake $top/conf/demo/run.sh --keep 2>&1`;
my $rc = $? >> 8;

isnt($rc, 0, 'a demo whose agent does not start fails');
like($out, qr/the agent did not start/, 'and says why')
    or diag(join "\n", grep { defined } (split /\n/, $out)[-20 .. -1]);
like($out, qr/^\s+nginx: configuration file \S+ test is successful$/m,
     'it got as far as nginx (its services started)');
ok(!-e '/run/airlock-demo.state', 'it is not kept up');

# what it started stops as it exits; a moment for the kills to land
my %left;
for (1 .. 50) {
    my $now = demo_pids();
    %left = map { $_ => $now->{$_} } grep { !$before->{$_} } keys %$now;
    last unless %left;
    select(undef, undef, undef, 0.1);
}
is(scalar(keys %left), 0, 'nothing it started is left running')
    or diag(join "\n", map { "$_: $left{$_}" } sort keys %left);

# on a failure here, what the old demo left
kill 'KILL', keys %left if %left;
system("$top/conf/demo/run.sh --down >/dev/null 2>&1")
    if -s '/run/airlock-demo.state';

done_testing();
