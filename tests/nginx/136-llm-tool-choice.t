#!/usr/bin/perl

# ngx_http_airlock_llm_module: "tool_choice" may name a tool the provider
# runs itself (the Responses API's {"type": "web_search_preview"},
# {"type": "mcp", ...}, {"type": "allowed_tools", "tools": [...]}), and a
# server behind the entry runs it though "tools" does not list it.  Such
# a choice is refused (400, in the provider's format, nothing sent) unless
# the entry's provider_tools allows the tool's family, as the tool in
# "tools" would be; an unknown type or a choice of the wrong shape is
# refused too, on every kind of entry.  The choices that name no tool or
# one the client runs pass.  After a reload with provider_tools, the
# allowed family passes and the others are still refused.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# a third entry, openai-compatible, at the same scripted provider

my $compat = <<'Y';
  - name: local
    prefix: /v1/proxy/local
    provider: openai-compatible
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    max_body_bytes: 65536
    clients:
      agent: {}
Y

my $locations = <<'L';
        location /v1/proxy/local/ {
            airlock_llm local;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 10s;
        }
L

$l->setup(anthropic_clients => $compat, locations => $locations);
$t->run;

plan tests => 34;

my $agent = $l->token('agent');

sub provider_count { scalar $l->provider_requests }

sub error_of {
    my ($r) = @_;
    return ($r->{json} && ref $r->{json}{error} eq 'HASH')
           ? $r->{json}{error} : {};
}

my $function = { type => 'function', name => 'f',
                 parameters => { type => 'object', properties => {} } };

sub responses {
    my ($choice) = @_;
    return $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                       body => { model => 'gpt-4o-mini', input => 'Hi',
                                 tools => [$function],
                                 tool_choice => $choice });
}

sub chat_on {
    my ($entry, $choice) = @_;
    return $l->request('POST', "/v1/proxy/$entry/chat/completions",
                       token => $agent, body => {
                           model => 'gpt-4o-mini',
                           messages => [ { role => 'user',
                                           content => 'Hi' } ],
                           tools => [ { type => 'function',
                                        function => { name => 'f' } } ],
                           tool_choice => $choice });
}

sub messages_choice {
    my ($choice) = @_;
    return $l->messages(token => $agent, fields => {
        tools => [ { name => 'f', input_schema => { type => 'object' } } ],
        tool_choice => $choice });
}

# ---- the default: no provider tool ---------------------------------------

my $n = provider_count();

my $r = responses({ type => 'web_search_preview' });
is($r->{status}, 400, 'responses, tool_choice web_search_preview: 400');
is(error_of($r)->{type}, 'invalid_request_error',
   'web_search_preview: invalid_request_error');
like(error_of($r)->{message},
     qr/tool type "web_search_preview" in "tool_choice" is run by the (?x:
        )provider; the policy does not allow it \(provider_tools: web_search/,
     'web_search_preview: the message names the type and the family');

for my $type (qw(file_search code_interpreter image_generation
                 computer_use_preview))
{
    $r = responses({ type => $type });
    is($r->{status}, 400, "responses, tool_choice $type: 400");
}

$r = responses({ type => 'mcp', server_label => 'x' });
is($r->{status}, 400, 'responses, tool_choice mcp: 400');

$r = responses({ type => 'allowed_tools', mode => 'auto',
                 tools => [ { type => 'function', name => 'f' },
                            { type => 'image_generation' } ] });
is($r->{status}, 400, 'responses, allowed_tools with image_generation: 400');
like(error_of($r)->{message}, qr/provider_tools: image_generation/,
     'allowed_tools: the message names the family');

$r = chat_on('openai', { type => 'allowed_tools',
                         allowed_tools => { mode => 'required',
                                            tools => [ { type => 'mcp' } ] }
                       });
is($r->{status}, 400, 'chat, allowed_tools with mcp: 400');

$r = chat_on('openai', { type => 'frobnicate' });
is($r->{status}, 400, 'chat, an unknown tool_choice type: 400');
like(error_of($r)->{message}, qr/"frobnicate" in "tool_choice" is unknown/,
     'an unknown type: named');

$r = chat_on('openai', 1);
is($r->{status}, 400, 'chat, a tool_choice that is a number: 400');

$r = chat_on('openai', { function => { name => 'f' } });
is($r->{status}, 400, 'chat, a tool_choice object of no type: 400');

$r = messages_choice({ type => 'web_fetch_20250910' });
is($r->{status}, 400, 'messages, tool_choice web_fetch: 400');
is(error_of($r)->{type}, 'invalid_request_error',
   'messages: invalid_request_error');

$r = chat_on('local', { type => 'code_interpreter' });
is($r->{status}, 400, 'openai-compatible, tool_choice code_interpreter: 400');

$r = $l->request('POST', '/v1/proxy/local/chat/completions',
                 token => $agent,
                 body => '{"model":"gpt-4o-mini","messages":[],'
                         . '"tool_choice":{"type":"function",'
                         . '"TYPE":"web_search"}}');
is($r->{status}, 400, 'openai-compatible, TYPE beside type: 400');

is(provider_count(), $n, 'refused choices never reach the provider');

my ($d) = grep { ($_->{detail} // '') =~ /in "tool_choice" is run by/ }
          $l->proxy->deny_log;
is($d && $d->{reason}, 'body', 'deny log: reason body, the detail');

# ---- choices that name no tool, or the client's, pass ---------------------

$r = chat_on('openai', 'auto');
is($r->{status}, 200, 'chat, tool_choice "auto": 200');

$r = chat_on('openai', { type => 'function', function => { name => 'f' } });
is($r->{status}, 200, 'chat, a function by name: 200');
is($l->last_provider_request->{body}{tool_choice}{function}{name}, 'f',
   'the function choice forwarded');

$r = responses({ type => 'allowed_tools', mode => 'auto',
                 tools => [ { type => 'function', name => 'f' } ] });
is($r->{status}, 200, 'responses, allowed_tools of functions: 200');

$r = messages_choice({ type => 'tool', name => 'f' });
is($r->{status}, 200, 'messages, a tool by name: 200');

$r = messages_choice({ type => 'any' });
is($r->{status}, 200, 'messages, any: 200');

$r = chat_on('local', 'required');
is($r->{status}, 200, 'openai-compatible, "required": 200');

# ---- provider_tools allows a family ----------------------------------------

$t->write_file_expand('policy.yaml', $l->policy(
    openai_fields => '    provider_tools: [web_search]',
    anthropic_clients => $compat));
ok(eval { $t->reload }, 'reload with provider_tools') or diag($@);

$r = responses({ type => 'web_search_preview' });
is($r->{status}, 200, 'web_search allowed: tool_choice web_search_preview 200');
is($l->last_provider_request->{body}{tool_choice}{type},
   'web_search_preview', 'the choice forwarded');

$r = responses({ type => 'allowed_tools', mode => 'auto',
                 tools => [ { type => 'web_search_preview' },
                            { type => 'mcp', server_label => 'x' } ] });
is($r->{status}, 400, 'web_search allowed: allowed_tools with mcp still 400');

$r = chat_on('local', { type => 'web_search' });
is($r->{status}, 400, 'another entry does not take the grant');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
