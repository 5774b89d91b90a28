#!/usr/bin/perl

# ngx_http_airlock_module: once the policy holds a secret, every route's
# answers are scrubbed, not only those of routes that inject one.  Only a
# route whose inject templates used a secret was scrubbed, so a route
# that injected nothing, or only a constant header, handed the client
# another route's credential in the clear when their shared upstream
# served it (a log line, a record of the requests it got), and so did a
# logs route serving a log that holds one.  A route may opt out with
# "scrub: false" (its answers pass as they come, Content-Length and gzip
# and all); a policy without secrets scrubs nothing; a reload that
# changes the field changes what is scrubbed.
#
# "airlock_scrub_hold 0" streams every scrubbed answer, chunked: an
# answer with its Content-Length is one the scrubber did not touch.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Compress::Gzip qw(gzip $GzipError);
use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $ta = 'route-a-token-FAKE-0123456789';
my $sa = $p->seal($ta);

sub route {
    my ($name, $upstream, $extra) = @_;
    return <<"EOF" . ($extra // '');
  - name: $name
    clients: [local]
    match: { method: GET, path: "/$name/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: $upstream
    to: "/{x}"
    query: { allow: [r] }
EOF
}

# c: no inject; d: a constant header; logs: another upstream name (a log
# viewer); e: the opt-out (SCRUB_E), c's field on reload (SCRUB_C)
sub policy {
    my (%o) = @_;
    my $secrets = $o{secrets} ? "secrets:\n  ta: { sealed: \"$sa\" }\n" : '';
    my $inject_a = $o{secrets} ? '"Bearer {ta}"' : 'application/json';
    my $name_a = $o{secrets} ? 'Authorization' : 'Accept';
    return "version: 1\n"
        . "clients:\n  local: { cidr: [127.0.0.1/32] }\n"
        . $secrets
        . "upstreams:\n"
        . "  raw: { url: \"http://127.0.0.1:%%PORT_8081%%\" }\n"
        . "  logs: { url: \"http://127.0.0.1:%%PORT_8081%%/logs\" }\n"
        . "routes:\n"
        . route('a', 'raw', "    inject: { $name_a: $inject_a }\n")
        . route('c', 'raw', $o{scrub_c} ? "    scrub: $o{scrub_c}\n" : '')
        . route('d', 'raw', "    inject: { Accept: application/json }\n")
        . route('logs', 'logs')
        . route('e', 'raw', $o{scrub_e} ? "    scrub: $o{scrub_e}\n" : '')
        . "alerts:\n  deny: { threshold: 1000, window: 60s }\n";
}

sub answer {
    my ($body, $header) = @_;
    return "HTTP/1.1 200 OK\r\n" . ($header // '') . 'Content-Length: '
        . length($body) . "\r\nConnection: close\r\n\r\n$body";
}

gzip(\"GET /x Authorization: Bearer $ta\n", \my $gz) or die $GzipError;

my %raw = (
    logline => answer("GET /x Authorization: Bearer $ta"),
    plain => answer('nothing secret here'),
    gzip => answer($gz, "Content-Encoding: gzip\r\n"),
);

my $map = join '', map {
    "        $_ \"" . encode_base64($raw{$_}, '') . "\";\n"
} sort keys %raw;

$t->write_file_expand('policy.yaml', policy(secrets => 1, scrub_e => 'false'));
$t->write_file_expand('nginx.conf', $p->conf(
    http => "    map \$arg_r \$raw_answer {\n        default \"\";\n"
        . "$map    }\n",
    location => "proxy_set_header X-Raw \$raw_answer;\n"
        . "            airlock_scrub_hold 0;"));

$t->run_daemon($^X, "$FindBin::Bin/../lib/raw-upstream.pl",
               $t->port(8081));
$t->wait_for_port(8081) or die 'raw upstream did not start';
$t->run;

sub get {
    my ($path) = @_;
    return parse_response($t->http_get($path));
}

my $logline = "GET /x Authorization: Bearer $ta";
my $redacted = 'GET /x Authorization: [REDACTED]';

# the reviewer's case: the token of route a, served on the other routes

my $r = get('/a/x?r=logline');
is($r->{body}, $redacted, 'route a (injects the secret): redacted');

$r = get('/c/x?r=logline');
is($r->{body}, $redacted, 'route c (no inject, same upstream): redacted');

$r = get('/d/x?r=logline');
is($r->{body}, $redacted,
   'route d (a constant header, same upstream): redacted');

$r = get('/logs/x?r=logline');
is($r->{body}, $redacted, 'a logs route serving the token: redacted');

# what scrubbing does to an answer: streamed, and gzip refused

$r = get('/c/x?r=plain');
ok($r->{status} == 200 && $r->{body} eq 'nothing secret here'
   && !defined $r->{headers}{'content-length'},
   'route c: an answer without a credential is scrubbed all the same');

$r = get('/c/x?r=gzip');
is($r->{status}, 502, 'route c: a gzip answer is refused, as scrubbed');

# the opt-out: as the upstream sent it

$r = get('/e/x?r=plain');
ok($r->{status} == 200 && $r->{body} eq 'nothing secret here'
   && ($r->{headers}{'content-length'} // '') eq '19',
   'route e (scrub: false): passed with its Content-Length');

$r = get('/e/x?r=gzip');
ok($r->{status} == 200 && $r->{body} eq $gz
   && ($r->{headers}{'content-encoding'} // '') eq 'gzip',
   'route e (scrub: false): a gzip answer passes');

$r = get('/e/x?r=logline');
is($r->{body}, $logline,
   'route e (scrub: false): not scrubbed, the operator\'s word');

# a reload that moves the field: c opts out, e is scrubbed again

$t->write_file_expand('policy.yaml',
                      policy(secrets => 1, scrub_c => 'false',
                             scrub_e => 'true'));
$t->reload;

$r = get('/c/x?r=plain');
ok($r->{status} == 200
   && ($r->{headers}{'content-length'} // '') eq '19',
   'reload, route c scrub: false: passed with its Content-Length');

$r = get('/e/x?r=logline');
is($r->{body}, $redacted, 'reload, route e scrub: true: redacted');

$r = get('/e/x?r=gzip');
is($r->{status}, 502, 'reload, route e scrub: true: gzip refused');

$r = get('/a/x?r=logline');
is($r->{body}, $redacted, 'reload: route a still redacted');

# a policy without secrets: nothing to scrub, every answer as it came

$t->write_file_expand('policy.yaml', policy(secrets => 0));
$t->reload;

for my $route (qw(a c d logs e)) {
    $r = get("/$route/x?r=plain");
    ok($r->{status} == 200
       && ($r->{headers}{'content-length'} // '') eq '19',
       "no secrets, route $route: passed with its Content-Length");
}

$r = get('/c/x?r=gzip');
ok($r->{status} == 200 && $r->{body} eq $gz,
   'no secrets: a gzip answer passes');

unlike($t->read_file('access.log') . $t->read_file('error.log'),
       qr/\Q$ta\E/, 'no key in the logs');

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
