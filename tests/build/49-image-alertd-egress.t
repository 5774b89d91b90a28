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
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $ov = "$top/appliance-image/root";
my $helper = "$ov/usr/lib/airlock/alertd-egress";

if (@ARGV && $ARGV[0] eq '--in-netns') {
    exit(in_netns($ARGV[1]));
}

absent('a network namespace of its own needs root') if $> != 0;
need_cmd(qw(nft unshare cut sort sh));
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
absent("$build/airlockctl not built") unless -x "$build/airlockctl";

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return '';
    local $/;
    return <$fh>;
}

my $t = tempdir(CLEANUP => 1);

# the rule's sets, as the rule declares them
my $rules = slurp("$top/conf/nftables-airlock.conf");
my @sets = $rules =~ /^(\s*set alertd_sinks[46] \{.*?\})/msg;
is(scalar @sets, 2, 'the egress rule declares alertd\'s two sets');
open my $fh, '>', "$t/sets.nft" or die $!;
print $fh "table inet airlock {\n", join("\n", @sets), "\n}\n";
close $fh;

# the stand-in resolver: getent ahosts NAME prints $t/hosts's lines
# for NAME as glibc's getent does (address, padded, type, name)
mkdir "$t/bin" or die $!;
symlink("$build/airlockctl", "$t/bin/airlockctl") or die $!;
open $fh, '>', "$t/bin/getent" or die $!;
print $fh <<"EOT";
#!/bin/sh
[ "\$1" = ahosts ] || exit 2
found=2
while read -r name addr; do
    [ "\$name" = "\$2" ] || continue
    for ty in STREAM DGRAM RAW; do
        printf '%-15s %-6s %s\\n' "\$addr" "\$ty" "\$2"
    done
    found=0
done < $t/hosts
exit \$found
EOT
close $fh;
chmod 0755, "$t/bin/getent";

sub policy {
    my ($sinks) = @_;
    open my $p, '>', "$t/policy.yaml" or die $!;
    print $p <<"EOT";
version: 1
secrets:
  hook: { file: "$t/hook.secret" }
clients:
  agent: { unix_uid: 5000 }
upstreams:
  api: { url: "https://api.example.com" }
routes:
  - name: ping
    clients: [agent]
    match: { method: GET, path: /ping }
    upstream: api
    to: /ping
alerts:
  deny: { threshold: 3, window: 60s }
  sinks:
$sinks
EOT
    close $p;
}

open $fh, '>', "$t/hook.secret" or die $!;
print $fh "FAKE-hmac-secret\n";
close $fh;

# the steps, each: the policy's sinks, the resolver's answers; the
# namespace runs them in turn and prints, after each, the helper's exit
# status, its words and the sets' elements
my @steps = (
    ['first',
     qq(    - webhook: { url: "https://hooks.example.com/services/FAKE", hmac_secret: hook }\n)
     . qq(    - alertmanager: { url: "http://198.51.100.9:9093" }\n)
     . qq(    - alertmanager: { url: "https://[2001:db8::9]" }\n),
     "hooks.example.com 203.0.113.5\nhooks.example.com 2001:db8::5\n"],
    ['moved',
     qq(    - webhook: { url: "https://hooks.example.com/services/FAKE", hmac_secret: hook }\n),
     "hooks.example.com 203.0.113.6\n"],
    ['dns-down',
     qq(    - webhook: { url: "https://hooks.example.com/services/FAKE", hmac_secret: hook }\n)
     . qq(    - alertmanager: { url: "http://198.51.100.10:9093" }\n),
     ''],
    ['bad-policy', qq(    - pager: { url: "https://x.example" }\n), ''],
    ['no-rule', qq(    - alertmanager: { url: "http://198.51.100.11" }\n),
     ''],
);
my $i = 0;
for my $s (@steps) {
    mkdir "$t/step$i" or die $!;
    policy($s->[1]);
    rename "$t/policy.yaml", "$t/step$i/policy.yaml" or die $!;
    open my $h, '>', "$t/step$i/hosts" or die $!;
    print $h $s->[2];
    close $h;
    $i++;
}
my $out = `unshare -n $^X $FindBin::Bin/$FindBin::Script --in-netns $t 2>&1`;
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
my @reload = $drop =~ /^ExecReload=(.*)$/mg;
is_deeply(\@reload, ['', '-+/bin/systemctl start airlock-alertd-egress.service',
                     '/bin/kill -HUP $MAINPID'],
          'and at each reload, before alertd reads the policy again');
my $unit = slurp("$top/conf/airlock-alertd.service");
like($unit, qr{^ExecReload=/bin/kill -HUP \$MAINPID$}m,
     'the reload the drop-in keeps is the unit\'s own');

done_testing();


# step N: (the helper's exit status, "IPv4 elements | IPv6 elements")
sub got {
    my ($n) = @_;
    my $s = $r{$n} // '';
    my ($rc) = $s =~ /^rc (\d+)$/m;
    my ($v4) = $s =~ /^set4 (.*)$/m;
    my ($v6) = $s =~ /^set6 (.*)$/m;
    return ($rc // -1, ($v4 // '?') . ' | ' . ($v6 // '?'));
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
        print "step $n\n$out", "rc $rc\n";
        for my $f (4, 6) {
            my $l = `nft list set inet airlock alertd_sinks$f 2>/dev/null`;
            my ($e) = $l =~ /elements = \{\s*(.*?)\s*\}/s;
            $e = join(', ', sort split /,\s*/, $e // '');
            print "set$f $e\n";
        }
    }
    return 0;
}
