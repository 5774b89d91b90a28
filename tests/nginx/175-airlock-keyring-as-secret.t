#!/usr/bin/perl

# ngx_http_airlock_module: the private key (airlock_keyring's file) named
# as a file: secret.  Root's and 0600, one line of printable ASCII, it
# passed every check a file: secret gets: the policy loaded, and the key
# that opens every sealed secret went upstream in the route's header.
# airlockctl diff called the change "~ secret tok changed (another
# file)".  Now the load refuses a secret that holds an Airlock private
# key, naming the secret and the file, never the key; a reload with such
# a policy changes nothing.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $key = $p->keygen;
my $d = $t->testdir;
my $value = 'FAKE-file-secret-value-0123456789';

my ($b64) = $t->read_file('airlock.key') =~ /^airlock-secret-key-v1 (\S+)/;
die "no key in airlock.key" unless defined $b64;

$t->write_file('tok.secret', "$value\n");
chmod 0600, "$d/tok.secret" or die "chmod: $!";

sub policy {
    my ($file) = @_;
    return <<"EOF";
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { file: "$file" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: r
    clients: [local]
    match: { method: GET, path: /r }
    upstream: echo
    to: /r
    inject: { X-Token: "{tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
EOF
}

sub sent {
    my @seen = $t->echo_requests(8081);
    my ($v) = map { $_->[1] } grep { lc $_->[0] eq 'x-token' }
              @{$seen[-1]{headers} // []};
    return $v;
}

$t->write_file_expand('nginx.conf', $p->conf);

# nginx -t

$t->write_file_expand('policy.yaml', policy($key));
my ($status, $out) = $t->reload_test;
isnt($status, 0, 'the keyring as a file: secret: nginx -t fails');
like($out, qr{\[emerg\] \Q$d\E/policy\.yaml:5:\d+: secret "tok": (?#
              )\Q$key\E holds an Airlock private key}, 'it names the secret '
     . 'and the file');
unlike($out, qr/\Q$b64\E/, 'nginx -t does not show the key');

# a copy of the key's file, elsewhere, is the key all the same

$t->write_file('copy.secret', $t->read_file('airlock.key'));
chmod 0600, "$d/copy.secret" or die "chmod: $!";
$t->write_file_expand('policy.yaml', policy("$d/copy.secret"));
($status, $out) = $t->reload_test;
like($out, qr/secret "tok": \Q$d\E\/copy\.secret holds an Airlock private /,
     'a copy of the key file: refused');

# running with a good secret, a reload to the key changes nothing

$t->write_file_expand('policy.yaml', policy("$d/tok.secret"));
$t->start_echo(8081);
$t->run;

my $r = parse_response($t->http_get('/r'));
is($r->{status}, 200, 'the file secret is used');
is(sent(), $value, 'the upstream got the secret');

$t->write_file_expand('policy.yaml', policy($key));
my ($ok) = $t->reload(allow_fail => 1);
ok(!$ok, 'a reload to the keyring as a secret fails');

$r = parse_response($t->http_get('/r'));
is($r->{status}, 200, 'the old policy still serves');
my $got = sent() // '';
is($got, $value, 'the upstream still gets the secret, not the key');
unlike($got, qr/airlock-secret-key|\Q$b64\E/, 'the key never went upstream');

unlike($t->read_file('error.log') // '', qr/\Q$b64\E/,
       'the error log does not show the key');

is($t->error_log_check(qr/holds an Airlock private key/), '', 'no alerts');

done_testing();
