#!/usr/bin/perl

# ngx_http_airlock_module: an upstream's 103 Early Hints are scrubbed.
# From nginx 1.29.0, "early_hints" (here or inherited from the server or
# http level) sends the headers of an upstream's 103 to the client at
# once, through a filter chain of their own that the scrubbing header
# filter was not on, so an upstream that echoed the injected credential in
# one (a Link, any header, or a header's name) handed it on whole, before
# the final answer.  The module's early-hints filter scrubs them as it
# scrubs the final headers.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::RawScrub qw(raw_scrub);

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $answer = "HTTP/1.1 103 Early Hints\r\n"
    . "Link: </s.css?k=%TOK%>; rel=preload\r\n"
    . "X-Echo: %AUTH%\r\nX-%TOK%: v\r\nX-Plain: kept\r\n\r\n"
    . "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
    . "Content-Length: 5\r\nConnection: close\r\n\r\nhello";

my ($t, $tok) = raw_scrub(directive => 'early_hints 1',
                          since => '1.29.0', answer => $answer);

plan tests => 8;

my $raw = $t->http("GET /a HTTP/1.1\r\nHost: localhost\r\n"
                   . "Connection: close\r\n\r\n") // '';
my ($hints) = $raw =~ /^(HTTP\/1\.1 103 .*?\r\n\r\n)/s;
$hints //= '';

like($raw, qr/\r\n\r\nHTTP\/1\.1 200 /, 'the final answer: 200');
like($hints, qr/\r\nX-Plain: kept\r\n/i, 'the early hints went to the client');
ok(index($raw, $tok) < 0, 'no credential in the response')
    or diag($raw);
like($hints, qr/\r\nX-Echo: \[REDACTED\]\r\n/i, 'a header value: redacted');
like($hints, qr/\r\nLink: <\/s\.css\?k=\[REDACTED\]>; rel=preload\r\n/i,
     'a Link: redacted');
unlike($hints, qr/\r\nX-[^:\r\n]*\Q@{[ substr($tok, 0, 6) ]}/i,
       'a header whose name holds the credential is not sent');
like(parse_response($raw =~ s/^HTTP\/1\.1 103 .*?\r\n\r\n//sr)->{body},
     qr/^hello$/, 'the final body');

my $access = $t->read_file('airlock.log');
like($access, qr/^local bearer - [0-9a-f]{32} 1 200$/m,
     '$airlock_scrubbed is 1');
