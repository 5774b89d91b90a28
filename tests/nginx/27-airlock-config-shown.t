#!/usr/bin/perl

# ngx_http_airlock_module: the policy loader's messages quote the policy
# (a name, a value, a key), and "nginx -t" prints them on the operator's
# terminal and in the error log.  Text of the policy is shown as
# airlockctl shows it (al_shown(): a control character, DEL or a byte
# past ASCII as \xHH), so that an escape sequence in a policy under review
# cannot rewrite what the terminal shows.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $d = $t->testdir;

# a route of the policy with ROUTE's YAML in place of the plain one
sub policy {
    my (%o) = @_;
    my $name = $o{name} // 'ok';
    my $method = $o{method} // 'GET';
    my $extra = $o{extra} // '';

    return <<"EOF";
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: $name
    clients: [local]
    match: { method: $method, path: /ok }
    upstream: echo
    to: /ok
$extra
alerts:
  deny: { threshold: 3, window: 60s }
EOF
}

# nginx -t with the policy; its output and the -e error log
sub check {
    my ($pol) = @_;
    unlink "$d/test-error.log";
    $t->write_file_expand('policy.yaml', $pol);
    my ($status, $out) = $t->reload_test;
    my $log = $t->read_file('test-error.log') // '';
    return ($status, $out, $log);
}

$t->write_file_expand('nginx.conf', $p->conf);

my @cases = (
    [ 'an ESC sequence in a route name',
      policy(name => '"ok\e[2K\e[1Ad"'),
      qr/route name "ok\\x1b\[2K\\x1b\[1Ad" is not a valid name/ ],
    [ 'an ESC sequence in a method',
      policy(method => '"GE\e]0;owned\aT"'),
      qr/method "GE\\x1b\]0;owned\\x07T"/ ],
    [ 'a CR and a C1 CSI in an unknown key',
      policy(extra => "    \"upstreamz\\r\\u009b2K\": echo"),
      qr/unknown key "upstreamz\\x0d\\xc2\\x9b2K"/ ],
);

plan tests => 1 + 4 * @cases;

my ($status, $out, $log) = check(policy());
is($status, 0, 'a good policy: nginx -t passes') or diag($out);

for my $c (@cases) {
    my ($what, $pol, $shown) = @$c;

    ($status, $out, $log) = check($pol);
    isnt($status, 0, "$what: nginx -t fails");
    like($out, $shown, "$what: shown as \\xHH") or diag($out);
    unlike($out, qr/[\x00-\x09\x0b-\x1f\x7f-\xff]/,
           "$what: no control character or raw byte in the output");
    unlike($log, qr/[\x00-\x09\x0b-\x1f\x7f-\xff]/,
           "$what: none in the error log");
}
