#!/usr/bin/perl

# airlock-agent's request reading: what frames a request is taken one
# way only, or refused (400), never guessed.  Two Content-Length headers
# were taken as the last (a front end that took the first would have
# framed another body), one with more after its digits ("30abc", "+30")
# as the number strtoul() read; a request line with no HTTP version,
# or more after it, was served, as was one with a NUL in its target (as
# the target up to it); a request target over 511 bytes was cut to fit
# (sscanf's width) and served as the shorter one.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
$a->setup;

plan tests => 18;

my $sock = $a->{agents}{a}{sock};

sub send_raw {
    my ($req) = @_;
    my $r = Airlock::Test::parse_response($t->http($req, unix => $sock,
                                                   timeout => 30) // '');
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}

sub calls { scalar(() = $a->provider_requests) }

my $body = encode_json({ prompt => 'framed?' });
my $len = length $body;

sub ask_with {
    my ($id, @head) = @_;
    return send_raw("POST /v1/sessions/$id/ask HTTP/1.1\r\nHost: a\r\n"
                    . join('', map { "$_\r\n" } @head)
                    . "Connection: close\r\n\r\n$body");
}

my $before = calls();

for my $case ([ 'two, the first short', "Content-Length: 2",
                "Content-Length: $len" ],
              [ 'two, the same', "Content-Length: $len",
                "Content-Length: $len" ],
              [ 'digits then more', "Content-Length: ${len}abc" ],
              [ 'a sign', "Content-Length: +$len" ],
              [ 'empty', "Content-Length: " ],
              [ 'a comma list', "Content-Length: $len, $len" ]) {
    my ($what, @h) = @$case;
    my $r = ask_with('framing-1', @h);
    is("$r->{status} " . ($r->{json}{error} // ''), '400 bad_request',
       "Content-Length $what: 400");
}
is(calls(), $before, 'the model called for none of them');

$a->script({ pieces => [ 'framed' ] });
my $r = ask_with('framing-2', "Content-Length: $len \t");
is($r->{status}, 200, 'one Content-Length, spaces after it: taken');

for my $case ([ 'no HTTP version', "GET /healthz\r\n\r\n" ],
              [ 'more after the version',
                "GET /healthz HTTP/1.1x\r\nHost: a\r\n\r\n" ],
              [ 'HTTP/2.0', "GET /healthz HTTP/2.0\r\nHost: a\r\n\r\n" ],
              [ 'two spaces', "GET  /healthz HTTP/1.1\r\nHost: a\r\n\r\n" ],
              [ 'a target of 600 bytes',
                "GET /healthz?" . ('x' x 600)
                . " HTTP/1.1\r\nHost: a\r\n\r\n" ],
              [ 'a NUL in the target',
                "GET /healthz\0/x HTTP/1.1\r\nHost: a\r\n\r\n" ],
              [ 'a method of 20 bytes',
                ('G' x 20) . " /healthz HTTP/1.1\r\nHost: a\r\n\r\n" ]) {
    my ($what, $req) = @$case;
    is(send_raw($req)->{status}, 400, "request line, $what: 400");
}

is(send_raw("GET /healthz HTTP/1.0\r\nHost: a\r\n\r\n")->{status}, 200,
   'HTTP/1.0: served');
is(send_raw("GET /healthz?" . ('x' x 400) . " HTTP/1.1\r\nHost: a\r\n\r\n")
       ->{status}, 200, 'a target of 413 bytes: served');

is($a->agent_errors, '', 'no sanitizer reports from the agent');
