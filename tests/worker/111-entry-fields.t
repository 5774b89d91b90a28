#!/usr/bin/perl

# A stream entry's "job" field is the field named exactly that: a name
# is a binary string in Redis, and "job\0x" is another field, which the
# worker's strcmp() took for "job" (the first of the two ran).  An entry
# with two "job" fields (XADD takes a name twice) is not run: the worker
# ran the first, where a client that reads the fields into a map sees
# the last, as with a JSON object's duplicate key.  It goes to the
# dead-letter stream with its first, and neither envelope is answered.

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
$w->start_worker;

plan tests => 9;

my %env = map { $_ => $w->envelope(job_id => $_, script => "print('$_')") }
          qw(ef1 ef2 ef3 ef4 ef5);

$w->redis('XADD', 'airlock:jobs', '*', "job\0x", $env{ef1}, 'job',
          $env{ef2});
$w->redis('XADD', 'airlock:jobs', '*', 'job', $env{ef3}, 'job', $env{ef4});
$w->redis('XADD', 'airlock:jobs', '*', 'jobs', 'x', 'job', $env{ef5});

my $r = $w->wait_result('ef2', 60);
ok($r && $r->{status} eq 'ok' && $r->{stdout} eq "ef2\n",
   'the field named "job" is the one run') or diag explain $r;
ok(!defined $w->redis('GET', 'result:ef1'),
   'not the one named "job\\0x"');

$r = $w->wait_result('ef5', 60);
ok($r && $r->{status} eq 'ok' && $r->{stdout} eq "ef5\n",
   'a field of another name beside it: passed over');

my $dead = [];
for (1 .. 400) {
    $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
    last if @$dead;
    sleep 0.05;
}
is(scalar @$dead, 1, 'one entry dead-lettered');
my %f = @{$dead->[0][1] // []};
is($f{error}, 'bad_envelope: the entry has more than one "job" field',
   'two "job" fields: the error');
is($f{job}, $env{ef3}, 'with the first of them');
ok(!defined $w->redis('GET', 'result:ef3')
   && !defined $w->redis('GET', 'result:ef4'),
   'neither of them run nor answered');
is($w->pending_after, 0, 'every entry acknowledged');

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
