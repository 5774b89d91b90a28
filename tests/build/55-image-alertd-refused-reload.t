#!/usr/bin/perl
# A reload alertd refuses (a policy it would not take: a webhook's
# secret missing, sealed without the keyring, of a mode open to others)
# leaves alertd with its running policy and its sinks.  The image's
# reload of alertd ran airlock-alertd-egress.service first, which kept
# the new policy's sinks as alertd's (root's record under /run) and put
# them alone in the egress rule's sets: alertd was let out to sinks it
# does not send to and no longer to the ones it does, and each refill
# after (the timer's, a restart of nftables) did the same, until a
# reload that succeeded.  The drop-in's reload now reads the policy as
# alertd would first (airlock-alertd --check, in alertd's sandbox): a
# policy alertd would refuse fails the reload there, before the record
# is written and before the SIGHUP.
#
# The image's units run as systemd runs their jobs (tests/lib/Airlock/
# UnitRun.pm: their commands in order, a stand-in systemctl, this
# build's airlock-alertd for the check; the SIGHUP left out) in a
# network namespace of the test's own (unshare -n) whose ruleset is the
# rule's two sets (conf/nftables-airlock.conf):
#
# - alertd started with the hook and A;
# - an edit, B for A, whose webhook's secret is a file not written yet:
#   the reload fails, and says why; the sets and the record are as they
#   were;
# - the timer's run and a restart of nftables keep A (alertd still
#   sends to it) beside the edit's B;
# - the secret written, the reload succeeds: the edit's sinks alone.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::UnitRun qw(egress_setup need_nftables_unit netns_exec
                        egress_bin sets_table sets sinks_policy slurp spew);
use Airlock::UnitOrder ();

my %p = egress_setup(qw(nft unshare cut sort sh flock paste));
my $etc = $p{etc};
need_nftables_unit();
netns_exec();

my $t = tempdir(CLEANUP => 1);

spew("$t/rules.nft", "flush ruleset\n\n" . sets_table());

my $u = Airlock::UnitRun->image($t, ['/bin/kill' => 'true']);
egress_bin($t, "$t/hosts");
spew("$t/hosts", "hooks.example.com 203.0.113.5\n");

my $hook = 'webhook: { url: "https://hooks.example.com/services/FAKE", '
           . 'hmac_secret: hook }';
my $a = 'alertmanager: { url: "http://198.51.100.1:9093" }';
my $b = 'alertmanager: { url: "http://[2001:db8::2]:9093" }';

my $timer = Airlock::UnitOrder::unit_merged([$etc],
                                            'airlock-alertd-egress.timer');
my ($tick) = @{$timer->{Unit} || ['airlock-alertd-egress.service']};
my $started = '198.51.100.1 . 9093, 203.0.113.5 . 443 | ';
my $both = '198.51.100.1 . 9093, 203.0.113.5 . 443 | 2001:db8::2 . 9093';
my $edit = '203.0.113.5 . 443 | 2001:db8::2 . 9093';
my ($rc, $out, $kept);

$rc = $u->job('start', 'nftables.service');
$out = $u->output;
is($rc, 0, 'the rule is loaded') or diag($out);

# alertd starts with the hook and A
sinks_policy("$t/policy.yaml", "$t/hook.secret", $hook, $a);
$rc = $u->job('start', 'airlock-alertd-egress.service');
$out = $u->output;
is($rc, 0, 'alertd\'s start: its run') or diag($out);
is(sets(), $started, 'alertd\'s sinks') or diag($out);
($kept) = glob("$t/run/*/alertd-sinks");
ok(defined $kept, 'alertd\'s sinks are kept') or diag($out);
$kept //= "$t/run/none";
my $record = slurp($kept);
like($record, qr/^alertmanager 198\.51\.100\.1 9093$/m,
     'A among them');

# an edit: B for A, the webhook's secret a file not written yet
sinks_policy("$t/policy.yaml", "$t/hook.secret", $hook, $b);
spew("$t/policy.yaml",
     slurp("$t/policy.yaml") =~ s{\Q$t\E/hook\.secret}{$t/hook-new.secret}r);
is(system("$p{build}/airlockctl sinks $t/policy.yaml >/dev/null 2>&1"), 0,
   'the edit\'s sinks read as the policy\'s');
$rc = $u->job('reload', 'airlock-alertd.service');
$out = $u->output;
isnt($rc, 0, 'a reload with a policy alertd would refuse fails')
    or diag($out);
like($out, qr/hook-new\.secret/, 'and says why') or diag($out);
is(sets(), $started, 'the sets as they were: A, alertd\'s, kept')
    or diag($out);
is(slurp($kept), $record, 'alertd\'s sinks kept as they were');

# the refills after it: alertd's sinks and the edit's both
$rc = $u->job('start', $tick);
$out = $u->output;
is($rc, 0, 'the timer\'s run') or diag($out);
is(sets(), $both, 'alertd\'s sinks, which it still sends to, and the '
                  . 'edit\'s') or diag($out);
like($out, qr/alertd still sends to alertmanager 198\.51\.100\.1:9093/,
     'what is kept is said') or diag($out);
$rc = $u->job('restart', 'nftables.service');
$out = $u->output;
is($rc, 0, 'nftables restarted') or diag($out);
is(sets(), $both, 'the same after a restart of nftables') or diag($out);

# the secret written: the reload succeeds, the edit's sinks alone
spew("$t/hook-new.secret", "FAKE-hmac-secret-new\n");
chmod 0600, "$t/hook-new.secret";
$rc = $u->job('reload', 'airlock-alertd.service');
$out = $u->output;
is($rc, 0, 'the secret written: the reload succeeds') or diag($out);
is(sets(), $edit, 'the edit\'s sinks alone') or diag($out);
unlike(slurp($kept), qr/198\.51\.100\.1/, 'A is alertd\'s no more');
$rc = $u->job('start', $tick);
$out = $u->output;
is(sets(), $edit, 'and the timer\'s next run gives the same') or diag($out);
unlike($out, qr/still sends/, 'nothing kept beyond the policy');

done_testing();
