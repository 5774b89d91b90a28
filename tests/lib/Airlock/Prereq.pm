package Airlock::Prereq;

# A test whose prerequisite is absent: skipped on a developer's machine,
# failed when CI is set (there a missing prerequisite is a missing install
# step in auto/deps, not a reason to pass).
#
#   use Airlock::Prereq qw(absent need_cmd need_demo);
#   absent("redis-server not found") unless ...;
#   need_cmd(qw(node npm));
#   need_demo($top, $build);    # what conf/demo/run.sh needs
#
# Call them before the test's plan.

use strict;
use warnings;

use Exporter qw(import);
use Test::More ();

our @EXPORT_OK = qw(absent need_cmd need_demo);


sub absent {
    my ($why) = @_;

    if ($ENV{CI}) {
        Test::More::plan(tests => 1);
        Test::More::fail("prerequisite missing under CI: $why");
        exit 1;
    }

    Test::More::plan(skip_all => $why);
}


sub need_cmd {
    for my $cmd (@_) {
        next if grep { -x "$_/$cmd" } split /:/, ($ENV{PATH} // '');
        absent("$cmd not found (auto/deps installs it)");
    }
}



# conf/demo/run.sh, as make demo runs it: root, the demo set's packages
# (which the test set includes), the build, the users it starts clients
# as, and no demo up already
sub need_demo {
    my ($top, $build) = @_;

    absent('the demo runs as root') if $> != 0;
    absent('the demo set is not installed (auto/deps demo)')
        if system("sh $top/auto/deps --check demo >/dev/null 2>&1") != 0;
    need_cmd(qw(redis-server redis-cli prometheus prometheus-node-exporter
                prometheus-alertmanager runuser python3 curl));
    absent("not built: $build/airlock-agent")
        unless -x "$build/airlock-agent";
    for my $u (qw(airlock-agent airlock-worker nobody)) {
        absent("user $u missing (auto/deps demo)")
            unless defined getpwnam($u);
    }
    absent('a demo is already up (make down)')
        if -s '/run/airlock-demo.state';
}


1;
