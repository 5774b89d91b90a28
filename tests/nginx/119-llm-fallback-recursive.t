#!/usr/bin/perl

# ngx_http_airlock_llm_module: the ordered fallback sends a call to its
# fallback once, and stops at the end of its list, also when the
# server's error_page (inherited by the fallback's named location) leads
# the fallback's own failure back to @airlock_llm_fallback with
# recursive_error_pages on.  Before, each such failure sent the call to
# the fallback again, until nginx's limit of internal redirects: ten
# sends of one call, each a prompt the provider may bill, and a 500 for
# the client.  Now the client gets the fallback's status with the
# gateway's error body, and the provider one call.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

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
    models: [gpt-4o]
    fallback: backup
    clients:
      agent: {}
  - name: backup
    prefix: /v1/proxy/backup
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8083%%/v1"
    secret: openai_key
    models: [gpt-4o]
    clients:
      agent: {}
Y

# server level: every location intercepts and falls back, the named
# location too, and an error page's own error is led again

my $locations = <<'L';
        recursive_error_pages on;
        proxy_intercept_errors on;
        error_page 429 500 502 503 504 = @airlock_llm_fallback;

        location /v1/proxy/primary/ {
            airlock_llm primary;

            %%AIRLOCK_LOCATION%%
        }

        location @airlock_llm_fallback {
            airlock_llm_fallback;

            %%AIRLOCK_LOCATION%%
        }
L

$l->setup(openai_clients => $entries, locations => $locations);
$l->start_provider(8083);
$t->run;

plan tests => 6;

my $n = 0;

sub sent {
    my ($port) = @_;
    local $l->{provider} = $port;
    return scalar(my @r = $l->provider_requests);
}

sub call {
    my ($primary, $backup) = @_;
    { local $l->{provider} = 8081; $l->script_all($primary); }
    { local $l->{provider} = 8083; $l->script_all($backup); }
    my @before = (sent(8081), sent(8083));
    my $r = $l->request('POST', '/v1/proxy/primary/chat/completions',
                        token => $l->token('agent'), body => {
                            model => 'gpt-4o', max_tokens => 10,
                            messages => [ { role => 'user',
                                            content => 'Hi' } ] });
    my $u = $l->last_usage(++$n);
    return ($r, $u, sent(8081) - $before[0], sent(8083) - $before[1]);
}

# the primary and its fallback both answer 503

my ($r, $u, $p, $b) = call({ status => 503 }, { status => 503 });
is($r->{status}, 503, 'both fail: the fallback\'s 503');
is($p, 1, '... the primary was sent the call once');
is($b, 1, '... the fallback once, not again for its own failure');
is(($r->{json} // {})->{error}{type}, 'server_error',
   '... the gateway\'s error body') or diag($r->{raw});
is($u->{fallback_status}, 503, '... the usage line names the fallback')
    or diag(explain $u);

# the fallback answers: served, once

($r, $u, $p, $b) = call({ status => 503 }, {});
ok($r->{status} == 200 && $p == 1 && $b == 1,
   'the fallback answers: 200, one call each');
