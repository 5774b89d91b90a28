#!/usr/bin/perl
# airlockctl on the provider-level llm fields: an azure entry, aliases and
# a fallback pass "check"; "explain" shows the Azure URI with the
# policy's api-version, the api-key header, an alias becoming its model
# and where a failed call goes; "check" points at the field at fault;
# "diff" reports a changed fallback, api_version and alias.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan skip_all => "$ctl not built" unless -x $ctl;

sub run {
    my $cmd = join ' ', map { quotemeta } $ctl, @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

my $policy = <<'Y';
version: 1
clients:
  agent: { unix_uid: 10001 }
secrets:
  oa_key: { file: /run/credentials/nginx.service/airlock_oa_key }
  az_key: { file: /run/credentials/nginx.service/airlock_az_key }
llm:
  - name: openai
    prefix: /v1/proxy/openai
    provider: openai
    upstream: https://api.openai.com/v1
    secret: oa_key
    models: [gpt-4o-mini]
    aliases: { fast: gpt-4o-mini }
    fallback: azure
    clients: { agent: {} }
  - name: azure
    prefix: /v1/proxy/azure
    provider: azure
    upstream: https://res.openai.azure.com
    api_version: "2024-10-21"
    secret: az_key
    models: [mini-prod]
    aliases: { fast: mini-prod }
    clients: { agent: {} }
alerts:
  deny: { threshold: 3, window: 60s }
Y

my $file = write_file('p.yaml', $policy);
my $body = write_file('b.json', '{"model":"fast","messages":[]}');

my ($rc, $out) = run('check', $file);
is($rc, 0, 'check: azure, aliases and fallback are valid') or diag($out);

($rc, $out) = run('explain', $file, '--client', 'agent', 'POST',
                  '/v1/proxy/openai/chat/completions', '--body', $body,
                  '--content-type', 'application/json');
is($rc, 0, 'explain openai: allowed') or diag($out);
like($out, qr/alias:\s+fast -> model "gpt-4o-mini"/, 'explain: the alias');
like($out, qr/allow: POST chat\/completions, model gpt-4o-mini/,
     'explain: decided on the real model');
like($out, qr{fallback: on 429, 5xx or no connection, llm "azure": POST https://res\.openai\.azure\.com/openai/deployments/mini-prod/chat/completions\?api-version=2024-10-21, model mini-prod},
     'explain: where a failed call goes, by the fallback\'s alias');

($rc, $out) = run('explain', $file, '--client', 'agent', 'POST',
                  '/v1/proxy/azure/openai/deployments/fast/chat/completions'
                  . '?api-version=2023-05-15', '--body', $body,
                  '--content-type', 'application/json');
is($rc, 0, 'explain azure: allowed') or diag($out);
like($out, qr{forward:\s+POST https://res\.openai\.azure\.com/openai/deployments/mini-prod/chat/completions\?api-version=2024-10-21},
     'explain azure: the deployment for the alias, the policy\'s api-version');
like($out, qr/alias:\s+fast -> deployment mini-prod/,
     'explain azure: the alias in the path');
like($out, qr/inject:.*as api-key/, 'explain azure: the key in api-key');

($rc, $out) = run('explain', $file, '--client', 'agent', 'POST',
                  '/v1/proxy/azure/openai/deployments/mini-prod/chat/'
                  . 'completions', '--body',
                  write_file('e.json', '{"model":"mini-pro\\u0064"}'),
                  '--content-type', 'application/json');
is($rc, 1, 'explain azure: an escaped model is refused') or diag($out);
like($out, qr/deny: body \("model" on a deployment path must be written /,
     'explain azure: ... saying why, as the gateway does');

(my $bad = $policy) =~ s/fallback: azure/fallback: azur/;
($rc, $out) = run('check', write_file('bad.yaml', $bad));
is($rc, 1, 'check: an unknown fallback fails');
like($out, qr/bad\.yaml:15:15: fallback "azur" is not an llm entry/,
     'check: file:line:column and the reason');

($bad = $policy) =~ s/    api_version: "2024-10-21"\n//;
($rc, $out) = run('check', write_file('bad.yaml', $bad));
like($out, qr/bad\.yaml:17:5: llm "azure": an azure provider needs api_version/,
     'check: an azure entry without api_version');

(my $new = $policy) =~ s/    fallback: azure\n//;
$new =~ s/"2024-10-21"/"2025-04-01-preview"/;
$new =~ s/aliases: \{ fast: mini-prod \}/aliases: { quick: mini-prod }/;
($rc, $out) = run('diff', $file, write_file('new.yaml', $new));
like($out, qr/^- llm openai: fallback azure -> -$/m, 'diff: fallback removed');
like($out, qr/^\+ llm azure: api_version 2024-10-21 -> 2025-04-01-preview$/m,
     'diff: api_version');
like($out, qr/^\+ llm azure: alias quick added \(-> mini-prod\)$/m,
     'diff: an alias added');
like($out, qr/^- llm azure: alias fast removed$/m, 'diff: an alias removed');

done_testing();
