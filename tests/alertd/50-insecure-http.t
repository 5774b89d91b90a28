#!/usr/bin/perl
# A webhook URL that is http:// is refused unless its host is this host
# (localhost, 127.0.0.0/8, ::1) or the webhook says allow_insecure_http:
# true: its alerts and their signatures would cross the network in clear.
# The error is a configuration error (exit 2) with the file and line, as
# for the policy's other errors, and does not show the URL's path (a
# webhook's path is its secret); a reload to such a policy is refused
# and the running one kept.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $d = $t->dir;

delete $ENV{CREDENTIALS_DIRECTORY};

my $hook = $t->secret('hook', 'insecure-http-test-FAKE-secret-0123456789');
my $r = $t->receiver(secret => $hook);

sub policy_with {
    my ($name, $webhook) = @_;
    return $t->write_file($name, <<"YAML");
version: 1
clients:
  agent: { cidr: 127.0.0.1/32 }
secrets:
  hook: { file: "$hook" }
alerts:
  deny: { threshold: 3, window: 60s }
  sinks:
    - webhook: $webhook
YAML
}

sub load {
    my ($name, $webhook) = @_;
    my $p = policy_with($name, $webhook);
    (my $state = $name) =~ s/\.yaml$//;
    return $t->run_alertd('--policy', $p, '--journal', $t->journal,
                          '--state', "$d/state-$state", '--once');
}

my ($rc, $err);

# loopback, as the example policy's and the demo's: delivered as before
$t->policy({ webhook => $r->{url}, secret => 'hook' });
my $id = $t->alert(client => 'agent');
($rc, $err) = $t->run_alertd('--policy', "$d/policy.yaml",
                             '--journal', $t->journal,
                             '--state', "$d/state-loop", '--once');
is($rc, 0, 'http://127.0.0.1: runs') or diag($err);
ok($t->delivered($r, $id), 'and delivers');

# the other names of this host load (no alert queued: --once exits 0)
$t->write_file($t->journal, '');
for my $host ('localhost', 'LOCALHOST.', '127.8.9.10', '[::1]',
              '[::ffff:127.0.0.1]')
{
    ($rc, $err) = load('lo.yaml', "{ url: \"http://$host:9/FAKE-path\", "
                                  . "hmac_secret: hook }");
    is($rc, 0, "http://$host: loads") or diag($err);
}

# a host past this one: refused, exit 2, file and line, not the path
for my $host ('192.0.2.10', 'hooks.example.com', '127.0.0.1.example.com',
              '[2001:db8::1]', '10.1.2.3')
{
    ($rc, $err) = load('far.yaml', "{ url: \"http://$host/FAKE-T0/"
                                   . "FAKEsecretPATH\", hmac_secret: hook }");
    is($rc, 2, "http://$host: exit 2");
    like($err, qr{far\.yaml:9:\d+: webhook url is http:// to "\Q$host\E", not this host: .*use https://, or set allow_insecure_http: true},
         "http://$host: says where, why and what to do") or diag($err);
    unlike($err, qr/FAKEsecretPATH/, "http://$host: the path is not shown");
    is(() = $err =~ /\n/g, 1, "http://$host: in one line") or diag($err);
}

# https:// anywhere, and http:// with the opt-in, load
($rc, $err) = load('tls.yaml', '{ url: "https://192.0.2.10/FAKE", '
                               . 'hmac_secret: hook }');
is($rc, 0, 'https:// past this host: loads') or diag($err);
($rc, $err) = load('optin.yaml', '{ url: "http://192.0.2.10/FAKE", '
                                 . 'hmac_secret: hook, '
                                 . 'allow_insecure_http: true }');
is($rc, 0, 'http:// with allow_insecure_http: true: loads') or diag($err);
($rc, $err) = load('optout.yaml', '{ url: "http://192.0.2.10/FAKE", '
                                  . 'hmac_secret: hook, '
                                  . 'allow_insecure_http: false }');
is($rc, 2, 'allow_insecure_http: false: refused as without it');
($rc, $err) = load('word.yaml', '{ url: "http://192.0.2.10/FAKE", '
                                . 'hmac_secret: hook, '
                                . 'allow_insecure_http: "yes" }');
is($rc, 2, 'allow_insecure_http: "yes": exit 2');
like($err, qr/word\.yaml:9:\d+: allow_insecure_http must be true or false/,
     'names the key and its line') or diag($err);

# a reload to an http:// webhook past this host is refused, and the
# running policy (the loopback receiver) kept
$t->policy({ webhook => $r->{url}, secret => 'hook' });
$t->alertd;
my $pid = $t->alertd_pid;
$t->write_file("$d/policy.yaml",
               $t->read_file("$d/policy.yaml")
               =~ s{http://127\.0\.0\.1:\d+/hook}{http://192.0.2.10/hook}r);
kill 'HUP', $pid;
ok($t->log_has(qr{reload failed, the running policy is kept: .*policy\.yaml:\d+:\d+: webhook url is http:// to "192\.0\.2\.10"}),
   'a reload to it is refused, the running policy kept')
    or diag($t->alertd_log);
$id = $t->alert(client => 'agent');
ok($t->wait_for(sub { $t->delivered($r, $id) }),
   'and alerts still go to the loopback webhook');
$t->stop($pid);

$t->done;
