#!/usr/bin/perl

# ngx_http_airlock_llm_module: a worker killed (SIGKILL) with calls in
# flight never gives their places back itself.  The worker the master
# starts in its stead gives back the places of workers that are gone, so
# a client with max_concurrent_requests: 1 is not locked out until nginx
# restarts; what the killed calls reserved stays spent (the provider may
# have had them).  The places of an old worker that still serves a call
# after a reload are not taken from it (one killed, which the master does
# not replace: 180-llm-zone-old-worker-killed.t).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $one = 'al-one-FAKE-token-456456456456';

$l->setup(
    clients => '  one: { token_sha256: "' . $l->proxy->token_sha256($one)
               . qq("}\n),
    openai_clients => "      one:\n        max_concurrent_requests: 1\n"
                      . "        tokens_per_day: 100000\n"
                      . "        max_tokens: 20\n"
                      . "        over_max_tokens: clamp\n",
);

$t->run;

plan tests => 12;

my $go = $t->testdir . '/go';

sub metrics {
    return parse_response(http_get('/metrics', port => 8082))->{body} // '';
}

sub in_flight {
    return metrics() =~ /^airlock_llm_requests_in_flight\{provider="openai",client="one"\} (\d+)$/m
           ? $1 : -1;
}

sub answer {
    my ($s) = @_;
    my $raw = '';
    while (sysread($s, my $buf, 65536)) { $raw .= $buf }
    close $s;
    return $raw;
}

sub day_left {
    my ($r) = @_;
    return $r->{headers}{'x-ratelimit-remaining-tokens'} // -1;
}

my $r = $l->chat(token => $one);
is($r->{status}, 200, 'a call');
my $left = day_left($r);

# a call held at the provider; its worker is killed

unlink $go;
my $s = $l->held_chat({ wait_file => $go }, token => $one);
is(in_flight(), 1, 'one call in flight');
is($l->chat(token => $one)->{status}, 429, 'a second at once: 429');

my @new = $t->kill_workers;
ok(@new, 'the master started another worker');
close $s;

$t->write_file('go', '');

is(in_flight(), 0, 'the killed worker\'s place is given back');
$r = $l->chat(token => $one);
is($r->{status}, 200, 'so the client is served');
ok(day_left($r) < $left - 20,
   'what the killed call reserved stays spent');
like($t->read_file('error.log') // '',
     qr/airlock: 1 place in flight of processes that are gone given back/,
     'the error log says so');

# a reload: the old worker serves its call on; its place is its own

unlink $go;
$s = $l->held_chat({ wait_file => $go }, token => $one);
$t->reload;

is($l->chat(token => $one)->{status}, 429,
   'after a reload, the old worker\'s call still holds its place');

$t->write_file('go', '');
like(answer($s), qr/^HTTP\/1\.1 200/, 'the old worker\'s call answers');
is($l->chat(token => $one)->{status}, 200, 'then the client is served');

# a reload's old worker killed while it serves a call is not replaced:
# tests/nginx/180-llm-zone-old-worker-killed.t

is($t->error_log_check(qr/exited on signal 9/), '',
   'no alerts or sanitizer reports');
