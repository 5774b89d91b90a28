#!/usr/bin/perl

# ngx_http_airlock_llm_module: a 2xx answer the gateway refuses is charged.
# An event stream (and a JSON answer) the key scrubber refuses with 502,
# because the provider marked it encoded, was answered by the provider,
# which bills it: it is charged its reservation (the prompt estimate and
# the output cap), in the usage line, the budget and the metrics, as an
# answer cut short is.  It used to be charged nothing, so that a provider
# whose answers are encoded served every call for free
# (162-llm-charge-refused.t).  The provider's answers pass through a
# plain nginx server that marks those to the chat endpoint
# "Content-Encoding: gzip".

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(tight_tpm => 100000, http => <<'EOF');
    server {
        listen 127.0.0.1:%%PORT_8083%%;

        location / {
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
        }

        location /v1/chat/ {
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
            proxy_buffering off;
            add_header Content-Encoding gzip;
        }
    }
EOF

# the gateway's provider is the marking server
my $policy = $t->read_file('policy.yaml');
my ($from, $to) = map { '127.0.0.1:' . $t->port($_) } 8081, 8083;
$policy =~ s/\Q$from\E/$to/g;
$t->write_file('policy.yaml', $policy);

$t->run;

plan tests => 11;

my $tight = $l->token('tight');
my $agent = $l->token('agent');
my ($r, $u, $n);

# the refused stream

$r = $l->chat(token => $tight, fields => { stream => JSON::PP::true },
              prompt => 'x' x 400);
is($r->{status}, 502, 'encoded stream: refused 502');
$u = $l->last_usage(++$n);
is($u->{status}, 502, 'encoded stream: usage line status 502');
cmp_ok($u->{completion_tokens}, '>=', 20,
       'encoded stream: charged its output cap');
cmp_ok($u->{prompt_tokens}, '>=', 100,
       'encoded stream: charged its prompt estimate');

# the same for a client without a budget

$r = $l->chat(token => $agent, fields => { stream => JSON::PP::true },
              prompt => 'x' x 400);
is($r->{status}, 502, 'encoded stream, no budget: refused 502');
$u = $l->last_usage(++$n);
cmp_ok($u->{total_tokens}, '>', 100,
       'encoded stream, no budget: charged too');

# a refused JSON answer

$r = $l->chat(token => $tight, prompt => 'x' x 400);
is($r->{status}, 502, 'encoded JSON: refused 502');
$u = $l->last_usage(++$n);
cmp_ok($u->{total_tokens}, '>=', 120,
       'encoded JSON: charged its reservation');

# the metrics count the calls, and their tokens

my $m = http_get('/metrics', port => 8082);
my ($prompt) = $m =~ /^airlock_llm_tokens_total\{provider="openai",
                       client="tight",model="gpt-4o-mini",kind="prompt"\}
                       \s+(\d+)$/mx;
cmp_ok($prompt // 0, '>=', 200,
       'metrics: the refused calls\' prompt tokens');

# an answer that passes is still charged

$r = $l->request('POST', '/v1/proxy/openai/completions', token => $tight,
                 body => { model => 'gpt-4o-mini', prompt => 'Hi' });
is($r->{status}, 200, 'completions: 200');

is($t->error_log_check, '', 'no alerts');
