#!/usr/bin/perl

# An envelope refused for a duplicate key is still answered under its
# job_id when one can be read, by one rule whatever the envelope's size:
# the top-level object names "job_id" exactly once (a name written with
# escapes counts as what it reads, "job\u005fid" is "job_id"), written
# without escapes.  An envelope of max_envelope_bytes or less was
# re-read with jansson's duplicates allowed and answered under the last
# of two job_ids; an oversized one did not count an escaped name, and
# was answered under the plain one of two.  Both are now dead-lettered.

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

plan tests => 8;

$w->start_worker(max_envelope_bytes => 4096);

my $tail = '"session_id":"s","script":"1","blueprint":{"inputs":[]}';
my $big = 'x' x 5000;

$w->add_raw('{"job_id":"dupa","job_id":"dupb",' . $tail . '}');
$w->add_raw('{"job\\u005fid":"dupc","job_id":"dupd",' . $tail . '}');
$w->add_raw('{"job\\u005fid":"dupe","script":"' . $big . '",'
            . '"job_id":"dupf"}');

# a duplicate key elsewhere: answered under the job_id
$w->add_raw('{"job_id":"dupg",' . $tail . ',"script":"2"}');
my $r = $w->wait_result('dupg', 60);
ok($r && $r->{status} eq 'rejected' && $r->{error}{message} =~ /duplicate/
   && $r->{session_id} eq 's',
   'a duplicate key elsewhere: rejected under the job_id')
    or diag explain $r;

# and one written with an escape, of an oversized envelope
$w->add_raw('{"job_id":"duph","script":"' . $big . '","session_id":"s",'
            . '"sessio\\u006e_id":"t"}');
$r = $w->wait_result('duph', 60);
ok($r && $r->{status} eq 'rejected' && $r->{session_id} eq '',
   'a duplicate session_id, one escaped: not taken') or diag explain $r;

my @dead;
for (1 .. 400) {
    @dead = @{$w->redis('XRANGE', 'airlock:jobs:dead', '-', '+')};
    last if @dead >= 3;
    sleep 0.05;
}
my @jobs = map { my %f = @{$_->[1]}; $f{job} } @dead;
ok((grep { /"dupa"/ } @jobs), 'two plain job_ids: dead-lettered')
    or diag explain \@dead;
ok((grep { /"dupc"/ } @jobs), 'two job_ids, one escaped: dead-lettered');
ok((grep { /"dupe"/ } @jobs),
   'the same in an oversized envelope: dead-lettered');
like(join("\n", map { +{ @{$_->[1]} }->{error} } @dead),
     qr/duplicate(?s:.*)duplicate(?s:.*)envelope is 50\d\d bytes/,
     'with the errors');
ok(!grep({ defined $w->redis('GET', "result:dup$_") } qw(a b c d e f)),
   'and no result under any of their ids');

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
