#!/usr/bin/perl

# Names a model writes never name a file: an input's name is a key of
# data.json, the job_id a Redis key, and the files of a job are the
# worker's own (code/script.py, data/data.json) in a directory named by
# the worker.  Names with a path in them ("../", absolute), a newline,
# no character or too many are refused before anything is written, each
# answered under its job_id when that one is valid; an envelope with a
# NUL (\u0000) anywhere is not parsed (invalid JSON, answered under its
# job_id only when that is written without an escape, docs/jobs.md),
# so a NUL never cuts a job_id short into another job's
# ("victim\u0000x" is not "victim").  Coverage: this held before the
# test was written.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
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

my $dir = $t->testdir;
my @names = ('../../../escape', '/tmp/escape', "a\x00../escape", '',
             'x' x 65, '.', '..', 'a/b', "a\nb", 'a b');

plan tests => @names + 7;

# what is there once a job has run: the workdir's own directories
$w->run_job(job_id => 'warm', script => 'print(1)');
my %before = map { $_ => 1 } glob("$dir/* $dir/work/*");

my $n = 0;
for my $name (@names) {
    my $id = 'in' . $n++;
    $w->add_job(job_id => $id, script => 'print(1)',
        blueprint => { inputs => [ { name => $name, route => 'logs',
                                     params => { service => 'api' } } ] });
    $w->add_job(job_id => "$id-mark", script => 'print(1)');
    $w->wait_result("$id-mark");
    my $r = $w->result($id);
    (my $shown = $name) =~ s/([^\x20-\x7e])/sprintf '\\x%02x', ord $1/ge;

    # JSON with \u0000 is refused whole (jansson's rule), answered
    # under its job_id, which has no escape
    if ($name =~ /\x00/) {
        ok($r && $r->{status} eq 'rejected'
           && $r->{error}{code} eq 'bad_envelope'
           && $r->{error}{message} =~ /^invalid JSON .*JSON_ALLOW_NUL/,
           "input name \"$shown\": the envelope refused as invalid JSON")
            or diag explain $r;
        next;
    }

    ok($r && $r->{status} eq 'rejected'
       && $r->{error}{code} eq 'bad_envelope'
       && $r->{error}{message} =~ /inputs\[0\]\.name must be 1 to 64/,
       "input name \"$shown\" refused") or diag explain $r;
}

# the same names as job_id: never a result but under a valid one (one
# worker takes the entries in order: the mark's result comes last)
for my $name (@names) {
    $w->add_raw(JSON::PP->new->canonical->encode({
        job_id => $name, session_id => 's', script => 'print(1)',
        blueprint => { inputs => [] } }));
}
$w->add_job(job_id => 'mark', script => 'print(1)');
$w->wait_result('mark');
is(join(' ', grep { $_ !~ /^result:(in\d+(-mark)?|mark|warm)$/ }
                  @{$w->redis('KEYS', 'result:*') // []}), '',
   'a job_id with a path, a NUL, no character or too many: no result');
is(scalar @{$w->redis('XRANGE', 'airlock:jobs:dead', '-', '+') // []},
   scalar @names, 'each dead-lettered');

# a NUL does not make a job_id another job's
my $r = $w->run_job(job_id => 'victim', script => 'print("mine")');
is($r && $r->{stdout}, "mine\n", 'the victim job ran');
$w->add_raw('{"job_id":"victim\u0000x","session_id":"s",'
            . '"script":"print(\"theirs\")","blueprint":{"inputs":[]}}');
$w->add_job(job_id => 'after', script => 'print(1)');
$w->wait_result('after');
$r = $w->result('victim');
is($r && $r->{stdout}, "mine\n", "victim's result is still its own");

my @new = grep { !$before{$_} } glob("$dir/* $dir/work/*");
is(join(' ', @new), '', 'no file made beside the workdir');
ok(!-e '/tmp/escape' && !-e "$dir/escape" && !-e "$dir/work/escape",
   'nothing written where a name pointed');
is(join(' ', $w->leftovers), '', 'nothing left on the host');
