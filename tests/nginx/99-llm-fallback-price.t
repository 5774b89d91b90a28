#!/usr/bin/perl

# Ordered fallback and prices: a call a priced entry hands to its
# fallback is charged at the price of the model the fallback serves, not
# the model first asked for, in the usage line and against a dollar
# budget; and its reservation covers the fallback's worst case, so a
# call that could spend past the budget should it fall back to a dearer
# model is refused up front.  A budgeted client's call does not fall back
# to a model the fallback has no price for (it would be free).  A
# budgeted client's OpenRouter "provider" routing passes only beside a
# "max_price" at the prices of the model each entry would serve, the
# fallback's found by the alias the client named.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (spender => 'al-spender-token-333444555666');
my %sha = map { $_ => $l->proxy->token_sha256($tok{$_}) } keys %tok;

my $entries = <<'Y';
  - name: primary
    prefix: /v1/proxy/primary
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    aliases: { fast: gpt-4o-mini, cheap: gpt-4o-mini, mini: gpt-4o-mini }
    prices:
      gpt-4o-mini: { input: 0.15, output: 0.6 }
    fallback: backup
    clients:
      agent: {}
      spender: { usd_per_day: 0.01, default_max_tokens: 100 }
  - name: backup
    prefix: /v1/proxy/backup
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8083%%/v1"
    secret: openai_key
    models: [gpt-4o, free-model, gpt-4o-nano]
    aliases: { fast: gpt-4o, cheap: free-model, mini: gpt-4o-nano }
    prices:
      gpt-4o: { input: 10, output: 40 }
      gpt-4o-nano: { input: 0.1, output: 0.4 }
    clients:
      agent: {}
      spender: { default_max_tokens: 100 }
Y

my $locations = Airlock::LLM::fallback_locations(names => ['primary']);

$l->setup(clients => qq{  spender: { token_sha256: "$sha{spender}" }\n},
          openai_clients => $entries, locations => $locations);
$l->start_provider(8083);
$t->run;

plan tests => 13;

sub on { $l->on_provider(@_) }

sub call {
    my ($token, %o) = @_;
    return $l->request('POST', '/v1/proxy/primary/chat/completions',
                       token => $token, body => {
                           model => $o{model} // 'fast',
                           messages => [ { role => 'user',
                                           content => $o{prompt} // 'Hi' } ],
                           max_tokens => $o{max_tokens} // 10,
                           $o{provider} ? (provider => $o{provider}) : (),
                       });
}

# the backup reports 1000 in, 100 out: $0.01 + $0.004 at gpt-4o's
# prices; at gpt-4o-mini's it was $0.00015 + $0.00006
on(8081, sub { $l->script_all({ status => 503 }) });
on(8083, sub { $l->script_all({ usage => { prompt => 1000,
                                           completion => 100 } }) });

my $r = call($l->token('agent'));
is($r->{status}, 200, 'a call served by the fallback');

my $u = $l->last_usage(1);
is($u->{provider}, 'backup', 'usage line: the backup served');
is($u->{model}, 'gpt-4o', 'usage line: its model');
is($u->{cost_usd}, 0.014, 'usage line: at the price of the model served');

# $0.01 a day: 50000 bytes of prompt (12500 tokens) with 10 out reserve
# $0.001881 at gpt-4o-mini's prices, $0.1254 at gpt-4o's
on(8083, sub { $l->script_all({}) });
$r = call($tok{spender}, prompt => 'a' x 50000);
is($r->{status}, 429, 'spender: a call that could fall back past its '
                      . 'budget is refused up front');

$r = call($tok{spender}, prompt => 'a' x 200, max_tokens => 5);
is($r->{status}, 200, 'spender: a small one goes, and falls back');

# the fallback's own usage (11 in, 3 out) at gpt-4o's prices
$u = $l->last_usage(2);
is($u->{cost_usd}, 0.00023, 'spender: charged at the fallback\'s prices');

# the backup has no price for the model it serves for "cheap"
my $n = on(8083, sub { scalar $l->provider_requests });
$r = call($tok{spender}, model => 'cheap');
is($r->{status}, 503, 'spender: no fallback to an unpriced model');
is(on(8083, sub { scalar $l->provider_requests }), $n,
   '... the backup was not asked');

# "mini" is gpt-4o-mini at 0.15/0.6 here and gpt-4o-nano at 0.1/0.4 at
# the backup: a max_price at the first prices lets the backup's router
# pick a provider dearer than the second
my $cap = { prompt => 0.15, completion => 0.6, request => 0, image => 0 };
$n = on(8081, sub { scalar $l->provider_requests });
$r = call($tok{spender}, model => 'mini',
          provider => { zdr => \1, max_price => $cap });
is($r->{status}, 400, 'spender: routing with a max_price over the prices '
                      . 'of the model the alias falls back to: 400');
is(on(8081, sub { scalar $l->provider_requests }), $n,
   '... the provider was not asked');

$cap = { prompt => 0.1, completion => 0.4, request => 0, image => 0 };
$r = call($tok{spender}, model => 'mini',
          provider => { zdr => \1, max_price => $cap });
is($r->{status}, 200, '... at the lower of both prices it passes');
is(on(8083, sub { $l->last_provider_request->{body}{model} }),
   'gpt-4o-nano', '... and falls back to the alias\'s model');

$t->stop;
