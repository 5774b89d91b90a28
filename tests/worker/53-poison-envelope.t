#!/usr/bin/perl

# An envelope whose parse gets the worker killed is dead-lettered once
# it has been delivered more than max_deliveries times, unparsed: the
# delivery count is read before the parse.  It used to be read after,
# so an envelope whose jansson tree the worker's memory cannot hold
# (the unit's MemoryMax=, OOMPolicy=kill), or that crashed the parse,
# was delivered again at every restart and killed the worker again,
# never dead-lettered: the queue wedged.  Here the worker runs in a
# memory cgroup of 160 MiB and the envelope is 3 MiB of [{},{},...],
# a tree of about 250 MB.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use POSIX ();
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');

my ($cg, $wrap) = $w->memory_cgroup('poison', 160 << 20);

$w->start_proxy;
$w->start_redis;

plan tests => 8;

my %c = (max_deliveries => 1, max_envelope_bytes => 4 << 20,
         wrap => $wrap);

my $raw = '{"job_id":"poison","session_id":"s-p","script":"print(1)",'
          . '"blueprint":{"inputs":[{"name":"a","route":"annotate",'
          . '"body":[' . join(',', ('{}') x (1 << 20)) . ']}]}}';
my $id = $w->add_raw($raw);

# the worker is gone (reaped here), or the job has its result
sub dead_or_result {
    my ($pid, $job) = @_;
    for (1 .. 1200) {
        return 'result' if eval { $w->result($job) };
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            $t->{daemons} = [ grep { $_ != $pid } @{$t->{daemons}} ];
            return 'dead';
        }
        sleep 0.025;
    }
    return 'neither';
}

my $pid = $w->start_worker(%c);
is(dead_or_result($pid, 'poison'), 'dead',
   'the first delivery: the parse gets the worker killed');

$pid = $w->start_worker(%c);
is(dead_or_result($pid, 'poison'), 'result',
   'the second, past max_deliveries: answered, not parsed');
my $r = $w->result('poison');
is($r && $r->{error}{code}, 'dead_letter', 'with a dead_letter result')
    or diag explain $r;
is($r && $r->{session_id}, 's-p', 'under its session');

my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
my @mine = grep { my %f = @{$_->[1]}; $f{entry} eq $id } @$dead;
my %f = @mine ? @{$mine[0][1]} : ();
is(scalar @mine, 1, 'the entry is in the dead-letter stream');
ok(defined $f{job} && $f{job} eq $raw, 'with its envelope as it came');

is($w->pending_after, 0, 'nothing pending');

$w->kill_worker('TERM', $pid);
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
rmdir $cg;
