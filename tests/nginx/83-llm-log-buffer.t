#!/usr/bin/perl

# ngx_http_airlock_llm_module: a buffered usage log (airlock_llm_log FILE
# buffer=SIZE).  The lines of the calls that end in one pass of the
# worker's event loop are written together at the end of that pass: a line
# is in the file as soon as its call is over, without more traffic and
# without a timer; none is lost or cut when many calls end together, on
# USR1 or when nginx stops.  Bad parameters are refused with a clear
# message.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
my $d = $t->testdir;

$l->setup(log => ' buffer=8k');

$t->run;

plan tests => 25;

my $agent = $l->token('agent');

# one call, then nothing: its line is written when its pass ends

my $r = $l->chat(token => $agent);
is($r->{status}, 200, 'a call');

my $u = $l->last_usage(1);
is($u->{request_id} // '', $r->{headers}{'x-request-id'},
   'its line is in the file with no further traffic');
is($u->{total_tokens}, $r->{json}{usage}{total_tokens},
   'the line counts the call');

# many calls at once, each process with its own connection; the lines of
# one pass (8k: about 20 lines) fill the buffer now and then

my ($procs, $each) = (8, 25);
my @ids = ($r->{headers}{'x-request-id'});

sub burst {
    my ($file) = @_;
    my @kids;

    for my $k (1 .. $procs) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            my @got;
            for (1 .. $each) {
                my $c = $l->chat(token => $agent);
                push @got, ($c->{status} == 200
                            ? $c->{headers}{'x-request-id'} : 'failed');
            }
            open(my $fh, '>', "$d/$file.$k") or POSIX::_exit(1);
            print $fh map { "$_\n" } @got;
            close $fh;
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }

    waitpid($_, 0) for @kids;

    my @got;
    for my $k (1 .. $procs) {
        push @got, grep { length } split /\n/,
                   $t->read_file("$file.$k") // '';
    }
    return @got;
}

push @ids, burst('burst1');
is(scalar(grep { $_ eq 'failed' } @ids), 0, 'every call of the burst: 200');

my $want = 1 + $procs * $each;

sub lines {
    my @files = @_;
    my $deadline = time + 10;
    my @l;

    for (;;) {
        @l = map { split /\n/, $t->read_file($_) // '' } @files;
        last if @l >= $want || time > $deadline;
        sleep 0.05;
    }
    return @l;
}

my @lines = lines('usage.log');
is(scalar @lines, $want, "$want lines, one per call");
is(scalar(grep { !defined jdecode($_) } @lines), 0,
   'every line whole JSON');

my %seen = map { (jdecode($_) // {})->{request_id} // '' => 1 } @lines;
is(scalar(grep { !$seen{$_} } @ids), 0,
   'every answer\'s x-request-id has its line');
is(scalar keys %seen, $want, 'no line twice');

# rotation: USR1 writes what is buffered to the old file and reopens it;
# a burst around it loses nothing

rename "$d/usage.log", "$d/usage.log.1" or die "rename: $!";

my $kid = fork // die "fork: $!";
if ($kid == 0) {
    sleep 0.05;
    kill 'USR1', $t->nginx_pid;
    POSIX::_exit(0);
}

my @ids2 = burst('burst2');
waitpid($kid, 0);

# the worker reopens the file a moment after the master; a call after
# that is in the new file.  Every call made while waiting for it has its
# line too (in either file, perhaps a moment after its answer): each one
# is counted.
my $until = time + 10;
my $last;
while (time < $until) {
    $last = $l->chat(token => $agent);
    push @ids2, $last->{headers}{'x-request-id'} // 'failed';
    last if ($t->read_file('usage.log') // '') =~
            /\Q$last->{headers}{'x-request-id'}\E/;
    sleep 0.1;
}
ok(-e "$d/usage.log", 'the new file is there after USR1');

$want += @ids2;
@lines = lines('usage.log.1', 'usage.log');
is(scalar @lines, $want, 'across the rotation: one line per call');
is(scalar(grep { !defined jdecode($_) } @lines), 0,
   'across the rotation: every line whole JSON');
%seen = map { (jdecode($_) // {})->{request_id} // '' => 1 } @lines;
is(scalar(grep { !$seen{$_} } @ids2), 0,
   'across the rotation: every call has its line');
is(scalar keys %seen, $want, 'across the rotation: no line twice');

# stop: nothing is left behind

for (1 .. 3) {
    $l->chat(token => $agent);
}
$want += 3;
$t->stop;
is($t->error_log_check, '', 'no alerts in the error log');
@lines = map { split /\n/, $t->read_file($_) // '' }
         qw(usage.log.1 usage.log);
is(scalar @lines, $want, 'after stop: every line written');

# configuration

sub conf_error {
    my ($log, $what) = @_;
    $t->write_file_expand('nginx.conf', $l->conf(log => $log));
    my ($status, $out) = $t->reload_test;
    isnt($status, 0, "$what: refused");
    return $out;
}

like(conf_error(' buffer=1k', 'buffer=1k'),
     qr/invalid buffer size "1k" \(at least 4k\)/, 'buffer=1k: message');
like(conf_error(' buffer=64k flush=0', 'flush=0'),
     qr/invalid flush time "0"/, 'flush=0: message');
like(conf_error(' flush=1s', 'flush= without buffer='),
     qr/flush= needs buffer=/, 'flush= without buffer=: message');
like(conf_error(' buffer=64k size=1', 'an unknown parameter'),
     qr/invalid parameter "size=1"/, 'an unknown parameter: message');

$t->write_file_expand('nginx.conf',
    $l->conf(log => ' buffer=64k',
             http => "airlock_journal $d/usage.log buffer=64k flush=1s;"));
my ($status, $out) = $t->reload_test;
like($out, qr/is buffered by another log using the same file/,
     'the journal buffering the same file: refused');

# the same file buffered alike in another context is one buffer
$t->write_file_expand('nginx.conf',
    $l->conf(log => ' buffer=64k',
             location => "airlock_llm_log $d/usage.log buffer=64k;"));
($status, $out) = $t->reload_test;
is($status, 0, 'the same file, the same buffer, twice: accepted')
    or diag $out;
