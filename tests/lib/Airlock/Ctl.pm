package Airlock::Ctl;

# What airlockctl's tests (tests/cli) start from: the build under test,
# its airlockctl (absent() when it is not built: failed under CI), a
# scratch directory, files written there, and airlockctl run.
#
#   use Airlock::Ctl qw(ctl_setup write_file run_ctl);
#   my ($top, $build, $ctl, $dir) = ctl_setup();    # before the plan
#   my $path = write_file('policy.yaml', $text);    # in $dir
#   my ($rc, $out) = run_ctl('check', $path);       # stdout and stderr

use strict;
use warnings;

use Exporter qw(import);
use File::Temp qw(tempdir);
use FindBin;

use Airlock::Prereq qw(absent);

our @EXPORT_OK = qw(ctl_setup write_file run_ctl);

my ($ctl, $dir);


sub ctl_setup {
    my $top = "$FindBin::Bin/../..";
    my $build = $ENV{AIRLOCK_BUILD} // "$top/build";

    $ctl = "$build/airlockctl";
    $dir = tempdir(CLEANUP => 1);

    absent("$ctl not built") unless -x $ctl;

    return ($top, $build, $ctl, $dir);
}


# name in the scratch directory, holding text: its path
sub write_file {
    my ($name, $text) = @_;

    open my $fh, '>', "$dir/$name" or die "$dir/$name: $!";
    print $fh $text;
    close $fh;

    return "$dir/$name";
}


# airlockctl with these arguments, no input: (exit code, stdout and stderr)
sub run_ctl {
    my $cmd = join ' ', map { quotemeta } $ctl, @_;
    my $out = `$cmd 2>&1 </dev/null`;

    return ($? >> 8, $out);
}

1;
