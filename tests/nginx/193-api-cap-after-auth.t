#!/usr/bin/perl

# The image's /api/ caps each user at a few requests at once (limit_conn
# keyed by $remote_user, 190-api-user-connections.t), but limit_conn
# counted in its phase, preaccess, before auth_basic checked the password
# in the access phase: anyone could give alice's name with a wrong
# password, and each such request held one of alice's places until nginx
# was done with it (here: a body declared and never sent, which nginx
# discards after its 401).  As many of those as the cap, and alice
# herself got 429 "busy", a wrong password learnt that alice was busy
# (429, not 401).  Now only a request nginx has authenticated counts:
# wrong passwords in any number leave alice served, and her own held
# requests still fill her places.
#
# The /api/ server here is the shipped one, read from
# appliance-image/root/etc/nginx/conf.d/airlock.conf as in 190, with the
# test's paths and port.  nginx keeps discarding a held body for longer
# than the test lasts (lingering_*), as a client that sends a byte now
# and then has it do.  The test waits for answers and processes, never
# for a time.

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

# the shipped /api/ server before agent "a", nginx lingering long
my $a = Airlock::ShippedApi->new(before => [ 'lingering_time 600s;',
                                             'lingering_timeout 600s;' ]);
my $t = $a->t;
my $d = $t->testdir;
my ($cap) = $a->server =~ /^\s*limit_conn\s+\S+\s+(\d+)\s*;/m;
die "no limit_conn in the shipped /api/ server\n" unless defined $cap;

$a->setup(agent => [ '--max-wall', 60000, '--api-peer', 'root' ]);

plan tests => 13;

sub request {
    my ($method, $path, $auth, $body) = @_;
    $body //= '';
    return "$method /api$path HTTP/1.1\r\nHost: a\r\n"
           . 'Authorization: Basic ' . encode_base64($auth, '') . "\r\n"
           . ($body ne '' ? "Content-Type: application/json\r\n"
                            . 'Content-Length: ' . length($body) . "\r\n"
                          : '')
           . "Connection: close\r\n\r\n$body";
}

sub pw { my ($user) = @_; return "$user:FAKE-$user-pw" }

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

# one whole response from $s (its head, and a body of Content-Length),
# leaving the socket open; '' when it closed first
sub read_response {
    my ($s, $secs) = @_;
    my $sel = IO::Select->new($s);
    my $deadline = time + $secs;
    my $raw = '';
    while (time < $deadline) {
        my $r = Airlock::Test::parse_response($raw);
        return $raw if defined $r->{status}
                       && length($r->{body} // '')
                          == ($r->{headers}{'content-length'} // 0);
        last unless $sel->can_read($deadline - time);
        last unless sysread($s, $raw, 65536, length $raw);
    }
    return $raw;
}

# a request in alice's name with a wrong password, its body declared and
# never sent: nginx answers 401, and goes on reading the body to discard
# it, the request not yet done
sub wrong_pw {
    my $s = $t->http("POST /api/healthz HTTP/1.1\r\nHost: a\r\n"
                     . 'Authorization: Basic '
                     . encode_base64('alice:FAKE-wrong-pw', '') . "\r\n"
                     . "Content-Type: application/json\r\n"
                     . "Content-Length: 65536\r\n\r\n{\"p",
                     port => 8090, start => 1);
    return ($s, read_response($s, 20));
}

# still held: nginx has neither closed the connection nor sent more
sub held {
    my ($s) = @_;
    return !IO::Select->new($s)->can_read(0);
}

# --- wrong passwords in alice's name, more than the cap, held

my (@wrong, @status);
for (1 .. $cap + 2) {
    my ($s, $raw) = wrong_pw();
    push @wrong, $s;
    push @status, Airlock::Test::parse_response($raw)->{status} // 'none';
}
is("@status", join(' ', ('401') x ($cap + 2)),
   'each wrong password for alice: 401, however many are held');

my $r = Airlock::Test::parse_response(
    $t->http(request('GET', '/healthz', pw('alice')), port => 8090,
             timeout => 20) // '');
is($r->{status}, 200, 'alice is served while they are held')
    or diag($r->{status_line} // 'no answer');

is(scalar(grep { held($_) } @wrong), scalar @wrong,
   'and they were all still held (nginx still reading their bodies)');

# --- alice's own requests fill her places

# every ask of alice's waits for the gate before the model answers
$a->script(map { { pieces => [ 'for alice' ], wait_file => "$d/gate" } }
               1 .. $cap);

my @mine;
for my $i (1 .. $cap) {
    my $s = $t->http(request('POST', "/v1/sessions/alice-$i/ask",
                             pw('alice'),
                             encode_json({ prompt => "alice asks $i" })),
                     port => 8090, start => 1);
    my $sel = IO::Select->new($s);
    my $deadline = time + 20;
    my $head = '';
    while (time < $deadline && $head !~ /\r?\n/) {
        last unless $sel->can_read($deadline - time);
        last unless sysread($s, $head, 4096, length $head);
    }
    push @mine, [ $s, $head ];
}
is(scalar(grep { $_->[1] =~ m{^HTTP/1\.\d 200 } } @mine), $cap,
   "alice holds $cap asks of her own (the agent's streams have begun)")
    or diag(join "\n", map { $_->[1] } @mine);

$r = Airlock::Test::parse_response(
    $t->http(request('GET', '/healthz', pw('alice')), port => 8090,
             timeout => 20) // '');
my $j = eval { decode_json($r->{body} // '') } // {};
is(($r->{status} // 'none') . ' ' . ($j->{error} // 'none'), '429 busy',
   'her next: 429 "busy"');

my ($s, $raw) = wrong_pw();
push @wrong, $s;
is(Airlock::Test::parse_response($raw)->{status}, 401,
   'a wrong password meanwhile: 401, not told she is busy');

$r = Airlock::Test::parse_response(
    $t->http(request('GET', '/healthz', pw('bob')), port => 8090,
             timeout => 20) // '');
is($r->{status}, 200, 'bob is served meanwhile');

# alice's held asks end once the model answers; then she is served again
$t->write_file('gate', '');
my $done = grep { my $raw = read_all($_->[0], 60, $_->[1]);
                  grep { ($_->{text} // '') eq 'for alice' }
                       of_type('answer', [ AgentTest::events($raw) ]) }
                @mine;
is($done, $cap, 'alice\'s held asks are answered');

# her places are given back when each request ends: wait for that, then
# she is served
my $deadline = time + 20;
for (;;) {
    $r = Airlock::Test::parse_response(
        $t->http(request('GET', '/healthz', pw('alice')), port => 8090,
                 timeout => 20) // '');
    last if ($r->{status} // 0) != 429 || time > $deadline;
    sleep 0.05;
}
is($r->{status}, 200, 'and she is served again');

is(scalar(grep { held($_) } @wrong), scalar @wrong,
   'the wrong passwords\' requests were held throughout');
close $_ for @wrong;

# /api, its slash missing: sent on to /api/ with its query, as before
$r = Airlock::Test::parse_response(
    $t->http("GET /api?x=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
             port => 8090, timeout => 20) // '');
like(($r->{status} // 'none') . ' ' . ($r->{headers}{location} // 'none'),
     qr{^301 (http://[^/]+)?/api/\?x=1$}, '/api: 301 to /api/');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
