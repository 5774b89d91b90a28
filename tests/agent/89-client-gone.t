#!/usr/bin/perl

# airlock-agent: a question whose client hangs up ends at once, whole.
# Its run used to go on waiting for what it waited for (the model's
# answer, a route's, a job's result) until that came or the run's wall
# time ran out, and only then found its client gone.  Meanwhile its
# process held one of --max-connections: the --api-peer (nginx, for
# every /api/ user) has no per-uid cap, and nginx's limit_conn counts a
# request only until its client goes, so one /api/ user who asked and
# hung up, again and again, filled every place and every other user got
# 503 "busy".  Now the run is ended as at a stop: the request dropped,
# the job withdrawn, every call answered, the question stored, the lock
# let go, its place free.  The test waits for processes and keys, never
# for a time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Socket::INET;
use IO::Socket::UNIX;
use JSON::PP;
use Socket qw(SOCK_STREAM);
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use AgentTest;

Airlock::Prereq::absent('the test names the agent\'s front end by its '
                        . 'uid: run it as root')
    if $> != 0;
Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

# root plays nginx: every request names the user it authenticated (and
# nginx's /api/ names the one the test's header says)
$a->setup(agent => [ '--max-connections', 2, '--api-peer', 'root',
                     '--job-wall', 60000 ],
          api => 'proxy_set_header X-Airlock-User $http_x_test_user;');

plan tests => 20;

$SIG{PIPE} = 'IGNORE';
my $sock = $a->{agents}{a}{sock};
my $server = $a->agent_pid;

# the server's connection processes that have not ended
sub children {
    my $n = 0;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open(my $fh, '<', $stat) or next;
        my $line = <$fh> // '';
        close $fh;
        my ($state, $ppid) = $line =~ /\)\s+(\S+)\s+(\d+)/;
        $n++ if defined $ppid && $ppid == $server && $state ne 'Z';
    }
    return $n;
}

sub wait_until {
    my ($cond) = @_;
    my $deadline = time + 20;
    until ($cond->()) {
        return 0 if time > $deadline;
        sleep 0.05;
    }
    return 1;
}

sub ask_start {
    my ($user, $session, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $sock)
        or die "connect: $!\n";
    print {$s} "POST /v1/sessions/$session/ask HTTP/1.1\r\nHost: a\r\n"
               . "X-Airlock-User: $user\r\n"
               . "Content-Length: " . length($body) . "\r\n"
               . "Connection: close\r\n\r\n$body";
    return $s;
}

sub request {
    my ($user, $req) = @_;
    $req =~ s/\r\n/\r\nX-Airlock-User: $user\r\n/;
    return Airlock::Test::parse_response(
        $t->http($req, unix => $sock, timeout => 60) // '');
}

sub history {
    my ($user, $session) = @_;
    my $r = request($user, "GET /v1/sessions/$session HTTP/1.1\r\n"
                           . "Host: a\r\nConnection: close\r\n\r\n");
    return eval { decode_json($r->{body}) } // {};
}

# ---- while it waits for the model ------------------------------------------

# mallory asks twice, each time hanging up while the model thinks
$a->script({ pieces => [ 'late' ], wait_file => "$d/never" },
           { pieces => [ 'late' ], wait_file => "$d/never" });

for my $i (1, 2) {
    my $before = scalar($a->provider_requests);
    my $s = ask_start('mallory', "gone$i", 'a question, then gone');
    wait_until(sub { scalar($a->provider_requests) > $before });
    close $s;
}

ok(wait_until(sub { children() == 0 }),
   'model: both runs end once their clients are gone');
is($a->redis_cli(qw(EXISTS airlock:session:gone1:lock
                        airlock:session:gone2:lock)),
   0, 'model: their locks let go');

my $h = history('mallory', 'gone1');
is(($h->{runs}[0] // {})->{outcome}, 'error', 'model: the question stored');
my ($err) = grep { $_->{type} eq 'error' } @{($h->{runs}[0] // {})->{events}
                                             // []};
is(($err // {})->{code}, 'client_gone', '... its record saying why');

# bob is served meanwhile: the places are free
$t->write_file('never', '');
$a->script({ pieces => [ 'hello bob' ] });
my $r = request('bob', do {
    my $body = encode_json({ prompt => 'hello?' });
    "POST /v1/sessions/bob1/ask HTTP/1.1\r\nHost: a\r\n"
    . "Content-Length: " . length($body) . "\r\n"
    . "Connection: close\r\n\r\n$body" });
is($r->{status}, 200, 'another user is served');
my @ev = AgentTest::events("x\r\n\r\n" . ($r->{body} // ''));
is(((of_type('answer', \@ev))[0] // {})->{text}, 'hello bob',
   '... and answered');

# ---- while it waits for a job ----------------------------------------------

unlink "$d/never";
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('for no one')" } } ] },
           { pieces => [ 'never' ] });
my $s = ask_start('mallory', 'gone3', 'a job, then gone');
like($a->redis_cli(qw(XREAD BLOCK 30000 STREAMS airlock:jobs 0-0)),
     qr/for no one/, 'job: the run waits for its job');
close $s;

ok(wait_until(sub { children() == 0 }),
   'job: the run ends once its client is gone');
is($a->redis_cli(qw(XLEN airlock:jobs)), 0, 'job: withdrawn');
is($a->redis_cli(qw(HLEN airlock:jobs:awaited)), 0,
   'job: its record removed');
is($a->redis_cli(qw(EXISTS airlock:session:gone3:lock)), 0,
   'job: the lock let go');

$h = history('mallory', 'gone3');
my @m = @{$h->{messages} // []};
is(join(',', map { $_->{role} } @m), 'user,assistant,tool',
   'job: the question and the call stored');
like(($m[2] // {})->{content} // '', qr/^no result/, 'job: the call answered');
my ($job) = grep { $_->{type} eq 'job' } @{($h->{runs}[0] // {})->{events}
                                           // []};
is_deeply([ map { ($job // {})->{$_} } qw(status withdrawn) ],
          [ 'no result', JSON::PP::true ], 'job: its event stored');

# ---- through nginx's /api/ --------------------------------------------------

# nginx closes its connection to the agent when its client goes
$a->script({ pieces => [ 'late' ], wait_file => "$d/never" });
my $before = scalar($a->provider_requests);
my $body = encode_json({ prompt => 'through nginx, then gone' });
$s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . $t->port(8080))
    or die "connect: $!\n";
print {$s} "POST /api/v1/sessions/gone4/ask HTTP/1.1\r\nHost: a\r\n"
           . "X-Test-User: mallory\r\n"
           . "Content-Length: " . length($body) . "\r\n"
           . "Connection: close\r\n\r\n$body";
ok(wait_until(sub { scalar($a->provider_requests) > $before }),
   'api: the run waits for the model');
close $s;

ok(wait_until(sub { children() == 0 }),
   'api: the run ends once its client is gone');
$h = history('mallory', 'gone4');
is(($h->{runs}[0] // {})->{outcome}, 'error', 'api: the question stored');

# a client that has sent its request and shut its writing side still
# reads its answer: that is no hang-up
$a->script({ pieces => [ 'half closed' ] });
$s = ask_start('bob', 'bob2', 'and then?');
shutdown($s, 1);
my $raw = '';
while (sysread($s, $raw, 65536, length $raw)) { }
@ev = AgentTest::events($raw);
is(((of_type('answer', \@ev))[0] // {})->{text}, 'half closed',
   'a client that half-closes gets its answer');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
