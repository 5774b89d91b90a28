#!/usr/bin/perl

# A gateway call whose first location leads it, by an error_page, into
# the location of another llm entry: the decision stands, and the call
# may go only where its own entry's upstream is, with its own key.  A
# location bound to an upstream block (docs/nginx.md, "Upstreams,
# keepalive and TLS") sends to that block whatever the call: bound to
# another entry's block, it would hand this entry's key to the other
# provider.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# "other": an openai entry of its own key, bound to the block "otherllm",
# whose server is an echo upstream that logs what it gets

my $other = <<'Y';
  - name: other
    prefix: /v1/proxy/other
    max_body_bytes: 65536
    provider: openai
    upstream: "http://otherllm/v1"
    secret: anthropic_key
    models: [gpt-4o-mini]
    clients:
      agent: {}
Y

# "openai" here reaches nothing (%%PORT_8090%%): nginx answers 502, and
# its error_page leads the call to the other entry's location

my $locations = <<'L';
        location /v1/proxy/other/ {
            airlock_llm other;

            %%AIRLOCK_LOCATION%%
        }
L

$l->setup(openai_clients => $other, locations => $locations,
          location => 'error_page 502 /v1/proxy/other/chat/completions;',
          http => "upstream otherllm {\n"
                  . "        server 127.0.0.1:%%PORT_8083%%;\n    }");

my $policy = $t->read_file('policy.yaml');
$policy =~ s{(name: openai\n.*?upstream: ")[^"]+"}
            {${1}http://127.0.0.1:%%PORT_8090%%/v1"}s;
$t->write_file_expand('policy.yaml', $policy);

$t->start_echo(8083);
$t->run;

plan tests => 6;

my $r = $l->chat(token => $l->token('agent'));

is($r->{status}, 502, 'the call is refused, not served by the other '
   . 'provider');

my @got;
for (1 .. 20) {
    @got = $t->echo_requests(8083);
    last if @got;
    sleep 0.05;
}

is(scalar @got, 0, 'the other entry\'s block got nothing')
    or diag(join ' | ', map { join ', ', map { "$_->[0]: $_->[1]" }
                                        @{$_->{headers}} } @got);
ok(!grep({ join(' ', map { @$_ } @{$_->{headers}})
           =~ /\Q$Airlock::LLM::OPENAI_KEY\E/ } @got),
   'the openai key never reached the other provider');

# the other entry's own calls still go to its block

$t->write_file('echo-8083.log', '');
$r = $l->request('POST', '/v1/proxy/other/chat/completions',
                 token => $l->token('agent'), body => {
                     model => 'gpt-4o-mini',
                     messages => [ { role => 'user', content => 'Hi' } ],
                 });
is($r->{status}, 200, 'the other entry\'s own call: served by its block');

like($t->read_file('error.log'),
     qr/a call of llm "openai" was led to a location of llm "other"/,
     'the refusal is logged');
is($t->error_log_check, '', 'no alerts');
