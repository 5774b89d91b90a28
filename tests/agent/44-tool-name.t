#!/usr/bin/perl

# airlock-agent: a tool name the model chose is bounded wherever the
# agent shows or keeps it.  No tool has a name over 64 bytes (what
# OpenAI takes), but the model may send one of any size its stream
# carries (hundreds of KiB); it went whole into the error event the
# client got, into the run's record and the tool message the session
# keeps, and back to the provider in every later request.  Now such a
# call's name is cut to its first 64 bytes and "..." in the event, the
# session and the history sent, and it names no tool (an unknown tool,
# as before); a name of 64 bytes or less is taken as it came.

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
my $cut = ('n' x 64) . '...';

$a->script({ tool_calls => [ { name => $long, arguments => {} },
                             { name => 'm' x 64, arguments => {} } ] },
           { pieces => [ 'done' ] });
my ($ev, $raw) = $a->ask('name-1', 'a long tool name');

my @err = of_type('error', $ev);
is(join(',', map { $_->{code} } @err), 'unknown_tool,unknown_tool',
   'the long name and the 64-byte one: unknown tools');
is(($err[0] // {})->{tool}, $cut, 'the event names it cut');
is(($err[1] // {})->{tool}, 'm' x 64, 'a 64-byte name is shown whole');
like(($err[0] // {})->{message} // '',
     qr/^there is no tool named "n{64}"$/, 'the message names it cut');
unlike($raw, qr/n{1000}/, 'the client got none of the name whole');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer',
   'the run went on and answered');

my $r = $a->session('name-1');
unlike(encode_json($r->{json} // {}), qr/n{1000}/,
       'the session keeps none of it whole');

my @prov = $a->provider_requests;
my $sent = encode_json(($prov[-1] // {})->{body} // {});
ok($sent =~ /\Q"name":"$cut"\E/ && $sent !~ /n{1000}/,
   'the history sent names the call cut');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
