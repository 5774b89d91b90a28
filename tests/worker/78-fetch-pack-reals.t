#!/usr/bin/perl

# The job's inputs the worker hands its fetch spawner (started as root)
# in a memory file, which the worker, the spawner and the fetch each
# hold to a bound.  An input's body is written again by jansson from the
# envelope's tree, and a real grows there: "0.1" is written
# "0.10000000000000001".  The bound was twice the envelope (and 64 KiB,
# and a path's room per input), so a body of reals within
# max_envelope_bytes was refused before it was fetched, as "internal:
# the fetch's inputs: File too large", where a worker that forks its
# fetches itself (not started as root) sends it for the proxy to judge.
# Here: 15000 reals in an envelope under 64 KiB (about 300 KB once
# written again, over the old bound of about 200 KB with max_inputs 1),
# sent to a route whose body is at most 4096 bytes: the proxy refuses it.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');

$w->start_proxy;
$w->start_redis;

plan tests => 5;

my $pid = $w->start_worker(max_envelope_bytes => 65536, max_inputs => 1);

# the path under test: the fetch comes from the spawner
my $sp;
for (1 .. 200) {
    ($sp) = grep {
        my $s = Airlock::Worker::_slurp("/proc/$_/status") // '';
        $s =~ /^Name:\s*aw-fetchd$/m && $s =~ /^PPid:\s*$pid$/m
    } map { m{/proc/(\d+)} ? $1 : () } glob('/proc/[0-9]*');
    last if $sp;
    sleep 0.025;
}
ok($sp, 'the worker has a fetch spawner (started as root)');

my $env = $w->envelope(job_id => 'reals', script => "print(1)\n",
    blueprint => { inputs => [ { name => 'a', route => 'annotate',
                                 body => [ (0.1) x 15000 ] } ] });
cmp_ok(length $env, '<=', 65536, 'the envelope is within '
       . 'max_envelope_bytes (' . length($env) . ' bytes)');
$w->add_raw($env);

my $r = $w->wait_result('reals', 120);
my $e = $r && $r->{error} || {};
isnt($e->{code} // '', 'internal', 'a body of reals is not refused as the '
     . 'fetch\'s own error') or diag explain $r;
is($e->{code} // '', 'route_denied',
   'it is sent, and the proxy judges it (over the route\'s max_bytes)')
    or diag explain $r;

unlike($w->all_worker_logs, qr/Sanitizer|runtime error/,
       'no sanitizer reports in the logs');
