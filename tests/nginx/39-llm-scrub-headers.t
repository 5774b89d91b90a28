#!/usr/bin/perl

# ngx_http_airlock_llm_module: the response headers the gateway adds (its
# rate-limit headers, x-request-id) are not scrubbed, being its own
# numbers; every header the provider sent still is.  The provider sends
# the key in more headers than the first block of nginx's header list
# holds (20), and as its x-request-id (passed on as
# x-provider-request-id): each comes out redacted, on answers with and
# without the gateway's rate-limit headers, JSON and streamed.  The
# headers naming the provider's account (organization, project) are
# removed.

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

$l->setup(tight_tpm => 1000000);
$t->run;

plan tests => 4 * 8 + 2;

my $n = 30;

for my $c (['agent', 0], ['tight', 0], ['agent', 1], ['tight', 1]) {
    my ($client, $stream) = @$c;
    my $name = "$client" . ($stream ? ', streamed' : '');

    $l->script({ echo_auth => 1, echo_headers => $n,
                 request_id => "req-$Airlock::LLM::OPENAI_KEY" });

    my $r = $l->chat(token => $l->token($client),
                     $stream ? (fields => { stream => JSON::PP::true })
                             : ());
    my $h = $r->{headers};

    is($r->{status}, 200, "$name: 200");
    is(Airlock::LLM::leaks($r->{raw}), 0, "$name: no key in the response");
    is(scalar(grep { ($h->{"x-echo-auth-$_"} // '') =~ /\[REDACTED\]/ }
              0 .. $n - 1),
       $n, "$name: each of the provider's $n headers redacted");
    like($h->{'x-echo-auth'} // '', qr/\[REDACTED\]/,
         "$name: x-echo-auth redacted");
    is($h->{'x-provider-request-id'}, 'req-[REDACTED]',
       "$name: the provider's x-request-id redacted");
    like($h->{'x-request-id'} // '', qr/^[0-9a-f]{32}$/,
         "$name: the gateway's x-request-id");

    unlike($r->{raw}, qr/^(openai-organization|openai-project|
                          anthropic-organization-id):/mix,
           "$name: none of the headers naming the provider's account");

    if ($client eq 'tight') {
        like($h->{'x-ratelimit-remaining-tokens'} // '', qr/^\d+$/,
             "$name: the gateway's x-ratelimit-remaining-tokens");
    } else {
        ok(!exists $h->{'x-ratelimit-limit-tokens'},
           "$name: no budget, no x-ratelimit-limit-tokens");
    }
}

# Anthropic's: its organization's id
$l->script({});
my $m = $l->messages(token => $l->token('agent'));
ok($m->{status} == 200
   && $m->{raw} !~ /^(anthropic-organization-id|openai-[a-z]+):/mi,
   'anthropic: no header naming the provider\'s account')
    or diag $m->{raw};

is($t->error_log_check, '', 'no alerts or sanitizer reports');
