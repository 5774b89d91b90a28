#!/usr/bin/perl

# ngx_http_airlock_llm_module: a usage of which some counts are integers
# and others decimals ("completion_tokens": 89.5, as a translator in front
# of another API may write them) is charged the numbers a client reads,
# a fraction rounded up, in JSON answers and streams alike.  Before, such
# a count was read as 0 and the call charged its prompt alone, in the
# usage log and in the budget.  (A usage with no integer count at all is
# still taken for none: 110-llm-usage-unreadable.t.)  A usage longer than
# the gateway keeps (4 KB: a provider that adds many detail members) is
# read all the same, its other members passed over; before, such a JSON
# answer was taken for one without usage and charged its reservation.

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
plan tests => 8;

my $tok = $l->token('tight');
my $true = JSON::PP::true;
my $n = 0;
my ($r, $u);

sub call {
    my ($script, %o) = @_;
    return $l->scripted_call(++$n, $script, token => $tok, prompt => 'Hi',
                             %o);
}

my $usage = { usage => { prompt => 700, completion => 89.5 } };

($r, $u) = call($usage);
is($r->{status}, 200, 'JSON, a decimal completion count: 200');
ok($u->{prompt_tokens} == 700 && $u->{completion_tokens} == 90
   && $u->{total_tokens} == 790 && $u->{usage_source} eq 'response',
   '... charged 700 + 90') or diag(explain $u);

($r, $u) = call($usage, fields => { stream => $true });
ok($u->{prompt_tokens} == 700 && $u->{completion_tokens} == 90
   && $u->{total_tokens} == 790 && $u->{usage_source} eq 'stream',
   'chat stream: charged 700 + 90') or diag(explain $u);

($r, $u) = call($usage, anthropic => 1, fields => { stream => $true });
ok($u->{prompt_tokens} == 700 && $u->{completion_tokens} == 90
   && $u->{usage_source} eq 'stream',
   'anthropic stream: charged 700 + 90') or diag(explain $u);

($r, $u) = call($usage, anthropic => 1);
ok($u->{prompt_tokens} == 700 && $u->{completion_tokens} == 90
   && $u->{usage_source} eq 'response',
   'anthropic JSON: charged 700 + 90') or diag(explain $u);

# a usage of 6 KB: 600 members where cached_tokens is

my $big = { map { ("detail_$_" => $_) } 1 .. 600 };
$usage = { usage => { prompt => 700, completion => 90, cached => $big } };

($r, $u) = call($usage);
ok($r->{status} == 200 && length($r->{body}) > 6000,
   'JSON, a usage of 6 KB: 200, all of it') or diag(length $r->{body});
ok($u->{prompt_tokens} == 700 && $u->{completion_tokens} == 90
   && $u->{total_tokens} == 790 && $u->{usage_source} eq 'response',
   '... charged its counts, not the reservation') or diag(explain $u);

$l->script($usage);
$r = $l->request('POST', '/v1/proxy/openai/responses', token => $tok,
                 body => { model => 'gpt-4o-mini', input => 'Hi' });
$l->script();
$u = $l->last_usage(++$n);
ok($u->{prompt_tokens} == 700 && $u->{completion_tokens} == 90
   && $u->{usage_source} eq 'response',
   'responses JSON, a usage of 6 KB: charged its counts')
    or diag(explain $u);
