#!/usr/bin/perl

# ngx_http_airlock_llm_module: an answer the provider sent 2xx and the
# gateway refused to pass on (a Content-Encoding or Transfer-Encoding the
# scrubber cannot read: the client gets 502) is charged its reservation,
# the prompt estimate and the output cap, JSON answers and streams alike.
# The provider did the work and bills it.  Before, such a call was
# charged nothing, in the usage log and in the budget, as if the provider
# had refused it: a provider that compresses its answers (or is led to)
# served every call for free.  A provider's own error stays free.

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
plan tests => 11;

my $tok = $l->token('tight');           # max_tokens 20
my $true = JSON::PP::true;
my $n = 0;
my ($r, $u);

# the prompt estimate of this body: four bytes a token
my $prompt = 'x' x 400;

sub call {
    my ($script, %o) = @_;
    return $l->scripted_call(++$n, $script, token => $tok, prompt => $prompt,
                             %o);
}

# charged 100 tokens in (the prompt estimate) and 20 out (max_tokens)
sub reserved { Airlock::LLM::charges_reservation($_[0], 100, 20) }

for my $c (['JSON, gzip', {}, { gzip => 1, content_encoding => ['gzip'] }],
           ['JSON, br', {}, { content_encoding => ['br'] }],
           ['JSON, Transfer-Encoding gzip', {},
            { gzip => 1, transfer_encoding => 'gzip, chunked' }],
           ['anthropic, gzip', { anthropic => 1 },
            { gzip => 1, content_encoding => ['gzip'] }],
           ['chat stream, gzip', { fields => { stream => $true } },
            { headers => { 'Content-Encoding' => 'gzip' } }])
{
    my ($name, $o, $script) = @$c;

    ($r, $u) = call($script, %$o);
    is($r->{status}, 502, "$name: refused, 502");
    ok(reserved($u), "$name: charged its reservation") or diag(explain $u);
}

# the provider's own error is not charged

($r, $u) = call({ status => 500 });
is($u->{total_tokens}, 0, 'the provider\'s 500: not charged')
    or diag(explain $u);
