#!/usr/bin/perl

# airlock-agent: a run that gets SIGTERM while its client reads nothing
# (the socket full, the run waiting to write an event) ends within a
# second or so, stored, its lock let go: the write's wait was taken up
# again after the signal, until --send-timeout after the run's wall
# time, so a stop or restart of the unit waited for it (systemd's stop
# timeout, 90 s, then SIGKILL: the question lost, the session locked for
# the lock's lease).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 60000 ]);

plan tests => 6;

sub redis {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

# a process's state letter (Z: ended, not reaped), Z when it is gone
sub state_of {
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/stat") or return 'Z';
    my ($state) = (<$fh> // '') =~ /\) (\S)/;
    return $state // 'Z';
}

sub runs {
    my $server = $a->agent_pid;
    open(my $fh, '<', "/proc/$server/task/$server/children") or return ();
    return grep { state_of($_) ne 'Z' } split ' ', (<$fh> // '');
}

# the bytes waiting in the client's socket (FIONREAD)
sub queued {
    my ($s) = @_;
    my $n = pack('i', 0);
    ioctl($s, 0x541B, $n) or return -1;
    return unpack('i', $n);
}

# an answer larger than the socket holds: the run waits to write it
$a->script({ pieces => [ ('x' x 65536) x 64 ] });
my $body = encode_json({ prompt => 'a long answer, never read' });
my $s = $t->http("POST /v1/sessions/stalled/ask HTTP/1.1\r\nHost: a\r\n"
                 . "Content-Length: " . length($body) . "\r\n"
                 . "Connection: close\r\n\r\n$body",
                 unix => $a->{agents}{a}{sock}, start => 1);

# the socket fills, then nothing more comes: the run waits to write
my ($last, $same) = (-1, 0);
for (1 .. 1500) {
    my $q = queued($s);
    $same = ($q > 65536 && $q == $last) ? $same + 1 : 0;
    $last = $q;
    last if $same >= 25;
    select(undef, undef, undef, 0.02);
}
ok($same >= 25, 'the run waits for its client to read');

my @runs = runs();
is(scalar(@runs), 1, 'one run');
my @all = @runs;
for my $r (@runs) {
    open(my $k, '<', "/proc/$r/task/$r/children") or next;
    push @all, split ' ', (<$k> // '');
}
kill 'TERM', @all;

# its process ends: well before --max-wall and --send-timeout
my $gone = 0;
for (1 .. 500) {
    $gone = !grep { state_of($_) ne 'Z' } @runs;
    last if $gone;
    select(undef, undef, undef, 0.02);
}
ok($gone, 'the run ended within 10 s of SIGTERM');
is(redis(qw(EXISTS airlock:session:stalled:lock)), 0, 'the lock let go');
is(($a->session('stalled')->{json}{runs}[0] // {})->{prompt},
   'a long answer, never read', 'the run stored');
close $s;

is($a->agent_errors, '', 'no sanitizer reports from the agents');
