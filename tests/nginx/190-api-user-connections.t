#!/usr/bin/perl

# The image's /api/: every request reaches the agent from one peer,
# nginx's workers, which the agent's --max-user-connections does not cap
# (its --api-peer): one authenticated user could hold every one of the
# agent's --max-connections through nginx, and every other user got 503
# "busy" for as long as they liked.  Now nginx caps each user it
# authenticated (limit_conn keyed by $remote_user), below the agent's
# --max-connections and its per-uid share: one past it gets 429 with
# JSON like the agent's "busy", and another user is still served.
#
# The /api/ server here is the shipped one, read from
# appliance-image/root/etc/nginx/conf.d/airlock.conf (its limit_*_zone
# lines and its 127.0.0.1:8080 server, with the test's paths and port),
# and the agent runs with the limits of conf/airlock-agent.service.  The
# tests' nginx workers run as root, so --api-peer is root.  The test
# waits for processes and answers, never for a time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/../agent/lib";

use IO::Select;
use JSON::PP;
use MIME::Base64 qw(encode_base64);
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use AgentTest;
use Airlock::ShippedApi;

Airlock::Prereq::absent('the tests\' nginx workers run as root here')
    if $> != 0;

# the shipped /api/ server before agent "a"
my $a = Airlock::ShippedApi->new;
my $t = $a->t;
my $d = $t->testdir;
my ($cap) = $a->server =~ /^\s*limit_conn\s+\S+\s+(\d+)\s*;/m;

(my $unit = Airlock::ShippedApi::slurp(Airlock::ShippedApi::top()
                                       . '/conf/airlock-agent.service'))
    =~ s/\\\n\s*/ /g;

# the agent's limits, as the unit starts it (docs/agent.md's defaults
# where it names none)
my ($exec) = $unit =~ /^ExecStart=(.*)$/m;
$exec //= '';
my $max = $exec =~ /\s--max-connections\s+(\d+)/ ? $1 : 64;
my $per_uid = $exec =~ /\s--max-user-connections\s+(\d+)/
              ? $1 : int(($max + 1) / 2);
my @limits = ('--max-connections', $max);
push @limits, '--max-user-connections', $1
    if $exec =~ /\s--max-user-connections\s+(\d+)/;

$a->setup(agent => [ '--max-wall', 60000, '--api-peer', 'root',
                     @limits ]);

plan tests => 9;

ok(defined $cap && $cap >= 1 && $cap < $per_uid && $cap < $max,
   "/api/ caps each user's requests (limit_conn), below the agent's "
   . "--max-user-connections ($per_uid) and --max-connections ($max)")
    or diag('limit_conn: ' . ($cap // 'none'));

sub request {
    my ($method, $path, $user, $body) = @_;
    $body //= '';
    return "$method /api$path HTTP/1.1\r\nHost: a\r\n"
           . 'Authorization: Basic '
           . encode_base64("$user:FAKE-$user-pw", '') . "\r\n"
           . ($body ne '' ? "Content-Type: application/json\r\n"
                            . 'Content-Length: ' . length($body) . "\r\n"
                          : '')
           . "Connection: close\r\n\r\n$body";
}

# what the socket sends until it closes (or the deadline), after $raw
sub read_all {
    my ($s, $secs, $raw) = @_;
    my $sel = IO::Select->new($s);
    my $deadline = time + $secs;
    $raw //= '';
    while (time < $deadline && $sel->can_read($deadline - time)) {
        last unless sysread($s, $raw, 65536, length $raw);
    }
    close $s;
    return $raw;
}

# every ask of alice's waits for the gate before the model answers
$a->script(map { { pieces => [ 'for alice' ], wait_file => "$d/gate" } }
               1 .. $max);

# alice asks, $max times at once (the agent's every place), each one
# either taken by the agent or answered by nginx before the next
my (@held, @refused);
for my $i (1 .. $max) {
    my $body = encode_json({ prompt => "alice asks $i" });
    my $s = $t->http(request('POST', "/v1/sessions/alice-$i/ask", 'alice',
                             $body), port => 8090, start => 1);
    my $sel = IO::Select->new($s);
    my $deadline = time + 20;
    my ($got, $head) = ('', '');
    while (time < $deadline && $head !~ /\r?\n/) {
        if ($sel->can_read(0.05)) {
            last unless sysread($s, $head, 4096, length $head);
        }
    }
    # the agent's stream has begun (its run has its place), or nginx
    # refused it
    if ($head =~ m{^HTTP/1\.\d 200 }) {
        push @held, [ $s, $head ];
    } else {
        push @refused, read_all($s, 10, $head);
    }
}

is(scalar @held, $cap // $max,
   'alice holds as many as nginx lets one user, no more');

my @busy = grep {
    my $r = Airlock::Test::parse_response($_);
    my $j = eval { decode_json($r->{body} // '') } // {};
    ($r->{status} // 0) == 429 && ($j->{error} // '') eq 'busy'
} @refused;
is(scalar @busy, scalar @refused, 'the others: 429 "busy"')
    or diag($refused[0] // 'none refused');
my $r = Airlock::Test::parse_response($refused[0] // '');
like($r->{headers}{'content-type'} // '', qr{^application/json},
     'as JSON, like the agent\'s');
my $n = $cap // 0;
like((eval { decode_json($r->{body} // '') } // {})->{message} // '',
     qr/\b$n\b/, 'its message names the cap');

# bob, while alice holds hers: served
$r = Airlock::Test::parse_response(
    $t->http(request('GET', '/healthz', 'bob'), port => 8090,
             timeout => 20) // '');
is($r->{status}, 200, 'bob is served meanwhile');

# alice's held asks end once the model answers
$t->write_file('gate', '');
my $done = grep { my $raw = read_all($_->[0], 60, $_->[1]);
                  grep { ($_->{text} // '') eq 'for alice' }
                       of_type('answer', [ AgentTest::events($raw) ]) }
                @held;
is($done, scalar @held, 'alice\'s held asks are answered');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
