#!/usr/bin/perl
# alertd reads the policy at its start and at each reload, not when the
# file changes; airlockctl edit reloads nginx, not alertd.  The egress
# rule's sets of the places alertd's user may connect to were filled,
# each minute, from the policy on disk: after an edit of alerts.sinks
# not reloaded yet, alertd was let out to the new sinks, which it does
# not send to, and no longer to the ones it does (its alerts waited in
# the outbox).  The image's airlock-alertd-egress.service (--alertd:
# alertd's start and reload, before alertd reads the policy) keeps the
# sinks alertd reads, root's, under /run; the timer's unit,
# airlock-alertd-egress-refill.service (also after each start or reload
# of nftables), fills the sets with those and the policy's on disk both.
#
# The image's units run as systemd runs their jobs (tests/lib/Airlock/
# UnitRun.pm: their commands in order, a stand-in systemctl; alertd's
# reload is its drop-in's, the SIGHUP left out) in a network namespace of
# the test's own (unshare -n) whose ruleset is the rule's two sets
# (conf/nftables-airlock.conf):
#
# - alertd started, an edit not reloaded: the timer's run lets alertd
#   out to its sinks and the edit's both, and says which it keeps;
# - so does a restart of nftables;
# - alertd reloaded: its drop-in's run gives the edit's sinks alone, and
#   so does the timer's next run;
# - a policy on disk that does not load: the timer's run gives alertd's
#   sinks alone (an edit's that alertd never read are gone), exit 1;
#   alertd's start with it changes nothing, exit 1;
# - what is kept is root's alone (0700, 0600; alertd's user may not name
#   its own way out), in the directory both units share.

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

# the policy, its sinks these
sub policy {
    sinks_policy("$t/policy.yaml", "$t/hook.secret", @_);
}
my $hook = 'webhook: { url: "https://hooks.example.com/services/FAKE", '
           . 'hmac_secret: hook }';
my $a = 'alertmanager: { url: "http://198.51.100.1:9093" }';
my $b = 'alertmanager: { url: "http://[2001:db8::2]:9093" }';
my $c = 'alertmanager: { url: "http://198.51.100.3:9093" }';

# the timer's unit
my $timer = Airlock::UnitOrder::unit_merged([$etc],
                                            'airlock-alertd-egress.timer');
my ($tick) = @{$timer->{Unit} || ['airlock-alertd-egress.service']};
my ($rc, $out);

$rc = $u->job('start', 'nftables.service');
$out = $u->output;
is($rc, 0, 'the rule is loaded') or diag($out);

# alertd starts with the hook and A
policy($hook, $a);
$rc = $u->job('start', 'airlock-alertd-egress.service');
$out = $u->output;
is($rc, 0, 'alertd\'s start: its run') or diag($out);
is(sets(), '198.51.100.1 . 9093, 203.0.113.5 . 443 | ',
   'alertd\'s sinks') or diag($out);

# an edit: A replaced by B, alertd not reloaded
policy($hook, $b);
$rc = $u->job('start', $tick);
$out = $u->output;
is($rc, 0, 'an edit alertd has not read: the timer\'s run') or diag($out);
is(sets(), '198.51.100.1 . 9093, 203.0.113.5 . 443 | 2001:db8::2 . 9093',
   'alertd\'s sinks, which it still sends to, and the edit\'s')
    or diag($out);
like($out, qr/alertd\ still\ sends\ to\ alertmanager\ 198\.51\.100\.1:9093,
              .*\(systemctl\ reload\ airlock-alertd\)/x,
     'what is kept, and why, is said');
unlike($out, qr/FAKE|services/, 'no word of a webhook\'s path');

$rc = $u->job('restart', 'nftables.service');
$out = $u->output;
is($rc, 0, 'nftables restarted') or diag($out);
is(sets(), '198.51.100.1 . 9093, 203.0.113.5 . 443 | 2001:db8::2 . 9093',
   'the same after a restart of nftables') or diag($out);

# alertd reloaded (its drop-in's reload: the run, then the SIGHUP)
$rc = $u->job('reload', 'airlock-alertd.service');
$out = $u->output;
is($rc, 0, 'alertd reloaded') or diag($out);
is(sets(), '203.0.113.5 . 443 | 2001:db8::2 . 9093',
   'the edit\'s sinks alone: A is let out no more') or diag($out);
$rc = $u->job('start', $tick);
$out = $u->output;
is($rc, 0, 'the timer\'s next run') or diag($out);
is(sets(), '203.0.113.5 . 443 | 2001:db8::2 . 9093', 'the same');
unlike($out, qr/still sends/, 'nothing kept beyond the policy');

# another edit, C for B, not reloaded; then a broken one
policy($hook, $c);
$rc = $u->job('start', $tick);
$out = $u->output;
is(sets(), '198.51.100.3 . 9093, 203.0.113.5 . 443 | 2001:db8::2 . 9093',
   'an edit not reloaded again: both') or diag($out);
spew("$t/policy.yaml", slurp("$t/policy.yaml") . "  bogus: [\n");
$rc = $u->job('start', $tick);
$out = $u->output;
is($rc, 1, 'a policy on disk that does not load: exit 1') or diag($out);
is(sets(), '203.0.113.5 . 443 | 2001:db8::2 . 9093',
   'alertd\'s sinks alone: the edits it never read are gone')
    or diag($out);
like($out, qr/no sinks read; alertd's own/, 'and that is said');
$rc = $u->job('start', 'airlock-alertd-egress.service');
$out = $u->output;
is($rc, 1, 'alertd\'s start with it: exit 1') or diag($out);
is(sets(), '203.0.113.5 . 443 | 2001:db8::2 . 9093',
   'the sets left as they are');
policy($hook, $c);
$rc = $u->job('start', $tick);
$out = $u->output;
is(sets(), '198.51.100.3 . 9093, 203.0.113.5 . 443 | 2001:db8::2 . 9093',
   'and what alertd was started with kept') or diag($out);

# where it is kept: root's alone, in the directory both units share
my %rd;
for my $n ('airlock-alertd-egress.service', $tick) {
    my $d = Airlock::UnitOrder::unit_merged([$etc], $n);
    $rd{$n} = join(' ', @{$d->{RuntimeDirectory} || []},
                   @{$d->{RuntimeDirectoryMode} || []},
                   @{$d->{RuntimeDirectoryPreserve} || []});
}
is($rd{$tick}, $rd{'airlock-alertd-egress.service'},
   'the timer\'s unit and alertd\'s share their directory under /run');
is($rd{$tick}, 'airlock-alertd-egress 0700 yes',
   'root\'s alone, kept when the oneshots stop');
my ($kept) = glob("$t/run/*/alertd-sinks");
ok(defined $kept && ((stat $kept)[2] & 07777) == 0600,
   'alertd\'s sinks kept in a file of mode 0600');

done_testing();
