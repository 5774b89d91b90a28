#!/usr/bin/perl
# The image's airlock-alertd-egress (appliance-image/root/usr/lib/
# airlock/alertd-egress) fills the egress rule's sets of the places
# airlock-alertd may connect to, from the policy's alerts.sinks (this
# build's airlockctl sinks), in a network namespace of the test's own
# (unshare -n) holding the rule's two sets as conf/nftables-airlock.conf
# declares them, names resolved by a stand-in getent:
#
# - an address is taken as it is, a name's addresses (IPv4 and IPv6)
#   as the resolver gives them, each with the sink's port;
# - a run replaces what an earlier one put there (a sink removed from
#   the policy, an address a name no longer has, is let out no more);
# - a name that gives no address (the resolver down) takes nothing
#   away: what did resolve is added, and that is said, exit 0;
# - a policy that does not load, or a rule that is not loaded (the
#   fail-safe's), leaves the sets as they are, exit 1.
# The image's units: the timer runs it each minute (the refill's unit),
# alertd's drop-in before alertd starts and at each reload, before
# alertd's own reload (with --alertd).  Its directory (RUNTIME_DIRECTORY)
# is the test's own; what --alertd keeps there is tests/build/53.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::UnitRun qw(egress_setup in_own_netns netns_run egress_bin
                        sets_table sets sinks_policy slurp spew);

my %p = egress_setup(qw(nft unshare cut sort sh));
my ($top, $ov) = @p{qw(top ov)};
my $helper = "$ov/usr/lib/airlock/alertd-egress";

if (in_own_netns()) {
    exit(in_netns($ARGV[1]));
}

my $t = tempdir(CLEANUP => 1);

# the rule's sets, as the rule declares them
spew("$t/sets.nft", sets_table());

# this build's airlockctl, and the stand-in resolver: getent ahosts
# NAME prints $t/hosts's lines for NAME (each step's hosts, copied there)
egress_bin($t, "$t/hosts");

# the steps, each: the policy's sinks, the resolver's answers; the
# namespace runs them in turn and prints, after each, the helper's exit
# status, its words and the sets' elements
my $webhook = 'webhook: { url: "https://hooks.example.com/services/FAKE", '
              . 'hmac_secret: hook }';
my @steps = (
    ['first',
     [$webhook, 'alertmanager: { url: "http://198.51.100.9:9093" }',
      'alertmanager: { url: "https://[2001:db8::9]" }'],
     "hooks.example.com 203.0.113.5\nhooks.example.com 2001:db8::5\n"],
    ['moved', [$webhook], "hooks.example.com 203.0.113.6\n"],
    ['dns-down',
     [$webhook, 'alertmanager: { url: "http://198.51.100.10:9093" }'], ''],
    ['bad-policy', ['pager: { url: "https://x.example" }'], ''],
    ['no-rule', ['alertmanager: { url: "http://198.51.100.11" }'], ''],
);
my $i = 0;
for my $s (@steps) {
    mkdir "$t/step$i" or die $!;
    sinks_policy("$t/step$i/policy.yaml", "$t/hook.secret", @{$s->[1]});
    spew("$t/step$i/hosts", $s->[2]);
    $i++;
}
my $out = netns_run($t);
my %r;
for (split /^(?=step )/m, $out) {
    $r{$1} = $_ if /^step (\d+)/;
}

my ($rc, $sets) = got(0);
is($rc, 0, 'a run: exit 0') or diag($r{0} // $out);
is($sets, '198.51.100.9 . 9093, 203.0.113.5 . 443 | 2001:db8::5 . 443, '
          . '2001:db8::9 . 443',
   'each sink\'s address and port: an address as it is, a name\'s '
   . 'addresses, IPv4 and IPv6, the scheme\'s port when none is given');
unlike($r{0} // '', qr/FAKE|services/, 'no word of a webhook\'s path');

($rc, $sets) = got(1);
is($rc, 0, 'again, a sink removed, the name moved: exit 0')
    or diag($r{1});
is($sets, '203.0.113.6 . 443 | ',
   'the sets replaced: what the policy and the name no longer give is gone');

($rc, $sets) = got(2);
is($rc, 0, 'a name that gives no address: exit 0') or diag($r{2});
is($sets, '198.51.100.10 . 9093, 203.0.113.6 . 443 | ',
   'what resolved is added, nothing taken away');
like($r{2} // '', qr/hooks\.example\.com: no address now/, 'and that is said');

($rc, $sets) = got(3);
is($rc, 1, 'a policy that does not load: exit 1') or diag($r{3});
is($sets, '198.51.100.10 . 9093, 203.0.113.6 . 443 | ',
   'the sets left as they are');

($rc) = got(4);
is($rc, 1, 'no egress rule loaded: exit 1') or diag($r{4});
like($r{4} // '', qr/could not fill/, 'and that is said');

# the image's units around it
my $svc = slurp("$ov/etc/systemd/system/airlock-alertd-egress.service");
like($svc, qr{^ExecStart=/usr/lib/airlock/alertd-egress\ --alertd
              \ /etc/airlock/policy\.yaml$}mx,
     'airlock-alertd-egress.service runs it on the policy, as alertd\'s');
like($svc, qr/^After=.*\bnftables\.service\b/m, 'after the egress rule loads');
like($svc, qr/^CapabilityBoundingSet=CAP_NET_ADMIN$/m,
     'with CAP_NET_ADMIN alone');
my $timer = slurp("$ov/etc/systemd/system/airlock-alertd-egress.timer");
like($timer, qr/^OnUnitActiveSec=1min$/m, 'its timer: each minute');
like($timer, qr/^Unit=airlock-alertd-egress-refill\.service$/m,
     'the refill\'s run (alertd\'s sinks and the policy\'s both)');
like(slurp("$ov/etc/systemd/system/airlock-alertd-egress-refill.service"),
     qr{^ExecStart=/usr/lib/airlock/alertd-egress
        \ /etc/airlock/policy\.yaml$}mx,
     'which runs it on the policy');
like(slurp("$ov/../configure-root.sh"), qr/\bairlock-alertd-egress\.timer\b/,
     'the image enables the timer');
(my $drop = slurp("$ov/etc/systemd/system/airlock-alertd.service.d/"
                  . 'airlock-egress.conf')) =~ s/\\\n\s*/ /g;
like($drop, qr/^Wants=airlock-alertd-egress\.service$/m
            && qr/^After=airlock-alertd-egress\.service$/m,
     'alertd\'s drop-in: it runs before alertd starts');
my @reload = map { s/\s+/ /gr } $drop =~ /^ExecReload=(.*)$/mg;
is_deeply(\@reload, ['', '+/bin/sh -c \'exec /usr/bin/nsenter --target '
                     . '"$$MAINPID" --mount --setuid "$(stat -c %%u '
                     . '/proc/$$MAINPID)" --setgid "$(stat -c %%g '
                     . '/proc/$$MAINPID)" -- /usr/bin/airlock-alertd --check '
                     . '--policy /etc/airlock/policy.yaml "$$@"\' sh '
                     . '$AIRLOCK_ALERTD_KEYRING',
                     '-+/bin/systemctl start airlock-alertd-egress.service',
                     '/bin/kill -HUP $MAINPID'],
          'and at each reload, once alertd would take the policy, before '
          . 'it reads it again');
my $unit = slurp("$top/conf/airlock-alertd.service");
(my $joined = $unit) =~ s/\\\n\s*/ /g;
my @own = map { s/\s+/ /gr } $joined =~ /^ExecReload=(.*)$/mg;
is_deeply(\@own, [@reload[1, 3]],
          'the reload the drop-in keeps is the unit\'s own: the same '
          . 'check (the one the image test runs), then SIGHUP');

done_testing();


# step N: (the helper's exit status, "IPv4 elements | IPv6 elements")
sub got {
    my ($n) = @_;
    my $s = $r{$n} // '';
    my ($rc) = $s =~ /^rc (\d+)$/m;
    my ($sets) = $s =~ /^sets (.*)$/m;
    return ($rc // -1, $sets // '? | ?');
}


# in the namespace: the sets, then each step in turn
sub in_netns {
    my ($t) = @_;
    my ($n, $out, $rc);

    system('nft', '-f', "$t/sets.nft") == 0 or die "nft -f: $?";
    for ($n = 0; -d "$t/step$n"; $n++) {
        system("cp $t/step$n/hosts $t/hosts") == 0 or die;
        # the last step: the rule flushed (the fail-safe's instead)
        system('nft flush ruleset') if !-d "$t/step" . ($n + 1);
        $out = `RUNTIME_DIRECTORY=$t/run PATH=$t/bin:\$PATH \\
                sh $helper $t/step$n/policy.yaml 2>&1`;
        $rc = $? >> 8;
        print "step $n\n$out", "rc $rc\n", 'sets ', sets(), "\n";
    }
    return 0;
}
