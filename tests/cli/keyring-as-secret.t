#!/usr/bin/perl
# airlockctl check --key: a secret that holds an Airlock private key is
# refused, as nginx refuses it (tests/nginx/175).  The key's own file,
# root's (or the reader's) and 0600, passed every check a file: secret
# gets, and a sealed copy of it (seal given the private key file on
# standard input, by mistake) opened as any other secret: either way the
# key that opens every sealed secret was a credential sent upstream.
# The error names the secret and the file, never the key.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl slurp);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 9;

my ($rc, $out) = run_ctl('keygen', "$dir/k");
is($rc, 0, 'keygen') or diag($out);

my ($b64) = (slurp("$dir/k") // '') =~ /^airlock-secret-key-v1 (\S+)/;
ok(defined $b64, 'the private key file is one line');
$b64 //= 'none';

sub policy {
    my ($secret) = @_;
    return write_file('policy.yaml', <<"Y");
version: 1
clients:
  agent: { unix_uid: 1000 }
secrets:
  tok: $secret
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: one
    clients: [agent]
    match: { method: GET, path: /one }
    upstream: up
    to: /one
    inject:
      X-Token: "{tok}"
alerts:
  deny: { threshold: 3, window: 60s }
Y
}

# a file: secret naming the private key

my $pol = policy(qq({ file: "$dir/k" }));
($rc, $out) = run_ctl('check', $pol, '--key', "$dir/k");
is($rc, 1, 'check --key: the private key as a file: secret is invalid');
like($out, qr{policy\.yaml:5:\d+: secret "tok": \Q$dir\E/k holds an (?#
              )Airlock private key}, 'the error names the secret and file');
unlike($out, qr/\Q$b64\E/, 'the error does not show the key');

# the private key sealed, by mistake

my $sealed = `$ctl seal --pub $dir/k.pub < $dir/k 2>/dev/null`;
chomp $sealed;
$pol = policy(qq({ sealed: "$sealed" }));
($rc, $out) = run_ctl('check', $pol, '--key', "$dir/k");
is($rc, 1, 'check --key: the private key sealed is invalid');
like($out, qr{policy\.yaml:5:\d+: secret "tok" holds an Airlock private },
     'the error names the secret');
unlike($out, qr/\Q$b64\E/, 'the error does not show the key');

# a credential that only mentions the header is no key

write_file('ok.secret', "FAKE-token-not-airlock-secret-key-v1\n");
chmod 0600, "$dir/ok.secret" or die;
$pol = policy(qq({ file: "$dir/ok.secret" }));
($rc, $out) = run_ctl('check', $pol, '--key', "$dir/k");
is($rc, 0, 'a credential that is not a key file is taken') or diag($out);
