#!/usr/bin/perl

# ngx_http_airlock_llm_module: a call an error_page sends again (an
# operator's retry, "error_page 502 504 = @again" to a location that
# forwards it) after an attempt that was sent and never answered (a
# timeout: 504) is charged that attempt's reservation, the prompt
# estimate and the output cap, besides what the answer reports, as the
# ordered fallback's is (78-llm-fallback-unanswered.t): that provider has
# the prompt and may bill all of the output.  Before, only the last
# attempt was charged, so a client whose calls outlasted
# proxy_read_timeout had the provider generate for free.  An attempt the
# provider answered (503) is charged nothing, and each attempt once.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $entries = <<'Y';
  - name: retry
    prefix: /v1/proxy/retry
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o]
    clients:
      agent: {}
Y

# An attempt times out when the provider holds its answer 30s, far past
# proxy_read_timeout; an attempt it answers at once has those 3s, time
# enough on a loaded machine.
my $locations = <<'L';
        location /v1/proxy/retry/ {
            airlock_llm retry;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 3s;
            proxy_intercept_errors on;
            error_page 502 503 504 = @again;
        }

        location @again {
            airlock_llm retry;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 3s;
        }
L

$l->setup(openai_clients => $entries, locations => $locations);
$t->run;

plan tests => 7;

my $n = 0;

sub call {
    my (@script) = @_;
    $l->script(@script);
    my $r = $l->request('POST', '/v1/proxy/retry/chat/completions',
                        token => $l->token('agent'), body => {
                            model => 'gpt-4o', max_tokens => 10,
                            messages => [ { role => 'user',
                                            content => 'Hi' } ] },
                        timeout => 30);
    $l->script();
    return ($r, $l->last_usage(++$n));
}

# the first attempt times out, the second is answered: 11 + 3 tokens

my ($r, $u) = call({ delay_first_ms => 30000 }, {});
is($r->{status}, 200, 'a timed-out call sent again by error_page: 200');
ok($u->{prompt_tokens} == 11 && $u->{completion_tokens} == 3,
   '... the answer\'s usage') or diag(explain $u);
ok($u->{total_tokens} >= 14 + 10 + 1,
   '... and the first attempt\'s reservation in total_tokens')
    or diag(explain $u);

# both attempts time out: each reservation once

($r, $u) = call({ delay_first_ms => 30000 }, { delay_first_ms => 30000 });
is($r->{status}, 504, 'both attempts time out: 504');
ok($u->{completion_tokens} == 10 && $u->{usage_source} eq 'estimated',
   '... the last attempt charged its reservation') or diag(explain $u);
is($u->{total_tokens}, 2 * ($u->{prompt_tokens} + $u->{completion_tokens}),
   '... and the first attempt\'s, once');

# a first attempt the provider answered is not charged

($r, $u) = call({ status => 503 }, {});
is($u->{total_tokens}, 14, 'a 503 answered, sent again: the answer alone')
    or diag(explain $u);
