#!/usr/bin/perl

# ngx_http_airlock_llm_module: a request's thinking budget cannot exceed
# the output tokens the gateway reserved for it.  Thinking tokens are
# output, and the gateway reserves (and caps) the output limit:
# max_tokens, max_completion_tokens, max_output_tokens, or the client's
# default cap when the body names none.  Anthropic's
# thinking.budget_tokens and OpenRouter's reasoning.max_tokens name a
# budget of their own that a provider or a router may honour past that
# limit (Anthropic's interleaved thinking, a router that raises the
# output limit to fit the budget), so one over the limit the request is
# reserved for is refused, 400 in the provider's format, and never sent;
# under it the body goes as it came.  The clamp of an output limit over
# the client's cap does not make room for a budget over the cap.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(openai_fields => "    allow_members: [reasoning]\n");

$t->run;

plan tests => 16;

my $agent = $l->token('agent');        # openai: cap 100; anthropic: 1000

sub thinking {
    my (%o) = @_;
    return $l->messages(token => $agent, max_tokens => $o{max_tokens},
                        fields => { thinking => { type => 'enabled',
                                        budget_tokens => $o{budget} } });
}

my $n = scalar $l->provider_requests;

# ---- Anthropic: thinking.budget_tokens -------------------------------------

my $r = thinking(max_tokens => 900, budget => 800);
is($r->{status}, 200, 'messages: a budget under max_tokens: 200');
my $p = $l->last_provider_request;
is_deeply([ @{$p->{body} // {}}{qw(max_tokens thinking)} ],
          [ 900, { type => 'enabled', budget_tokens => 800 } ],
          'messages: sent as it came');
$n = scalar $l->provider_requests;

$r = thinking(max_tokens => 5000, budget => 4000);
is($r->{status}, 400,
   'messages: max_tokens clamped to 1000, a budget of 4000: 400');
is($r->{json}{error}{type}, 'invalid_request_error',
   'messages: Anthropic\'s invalid_request_error');
like($r->{json}{error}{message} // '',
     qr/thinking\.budget_tokens" 4000 is over the 1000 output tokens/,
     'messages: the message says why');

$r = thinking(max_tokens => 900, budget => 950);
is($r->{status}, 400, 'messages: a budget over max_tokens: 400');

$r = $l->messages(token => $agent, max_tokens => 900,
                  fields => { thinking => { type => 'enabled',
                                            budget_tokens => '800' } });
is($r->{status}, 400, 'messages: a budget that is no integer: 400');

$r = $l->messages(token => $agent, max_tokens => 900,
                  fields => { thinking => { type => 'adaptive' } });
is($r->{status}, 200, 'messages: thinking without a budget: 200');
$n = scalar $l->provider_requests;

# ---- OpenAI-style: reasoning.max_tokens ------------------------------------

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                 body => { model => 'gpt-4o-mini', input => 'Hi',
                           reasoning => { effort => 'high',
                                          max_tokens => 5000 } });
is($r->{status}, 400,
   'responses: no output limit, the cap of 100 added, a budget of 5000: '
   . '400');
is($r->{json}{error}{code}, 'invalid_request_body',
   'responses: OpenAI\'s invalid_request_body');

$r = $l->chat(token => $agent,
              fields => { max_tokens => 80,
                          reasoning => { max_tokens => 81 } });
is($r->{status}, 400, 'chat (allow_members: reasoning): over: 400');

$r = $l->chat(token => $agent,
              fields => { max_tokens => 500,
                          reasoning => { max_tokens => 400 } });
is($r->{status}, 400,
   'chat: max_tokens clamped to 100, a budget of 400: 400');

is(scalar $l->provider_requests, $n, 'no refused call reached the provider');

$r = $l->chat(token => $agent,
              fields => { max_tokens => 80,
                          reasoning => { max_tokens => 80 } });
is($r->{status}, 200, 'chat: a budget at the output limit: 200');
is_deeply($l->last_provider_request->{body}{reasoning},
          { max_tokens => 80 }, 'chat: sent as it came');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
