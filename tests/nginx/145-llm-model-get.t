#!/usr/bin/perl

# ngx_http_airlock_llm_module: GET <prefix>/models/{id} is answered by
# the gateway from the same per-client list as GET /models
# (tests/nginx/142-llm-model-list.t), in the provider's format, so the
# SDKs' models.retrieve() reads what models.list() listed: an alias the
# list shows is found, not refused; a model the client may use is the
# list's object, not the account's (whose "owned_by" names the
# organization).  An id not on the client's list is 404 in the
# provider's own not-found shape, the same for another client's model or
# alias as for a model no one has: the answer tells nothing of the rest
# of the policy.  The provider is never asked.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(
    openai_fields => "    aliases:\n      fast: gpt-4o-mini\n"
        . "      big: gpt-4o\n",
    anthropic_fields => "    aliases:\n      haiku: claude-3-5-haiku\n");

$t->run;

plan tests => 22;

my $agent = $l->token('agent');
my $worker = $l->token('worker');      # gpt-4o-mini only

sub get {
    my ($token, $path, %o) = @_;
    return $l->request('GET', $path, token => $token, %o);
}

sub listed {
    my ($token, $base, %o) = @_;
    my $r = get($token, "$base/models", %o);
    return { map { $_->{id} => $_ } @{$r->{json}{data} // []} };
}

my $n = scalar $l->provider_requests;

# ---- OpenAI ---------------------------------------------------------------

my $list = listed($agent, '/v1/proxy/openai');

my $r = get($agent, '/v1/proxy/openai/models/fast');
is($r->{status}, 200, 'openai: an alias the list shows: 200');
is_deeply($r->{json}, $list->{fast}, 'openai: the list\'s object');
ok(defined $r->{headers}{'x-request-id'}, 'openai: the gateway\'s id');
like($r->{headers}{'content-type'} // '', qr{^application/json},
     'openai: JSON');

$r = get($agent, '/v1/proxy/openai/v1/models/gpt-4o');
is($r->{status}, 200, 'openai: a model, under /v1: 200');
is_deeply($r->{json}, { id => 'gpt-4o', object => 'model', created => 0,
                        owned_by => 'airlock' },
          'openai: the list\'s object, nothing of the account');

$r = get($worker, '/v1/proxy/openai/models/big');
is($r->{status}, 404, 'openai: another client\'s alias: 404');
my $other = $r->{json}{error} // {};
is_deeply([ @$other{qw(type param code)} ],
          [ 'invalid_request_error', 'model', 'model_not_found' ],
          'openai: OpenAI\'s not-found error');

$r = get($worker, '/v1/proxy/openai/models/gpt-4o');
is($r->{status}, 404, 'openai: another client\'s model: 404');

$r = get($worker, '/v1/proxy/openai/models/no-such-FAKE-model');
is($r->{status}, 404, 'openai: a model no one has: 404');
my $none = $r->{json}{error} // {};
my $rid = qr/\(request id [^)]*\)/;
(my $m1 = $other->{message} // '') =~ s/big|$rid//g;
(my $m2 = $none->{message} // '') =~ s/no-such-FAKE-model|$rid//g;
is_deeply([ @$other{qw(type param code)}, $m1 ],
          [ @$none{qw(type param code)}, $m2 ],
          'openai: the same answer for another\'s model as for none');

$r = get($worker, '/v1/proxy/openai/models/gpt-4o-mini');
is($r->{status}, 200, 'openai: the client\'s own model: 200');
is_deeply(listed($worker, '/v1/proxy/openai'),
          { 'gpt-4o-mini' => $r->{json},
            fast => get($worker, '/v1/proxy/openai/models/fast')->{json} },
          'openai: retrieve finds every id of the list, and no other');

# ---- Anthropic -----------------------------------------------------------

$list = listed($agent, '/v1/proxy/anthropic', anthropic => 1);

$r = get($agent, '/v1/proxy/anthropic/v1/models/haiku', anthropic => 1);
is($r->{status}, 200, 'anthropic: an alias: 200');
is_deeply($r->{json}, $list->{haiku}, 'anthropic: the list\'s object');
is_deeply($r->{json}, { type => 'model', id => 'haiku',
                        display_name => 'haiku',
                        created_at => '1970-01-01T00:00:00Z' },
          'anthropic: a model as the SDK reads it');

$r = get($agent, '/v1/proxy/anthropic/models/claude-3-5-haiku',
         anthropic => 1);
is($r->{status}, 200, 'anthropic: a model: 200');

$r = get($agent, '/v1/proxy/anthropic/models/claude-FAKE-opus',
         anthropic => 1);
is($r->{status}, 404, 'anthropic: an id not listed: 404');
is($r->{json}{type}, 'error', 'anthropic: an error');
is($r->{json}{error}{type}, 'not_found_error',
   'anthropic: Anthropic\'s not_found_error');

is(scalar $l->provider_requests, $n, 'the provider is never asked');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
