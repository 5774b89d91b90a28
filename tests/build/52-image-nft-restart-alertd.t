#!/usr/bin/perl
# A start or reload of nftables.service (systemctl restart nftables:
# the ruleset flushed, /etc/nftables.conf loaded again; systemctl reload
# nftables: nft -f of the same file, whose first line flushes the
# ruleset) empties alertd's sets (alertd_sinks4, alertd_sinks6): alertd's
# user was let out nowhere until the timer's next run, up to a minute.
# The image's drop-in nftables.service.d/airlock-alertd-egress.conf
# runs airlock-alertd-egress-refill.service after each (ExecStartPost=,
# ExecReload=), without waiting for it (--no-block: it is ordered after
# nftables, whose job would wait for it).
#
# nftables.service as Debian ships it and the image's drop-ins, and the
# image's units, run as systemd runs their jobs (tests/lib/Airlock/
# UnitRun.pm: their commands in order, a stand-in systemctl) in a
# network namespace of the test's own (unshare -n) whose ruleset is the
# rule's two sets (conf/nftables-airlock.conf), names resolved by a
# stand-in getent: the boot's start, alertd's start, a restart, a
# reload, and a start that fails (the fail-safe rule, no refill).  Then
# systemd-analyze verify reads the units.  Whether systemd runs them so
# in the booted image: make image-test.

use strict;
use warnings;
use FindBin;
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::UnitRun qw(egress_setup need_nftables_unit netns_exec
                        egress_bin sets_table sets sinks_policy spew);

my %p = egress_setup(qw(nft unshare cut sort sh flock paste
                        systemd-analyze));
my ($etc, $lib) = @p{qw(etc lib)};
need_nftables_unit();
netns_exec();

my $t = tempdir(CLEANUP => 1);

# the rule: flushed, then the two sets as the rule declares them
my $rules = "flush ruleset\n\n" . sets_table();
spew("$t/rules.nft", $rules);

my $u = Airlock::UnitRun->image($t);
egress_bin($t, "$t/hosts");
spew("$t/hosts", "hooks.example.com 203.0.113.5\n");
sinks_policy("$t/policy.yaml", "$t/hook.secret",
             'webhook: { url: "https://hooks.example.com/services/FAKE", '
             . 'hmac_secret: hook }',
             'alertmanager: { url: "http://198.51.100.9:9093" }',
             'alertmanager: { url: "https://[2001:db8::9]" }');
my $all = '198.51.100.9 . 9093, 203.0.113.5 . 443 | 2001:db8::9 . 443';
my $refill = 'restart --no-block airlock-alertd-egress-refill.service';
my ($rc, @calls, $out);

# the boot: the rule, then (before alertd's start) the sets
$rc = $u->job('start', 'nftables.service');
$out = $u->output;
is($rc, 0, 'nftables.service starts') or diag($out);
is(sets(), $all, 'the sets are filled once the rule is loaded')
    or diag($out);
@calls = $u->calls;
is("@calls", $refill, 'by the refill, not waited for');

$rc = $u->job('start', 'airlock-alertd-egress.service');
$out = $u->output;
is($rc, 0, 'alertd\'s start: its run') or diag($out);
is(sets(), $all, 'the sets hold the sinks');

# systemctl restart nftables
unlink "$t/systemctl.log";
$rc = $u->job('restart', 'nftables.service');
$out = $u->output;
is($rc, 0, 'nftables.service restarts') or diag($out);
is(sets(), $all, 'the sets are filled again at once after a restart')
    or diag($out);
@calls = $u->calls;
is("@calls", $refill, 'by the refill, not waited for');

# systemctl reload nftables
unlink "$t/systemctl.log";
$rc = $u->job('reload', 'nftables.service');
$out = $u->output;
is($rc, 0, 'nftables.service reloads') or diag($out);
is(sets(), $all, 'and after a reload') or diag($out);
@calls = $u->calls;
is("@calls", $refill, 'by the refill, not waited for');

# a start that fails: the fail-safe rule, which has no sets to fill
unlink "$t/systemctl.log";
spew("$t/rules.nft", "$rules\ntable inet broken { chain c { nonsense; } }\n");
$rc = $u->job('restart', 'nftables.service');
$out = $u->output;
isnt($rc, 0, 'a rule that does not load: the start fails');
like(`nft list tables`, qr/^table inet airlock-failsafe$/m,
     'the fail-safe rule is loaded') or diag($out);
@calls = $u->calls;
is("@calls", '', 'and no refill is asked for');
spew("$t/rules.nft", $rules);

# the units as systemd reads them
{
    my $v = tempdir(CLEANUP => 1);
    copy("$lib/nftables.service", "$v/nftables.service") or die $!;
    mkdir "$v/nftables.service.d" or die $!;
    for my $f (glob "$etc/nftables.service.d/*.conf") {
        copy($f, "$v/nftables.service.d/") or die $!;
    }
    for my $f (qw(airlock-alertd-egress.service
                  airlock-alertd-egress-refill.service
                  airlock-alertd-egress.timer)) {
        copy("$etc/$f", "$v/$f") if -f "$etc/$f";
    }
    local $ENV{SYSTEMD_UNIT_PATH} = "$v:";
    my @bad = grep { !m{Command /usr/lib/airlock/\S+ is not executable} }
              grep { /\S/ }
              split /\n/, `systemd-analyze verify $v/nftables.service \\
                               $v/airlock-alertd-egress-refill.service \\
                               $v/airlock-alertd-egress.timer 2>&1`;
    ok(!@bad, 'systemd-analyze verify nftables.service with the drop-ins, '
       . 'the refill and its timer') or diag(join "\n", @bad);
}

done_testing();
