#!/usr/bin/perl

# ngx_http_airlock_module: HTTPS upstreams.  The proxy verifies the
# upstream's certificate against the configured CA and sends SNI for the
# policy URL's host; the injected credential travels only over a verified
# connection.  A certificate for another name, or from an unknown CA, ends
# in a 502 in Airlock's JSON shape, and the credential is never sent.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Prereq qw(absent);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);
my $d = $t->testdir;

absent('openssl not installed')
    unless system('command -v openssl >/dev/null') == 0;

# a test CA, a certificate for upstream.test signed by it, and a
# self-signed one for upstream.test that no one trusts
sub ssl {
    my $cmd = shift;
    system("openssl $cmd >>$d/openssl.log 2>&1") == 0
        or die "openssl $cmd failed: " . ($t->read_file('openssl.log') // '');
}

ssl("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=airlock-test-ca "
    . "-keyout $d/ca.key -out $d/ca.pem");
$t->write_file('ext.cnf', "subjectAltName=DNS:upstream.test\n");
ssl("req -newkey rsa:2048 -nodes -subj /CN=upstream.test "
    . "-keyout $d/up.key -out $d/up.csr");
ssl("x509 -req -in $d/up.csr -CA $d/ca.pem -CAkey $d/ca.key "
    . "-CAcreateserial -days 2 -extfile $d/ext.cnf -out $d/up.pem");
ssl("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=upstream.test "
    . "-addext subjectAltName=DNS:upstream.test "
    . "-keyout $d/self.key -out $d/self.pem");

$p->keygen;
my $secret = 'tls-only-credential-0123456789';
my $sealed = $p->seal($secret);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  good:  { url: "https://upstream.test" }
  wrong: { url: "https://wrong.test" }
  self:  { url: "https://selfsigned.test" }
routes:
  - name: good
    clients: [local]
    match: { method: GET, path: /good }
    upstream: good
    to: /echo
    inject: { Authorization: "Bearer {tok}" }
  - name: wrong
    clients: [local]
    match: { method: GET, path: /wrong }
    upstream: wrong
    to: /echo
    inject: { Authorization: "Bearer {tok}" }
  - name: self
    clients: [local]
    match: { method: GET, path: /self }
    upstream: self
    to: /echo
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
EOF

# the upstreams: names resolved through upstream blocks (the keepalive
# recipe of docs/nginx.md), all on this machine
my $conf = $p->conf(http => <<'EOF', location => <<'EOF');
    upstream upstream.test { server 127.0.0.1:%%PORT_8443%%; }
    upstream wrong.test { server 127.0.0.1:%%PORT_8443%%; }
    upstream selfsigned.test { server 127.0.0.1:%%PORT_8444%%; }

    log_format upstream_seen '$ssl_server_name $http_authorization';

    server {
        listen 127.0.0.1:%%PORT_8443%% ssl;
        ssl_certificate %%TESTDIR%%/up.pem;
        ssl_certificate_key %%TESTDIR%%/up.key;
        access_log %%TESTDIR%%/upstream.log upstream_seen;
        location / { return 200 "sni=$ssl_server_name\n"; }
    }

    server {
        listen 127.0.0.1:%%PORT_8444%% ssl;
        ssl_certificate %%TESTDIR%%/self.pem;
        ssl_certificate_key %%TESTDIR%%/self.key;
        access_log %%TESTDIR%%/upstream.log upstream_seen;
        location / { return 200 "sni=$ssl_server_name\n"; }
    }
EOF
            proxy_ssl_trusted_certificate %%TESTDIR%%/ca.pem;
EOF
$t->write_file_expand('nginx.conf', $conf);
$t->run;

plan tests => 10;

my $r = parse_response(http_get('/good'));
is($r->{status}, 200, 'verified upstream: 200');
is($r->{body}, "sni=upstream.test\n", 'SNI is the policy URL host');

$r = parse_response(http_get('/wrong'));
is($r->{status}, 502, 'certificate for another name: 502');
my $j = eval { decode_json($r->{body}) } || {};
is($j->{error}, 'bad_gateway', 'in Airlock JSON');
unlike($r->{body}, qr/127\.0\.0\.1|upstream\.test/, 'no upstream address');

$r = parse_response(http_get('/self'));
is($r->{status}, 502, 'untrusted CA: 502');

my @seen = split /\n/, ($t->read_file('upstream.log') // '');
is(scalar @seen, 1, 'only the verified connection carried a request');
is($seen[0], "upstream.test Bearer $secret",
   'and the injected credential went over it');

like($t->read_file('error.log'),
     qr/upstream SSL certificate (?:verify error|does not match)/,
     'nginx logs why verification failed');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
