#!/usr/bin/perl
# airlockctl and the LLM client limits: check refuses a dollar budget
# over an unpriced model with FILE:LINE:COLUMN, explain shows what
# admission counts (requests in flight, the rate, the price and the worst
# case a dollar budget reserves), routes lists the limits.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file);

my ($top, $build, $ctl, $dir) = ctl_setup();

if (!-x $ctl) {
    plan skip_all => "$ctl not built" unless $ENV{CI};
    fail("$ctl not built");
    done_testing();
    exit 1;
}

sub run {
    my (@args) = @_;
    my $cmd = join ' ', map { quotemeta } $ctl, @args;
    my $out = `$cmd 2>&1 </dev/null`;
    return ($? >> 8, $out);
}

my $policy = <<'Y';
version: 1
clients:
  agent: { unix_uid: 1000 }
  cheap: { unix_uid: 1001 }
secrets:
  k: { file: /run/credentials/airlock/k }
llm:
  - name: oa
    prefix: /v1/proxy/oa
    provider: openai
    upstream: https://api.openai.com/v1
    secret: k
    models: [gpt-4o-mini, gpt-4o]
    prices:
      gpt-4o-mini: { input: 0.15, cached_input: 0.075, output: 0.6 }
    clients:
      agent:
        requests_per_minute: 60
        max_concurrent_requests: 4
      cheap:
        models: [gpt-4o-mini]
        usd_per_day: 2.5
        usd_per_month: 40
        default_max_tokens: 1000
alerts:
  deny: { threshold: 3, window: 60s }
Y

my $p = write_file('policy.yaml', $policy);
my ($rc, $out) = run('check', $p);
is($rc, 0, 'a policy with limits and prices passes check') or diag($out);

# cheap may use gpt-4o too: it has no price
(my $bad = $policy) =~ s/        models: \[gpt-4o-mini\]\n//;
($rc, $out) = run('check', write_file('bad.yaml', $bad));
is($rc, 1, 'a dollar budget over an unpriced model: invalid');
like($out, qr/^\Q$dir\E\/bad\.yaml:21:22: cheap has a dollar budget but model "gpt-4o" has no price/m,
     'FILE:LINE:COLUMN at the budget, naming the model') or diag($out);

($bad = $policy) =~ s/usd_per_day: 2\.5/usd_per_day: 2.5.1/;
($rc, $out) = run('check', write_file('bad2.yaml', $bad));
like($out, qr/bad2\.yaml:\d+:\d+: usd_per_day must be a number of dollars/,
     'a malformed amount: FILE:LINE:COLUMN');

my $body = write_file('chat.json', '{"model":"gpt-4o-mini","messages":'
                      . '[{"role":"user","content":"hi"}]}');
my $chat = '/v1/proxy/oa/chat/completions';

($rc, $out) = run('explain', $p, '--client', 'agent', 'POST', $chat,
                  '--body', $body, '--content-type', 'application/json');
is($rc, 0, 'explain: agent allowed');
like($out, qr/^  requests: counts against 4 in flight, 60\/min/m,
     'explain: the request limits');
like($out, qr/^  price:    \$0\.15 input, \$0\.075 cached input, \$0\.6 output per million tokens$/m,
     'explain: the price');
unlike($out, qr/^  cost:/m, 'explain: no cost reservation without a budget');

($rc, $out) = run('explain', $p, '--client', 'cheap', 'POST', $chat,
                  '--body', $body, '--content-type', 'application/json');
is($rc, 0, 'explain: cheap allowed');
like($out, qr/max_tokens: 1000 added/, 'explain: its default output cap');
like($out, qr/^  cost:     reserves up to \$0\.0006\d* against \$2\.5\/day, \$40\/month/m,
     'explain: the worst case reserved against the dollar budget')
    or diag($out);

my $b4o = write_file('chat4o.json', '{"model":"gpt-4o","messages":'
                     . '[{"role":"user","content":"hi"}]}');
($rc, $out) = run('explain', $p, '--client', 'agent', 'POST', $chat,
                  '--body', $b4o, '--content-type', 'application/json');
like($out, qr/^  price:    none for gpt-4o: cost_usd null/m,
     'explain: an unpriced model');

($rc, $out) = run('explain', $p, '--client', 'agent', 'GET',
                  '/v1/proxy/oa/models');
like($out, qr/^  requests: counts against 4 in flight/m,
     'explain: GET models counts as a request too');

($rc, $out) = run('routes', $p);
like($out, qr/cheap\(\S*\$2\.5\/day,\$40\/month/, 'routes: dollar budgets')
    or diag($out);
like($out, qr/agent\(\S*60 req\/min,4 in flight/, 'routes: request limits')
    or diag($out);

# Anthropic: a request that names cache_control may write its prompt to
# the cache, so its input is reserved at the highest cache-write price
# ($2 a million here, 2 x input); one that does not, at the input price
my $entry = <<'A';
  - name: an
    prefix: /v1/proxy/an
    provider: anthropic
    upstream: https://api.anthropic.com/v1
    secret: k
    models: [claude-3-5-haiku]
    prices:
      claude-3-5-haiku: { input: 1, output: 5 }
    clients:
      cheap:
        usd_per_day: 2.5
        default_max_tokens: 100
A
(my $an = $policy) =~ s/\nalerts:/\n${entry}alerts:/ or die;
$p = write_file('an.yaml', $an);
my $msgs = '/v1/proxy/an/messages';
my $plain = write_file('plain.json', '{"model":"claude-3-5-haiku","max_tokens":100,'
                       . '"messages":[{"role":"user","content":"'
                       . ('a' x 4000) . '"}]}');
my $cached = write_file('cached.json', '{"model":"claude-3-5-haiku","max_tokens":100,'
                        . '"cache_control":{"type":"ephemeral"},'
                        . '"messages":[{"role":"user","content":"'
                        . ('a' x 4000) . '"}]}');

($rc, $out) = run('explain', $p, '--client', 'cheap', 'POST', $msgs,
                  '--body', $plain, '--content-type', 'application/json');
like($out, qr/^  cost:     reserves up to \$0\.0015\d* against/m,
     'explain, anthropic: 1000 input tokens at $1, 100 output at $5')
    or diag($out);
like($out, qr/^  cost:     input at the input price \(no cache_control/m,
     'explain, anthropic: says why');

($rc, $out) = run('explain', $p, '--client', 'cheap', 'POST', $msgs,
                  '--body', $cached, '--content-type', 'application/json');
like($out, qr/^  cost:     reserves up to \$0\.0025\d* against/m,
     'explain, anthropic with cache_control: input at the 1-hour price')
    or diag($out);
like($out, qr/^  cost:     input at the highest cache-write price/m,
     'explain, anthropic with cache_control: says why');

# an entry with a fallback: the gateway reserves the higher of the worst
# case here and at the fallback's price (the call may be served, and
# charged, there), and explain says what the gateway reserves
my $fb = <<'F';
  - name: oa2
    prefix: /v1/proxy/oa2
    provider: openai
    upstream: https://api.openai.com/v1
    secret: k
    models: [gpt-4o-mini]
    prices:
      gpt-4o-mini: { input: 1.5, output: 6 }
    clients:
      agent: {}
      cheap: { usd_per_day: 2.5 }
F
(my $fbp = $policy) =~ s/\nalerts:/\n${fb}alerts:/ or die;
$fbp =~ s/(    models: \[gpt-4o-mini, gpt-4o\]\n)/${1}    fallback: oa2\n/
    or die;
$p = write_file('fallback.yaml', $fbp);
($rc, $out) = run('check', $p);
is($rc, 0, 'a policy with a dearer fallback passes check') or diag($out);
($rc, $out) = run('explain', $p, '--client', 'cheap', 'POST', $chat,
                  '--body', $body, '--content-type', 'application/json');
like($out, qr/^  fallback: on 429, 5xx or no connection, llm "oa2"/m,
     'explain: the call may fall back') or diag($out);
like($out, qr/^  cost:     reserves up to \$0\.006\d* against \$2\.5\/day/m,
     'explain: the worst case at the fallback\'s price is reserved')
    or diag($out);
like($out, qr/^  cost:     at the price of fallback llm "oa2", model gpt-4o-mini/m,
     'explain: and says why') or diag($out);

# a fallback no dearer: the entry's own worst case
$fbp =~ s/\{ input: 1\.5, output: 6 \}/{ input: 0.015, output: 0.06 }/
    or die;
$p = write_file('fallback-cheap.yaml', $fbp);
($rc, $out) = run('explain', $p, '--client', 'cheap', 'POST', $chat,
                  '--body', $body, '--content-type', 'application/json');
like($out, qr/^  cost:     reserves up to \$0\.0006\d* against/m,
     'explain: a cheaper fallback: this entry\'s worst case') or diag($out);
unlike($out, qr/at the price of fallback/, 'explain: and no fallback line');

done_testing();
