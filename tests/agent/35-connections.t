#!/usr/bin/perl

# airlock-agent: at most --max-connections connections are served at once,
# each by a process of its own.  One past the cap gets 503 "busy" (JSON,
# as the agent's other errors) from the server itself, and no process;
# each process is counted until it exits and is reaped, so the server
# takes connections again as soon as one ends, round after round.  The
# test waits for the agent's processes, never for a time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Socket::UNIX;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
$a->setup(agent => [ '--max-connections', 2 ]);

plan tests => 15;

my $sock = $a->{agents}{a}{sock};
my $pid = $a->agent_pid;

# the agent's child processes (a zombie is one until it is reaped)
sub children {
    my $n = 0;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open(my $fh, '<', $stat) or next;
        my $line = <$fh> // '';
        close $fh;
        my ($ppid) = $line =~ /\)\s+\S+\s+(\d+)/;
        $n++ if defined $ppid && $ppid == $pid;
    }
    return $n;
}

# waits until the agent has $want processes (at most a minute: a hang, not
# a measure)
sub wait_children {
    my ($want) = @_;
    my $deadline = time + 60;
    while (children() != $want && time < $deadline) {
        sleep 0.02;
    }
    return children();
}

sub healthz {
    return $t->http("GET /healthz HTTP/1.1\r\nHost: a\r\n"
                    . "Connection: close\r\n\r\n", unix => $sock,
                    timeout => 10) // '';
}

# a served request: wait_for_port's connection, accepted before it, has
# been taken too; then both processes end
like(healthz(), qr{^HTTP/1.1 200 }, 'served');
is(wait_children(0), 0, 'no connection, no process');

# Connections that send nothing hold a process each (for the agent's 30 s
# read timeout, far longer than a round takes).  Round after round: two
# fill the agent, a third is refused, and once they end the agent serves
# again, so the count goes down with every process that ends.
my ($full, $busy, $json, $none, $freed, $served) = (0) x 6;
my $raw;

for my $round (1 .. 10) {
    my @idle = map { IO::Socket::UNIX->new(Peer => $sock) } 1 .. 2;
    $full++ if wait_children(2) == 2;

    $raw = healthz();
    $busy++ if $raw =~ m{^HTTP/1.1 503 };
    my $r = Airlock::Test::parse_response($raw);
    my $j = eval { decode_json($r->{body} // '') } // {};
    $json++ if ($j->{error} // '') eq 'busy'
               && ($j->{message} // '') =~ /--max-connections/;
    $none++ if children() == 2;

    # one ends (the agent answers its empty request): a place is free
    close $idle[0];
    $freed++ if wait_children(1) == 1;
    $served++ if healthz() =~ m{^HTTP/1.1 200 .*ok}s;

    close $idle[1];
    wait_children(0);
}

is($full, 10, 'two connections take two processes, each round');
is($busy, 10, 'a third connection: 503, each round');
is($json, 10, 'a third connection: "busy", naming the option, each round');
is($none, 10, 'a third connection: no process for it, each round');
is($freed, 10, 'a connection ended: its process reaped, each round');
is($served, 10, 'a place freed: served, each round');
is(wait_children(0), 0, 'all ended: no process left');
like($raw, qr/^HTTP\/1.1 503 .*"error":"busy"/s, 'the 503 as it was sent')
    or diag($raw);

$a->script({ pieces => [ 'still here' ] });
my $ev = $a->ask('cap-1', 'alive?');
is((of_type('answer', $ev))[0]{text}, 'still here',
   'a question after all that: answered');
ok(kill(0, $pid), 'the same agent process');

like($a->agent_log, qr/more get 503/, 'the agent said it was full');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
