#!/usr/bin/perl

# ngx_http_airlock_llm_module: tools the provider runs itself.  A boxed
# client that may call the model must not get the provider to fetch a URL
# for it: OpenAI's remote MCP and web search tools, Chat Completions'
# web_search_options, OpenRouter's web plugin, Anthropic's mcp_servers
# and server tools (web search, web fetch) are refused (400 in the provider's format) unless
# the entry's provider_tools allows their family.  Tools the client runs
# (function, custom, Anthropic tools without a type) pass.  After a
# reload with provider_tools, the allowed families pass and the others
# are still refused.  A tool of no type passes on messages alone, and
# there only when it has a name; one of type function or custom that
# names no tool is refused, in "tools" and in an allowed_tools choice.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;
$t->run;

plan tests => 46;

my $agent = $l->token('agent');

sub provider_count { scalar $l->provider_requests }

sub oai_error {
    my ($r) = @_;
    return ($r->{json} && ref $r->{json}{error} eq 'HASH')
           ? $r->{json}{error} : {};
}

sub ant_error { oai_error(@_) }

sub responses {
    my (@tools) = @_;
    return $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                       body => { model => 'gpt-4o-mini', input => 'Hi',
                                 tools => \@tools });
}

sub messages_with {
    my (%f) = @_;
    return $l->messages(token => $agent, fields => \%f);
}

my $mcp = { type => 'mcp', server_label => 'x',
            server_url => 'https://attacker.example/mcp',
            require_approval => 'never' };
my $search = { type => 'web_search_preview' };
my $function = { type => 'function', name => 'f',
                 parameters => { type => 'object', properties => {} } };
my $mcp_servers = [{ type => 'url', url => 'https://attacker.example/sse',
                     name => 'x' }];
my $ant_search = { type => 'web_search_20250305', name => 'web_search' };
my $ant_fetch = { type => 'web_fetch_20250910', name => 'web_fetch' };

# ---- the default: no provider tool ---------------------------------------

my $n = provider_count();

my $r = responses($mcp, $search);
is($r->{status}, 400, 'responses, remote MCP: 400');
is(oai_error($r)->{type}, 'invalid_request_error',
   'remote MCP: invalid_request_error');
like(oai_error($r)->{message},
     qr/tool type "mcp" is run by the provider; the policy does not allow/,
     'remote MCP: the message names the tool type');

$r = responses($search);
is($r->{status}, 400, 'responses, web_search_preview: 400');

$r = responses({ type => 'frobnicate' });
is($r->{status}, 400, 'responses, an unknown tool type: 400');

$r = $l->chat(token => $agent, fields => { web_search_options => {} });
is($r->{status}, 400, 'chat, web_search_options: 400');
like(oai_error($r)->{message}, qr/web_search_options/,
     'web_search_options: the message names it');

# OpenRouter's plugins: "web" searches the web for the prompt

$r = $l->chat(token => $agent, fields => { plugins => [ { id => 'web' } ] });
is($r->{status}, 400, 'chat, plugins web (OpenRouter): 400');
like(oai_error($r)->{message}, qr/plugins.*web_search/,
     'plugins: the message names it and the family');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $agent,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"Hi"}],"plugins":[{"id":'
                         . '"response-healing"},{"id":"w\u0065b"}]}');
is($r->{status}, 400, 'a web plugin (escaped) after another one: 400');

$r = $l->chat(token => $agent, fields => { plugins => [ { id => 'x' } ] });
is($r->{status}, 400, 'a plugin unknown to the gateway: 400');

$r = messages_with(mcp_servers => $mcp_servers);
is($r->{status}, 400, 'messages, mcp_servers: 400');
is(ant_error($r)->{type}, 'invalid_request_error',
   'mcp_servers: invalid_request_error');
like(ant_error($r)->{message}, qr/mcp_servers/,
     'mcp_servers: the message names it');

$r = messages_with(tools => [$ant_search]);
is($r->{status}, 400, 'messages, web search: 400');

$r = messages_with(tools => [{ name => 'f', input_schema => {} },
                             $ant_fetch]);
is($r->{status}, 400, 'messages, web fetch after a client tool: 400');
like(ant_error($r)->{message}, qr/web_fetch_20250910/,
     'web fetch: the message names the tool type');

# a tool of no type is Anthropic's own on messages alone: elsewhere a
# router reads one as a tool the provider runs (LiteLLM: Gemini's Google
# Search, URL context, code execution)

$r = $l->chat(token => $agent, fields => { tools => [ { urlContext => {} } ] });
is($r->{status}, 400, 'chat, a tool of no type (urlContext): 400');
like(oai_error($r)->{message}, qr/has no "type": it is refused on chat/,
     'a tool of no type: the message says so');

$r = responses({ googleSearch => {} });
is($r->{status}, 400, 'responses, a tool of no type (googleSearch): 400');

# LiteLLM drops "type" first: a function or custom tool must name itself

$r = $l->chat(token => $agent, fields => {
    tools => [ { type => 'function', googleSearch => {} } ] });
is($r->{status}, 400, 'chat, a function tool of no function: 400');
like(oai_error($r)->{message},
     qr/type the client runs has no "function", "custom" or "name"/,
     'a tool that names none: the message says so');

$r = responses({ type => 'custom', urlContext => {} });
is($r->{status}, 400, 'responses, a custom tool of no name: 400');

# so must a tool of no type on messages (Anthropic's have a name), and
# the tools of an allowed_tools choice

$r = messages_with(tools => [{ name => 'f', input_schema => {} },
                             { googleSearch => {} }]);
is($r->{status}, 400, 'messages, a tool of no type and no name: 400');
like(ant_error($r)->{message}, qr/has no "type" and no "name"/,
     'a tool of no type and no name: the message says so');

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                 body => { model => 'gpt-4o-mini', input => 'Hi',
                           tool_choice => { type => 'allowed_tools',
                                            mode => 'auto',
                                            tools => [ { type => 'function',
                                                         googleSearch => {} }
                                                     ] } });
is($r->{status}, 400, 'responses, an allowed function of no name: 400');

is(provider_count(), $n, 'refused provider tools never reach the provider');

my ($d) = grep { ($_->{detail} // '') =~ /tool type "mcp"/ }
          $l->proxy->deny_log;
is($d && $d->{reason}, 'body', 'deny log: reason body, the detail');

# ---- client tools pass ----------------------------------------------------

$r = responses($function, { type => 'custom', name => 'g' });
is($r->{status}, 200, 'responses, function and custom tools: 200');
is($l->last_provider_request->{body}{tools}[0]{type}, 'function',
   'function tool forwarded');

$r = $l->chat(token => $agent,
              fields => { tools => [{ type => 'function',
                                      function => { name => 'f' } }] });
is($r->{status}, 200, 'chat, a function tool: 200');

$r = messages_with(tools => [{ name => 'f', input_schema => {} },
                             { type => 'custom', name => 'g',
                               input_schema => {} }]);
is($r->{status}, 200, 'messages, tools without a type or custom: 200');

$r = $l->chat(token => $agent,
              fields => { plugins => [ { id => 'response-healing' },
                                       { id => 'file-parser',
                                         pdf => { engine => 'pdf-text' } }
                                     ] });
is($r->{status}, 200, 'plugins that reach nothing pass');

# ---- provider_tools allows families ----------------------------------------

$t->write_file_expand('policy.yaml', $l->policy(
    openai_fields => '    provider_tools: [web_search]',
    anthropic_fields => '    provider_tools: [mcp, web_search]'));
ok(eval { $t->reload }, 'reload with provider_tools') or diag($@);

$r = responses($search);
is($r->{status}, 200, 'web_search allowed: web_search_preview 200');
is($l->last_provider_request->{body}{tools}[0]{type}, 'web_search_preview',
   'web_search_preview forwarded');

$r = $l->chat(token => $agent, fields => { web_search_options => {} });
is($r->{status}, 200, 'web_search allowed: web_search_options 200');

$r = $l->chat(token => $agent, fields => { plugins => [ { id => 'web' } ] });
is($r->{status}, 200, 'web_search allowed: plugins web 200');

$r = responses($search, $mcp);
is($r->{status}, 400, 'web_search allowed: mcp still 400');
like(oai_error($r)->{message}, qr/tool type "mcp"/,
     'mcp still refused: named');

$r = messages_with(mcp_servers => $mcp_servers);
is($r->{status}, 200, 'mcp allowed: mcp_servers 200');
is($l->last_provider_request->{body}{mcp_servers}[0]{url},
   'https://attacker.example/sse', 'mcp_servers forwarded');

$r = messages_with(tools => [$ant_search]);
is($r->{status}, 200, 'web_search allowed: web_search_20250305 200');

$r = messages_with(tools => [$ant_fetch]);
is($r->{status}, 400, 'web_fetch not allowed: 400');

$r = responses($function);
is($r->{status}, 200, 'function tools pass as before');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
