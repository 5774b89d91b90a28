#!/usr/bin/perl
# airlockctl check --key does not print a secret's length.  A secret
# with a byte outside printable ASCII, injected into a header as it is,
# is refused, and the refusal said where the byte was as "its byte N of
# LEN" (4df0f43): the length of the credential, on the terminal and in
# nginx's error log (nginx -t and a reload say the same).  Now the place
# is counted from the nearer end of the secret, and its length is not
# given.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 8;

my ($rc, $out) = run_ctl('keygen', "$dir/k");
is($rc, 0, 'keygen') or diag($out);

sub policy {
    my ($secret) = @_;
    my $file = write_file('secret', $secret);
    chmod 0600, $file or die;
    return write_file('policy.yaml', <<"Y");
version: 1
clients:
  agent: { unix_uid: 1000 }
secrets:
  tok: { file: $file }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: one
    clients: [agent]
    match: { method: GET, path: /one }
    upstream: up
    to: /one
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
Y
}

# 31 bytes, an e-acute (two bytes) at its end: a paste gone wrong
my $policy = policy("FAKE-token-0123456789-abcdefg\xc3\xa9");
($rc, $out) = run_ctl('check', $policy, '--key', "$dir/k");
is($rc, 1, 'a non-ASCII secret in a header: invalid');
like($out, qr/secret "tok" contains a byte outside printable ASCII (?#
              )\(its byte 2 from its end\)/, 'the place, from its end')
    or diag($out);
my ($msg) = $out =~ /(secret "tok".*)$/m;
unlike($msg // '', qr/31/, 'not its length') or diag($out);
unlike($msg // '', qr/\xc3|c3|195/i, 'nor the byte');

# 24 bytes, the bad byte near its start
$policy = policy("F\x01KE-token-0123456789-ab");
($rc, $out) = run_ctl('check', $policy, '--key', "$dir/k");
is($rc, 1, 'a control byte: invalid');
like($out, qr/\(its byte 2 from its start\)/, 'the place, from its start')
    or diag($out);
($msg) = $out =~ /(secret "tok".*)$/m;
unlike($msg // '', qr/24/, 'not its length') or diag($out);
