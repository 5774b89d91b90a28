#!/usr/bin/perl

# ngx_http_airlock_llm_module: a request may name a file the provider
# stores for the account by its id: a file part's or input's "file_id"
# (chat's {"type": "file", "file": {"file_id": ...}}, the Responses API's
# input_file and input_image, Anthropic's document source of type
# "file"), a code_interpreter's "container" given as an id, or its
# "file_ids", or Anthropic's "container" reused.  No route of the gateway
# makes one (they are uploaded through the provider's other APIs, or made
# by another client's call), so the gateway cannot tell whose a file is,
# and every client of an entry shares the entry's key: any client could
# have the model read any file of the account.  Such a request is refused
# (body, 400, naming provider_tools: stored_files, nothing sent) unless
# the entry's provider_tools allows stored_files; a file_id that is a URL
# is an input by URL (09-llm-file-urls.t).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(anthropic_fields => '    provider_tools: [stored_files]');
$t->run;

plan tests => 13;

my $agent = $l->token('agent');

sub responses { $l->responses($agent, @_) }

sub sent { scalar $l->provider_requests }

my $n = sent();

my $r = responses(input => [ { role => 'user', content => [
                      { type => 'input_text', text => 'Summarise it' },
                      { type => 'input_file', file_id => 'file-FAKE1' } ] } ]);
is($r->{status}, 400, 'responses: an input_file by file_id: 400');
like($r->{body}, qr/stored_files/, '... naming the family');
like($r->{body}, qr/file_id/, '... and the member');

$r = responses(input => [ { role => 'user', content => [
                   { type => 'input_image', file_id => 'file-FAKE2' } ] } ]);
is($r->{status}, 400, 'responses: an input_image by file_id: 400');

$r = responses(input => [ { type => 'computer_call_output',
                            call_id => 'call_FAKE1',
                            output => { type => 'computer_screenshot',
                                        file_id => 'file-FAKE3' } } ]);
is($r->{status}, 400, 'responses: a screenshot by file_id: 400');

$r = $l->chat(token => $agent,
              body => { model => 'gpt-4o-mini',
                        messages => [ { role => 'user', content => [
                            { type => 'file',
                              file => { file_id => 'file-FAKE4' } } ] } ] });
is($r->{status}, 400, 'chat: a file part by file_id: 400');
is(sent(), $n, '... none of them sent');

$r = responses(input => [ { role => 'user', content => [
                   { type => 'input_file', filename => 'a.txt',
                     file_data => 'data:text/plain;base64,SGk=' } ] } ]);
is($r->{status}, 200, 'responses: a file given inline passes');

$r = responses(input => 'Hi',
               tools => [ { type => 'function', name => 'read',
                            parameters => { type => 'object', properties => {
                                file_id => { type => 'string' } } } } ]);
is($r->{status}, 200, '... and a function whose argument is a file_id');

# ---- an entry whose provider_tools allows stored_files ----------------------

$n = sent();

$r = $l->messages(token => $agent,
                  body => { model => 'claude-3-5-haiku', max_tokens => 100,
                            messages => [ { role => 'user', content => [
                                { type => 'document',
                                  source => { type => 'file',
                                              file_id => 'file_FAKE5' } },
                                { type => 'text', text => 'Summarise it' }
                            ] } ] });
is($r->{status}, 200, 'stored_files allowed: a document by file_id passes');
is(sent(), $n + 1, '... sent');
is($l->last_provider_request->{body}{messages}[0]{content}[0]{source}{file_id},
   'file_FAKE5', '... as written');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
