#!/usr/bin/perl

# ngx_http_airlock_llm_module: a skill the account uploaded, named by its
# id, is a stored thing as a file is (205-llm-stored-files.t): a hosted
# shell's or a code_interpreter container's {"type": "skill_reference",
# "skill_id": ...} (OpenAI), a top-level "container"'s skill of type
# "custom" (Anthropic).  The provider loads its files and instructions
# into the container, whoever uploaded it, and the gateway cannot tell
# whose it is: refused (body, 400, naming provider_tools: stored_files,
# nothing sent) unless the entry's provider_tools allows stored_files.
# So is a hosted shell in a container named by its id, or with files
# named by theirs.  Anthropic's own skills (type "anthropic") and an
# inline skill (the client's bytes) pass.  A hosted shell's container
# may reach the network the request names (its "network_policy"
# allowlist), past the gateway: refused unless provider_tools allows
# web_fetch; one disabled passes.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $code = '    provider_tools: [shell, code_interpreter]';
my $exec = '    provider_tools: [code_execution]';

$l->setup(openai_fields => $code, anthropic_fields => $exec);
$t->run;

plan tests => 18;

my $agent = $l->token('agent');

sub sent { scalar $l->provider_requests }

sub shell {
    my (%env) = @_;
    return $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                       body => { model => 'gpt-4o-mini', input => 'Hi',
                                 tools => [ { type => 'shell',
                                              environment => {
                                                  type => 'container_auto',
                                                  %env } } ] });
}

sub skills {
    my (@skills) = @_;
    return $l->messages(token => $agent,
                        fields => { tools => [ {
                                        type => 'code_execution_20250825',
                                        name => 'code_execution' } ],
                                    container => { skills => [ @skills ] } });
}

my $ref = { type => 'skill_reference', skill_id => 'skill_FAKE1',
            version => 'latest' };
my $custom = { type => 'custom', skill_id => 'skill_01FAKE2',
               version => 'latest' };
my $own = { type => 'anthropic', skill_id => 'xlsx', version => 'latest' };

my $n = sent();

my $r = shell(skills => [ $ref ]);
is($r->{status}, 400, 'responses: a hosted shell\'s skill by its id: 400');
like($r->{body}, qr/skill_id.*provider_tools: stored_files/,
     '... naming the member and the family');

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                 body => { model => 'gpt-4o-mini', input => 'Hi',
                           tools => [ { type => 'code_interpreter',
                                        container => { type => 'auto',
                                                       skills => [ $ref ] } }
                                    ] });
is($r->{status}, 400, 'responses: a code_interpreter container\'s: 400');

$r = shell(type => 'container_reference', container_id => 'cntr_FAKE1');
is($r->{status}, 400, 'responses: a hosted shell in a container by id: 400');

$r = shell(file_ids => [ 'file-FAKE1' ]);
is($r->{status}, 400, 'responses: a hosted shell\'s file_ids: 400');

$r = skills($own, $custom);
is($r->{status}, 400, 'messages: a custom skill: 400');
like($r->{body}, qr/skill_id.*stored_files/, '... naming them');
is(sent(), $n, '... none of them sent');

$r = shell(skills => [ { type => 'inline', name => 'sum',
                         description => 'Adds numbers',
                         source => { type => 'base64',
                                     media_type => 'application/zip',
                                     data => 'UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==' }
                       } ]);
is($r->{status}, 200, 'responses: an inline skill passes');

$r = skills($own);
is($r->{status}, 200, 'messages: an anthropic skill passes');

# the container's network: past the gateway, as a web fetch is

$n = sent();

$r = shell(network_policy => { type => 'allowlist',
                               allowed_domains => [ 'attacker.example' ] });
is($r->{status}, 400, 'responses: a hosted shell with network access: 400');
like($r->{body}, qr/network_policy.*provider_tools: web_fetch/,
     '... naming the member and the family');
is(sent(), $n, '... not sent');

$r = shell(network_policy => { type => 'disabled' });
is($r->{status}, 200, '... one without passes');

# ---- entries whose provider_tools allow stored_files ------------------------

$t->write_file_expand('policy.yaml',
    $l->policy(openai_fields => '    provider_tools: [shell, code_interpreter, '
                                . 'stored_files]',
               anthropic_fields => '    provider_tools: [code_execution, '
                                   . 'stored_files]'));
$t->reload;

$n = sent();

$r = shell(skills => [ $ref ]);
is($r->{status}, 200, 'stored_files allowed: a skill by its id passes');

$r = skills($own, $custom);
is($r->{status}, 200, '... and a custom skill');
is($l->last_provider_request->{body}{container}{skills}[1]{skill_id},
   'skill_01FAKE2', '... sent as written');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
