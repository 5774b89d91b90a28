#!/usr/bin/perl

# ngx_http_airlock_llm_module: a file content part may give its file by
# URL too, in members not named like one.  OpenRouter takes a PDF's
# "file_data" as a URL it downloads (or a data: URL), and LiteLLM's proxy
# a "file_id" that is a URL (it downloads it for the providers that take
# no URL).  Either is the provider (or the router) reaching a URL the
# client chose, family url_input, as image_url is: refused (body, 400,
# nothing sent) unless provider_tools allows it.  A data: URL and base64
# pass; a file_id of an uploaded file (file-...) is no download but a file
# the account stores, family stored_files (205-llm-stored-files.t).
# 07-llm-url-inputs.t has the other keys.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;

$t->run;

plan tests => 10;

my $agent = $l->token('agent');
my $n = scalar $l->provider_requests;
my $leak = 'https://attacker.example/x.pdf?data=secret';

sub file {
    my (%f) = @_;
    return { model => 'gpt-4o-mini',
             messages => [ { role => 'user',
                             content => [ { type => 'text',
                                            text => 'What is this?' },
                                          { type => 'file',
                                            file => { filename => 'x.pdf',
                                                      %f } } ] } ] };
}

my $r = $l->chat(token => $agent, body => file(file_data => $leak));
is($r->{status}, 400, 'file_data by https URL (OpenRouter): 400');
like($r->{body}, qr/url_input/, '... naming the family');
like($r->{body}, qr/file_data/, '... and the member');

$r = $l->chat(token => $agent, body => file(file_id => $leak));
is($r->{status}, 400, 'file_id by https URL (LiteLLM): 400');

$r = $l->chat(token => $agent, body => file(file_id => 'gs://bucket/x.pdf'));
is($r->{status}, 400, 'file_id by another scheme: 400');

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                 body => { model => 'gpt-4o-mini',
                           input => [ { role => 'user', content => [
                               { type => 'input_file', filename => 'x.pdf',
                                 file_data => $leak } ] } ] });
is($r->{status}, 400, 'responses: input_file file_data by URL: 400');
is(scalar $l->provider_requests, $n, '... none of them sent');

$r = $l->chat(token => $agent,
              body => file(file_data => 'data:application/pdf;base64,JVBE'));
is($r->{status}, 200, 'file_data as a data: URL passes');

$r = $l->chat(token => $agent, body => file(file_id => 'file-abc123'));
is($r->{status}, 400, 'file_id of an uploaded file: 400');
like($r->{body}, qr/stored_files/, '... as a stored file, not a URL');

$t->stop;
