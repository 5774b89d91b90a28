#!/usr/bin/perl

# ngx_http_airlock_llm_module: llama.cpp's server (an openai-compatible
# entry) takes a completions "prompt" that is a list of objects,
# {"prompt_string": ..., "multimodal_data": [...]}, as a batch, and
# writes an answer to each, up to max_tokens each, as it does for a
# list of strings or of token lists (49-llm-prompt-batch.t).  The output
# reserved is the cap times the objects too: before, a list of objects
# was taken for one prompt, so a call could reserve one answer's output
# and be billed for thousands, and calls admitted together could spend a
# budget many times over.  A list of token ids stays one prompt.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# tight: 1000 tokens a minute, max_tokens 20 (clamped)
$l->setup(tight_tpm => 1000);
$t->run;

plan tests => 7;

sub complete {
    my ($prompt, %f) = @_;
    return $l->request('POST', '/v1/proxy/openai/completions',
                       token => $l->token('tight'),
                       body => { model => 'gpt-4o-mini', prompt => $prompt,
                                 max_tokens => 20, %f });
}

sub objects {
    my ($n) = @_;
    return [ map { { prompt_string => "p$_" } } 1 .. $n ];
}

my $n = scalar $l->provider_requests;

my $r = complete(objects(60));
is($r->{status}, 429, 'a batch of 60 prompt objects at 20 tokens each: '
                      . 'over 1000');
is(scalar $l->provider_requests, $n, '... not sent');

$r = complete(objects(30), n => 2);
is($r->{status}, 429, '30 prompt objects with n 2: over 1000');

$r = complete(objects(20));
is($r->{status}, 200, '20 prompt objects: 400 fits');
cmp_ok($r->{headers}{'x-ratelimit-remaining-tokens'} // 1000, '<=', 600,
       '... and 400 output tokens are reserved for them');
is(scalar @{$l->last_provider_request->{body}{prompt} // []}, 20,
   '... sent as written');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
