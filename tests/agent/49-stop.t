#!/usr/bin/perl

# airlock-agent: a run that gets SIGTERM (systemd stopping or restarting
# the unit signals every process of it) ends early but whole: the
# question and what the run did are stored, a job it awaited is
# withdrawn, its lock is let go, and its client gets "done".  It used to
# die where it stood: the question was lost, the job stayed in the
# stream for a worker to run for no one, the session stayed locked for
# the lock's lease (30 s) and the client's stream ended with no "done".
# Here the run is signalled while it waits for a job (no worker) and
# while it waits for the model.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 60000 ]);

plan tests => 16;

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

# the run's process and its lock's keeper, as systemd signals them all
sub term_run {
    my $server = $a->agent_pid;
    open(my $fh, '<', "/proc/$server/task/$server/children") or return 0;
    # a connection's process that has ended, not yet reaped, is none
    my @runs = grep { state_of($_) ne 'Z' } split ' ', (<$fh> // '');
    my @all = @runs;
    for my $r (@runs) {
        open(my $k, '<', "/proc/$r/task/$r/children") or next;
        push @all, split ' ', (<$k> // '');
    }
    return @runs == 1 ? kill('TERM', @all) : 0;
}

sub ask_start {
    my ($session, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return $t->http("POST /v1/sessions/$session/ask HTTP/1.1\r\nHost: a\r\n"
                    . "Content-Length: " . length($body) . "\r\n"
                    . "Connection: close\r\n\r\n$body",
                    unix => $a->{agents}{a}{sock}, start => 1);
}

sub ask_end {
    my ($s) = @_;
    my $raw = '';
    while (sysread($s, $raw, 65536, length $raw)) { }
    return [ AgentTest::events($raw) ];
}

# ---- while it waits for a job ----------------------------------------------

$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('stopped')" } } ] },
           { pieces => [ 'never' ] });
my $s = ask_start('job', 'a job, then a stop');
like(redis(qw(XREAD BLOCK 30000 STREAMS airlock:jobs 0-0)), qr/stopped/,
     'job: the run waits for its job');
ok(term_run(), 'job: SIGTERM');
my $ev = ask_end($s);

my ($err) = of_type('error', $ev);
is(($err // {})->{code}, 'stopped', 'job: an error event says the run stopped');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'error',
   'job: done, outcome error');
my ($job) = of_type('job', $ev);
is_deeply([ map { ($job // {})->{$_} } qw(status withdrawn) ],
          [ 'no result', JSON::PP::true ], 'job: withdrawn');
is(redis(qw(XLEN airlock:jobs)), 0, 'job: the stream holds none');
is(redis(qw(EXISTS airlock:session:job:lock)), 0, 'job: the lock let go');

my $r = $a->session('job');
my @m = @{$r->{json}{messages} // []};
is(join(',', map { $_->{role} } @m), 'user,assistant,tool',
   'job: the question and the call stored');
like(($m[2] // {})->{content} // '', qr/stopped first/,
     'job: the call answered');

# ---- while it waits for the model ------------------------------------------

my $before = scalar($a->provider_requests);
$a->script({ pieces => [ 'late' ], wait_file => "$d/never" });
$s = ask_start('model', 'a question, then a stop');
for (1 .. 1500) {
    last if scalar($a->provider_requests) > $before;
    select(undef, undef, undef, 0.02);
}
ok(term_run(), 'model: SIGTERM');
$ev = ask_end($s);
($err) = of_type('error', $ev);
is(($err // {})->{code}, 'stopped', 'model: an error event says so');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'error',
   'model: done, outcome error');
$r = $a->session('model');
is(($r->{json}{runs}[0] // {})->{outcome}, 'error', 'model: the run stored');

# the agent itself still serves
$t->write_file('never', '');
$a->script({ pieces => [ 'still here' ] });
$ev = $a->ask('model', 'again');
is(((of_type('answer', $ev))[0] // {})->{text}, 'still here',
   'the session goes on');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
