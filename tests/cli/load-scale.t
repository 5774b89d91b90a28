#!/usr/bin/perl
# Policy load stays linear in the number of routes, and a route stays under
# 1 KB of worker memory.  Nothing here is timed: the work is counted in
# instructions by callgrind (the same count on a busy machine as on an idle
# one), and memory is an nginx worker's resident set.
#
# Work: 1,000 and 10,000 routes.  A load that is linear costs about 10
# times more instructions for 10 times the routes (less, with the fixed
# costs); one step that compares every route with every other (the route
# name check once did) makes it 18 times or more.  The limit, 13, leaves
# room for an n log n step.  Both airlockctl check and nginx -t are
# counted: the module does work of its own for every route.
#
# The same for a policy of {param} routes beside many literal siblings
# (/{p}/yN next to /tN/x), whose overlap check once visited every sibling
# for every {param} route.
#
# Memory: one worker's VmRSS with 20,000 routes against one with 10
# routes, per added route.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use Test::More;
use Airlock::Load;

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $dir = tempdir('airlock-load-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $dir;

sub prerequisite {
    my ($why) = @_;
    fail("prerequisite: $why") if $ENV{CI};
    plan skip_all => $why unless $ENV{CI};
    done_testing;
    exit;
}

my $san = 0;
if (open my $fh, '<', "$build/config.mk") {
    while (<$fh>) { $san = $1 if /^SAN\s*=\s*(\d)/ }
}

# ASan's shadow memory makes both figures meaningless, and it does not run
# under valgrind; the plain build runs this test
plan skip_all => 'sanitizer build: counted in the plain build' if $san;

prerequisite("$build/airlockctl not built") unless -x "$build/airlockctl";
prerequisite('valgrind is not installed (auto/deps installs it)')
    unless system('valgrind --version >/dev/null 2>&1') == 0;

my $l = Airlock::Load->new($dir);
my %p = map { $_ => $l->policy($_) } (10, 1000, 10000, 20000);

# instructions a command runs, as callgrind counts them
sub instructions {
    my (@argv) = @_;
    my $cmd = join ' ', 'valgrind', '--tool=callgrind',
        '--callgrind-out-file=/dev/null', map { quotemeta } @argv;
    my $out = `$cmd 2>&1`;
    $? == 0 or return (undef, $out);
    $out =~ /Collected : (\d+)/ or return (undef, $out);
    return ($1, $out);
}

for my $what (qw(check nginx-t)) {
    my %ir;

    SKIP: {
        if ($what eq 'nginx-t' && !-f $l->module) {
            fail('module not built') if $ENV{CI};
            skip 'module not built', 1;
        }

        for my $n (1000, 10000) {
            my @argv = $what eq 'check'
                ? ($l->ctl, 'check', $p{$n})
                : $l->nginx_t_argv($p{$n});
            my ($ir, $out) = instructions(@argv);
            defined $ir or diag($out);
            $ir{$n} = $ir;
        }

        my $ratio = defined $ir{1000} && defined $ir{10000} && $ir{1000}
            ? $ir{10000} / $ir{1000} : 1e9;

        ok($ratio < 13, sprintf("%s: 10x the routes cost %.1fx the "
                                . "instructions (%s and %s)", $what, $ratio,
                                $ir{1000} // '?', $ir{10000} // '?'));
    }
}

# {param} routes beside many literal siblings (/{p}/yN next to /tN/x)
{
    my %ir;
    for my $n (500, 5000) {
        my ($ir, $out) = instructions($l->ctl, 'check',
                                      $l->policy_siblings($n));
        defined $ir or diag($out);
        $ir{$n} = $ir;
    }
    my $ratio = defined $ir{500} && defined $ir{5000} && $ir{500}
        ? $ir{5000} / $ir{500} : 1e9;
    ok($ratio < 13, sprintf("check, {param} routes beside literal siblings: "
                            . "10x the routes cost %.1fx the instructions",
                            $ratio));
}

SKIP: {
    if (!-f $l->module) {
        fail('module not built') if $ENV{CI};
        skip 'module not built', 1;
    }

    my ($small, $large) = eval {
        ($l->worker_rss($p{10}), $l->worker_rss($p{20000}));
    };

    if (!defined $large) {
        fail("nginx serves 20,000 routes: $@");

    } else {
        my $per = ($large - $small) * 1024 / (20000 - 10);

        ok($per <= 1024, sprintf("a route costs %.0f bytes of worker "
                                 . "memory (%d kB with 10 routes, %d kB "
                                 . "with 20,000)", $per, $small, $large));
    }
}

done_testing;
