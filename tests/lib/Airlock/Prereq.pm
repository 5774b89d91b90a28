package Airlock::Prereq;

# A test whose prerequisite is absent: skipped on a developer's machine,
# failed when CI is set (there a missing prerequisite is a missing install
# step in auto/deps, not a reason to pass).
#
#   use Airlock::Prereq qw(absent need_cmd);
#   absent("redis-server not found") unless ...;
#   need_cmd(qw(node npm));
#
# Call them before the test's plan.

use strict;
use warnings;

use Exporter qw(import);
use Test::More ();

our @EXPORT_OK = qw(absent need_cmd);


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


1;
