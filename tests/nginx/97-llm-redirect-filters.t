#!/usr/bin/perl

# A gateway call that an error_page leads into a location of
# ngx_http_airlock_module (a URI that falls in "location /", airlock on)
# goes out as it was decided, to its provider with its key: its answer
# must pass the gateway's filters there too, as in its own location:
# the headers naming the provider's account and its rate limits removed,
# the gateway's x-request-id, the usage counted from the answer (without
# them the call was charged 0 tokens against its budget).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $locations = <<'L';
        location / {
            airlock on;
            %%AIRLOCK_LOCATION%%
        }
L

$l->setup(locations => $locations,
          location => "proxy_intercept_errors on;\n"
                      . "            error_page 500 = /retry;");
$t->run;

plan tests => 7;

$l->script({ status => 500 },
           { headers => { 'openai-organization' => 'org-airlock-test',
                          'x-ratelimit-remaining-tokens' => '123456' },
             usage => { prompt => 7, completion => 5 } });

my $r = $l->chat(token => $l->token('tight'));
my $h = $r->{headers};

is($r->{status}, 200, 'the call is answered after the error_page');
is(scalar($l->provider_requests), 2, 'the provider got it twice');
ok(!exists $h->{'openai-organization'},
   'no header naming the provider\'s account')
    or diag("openai-organization: $h->{'openai-organization'}");
isnt($h->{'x-ratelimit-remaining-tokens'} // '', '123456',
     'the provider\'s rate limit is not passed on');
like($h->{'x-request-id'} // '', qr/^[0-9a-f]{32}$/,
     'the gateway\'s x-request-id');

my @u = $l->usage_lines(1, 5);
my $u = Airlock::LLM::jdecode($u[-1] // '') // {};
is(join(' ', map { $_ // 'null' } @$u{qw(usage_source prompt_tokens
                                              completion_tokens)}),
   'response 7 5', 'the usage is read from the answer');

is($t->error_log_check, '', 'no alerts');
