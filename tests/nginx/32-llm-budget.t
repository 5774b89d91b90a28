#!/usr/bin/perl

# ngx_http_airlock_llm_module: budgets and counters.  Tokens are reserved
# before a call and settled with its usage; a client over its minute
# budget gets 429 in the provider's format with Retry-After, over its day
# budget insufficient_quota; what is left shows in the rate-limit headers;
# budgets and counters live in the shared zone, across workers and
# reloads; airlock_llm_metrics exposes the counters.  The last test waits
# for the minute window to roll (up to a minute, once): the window
# arithmetic itself is unit-tested in tests/unit/llm.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $daily = 'al-daily-token-123123123123';
my $sha = $l->proxy->token_sha256($daily);

$l->setup(
    clients => qq{  daily: { token_sha256: "$sha" }\n},
    openai_clients => "      daily:\n        tokens_per_day: 20\n"
                      . "        max_tokens: 10\n"
                      . "        over_max_tokens: clamp\n",
    http => 'proxy_buffering on;',
);

# two workers: the budget is shared
$t->write_file('nginx.conf',
               $t->read_file('nginx.conf') =~ s/worker_processes 1;/worker_processes 2;/r);

$t->run;

plan tests => 37;

my $tight = $l->token('tight');
my ($r, $u, @ok, $n, $h);

sub oai_error {
    my ($r) = @_;
    my $e = $r->{json} && $r->{json}{error};
    return ref $e eq 'HASH' ? $e : {};
}

sub metrics {
    my $raw = http_get('/metrics', port => 8082);
    return parse_response($raw)->{body} // '';
}

sub metric {
    my ($text, $name, %labels) = @_;
    my $want = join ',', map { qq{$_="$labels{$_}"} }
                         grep { exists $labels{$_} }
                         qw(provider client model status kind);
    return $text =~ /^\Q$name\E\{\Q$want\E\} (\d+)$/m ? $1 : undef;
}

# ---- within the budget -----------------------------------------------------

$r = $l->chat(token => $tight);
is($r->{status}, 200, 'first call: 200');
$h = $r->{headers};
is($h->{'x-ratelimit-limit-tokens'}, 60, 'x-ratelimit-limit-tokens');
my $need = 60 - ($h->{'x-ratelimit-remaining-tokens'} // 60);
ok($need > 20 && $need < 31,
   "x-ratelimit-remaining-tokens: the reservation taken ($need)");
like($h->{'x-ratelimit-reset-tokens'} // '', qr/^\d+s$/,
     'x-ratelimit-reset-tokens');
is($l->last_provider_request->{body}{max_completion_tokens}, 20,
   'the client cap is what is reserved for output');

$r = $l->chat(token => $tight);
is($r->{status}, 200, 'second call: 200');
is($r->{headers}{'x-ratelimit-remaining-tokens'}, 60 - 14 - $need,
   'the first call was settled at its usage (14)');

# ---- over the budget --------------------------------------------------------

$n = scalar(my @x = $l->provider_requests);

for (1 .. 10) {
    $r = $l->chat(token => $tight);
    last if $r->{status} == 429;
}

is($r->{status}, 429, 'over the minute budget: 429');
like($r->{headers}{'retry-after'} // '', qr/^\d+$/, 'Retry-After');
ok($r->{headers}{'retry-after'} >= 1 && $r->{headers}{'retry-after'} <= 60,
   'Retry-After: within the minute');
is(oai_error($r)->{type}, 'tokens', 'OpenAI 429: type tokens');
is(oai_error($r)->{code}, 'rate_limit_exceeded',
   'OpenAI 429: rate_limit_exceeded');
like(oai_error($r)->{message}, qr/tokens per minute left.*retry in \d+s/,
     'OpenAI 429: says what is left and when');
ok(!exists $r->{headers}{'x-ratelimit-remaining-tokens'},
   '429: no remaining header');

my $refused = scalar(my @y = $l->provider_requests);
$r = $l->chat(token => $tight);
is($r->{status}, 429, 'still over: 429');
is(scalar(my @z = $l->provider_requests), $refused,
   'refused calls never reach the provider');

$r = $l->chat(token => $tight, prompt => 'x' x 600);
is($r->{status}, 429, 'a call larger than the whole budget: 429');
ok(!exists $r->{headers}{'retry-after'}, 'larger than the budget: no '
   . 'Retry-After (waiting would not help)');

$r = $l->messages(token => $tight);
is($r->{status}, 200, 'the same client on another provider: own budget');
is($r->{headers}{'anthropic-ratelimit-tokens-limit'}, 60,
   'anthropic-ratelimit-tokens-limit');
like($r->{headers}{'anthropic-ratelimit-tokens-reset'} // '',
     qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
     'anthropic-ratelimit-tokens-reset: RFC 3339');

for (1 .. 10) {
    $r = $l->messages(token => $tight);
    last if $r->{status} == 429;
}

is($r->{status}, 429, 'anthropic over budget: 429');
is($r->{json}{error}{type}, 'rate_limit_error',
   'Anthropic 429: rate_limit_error');
like($r->{headers}{'retry-after'} // '', qr/^\d+$/, 'Anthropic Retry-After');

$r = $l->chat(token => $daily);
is($r->{status}, 200, 'day budget: first call');
$r = $l->chat(token => $daily);
is($r->{status}, 429, 'over the day budget: 429');
is(oai_error($r)->{code}, 'insufficient_quota',
   'day budget: insufficient_quota');
ok(($r->{headers}{'retry-after'} // 0) > 0
   && $r->{headers}{'retry-after'} <= 86400,
   'day budget: Retry-After until the UTC day ends');

ok((grep { $_->{reason} eq 'budget' && $_->{client} eq 'tight' }
    $l->proxy->deny_log), 'deny log: budget');

# ---- counters ----------------------------------------------------------------

my $m = metrics();
my $ok200 = metric($m, 'airlock_llm_requests_total', provider => 'openai',
                   client => 'tight', model => 'gpt-4o-mini',
                   status => 200);
my $n429 = metric($m, 'airlock_llm_requests_total', provider => 'openai',
                  client => 'tight', model => 'gpt-4o-mini', status => 429);
ok($ok200 && $ok200 >= 2, "metrics: 200 calls counted ($ok200)");
ok($n429 && $n429 >= 2, 'metrics: 429 calls counted');
is(metric($m, 'airlock_llm_tokens_total', provider => 'openai',
          client => 'tight', model => 'gpt-4o-mini', kind => 'prompt'),
   11 * $ok200, 'metrics: prompt tokens of the 200 calls');
like($m, qr/^# TYPE airlock_llm_tokens_total counter$/m,
     'metrics: exposition format');

# ---- reload --------------------------------------------------------------------

$t->reload;

$r = $l->chat(token => $tight);
is($r->{status}, 429, 'after a reload: the budget is kept');
is(metric(metrics(), 'airlock_llm_requests_total', provider => 'openai',
          client => 'tight', model => 'gpt-4o-mini', status => 200),
   $ok200, 'after a reload: the counters are kept');

# ---- the window rolls ----------------------------------------------------------

my $wait = $r->{headers}{'retry-after'} // 60;
sleep($wait + 0.5);

$r = $l->chat(token => $tight);
is($r->{status}, 200, "after Retry-After ($wait s): 200 again")
    or diag("answered $r->{status}: " . ($r->{body} // '') . "\n"
            . join("\n", map { "$_: $r->{headers}{$_}" }
                             sort keys %{ $r->{headers} }));

is($t->error_log_check, '', 'no alerts or sanitizer reports');
