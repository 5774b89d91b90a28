#!/usr/bin/perl

# A job's input that is not GET or HEAD (a POST that opens a pull
# request, one that posts a comment) is sent at most once per job.
# Delivery is at least once: a worker killed after such an input went
# out and before the job's result was stored left the entry pending,
# and the next delivery fetched the inputs again, sending the POST a
# second time, silently, up to max_deliveries times.  The worker now
# records in errors_key that it is about to send the input; a delivery
# that finds the record and no result ends the job with an error result,
# "interrupted", naming the input, and sends nothing; once the answer is
# in, it is kept with the record, and a later delivery takes it instead
# of sending the input again.  GET inputs are fetched again.  Here the
# worker is killed while the upstream holds its answer to a POST (and,
# later, to a GET after the POST, and to a GET before it), and started
# again, or another worker takes its entry over.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep);
use JSON::PP;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

plan tests => 34;

# the requests the upstream took for a path, those of one job's POST
# when a tag is given (its body's text)
sub requests {
    my ($path, $tag) = @_;
    return scalar grep {
        $_->{path} eq $path
            && (!defined $tag || ($_->{body} // '') =~ /\Q$tag\E/)
    } $t->echo_requests(8081);
}

sub wait_requests {
    my ($n, $path, $tag) = @_;
    for (1 .. 800) {
        last if requests($path, $tag) >= $n;
        sleep 0.025;
    }
    return requests($path, $tag);
}

sub pending_for {
    my ($consumer) = @_;
    my $n = -1;
    for (1 .. 400) {
        my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers',
                          '-', '+', '10', $consumer);
        $n = ref $p ? scalar @$p : -1;
        last if $n == 0;
        sleep 0.025;
    }
    return $n;
}

sub post { { name => $_[0], route => 'slow-post', body => { text => $_[1] } } }
sub slow { { name => $_[0], route => 'slow' } }

my $script = "import json\nd = json.load(open('/app/data/data.json'))\n"
           . "print(' '.join('%s=%s' % (k, v['status']) for k, v in "
           . "d.items()))\n";

# ---- killed while the upstream holds its answer to the POST --------------

my $pid = $w->start_worker(consumer => 'c1');
$w->add_job(job_id => 'pr1', script => $script,
            blueprint => { inputs => [ post('pr', 'open pr one') ] });
is(wait_requests(1, '/api/slow-post', 'open pr one'), 1,
   'pr1: its POST reached the upstream');
$w->kill_worker('KILL', $pid);
is($w->redis('EXISTS', 'result:pr1'), 0,
   'pr1: no result when its worker was killed');

$pid = $w->start_worker(consumer => 'c1');
my $r = $w->wait_result('pr1', 60);
my $e = $r && $r->{error} ? $r->{error} : { code => '', message => '' };
is($r && $r->{status}, 'error', 'pr1: its next delivery ends it in error')
    or diag explain $r;
is($e->{code}, 'interrupted', 'pr1: as interrupted');
like($e->{message}, qr/input 1 of 1, "pr" \(POST\)/,
     "pr1: naming the input: $e->{message}");
is($r && $r->{exit_code}, undef, 'pr1: the script did not run');
is(requests('/api/slow-post', 'open pr one'), 1,
   'pr1: the POST was sent once');
is(pending_for('c1'), 0, 'pr1: the entry is acknowledged');
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'pr1: its records are removed');

# ---- killed during a GET after the POST: its answer kept, reused ---------

my $reuse = "import json\nd = json.load(open('/app/data/data.json'))\n"
          . "print(list(d), d['pr']['status'], "
          . "json.loads(d['pr']['body']['body'])['text'], "
          . "d['after']['status'])\n";
$w->add_job(job_id => 'pr2', script => $reuse,
            blueprint => { inputs => [ post('pr', 'open pr two'),
                                       slow('after') ] });
my $gets = requests('/api/slow');
is(wait_requests($gets + 1, '/api/slow'), $gets + 1,
   'pr2: the GET after its POST reached the upstream');
$w->kill_worker('KILL', $pid);
is($w->redis('EXISTS', 'result:pr2'), 0,
   'pr2: no result when its worker was killed');

$pid = $w->start_worker(consumer => 'c1');
$r = $w->wait_result('pr2', 60);
is($r && $r->{status}, 'ok', 'pr2: its next delivery runs it')
    or diag explain $r;
is($r && $r->{stdout}, "['pr', 'after'] 200 open pr two 200\n",
   "pr2: with the POST's answer kept, the GET fetched again");
is(requests('/api/slow-post', 'open pr two'), 1,
   'pr2: the POST was sent once');
is(requests('/api/slow'), $gets + 2, 'pr2: the GET twice');
is(pending_for('c1'), 0, 'pr2: the entry is acknowledged');
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'pr2: its records are removed');

# ---- killed during a GET before the POST: fetched again, run --------------

$w->add_job(job_id => 'pr3', script => $script,
            blueprint => { inputs => [ slow('before'),
                                       post('pr', 'open pr three'),
                                       { name => 'api', route => 'logs',
                                         params => { service => 'api' } }
                                     ] });
$gets = requests('/api/slow');
is(wait_requests($gets + 1, '/api/slow'), $gets + 1,
   'pr3: the GET before its POST reached the upstream');
$w->kill_worker('KILL', $pid);
is(requests('/api/slow-post', 'open pr three'), 0,
   'pr3: the POST was not sent when its worker was killed');

$pid = $w->start_worker(consumer => 'c1');
$r = $w->wait_result('pr3', 60);
is($r && $r->{status}, 'ok', 'pr3: its next delivery runs it')
    or diag explain $r;
is($r && $r->{stdout}, "before=200 pr=200 api=200\n",
   'pr3: with every input, in order');
is(requests('/api/slow-post', 'open pr three'), 1,
   'pr3: the POST was sent once');
pending_for('c1');
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'pr3: its records are removed');
$w->kill_worker('TERM', $pid);

# ---- taken over by another consumer (XAUTOCLAIM) ---------------------------

$pid = $w->start_worker(consumer => 'c1');
$w->add_job(job_id => 'pr4', script => $script,
            blueprint => { inputs => [ post('pr', 'open pr four') ] });
is(wait_requests(1, '/api/slow-post', 'open pr four'), 1,
   'pr4: its POST reached the upstream');
$w->kill_worker('KILL', $pid);

$pid = $w->start_worker(consumer => 'c2', name => 'worker-c2.conf',
                        visibility_timeout_ms => 1000);
$r = $w->wait_result('pr4', 60);
$e = $r && $r->{error} ? $r->{error} : { code => '', message => '' };
ok($e->{code} eq 'interrupted'
   && $e->{message} =~ /delivery 1 to consumer c1 began sending input 1 of 1/,
   "pr4: the worker that takes it over ends it: $e->{message}")
    or diag explain $r;
is(requests('/api/slow-post', 'open pr four'), 1,
   'pr4: the POST was sent once');
is(pending_for('c1') + pending_for('c2'), 0, 'pr4: the entry is acknowledged');
$w->kill_worker('TERM', $pid);

# ---- the records as a worker reads them back ------------------------------

# an answer kept for the POST: taken, the POST not sent
my $member = '"pr":{"status":201,"body":{"kept":"yes"}}';
my $taken = "import json\nd = json.load(open('/app/data/data.json'))\n"
          . "print(list(d), d['pr']['status'], d['pr']['body']['kept'], "
          . "d['after']['status'])\n";
my $id5 = $w->add_job(job_id => 'pr5', script => $taken,
                      blueprint => { inputs => [ post('pr', 'open pr five'),
                                                 slow('after') ] });
$w->redis('XREADGROUP', 'GROUP', 'airlock-workers', 'c1', 'COUNT', '1',
          'STREAMS', 'airlock:jobs', '>');
$w->redis('HSET', 'airlock:jobs:errors', "$id5:answer:0", $member);
# one that is not a worker's: the job is not run
my $id6 = $w->add_job(job_id => 'pr6', script => $script,
                      blueprint => { inputs => [ post('pr', 'open pr six') ] });
$w->redis('XREADGROUP', 'GROUP', 'airlock-workers', 'c1', 'COUNT', '1',
          'STREAMS', 'airlock:jobs', '>');
$w->redis('HSET', 'airlock:jobs:errors', "$id6:answer:0",
          '"other":{"status":201}');

$pid = $w->start_worker(consumer => 'c1');
$r = $w->wait_result('pr5', 60);
is($r && $r->{stdout}, "['pr', 'after'] 201 yes 200\n",
   'pr5: the answer kept is taken') or diag explain $r;
is(requests('/api/slow-post', 'open pr five'), 0, 'pr5: the POST not sent');
$r = $w->wait_result('pr6', 60);
$e = $r && $r->{error} ? $r->{error} : { code => '', message => '' };
ok($e->{code} eq 'interrupted' && $e->{message} =~ /unreadable/,
   "pr6: a record not a worker's ends it: $e->{message}") or diag explain $r;
is(requests('/api/slow-post', 'open pr six'), 0, 'pr6: the POST not sent');
is(pending_for('c1'), 0, 'pr5, pr6: the entries are acknowledged');
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'pr5, pr6: their records are removed');
$w->kill_worker('TERM', $pid);

unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
