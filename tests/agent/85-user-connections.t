#!/usr/bin/perl

# airlock-agent: one local user could hold every one of --max-connections
# (a request has 30 s to come whole: one opened again as each ran out
# kept them all), and every other user got 503 "busy" for as long as
# they liked.  Now one peer uid has at most --max-user-connections at
# once, half of --max-connections by default; one past it gets 503
# "busy" saying so, and another user is still served.  Root and the
# --api-peer have no such cap.  The test waits for processes, never for
# a time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use AgentTest;

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;
$a->setup(agent => [ '--max-connections', 4 ]);

plan tests => 9;

my ($ALICE, $BOB) = (61501, 61502);

# a client refused before it has written its request gets EPIPE on the
# write (the agent has closed), then reads its answer: no SIGPIPE death
$SIG{PIPE} = 'IGNORE';
my $sock = $a->{agents}{a}{sock};
my $pid = $a->agent_pid;

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

# a request never finished: held until its client goes
my $held = "GET /healthz HTTP/1.1\r\nHost: a\r\n";

# alice opens four, one after the other, each taken before the next
my (@clients, @answers);
for my $i (1 .. 4) {
    my ($cpid, $rd) = $a->as_uid_start($sock, $ALICE, $held);
    push @clients, [ $cpid, $rd ];
    my $deadline = time + 20;
    while (time < $deadline) {
        last if children() >= ($i > 2 ? 2 : $i)
                && ($i <= 2 || waitpid($cpid, POSIX::WNOHANG()) == $cpid
                    || children() > 2);
        sleep 0.02;
    }
}

# (a refused connection's process is gone once it has answered)
my $settle = time + 20;
sleep 0.02 while children() > 2 && time < $settle;
is(children(), 2, 'alice holds two of the four places, no more');

# the two refused have their answer
for my $c (@clients[2, 3]) {
    my ($cpid, $rd) = @$c;
    my $deadline = time + 20;
    sleep 0.02 while kill(0, $cpid) && time < $deadline
                     && waitpid($cpid, POSIX::WNOHANG()) == 0;
    local $/;
    my $raw = <$rd> // '';
    $raw =~ s/^answer //;
    push @answers, Airlock::Test::parse_response($raw);
}
is(join(' ', map { $_->{status} // 'none' } @answers), '503 503',
   'her third and fourth: 503');
my $j = eval { decode_json($answers[0]{body} // '') } // {};
is($j->{error}, 'busy', '... "busy"');
like($j->{message} // '', qr/--max-user-connections/, '... saying why');

# bob is served meanwhile
my $r = Airlock::Test::parse_response(scalar $a->as_uid($sock, $BOB,
    "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
is($r->{status}, 200, 'bob is served meanwhile');

# bob's place is free again once the agent has reaped his process (a
# zombie is still counted, here and by the agent)
my $deadline = time + 20;
sleep 0.02 while children() > 2 && time < $deadline;

# root has no per-user cap: two more of root's held, the server full
my @root = map { $t->http($held, unix => $sock, start => 1) } 1 .. 2;
$deadline = time + 20;
sleep 0.02 while children() < 4 && time < $deadline;
is(children(), 4, 'root takes the two places left');

# alice goes: her places are free again, and hers to take
kill 'TERM', map { $_->[0] } @clients[0, 1];
waitpid($_->[0], 0) for @clients;
close $_ for @root;
$deadline = time + 20;
sleep 0.02 while children() > 0 && time < $deadline;
is(children(), 0, 'every place free once its client went');
$r = Airlock::Test::parse_response(scalar $a->as_uid($sock, $ALICE,
    "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
is($r->{status}, 200, 'alice served again');

like(`$t->{build}/airlock-agent --help`, qr/--max-user-connections/,
     '--help names --max-user-connections');
