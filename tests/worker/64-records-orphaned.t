#!/usr/bin/perl

# An entry's records in errors_key (its delivery record, its job's ids,
# "<entry>:done") go with its acknowledgement, in the same script, so a
# worker killed between the two leaves none behind.  The worker
# acknowledged and deleted the entry, then removed the records with a
# second command: killed in between, it left them in errors_key for
# ever (no TTL, and nothing would look at them again: the entry was no
# longer pending).  Here a proxy in front of Redis holds the command
# that removes the records, the worker is killed there and started
# again.  Removing them first would be worse: "<entry>:done" gone while
# the entry is pending would have the job run again once its result
# expired (59-result-expired.t).

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
$w->start_proxy;
$w->start_redis;

plan tests => 6;

sub wait_for {
    my ($cond) = @_;
    for (1 .. 400) {
        return 1 if $cond->();
        sleep 0.025;
    }
    return 0;
}

my ($port, $held) = $w->hold_proxy('HDEL');
my $pid = $w->start_worker(redis_port => $port);
my $id = $w->add_job(job_id => 'orph1', script => "print('one')");
my $r = $w->wait_result('orph1', 60);
is($r && $r->{stdout}, "one\n", 'the job ran');
ok(wait_for($held), 'the worker is held at the removal of its records');
$w->kill_worker('KILL', $pid);

# started again, on Redis itself; a second job shows it has looked
$pid = $w->start_worker;
$r = $w->run_job(job_id => 'orph2', script => "print('two')", timeout => 60);
is($r && $r->{stdout}, "two\n", 'a worker started again runs the next job');
ok(wait_for(sub { $w->redis('HLEN', 'airlock:jobs:errors') == 0 }),
   'and no record of the first is left in errors_key')
    or diag explain $w->redis('HKEYS', 'airlock:jobs:errors');
is(scalar(() = $w->all_worker_logs =~ /job orph1 \(entry/g), 1,
   'the first job ran once');
$w->kill_worker('TERM', $pid);

unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
