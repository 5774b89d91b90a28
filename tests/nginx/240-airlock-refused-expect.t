#!/usr/bin/perl

# ngx_http_airlock_module: a request with "Expect: 100-continue" that is
# refused before its body is read gets its 403 without "100 Continue"
# first.  The refusal discarded the body, and nginx's discard sent the
# 100 as a read would: a client that waited for it uploaded the body
# only to have it thrown away.  The answer now says "Connection: close":
# a client that sends no body after it cannot tell where its next
# request would begin.  A body sent anyway is thrown away, never read as
# a request of its own (one here is a whole request, which the upstream
# never sees), and the connection ends.  A request whose body is read
# for the decision still gets its 100, and a refused one with no body
# announced keeps its connection.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
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
  - name: items
    clients: [local]
    match: { method: GET, path: /items }
    upstream: echo
    to: /items
  - name: upload
    clients: [local]
    match: { method: POST, path: /upload }
    upstream: echo
    to: /upload
    body: { max_bytes: 64 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

plan tests => 32;

sub connect_proxy {
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $t->port(8080),
                                  Proto => 'tcp', Timeout => 10)
        or die "connect: $!";
    return $s;
}


# A whole request, as the body of another, exactly $len bytes.
my $smuggled = "GET /items?smuggled=1 HTTP/1.1\r\nHost: localhost\r\n"
               . "X-Pad: ";
my $len = 120;
$smuggled .= 'p' x ($len - length($smuggled) - 4) . "\r\n\r\n";

my $next = "GET /items HTTP/1.1\r\nHost: localhost\r\n"
           . "Connection: close\r\n\r\n";

sub check_refused {
    my ($name, $head, $body) = @_;
    my $before = $p->echo_count;
    my $s = connect_proxy();

    http($head, socket => $s, start => 1);
    my ($interim, $r) = @{answers_on($s)};

    is("@$interim", '', "$name: no 100 Continue");
    is($r->{status}, 403, "$name: 403");
    like($r->{headers}{connection} // '', qr/close/i,
         "$name: Connection: close");

    # the body anyway, a whole request in it, then another request:
    # nothing of them is answered, the connection ends

    my $rest = http($body . $next, socket => $s, timeout => 10) // '';
    close $s;

    unlike($rest, qr{HTTP/1\.1 \d{3}}, "$name: no answer after it")
        or diag($rest);
    is(scalar(grep { ($_->{target} // '') =~ /smuggled/ }
                   $t->echo_requests(8081)),
       0, "$name: the body was never read as a request");
    is($p->echo_count, $before, "$name: the upstream saw nothing");
}

# no route: refused before the body is read

check_refused('no route, Content-Length',
              "POST /nowhere HTTP/1.1\r\nHost: localhost\r\n"
              . "Expect: 100-continue\r\nContent-Length: $len\r\n\r\n",
              $smuggled);

check_refused('no route, chunked',
              "POST /nowhere HTTP/1.1\r\nHost: localhost\r\n"
              . "Expect: 100-continue\r\n"
              . "Transfer-Encoding: chunked\r\n\r\n",
              sprintf("%x\r\n%s\r\n0\r\n\r\n", $len, $smuggled));

# a body over the route's max_bytes, by its Content-Length

check_refused('over max_bytes',
              "POST /upload HTTP/1.1\r\nHost: localhost\r\n"
              . "Expect: 100-continue\r\nContent-Length: $len\r\n\r\n",
              $smuggled);

# a route that takes no body, by its Content-Length

check_refused('no body on the route',
              "GET /items HTTP/1.1\r\nHost: localhost\r\n"
              . "Expect: 100-continue\r\nContent-Length: $len\r\n\r\n",
              $smuggled);

# a body the decision reads: 100 Continue, then the answer

{
    my $before = $p->echo_count;
    my $s = connect_proxy();

    http("POST /upload HTTP/1.1\r\nHost: localhost\r\n"
         . "Connection: close\r\nExpect: 100-continue\r\n"
         . "Content-Length: 5\r\n\r\n", socket => $s, start => 1);

    my $raw = http(undef, socket => $s, one => 1, timeout => 10) // '';
    like($raw, qr{^HTTP/1\.1 100 }, 'a body read: 100 Continue');

    http('hello', socket => $s, start => 1);
    my ($interim, $r) = @{answers_on($s)};
    close $s;

    is($r->{status}, 200, 'a body read: 200');
    is($p->echo_count, $before + 1, 'a body read: forwarded');
}

# refused, no body announced: no 100, and the connection goes on

{
    my $s = connect_proxy();

    http("GET /nowhere HTTP/1.1\r\nHost: localhost\r\n"
         . "Expect: 100-continue\r\n\r\n", socket => $s, start => 1);
    my ($interim, $r) = @{answers_on($s)};

    is("@$interim", '', 'no body: no 100 Continue');
    is($r->{status}, 403, 'no body: 403');
    unlike($r->{headers}{connection} // '', qr/close/i,
           'no body: the connection is kept');

    my $after = parse_response(http($next, socket => $s, timeout => 10));
    close $s;

    is($after->{status}, 200, 'no body: the next request is answered');
}

is($t->error_log_check, '', 'no alerts');
