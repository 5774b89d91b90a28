#!/usr/bin/perl

# airlock_keyring is needed only for sealed secrets.  A policy whose
# secrets are all file: ones loads without it: the files are opened when
# nginx reads its configuration, the credential is injected and scrubbed.
# A sealed secret without a keyring fails "nginx -t", naming the secret.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);
my $d = $t->testdir;

my $secret = 'file-secret-value-7d1c';
$t->write_file('token', "$secret\n");
chmod 0600, "$d/token";

my $policy = <<"EOF";
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { file: "$d/token" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: v1
    clients: [local]
    match: { method: GET, path: /v1 }
    upstream: echo
    to: /one
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
EOF

$t->write_file_expand('policy.yaml', $policy);
$t->write_file_expand('nginx.conf', $p->conf(key => 0));

plan tests => 5;

my ($status, $out) = $t->reload_test;
is($status, 0, 'file: secrets only, no airlock_keyring: nginx -t passes')
    or diag($out);

$t->start_echo(8081);
$t->run;

my $r = http_get('/v1');
like($r, qr{^HTTP/1\.1 200 }, 'allowed');

my @seen = $t->echo_requests(8081);
my %h = map { lc $_->[0] => $_->[1] } @{$seen[-1]{headers} // []};
is($h{authorization}, "Bearer $secret", 'the file secret is injected');

# a sealed secret needs the keyring

$p->keygen;
my $sealed = $p->seal('sealed-value');
(my $sealed_policy = $policy) =~ s{tok: \{ file: "[^"]*" \}}{tok: { sealed: "$sealed" }};
$t->write_file_expand('policy.yaml', $sealed_policy);

($status, $out) = $t->reload_test;
isnt($status, 0, 'a sealed secret without airlock_keyring: nginx -t fails');
like($out, qr/policy\.yaml:\d+:\d+: secret "tok" is sealed: the keyring is needed/,
     'a sealed secret without airlock_keyring: the message names it');
