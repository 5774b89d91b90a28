#!/usr/bin/perl

# ngx_http_airlock_llm_module: the gateway's refusals carry
# "Airlock-Denial: REASON" as the named routes' do (in the provider's
# error format, whatever their status), and a provider's answer never
# does: the header a provider sends, on a 200, a stream or its own 403
# error, is removed.

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

$l->setup;
$t->run;

plan tests => 10;

my $agent = $l->token('agent');

# every Airlock-Denial header of a response, as sent
sub denial {
    my ($r) = @_;
    return map { $_->[1] }
           grep { lc $_->[0] eq 'airlock-denial' } @{$r->{header_list}};
}

# ---- the gateway's refusals ------------------------------------------------

my $r = $l->request('POST', '/v1/proxy/openai/files', token => $agent,
                    body => { purpose => 'x' });
is($r->{status}, 403, 'an endpoint not served: 403');
is_deeply([denial($r)], ['no_route'], '... with "Airlock-Denial: no_route"')
    or diag $r->{raw};

$r = $l->chat(token => $agent, model => 'gpt-3');
is_deeply([denial($r)], ['model'],
          'a model not allowed: "Airlock-Denial: model"')
    or diag $r->{raw};

$r = $l->chat(token => 'al-wrong-token');
ok($r->{status} == 401 && join(',', denial($r)) eq 'client_unknown',
   'an unknown key (401): "Airlock-Denial: client_unknown"')
    or diag $r->{raw};

# ---- the provider's answers ------------------------------------------------

my $h = { 'Airlock-Denial' => 'no_route' };

$l->script({ headers => $h });
$r = $l->chat(token => $agent);
is($r->{status}, 200, 'a provider\'s 200 with Airlock-Denial: 200');
is_deeply([denial($r)], [], '... without it');

$l->script({ headers => { 'airlock-denial' => 'model' } });
$r = $l->chat(token => $agent, fields => { stream => JSON::PP::true });
ok($r->{status} == 200 && !denial($r),
   'a stream with airlock-denial: without it')
    or diag $r->{raw};

$l->script({ status => 403, headers => $h });
$r = $l->chat(token => $agent);
is($r->{status}, 403, 'the provider\'s own 403 with Airlock-Denial: 403');
is_deeply([denial($r)], [], '... without it');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
