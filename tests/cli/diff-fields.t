#!/usr/bin/perl
# airlockctl diff reports every field docs/policy.md documents.  One row per
# field: a change to a base policy that has every field, and the kind of
# line diff must print for it ('+' grants, '-' takes away, '~' neither; ''
# for fields the docs say are ignored, where diff must print nothing).
#
# The rows are checked against the field tables of docs/policy.md (each
# "| `field` |" row, named by its section heading, the table's number in
# that section and the field): a field documented without a row here, or a
# row for a field the docs no longer have, fails the test.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";
my $doc = "$top/docs/policy.md";
my $dir = tempdir(CLEANUP => 1);

absent("$ctl not built") unless -x $ctl;

my $base = <<'Y';
version: 1
clients:
  agent: { unix_uid: 10001, description: "the agent" }
  ops: { unix_gid: 20001 }
  ci: { cidr: 10.20.0.0/16 }
  tools: { token_sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }
secrets:
  tok: { sealed: "c2VhbGVk", description: "d" }
  key2: { sealed: "b3RoZXI=" }
  ftok: { file: /run/credentials/airlock/tok }
  hmac: { file: /run/credentials/airlock/hmac }
  hmac2: { file: /run/credentials/airlock/hmac2 }
upstreams:
  up: { url: "http://127.0.0.1:9090", description: "d" }
  up2: { url: "http://127.0.0.1:9091" }
routes:
  - name: r1
    description: d
    clients: [agent]
    match: { method: GET, path: "/logs/{svc}" }
    params: { svc: '^[a-z]+$' }
    upstream: up
    to: "/api/{svc}"
    query: { allow: [since, limit], require: [since], patterns: { since: '^[0-9]+s$' } }
    inject: { Authorization: "Bearer {tok}" }
    cookies: false
  - name: r2
    clients: [agent]
    match: { method: POST, path: /pr }
    upstream: up
    to: /pulls
    body:
      max_bytes: 1000
      content_type: application/json
      additional: false
      json:
        head: '^x$'
        user: { type: object, required: true, fields: { login: '^[a-z]+$' }, additional: false }
        note: { type: string, required: false, pattern: '^[a-z]*$' }
llm:
  - name: oa
    description: d
    prefix: /v1/proxy/oa
    provider: openai
    upstream: https://api.openai.com/v1
    secret: tok
    models: [m1, m2]
    include_usage: true
    max_body_bytes: 5000
    aliases: { fast: m1 }
    fallback: az
    prices:
      m1: { input: 2.5, cached_input: 1.25, output: 10 }
      m2: { input: 1, output: 2 }
    clients:
      agent: { models: [m1], tokens_per_minute: 100, tokens_per_day: 1000, max_tokens: 50, over_max_tokens: reject, default_max_tokens: 40, requests_per_minute: 10, max_concurrent_requests: 2, usd_per_day: 1.5, usd_per_month: 20 }
  - name: az
    prefix: /v1/proxy/az
    provider: azure
    upstream: https://res.openai.azure.com
    api_version: "2024-10-21"
    secret: tok
    models: [d1]
    clients:
      agent: {}
      ops: {}
  - name: an
    prefix: /v1/proxy/an
    provider: anthropic
    upstream: https://api.anthropic.com/v1
    secret: tok
    models: [c1]
    prices:
      c1: { input: 3, output: 15, cache_write: 3.75, cache_write_1h: 6, long_context: { above_input_tokens: 200000, input: 6, output: 22.5 } }
    clients:
      agent: {}
alerts:
  deny: { threshold: 3, window: 60s }
  quarantine: { threshold: 20, window: 60s, for: 10m }
  sinks:
    - webhook: { url: "http://127.0.0.1:9099/a", hmac_secret: hmac }
    - alertmanager: { url: "http://127.0.0.1:9093" }
Y

# [docs key, expected kind, change]; the change edits the base text once
my @rows = (
    ['clients:1:unix_uid', '+', sub { s/unix_uid: 10001/unix_uid: [10001, 10005]/ }],
    ['clients:1:unix_gid', '+', sub { s/unix_gid: 20001/unix_gid: 20002/ }],
    ['clients:1:cidr', '+', sub { s{10\.20\.0\.0/16}{10.0.0.0/8} }],
    ['clients:1:token_sha256', '+', sub { s/"9f86d081/"0f86d081/ }],
    ['clients:1:description', '', sub { s/"the agent"/"another text"/ }],

    ['secrets:1:sealed', '~', sub { s/c2VhbGVk/c2VhbGVkMg==/ }],
    ['secrets:1:file', '+', sub { s{airlock/tok\b}{airlock/tok2} }],
    ['secrets:1:description', '', sub { s/(tok: \{ sealed: "c2VhbGVk", description: )"d"/$1"e"/ }],

    ['upstreams:1:url', '+', sub { s/9090"/9092"/ }],
    ['upstreams:1:description', '', sub { s/(9090", description: )"d"/$1"e"/ }],
    ['upstreams:1:allow_insecure_http', '+', sub { s/(9090", description: "d")/$1, allow_insecure_http: true/ }],

    ['routes:1:name', '+', sub { s/name: r1\n/name: r1x\n/ }],
    ['routes:1:description', '', sub { s/(name: r1\n    description: )d/$1e/ }],
    ['routes:1:clients', '+', sub { s/clients: \[agent\]/clients: [agent, ops]/ }],
    ['routes:1:match.method', '+', sub { s/method: GET/method: [GET, HEAD]/ }],
    ['routes:1:match.path', '+', sub { s{"/logs/\{svc\}"}{"/log/{svc}"} }],
    ['routes:1:params', '+', sub { s/'\^\[a-z\]\+\$'/'^[a-z0-9]+\$'/ }],
    ['routes:1:upstream', '+', sub { s/upstream: up\n    to: "/upstream: up2\n    to: "/ }],
    ['routes:1:to', '+', sub { s{to: "/api/}{to: "/api2/} }],
    ['routes:1:query', '-', sub { s/    query: \{ allow.*\n// }],
    ['routes:1:body', '+', sub { s/    cookies: false\n/    cookies: false\n    body: { max_bytes: 10 }\n/ }],
    ['routes:1:inject', '+', sub { s/\{ Authorization: "Bearer \{tok\}" \}/{ Authorization: "Bearer {tok}", X-Extra: "{ftok}" }/ }],
    ['routes:1:cookies', '+', sub { s/cookies: false/cookies: true/ }],
    ['routes:1:scrub', '+', sub { s{    to: /pulls\n}{    to: /pulls\n    scrub: false\n} }],

    ['params:1:pattern', '+', sub { s/params: \{ svc: '\^\[a-z\]\+\$' \}/params: { svc: { pattern: '^[a-z0-9]+\$' } }/ }],
    ['params:1:drive', '+', sub { s/params: \{ svc: ('\^\[a-z\]\+\$') \}/params: { svc: { pattern: $1, drive: true } }/ }],

    ['query:1:allow', '+', sub { s/allow: \[since, limit\]/allow: [since, limit, step]/ }],
    ['query:1:require', '+', sub { s/, require: \[since\]// }],
    ['query:1:patterns', '+', sub { s/\^\[0-9\]\+s\$/^[0-9]+m\$/ }],

    ['body:1:max_bytes', '+', sub { s/max_bytes: 1000/max_bytes: 2000/ }],
    ['body:1:content_type', '+', sub { s{content_type: application/json}{content_type: text/plain} }],
    ['body:1:json', '+', sub { s/head: '\^x\$'/head: '^y\$'/ }],
    ['body:1:additional', '+', sub { s/      additional: false/      additional: true/ }],
    ['body:2:type', '+', sub { s/note: \{ type: string, required: false, pattern: '\^\[a-z\]\*\$' \}/note: { type: any, required: false }/ }],
    ['body:2:required', '-', sub { s/note: \{ type: string, required: false/note: { type: string, required: true/ }],
    ['body:2:pattern', '+', sub { s/pattern: '\^\[a-z\]\*\$'/pattern: '^[a-z0-9]*\$'/ }],
    ['body:2:fields', '+', sub { s/fields: \{ login: '\^\[a-z\]\+\$' \}/fields: { login: '^[a-z]+\$', id: { type: integer } }/ }],
    ['body:2:additional', '+', sub { s/login: '\^\[a-z\]\+\$' \}, additional: false/login: '^[a-z]+\$' }, additional: true/ }],

    ['llm:1:name', '+', sub { s/name: oa/name: ob/ }],
    ['llm:1:description', '', sub { s/(name: oa\n    description: )d/$1e/ }],
    ['llm:1:prefix', '+', sub { s{/v1/proxy/oa}{/v1/proxy/ob} }],
    ['llm:1:provider', '+', sub { s/provider: openai/provider: openai-compatible/ }],
    ['llm:1:upstream', '+', sub { s{https://api\.openai\.com/v1}{https://api.example.com/v1} }],
    ['llm:1:secret', '+', sub { s/secret: tok/secret: key2/ }],
    ['llm:1:allow_insecure_http', '+', sub { s/(    include_usage: true\n)/$1    allow_insecure_http: true\n/ }],
    ['llm:1:models', '+', sub { s/models: \[m1, m2\]/models: [m1, m2, m3]/ }],
    ['llm:1:clients', '+', sub { s/(      agent: \{ models: \[m1\].*\n)/$1      ops: {}\n/ }],
    ['llm:1:include_usage', '~', sub { s/include_usage: true/include_usage: false/ }],
    ['llm:1:max_body_bytes', '+', sub { s/max_body_bytes: 5000/max_body_bytes: 6000/ }],
    ['llm:1:api_version', '+', sub { s/api_version: "2024-10-21"/api_version: "2025-04-01-preview"/ }],
    ['llm:1:aliases', '+', sub { s/aliases: \{ fast: m1 \}/aliases: { fast: m2 }/ }],
    ['llm:1:fallback', '-', sub { s/    fallback: az\n// }],
    ['llm:1:provider_tools', '+', sub { s/(    api_version: "2024-10-21"\n)/$1    provider_tools: [web_search]\n/ }],
    ['llm:1:allow_members', '+', sub { s/(    api_version: "2024-10-21"\n)/$1    allow_members: [metadata]\n/ }],
    ['llm:2:models', '+', sub { s/agent: \{ models: \[m1\]/agent: { models: [m1, m2]/ }],
    ['llm:2:tokens_per_minute', '+', sub { s/tokens_per_minute: 100/tokens_per_minute: 200/ }],
    ['llm:2:tokens_per_day', '+', sub { s/tokens_per_day: 1000/tokens_per_day: 2000/ }],
    ['llm:2:max_tokens', '+', sub { s/max_tokens: 50/max_tokens: 60/ }],
    ['llm:2:over_max_tokens', '+', sub { s/over_max_tokens: reject/over_max_tokens: clamp/ }],
    ['llm:2:default_max_tokens', '+', sub { s/default_max_tokens: 40/default_max_tokens: 45/ }],
    ['llm:1:prices', '~', sub { s/      m2: \{ input: 1, output: 2 \}\n// }],
    ['llm:2:requests_per_minute', '+', sub { s/requests_per_minute: 10/requests_per_minute: 20/ }],
    ['llm:2:max_concurrent_requests', '-', sub { s/max_concurrent_requests: 2/max_concurrent_requests: 1/ }],
    ['llm:2:usd_per_day', '+', sub { s/usd_per_day: 1\.5/usd_per_day: 2/ }],
    ['llm:2:usd_per_month', '-', sub { s/usd_per_month: 20/usd_per_month: 19.99/ }],
    ['llm:3:input', '+', sub { s/input: 2\.5, cached_input: 1\.25/input: 2, cached_input: 1.25/ }],
    ['llm:3:cached_input', '-', sub { s/cached_input: 1\.25/cached_input: 1.5/ }],
    ['llm:3:output', '-', sub { s/output: 10 \}/output: 12 }/ }],
    ['llm:3:cache_write', '-', sub { s/cache_write: 3\.75/cache_write: 4/ }],
    ['llm:3:cache_write_1h', '+', sub { s/cache_write_1h: 6/cache_write_1h: 5/ }],
    ['llm:3:long_context', '+', sub { s/, long_context: \{[^}]*\}// }],
    ['llm:4:above_input_tokens', '-', sub { s/above_input_tokens: 200000/above_input_tokens: 100000/ }],

    ['alerts:1:deny', '-', sub { s/deny: \{ threshold: 3, window: 60s \}/deny: { threshold: 2, window: 60s }/ }],
    ['alerts:1:quarantine', '+', sub { s/  quarantine: .*\n// }],
    ['alerts:1:sinks', '+', sub { s/    - alertmanager: .*\n// }],
    ['alerts:2:deny.threshold', '+', sub { s/threshold: 3,/threshold: 4,/ }],
    ['alerts:2:deny.window', '+', sub { s/threshold: 3, window: 60s/threshold: 3, window: 30s/ }],
    ['alerts:2:quarantine.threshold', '+', sub { s/threshold: 20,/threshold: 25,/ }],
    ['alerts:2:quarantine.window', '-', sub { s/threshold: 20, window: 60s/threshold: 20, window: 120s/ }],
    ['alerts:2:quarantine.for', '+', sub { s/for: 10m/for: 5m/ }],
    ['alerts:2:webhook.url', '+', sub { s{9099/a}{9099/b} }],
    ['alerts:2:webhook.hmac_secret', '+', sub { s/hmac_secret: hmac\b/hmac_secret: hmac2/ }],
    ['alerts:2:webhook.hmac_secret_also', '+', sub { s/hmac_secret: hmac \}/hmac_secret: hmac, hmac_secret_also: hmac2 }/ }],
    ['alerts:2:webhook.allow_insecure_http', '+', sub { s/hmac_secret: hmac \}/hmac_secret: hmac, allow_insecure_http: true }/ }],
    ['alerts:2:alertmanager.url', '+', sub { s/9093"/9094"/ }],
);

# the documented fields: "| `field` |" rows under ## and ### headings
my (%documented, $heading, $table, $in_table);
open my $fh, '<', $doc or die "$doc: $!";
while (<$fh>) {
    if (/^#{2,3} (.+?)\s*$/) {
        ($heading, $table, $in_table) = ($1, 0, 0);
        next;
    }
    if (/^\s*\|/) {
        if (/^\s*\| `([^`]+)` \|/) {
            $table++ unless $in_table;
            $in_table = 1;
            $documented{"$heading:$table:$1"} = 1;
        }
        next;
    }
    $in_table = 0;
}
close $fh;

# top-level keys hold the sections below; version has one value
delete $documented{$_} for grep { /^The file:/ } keys %documented;

my %rowed = map { $_->[0] => 1 } @rows;
for my $k (sort keys %documented) {
    ok($rowed{$k}, "docs/policy.md documents $k, and a row here changes it");
}
for my $k (sort keys %rowed) {
    ok($documented{$k}, "row $k is a field docs/policy.md documents");
}

sub write_file {
    my ($name, $text) = @_;
    open my $out, '>', "$dir/$name" or die;
    print $out $text;
    close $out;
    return "$dir/$name";
}

my $old = write_file('base.yaml', $base);
my $out = `$ctl check $old 2>&1`;
is($?, 0, 'the base policy is valid') or diag($out);

for my $row (@rows) {
    my ($key, $kind, $change) = @$row;
    my $text = $base;

    for ($text) {
        $change->() or BAIL_OUT("row $key: the change did not apply");
    }

    my $new = write_file('new.yaml', $text);
    $out = `$ctl check $new 2>&1`;
    if ($? != 0) {
        fail("$key: the changed policy is valid");
        diag($out);
        next;
    }

    $out = `$ctl diff $old $new 2>&1`;
    my $rc = $? >> 8;
    my @lines = grep { /^[-+~] / } split /\n/, $out;

    if ($kind eq '') {
        is(scalar @lines, 0, "$key: ignored, diff reports nothing")
            or diag($out);
        next;
    }

    ok((grep { substr($_, 0, 1) eq $kind } @lines),
       "$key: diff reports it as '$kind'") or diag($out);
    is($rc, $kind eq '+' ? 1 : 0, "$key: exit status "
       . ($kind eq '+' ? '1 (grants)' : '0'));
}

# default_max_tokens is compared as the gateway applies it: unset, it is
# max_tokens, else 4096 for a client with a budget, else none (0)
my $eff = <<'Y';
version: 1
clients:
  agent: { unix_uid: 10001 }
secrets:
  tok: { sealed: "c2VhbGVk" }
llm:
  - name: oa
    prefix: /v1/proxy/oa
    provider: openai
    upstream: https://api.openai.com
    secret: tok
    models: [m1]
    clients:
      agent: { CLIENT }
alerts:
  deny: { threshold: 3, window: 60s }
Y
for my $case (
    [ 'a budget, unset -> 8000', 'tokens_per_minute: 100000',
      'tokens_per_minute: 100000, default_max_tokens: 8000', '+' ],
    [ 'a budget, max_tokens 10000 added', 'tokens_per_minute: 100000',
      'tokens_per_minute: 100000, max_tokens: 10000, over_max_tokens: clamp',
      '+' ],
    [ 'a budget, unset -> 4096', 'tokens_per_minute: 100000',
      'tokens_per_minute: 100000, default_max_tokens: 4096', '' ],
    [ 'a budget, 4096 -> unset',
      'tokens_per_day: 9000, default_max_tokens: 4096',
      'tokens_per_day: 9000', '' ],
    [ 'max_tokens 50, unset -> 50', 'max_tokens: 50, over_max_tokens: reject',
      'max_tokens: 50, over_max_tokens: reject, default_max_tokens: 50', '' ],
    [ 'max_tokens 50, unset -> 40', 'max_tokens: 50, over_max_tokens: reject',
      'max_tokens: 50, over_max_tokens: reject, default_max_tokens: 40',
      '-' ],
    [ 'a budget, 1000 -> unset',
      'tokens_per_day: 9000, default_max_tokens: 1000',
      'tokens_per_day: 9000', '+' ])
{
    my ($name, $from, $to, $kind) = @$case;
    (my $a = $eff) =~ s/CLIENT/$from/;
    (my $b = $eff) =~ s/CLIENT/$to/;
    my $fa = write_file('eff-old.yaml', $a);
    my $fb = write_file('eff-new.yaml', $b);
    $out = `$ctl diff $fa $fb 2>&1`;
    my $rc = $? >> 8;
    my @lines = grep { /default_max_tokens/ } split /\n/, $out;
    if ($kind eq '') {
        ok(@lines == 0 && $rc == 0,
           "default_max_tokens, $name: the same cap, nothing reported")
            or diag("exit $rc: $out");
    } else {
        ok(@lines == 1 && substr($lines[0], 0, 1) eq $kind
           && $rc == ($kind eq '+' ? 1 : 0),
           "default_max_tokens, $name: reported as '$kind'")
            or diag("exit $rc: $out");
    }
}

done_testing();
