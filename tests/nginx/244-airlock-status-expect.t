#!/usr/bin/perl

# airlock_status and airlock_llm_metrics answer a request with "Expect:
# 100-continue" and a body without "100 Continue" first, as a refusal
# does: the answer needs no body, and nginx's discard sent the 100 as a
# read would, so a client that waited for it uploaded the body only to
# have it thrown away.  The answer says "Connection: close": a client
# that sends no body after it cannot tell where its next request would
# begin; a body sent anyway is never read as a request of its own.  A
# request with no body announced keeps its connection.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(http => <<'EOF');
    airlock_zone airlock 1m;

    server {
        listen 127.0.0.1:%%PORT_8083%%;

        location = /status {
            airlock_status;
        }
    }
EOF
$t->run;

plan tests => 23;


sub connect_to {
    my ($port) = @_;
    return IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                 PeerPort => $t->port($port),
                                 Proto => 'tcp', Timeout => 10)
        or die "connect: $!";
}

sub check_body {
    my ($name, $port, $uri, $framing, $body) = @_;
    my $s = connect_to($port);

    # a body that is a whole request of its own, then another request
    my $next = "GET $uri?next=1 HTTP/1.1\r\nHost: localhost\r\n"
               . "Connection: close\r\n\r\n";

    http("GET $uri HTTP/1.1\r\nHost: localhost\r\n"
         . "Expect: 100-continue\r\n$framing\r\n", socket => $s, start => 1);
    my ($interim, $r) = @{answers_on($s)};

    is("@$interim", '', "$name: no 100 Continue");
    is($r->{status}, 200, "$name: 200");
    like($r->{headers}{connection} // '', qr/close/i,
         "$name: Connection: close");

    my $rest = http($body . $next, socket => $s, timeout => 10) // '';
    close $s;

    unlike($rest, qr{HTTP/1\.1 \d{3}}, "$name: no answer after it")
        or diag($rest);
}

sub check_no_body {
    my ($name, $port, $uri) = @_;
    my $s = connect_to($port);

    http("GET $uri HTTP/1.1\r\nHost: localhost\r\n"
         . "Expect: 100-continue\r\n\r\n", socket => $s, start => 1);
    my ($interim, $r) = @{answers_on($s)};

    is("@$interim", '', "$name, no body: no 100 Continue");
    is($r->{status}, 200, "$name, no body: 200");

    my $after = parse_response(http("GET $uri HTTP/1.1\r\nHost: localhost\r\n"
                                    . "Connection: close\r\n\r\n",
                                    socket => $s, timeout => 10));
    close $s;

    is($after->{status}, 200, "$name, no body: the next request answered");
}

my $inner = "GET /status HTTP/1.1\r\nHost: localhost\r\n\r\n";
my $len = length $inner;

check_body('status, Content-Length', 8083, '/status',
           "Content-Length: $len\r\n", $inner);
check_body('status, chunked', 8083, '/status',
           "Transfer-Encoding: chunked\r\n",
           sprintf("%x\r\n%s\r\n0\r\n\r\n", $len, $inner));
check_no_body('status', 8083, '/status');

$inner = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
$len = length $inner;

check_body('metrics, Content-Length', 8082, '/metrics',
           "Content-Length: $len\r\n", $inner);
check_body('metrics, chunked', 8082, '/metrics',
           "Transfer-Encoding: chunked\r\n",
           sprintf("%x\r\n%s\r\n0\r\n\r\n", $len, $inner));
check_no_body('metrics', 8082, '/metrics');

is($t->error_log_check, '', 'no alerts');
