#!/usr/bin/perl

# ngx_http_airlock_llm_module: the regions of a shared log buffer
# (airlock_llm_log FILE buffer=SIZE) across reloads.
#
# - A reload that changes worker_processes makes a zone of another size:
#   the old workers write what they held as they exit, the new ones take
#   regions of the new zone, and a SIGKILL of those loses nothing.
# - With worker_processes 1 the zone has four regions.  Old workers kept
#   alive by calls in flight hold theirs; the fifth generation finds none
#   free, says so, and holds its lines in its own memory, which it writes
#   when it stops.  Every call's line is in the file, once.
# - A log naming the file without buffer= writes through the buffer.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# calls held until the test lets them go may wait a minute (busy CI)
sub conf {
    my ($workers) = @_;
    return $t->expand($l->conf(log => ' buffer=64k flush=1h'))
           =~ s/worker_processes 1;/worker_processes $workers;/r
           =~ s/proxy_read_timeout 10s;/proxy_read_timeout 60s;/gr;
}

$l->setup(log => ' buffer=64k flush=1h');
$t->write_file('nginx.conf', conf(2));
$t->run;

plan tests => 16;

my $agent = $l->token('agent');
my @ids;

sub calls {
    my ($n) = @_;
    my $ok = 0;

    for (1 .. $n) {
        my $r = $l->chat(token => $agent);
        $ok++ if $r->{status} == 200;
        push @ids, $r->{headers}{'x-request-id'} // 'none';
    }
    return $ok;
}

# the usage lines until now, waiting until there are $want of them
sub lines {
    my ($want, $wait) = @_;
    my $deadline = time + $wait;
    my @l;

    for (;;) {
        @l = grep { length } split /\n/, $t->read_file('usage.log') // '';
        last if @l >= $want || time > $deadline;
        sleep 0.05;
    }
    return @l;
}

sub check {
    my ($what, @lines) = @_;
    my %seen;

    $seen{(Airlock::LLM::jdecode($_) // {})->{request_id} // ''}++
        for @lines;

    is(scalar @lines, scalar @ids, "$what: one line per call");
    is(scalar(grep { !$seen{$_} } @ids), 0,
       "$what: every call's line is there");
}

sub workers_after {
    my (%before) = @_;
    my $deadline = time + 10;
    my @new;

    while (time < $deadline) {
        @new = grep { !$before{$_->[0]} } $t->_workers;
        last if @new >= 3;
        sleep 0.05;
    }
    return @new;
}

# ---- a reload to three workers: a zone of another size ------------------

is(calls(10), 10, '10 calls, two workers');
is(scalar lines(1, 0.5), 0, 'their lines wait (flush=1h)');

$t->write_file('nginx.conf', conf(3));
$t->reload;
check('reloaded to three workers', lines(scalar @ids, 10));

is(calls(12), 12, '12 calls, three workers');
my %before = map { $_->[0] => 1 } $t->_workers;
kill 'KILL', keys %before;
is(scalar workers_after(%before), 3, 'SIGKILL: three new workers');
check('the new zone, after SIGKILL', lines(scalar @ids, 10));

# ---- one worker, four regions: five generations ---------------------------

$t->write_file('nginx.conf', conf(1));
$t->reload;
lines(scalar @ids, 10);

# a call that keeps the worker serving it alive until the file "release"
# exists
my @held;
my $release = $t->testdir . '/release';
sub hold {
    my $n = scalar $l->provider_requests;
    my $body = '{"model":"gpt-4o-mini","messages":[{"role":"user",'
             . '"content":"Hi"}]}';

    $l->script({ wait_file => $release });

    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $t->port(8080),
                                  Proto => 'tcp', Timeout => 5)
        or die "connect: $!";
    syswrite($s, "POST /v1/proxy/openai/chat/completions HTTP/1.1\r\n"
                 . "Host: localhost\r\nAuthorization: Bearer $agent\r\n"
                 . "Content-Type: application/json\r\n"
                 . "Content-Length: " . length($body) . "\r\n"
                 . "Connection: close\r\n\r\n$body");
    push @held, $s;

    my $deadline = time + 5;
    sleep 0.02 while scalar $l->provider_requests == $n && time < $deadline;
}

for my $g (1 .. 4) {
    hold();
    $t->reload;
}

my $none = 'no free region in the shared buffer of "[^"]*usage\.log" '
         . '\(4 regions\)';
like($t->read_file('error.log') // '', qr/$none/,
     'the fifth generation: no free region, said');
is(calls(5), 5, '5 calls to the worker without a region');

# the held calls end, their workers exit and write their lines
$t->write_file('release', '');
my $ok = 0;
for my $s (@held) {
    local $/;
    my $raw = <$s>;
    my $r = parse_response($raw // '');
    $ok++ if $r->{status} == 200;
    push @ids, $r->{headers}{'x-request-id'} // 'none';
}
is($ok, 4, 'the four held calls answered');

my @l = lines(scalar @ids - 5, 10);
is(scalar @l, scalar @ids - 5,
   'the old workers wrote their lines; the last five wait');

# a log naming the file without buffer= (here in the location) writes
# through the file's buffer all the same, as access_log does
$t->write_file('nginx.conf',
               $t->expand($l->conf(log => ' buffer=64k flush=1h',
                   location => 'airlock_llm_log %%TESTDIR%%/usage.log;')));
$t->reload;
is(calls(3), 3, '3 calls, the location\'s log without buffer=');
is(scalar lines(scalar @ids, 0.5), scalar @ids - 3,
   'their lines wait in the buffer (the reload wrote the five before)');

$t->stop;
check('after stop', lines(scalar @ids, 5));
