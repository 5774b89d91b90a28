#!/usr/bin/perl

# ngx_http_airlock_llm_module: the reset of the rate-limit headers is
# taken when the answer is sent, not when the call was admitted.  The
# provider takes 4 s to answer; x-ratelimit-reset-tokens (seconds) and
# anthropic-ratelimit-tokens-reset (a time) must still point at the end of
# the current UTC minute, the window of a client with tokens_per_minute.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use POSIX qw(strftime);
use Test::More;
use Time::HiRes qw(time);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(tight_tpm => 100000);

$t->run;

plan tests => 6;

my $delay = 4000;
my $tight = $l->token('tight');

# ends of the minute the answer arrived in (or the one before, when the
# headers were sent just before the minute rolled)
sub minute_ends {
    my ($at) = @_;
    return map { (int($_ / 60) + 1) * 60 } (int($at), int($at) - 1);
}

$l->script({ delay_first_ms => $delay });
my $r = $l->chat(token => $tight);
my $at = time;

is($r->{status}, 200, 'openai: 200 after the delay');
my ($reset) = ($r->{headers}{'x-ratelimit-reset-tokens'} // '') =~ /^(\d+)s$/;
ok(defined $reset, 'x-ratelimit-reset-tokens in seconds');
my $end = int($at) + ($reset // 0);
ok((grep { abs($end - $_) <= 1 } minute_ends($at)),
   "x-ratelimit-reset-tokens ${\($reset // '?')}s: the minute's end from "
   . "the answer's time (off by " . ($end - (minute_ends($at))[0]) . " s)");

$l->script({ delay_first_ms => $delay });
$r = $l->messages(token => $tight);
$at = time;

is($r->{status}, 200, 'anthropic: 200 after the delay');
my $got = $r->{headers}{'anthropic-ratelimit-tokens-reset'} // '';
my @want = map { strftime('%Y-%m-%dT%H:%M:%SZ', gmtime $_) }
           minute_ends($at);
like($got, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
     'anthropic-ratelimit-tokens-reset: RFC 3339');
ok((grep { $_ eq $got } @want),
   "anthropic-ratelimit-tokens-reset $got: the minute's end (@want)");
