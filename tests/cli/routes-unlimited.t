#!/usr/bin/perl
# routes shows a client's unset LLM budget or cap (tokens_per_minute,
# tokens_per_day, max_tokens) as "-", unlimited.  They were printed as
# the 0 the policy holds for "unset": "ops(0,0,0)" read as a client that
# may spend no tokens, for one whose calls have no limit at all.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $policy = write_file('policy.yaml', <<'Y');
version: 1
clients:
  agent: { unix_uid: 1000 }
  ops: { unix_uid: 1001 }
  ci: { unix_uid: 1002 }
secrets:
  key: { sealed: "c2VhbGVk" }
llm:
  - name: openai
    prefix: /v1/proxy/openai
    provider: openai
    upstream: https://api.openai.com/v1
    secret: key
    models: [gpt-4o-mini]
    clients:
      agent:
        tokens_per_minute: 100
        tokens_per_day: 1000
        max_tokens: 50
        over_max_tokens: clamp
      ops: {}
      ci: { tokens_per_day: 2000 }
alerts:
  deny: { threshold: 3, window: 60s }
Y
chmod 0600, $policy or die;

plan tests => 5;

my ($rc, $out) = run_ctl('routes', $policy);
is($rc, 0, 'routes: exit 0') or diag($out);

my ($line) = $out =~ /^(openai .*)$/m;
$line //= '';

like($line, qr/ agent\(100,1000,50\)/, 'budgets set are shown');
like($line, qr/ ops\(-,-,-\)/, 'a client without any: - - -')
    or diag($line);
like($line, qr/ ci\(-,2000,-\)/, 'one set among unset ones') or diag($line);
like($out, qr/^LLM .*max_tokens\[; limits\]; - unlimited\)$/m,
     'the header says what - means');
