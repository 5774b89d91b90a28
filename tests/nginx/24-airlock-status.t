#!/usr/bin/perl

# ngx_http_airlock_module: airlock_status and the configuration of the
# zone, the journal and the status.  The status answers JSON on an admin
# listener, read-only; it refuses to share a location with "airlock on" and
# needs a zone.  Its server listens only on loopback addresses and unix
# sockets, and on none an Airlock server listens on.  Directive errors fail
# "nginx -t".

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my %tok = map { $_ => "token-$_-0123456789" } qw(a q);
my %sha = map { $_ => $p->token_sha256($tok{$_}) } keys %tok;

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  a: { token_sha256: "$sha{a}" }
  q: { token_sha256: "$sha{q}" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: ok
    clients: [a, q]
    match: { method: GET, path: /ok }
    upstream: echo
    to: /ok
alerts:
  deny: { threshold: 10, window: 60s }
  quarantine: { threshold: 3, window: 60s, for: 10m }
EOF

my $status_server = <<'EOF';
    server {
        listen 127.0.0.1:%%PORT_8082%%;
        location = /status {
            airlock_status;
        }
    }
EOF

my $zone = "    airlock_zone airlock 1m;\n";
my $good = $p->conf(http => $zone . $status_server);

plan tests => 39;

sub conf_test {
    my ($conf) = @_;
    $t->write_file_expand('nginx.conf', $conf);
    my ($status, $out) = $t->reload_test;
    return ($status, $out);
}

my ($status, $out);

# configuration

($status, $out) = conf_test($good);
is($status, 0, 'zone and status: nginx -t passes') or diag($out);

($status, $out) = conf_test($p->conf(http => $zone, locations => <<'EOF'));
        location = /status {
            airlock on;
            airlock_status;
        }
EOF
isnt($status, 0, 'status with "airlock on": fails');
like($out, qr/"airlock_status" in location "\/status" cannot be used with/,
     'status with "airlock on": message');

($status, $out) = conf_test($p->conf(http => $zone, server => 'airlock on;',
                                     locations => <<'EOF'));
        location = /status {
            airlock_status;
        }
EOF
isnt($status, 0, 'status under a server with "airlock on": fails');

($status, $out) = conf_test($p->conf(http => $zone, locations => <<'EOF'));
        location = /status {
            airlock_status;
        }
EOF
isnt($status, 0, 'status beside an Airlock location: fails');
like($out, qr/"airlock_status" in the server at \S+:\d+ listens on "127\.0\.0\.1:\d+" with the Airlock server at \S+:\d+, where clients reach it/,
     'status beside an Airlock location: message');

($status, $out) = conf_test($p->conf(http => $zone . <<'EOF'));
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        server_name admin;
        location = /status {
            airlock_status;
        }
    }
EOF
isnt($status, 0, 'status on the Airlock server\'s listener, by name: fails');
like($out, qr/listens on "127\.0\.0\.1:\d+" with the Airlock server/,
     'status on the Airlock server\'s listener: message');

($status, $out) = conf_test($p->conf(http => $zone . <<'EOF'));
    server {
        listen %%PORT_8082%%;
        location = /status {
            airlock_status;
        }
    }
EOF
isnt($status, 0, 'status on every address: fails');
like($out, qr/listens on "0\.0\.0\.0:\d+", not a loopback address or a unix socket/,
     'status on every address: message');

($status, $out) = conf_test($p->conf(http => $zone . <<'EOF'));
    server {
        listen 127.0.0.1:%%PORT_8082%%;
        listen unix:%%TESTDIR%%/admin.sock;
        location = /status {
            airlock_status;
        }
    }
    server {
        listen 127.0.0.1:%%PORT_8082%%;
        server_name other;
    }
EOF
is($status, 0, 'status on loopback and a unix socket: passes') or diag($out);

($status, $out) = conf_test($p->conf(http => $status_server));
isnt($status, 0, 'status without a zone: fails');
like($out, qr/"airlock_status" in location "\/status" needs "airlock_zone"/,
     'status without a zone: message');

($status, $out) = conf_test($p->conf(http => "airlock_zone airlock 16k;"));
isnt($status, 0, 'a zone under 8 pages: fails');
like($out, qr/zone "airlock" is too small/, 'too small: message');

($status, $out) = conf_test($p->conf(http => "airlock_zone airlock lots;"));
like($out, qr/invalid zone size "lots"/, 'invalid size: message');

($status, $out) = conf_test($p->conf(http => $zone . $zone));
like($out, qr/"airlock_zone" directive is duplicate/, 'two zones: refused');

($status, $out) = conf_test($p->conf(
    http => "airlock_journal j1.log;\nairlock_journal j2.log;"));
like($out, qr/"airlock_journal" directive is duplicate/,
     'two journals: refused');

($status, $out) = conf_test($p->conf(
    http => "$zone limit_req_zone \$binary_remote_addr zone=airlock:1m "
            . "rate=1r/s;"));
isnt($status, 0, 'a zone name used by limit_req: fails');

($status, $out) = conf_test($p->conf(http => $zone, server => <<'EOF'));
        location = /in-server {
            airlock_zone other 1m;
        }
EOF
like($out, qr/"airlock_zone" directive is not allowed here/,
     'airlock_zone only at http level');

# the status

$t->write_file_expand('nginx.conf', $good);
$t->start_echo(8081);
$t->run;

sub get {
    my ($who, $path) = @_;
    my $h = $who ? { 'Proxy-Authorization' => "Bearer $tok{$who}" } : {};
    return http_get($path, headers => $h);
}

my $r = parse_response(http_get('/status', port => 8082));
my $s = json_body(http_get('/status', port => 8082));

is($r->{status}, 200, 'status: 200');
is($r->{headers}{'content-type'}, 'application/json', 'status: JSON');
is_deeply([ sort keys %$s ],
          [ qw(counters quarantined time truncated zone) ],
          'status: fields');
is_deeply([ sort keys %{$s->{zone}} ],
          [ qw(free_pages name nodes pages size) ], 'status: zone fields');
is($s->{zone}{name}, 'airlock', 'status: zone name');
is($s->{zone}{size}, 1048576, 'status: zone size');
is_deeply([ $s->{quarantined}, $s->{counters} ], [ [], [] ],
          'status: nothing yet');
like($s->{time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
     'status: time');

get('a', '/nope') for 1 .. 2;
get('q', '/nope') for 1 .. 3;
get(undef, '/nope');

$s = json_body(http_get('/status', port => 8082));

my %c = map { (($_->{client} // "peer $_->{peer}") . ' '
               . ($_->{reason} // 'all')) => $_ } @{$s->{counters}};

is_deeply([ sort keys %c ],
          [ 'a all', 'a no_route', 'peer 127.0.0.1 client_unknown',
            'q no_route' ], 'status: counters');
is_deeply([ @{$c{'a no_route'}}{qw(count window)} ], [ 2, 60 ],
          'status: a no_route 2 in 60s');
is($c{'a all'}{count}, 2, 'status: a, all reasons, against quarantine');
is($c{'peer 127.0.0.1 client_unknown'}{client}, undef,
   'status: unknown client null, with its peer');

is(scalar @{$s->{quarantined}}, 1, 'status: one quarantine');
my $q = $s->{quarantined}[0];
is_deeply([ @$q{qw(client reason)} ], [ 'q', 'no_route' ],
          'status: q quarantined for no_route');
cmp_ok($q->{left}, '>', 590, 'status: seconds left');
like($q->{until}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
     'status: until');

# read-only

like(http("POST /status HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}",
          port => 8082), qr{^HTTP/1\.1 405 }, 'status: POST refused');
like(http("HEAD /status HTTP/1.0\r\n\r\n", port => 8082),
     qr{^HTTP/1\.1 200 .*\r\n\r\n$}s, 'status: HEAD, no body');

is($t->error_log_check, '', 'no alerts');
