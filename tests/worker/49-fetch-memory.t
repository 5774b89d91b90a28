#!/usr/bin/perl

# What an upstream answers can cost the worker process (in its unit, not
# in a job's cgroup) about its size, not many times more.  An input's
# JSON body of fetch_max_bytes holding many small values ([{},{},...],
# about 350000 objects in 1 MiB) is a tree of about 80 MB in jansson.
# The fetch process kept every input's tree until the last was fetched,
# and the worker parsed the whole answer again into one tree before
# writing data.json: 16 such inputs were over a GB in each.  The fetch
# process now keeps one input's tree at a time, and the worker takes its
# answer as data.json without parsing it.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');

# the upstream: 1 MiB less a little of [{},{},...]
$t->write_file('nested.pl', <<'PL');
use strict;
use IO::Socket::INET;
$SIG{PIPE} = 'IGNORE';
my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
    LocalPort => $ARGV[0], Listen => 16, ReuseAddr => 1) or die "$!";
my $body = '[' . join(',', ('{}') x 349000) . ']';
while (my $c = $s->accept) {
    my $req = '';
    while ($req !~ /\r\n\r\n/) {
        my $n = sysread($c, $req, 4096, length $req) or last;
    }
    print {$c} "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               . "Content-Length: " . length($body) . "\r\n"
               . "Connection: close\r\n\r\n" . $body;
    close $c;
}
PL
$w->start_proxy;
$w->start_redis;
$t->run_daemon($^X, $t->testdir . '/nested.pl', $t->port(8082));
$t->wait_for_port(8082) or die 'the nested upstream did not start';

plan tests => 5;

my $pid = $w->start_worker;

sub peak_mb {
    my ($p) = @_;
    my $s = Airlock::Worker::_slurp("/proc/$p/status") // '';
    return $s =~ /^VmHWM:\s+(\d+) kB/m ? int($1 / 1024) : -1;
}

my $before = peak_mb($pid);

my $r = $w->run_job(job_id => 'deep', timeout => 120,
    script => "import json\n"
              . "d = json.load(open('/app/data/data.json'))\n"
              . "print(sorted(d), [len(v['body']) for v in d.values()])\n",
    limits => { memory_mb => 512 },
    blueprint => { inputs => [ map { { name => "n$_", route => 'nested',
                                       params => { n => "$_" } } } 1 .. 4 ]
    });
is($r && $r->{status}, 'ok', 'a job with four such inputs runs')
    or diag explain $r;
is($r && $r->{stdout},
   "['n1', 'n2', 'n3', 'n4'] [349000, 349000, 349000, 349000]\n",
   'and its script reads them all');

my $peak = peak_mb($pid);
ok($peak > 0 && $peak - $before < 64,
   "the worker's peak memory grew by under 64 MB "
   . "(from $before to $peak MB)");

# what the fetch process answers is still checked: an error is an error
$r = $w->run_job(job_id => 'gone', script => 'print(1)',
    blueprint => { inputs => [ { name => 'x', route => 'nested',
                                 params => { n => '1' } },
                               { name => 'y', route => 'metrics' } ] });
is($r && $r->{error}{code}, 'route_denied',
   'a later input denied: the job ends as before') or diag explain $r;

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
