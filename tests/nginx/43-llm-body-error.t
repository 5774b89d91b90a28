#!/usr/bin/perl

# ngx_http_airlock_llm_module: a request body nginx fails to read (a
# chunked body over client_max_body_size, a bad chunk) with an error_page
# that leads back into the gateway's location.  The error page runs the
# access phases again while the gateway still waits for the body; every
# such request must be answered, in the provider's format, and the
# connection closed, since the rest of the body was never read.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(location => 'client_max_body_size 100; '
                      . 'error_page 400 413 /v1/proxy/openai/error;');
$t->run;

plan tests => 11;

my $agent = $l->token('agent');

my $head = "POST /v1/proxy/openai/chat/completions HTTP/1.1\r\n"
         . "Host: localhost\r\nAuthorization: Bearer $agent\r\n"
         . "Content-Type: application/json\r\n"
         . "Transfer-Encoding: chunked\r\n\r\n";

# the headers first, the body a moment later: nginx reads it, and fails,
# after the access phase handler has returned

sub send_late {
    my ($body) = @_;
    my $s = http([ $head, $body ], start => 1, pause => 0.2)
        or return (undef, undef);
    my $raw = http(undef, socket => $s, one => 1);
    my $more = '';
    my $eof = IO::Select->new($s)->can_read(30)
              && defined sysread($s, $more, 1) && !length $more;
    close $s;
    return ($raw, $eof);
}

sub error_code {
    my ($raw) = @_;
    my $j = Airlock::LLM::jdecode(parse_response($raw)->{body});
    return $j && ref $j->{error} eq 'HASH' ? $j->{error}{code} // '' : '';
}

my ($raw, $eof, $r);

($raw, $eof) = send_late(sprintf("%x\r\n%s\r\n", 200, 'x' x 200));
$r = parse_response($raw);
is($r->{status}, 413, 'chunked body over the limit: answered 413');
is(error_code($raw), 'request_too_large',
   'chunked body over the limit: an OpenAI error');
ok($eof, 'chunked body over the limit: connection closed');

($raw, $eof) = send_late("zz\r\nxx\r\n");
$r = parse_response($raw);
is($r->{status}, 400, 'bad chunk: answered 400');
is(error_code($raw), 'invalid_request_body', 'bad chunk: an OpenAI error');
ok($eof, 'bad chunk: connection closed');

# the body in the same packet as the headers: read at once

$raw = http($head . sprintf("%x\r\n%s\r\n", 200, 'x' x 200));
$r = parse_response($raw);
is($r->{status}, 413, 'at once, over the limit: 413');
is(error_code($raw), 'request_too_large', 'at once: an OpenAI error');

# nothing reached the provider, and a good body still passes

is(scalar(() = $l->provider_requests), 0, 'the provider saw none of them');

$r = $l->chat(token => $agent);
is($r->{status}, 200, 'a good request: 200');

is($t->error_log_check, '', 'no alerts');
