#!/usr/bin/perl

# ngx_http_airlock_module: a route that injects Content-Type sends the
# upstream that value, not the client's (which is removed), so the body
# checks read the injected one: the upstream reads the body under it.  A
# form type injected over a client's text/plain still has its _method
# field refused; a JSON route's charset is the injected one's.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: form
    clients: [local]
    match: { method: POST, path: /form }
    upstream: echo
    to: /form
    body: { max_bytes: 100 }
    inject: { Content-Type: application/x-www-form-urlencoded }
  - name: json
    clients: [local]
    match: { method: POST, path: /json }
    upstream: echo
    to: /json
    body:
      max_bytes: 100
      json: { head: '^remediation/[a-z]+$' }
    inject: { content-type: application/json }
  - name: utf7
    clients: [local]
    match: { method: POST, path: /utf7 }
    upstream: echo
    to: /utf7
    body:
      max_bytes: 100
      json: { head: '^remediation/[a-z]+$' }
    inject: { Content-Type: "application/json; charset=utf-7" }
alerts:
  deny: { threshold: 100, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(key => 0));

$t->start_echo(8081);
$t->run;

plan tests => 12;

sub post {
    my ($uri, $type, $body) = @_;
    my $before = $p->echo_count;
    my $r = parse_response(http_post($uri, $body,
                                     headers => { 'Content-Type' => $type }));
    return ($r, $p->echo_count - $before);
}

sub upstream_type {
    my @all = $t->echo_requests(8081) or return '';
    my @ct = map { $_->[1] } grep { lc $_->[0] eq 'content-type' }
             @{$all[-1]{headers}};
    return join ',', @ct;
}

my ($r, $n);

sub last_deny {
    my @log = $p->deny_log;
    return @log ? $log[-1] : {};
}

($r, $n) = post('/form', 'text/plain', '_method=DELETE');
is($r->{status}, 403, 'form injected, client text/plain: _method refused');
is($n, 0, 'form injected, client text/plain: upstream saw nothing');
like(last_deny()->{detail} // '', qr/_method/, 'the detail names _method');

($r, $n) = post('/form', 'text/plain', 'a=1&b=2');
is($r->{status}, 200, 'form injected: another form passes');
is(upstream_type(), 'application/x-www-form-urlencoded',
   'form injected: the upstream reads the injected type');

($r, $n) = post('/json', 'text/plain', '{"head":"remediation/x"}');
is($r->{status}, 200, 'JSON type injected, client text/plain: allowed');
is(upstream_type(), 'application/json',
   'JSON type injected: the upstream reads the injected type');

($r, $n) = post('/json', 'text/plain', '{"head":"main"}');
is($r->{status}, 403, 'JSON type injected: the rules still hold');

($r, $n) = post('/utf7', 'application/json', '{"head":"remediation/x"}');
is($r->{status}, 403, 'charset=utf-7 injected: refused');
is($n, 0, 'charset=utf-7 injected: upstream saw nothing');
like(last_deny()->{detail} // '', qr/charset must be utf-8/,
     'the detail names the charset');

is($t->error_log_check, '', 'no alerts');
