#!/usr/bin/perl

# ngx_http_airlock_llm_module: Anthropic's top-level "container" names
# a container the account stores (an id, or an object with one) or
# skills it uploaded (of type "custom"), whether or not the request
# lists a code execution tool: the web_search and web_fetch tools of
# 20260209 run their filtering code in a code execution container, the
# one the request names.  Refused (body, 400, naming provider_tools:
# stored_files, nothing sent) unless the entry's provider_tools allows
# stored_files, however the key is spelled, and on any endpoint where
# allow_members lets the member through; the container is read whole,
# so a file named by its id in it is refused too.  A new container with
# Anthropic's own skills passes.  An input by URL in a tool the provider
# runs (an image_generation tool's "input_image_mask" "image_url") is
# downloaded by the provider as a prompt's input is: refused unless
# provider_tools allows url_input; a data: URL passes.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $openai = "    provider_tools: [image_generation]\n"
           . "    allow_members: [container]";
my $anthropic = '    provider_tools: [web_search, web_fetch]';

$l->setup(openai_fields => $openai, anthropic_fields => $anthropic);
$t->run;

plan tests => 29;

my $agent = $l->token('agent');

sub sent { scalar $l->provider_requests }

my $search = { type => 'web_search_20260209', name => 'web_search' };
my $fetch = { type => 'web_fetch_20260209', name => 'web_fetch' };
my $custom = { type => 'custom', skill_id => 'skill_01FAKE3',
               version => 'latest' };
my $own = { type => 'anthropic', skill_id => 'pptx', version => 'latest' };

sub messages {
    my (%fields) = @_;
    return $l->messages(token => $agent, fields => { %fields });
}

sub mask {
    my ($url) = @_;
    return $l->responses($agent, input => 'Draw a cat',
                         tools => [ { type => 'image_generation',
                                      input_image_mask => {
                                          image_url => $url } } ]);
}

my $n = sent();

my $r = messages(tools => [ $search ], container => 'container_FAKE1');
is($r->{status}, 400, 'messages: a container by its id beside web_search: 400');
like($r->{body}, qr/container.*provider_tools: stored_files/,
     '... naming the member and the family');

$r = messages(tools => [ $fetch ], container => { id => 'container_FAKE1' });
is($r->{status}, 400, '... an object with its id beside web_fetch: 400');

$r = messages(container => 'container_FAKE1');
is($r->{status}, 400, '... with no tool at all: 400');

$r = messages(container => { id => 'container_FAKE1', skills => [ $own ] });
is($r->{status}, 400, '... with its id and Anthropic\'s skills: 400');

$r = messages(tools => [ $search ], container => { skills => [ $custom ] });
is($r->{status}, 400, 'messages: a custom skill with no code tool: 400');
like($r->{body}, qr/skill_id.*provider_tools: stored_files/, '... naming it');

$r = messages(container => { skills => [ $own ],
                             file_ids => [ 'file-FAKE4' ] });
is($r->{status}, 400, 'messages: a container naming files by their ids: 400');
like($r->{body}, qr/file_ids.*stored_files/, '... naming them');

$r = $l->request('POST', '/v1/proxy/anthropic/messages', token => $agent,
                 anthropic => 1,
                 body => '{"model":"claude-3-5-haiku","max_tokens":100,'
                       . '"messages":[{"role":"user","content":"Hi"}],'
                       . '"contain\u0065r":"container_FAKE1"}');
is($r->{status}, 400, 'messages: the key spelled with an escape: 400');
like($r->{body}, qr/stored_files/, '... as stored_files');

is(sent(), $n, '... none of them sent');

$r = messages(tools => [ $search ], container => { skills => [ $own ] });
is($r->{status}, 200, 'messages: a new container, Anthropic\'s skills: 200');

$r = messages(container => undef);
is($r->{status}, 200, 'messages: a null container passes');

$r = messages(tools => [ $search ]);
is($r->{status}, 200, 'messages: web_search with no container passes');

# on another endpoint, where allow_members lets it through

$n = sent();

$r = $l->chat(token => $agent, fields => { container => 'container_FAKE1' });
is($r->{status}, 400, 'chat/completions: a container by its id: 400');
like($r->{body}, qr/container.*stored_files/, '... as stored_files');
is(sent(), $n, '... not sent');

# an input by URL in a tool the provider runs

$n = sent();

$r = mask('https://attacker.example/FAKE-mask.png');
is($r->{status}, 400, 'responses: an image_generation mask by URL: 400');
like($r->{body}, qr/image_url.*provider_tools: url_input/,
     '... naming the member and the family');
is(sent(), $n, '... not sent');

$r = mask('data:image/png;base64,iVBORw0KGgo=');
is($r->{status}, 200, '... a mask as a data: URL passes');

# ---- entries that allow stored_files and url_input --------------------------

$t->write_file_expand('policy.yaml',
    $l->policy(openai_fields => "    provider_tools: [image_generation, "
                                . "url_input, stored_files]\n"
                                . "    allow_members: [container]",
               anthropic_fields => '    provider_tools: [web_search, '
                                   . 'web_fetch, stored_files]'));
$t->reload;

$r = messages(tools => [ $search ], container => 'container_FAKE1');
is($r->{status}, 200, 'stored_files allowed: a container by its id passes');
is($l->last_provider_request->{body}{container}, 'container_FAKE1',
   '... sent as written');

$r = messages(container => { skills => [ $custom ] });
is($r->{status}, 200, '... and a custom skill');

$r = $l->chat(token => $agent, fields => { container => 'container_FAKE1' });
is($r->{status}, 200, '... and on chat/completions');

$r = mask('https://example.com/FAKE-mask.png');
is($r->{status}, 200, 'url_input allowed: a mask by URL passes');
is($l->last_provider_request->{body}{tools}[0]{input_image_mask}{image_url},
   'https://example.com/FAKE-mask.png', '... sent as written');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
