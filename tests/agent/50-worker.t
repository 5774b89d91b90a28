#!/usr/bin/perl

# airlock-agent with the real airlock-worker: the load question's
# run_python job taken from the stream by the worker, its input fetched
# through the proxy as the airlock-worker user, the script run in a
# bubblewrap sandbox (AIRLOCK_WORKER_BACKEND=gvisor: runsc), the result
# stored and published, the answer quoting what the script printed.  Runs
# where the tree has the worker (worker/); AIRLOCK_WORKER_BIN and
# AIRLOCK_ROOTFS point at another build.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $top = "$FindBin::Bin/../..";
plan skip_all => 'no worker in this tree'
    unless -d "$top/worker" || $ENV{AIRLOCK_WORKER_BIN};

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;
my $bin = $ENV{AIRLOCK_WORKER_BIN} // "$t->{build}/airlock-worker";
my $rootfs = $ENV{AIRLOCK_ROOTFS} // "$t->{build}/worker-rootfs";
my $backend = $ENV{AIRLOCK_WORKER_BACKEND} // 'bwrap';

for my $need ([ -x $bin, "$bin not built (make)" ],
              [ -x "$rootfs/usr/bin/python3",
                "no sandbox rootfs at $rootfs (make worker-rootfs)" ],
              [ defined getpwnam('airlock-worker'),
                'user airlock-worker missing (auto/deps)' ],
              [ $> == 0, 'the worker starts sandboxes as root' ])
{
    next if $need->[0];
    plan skip_all => $need->[1] unless $ENV{CI};
    die "$need->[1]\n";
}

$a->setup(worker_uid => 1);

mkdir "$d/work";
$t->write_file('worker.conf', join '', map { "$_->[0] $_->[1]\n" }
    [ redis_unix => "$d/redis.sock" ], [ redis_user => 'airlock-worker' ],
    [ redis_password_file => $t->redis_pass('airlock-worker') ],
    [ policy => "$d/policy.yaml" ],
    [ proxy_socket => "$d/airlock.sock" ], [ rootfs => $rootfs ],
    [ workdir => "$d/work" ], [ backend => $backend ],
    [ cgroup_name => "airlock-agent-test-$$" ], [ consumer => 'w1' ],
    [ block_ms => 200 ]);
my $wpid = $t->run_daemon($bin, '-c', "$d/worker.conf");

plan tests => 9;

my $script = <<'PY';
import json
d = json.load(open("/app/data/data.json"))
print("load1=%s" % d["cpu"]["body"]["data"]["result"][0]["value"][1])
PY

$a->script(
    { tool_calls => [ { name => 'run_python', arguments => {
        script => $script, inputs => [ { name => 'cpu',
            route => 'prometheus-query',
            query => { query => 'node_load1' } } ] } } ] },
    { quote => 'load1=([0-9.]+)', pieces => [ 'load is {{1}}' ] });

my $ev = $a->ask('worker-1', 'why is the load high?');

my ($job) = of_type('job', $ev);
is($job->{status}, 'ok', 'the worker ran the job: ok')
    or diag($t->read_file($t->{daemon_log}{$wpid}));
is($job->{exit_code}, 0, 'exit 0');
is($job->{backend}, $backend, "in a $backend sandbox");
ok(($job->{job_ms} // 0) > 0, "its time: " . ($job->{job_ms} // 'none')
   . " ms");
is((of_type('answer', $ev))[0]{text}, "load is $AgentTest::LOAD",
   'the answer quotes what the sandboxed script printed');

my @svc = $a->jsonl('services.log');
my $basic = 'Basic '
          . MIME::Base64::encode_base64($AgentTest::PROM_SECRET, '');
is(scalar(grep { ($_->{headers}{authorization} // '') eq $basic } @svc), 1,
   'the worker\'s fetch reached the service with the injected credential');
my @acc = grep { /prometheus-query/ } split /\n/,
          ($t->read_file('airlock.log') // '');
like($acc[-1] // '', qr/^worker prometheus-query /,
     'the proxy knew the fetch as client worker');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
