#!/usr/bin/perl

# airlock-agent: a tool name the model chose is bounded wherever the
# agent shows or keeps it.  No tool has a name over 64 bytes (what
# OpenAI takes), but the model may send one of any size its stream
# carries (hundreds of KiB); it went whole into the error event the
# client got, into the run's record and the tool message the session
# keeps, and back to the provider in every later request.  Now a name
# that is none of the agent's tools, of any length, is "_unknown_tool"
# in the event, the session and the history sent (95-tool-call-echo.t
# has the rest).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
$a->setup;

plan tests => 9;

my $long = 'n' x 300000;
my $cut = '_unknown_tool';

$a->script({ tool_calls => [ { name => $long, arguments => {} },
                             { name => 'm' x 64, arguments => {} } ] },
           { pieces => [ 'done' ] });
my ($ev, $raw) = $a->ask('name-1', 'a long tool name');

my @err = of_type('error', $ev);
is(join(',', map { $_->{code} } @err), 'unknown_tool,unknown_tool',
   'the long name and the 64-byte one: unknown tools');
is(($err[0] // {})->{tool}, $cut, 'the event names it by the marker');
is(($err[1] // {})->{tool}, $cut, 'so does a 64-byte one');
unlike(($err[0] // {})->{message} // '', qr/nnn/,
       'the message does not repeat it');
unlike($raw, qr/n{1000}/, 'the client got none of the name whole');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer',
   'the run went on and answered');

my $r = $a->session('name-1');
unlike(encode_json($r->{json} // {}), qr/n{1000}/,
       'the session keeps none of it whole');

my @prov = $a->provider_requests;
my $sent = encode_json(($prov[-1] // {})->{body} // {});
ok($sent =~ /\Q"name":"$cut"\E/ && $sent !~ /n{1000}/,
   'the history sent names the call by the marker');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
