#!/usr/bin/perl

# ngx_http_airlock_llm_module: a reload that gives airlock_llm_zone another
# size (what its "no room" alert asks for) keeps what clients have spent
# and what was counted, as a reload at the same size does: nginx makes a
# new zone for a new size, and the budgets and counters of the old one
# are copied into it.  A call in flight across the reload ends in the old
# zone (its old worker settles there): the new zone does not hold its
# place in flight, so the client's next call is admitted once it ends.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $daily = 'al-daily-token-123123123123';
my $one = 'al-one-token-456456456456456';

$l->setup(
    clients => '  daily: { token_sha256: "' . $l->proxy->token_sha256($daily)
               . qq("}\n  one: { token_sha256: ")
               . $l->proxy->token_sha256($one) . qq("}\n),
    openai_clients => "      daily:\n        tokens_per_day: 40\n"
                      . "        max_tokens: 20\n"
                      . "        over_max_tokens: clamp\n"
                      . "      one:\n        max_concurrent_requests: 1\n",
);

$t->run;

plan tests => 11;

sub metrics {
    return parse_response(http_get('/metrics', port => 8082))->{body} // '';
}

sub calls {
    my ($m, $client) = @_;
    return $m =~ /^airlock_llm_requests_total\{provider="openai",client="\Q$client\E",model="gpt-4o-mini",status="200"\} (\d+)$/m
           ? $1 : 0;
}

sub resize {
    my ($size) = @_;
    my $conf = $t->read_file('nginx.conf');
    $conf =~ s/airlock_llm_zone llm \w+;/airlock_llm_zone llm $size;/
        or die "no zone in nginx.conf";
    $t->write_file('nginx.conf', $conf);
    $t->reload;
}

# the day budget of 40: two calls of 14 tokens fit, the third does not

my @s = map { $l->chat(token => $daily)->{status} } 1 .. 3;
is_deeply(\@s, [200, 200, 429], 'the day budget is spent');
is(calls(metrics(), 'daily'), 2, 'two calls counted');

resize('2m');

is($l->chat(token => $daily)->{status}, 429,
   'a larger zone: the day budget is still spent');
is(calls(metrics(), 'daily'), 2, 'a larger zone: the counters are kept');

resize('512k');

is($l->chat(token => $daily)->{status}, 429,
   'a smaller zone: the day budget is still spent');
is(calls(metrics(), 'daily'), 2, 'a smaller zone: the counters are kept');

# a call in flight across a resize

my $go = $t->testdir . '/go';
my $s = $l->held_chat({ wait_file => $go }, token => $one);

resize('1m');

$t->write_file('go', '');
my $raw = '';
while (sysread($s, my $buf, 65536)) { $raw .= $buf }
like($raw, qr/^HTTP\/1\.1 200/, 'the call in flight is answered');

is($l->chat(token => $one)->{status}, 200,
   'after it, the client\'s next call is admitted');
like(metrics(),
     qr/^airlock_llm_requests_in_flight\{provider="openai",client="one"\} 0$/m,
     'nothing in flight');
is(calls(metrics(), 'daily'), 2, 'a third size: the counters are kept');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
