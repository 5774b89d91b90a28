#!/usr/bin/perl
# --keyring is optional.  alertd needs the appliance's private key only
# to open a sealed webhook hmac_secret: a file: secret, Alertmanager only
# or no sink runs without it.  A sealed webhook secret without it stops
# alertd at start with exit status 2, naming the secret and what to do.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $d = $t->dir;

delete $ENV{CREDENTIALS_DIRECTORY};

my $hook = $t->secret('hook', 'keyring-test-FAKE-secret-0123456789');
my $r = $t->receiver(secret => $hook);

my $help = `\Q${\$t->bin}\E --help`;
like($help, qr/^usage: airlock-alertd --policy FILE \[--keyring FILE\]/,
     '--help shows --keyring as optional');

# a webhook with a file: secret, no --keyring: the alert is delivered
$t->policy({ webhook => $r->{url}, secret => 'hook' });
my $id = $t->alert(client => 'agent');
my ($rc, $err) = $t->run_alertd('--policy', "$d/policy.yaml",
                                '--journal', $t->journal,
                                '--state', "$d/state-file", '--once');
is($rc, 0, 'a file: secret without --keyring: runs, exit 0') or diag($err);
ok($t->delivered($r, $id), 'and delivers the alert, signed');

# no sink at all, no --keyring
$t->policy();
($rc, $err) = $t->run_alertd('--policy', "$d/policy.yaml",
                             '--journal', $t->journal,
                             '--state', "$d/state-none", '--once');
is($rc, 0, 'no sink, no --keyring: exit 0') or diag($err);

# a sealed webhook secret without --keyring: exit 2, naming the secret
$t->write_file('sealed.yaml', <<"YAML");
version: 1
clients:
  agent: { cidr: 127.0.0.1/32 }
secrets:
  hook: { sealed: "RkFLRSBub3QgYSBzZWFsZWQgYm94" }
alerts:
  deny: { threshold: 3, window: 60s }
  sinks:
    - webhook: { url: "$r->{url}", hmac_secret: hook }
YAML

($rc, $err) = $t->run_alertd('--policy', "$d/sealed.yaml",
                             '--journal', $t->journal,
                             '--state', "$d/state-sealed");
is($rc, 2, 'a sealed webhook secret without --keyring: exit 2');
like($err, qr/sealed\.yaml:\d+: secret "hook" is sealed and no keyring was given: .*--keyring FILE/,
     'says which secret, where, and what to give');
is(() = $err =~ /\n/g, 1, 'in one line') or diag($err);

# with --keyring the keyring is used: this box is no sealed box, and
# that is the error now
($rc, $err) = $t->run_alertd('--policy', "$d/sealed.yaml",
                             '--keyring', $t->keyring,
                             '--journal', $t->journal,
                             '--state', "$d/state-sealed");
is($rc, 2, 'with --keyring, a bad sealed value: exit 2');
unlike($err, qr/no keyring was given/, 'the keyring was used');
like($err, qr/secret "hook"/, 'the secret is named');

$t->done;
