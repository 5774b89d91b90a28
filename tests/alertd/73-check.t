#!/usr/bin/perl
# airlock-alertd --check: the policy and its sinks' secrets read as a
# start or a reload reads them, and exit 0 when alertd would run with
# them, 2 when it would refuse them, with the reason a reload logs.  No
# journal and no state are needed, and none is touched.  The appliance
# image's reload of alertd runs it before it keeps the policy's sinks as
# alertd's (the egress rule's record) and before the SIGHUP
# (tests/build/55-image-alertd-refused-reload.t).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $d = $t->dir;

$t->secret('hook', 'check-test-FAKE-secret-0123456789abcdef');
$t->policy({ webhook => 'http://127.0.0.1:9/hook', secret => 'hook' },
           { alertmanager => 'http://127.0.0.1:9/am' });

my ($rc, $err) = $t->run_alertd('--check', '--policy', "$d/policy.yaml");
is($rc, 0, 'a policy alertd takes: exit 0') or diag($err);
like($err, qr/checked \Q$d\E\/policy\.yaml: 2 sink\(s\)/,
     'and it says so, its sinks counted');
unlike($err, qr/check-test/, 'no word of the secret');
ok(!-e $t->state, 'no state made');

($rc, $err) = $t->run_alertd('--check');
is($rc, 2, 'no --policy: exit 2');
like($err, qr/--policy is required/, 'and that is said');

# alertd runs with it; then the secret goes
$t->alertd;
unlink "$d/hook.secret" or die "unlink: $!";
($rc, $err) = $t->run_alertd('--check', '--policy', "$d/policy.yaml",
                             '--keyring', $t->keyring);
is($rc, 2, 'a webhook\'s secret missing: exit 2') or diag($err);
like($err, qr/check failed.*secret "hook".*hook\.secret/,
     'the reason, naming the secret');

# the reload refuses it for the same reason
ok($t->log_more(qr/reload failed, the running policy is kept/,
                sub { kill 'HUP', $t->alertd_pid }),
   'so does alertd\'s reload');
my ($why) = $err =~ /would be refused: (.*)$/m;
ok(defined $why && index($t->alertd_log, $why) >= 0,
   'in the same words') or diag($t->alertd_log);

# a mode open to others
$t->secret('hook', 'check-test-FAKE-secret-0123456789abcdef');
chmod 0644, "$d/hook.secret" or die "chmod: $!";
($rc, $err) = $t->run_alertd('--check', '--policy', "$d/policy.yaml");
is($rc, 2, 'a secret others can read: exit 2') or diag($err);
chmod 0600, "$d/hook.secret" or die "chmod: $!";
($rc, $err) = $t->run_alertd('--check', '--policy', "$d/policy.yaml");
is($rc, 0, 'its mode mended: exit 0') or diag($err);

is($t->stop($t->alertd_pid), 0, 'alertd stops');

done_testing();
