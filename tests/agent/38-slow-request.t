#!/usr/bin/perl

# airlock-agent: a request has 30 s to come whole, however its bytes are
# spread.  A client that sends a byte now and then, never the end of its
# headers, held its process, one of --max-connections, for as long as it
# kept sending (the 30 s read timeout counted from each byte), so a few
# of them kept every question out.  Now it gets 408 and the place is
# free.  Time has to pass here: the test trickles a byte a second, for
# at most 90 s, and waits for the agent's answer, not for a time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Select;
use IO::Socket::UNIX;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
$a->setup(agent => [ '--max-connections', 1 ]);

plan tests => 8;

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

# waits until the agent has $want processes (at most $max s, a minute by
# default: a hang, not a measure)
sub wait_children {
    my ($want, $max) = @_;
    my $deadline = time + ($max // 60);
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

# served once wait_for_port's connection, which sends nothing, has ended
# (until then the one place is its); then no process is left
my $served = '';
for (1 .. 600) {
    $served = healthz();
    last if $served =~ m{^HTTP/1.1 200 };
    sleep 0.1;
}
like($served, qr{^HTTP/1.1 200 }, 'served');
is(wait_children(0), 0, 'no connection, no process');

my $s = IO::Socket::UNIX->new(Peer => $sock) or die "connect: $!\n";
syswrite($s, "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Slow: ");
my $sel = IO::Select->new($s);
my $start = time;
my ($sent, $answer) = (0, '');

while (time - $start < 90) {
    if ($sel->can_read(1)) {
        my $n = sysread($s, my $buf, 65536);
        last unless $n;
        $answer .= $buf;
        next;
    }
    last unless defined syswrite($s, 'a');
    $sent++;
}

like($answer, qr{^HTTP/1.1 408 }, 'a request trickled past 30 s: 408')
    or diag("after ${sent} bytes in " . int(time - $start) . " s: $answer");
my $r = Airlock::Test::parse_response($answer);
my $j = eval { decode_json($r->{body} // '') } // {};
is($j->{error} // '', 'request_timeout', '... "request_timeout"');
ok($sent >= 20, '... after it kept sending for a while')
    or diag("$sent bytes");

# the trickling client is still connected: its process ends with the
# answer (10 s is slack for a busy machine; the process that read it would
# wait 30 s more for a byte)
is(wait_children(0, 10), 0, 'its process has ended');
like(healthz(), qr{^HTTP/1.1 200 }, 'its place is free again: served');
close $s;

is($a->agent_errors, '', 'no sanitizer reports from the agent');
