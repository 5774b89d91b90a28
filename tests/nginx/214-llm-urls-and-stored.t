#!/usr/bin/perl

# ngx_http_airlock_llm_module: a body with both an input given by URL
# (url_input, 09-llm-file-urls.t) and a file or container the account
# stores (stored_files, 205-llm-stored-files.t) is read once for both.
# The input by URL is refused first, wherever it is in the body; with
# url_input allowed the stored file is refused; with both allowed the
# body passes as written.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(openai_fields => '    provider_tools: [code_interpreter]');
$t->run;

plan tests => 13;

my $agent = $l->token('agent');
my $leak = 'https://attacker.example/p.png?d=FAKE';

sub sent { scalar $l->provider_requests }

sub responses { $l->responses($agent, @_) }

# the stored file before the URL, and in another member
my @both = (input => [ { role => 'user', content => [
                { type => 'input_file', file_id => 'file-FAKE1' } ] } ],
            instructions => [ { role => 'user', content => [
                { type => 'input_image', image_url => $leak } ] } ]);

my @box = (input => [ { role => 'user', content => [
               { type => 'input_image', image_url => $leak } ] } ],
           tools => [ { type => 'code_interpreter',
                        container => 'cntr_FAKE1' } ]);

sub messages {
    return $l->messages(token => $agent,
                        body => { model => 'claude-3-5-haiku',
                                  max_tokens => 100,
                                  messages => [ { role => 'user', content => [
                                      { type => 'document',
                                        source => { type => 'file',
                                                    file_id => 'file_FAKE2' } },
                                      { type => 'image',
                                        source => { type => 'url',
                                                    url => $leak } } ] } ] });
}

my $n = sent();

my $r = responses(@both);
is($r->{status}, 400, 'neither allowed: a stored file and a URL: 400');
like($r->{body}, qr/image_url.*provider_tools: url_input/,
     '... the URL refused first');

$r = responses(@box);
like($r->{body}, qr/url_input/, '... before a container by its id');

$r = messages();
like($r->{body}, qr/url_input/, '... and on messages');
is(sent(), $n, '... none of them sent');

# ---- url_input allowed on one entry, stored_files on the other --------------

$t->write_file_expand('policy.yaml',
    $l->policy(openai_fields => '    provider_tools: [code_interpreter, '
                                . 'url_input]',
               anthropic_fields => '    provider_tools: [stored_files]'));
$t->reload;

$r = responses(@both);
is($r->{status}, 400, 'url_input allowed: 400');
like($r->{body}, qr/file_id.*provider_tools: stored_files/,
     '... the stored file refused');

$r = responses(@box);
like($r->{body}, qr/container.*stored_files/, '... and the container');

$r = messages();
like($r->{body}, qr/url.*provider_tools: url_input/,
     'stored_files allowed: the URL refused');
is(sent(), $n, '... none of them sent');

# ---- both allowed -----------------------------------------------------------

$t->write_file_expand('policy.yaml',
    $l->policy(openai_fields => '    provider_tools: [code_interpreter, '
                                . 'url_input, stored_files]'));
$t->reload;

$r = responses(@both);
is($r->{status}, 200, 'both allowed: the body passes');
is($l->last_provider_request->{body}{instructions}[0]{content}[0]{image_url},
   $leak, '... sent as written');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
