#!/usr/bin/perl

# ngx_http_airlock_module: the upstream's trailers are scrubbed.  From
# nginx 1.27.2 "proxy_pass_trailers on" hands a chunked upstream's
# trailers to the client, after the body: the header filter has long run
# by then, so an upstream that echoed the injected credential in a
# trailer (its value, or its name) handed it on whole.  They are scrubbed
# as headers are when the last buffer passes the body filter.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::RawScrub qw(raw_scrub);

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
    . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    . "5\r\nhello\r\n0\r\n"
    . "X-Echo: %AUTH%\r\nX-Tok: a%TOK%b\r\nX-%TOK%: v\r\nX-Plain: kept\r\n\r\n";

my ($t, $tok) = raw_scrub(directive => 'proxy_pass_trailers on',
                          since => '1.27.2', answer => $answer);

plan tests => 7;

my $raw = $t->http("GET /a HTTP/1.1\r\nHost: localhost\r\nTE: trailers\r\n"
                   . "Connection: close\r\n\r\n") // '';
my $r = parse_response($raw);

is($r->{status}, 200, 'trailers: 200');
like($raw, qr/\r\nX-Plain: kept\r\n/i, 'the trailers went to the client');
ok(index($raw, $tok) < 0, 'no credential in the response')
    or diag($raw);
like($raw, qr/\r\nX-Echo: \[REDACTED\]\r\n/i, 'a trailer value: redacted');
like($raw, qr/\r\nX-Tok: a\[REDACTED\]b\r\n/i, 'inside a value: redacted');
unlike($raw, qr/\r\nX-[^:\r\n]*\Q@{[ substr($tok, 0, 6) ]}/i,
       'a trailer whose name holds the credential is not sent');

my $access = $t->read_file('airlock.log');
like($access, qr/^local bearer - [0-9a-f]{32} 1 200$/m,
     '$airlock_scrubbed is 1');
