#!/usr/bin/perl
# Policy load benchmark: what 10,000 and 100,000 routes cost to load and to
# keep.  For each size: the wall time of `airlockctl check` and of
# `nginx -t` (best of --rounds runs, each a fresh process), and the
# resident memory of one nginx worker serving the policy, per route, over
# a 10-route policy's worker.  Targets: 100,000 routes load in under 2 s
# and cost at most 1 KB of worker memory each.
#
#   perl tests/bench/load.pl [--rounds N] [--routes N,N,...] [--markdown]
#
# The policies are generated (tests/lib/Airlock/Load.pm): "GET /sN/{id}"
# with a param pattern, a to template and an injected credential per
# route.  Times are wall clock on a shared machine; the test that guards
# linearity (tests/cli/load-scale.t) counts instructions instead.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use Getopt::Long;
use Time::HiRes qw(time);
use Airlock::Load;

my $rounds = 3;
my $routes = '10000,100000';
my $markdown = 0;
GetOptions('rounds=i' => \$rounds, 'routes=s' => \$routes,
           'markdown' => \$markdown)
    or die "bad options\n";

my $dir = tempdir('airlock-bench-load-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $dir;

my $l = Airlock::Load->new($dir);
-f $l->module or die "module not built: " . $l->module . "\n";

sub best {
    my (@argv) = @_;
    my $best;
    for (1 .. $rounds) {
        my $t0 = time;
        my $cmd = join " ", map { quotemeta } @argv;
        system("$cmd >/dev/null") == 0 or die "failed: @argv\n";
        my $dt = time - $t0;
        $best = $dt if !defined $best || $dt < $best;
    }
    return $best;
}

my $base_policy = $l->policy(10);
my $base = $l->worker_rss($base_policy);

my @rows;
for my $n (split /,/, $routes) {
    my $policy = $l->policy($n);
    my $size = -s $policy;
    my $check = best($l->ctl, 'check', $policy);
    my $nt = best($l->nginx_t_argv($policy));
    my $rss = $l->worker_rss($policy);
    my $per = ($rss - $base) * 1024 / ($n - 10);
    push @rows, [$n, $size, $check, $nt, $rss, $per];
    printf STDERR "%d routes: check %.2f s, nginx -t %.2f s, worker %d kB\n",
        $n, $check, $nt, $rss;
}

my $fmt = $markdown ? "| %s | %s | %s | %s | %s | %s |\n"
                    : "%-8s %10s %10s %10s %12s %10s\n";

print "\n";
printf $fmt, 'routes', 'policy', 'check s', 'nginx -t s', 'worker RSS',
    'B/route';
print "| ---: | ---: | ---: | ---: | ---: | ---: |\n" if $markdown;
printf $fmt, 10, '', '', '', "$base kB", '';
for my $r (@rows) {
    printf $fmt, $r->[0], sprintf('%.1f MB', $r->[1] / 1e6),
        sprintf('%.2f', $r->[2]), sprintf('%.2f', $r->[3]),
        sprintf('%d kB', $r->[4]), sprintf('%.0f', $r->[5]);
}

my ($last) = grep { $_->[0] == 100000 } @rows;
if ($last) {
    my $ok = $last->[2] < 2 && $last->[3] < 2 && $last->[5] <= 1024;
    printf "target: 100,000 routes load in under 2 s (check %.2f s, "
         . "nginx -t %.2f s) and cost at most 1024 B each (%.0f B): %s\n",
        $last->[2], $last->[3], $last->[5], $ok ? 'met' : 'NOT met';
}
