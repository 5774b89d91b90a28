package Airlock::Ctl;

# What airlockctl's tests (tests/cli) start from: the build under test,
# its airlockctl (absent() when it is not built: failed under CI), a
# scratch directory, files written there, and airlockctl run.
#
#   use Airlock::Ctl qw(ctl_setup write_file run_ctl slurp editor
#                       one_route_policy);
#   my ($top, $build, $ctl, $dir) = ctl_setup();    # before the plan
#   my $path = write_file('policy.yaml', $text);    # in $dir
#   my ($rc, $out) = run_ctl('check', $path);       # stdout and stderr
#   my $text = slurp($path);                        # undef: unreadable
#   my $ed = editor('ed.sh', $sh, set_e => 1);      # an EDITOR script
#   my $yaml = one_route_policy();                  # route "one"

use strict;
use warnings;

use Exporter qw(import);
use File::Temp qw(tempdir);
use FindBin;

use Airlock::Prereq qw(absent);

our @EXPORT_OK = qw(ctl_setup write_file run_ctl slurp editor
                    one_route_policy);

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


# the whole of a file, or undef when it cannot be read
sub slurp {
    my ($path) = @_;
    open my $fh, '<', $path or return undef;
    local $/;
    return <$fh>;
}


# an executable /bin/sh script in the scratch directory (set_e: it stops
# at the first failing command): its path, for EDITOR or VISUAL
sub editor {
    my ($name, $script, %opt) = @_;
    my $path = write_file($name, "#!/bin/sh\n" . ($opt{set_e} ? "set -e\n" : '')
                                 . $script);
    chmod 0755, $path or die "$path: $!";
    return $path;
}


# a policy of one route, "one" (GET /one for the client agent, uid 1000),
# that airlockctl check takes: what the edit and rollback tests change
sub one_route_policy {
    return <<'Y';
version: 1
clients:
  agent: { unix_uid: 1000 }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: one
    clients: [agent]
    match: { method: GET, path: /one }
    upstream: up
    to: /one
alerts:
  deny: { threshold: 3, window: 60s }
Y
}

1;
