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

# best wall time and best CPU time (user + system) of --rounds runs
sub best {
    my (@argv) = @_;
    my ($best, $cpu);
    my $cmd = join ' ', map { quotemeta } @argv;
    for (1 .. $rounds) {
        my @c0 = times;
        my $t0 = time;
        system("$cmd >/dev/null") == 0 or die "failed: @argv\n";
        my $dt = time - $t0;
        my @c1 = times;
        my $dc = ($c1[2] + $c1[3]) - ($c0[2] + $c0[3]);
        $best = $dt if !defined $best || $dt < $best;
        $cpu = $dc if !defined $cpu || $dc < $cpu;
    }
    return ($best, $cpu);
}

my $base_policy = $l->policy(10);
my $base = $l->worker_rss($base_policy);

my @rows;
for my $n (split /,/, $routes) {
    my $policy = $l->policy($n);
    my $size = -s $policy;
    my ($check, $check_cpu) = best($l->ctl, 'check', $policy);
    my ($nt, $nt_cpu) = best($l->nginx_t_argv($policy));
    my $rss = $l->worker_rss($policy);
    my $per = ($rss - $base) * 1024 / ($n - 10);
    push @rows, [$n, $size, $check, $check_cpu, $nt, $nt_cpu, $rss, $per];
    printf STDERR "%d routes: check %.2f s (cpu %.2f), nginx -t %.2f s "
        . "(cpu %.2f), worker %d kB\n", $n, $check, $check_cpu, $nt,
        $nt_cpu, $rss;
}

my $fmt = $markdown ? "| %s | %s | %s | %s | %s | %s |\n"
                    : "%-8s %10s %16s %16s %12s %8s\n";

print "\n";
printf $fmt, 'routes', 'policy', 'check s (cpu)', 'nginx -t s (cpu)',
    'worker RSS', 'B/route';
print "| ---: | ---: | ---: | ---: | ---: | ---: |\n" if $markdown;
printf $fmt, 10, '', '', '', "$base kB", '';
for my $r (@rows) {
    printf $fmt, $r->[0], sprintf('%.1f MB', $r->[1] / 1e6),
        sprintf('%.2f (%.2f)', $r->[2], $r->[3]),
        sprintf('%.2f (%.2f)', $r->[4], $r->[5]),
        sprintf('%d kB', $r->[6]), sprintf('%.0f', $r->[7]);
}

my ($last) = grep { $_->[0] == 100000 } @rows;
if ($last) {
    my $ok = $last->[2] < 2 && $last->[4] < 2 && $last->[7] <= 1024;
    printf "target: 100,000 routes load in under 2 s (check %.2f s, "
         . "nginx -t %.2f s) and cost at most 1024 B each (%.0f B): %s\n",
        $last->[2], $last->[4], $last->[7], $ok ? 'met' : 'NOT met';
}
