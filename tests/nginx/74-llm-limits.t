#!/usr/bin/perl

# ngx_http_airlock_llm_module: requests in flight, requests per minute,
# costs and dollar budgets.  A slow canned provider (wait_file) holds
# admitted calls open: a client over max_concurrent_requests gets 429, a
# place comes back when a call ends however it ends (the client hanging
# up, an upstream error, success), and airlock_llm_requests_in_flight
# shows it.  requests_per_minute refuses the call over the rate with the
# provider's x-ratelimit-*-requests (OpenAI) or anthropic-ratelimit-
# requests-* headers.  Priced calls carry cost_usd in the usage line and
# airlock_llm_cost_usd_total; a dollar budget refuses with
# insufficient_quota once spent.  The arithmetic is unit-tested in
# tests/unit/budget.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (conc => 'al-conc-token-1112223334445556',
           rpm => 'al-rpm-token-77788899900011122',
           spender => 'al-spender-token-333444555666');
my %sha = map { $_ => $l->proxy->token_sha256($tok{$_}) } keys %tok;

$l->setup(
    clients => join('', map { qq{  $_: { token_sha256: "$sha{$_}" }\n} }
                        sort keys %tok),
    openai_fields => "    prices:\n"
        . "      gpt-4o-mini: { input: 0.15, cached_input: 0.075, "
        . "output: 0.6 }\n",
    openai_clients => "      conc:\n        max_concurrent_requests: 2\n"
        . "      rpm:\n        requests_per_minute: 3\n"
        . "      spender:\n        models: [gpt-4o-mini]\n"
        . "        usd_per_day: 0.001\n"
        . "        default_max_tokens: 100\n",
    anthropic_clients => "      rpm:\n        requests_per_minute: 2\n",
    # a 503 of the provider goes through an internal redirect
    location => "proxy_intercept_errors on;\n"
                . "            error_page 503 = \@down;",
    locations => "location \@down {\n"
                 . "            return 503 \"down\\n\";\n        }",
);

# two workers: the places in flight are shared
$t->write_file('nginx.conf',
               $t->read_file('nginx.conf')
               =~ s/worker_processes 1;/worker_processes 2;/r);

$t->run;

plan tests => 48;

my $go = $t->testdir . '/go';

sub metrics {
    return parse_response(http_get('/metrics', port => 8082))->{body} // '';
}

sub in_flight {
    my ($who) = @_;
    return metrics() =~ /^airlock_llm_requests_in_flight\{provider="openai",client="\Q$who\E"\} (\d+)$/m
           ? $1 : undef;
}

# polls until the gauge says $want (a safety-net deadline only)
sub in_flight_is {
    my ($who, $want) = @_;
    my $deadline = time + 20;
    my $n;

    for (;;) {
        $n = in_flight($who);
        last if (defined $n && $n == $want) || time > $deadline;
        sleep 0.05;
    }

    return $n // -1;
}

sub provider_count {
    return scalar(my @x = $l->provider_requests);
}

sub wait_provider {
    my ($count) = @_;
    my $deadline = time + 20;
    sleep 0.02 while provider_count() < $count && time < $deadline;
    return provider_count();
}

# a chat call left open: the socket, its request written
sub open_call {
    my ($who, %f) = @_;
    my $body = encode_json({ model => 'gpt-4o-mini',
                             messages => [ { role => 'user',
                                             content => 'Hi' } ], %f });
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $t->port(8080),
                                  Proto => 'tcp', Timeout => 5)
        or die "connect: $!";

    syswrite($s, "POST /v1/proxy/openai/chat/completions HTTP/1.1\r\n"
                 . "Host: localhost\r\nAuthorization: Bearer $tok{$who}\r\n"
                 . "Content-Type: application/json\r\n"
                 . "Content-Length: " . length($body) . "\r\n"
                 . "Connection: close\r\n\r\n$body");
    return $s;
}

sub read_all {
    my ($s) = @_;
    my $sel = IO::Select->new($s);
    my $raw = '';
    my $deadline = time + 20;

    while (time < $deadline && $sel->can_read($deadline - time)) {
        my $n = sysread($s, my $buf, 65536);
        last unless $n;
        $raw .= $buf;
    }

    close $s;
    return parse_response($raw);
}

sub oai_error {
    my ($r) = @_;
    my $e = $r->{json} && $r->{json}{error};
    return ref $e eq 'HASH' ? $e : {};
}

# ---- max_concurrent_requests -------------------------------------------------

unlink $go;
$l->script_all({ wait_file => $go });

my $before = provider_count();
my @held = (open_call('conc'), open_call('conc'));

is(wait_provider($before + 2), $before + 2, 'two calls reach the provider');
is(in_flight_is('conc', 2), 2, 'metrics: 2 in flight');

my $r = $l->chat(token => $tok{conc});
is($r->{status}, 429, 'a third call at once: 429');
is(oai_error($r)->{type}, 'requests', 'OpenAI 429: type requests');
is(oai_error($r)->{code}, 'rate_limit_exceeded', 'code rate_limit_exceeded');
like(oai_error($r)->{message}, qr/too many requests in flight.*2 at once/,
     'the message says the limit');
is($r->{headers}{'retry-after'}, '1', 'Retry-After: 1');
is(provider_count(), $before + 2, 'the refused call never reached it');

# the client of one held call hangs up: its place comes back
close shift @held;
is(in_flight_is('conc', 1), 1, 'a client abort gives its place back');

my $s3 = open_call('conc');
is(wait_provider($before + 3), $before + 3,
   'so a new call is admitted and reaches the provider');
is(in_flight_is('conc', 2), 2, 'metrics: 2 in flight again');

$t->write_file('go', '');

$r = read_all(shift @held);
is($r->{status}, 200, 'a held call answers');
$r = read_all($s3);
is($r->{status}, 200, 'the new call answers');
is(in_flight_is('conc', 0), 0, 'all answered: none in flight');

my @u = grep { $_->{client} eq 'conc' } $l->usage_log;
ok((grep { $_->{status} == 499 } @u) == 1, 'the usage log has the abort');

# upstream errors give their places back too
$l->script_all({ status => 500 });
$r = $l->chat(token => $tok{conc});
is($r->{status}, 500, 'an upstream 500 passes through');
$l->script_all({ status => 503 });
$r = $l->chat(token => $tok{conc});
$r = $l->chat(token => $tok{conc});
is($r->{status}, 503, 'three upstream errors in a row');
is($r->{body}, "down\n", 'the last two through an internal redirect');
is(in_flight_is('conc', 0), 0, 'errors and redirects hold no places');

$l->script_all({});
$r = $l->chat(token => $tok{conc});
is($r->{status}, 200, 'the client is served after them');

# a stream the client leaves after its first event
$l->script_all({ pause_after => 1, pause_ms => 2000 });
my $st = open_call('conc', stream => JSON::PP::true);
my $sel = IO::Select->new($st);
my $got = '';
my $until = time + 20;
while ($got !~ /data:/ && time < $until
       && $sel->can_read($until - time)) {
    sysread($st, my $buf, 65536) or last;
    $got .= $buf;
}
like($got, qr/^HTTP\/1\.1 200.*data:/s, 'a stream starts');
is(in_flight('conc'), 1, 'the stream holds a place');
close $st;
is(in_flight_is('conc', 0), 0, 'a stream left midway gives it back');
$l->script_all({});

# ---- requests_per_minute -----------------------------------------------------

# the minute window must not roll between the calls: once more if it did
my @rs;
for my $try (1 .. 2) {
    my $minute = int(time / 60);
    @rs = map { $l->chat(token => $tok{rpm}) } 1 .. 4;
    last if int(time / 60) == $minute;
    sleep 60 - (time % 60) + 0.5;
}

is(join(' ', map { $_->{status} } @rs), '200 200 200 429',
   'three a minute: the fourth 429');
is($rs[0]{headers}{'x-ratelimit-limit-requests'}, '3',
   'x-ratelimit-limit-requests');
is(join(' ', map { $_->{headers}{'x-ratelimit-remaining-requests'} // '-' }
             @rs), '2 1 0 0', 'x-ratelimit-remaining-requests counts down');
like($rs[0]{headers}{'x-ratelimit-reset-requests'} // '', qr/^\d+s$/,
     'x-ratelimit-reset-requests: seconds, as OpenAI');
is(oai_error($rs[3])->{type}, 'requests', '429: type requests');
like($rs[3]{headers}{'retry-after'} // '', qr/^\d+$/, '429: Retry-After');
ok(($rs[3]{headers}{'retry-after'} // 0) >= 1
   && $rs[3]{headers}{'retry-after'} <= 60, 'Retry-After within the minute');
ok(!exists $rs[0]{headers}{'x-ratelimit-limit-tokens'},
   'no token headers without a token budget');

for my $try (1 .. 2) {
    my $minute = int(time / 60);
    @rs = map { $l->messages(token => $tok{rpm}) } 1 .. 3;
    last if int(time / 60) == $minute;
    sleep 60 - (time % 60) + 0.5;
}

is(join(' ', map { $_->{status} } @rs), '200 200 429',
   'anthropic: two a minute, the third 429');
is($rs[0]{headers}{'anthropic-ratelimit-requests-limit'}, '2',
   'anthropic-ratelimit-requests-limit');
is($rs[1]{headers}{'anthropic-ratelimit-requests-remaining'}, '0',
   'anthropic-ratelimit-requests-remaining');
like($rs[2]{headers}{'anthropic-ratelimit-requests-reset'} // '',
     qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
     'anthropic-ratelimit-requests-reset: RFC 3339');
is($rs[2]{json}{error}{type}, 'rate_limit_error',
   'anthropic 429: rate_limit_error');

# ---- costs ---------------------------------------------------------------------

$l->script_all({ usage => { prompt => 1000, cached => 400,
                            completion => 200 } });

my $lines = scalar(my @x = $l->usage_log);

$r = $l->chat(token => $l->token('agent'));
is($r->{status}, 200, 'a priced call');
my $u = $l->last_usage(++$lines);
# 600 x 0.15 + 400 x 0.075 + 200 x 0.6 per million = $0.00024
is($u->{cost_usd}, 0.00024, 'usage line: cost_usd, cached input cheaper');

$r = $l->chat(token => $l->token('agent'), model => 'gpt-4o');
$u = $l->last_usage(++$lines);
ok(exists $u->{cost_usd} && !defined $u->{cost_usd},
   'an unpriced model: cost_usd null');

my $m = metrics();
like($m, qr/^airlock_llm_cost_usd_total\{provider="openai",client="agent",model="gpt-4o-mini"\} 0\.00024$/m,
     'metrics: airlock_llm_cost_usd_total, exact');
unlike($m, qr/^airlock_llm_cost_usd_total\{[^}]*model="gpt-4o"\}/m,
       'metrics: no cost series for an unpriced model');
like($m, qr/^# TYPE airlock_llm_requests_in_flight gauge$/m,
     'metrics: the in-flight gauge is typed');

# ---- usd_per_day -----------------------------------------------------------------

$l->script_all({ usage => { prompt => 1000, completion => 200 } });

# each call costs $0.00027; $0.001 a day admits four (the fourth while
# $0.00019 is left, more than its worst case), then refuses
my @st = map { $l->chat(token => $tok{spender})->{status} } 1 .. 4;
is("@st", '200 200 200 200', 'within the dollar budget');

# a call is settled in its log phase, after the client has the answer:
# the next call, on the other worker, may come first.  Wait for the
# fourth line.
my ($spent, @sp) = (0);
my $deadline = time + 10;
do {
    @sp = grep { $_->{client} eq 'spender' } $l->usage_log;
} while (@sp < 4 && time < $deadline && sleep 0.05);

$r = $l->chat(token => $tok{spender});
is($r->{status}, 429, 'the daily dollar budget spent: 429');
is(oai_error($r)->{type}, 'insufficient_quota', 'insufficient_quota');
like(oai_error($r)->{message}, qr/daily dollar budget exhausted: \$0 of \$0\.001 left/,
     'the message says it in dollars');
ok(($r->{headers}{'retry-after'} // 0) >= 1
   && $r->{headers}{'retry-after'} <= 86400, 'Retry-After: the UTC day');

@sp = grep { $_->{client} eq 'spender' } $l->usage_log;
$spent += $_->{cost_usd} for @sp;
ok(abs($spent - 0.00108) < 1e-12, "spent \$$spent, one call past the budget");

$t->stop;
