#!/usr/bin/perl

# ngx_http_airlock_module: configuration.  The policy is read at
# configuration time: a bad one fails "nginx -t" with file:line:column, a
# reload with a bad one changes nothing, a good one takes effect.

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
my $secret = 'config-secret-value-42';
my $sealed = $p->seal($secret);

my $policy = <<"EOF";
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
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

(my $policy2 = $policy) =~ s{/v1 \}}{/v2 \}};

my $bad = <<'EOF';
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
routes:
  - name: q
    clients: [local]
    match: { method: GET, path: /q }
    upstreamz: echo
alerts:
  deny: { threshold: 3, window: 60s }
EOF

$t->write_file_expand('policy.yaml', $policy);
$t->write_file_expand('nginx.conf', $p->conf);

plan tests => 27;

sub conf_test {
    my ($conf, $pol) = @_;
    $t->write_file_expand('nginx.conf', $conf);
    $t->write_file_expand('policy.yaml', $pol) if defined $pol;
    return $t->reload_test;
}

my $d = $t->testdir;
my $good = $p->conf;
my ($status, $out);

# nginx -t

($status, $out) = conf_test($good);
is($status, 0, 'good policy: nginx -t passes') or diag($out);

($status, $out) = conf_test($good, $bad);
isnt($status, 0, 'bad policy: nginx -t fails');
like($out, qr{\[emerg\] \Q$d\E/policy\.yaml:8:5: unknown key "upstreamz"},
     'bad policy: file:line:column and the reason');
like($out, qr{in \Q$d\E/nginx\.conf:\d+}, 'bad policy: the directive\'s place');

# directive order does not matter

(my $swapped = $good)
    =~ s{(airlock_policy [^\n]*\n)(\s*airlock_keyring [^\n]*\n)}{$2$1};
isnt($swapped, $good, 'keyring before policy: config differs');
($status, $out) = conf_test($swapped, $policy);
is($status, 0, 'keyring before policy: nginx -t passes') or diag($out);

# missing or wrong pieces

($status, $out) = conf_test($p->conf(key => 0), $policy);
isnt($status, 0, 'a sealed secret without a keyring: fails');
like($out, qr/secret "tok" is sealed: the keyring is needed to open it/,
     'a sealed secret without a keyring: message');

my $other = $p->keygen('other.key');
($status, $out) = conf_test($p->conf(key => $other), $policy);
isnt($status, 0, 'the wrong keyring: fails');
unlike($out, qr/\Q$secret\E/, 'the wrong keyring: no secret in the output');
$p->keygen('airlock.key');
$sealed = $p->seal($secret);
s/sealed: "[^"]*"/sealed: "$sealed"/ for $policy, $policy2;

($status, $out) = conf_test($p->conf(key => "$d/nonexistent.key"), $policy);
isnt($status, 0, 'missing keyring file: fails');

(my $nopolicy = $good) =~ s/airlock_policy [^\n]*\n//;
($status, $out) = conf_test($nopolicy);
isnt($status, 0, '"airlock on" without a policy: fails');
like($out, qr/needs "airlock_policy"/,
     '"airlock on" without a policy: message');

my $body_policy = $policy . <<'EOF';
EOF
$body_policy =~ s{alerts:}{  - name: big
    clients: [local]
    match: { method: POST, path: /big }
    upstream: echo
    to: /big
    body: { max_bytes: 1048576 }
alerts:};
($status, $out) = conf_test($good, $body_policy);
isnt($status, 0, 'client_body_buffer_size below max_bytes: fails');
like($out, qr/"client_body_buffer_size" \d+ in location "\/" is smaller/,
     'client_body_buffer_size below max_bytes: message');
($status, $out) = conf_test($p->conf(http => 'client_body_buffer_size 1m;'),
                            $body_policy);
is($status, 0, 'client_body_buffer_size 1m: passes') or diag($out);

# airlock_scrub_hold is bounded: held bodies are request memory

($status, $out) = conf_test($p->conf(http => 'airlock_scrub_hold 16m;'),
                            $policy);
is($status, 0, 'airlock_scrub_hold 16m: passes') or diag($out);
($status, $out) = conf_test($p->conf(http => 'airlock_scrub_hold 17m;'),
                            $policy);
isnt($status, 0, 'airlock_scrub_hold 17m: fails');
like($out, qr/must be between 0 and 16777216/,
     'airlock_scrub_hold 17m: the bounds');

# reload

$t->write_file_expand('nginx.conf', $good);
$t->write_file_expand('policy.yaml', $policy);
$t->start_echo(8081);
$t->run;

like(http_get('/v1'), qr{^HTTP/1\.1 200 }, 'running with v1');

$t->write_file_expand('policy.yaml', $bad);
my ($ok, $why) = $t->reload(allow_fail => 1);
ok(!$ok, 'reload with a bad policy is refused');
like(http_get('/v1'), qr{^HTTP/1\.1 200 }, 'the old policy keeps serving');
like(http_get('/v1'), qr/\[REDACTED\]/, 'the old policy still scrubs');

$t->write_file_expand('policy.yaml', $policy2);
$t->reload;
like(http_get('/v2'), qr{^HTTP/1\.1 200 }, 'reload: the new policy serves');
like(http_get('/v1'), qr{^HTTP/1\.1 403 }, 'reload: the old route is gone');

# the deny log is reopened on USR1, like access logs

rename "$d/deny.log", "$d/deny.log.1";
kill 'USR1', $t->nginx_pid;
select undef, undef, undef, 0.5;
http_get('/nope');
like($t->read_file('deny.log') // '', qr/"path":"\/nope"/,
     'deny log reopened on USR1');

is($t->error_log_check(qr/policy\.yaml:8:5/), '', 'no alerts');
