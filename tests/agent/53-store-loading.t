#!/usr/bin/perl

# airlock-agent: a question that ends while Redis, restarted, is still
# loading its data is stored once Redis has loaded it, as it is when
# Redis is not yet back at all.  Redis takes connections while it loads
# and answers every command "LOADING": the agent took that for a
# failure, did not store the question (it was lost) and left the
# session's lock to its lease.  Redis is restarted here with a delay per
# key it loads (key-load-delay), so it loads for about a second; the
# model answers once the test has seen Redis answer LOADING.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Select;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup;

plan tests => 6;

sub rcli {
    open(my $fh, '-|', "redis-cli -s $d/redis.sock @_ 2>/dev/null")
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

# keys for Redis to load, a millisecond each
rcli('EVAL', "\"for i = 1, 1000 do redis.call('set', 'filler:' .. i, "
     . "'x') end return 1\"", 0);

$a->script({ wait_file => "$d/go", pieces => [ 'stored after all' ] });

my $n0 = scalar $a->provider_requests;
my $body = encode_json({ prompt => 'a question' });
my $s = $t->http("POST /v1/sessions/loading/ask HTTP/1.1\r\nHost: a\r\n"
                 . "Content-Length: " . length($body) . "\r\n"
                 . "Connection: close\r\n\r\n$body",
                 unix => $a->{agents}{a}{sock}, start => 1);

for (1 .. 3000) {
    last if scalar($a->provider_requests) > $n0;
    sleep 0.02;
}

# Redis restarted with its data, loading it slowly
system("redis-cli -s $d/redis.sock SHUTDOWN SAVE >/dev/null 2>&1");
waitpid($a->{redis}, 0);
$a->{redis} = $t->run_daemon('redis-server', $t->redis_args,
                             '--port', '0', '--unixsocket',
                             "$d/redis.sock", '--unixsocketperm', '777',
                             '--save', '', '--appendonly', 'no',
                             '--dir', $d, '--key-load-delay', 1000,
                             '--loading-process-events-interval-bytes',
                             1024);

my $ping = '';
for (1 .. 1000) {
    $ping = rcli('PING');
    last if $ping =~ /LOADING|PONG/;
    sleep 0.01;
}
like($ping, qr/^LOADING/, 'Redis is loading its data');

$t->write_file('go', '');

my $raw = '';
my $sel = IO::Select->new($s);
while ($sel->can_read(30)) {
    last unless sysread($s, $raw, 1 << 20, length $raw);
}
close $s;
my @ev = AgentTest::events($raw);

is(((of_type('answer', \@ev))[0] // {})->{text}, 'stored after all',
   'the run answered');
is(join(',', map { $_->{code} } of_type('error', \@ev)), '',
   'no error: it was stored');

my $r = $a->session('loading');
is(scalar(@{$r->{json}{runs} // []}), 1, 'the question is in the session');
is(rcli(qw(EXISTS airlock:session:loading:lock)), '0', 'its lock is free');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
