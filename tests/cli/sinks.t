#!/usr/bin/perl
# airlockctl sinks: the policy's alert sinks, one a line, kind, host and
# port (the scheme's when the URL names none; an IPv6 address without
# its brackets), in the policy's order, and never the rest of the URL
# (a webhook's path is its secret).  The appliance's egress rule is
# filled from it (airlock-alertd-egress).  A policy without sinks prints
# nothing; one that does not load is exit 2.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";
my $dir = tempdir(CLEANUP => 1);

absent("$ctl not built") unless -x $ctl;

sub policy {
    my ($name, $alerts) = @_;
    open my $fh, '>', "$dir/$name.yaml" or die $!;
    print $fh <<"EOT";
version: 1
secrets:
  hook: { file: "$dir/hook.secret" }
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
$alerts
EOT
    close $fh;
    return "$dir/$name.yaml";
}

open my $fh, '>', "$dir/hook.secret" or die $!;
print $fh "FAKE-hmac-secret\n";
close $fh;

my $p = policy('sinks', <<'EOT');
alerts:
  deny: { threshold: 3, window: 60s }
  sinks:
    - webhook: { url: "https://hooks.example.com/services/T0FAKE/B0FAKE/FAKEPATH", hmac_secret: hook }
    - alertmanager: { url: "http://[2001:db8::9]:9093" }
    - alertmanager: { url: "https://am.example.net:8443/prefix" }
    - webhook: { url: "http://127.0.0.1/hook", hmac_secret: hook }
    - webhook: { url: "http://192.0.2.8/in", hmac_secret: hook, allow_insecure_http: true }
EOT
my $out = `$ctl sinks $p 2>&1`;
is($? >> 8, 0, 'sinks: exit 0') or diag($out);
is($out, "webhook hooks.example.com 443\n"
       . "alertmanager 2001:db8::9 9093\n"
       . "alertmanager am.example.net 8443\n"
       . "webhook 127.0.0.1 80\n"
       . "webhook 192.0.2.8 80\n",
   'kind, host and port of each, in order');
unlike($out, qr{FAKE|services|prefix|/},
       'nothing of the URLs\' paths');

$out = `$ctl sinks $top/conf/policy.example.yaml 2>&1`;
is($? >> 8, 0, 'the example policy') or diag($out);
is($out, "webhook 127.0.0.1 9099\nalertmanager 127.0.0.1 9093\n",
   'its two sinks, on this host');

$p = policy('none', "alerts:\n  deny: { threshold: 3, window: 60s }\n");
$out = `$ctl sinks $p 2>&1`;
is($? >> 8, 0, 'no alerts.sinks: exit 0') or diag($out);
is($out, '', 'and nothing printed');

$p = policy('bad', "alerts:\n  deny: { threshold: 3, window: 60s }\n  sinks:\n    - pager: { url: \"https://x\" }\n");
$out = `$ctl sinks $p 2>/dev/null`;
is($? >> 8, 2, 'a policy that does not load: exit 2');
is($out, '', 'nothing on standard output');

$out = `$ctl sinks 2>&1`;
is($? >> 8, 2, 'no FILE: exit 2');
$out = `$ctl sinks $p $p 2>&1`;
is($? >> 8, 2, 'two FILEs: exit 2');

done_testing();
