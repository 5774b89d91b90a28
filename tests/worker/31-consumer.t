#!/usr/bin/perl

# The default consumer name: unique per machine, stable across restarts.
# Every appliance image has the host name "airlock"; two appliances on one
# Redis must still be two consumers, or a starting worker reads the other's
# pending entry (XREADGROUP ... 0) and runs a job that is still running.
# Each worker here sees its own /etc/machine-id (a private mount
# namespace), as two machines would; the host name is this machine's.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Sys::Hostname;
use Airlock::Prereq ();
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
Airlock::Prereq::absent('needs unshare(1) and /etc/machine-id')
    unless -x '/usr/bin/unshare' && -f '/etc/machine-id';
$w->start_proxy;
$w->start_redis;

plan tests => 10;

my $dir = $t->testdir;
my $host = hostname();
$t->write_file('mid-1', "0123456789abcdef0123456789abcdef\n");
$t->write_file('mid-2', "fedcba9876543210fedcba9876543210\n");
$t->write_file('mid-0', '');

# the worker as on a machine whose /etc/machine-id is $dir/mid-N
sub machine {
    my ($n) = @_;
    return [ '/usr/bin/unshare', '--mount', '--propagation', 'private',
             '/bin/sh', '-c', 'mount --bind "$0" /etc/machine-id && exec "$@"',
             "$dir/mid-$n" ];
}

sub consumer_of {
    my ($pid) = @_;
    return $w->worker_log($pid) =~ /consumer (\S+)/ ? $1 : '';
}

my $a = $w->start_worker(consumer => undef, wrap => machine(1),
                         workdir => "$dir/work-a", name => 'a.conf');
my $ca = consumer_of($a);
like($ca, qr/^\Q$host\E-[0-9a-f]{16}$/,
     'default consumer: the host name and 16 hex digits');
unlike($ca, qr/0123456789abcdef/, 'which do not give away the machine id');

# a job with a POST input in appliance 1 ...
$w->add_job(job_id => 'pr1', script => "import time\ntime.sleep(4)\n"
                                       . "print('done')\n",
    blueprint => { inputs => [ { name => 'note', route => 'annotate',
                                 body => { text => 'open the pr' } } ] });
for (1 .. 400) {
    last if $w->worker_log($a) =~ /job pr1 \(entry/;
    sleep 0.025;
}

# ... while appliance 2, same host name, starts
my $b = $w->start_worker(consumer => undef, wrap => machine(2),
                         workdir => "$dir/work-b", name => 'b.conf');
my $cb = consumer_of($b);
like($cb, qr/^\Q$host\E-[0-9a-f]{16}$/, 'appliance 2 has a default too');
isnt($cb, $ca, 'and it is not appliance 1\'s');

my $r = $w->wait_result('pr1', 60);
is($r && $r->{status}, 'ok', 'pr1: one result');
sleep 1;
my @runs = grep { /job pr1: / } split /\n/, $w->all_worker_logs;
is(scalar @runs, 1, 'pr1 ran once');
is(scalar(grep { ($_->{method} // '') eq 'POST' } $t->echo_requests(8081)),
   1, 'its POST input reached the upstream once');

# stable across a restart: the same machine, the same name
$w->kill_worker('TERM', $a);
$a = $w->start_worker(consumer => undef, wrap => machine(1),
                      workdir => "$dir/work-a", name => 'a.conf');
is(consumer_of($a), $ca, 'appliance 1 restarted: the same consumer name');

# no machine id (a container, an image not yet booted): no guess
my $c = $w->start_worker(consumer => undef, wrap => machine(0),
                         workdir => "$dir/work-c", name => 'c.conf');
like($w->worker_log($c), qr/emerg: .*machine-id.*set "consumer"/,
     'without a machine id the worker asks for a consumer name');

$w->kill_worker('TERM', $a);
$w->kill_worker('TERM', $b);
unlike($w->all_worker_logs, qr/\balert:|Sanitizer|runtime error/,
       'no alerts or sanitizer reports in the log');
