#!/usr/bin/perl

# airlock-worker: jobs in, results out.  A job's inputs are fetched through
# the real proxy (nginx with the Airlock module, on a unix socket) as the
# airlock-worker user; the upstream sees the injected credential, the
# sandbox never does.  One result per job, stored with a TTL, published,
# acknowledged.  Bad envelopes get a "rejected" result naming the problem,
# or, with no job_id to answer to, a dead-letter entry.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Socket::INET;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;
$w->start_worker(max_script_bytes => 2000, max_inputs => 4);

plan tests => 73;

my $SECRET = $Airlock::Worker::SECRET;
my ($r, $j);

like($w->worker_log, qr/backend \Q${\ $w->backend }\E/,
     'the worker logs its backend at start');

# ---- the happy path --------------------------------------------------------

# subscribe first, as a client awaiting the job would
my $sub = $w->redis_socket;
print {$sub} "*2\r\n\$9\r\nSUBSCRIBE\r\n\$15\r\nresponse:happy1\r\n";
Airlock::Worker::_resp_read($sub);

my $script = <<'PY';
import json, os
d = json.load(open("/app/data/data.json"))
print(json.dumps({k: v["status"] for k, v in sorted(d.items())}))
print(d["cpu"]["body"]["target"])
print(d["api_logs"]["body"]["target"])
print(d["note"]["body"]["body"])
raw = open("/app/data/data.json").read()
print("leak" if "SECRET" in raw else "clean")
print("uid", os.getuid(), os.getgid())
PY
$script =~ s/SECRET/$SECRET/;

$r = $w->run_job(job_id => 'happy1', session_id => 'sess-9', script => $script,
    blueprint => { inputs => [
        { name => 'cpu', route => 'metrics',
          query => { query => 'rate(cpu[5m])' } },
        { name => 'api_logs', route => 'logs',
          params => { service => 'api' } },
        { name => 'note', route => 'annotate',
          body => { text => 'hello world' } },
    ] });

is($r->{status}, 'ok', 'happy path: ok') or diag explain $r;
is($r->{exit_code}, 0, 'exit code 0');
is($r->{session_id}, 'sess-9', 'session_id carried');
is($r->{backend}, $w->backend, 'backend named');
my @out = split /\n/, $r->{stdout} // '';
is($out[0], '{"api_logs": 200, "cpu": 200, "note": 200}',
   'each input fetched, status in data.json');
is($out[1], '/api/v1/query?query=rate(cpu%5B5m%5D)',
   'query escaped and sent through the named route');
is($out[2], '/api/services/api/logs', 'path param in the route template');
is($out[3], '{"text":"hello world"}', 'JSON body posted');
is($out[4], 'clean', 'the credential is not in data.json');
is($out[5], 'uid 10001 10001', 'script runs as uid/gid 10001');
ok(!$r->{stdout_truncated} && !$r->{stderr_truncated}, 'nothing truncated');
ok(!exists $r->{error}, 'no error member when ok');
for my $k (qw(fetch prepare start run teardown total)) {
    ok(defined $r->{timing_ms}{$k}, "timing_ms.$k");
}

my @seen = $t->echo_requests(8081);
is(scalar(grep { grep { lc $_->[0] eq 'authorization'
                        && $_->[1] eq "Bearer $SECRET" } @{$_->{headers}} }
             @seen), 3, 'the upstream got the injected credential each time');

# published: the stored value
my $msg = eval {
    local $SIG{ALRM} = sub { die "timeout\n" };
    alarm 10;
    my $m = Airlock::Worker::_resp_read($sub);
    alarm 0;
    $m;
};
is(ref $msg && $msg->[2], $w->redis('GET', 'result:happy1'),
   'PUBLISH response:<job_id> carries the stored result');

my $ttl = $w->redis('TTL', 'result:happy1');
ok($ttl > 0 && $ttl <= 3600, "stored with a TTL ($ttl)");

# (acknowledged right after the PUBLISH)
my $pend;
for (1 .. 200) {
    $pend = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
    last if $pend->[0] == 0;
    sleep 0.05;
}
is($pend->[0], 0, 'acknowledged: nothing pending');

# ---- a denied input --------------------------------------------------------

$r = $w->run_job(job_id => 'denied1', script => 'print(1)',
    blueprint => { inputs => [
        { name => 'x', route => 'agent-only' } ] });
is($r->{status}, 'error', 'denied input: error');
is($r->{error}{code}, 'route_denied', 'code route_denied');
like($r->{error}{message}, qr/"x".*\/agent\/only.*no_route/,
     'message names the input, the route path and the deny reason');
is($r->{exit_code}, undef, 'not run: exit_code null');

$r = $w->run_job(job_id => 'denied2', script => 'print(1)',
    blueprint => { inputs => [
        { name => 'x', route => 'logs', params => { service => 'A..' } } ] });
is($r->{error}{code}, 'route_denied', 'param refused by the proxy');
like($r->{error}{message}, qr/denied by the proxy: \w+/, 'with its reason');

# an upstream's own 403 is not the proxy's: the script gets it
$r = $w->run_job(job_id => 'own403', script =>
    'import json; d = json.load(open("/app/data/data.json")); '
    . 'print(d["x"]["status"], d["x"]["body"]["reason"])',
    blueprint => { inputs => [ { name => 'x', route => 'own-403' } ] });
is($r->{status}, 'ok', 'an upstream\'s 403: the script runs');
is($r->{stdout}, "403 forbidden by the service\n", '... and reads it');

# nor is one in the very shape of the proxy's denial, without the proxy's
# Airlock-Denial header or with one the upstream forged (the proxy
# removes it)
for my $route ('shape-403', 'forged-403') {
    $r = $w->run_job(job_id => $route =~ s/-//r, script =>
        'import json; d = json.load(open("/app/data/data.json")); '
        . 'print(d["x"]["status"], d["x"]["body"]["reason"])',
        blueprint => { inputs => [ { name => 'x', route => $route } ] });
    is($r->{status}, 'ok', "$route, an upstream's 403 shaped like a denial: "
                           . 'the script runs')
        or diag explain $r;
    is($r->{stdout}, "403 no_route\n", '... and reads it');
}

# ---- bad envelopes ---------------------------------------------------------

sub rejected {
    my ($id, $raw, $code, $re, $name) = @_;
    $w->add_raw($raw);
    my $res = $w->wait_result($id, 30);
    ok($res && $res->{status} eq 'rejected'
       && $res->{error}{code} eq $code
       && $res->{error}{message} =~ $re, $name)
        or diag explain $res;
}

rejected('b1', '{"job_id":"b1","session_id":"s","blueprint":{"inputs":[]}}',
         'bad_envelope', qr/script must be a string/, 'missing script');
rejected('b2', $w->envelope(job_id => 'b2', script => 'x' x 2001),
         'script_too_large', qr/2001 bytes, the maximum is 2000/,
         'oversized script');
rejected('b3', $w->envelope(job_id => 'b3', script => '1',
             blueprint => { inputs => [ { name => 'a', route => 'nope' } ] }),
         'unknown_route', qr/no route "nope"/, 'unknown route');
rejected('b4', $w->envelope(job_id => 'b4', script => '1',
             limits => { memory_mb => 100000 }),
         'limit_exceeded', qr/memory_mb 100000 is above the maximum 512/,
         'limits over the maxima');
rejected('b5', '{"job_id":"b5","session_id":"s","script":"1",'
             . '"script":"2","blueprint":{"inputs":[]}}',
         'bad_envelope', qr/duplicate/i, 'duplicate keys');
rejected('b6', '{"job_id":"b6","session_id":"s","script":"1",'
             . '"blueprint":{"inputs":[]},"extra":1}',
         'bad_envelope', qr/unknown field "extra"/, 'unknown field');
rejected('b7', $w->envelope(job_id => 'b7', script => '1',
             blueprint => { inputs => [ { name => 'a', route => 'logs' } ] }),
         'bad_envelope', qr/takes 1 path param/, 'path param missing');
rejected('b8', $w->envelope(job_id => 'b8', script => '1',
             blueprint => { inputs => [ { name => 'a', route => 'metrics',
                 query => { query => 5 } } ] }),
         'bad_envelope', qr/must be a string/, 'query value not a string');
rejected('b9', $w->envelope(job_id => 'b9', script => '1',
             limits => { wall_ms => 'x' }),
         'bad_envelope', qr/positive integer/, 'limit not an integer');
rejected('b10', $w->envelope(job_id => 'b10', script => '1',
             blueprint => { inputs => [ map { { name => "i$_",
                 route => 'metrics', query => { query => 'up' } } } 1 .. 5 ] }),
         'bad_envelope', qr/5 inputs, the maximum is 4/, 'too many inputs');
rejected('b11', $w->envelope(job_id => 'b11', script => '1',
             blueprint => { inputs => [
                 { name => 'a', route => 'annotate' } ] }),
         'bad_envelope', qr/needs a body/, 'POST route without a body');

# a dot segment would be removed by libcurl before the proxy saw it:
# /files/../meta is the meta route's /meta
$r = $w->run_job(job_id => 'dotted', script => 'print(1)',
    blueprint => { inputs => [
        { name => 'a', route => 'files', params => { name => 'a..b' } } ] });
is($r->{status}, 'ok', 'a param with dots in it is fetched')
    or diag explain $r;
for my $v ('..', '.', '') {
    my $id = 'dot' . length $v;
    rejected($id, $w->envelope(job_id => $id, script => '1',
                 blueprint => { inputs => [ { name => 'a', route => 'files',
                     params => { name => $v } } ] }),
             'bad_envelope', length $v
                 ? qr/path param "name" may not be "\." or "\.\."/
                 : qr/non-empty/, "path param \"$v\" refused");
}
# nor one the escaping keeps that the proxy still reads as a dot segment
# or a drive: the denial would count against the worker's client
for my $v ('.. ', 'C:..', '. ') {
    (my $id = "dotx$v") =~ s/[^A-Za-z0-9]/_/g;
    rejected($id, $w->envelope(job_id => $id, script => '1',
                 blueprint => { inputs => [ { name => 'a', route => 'files',
                     params => { name => $v } } ] }),
             'bad_envelope',
             qr/input "a": its params make a request target the proxy refuses/,
             "path param \"$v\" refused before the proxy");
}
is(join(' ', map { $_->{path} } grep { $_->{path} =~ m{^/api/(files|ROOT)} }
             $t->echo_requests(8081)),
   '/api/files/a..b/meta', 'no dot segment fetched another route');

# one log line per message: envelope text is the model's, newlines and all
my $forged = '2030-01-01T00:00:00Z airlock-worker[1] emerg: FORGED LINE';
rejected('log1', $w->envelope(job_id => 'log1', script => '1',
             blueprint => { inputs => [ { name => 'a', route => 'metrics',
                 query => { "q\\\r\e\x7f\n$forged" => 1 } } ] }),
         'bad_envelope', qr/must be a string/, 'a query key with a newline');
my @forged = grep { /FORGED/ } split /\n/, $w->worker_log;
is(scalar @forged, 1, 'one log line for it') or diag explain \@forged;
is(join("\n", grep { !/^\S+ airlock-worker\[$w->{last_worker}\] [a-z]+: /
                    } split /\n/, $w->worker_log),
   '', 'no line but the worker\'s own');
my $escaped = 'q\\\\\\r\\x1b\\x7f\\n' . $forged;
like($forged[0],
     qr/^\S+ airlock-worker\[\d+\] notice: job log1 rejected: .*"\Q$escaped\E"/,
     'the worker\'s own line, control characters escaped');

# nothing to answer to: the dead-letter stream says why
$w->add_raw('{"job_id": "nope", ');
$w->add_raw('{"session_id":"s"}');
$w->add_raw('hello', 'other');

my $dead;
for (1 .. 200) {
    $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
    last if @$dead >= 3;
    sleep 0.05;
}
is(scalar @$dead, 3, 'three entries without a job_id dead-lettered');
my %f0 = @{$dead->[0][1]};
like($f0{error}, qr/invalid JSON/, 'invalid JSON: error in the dead letter');
is($f0{job}, '{"job_id": "nope", ', 'with the entry as it came');
my %f1 = @{$dead->[1][1]};
like($f1{error}, qr/job_id must be/, 'missing job_id named');
my %f2 = @{$dead->[2][1]};
like($f2{error}, qr/no "job" field/, 'entry without a job field named');

# an envelope over max_envelope_bytes is not parsed, but its job_id is
# read (one pass over the top level) so that the client gets its answer;
# job_id after the large member, and a "job_id" in the script and in an
# input that are not the envelope's
my $big = 'x' x (1 << 20);
$w->add_raw('{"script":"' . $big . '\\"job_id\\":\\"evil1\\"",'
            . '"blueprint":{"inputs":[{"job_id":"evil2"}]},'
            . '"session_id":"s-big", "job_id" : "huge1"}');
$r = $w->wait_result('huge1', 30);
ok($r && $r->{status} eq 'rejected' && $r->{error}{code} eq 'bad_envelope'
   && $r->{error}{message} =~ /^envelope is \d+ bytes, the maximum is 1048576$/
   && $r->{session_id} eq 's-big',
   'an oversized envelope: rejected, answered under its job_id')
    or diag explain $r;
ok(!defined $w->redis('GET', 'result:evil1')
   && !defined $w->redis('GET', 'result:evil2'),
   'no "job_id" but the top level\'s is read');

# two job_ids, or one written with an escape: no id to answer to
$w->add_raw('{"job_id":"huge2","script":"' . $big . '","job_id":"huge3"}');
$w->add_raw('{"job\\u005fid":"huge4","script":"' . $big . '"}');
$w->add_raw('{"job_id":"huge5","script":"' . $big . '"');
my @dead;
for (1 .. 200) {
    @dead = @{$w->redis('XRANGE', 'airlock:jobs:dead', '-', '+')};
    last if @dead >= 6;
    sleep 0.05;
}
is(scalar(grep { +{ @{$_->[1]} }->{error} =~ /envelope is \d+ bytes/ }
           @dead), 3,
   'an oversized envelope without one clear job_id: dead-lettered');
ok(!grep({ defined $w->redis('GET', "result:huge$_") } 2 .. 5),
   'and no result under any of its ids');

# ---- one result per job ----------------------------------------------------

$r = $w->run_job(job_id => 'once', script => 'print("first")');
is($r->{stdout}, "first\n", 'first run');
$w->add_job(job_id => 'once', script => 'print("second")');
sleep 1.5;
for (1 .. 100) {
    last if $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers')->[0] == 0
            && $w->worker_log =~ /job once \(entry \S+\): duplicate_job/;
    sleep 0.05;
}
like($w->worker_log,
     qr/job once \(entry \S+\): duplicate_job: result:once holds another/,
     'a second entry for the same job_id is not run: a duplicate '
     . '(112-duplicate-job.t)');
is($w->result('once')->{stdout}, "first\n", 'the first result stays');

is(join(' ', $w->leftovers), '', 'no job directory or cgroup left behind');
$w->kill_worker('TERM');
like($w->worker_log, qr/stopping/, 'SIGTERM stops the worker');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
