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
use Time::Local ();
use Airlock::Test;
use Airlock::LLM;
use Airlock::Prereq qw(absent need_cmd);

BEGIN { $ENV{AIRLOCK_LOG_LEVEL} = 'warn' }

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
my $d = $t->testdir;

# the bound of every wait for a condition: long, as it is only reached
# when the condition never holds
my $WAIT = 60;

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
    my $deadline = time + $WAIT;
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
#
# Each step waits for what it needs, not for a time: the worker stopped
# (SIGSTOP takes effect when it next runs, and an epoll_wait() it returns
# from before then has already taken the events that were ready), every
# answer whole in the worker's receive queue (the provider writes the
# headers and the body with two send()s, and loopback hands each over in
# a softirq that a loaded machine may defer past the send()), and every
# client's FIN in the worker's socket.

# stops the worker, and waits until it is stopped
sub stop_worker {
    kill 'STOP', $worker;
    my $deadline = time + $WAIT;
    while (time < $deadline) {
        my $st = Airlock::Test::_slurp("/proc/$worker/stat") // '';
        return 1 if $st =~ /\)\s+[Tt]\s/;
        sleep 0.01;
    }
    diag "the worker did not stop";
    return 0;
}

# /proc/net/tcp's sockets to 127.0.0.1:$port: local port => [ state,
# bytes in the receive queue ]
sub sockets {
    my ($port) = @_;
    my %s;
    open(my $fh, '<', '/proc/net/tcp') or return %s;
    while (<$fh>) {
        my @f = split;
        next unless ($f[1] // '') =~ /^0100007F:([0-9A-F]{4})$/;
        my $local = hex $1;
        next unless ($f[2] // '') eq sprintf('0100007F:%04X', $port);
        my (undef, $rx) = split /:/, $f[4];
        $s{$local} = [ $f[3], hex $rx ];
    }
    return %s;
}

# how many of the answers ({ the worker's port => bytes }) are whole in
# the receive queues of the worker's upstream connections (established,
# or closed by the provider after the answer: its FIN counts one more)
sub answers_queued {
    my ($want) = @_;
    my %s = sockets($t->port(8081));
    return scalar grep {
        my $q = $s{$_};
        $q && ($q->[0] eq '01' || $q->[0] eq '08') && $q->[1] >= $want->{$_}
    } keys %$want;
}

# how many of the clients' connections (their ports) are still open in
# the worker: established, their FIN not in yet
sub clients_open {
    my (@ports) = @_;
    my $p8080 = $t->port(8080);
    my $n = 0;
    open(my $fh, '<', '/proc/net/tcp') or return scalar @ports;
    my %want = map { sprintf('0100007F:%04X', $_) => 1 } @ports;
    while (<$fh>) {
        my @f = split;
        $n++ if ($f[1] // '') eq sprintf('0100007F:%04X', $p8080)
                && $want{$f[2] // ''} && $f[3] eq '01';
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
                                          Proto => 'tcp', Timeout => $WAIT)
                or POSIX::_exit(1);
            my $c = $l->chat(token => $agent, http => { socket => $s });
            open(my $fh, '>', "$d/held.$round.$k.tmp") or POSIX::_exit(1);
            print $fh $c->{status} == 200 ? $c->{headers}{'x-request-id'}
                                          : 'failed';
            print $fh ' ', $s->sockport;
            close $fh;
            rename "$d/held.$round.$k.tmp", "$d/held.$round.$k";
            my $until = time + 2 * $WAIT;
            sleep 0.02 while !-e $go && time < $until;
            close $s;
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }

    my $deadline = time + $WAIT;
    while (time < $deadline) {
        my $got = () = $l->provider_requests;
        last if $got >= $before + $n;
        sleep 0.02;
    }

    # the answers are sent while the worker is stopped: they are in its
    # sockets, all of them and whole, when it goes on
    stop_worker();
    $t->write_file("answer.$round", '');
    my %answer;
    $deadline = time + $WAIT;
    while (time < $deadline) {
        %answer = map { /^sent (\d+) (\d+)$/ ? ($1 => $2) : () }
                  split /\n/, $t->read_file("sent.$round") // '';
        last if keys %answer >= $n && answers_queued(\%answer) >= $n;
        sleep 0.02;
    }
    diag "answers whole in the worker's sockets: "
         . answers_queued(\%answer) . " of $n"
        if answers_queued(\%answer) < $n;
    my $writes = trace_writes("$d/strace.$round");
    kill 'CONT', $worker;

    $deadline = time + $WAIT;
    sleep 0.02 while grep({ !-e "$d/held.$round.$_" } 1 .. $n)
                     && time < $deadline;

    my @held = map { $t->read_file("held.$round.$_") // 'failed 0' } 1 .. $n;
    my @ids = map { (split / /)[0] } @held;
    my @ports = map { (split / /)[1] // 0 } @held;

    # the clients close while the worker is stopped: their FINs are in
    # its sockets when it goes on
    stop_worker();
    $t->write_file("go.$round", '');
    waitpid($_, 0) for @kids;
    $deadline = time + $WAIT;
    sleep 0.02 while clients_open(@ports) && time < $deadline;
    kill 'CONT', $worker;

    $l->script;

    my %want = map { $_ => 1 } @ids;

    $deadline = time + $WAIT;
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

# no guess at when the flush is due: the line, once there, tells when its
# call ended, and the file when it was last written (the write that
# brought the line: nothing else is written to it meanwhile)
my ($line, $mtime);
my $deadline = time + $WAIT;
while (time < $deadline) {
    ($line) = grep { ($_->{request_id} // '') eq $id } $l->usage_log;
    last if $line;
    sleep 0.05;
}
$mtime = (Time::HiRes::stat("$d/usage.log"))[9] if $line;

# "2026-12-07T04:07:49.327Z"
sub wall {
    my ($iso) = @_;
    return undef unless ($iso // '') =~
        /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z$/;
    return Time::Local::timegm($6, $5, $4, $3, $2 - 1, $1) + ($7 // 0);
}

# 2s after the line's time, less the coarser clock of a file's times
my $ended = wall($line && $line->{time});
ok(defined $mtime && defined $ended && $mtime >= $ended + 1.9,
   'under the journal\'s flush=2s: not yet in the file before 2s after '
   . 'the call')
    or diag sprintf('the call ended at %s, its line written at %.3f',
                    $line ? $line->{time} // 'no time' : 'no line',
                    $mtime // 0);
is($line && $line->{request_id}, $id,
   'in the file after the flush time, with no further traffic');
