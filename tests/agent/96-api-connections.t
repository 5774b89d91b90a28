#!/usr/bin/perl

# airlock-agent: the --api-peer (nginx's workers, publishing the agent at
# /api/) had no cap on its connections: nginx limits each /api/ user
# (limit_conn 8), so eight of them filled all 64 of --max-connections
# and every local user, and root's CLI, got 503 "busy".  Now the
# --api-peer has at most --max-api-connections at once, all its users'
# together, half of --max-connections by default; one past it gets 503
# "busy" saying so, with Retry-After, and a local user and root are
# still served.  The test waits for processes, never for a time.

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

my ($ALICE, $NGINX) = (61601, 61603);

my $a = AgentTest->new;
my $t = $a->t;
$a->setup(agent => [ '--max-connections', 4, '--api-peer', $NGINX ]);

plan tests => 10;

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

sub wait_children {
    my ($want) = @_;
    my $deadline = time + 20;
    sleep 0.02 while children() != $want && time < $deadline;
    return children();
}

# a request never finished: held until its client goes
my $held = "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Airlock-User: u\r\n";

# the api peer opens two, each taken before the next: its cap (half of 4)
my @api;
for my $i (1 .. 2) {
    push @api, [ $a->as_uid_start($sock, $NGINX, $held) ];
    wait_children($i);
}
is(children(), 2, 'the api peer holds two places');

# its third is refused at once, the server not full
my ($raw) = $a->as_uid_end($a->as_uid_start($sock, $NGINX, $held));
my $r = Airlock::Test::parse_response($raw // '');
is($r->{status}, 503, 'its third: 503');
my $j = eval { decode_json($r->{body} // '') } // {};
is($j->{error}, 'busy', '... "busy"');
like($j->{message} // '', qr/--max-api-connections/, '... saying why');
like($raw // '', qr/^Retry-After: \d+\r$/mi, '... with Retry-After');
is(wait_children(2), 2, '... and holds no place');

# a local user is served meanwhile
$r = Airlock::Test::parse_response(scalar $a->as_uid($sock, $ALICE,
    "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
is($r->{status}, 200, 'a local user is served meanwhile');
wait_children(2);

# and root takes the places left
my @root = map { $t->http($held, unix => $sock, start => 1) } 1 .. 2;
is(wait_children(4), 4, 'root takes the two places left');

kill 'TERM', map { $_->[0] } @api;
$a->as_uid_end(@$_) for @api;
close $_ for @root;
is(wait_children(0), 0, 'every place free once its client went');

like(`$t->{build}/airlock-agent --help`, qr/--max-api-connections/,
     '--help names --max-api-connections');
