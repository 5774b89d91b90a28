#!/usr/bin/perl

# Ordered fallback of a call whose body the gateway made longer: the
# check adds stream_options.include_usage to a stream (and an output cap,
# a model for an alias), so a body near the entry's max_body_bytes goes
# to the provider a few bytes over it.  That body, already checked and in
# memory, is what the fallback gets too: it falls back like any other
# (it used to be taken for a body not in memory, and the client got the
# first provider's 503).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $entries = <<'Y';
  - name: primary
    prefix: /v1/proxy/primary
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    fallback: backup
    clients:
      agent: {}
  - name: backup
    prefix: /v1/proxy/backup
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8083%%/v1"
    secret: anthropic_key
    models: [gpt-4o-mini]
    clients:
      agent: {}
Y

my $locations = Airlock::LLM::fallback_locations(
    names => ['primary'], read_timeout => '10s',
    fallback_read_timeout => '10s');

$l->setup(openai_clients => $entries, locations => $locations);
$l->start_provider(8083);
$t->run;

plan tests => 5;

sub on { $l->on_provider(@_) }

# a stream body 20 bytes under the limit: include_usage makes it longer

my %body = (model => 'gpt-4o-mini', stream => JSON::PP::true,
            messages => [ { role => 'user', content => '' } ]);
my $len = length encode_json(\%body);
$body{messages}[0]{content} = 'x' x (65536 - 20 - $len);
my $json = encode_json(\%body);

on(8081, sub { $l->script({ status => 503 }) });

my $r = $l->request('POST', '/v1/proxy/primary/chat/completions',
                    token => $l->token('agent'), body => $json);

my @p = on(8081, sub { $l->provider_requests });
my @b = on(8083, sub { $l->provider_requests });

ok(length($json) <= 65536 && @p == 1
   && length(encode_json($p[0]{body})) > 65536,
   'the primary was sent the body, made longer than the limit')
    or diag(length $json);
is($r->{status}, 200, 'the call falls back: the backup\'s answer');
like($r->{body}, qr/\[DONE\]/, 'the backup\'s stream');
is(scalar @b, 1, 'the backup was asked once');
is($t->error_log_check, '', 'no alerts or sanitizer reports');
