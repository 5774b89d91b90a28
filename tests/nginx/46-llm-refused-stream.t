#!/usr/bin/perl

# ngx_http_airlock_llm_module: an answer the gateway refuses costs nothing.
# An event stream (and a JSON answer) the key scrubber refuses with 502,
# because the provider marked it encoded, is charged no tokens: the usage
# line says 0 and the client's budget is left as it was.  The provider's
# answers pass through a plain nginx server that marks those to the chat
# endpoint "Content-Encoding: gzip".

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
is($u->{total_tokens}, 0, 'encoded stream: charged nothing');
is($u->{prompt_tokens}, 0, 'encoded stream: no prompt tokens');

# the same for a client without a budget

$r = $l->chat(token => $agent, fields => { stream => JSON::PP::true },
              prompt => 'x' x 400);
is($r->{status}, 502, 'encoded stream, no budget: refused 502');
$u = $l->last_usage(++$n);
is($u->{total_tokens}, 0, 'encoded stream, no budget: charged nothing');

# a refused JSON answer

$r = $l->chat(token => $tight, prompt => 'x' x 400);
is($r->{status}, 502, 'encoded JSON: refused 502');
$u = $l->last_usage(++$n);
is($u->{total_tokens}, 0, 'encoded JSON: charged nothing');

# the metrics count the calls, and no tokens for them

my $m = http_get('/metrics', port => 8082);
my ($prompt) = $m =~ /^airlock_llm_tokens_total\{provider="openai",
                       client="tight",model="gpt-4o-mini",kind="prompt"\}
                       \s+(\d+)$/mx;
is($prompt // 0, 0, 'metrics: no prompt tokens for the refused calls');

# an answer that passes is still charged

$r = $l->request('POST', '/v1/proxy/openai/completions', token => $tight,
                 body => { model => 'gpt-4o-mini', prompt => 'Hi' });
is($r->{status}, 200, 'completions: 200');

is($t->error_log_check, '', 'no alerts');
