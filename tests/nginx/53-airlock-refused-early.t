#!/usr/bin/perl

# Requests nginx refuses before Airlock's decision: a bad request line or
# header (400), ambiguous framing (400), TRACE (405), a body over
# client_max_body_size (413), a target too long (414), an unknown
# Transfer-Encoding (501).  From a client of the policy they are logged as
# deny lines with reason "refused" and counted toward its deny counters
# (alerts, quarantine); from an unknown peer they are not.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Time::HiRes qw(sleep time);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $tools = $p->token_sha256('tools-token-1');

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
  tools: { token_sha256: "$tools" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: ok
    clients: [local]
    match: { method: GET, path: /ok }
    upstream: echo
    to: /ok
alerts:
  deny: { threshold: 3, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(key => 0,
    listen => 'listen unix:%%TESTDIR%%/airlock.sock;',
    locations => <<'EOF2',
        location = /static {
            return 405;
        }
EOF2
    http => <<'EOF'));
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log;
    client_max_body_size 100;
    large_client_header_buffers 4 1k;
EOF

$t->start_echo(8081);
$t->run;

my $sock = $t->testdir . '/airlock.sock';

my @refused = (
    [ 'a bad request line', "GARBAGE\r\n\r\n", 400 ],
    [ 'two Host headers',
      "GET /ok HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400 ],
    [ 'Content-Length and Transfer-Encoding',
      "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
      . "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400 ],
    [ 'TRACE', "TRACE /ok HTTP/1.1\r\nHost: a\r\n\r\n", 405 ],
    [ 'a body over client_max_body_size',
      "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n", 413 ],
    [ 'a target too long', "GET /" . ('x' x 2000) . " HTTP/1.1\r\n"
      . "Host: a\r\n\r\n", 414 ],
    [ 'an unknown Transfer-Encoding',
      "POST /ok HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
      501 ],
);

plan tests => 3 * @refused + 12;

sub status { parse_response($_[0] // '')->{status} // 0 }

# nginx logs a request when it is done with it, after a lingering close
# for some: wait for the line (a bound, not a measure)
sub deny_lines_after {
    my ($before) = @_;
    my $until = time + 10;
    my @log;

    while (time < $until) {
        @log = $p->deny_log;
        last if @log > $before;
        sleep 0.05;
    }

    return @log;
}

for my $c (@refused) {
    my ($name, $req, $code) = @$c;
    my $before = $p->deny_count;

    # HTTP/1.1: the answer may keep the connection; read just the one
    is(status(http($req, one => 1)), $code, "$name: nginx answers $code");

    my @log = deny_lines_after($before);
    is(scalar(@log), $before + 1, "$name: one deny line");
    my $l = $log[-1] // {};
    ok(($l->{reason} // '') eq 'refused' && ($l->{client} // '') eq 'local'
       && ($l->{detail} // '') eq "nginx answered $code before the decision",
       "$name: reason refused, client local, the status in the detail");
}

# counted: the third refusal crossed alerts.deny.threshold 3

my @alerts = grep { /"type":"alert"/ } split /\n/,
             $t->read_file('journal.log') // '';
ok(scalar(@alerts) >= 1, 'refusals raise a deny_threshold alert');
like($alerts[0] // '', qr/"kind":"deny_threshold".*"client":"local".*"reason":"refused"/,
     'the alert: client local, reason refused');

# not logged: an unknown peer (uid 0 on the unix socket is no client), and
# a 405 a location answers; a token names the client, as for a decided
# request (its line, the next one, shows the two others wrote none)

my $before = $p->deny_count;
is(status(http("TRACE /ok HTTP/1.1\r\nHost: a\r\n\r\n", unix => $sock)),
   405, 'unknown peer: 405');
is(status(http_get('/static')), 405, 'a location\'s own 405');

is(status(http("TRACE /ok HTTP/1.1\r\nHost: a\r\n"
               . "Proxy-Authorization: Bearer tools-token-1\r\n\r\n",
               unix => $sock)), 405, 'token client: 405');

my @log = deny_lines_after($before);
is(scalar(@log), $before + 1, 'unknown peer, a location\'s 405: no deny line');
is($log[-1]{client}, 'tools', 'token client: deny line names it');

# the token is read leniently: the first one found, a header without one
# passed over (the location, and so which headers it reads, is not known)

for my $h (["x-api-key: tools-token-1", 'x-api-key'],
           ["Proxy-Authorization: Basic dG9vbHM6eA==\r\n"
            . "Authorization: Bearer tools-token-1",
            'Authorization after a Basic Proxy-Authorization'])
{
    $before = $p->deny_count;
    is(status(http("TRACE /ok HTTP/1.1\r\nHost: a\r\n$h->[0]\r\n\r\n",
                   unix => $sock)), 405, "$h->[1]: 405");
    @log = deny_lines_after($before);
    is($log[-1]{client}, 'tools', "$h->[1]: deny line names the client");
}

is($t->error_log_check(qr/client sent|client intended to send too large|too long|TRACE|unknown transfer|invalid host|duplicate|both "Content-Length"/), '', 'no alerts');
