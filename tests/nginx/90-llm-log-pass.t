#!/usr/bin/perl

# ngx_http_airlock_llm_module: the usage log without buffer= (the
# default).  A call's line is in the file as soon as the pass of the
# worker's event loop its call ended in is over, with no further traffic;
# the lines of calls that end in the same pass are written with one
# write(), not one each.  A log that buffers the same file its own way (the
# usage log with buffer=, the journal) decides for the file, in whichever
# order the directives come; so does an access_log with buffer=.
#
# Calls made to end in one pass: the worker is stopped (SIGSTOP) while
# what ends them reaches it, and continued.  Its write() calls to the
# usage log are counted by strace (-y names each call's file), with the
# error log at "warn" so that it writes nothing: a count of all its
# writes (/proc/PID/io's syscw) also took its answers to the clients,
# one of which a loaded machine may send in two.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::LLM;
use Airlock::Prereq qw(absent need_cmd);

BEGIN { $ENV{AIRLOCK_LOG_LEVEL} = 'warn' }

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
my $d = $t->testdir;

need_cmd('strace');

$l->setup;
$t->run;

plan tests => 15;

my $agent = $l->token('agent');

# one call, then nothing

my $r = $l->chat(token => $agent);
is($r->{status}, 200, 'a call');
my $u = $l->last_usage(1);
is($u->{request_id} // '', $r->{headers}{'x-request-id'} // 'none',
   'its line is in the file with no further traffic');

my ($worker) = map { $_->[0] } $t->_workers;

# traces the worker's writes into FILE until the returned sub is called;
# that sub returns how many were to the usage log
sub trace_writes {
    my ($file) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(STDERR, '>', "$file.err");
        exec('strace', '-qq', '-y', '-o', $file, '-p', $worker,
             '-e', 'trace=write,writev,pwrite64,pwritev,pwritev2')
            or POSIX::_exit(127);
    }
    my $deadline = time + 10;
    while (time < $deadline) {
        my $st = Airlock::Test::_slurp("/proc/$worker/status") // '';
        last if $st =~ /^TracerPid:\s*[1-9]/m;
        sleep 0.02;
    }
    return sub {
        kill 'INT', $pid;
        waitpid($pid, 0);
        my $out = Airlock::Test::_slurp($file) // '';
        return scalar(() = $out =~ m{^\w+\(\d+</\S*/usage\.log>}mg);
    };
}

# $n calls made to end in one pass: the provider holds its answers until
# the worker is stopped, and they reach it while it is; the clients
# close their connections (where nginx, after a "Connection: close"
# answer, may finish the request and log it) while it is stopped again.
# Returns the worker's write() calls from the first SIGCONT until every
# line is in the file, and the calls' request ids.

# the connections to 127.0.0.1:$port, established or closed by the peer,
# with bytes waiting in their receive queue (/proc/net/tcp: the worker's
# side of its upstream connections)
sub queued {
    my ($port) = @_;
    open(my $fh, '<', '/proc/net/tcp') or return 1 << 30;
    my $n = 0;
    while (<$fh>) {
        my @f = split;
        next unless ($f[2] // '') eq sprintf('0100007F:%04X', $port)
                    && ($f[3] eq '01' || $f[3] eq '08');
        my (undef, $rx) = split /:/, $f[4];
        $n++ if hex $rx > 0;
    }
    return $n;
}

my $round = 0;

sub held {
    my ($n) = @_;
    my $before = () = $l->provider_requests;
    my $go = "$d/go." . ++$round;
    my @kids;

    $l->script_all({ wait_file => "$d/answer.$round",
                     sent_file => "$d/sent.$round" });

    for my $k (1 .. $n) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                          PeerPort => $t->port(8080),
                                          Proto => 'tcp', Timeout => 5)
                or POSIX::_exit(1);
            my $c = $l->chat(token => $agent, http => { socket => $s });
            open(my $fh, '>', "$d/held.$round.$k.tmp") or POSIX::_exit(1);
            print $fh $c->{status} == 200 ? $c->{headers}{'x-request-id'}
                                          : 'failed';
            close $fh;
            rename "$d/held.$round.$k.tmp", "$d/held.$round.$k";
            my $until = time + 20;
            sleep 0.02 while !-e $go && time < $until;
            close $s;
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }

    my $deadline = time + 10;
    while (time < $deadline) {
        my $got = () = $l->provider_requests;
        last if $got >= $before + $n;
        sleep 0.02;
    }

    # the answers are sent while the worker is stopped: they are in its
    # sockets, all of them, when it goes on
    kill 'STOP', $worker;
    $t->write_file("answer.$round", '');
    $deadline = time + 30;
    while (time < $deadline) {
        my $sent = () = ($t->read_file("sent.$round") // '') =~ /\n/g;
        last if $sent >= $n;
        sleep 0.02;
    }
    # and in the worker's sockets: loopback hands them over in a softirq,
    # which a loaded machine may defer past the provider's send()
    $deadline = time + 10;
    sleep 0.02 while queued($t->port(8081)) < $n && time < $deadline;
    my $writes = trace_writes("$d/strace.$round");
    kill 'CONT', $worker;

    $deadline = time + 10;
    sleep 0.02 while grep({ !-e "$d/held.$round.$_" } 1 .. $n)
                     && time < $deadline;

    kill 'STOP', $worker;
    $t->write_file("go.$round", '');
    waitpid($_, 0) for @kids;
    sleep 0.2;
    kill 'CONT', $worker;

    $l->script;

    my @ids = map { $t->read_file("held.$round.$_") // 'failed' } 1 .. $n;
    my %want = map { $_ => 1 } @ids;

    $deadline = time + 5;
    while (time < $deadline) {
        my %in = map { ($_->{request_id} // '') => 1 } $l->usage_log;
        last unless grep { !$in{$_} } keys %want;
        sleep 0.05;
    }

    return ($writes->(), @ids);
}

my ($one, @id1) = held(1);
my ($eight, @id8) = held(8);

is(scalar(grep { $_ eq 'failed' } @id1, @id8), 0, 'every held call: 200');

my @lines = $l->usage_log;
my %seen;
$seen{$_->{request_id} // ''}++ for @lines;
is(scalar(grep { ($seen{$_} // 0) != 1 } @id1, @id8), 0,
   'every held call has its line, once');
is(scalar @lines, 10, 'ten calls, ten lines');

is($one, 1, 'a call alone: its usage line in one write()');
is($eight, 1, 'eight calls ending in one pass: their lines in one write()')
    or diag "one call: $one write()s; eight together: $eight";

$t->stop;
is($t->error_log_check, '', 'no alerts in the error log');

# a log that buffers the file its own way decides for it, before or after

sub accepted {
    my ($what, %o) = @_;
    $t->write_file_expand('nginx.conf', $l->conf(%o));
    my ($status, $out) = $t->reload_test;
    is($status, 0, "$what: accepted") or diag $out;
}

accepted('buffer= in a location, after the default at http',
         location => "airlock_llm_log $d/usage.log buffer=8k flush=1s;");
accepted('buffer= at http, the default in a location',
         log => ' buffer=8k flush=1s',
         location => "airlock_llm_log $d/usage.log;");
accepted('the journal buffering the file',
         http => "airlock_journal $d/usage.log buffer=8k flush=2s;");
accepted('the journal naming the file without a buffer',
         http => "airlock_journal $d/usage.log;");
accepted('an access_log buffering the file',
         http => "access_log $d/usage.log combined buffer=8k;");

# and then it is that log's buffer: lines a flush= later

$t->write_file_expand('nginx.conf', $l->conf(
    location => "airlock_llm_log $d/usage.log;",
    http => "airlock_journal $d/usage.log buffer=8k flush=2s;"));
$t->run;

$r = $l->chat(token => $agent);
my $id = $r->{headers}{'x-request-id'} // 'none';
sleep 0.5;
ok(!grep({ ($_->{request_id} // '') eq $id } $l->usage_log),
   'under the journal\'s flush=2s: not yet in the file after 0.5s');
$u = $l->last_usage(11);
is($u->{request_id} // '', $id, 'in the file within the flush time');
