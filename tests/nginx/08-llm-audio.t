#!/usr/bin/perl

# ngx_http_airlock_llm_module: audio is billed at audio prices, many
# times the text prices the policy has (gpt-4o-audio-preview: 16 times the
# input price, 8 times the output price), and the provider counts audio
# tokens in the same prompt_tokens and completion_tokens the gateway
# prices as text.  A client with a dollar budget could spend past it, so
# its calls that ask for audio are refused (body, 400, nothing sent), as
# a dearer service tier and fast mode are: audio output ("modalities"
# other than ["text"], or "audio"), and audio input (an "input_audio"
# content part, at any depth).  Clients without a dollar budget, whose
# token budgets count audio tokens as tokens, may ask for it.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (spender => $l->setup_spender('al-spender-token-777888999000'));

$t->run;

plan tests => 13;

my $n = scalar $l->provider_requests;

my $r = $l->chat(token => $tok{spender},
                 fields => { modalities => [ 'text', 'audio' ],
                             audio => { voice => 'alloy',
                                        format => 'wav' } });
is($r->{status}, 400, 'a budgeted client asking for audio output: 400');
like($r->{body}, qr/invalid_request_body/, '... in OpenAI\'s format');
like($r->{body}, qr/modalities/, '... saying why');

$r = $l->chat(token => $tok{spender},
              fields => { audio => { voice => 'alloy', format => 'wav' } });
is($r->{status}, 400, '"audio" alone: 400');

$r = $l->chat(token => $tok{spender}, fields => { modalities => ['audio'] });
is($r->{status}, 400, '"modalities" alone: 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $tok{spender},
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":[{"type":"text","text":"What is it?"},'
                         . '{"type":"input_audio","input_audio":{"data":'
                         . '"UklGRg==","format":"wav"}}]}]}');
is($r->{status}, 400, 'an input_audio part: 400');
like($r->{body}, qr/input_audio/, '... saying why');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $tok{spender},
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"Hi"}],"modalities":["te\u0078t",'
                         . '"a\u0075dio"]}');
is($r->{status}, 400, '"modalities" with escapes: 400');
is(scalar $l->provider_requests, $n, '... none of them sent');

$r = $l->chat(token => $tok{spender}, fields => { modalities => ['text'] });
is($r->{status}, 200, '"modalities": ["text"] passes');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $tok{spender},
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"Hi"}],"modalities":null,'
                         . '"audio":null}');
is($r->{status}, 200, 'null passes');

$r = $l->chat(token => $l->token('agent'),
              fields => { modalities => [ 'text', 'audio' ],
                          audio => { voice => 'alloy', format => 'wav' } });
is($r->{status}, 200, 'a client without a dollar budget may ask for audio');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $l->token('agent'),
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":[{"type":"input_audio","input_audio":'
                         . '{"data":"UklGRg==","format":"wav"}}]}]}');
is($r->{status}, 200, '... and send it');

$t->stop;
