#!/usr/bin/perl

# airlock-agent: a run_python result is read up to what the run may
# still show the model (--max-tool-bytes left) and 64 KiB, never whole.
# hiredis buffers a reply of any size and Redis takes values of 512 MB:
# the agent read the published message or result:<job> whole, and parsed
# and serialized it again, whatever its size, so anything that can write
# Redis (a compromised worker) made every run waiting for a job hold as
# much memory as it liked.  Here the test plays the worker: a result of
# 16 MiB is not read (Redis sends the agent a small part of it), the
# model is told so and the run stops at the tool output limit; a 4 MiB
# message published with no result stored is not taken for the result,
# nor is a small one that is not a result at all, and the real, small
# result that follows answers the run.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use POSIX ();
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

plan tests => 17;

my $MIB = 1024 * 1024;

sub redis {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

sub sent {
    my ($n) = redis(qw(INFO stats)) =~ /^total_net_output_bytes:(\d+)/m;
    return $n // 0;
}

# the result the worker stores, stdout 'y' x N, built by Redis itself
my $RESULT = q{
    return '{"job_id":"' .. ARGV[1] .. '","session_id":"' .. ARGV[3]
        .. '",'
        .. '"status":"ok","exit_code":0,"stdout":"'
        .. string.rep('y', tonumber(ARGV[2])) .. '","stderr":"",'
        .. '"stdout_truncated":false,"stderr_truncated":false,'
        .. '"backend":"none","timing_ms":{"total":1}}'
};

my $STORE = "local function result() $RESULT end "
    . "local v = result() "
    . "redis.call('set', KEYS[1], v, 'EX', 600) "
    . "return redis.call('publish', KEYS[2], v)";

my $PLANT = "return redis.call('publish', KEYS[1], "
    . "string.rep('{', tonumber(ARGV[1])))";

my $GARBAGE = "return redis.call('publish', KEYS[1], ARGV[1])";

my $BAD = "redis.call('set', KEYS[1], ARGV[1], 'EX', 600) "
    . "return redis.call('publish', KEYS[2], ARGV[1])";

# The worker, played: waits for the run's job, then does what @steps say
# with its job id, and deletes the entry (as a worker does when done).
sub worker {
    my (@steps) = @_;
    my $pid = fork;
    die "fork: $!\n" unless defined $pid;
    return $pid if $pid;

    my $out = redis(qw(XREAD BLOCK 30000 STREAMS airlock:jobs 0-0));
    my ($id) = $out =~ /^(\d+-\d+)$/m;
    my ($job) = $out =~ /^(\{.*\})$/m;
    my $j = eval { decode_json($job // '') } // {};
    my $jid = $j->{job_id} // 'none';

    for my $s (@steps) {
        if ($s->[0] eq 'store') {
            redis('EVAL', $STORE, 2, "result:$jid", "response:$jid", $jid,
                  $s->[1], $j->{session_id} // 'none');
        } elsif ($s->[0] eq 'bad') {
            redis('EVAL', $BAD, 2, "result:$jid", "response:$jid", $s->[1]);
        } elsif ($s->[0] eq 'garbage') {
            redis('EVAL', $GARBAGE, 1, "response:$jid", $s->[1]);
        } else {
            redis('EVAL', $PLANT, 1, "response:$jid", $s->[1]);
        }
    }

    redis(qw(XDEL airlock:jobs), $id) if defined $id;
    POSIX::_exit(0);
}

sub job {
    return { tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('hi')" } } ] };
}

# a result of 16 MiB: not read
my $before = sent();
my $w = worker([ 'store', 16 * $MIB ]);
$a->script(job(), { pieces => [ 'never' ] });
my $ev = $a->ask('large', 'a job whose result is large');
waitpid($w, 0);
my $got = sent() - $before;

my ($job) = of_type('job', $ev);
is(join(',', map { $_->{limit} } of_type('limit', $ev)), 'tool_bytes',
   'large: the run stopped at the tool output limit');
is(($job // {})->{status}, 'too large', 'large: the job event says so');
cmp_ok(($job // {})->{bytes} // 0, '>', 16 * $MIB,
       'large: with the result\'s size');
cmp_ok((of_type('done', $ev))[0]{tool_bytes}, '>', 16 * $MIB,
       'large: all of it counted');
cmp_ok($got, '<', 4 * $MIB, "large: Redis sent the agent $got bytes, "
       . 'not the result');

my $r = $a->session('large');
my ($tool) = grep { $_->{role} eq 'tool' } @{$r->{json}{messages} // []};
like(($tool // {})->{content} // '', qr/not read/,
     'large: the model is told it was not read');
unlike(encode_json($r->{json} // {}), qr/yyyy/,
       'large: none of it in the session');

# a large message with no result stored, then the real result
$before = sent();
$w = worker([ 'plant', 4 * $MIB ], [ 'store', 6 ]);
$a->script(job(), { quote => '"stdout":"(y+)"', pieces => [ 'got {{1}}' ] });
$ev = $a->ask('planted', 'a job with a planted message');
waitpid($w, 0);
$got = sent() - $before;

is(((of_type('answer', $ev))[0] // {})->{text}, 'got yyyyyy',
   'planted: the stored result answered');
is(scalar(of_type('limit', $ev)), 0, 'planted: no limit reached');
cmp_ok($got, '<', 2 * $MIB, "planted: Redis sent the agent $got bytes, "
       . 'not the message');

# small messages that are not a result (not JSON, no status), then the
# real result: the wait goes on to it, the job is not given up on
$w = worker([ 'garbage', 'not json' ], [ 'garbage', '{"no":"status"}' ],
            [ 'store', 4 ]);
$a->script(job(), { quote => '"stdout":"(y+)"', pieces => [ 'got {{1}}' ] });
$ev = $a->ask('garbage', 'a job with garbage published');
waitpid($w, 0);
is(((of_type('answer', $ev))[0] // {})->{text}, 'got yyyy',
   'garbage: the stored result answered');
is(scalar(of_type('error', $ev)), 0, 'garbage: no error');

# a result stored that is not JSON: an error, in the agent's words
$w = worker([ 'bad', '{"status":"ok","x":OBEY_THE_NOTE_NOW}' ]);
$a->script(job(), { pieces => [ 'done' ] });
$ev = $a->ask('bad', 'a job whose stored result is not JSON');
waitpid($w, 0);
my ($err) = of_type('error', $ev);
like(($err // {})->{message} // '', qr/not JSON/,
     'bad: an error that says the result is not JSON');
my @prov = $a->provider_requests;
($tool) = grep { $_->{role} eq 'tool' }
          @{$prov[-1]{body}{messages} // []};
like(($tool // {})->{content} // '', qr/^error: run_python: /,
     'bad: the model is told');
unlike(join("\n", map { $_->{content} // '' } grep { $_->{role} eq 'tool' }
                  @{$prov[-1]{body}{messages} // []}),
       qr/OBEY/, 'bad: none of the result reaches the model outside its '
       . 'wrapper');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
