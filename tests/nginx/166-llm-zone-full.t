#!/usr/bin/perl

# ngx_http_airlock_llm_module: airlock_llm_zone at its smallest (32k) and
# more clients with limits than it has room for.  A call whose client
# gets no budget is refused, never admitted unlimited: 503 in the
# provider's format (an SDK raises its usual error and retries), with
# "Airlock-Denial: budget", and the error log asks for a larger zone in
# one alert per worker, not one per call.  The clients that have their
# budget are served on.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $n = 150;
my @c = map { sprintf('c%03d', $_) } 1 .. $n;
my %tok = map { $_ => "al-$_-FAKE-token-0123456789abcdef" } @c;

$l->setup(
    zone => 'airlock_llm_zone llm 32k;',
    clients => join('', map { "  $_: { token_sha256: \""
                              . $l->proxy->token_sha256($tok{$_})
                              . "\" }\n" } @c),
    openai_clients => join('', map { "      $_:\n"
                                     . "        tokens_per_minute: 100000\n"
                                     . "        max_concurrent_requests: 3\n"
                                   } @c),
);

$t->run;

plan tests => 9;

my (%first, %again, $refused);

for my $c (@c) {
    my $r = $l->chat(token => $tok{$c});
    $first{$c} = $r->{status};
    $refused //= $r if $r->{status} != 200;
}

my @served = grep { $first{$_} == 200 } @c;
my @full = grep { $first{$_} != 200 } @c;

ok(@served >= 10, scalar(@served) . ' clients have a budget and are served');
ok(@full >= 10, scalar(@full) . ' clients find the zone full');
is_deeply([ sort { $a <=> $b } keys %{{ map { $_ => 1 } values %first }} ],
          [ 200, 503 ], 'each call is served or refused 503');

my $e = ($refused && $refused->{json}) ? $refused->{json}{error} : undef;
is(ref $e eq 'HASH' && $e->{code}, 'budget_unavailable',
   'the refusal is an OpenAI error: code budget_unavailable');
like(ref $e eq 'HASH' && $e->{message}, qr/cannot keep this client's budget/,
     'its message says why');
is($refused && $refused->{headers}{'airlock-denial'}, 'budget',
   'Airlock-Denial: budget');

for my $c (@c) {
    $again{$c} = $l->chat(token => $tok{$c})->{status};
}

is(scalar(grep { $again{$_} == 200 } @served), scalar(@served),
   'the clients with a budget are still served');

my $log = $t->read_file('error.log') // '';
my @alerts = $log =~ /\[alert\][^\n]*no room for a budget node/g;
is(scalar @alerts, 1, 'one alert for the zone without room, not one a call');

is($t->error_log_check(qr/no room for/), '',
   'no other alerts or sanitizer reports');
