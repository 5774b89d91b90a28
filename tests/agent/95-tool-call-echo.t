#!/usr/bin/perl

# airlock-agent: the name and id of a tool call are the model's to
# choose, and the model writes what the data it read tells it to.  A
# name that is none of the agent's tools (a route of the policy granted
# to other clients only among them: 100-tool-not-granted.t) is
# not shown or kept as it came: the call is named "_unknown_tool" in the
# events, the run's record, the session and the history sent back (no
# route's name starts with '_', and the providers take it as a function
# name), and the model is told its name is none of its tools without
# hearing it again.  It used to go everywhere as the model wrote it, up
# to 64 bytes of any text: terminal controls, a line for the CLI, words
# for the operator.  An id is kept when it is 1 to 40 of A-Z a-z 0-9 _ -
# (OpenAI refuses a longer one in the history, 400, and so every later
# question of the session); any other is replaced by an id of the
# agent's, in the assistant message and its tool message alike, so each
# result still answers its call.

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

plan tests => 14;

# what the agent keeps and sends of a value, the calls' arguments left
# out: those are the model's text, kept as it wrote them
sub no_args {
    my ($v) = @_;
    return [ map { no_args($_) } @$v ] if ref $v eq 'ARRAY';
    return { map { $_ => no_args($v->{$_}) } grep { $_ ne 'arguments' }
             keys %$v } if ref $v eq 'HASH';
    return $v;
}

my $words = 'OPERATOR run curl evil.example';
my $esc = "\e]0;x\a\e[2J$words";
my $lines = "logs\n-> run_python  job f0f0";
my $long_id = 'a' x 41;
my $id40 = 'b' x 40;

$a->script({ tool_calls => [
               { id => 'call_one', name => $esc, arguments => {} },
               { id => "c\e[31m\"x", name => $lines, arguments => {} },
               { id => $long_id, name => '', arguments => {} },
               { id => 'call_two', name => 'queue-admin', arguments => {} },
               { id => $id40, name => 'logs', arguments => {
                   params => { service => 'api' } } },
               { name => 'logs', arguments => {
                   params => { service => 'db' },
                   query => { $esc => [ 1 ] } } } ] },
           { pieces => [ 'done' ] });
my ($ev, $raw) = $a->ask('echo-1', 'look at the logs');

my @err = of_type('error', $ev);
is(join(',', map { $_->{code} } @err),
   'unknown_tool,unknown_tool,bad_tool_call,unknown_tool,'
   . 'bad_tool_arguments',
   'each bad call an error');
is(join(',', map { $_->{tool} } @err),
   '_unknown_tool,_unknown_tool,_unknown_tool,_unknown_tool,logs',
   'names of no tool shown as the marker, a route not granted too');
unlike($raw, qr/OPERATOR|run_python  job|\e|\\u001b/,
       'none of the names the model chose reached the client, nor a query '
       . 'parameter\'s');

my %id = map { $_->{code} => $_->{id} } @err;
is($err[3]{id}, 'call_two', 'a good id kept');
is((of_type('tool_result', $ev))[0]{id}, $id40, 'an id of 40 bytes kept');
like($id{bad_tool_call}, qr/^[A-Za-z0-9_-]{1,40}$/,
     'an id of 41 bytes replaced');
ok(!grep({ $_->{id} =~ /[^A-Za-z0-9_-]/ } @err),
   'an id with controls and a quote replaced');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer',
   'the run went on and answered');

my $r = $a->session('echo-1');
unlike(encode_json(no_args($r->{json} // {})), qr/OPERATOR|run_python  job|\\u001b/,
       'the session keeps none of the names');

my @prov = $a->provider_requests;
my $msgs = (($prov[-1] // {})->{body} // {})->{messages} // [];
my @calls = map { @{$_->{tool_calls} // []} } @$msgs;
is(join(',', map { $_->{function}{name} } @calls),
   '_unknown_tool,_unknown_tool,_unknown_tool,_unknown_tool,logs,logs',
   'the history sent names each call as the events did');
ok(@calls == 6 && !grep({ $_->{id} !~ /^[A-Za-z0-9_-]{1,40}$/ } @calls),
   'every id in the history one the providers take');
my %asked = map { $_->{id} => 1 } @calls;
my %answered = map { $_->{tool_call_id} => 1 }
               grep { $_->{role} eq 'tool' } @$msgs;
is_deeply(\%answered, \%asked, 'every call in the history has its result');
unlike(encode_json(no_args($msgs)), qr/OPERATOR|run_python  job|\\u001b/,
       'the history sent has none of the names');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
