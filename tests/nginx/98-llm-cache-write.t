#!/usr/bin/perl

# ngx_http_airlock_llm_module: Anthropic prompt-cache writes cost more than
# plain input (1.25 times for the 5-minute cache, 2 times for the 1-hour
# one, unless the policy gives cache_write / cache_write_1h).  The canned
# provider reports cache_creation_input_tokens with its cache_creation
# breakdown: the usage line carries the writes and their real cost, in a
# JSON answer and in a stream; a dollar budget is charged that cost, so a
# client that spent its budget on cache writes is refused; and a call
# reserves its input at the highest input price, so one that could spend
# past the budget by writing its prompt to the 1-hour cache is refused up
# front.  That is only for a call that asks for the cache: one with no
# cache_control member anywhere in its body cannot write it, and reserves
# its input at the input price.  A call charged its reservation because
# the provider never answered (the client hung up), and a stream cut
# before its first event (its prompt uncounted), are charged at the
# price the reservation took: the provider has the prompt and, if asked, may
# have cached it for an hour.  The arithmetic is unit-tested in
# tests/unit/llm_cache.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (spender => 'al-spender-token-333444555666',
           big => 'al-big-token-777888999000111222');
my %sha = map { $_ => $l->proxy->token_sha256($tok{$_}) } keys %tok;

$l->setup(
    clients => join('', map { qq{  $_: { token_sha256: "$sha{$_}" }\n} }
                        sort keys %tok),
    anthropic_fields => "    prices:\n"
        . "      claude-3-5-haiku: { input: 1, output: 5 }\n",
    anthropic_clients => "      spender:\n        usd_per_day: 0.15\n"
        . "        default_max_tokens: 100\n"
        . "      big:\n        usd_per_day: 0.015\n"
        . "        default_max_tokens: 100\n",
);

$t->run;

plan tests => 21;

# 40000 written to the 5-minute cache, 60000 to the 1-hour one, 3 out:
# 40000 * 1.25 + 60000 * 2 + 3 * 5 = 170015 microdollars; at the plain
# input price it was 100015
my $script = { usage => { prompt => 100000, cache_write => 100000,
                          cache_write_1h => 60000, completion => 3 } };

# ---- the cost of a JSON answer ---------------------------------------------

$l->script($script);
my $r = $l->messages(token => $l->token('agent'));
is($r->{status}, 200, 'a call that writes to the prompt cache');

my $u = $l->last_usage(1);
is($u->{cache_write_tokens}, 100000, 'usage line: cache_write_tokens');
is($u->{cache_write_1h_tokens}, 60000, 'usage line: cache_write_1h_tokens');
is($u->{cost_usd}, 0.170015,
   'usage line: cache writes at 1.25 and 2 times the input price');

# ---- the same in a stream --------------------------------------------------

$l->script($script);
$r = $l->messages(token => $l->token('agent'),
                  fields => { stream => JSON::PP::true });
is($r->{status}, 200, 'a stream that writes to the prompt cache');

$u = $l->last_usage(2);
is($u->{usage_source}, 'stream', 'stream: its usage read');
is($u->{cost_usd}, 0.170015, 'stream: cache writes at their prices');

# ---- the budget is charged what the writes cost ----------------------------

$l->script($script);
$r = $l->messages(token => $tok{spender});
is($r->{status}, 200, 'spender: a call within its $0.15');

$l->script({});
$r = $l->messages(token => $tok{spender});
is($r->{status}, 429, 'spender: $0.17 spent, the next call refused');
like($r->{body}, qr/rate_limit_error/, 'spender: in Anthropic\'s format');

# ---- the reservation prices input as a 1-hour cache write ------------------

# about 10000 input tokens: $0.01 at the input price, $0.02 written for
# an hour; with 1 output token that is over the $0.015 budget.  The
# cache_control at the top asks for automatic caching.
my $cache = { cache_control => { type => 'ephemeral', ttl => '1h' } };

$l->script({});
$r = $l->messages(token => $tok{big}, prompt => 'a' x 40000, max_tokens => 1,
                  fields => $cache);
is($r->{status}, 429, 'big: a call that could cache its prompt for an '
                      . 'hour past the budget is refused');

$r = $l->messages(token => $tok{big}, prompt => 'a' x 40000, max_tokens => 1);
is($r->{status}, 200, 'big: the same call without cache_control is '
                      . 'reserved at the input price, and fits');

# cache_control on a content block, as the SDKs write it
$r = $l->messages(token => $tok{big}, max_tokens => 1,
                  prompt => [ { type => 'text', text => 'a' x 40000,
                                cache_control => { type => 'ephemeral' } } ]);
is($r->{status}, 429, 'big: cache_control on a block is seen too');

$r = $l->messages(token => $tok{big}, prompt => 'a' x 20000, max_tokens => 1,
                  fields => $cache);
is($r->{status}, 200, 'big: half the prompt fits');

# ---- a stream cut before its first event ----------------------------------

# the provider counted nothing the gateway saw: the prompt is its bound
# (a token a byte), priced as the reservation priced it
for my $c ([$cache, 6, 2, 'with cache_control: as a 1-hour write'],
           [{}, 7, 1, 'without cache_control: at the input price'])
{
    my ($fields, $line, $x, $name) = @$c;
    $l->script({ cut_after => 0 });
    $l->messages(token => $l->token('agent'), prompt => 'a' x 4000,
                 fields => { stream => JSON::PP::true, %$fields });
    my $v = $l->last_usage($line);
    ok($v->{usage_source} eq 'estimated'
       && $v->{cost_usd} == ($v->{prompt_tokens} * $x + 100 * 5) / 1e6
       && ($v->{cache_write_1h_tokens} // 0)
          == ($x == 2 ? $v->{prompt_tokens} : 0),
       "a stream cut before its first event, $name")
        or diag(explain $v);
}

# ---- a call the provider never answered -----------------------------------

# the client sends the call and hangs up once the provider has it; the
# provider answers only when the file go exists
sub hung_up {
    my ($fields, $line) = @_;
    my $n = scalar $l->provider_requests;
    unlink $t->testdir . '/go';
    $l->script({ wait_file => $t->testdir . '/go' });
    my $body = encode_json({ model => 'claude-3-5-haiku', max_tokens => 100,
                             messages => [ { role => 'user',
                                             content => 'a' x 4000 } ],
                             %$fields });
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $t->port(8080),
                                  Proto => 'tcp', Timeout => 5)
        or die "connect: $!";
    syswrite($s, "POST /v1/proxy/anthropic/messages HTTP/1.1\r\n"
                 . "Host: localhost\r\nx-api-key: " . $l->token('agent')
                 . "\r\nContent-Type: application/json\r\n"
                 . "Content-Length: " . length($body) . "\r\n"
                 . "Connection: close\r\n\r\n$body");
    my $deadline = time + 10;
    sleep 0.02 while scalar $l->provider_requests == $n && time < $deadline;
    close $s;

    my $u = $l->last_usage($line);
    $t->write_file('go', '');
    return $u;
}

$u = hung_up($cache, 8);
is($u->{status}, 499, 'hung up before the answer: 499');
is($u->{cache_write_1h_tokens}, $u->{prompt_tokens},
   '... its prompt, at its bound, counted as written for an hour');
is($u->{cost_usd}, ($u->{prompt_tokens} * 2 + 100 * 5) / 1e6,
   '... and charged as reserved, at twice the input price')
    or diag(explain $u);

$u = hung_up({}, 9);
is($u->{status}, 499, 'without cache_control, hung up: 499');
ok(!$u->{cache_write_tokens} && !$u->{cache_write_1h_tokens}
   && $u->{cost_usd} == ($u->{prompt_tokens} + 100 * 5) / 1e6,
   '... charged as reserved, at the input price, with no cache write')
    or diag(explain $u);

$t->stop;
