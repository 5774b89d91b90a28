#!/usr/bin/perl

# The shipped example for a local OpenAI-compatible model server
# (conf/llm-local.yaml and conf/llm-local.conf), exactly as written:
# merged into conf/policy.example.yaml it passes "airlockctl check", and
# "airlockctl explain" shows where a call goes and what the alias does;
# with its upstream pointed at the scripted provider, the location passes
# "nginx -t" and serves a chat call by alias.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
my $top = $t->{top};
my $ctl = ($ENV{AIRLOCK_BUILD} // "$top/build") . '/airlockctl';

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or die "$f: $!";
    local $/;
    return <$fh>;
}

my $snippet = slurp("$top/conf/llm-local.yaml");
my $location = slurp("$top/conf/llm-local.conf");
my $example = slurp("$top/conf/policy.example.yaml");

# the two parts of the snippet: the lines under "secrets:", under "llm:"
my ($secrets) = $snippet =~ /^secrets:\n(.*?)\n(?=\S|\z)/ms;
my ($entry) = $snippet =~ /^llm:\n(.*?)\n*\z/ms;

plan tests => 20;

ok($secrets && $entry, 'the snippet has a secrets part and an llm part');

my $merged = $example;
ok($merged =~ s/^secrets:\n/secrets:\n$secrets\n/m
   && $merged =~ s/^llm:\n/llm:\n$entry\n/m,
   'merged into the example policy');

$t->write_file('merged.yaml', $merged);
my $d = $t->testdir;

my $out = `$ctl check $d/merged.yaml 2>&1`;

sub explain_call {
    my $cmd = "$ctl explain $d/merged.yaml --client worker POST "
            . "/v1/proxy/ollama/chat/completions --body $d/req.json "
            . '--content-type application/json 2>&1';
    return `$cmd`;
}
is($?, 0, 'airlockctl check: the example with the entry is valid')
    or diag($out);

$t->write_file('req.json', '{"model":"local","messages":'
                           . '[{"role":"user","content":"Hi"}]}');
$out = explain_call();
is($? >> 8, 0, 'airlockctl explain: allowed') or diag($out);
like($out, qr{forward:\s+POST http://127\.0\.0\.1:11434/v1/chat/completions},
     'explain: to the local server');
like($out, qr{alias:\s+local -> model "llama3\.1:8b"},
     'explain: the alias and its model');
like($out, qr/"max_tokens":1024/, 'explain: the cap written for Ollama');

$t->write_file('req.json', '{"model":"coder","messages":[]}');
$out = explain_call();
is($? >> 8, 1, 'explain: an alias to a model the client may not use: denied');
like($out, qr/deny: model/, '... as model');

# nginx: the entry and location as shipped, with the upstream at the
# scripted provider and the key of the test policy

(my $e = $entry) =~ s{"http://127\.0\.0\.1:11434/v1"}{"http://127.0.0.1:%%PORT_8081%%/v1"};
$e =~ s/secret: ollama_key/secret: openai_key/;
(my $loc = $location) =~ s{include /etc/airlock/airlock-location\.conf;}
                          {%%AIRLOCK_LOCATION%%};

isnt($e, $entry, 'the upstream was rewritten for the test');

$l->setup(openai_clients => $e, locations => $loc);
$t->run;

my ($status, $msg) = $t->reload_test;
is($status, 0, 'nginx -t passes with the shipped location') or diag($msg);

my $r = $l->request('POST', '/v1/proxy/ollama/chat/completions',
                    token => $l->token('worker'), body => {
                        model => 'local',
                        messages => [ { role => 'user', content => 'Hi' } ],
                    });
is($r->{status}, 200, 'a chat call by alias: answered');

my $p = $l->last_provider_request;
is($p->{path}, '/v1/chat/completions', 'the provider: the OpenAI path');
is($p->{body}{model}, 'llama3.1:8b', 'the provider: the real model');

my $u = $l->last_usage(1);
ok($u->{provider} eq 'ollama' && $u->{model} eq 'llama3.1:8b'
   && $u->{alias} eq 'local', 'usage line: provider, model and alias');

# a null max_completion_tokens names no limit: Ollama reads only
# max_tokens, so the cap goes there

$r = $l->request('POST', '/v1/proxy/ollama/chat/completions',
                 token => $l->token('worker'), body => {
                     model => 'local', max_completion_tokens => undef,
                     messages => [ { role => 'user', content => 'Hi' } ],
                 });
is($r->{status}, 200, 'a null max_completion_tokens: answered');
$p = $l->last_provider_request;
is($p->{body}{max_tokens}, 1024,
   'the provider: the cap in max_tokens, the member Ollama reads');

# 0 is no limit to Ollama: refused before it is sent

my $n = () = $l->provider_requests;
$r = $l->request('POST', '/v1/proxy/ollama/chat/completions',
                 token => $l->token('worker'), body => {
                     model => 'local', max_tokens => 0,
                     messages => [ { role => 'user', content => 'Hi' } ],
                 });
is($r->{status}, 400, 'max_tokens 0: refused');
is(scalar(() = $l->provider_requests), $n, '... and not sent');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
