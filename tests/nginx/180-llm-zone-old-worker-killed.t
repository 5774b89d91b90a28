#!/usr/bin/perl

# ngx_http_airlock_llm_module: an old worker of a reload, finishing its
# calls, killed (SIGKILL) is not replaced by the master, so no worker
# start gives its places back.  A call refused for max_concurrent_requests
# looks at the processes that hold its budget's places and gives back
# those of the ones gone: the client is served again without a reload.
# The places of an old worker that still lives stay its own.

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

my $one = 'al-one-FAKE-token-180180180180';
my $two = 'al-two-FAKE-token-180180180180';

$l->setup(
    clients => '  one: { token_sha256: "' . $l->proxy->token_sha256($one)
               . qq("}\n)
               . '  two: { token_sha256: "' . $l->proxy->token_sha256($two)
               . qq("}\n),
    openai_clients => "      one:\n        max_concurrent_requests: 1\n"
                      . "        max_tokens: 20\n"
                      . "        over_max_tokens: clamp\n"
                      . "      two:\n        max_concurrent_requests: 2\n"
                      . "        max_tokens: 20\n"
                      . "        over_max_tokens: clamp\n",
);

$t->run;

plan tests => 13;

my $go = $t->testdir . '/go';

sub metrics {
    return parse_response(http_get('/metrics', port => 8082))->{body} // '';
}

sub in_flight {
    my ($client) = @_;
    return metrics() =~ /^airlock_llm_requests_in_flight\{provider="openai",client="$client"\} (\d+)$/m
           ? $1 : -1;
}

sub answer {
    my ($s) = @_;
    my $raw = '';
    while (sysread($s, my $buf, 65536)) { $raw .= $buf }
    close $s;
    return $raw;
}

my %old;

sub pids {
    return join ',', sort grep { !$old{$_} } map { $_->[0] } $t->_workers;
}

is($l->chat(token => $one)->{status}, 200, 'a call');

# calls held at the provider by the workers a reload makes old

unlink $go;
%old = map { $_->[0] => 1 } $t->_workers;
my @held = ($l->held_chat({ wait_file => $go }, token => $one),
            $l->held_chat({ wait_file => $go }, token => $two),
            $l->held_chat({ wait_file => $go }, token => $two));
is(in_flight('one') . ' ' . in_flight('two'), '1 2', 'three calls in flight');

$t->reload;

is($l->chat(token => $one)->{status}, 429,
   'an old worker that lives keeps its place');

# the old workers killed while they finish: no worker starts after them

my $current = pids();
kill 'KILL', keys %old;
close $_ for @held;

my $deadline = time + 10;
sleep 0.05 while grep({ kill 0, $_ } keys %old) && time < $deadline;
ok(!grep({ kill 0, $_ } keys %old), 'the old workers are gone');
is(pids(), $current, 'and no worker started after them');

is(in_flight('one'), 1, 'their places are still taken');

my $r = $l->chat(token => $one);
is($r->{status}, 200, 'a call refused for its places gets them back: 200');
is(in_flight('one'), 0, 'the killed worker\'s place is given back');
like($t->read_file('error.log') // '',
     qr/airlock: \d+ places? in flight of processes that are gone given back/,
     'the error log says so');

# the other client's two places, the first call refused given them back
# unless that sweep already did

is($l->chat(token => $two)->{status}, 200, 'the other client is served');
is(in_flight('two'), 0, 'its two places are given back');
is(pids(), $current, 'without a worker start');

$t->write_file('go', '');

is($t->error_log_check(qr/exited on signal 9/), '',
   'no alerts or sanitizer reports');
