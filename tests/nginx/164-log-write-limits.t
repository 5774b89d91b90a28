#!/usr/bin/perl

# ngx_http_airlock_module: what a file takes in a write().  The usage
# log at the worker's file size limit (RLIMIT_FSIZE, set on the running
# worker with prlimit): a write() past it fails (EFBIG) and the worker
# goes on; no SIGXFSZ kills it (then its replacement, writing the lines
# it left, past the limit too).  The lines wait in the buffer, and once
# the limit is lifted every call has its line once, whole (a write()
# the limit stops half-way leaves its part a line of its own, the start
# of the line written whole later, no other glued to it); lines past a
# full buffer are lost, each said, and those it holds are written with
# no more traffic.  And a FIFO, which takes a write() whole (never mixed
# with another worker's) only up to PIPE_BUF bytes.  Counts of lines
# only.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::LLM;
use Airlock::Prereq qw(absent need_cmd);

BEGIN { $ENV{AIRLOCK_LOG_LEVEL} = 'warn' }

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

need_cmd('prlimit');

# a buffer that holds the calls' lines past the limit
$l->setup(log => ' buffer=64k');
$t->run;

my ($worker) = map { $_->[0] } $t->_workers;

absent('prlimit cannot set the worker\'s file size limit')
    if system('prlimit', '--pid', $worker, '--fsize=16384:unlimited');

plan tests => 14;

my $json = JSON::PP->new->utf8;
my @ids;

# about 330 bytes a line: 120 lines are twice the limit
is($l->chats(120, \@ids), 120, '120 calls past the file size limit');

is(join(' ', map { $_->[0] } $t->_workers), $worker,
   'the worker is still the one that started');
like($t->read_file('error.log') // '', qr/File too large/,
     'the error log says why');

system('prlimit', '--pid', $worker, '--fsize=unlimited');

# the worker tries again a second after a write failed, or with the
# next call; whichever comes first, the lines are then all there

# the decoded lines of a text, and those not JSON but the part of a line
# a write() was stopped in, which stands alone as the start of a line
# written whole
sub sorted {
    my ($text) = @_;
    my (@ok, @raw, @not);

    for (split /\n/, $text) {
        next if $_ eq '';
        my $j = eval { $json->decode($_) };
        if (ref $j eq 'HASH') { push @ok, $j; push @raw, $_ }
        else { push @not, $_ }
    }

    return (\@ok,
            [ grep { my $p = $_; !grep { index($_, $p) == 0 } @raw } @not ]);
}

my ($text, @ok, @bad);
my $deadline = time + 10;

for (;;) {
    $text = $t->read_file('usage.log') // '';
    last if @{(sorted($text))[0]} >= @ids || time > $deadline;
    sleep 0.05;
}

my ($okr, $badr) = sorted($text);
@ok = @$okr;
@bad = @$badr;

my %seen;
$seen{$_->{request_id} // ''}++ for @ok;

is(scalar @bad, 0, 'no line glued, a cut part stands alone')
    or diag explain [ map { substr($_, 0, 120) } @bad ];
is(scalar @ok, scalar @ids, 'one line per call');
is(scalar(grep { !$seen{$_} } @ids), 0, 'every call\'s line');
is(scalar(grep { $_ > 1 } values %seen), 0, 'no line twice');

# a buffer of 4k: calls past the limit fill it and the lines past that
# are lost, each said; the lines it holds are written once the limit is
# lifted, with no more traffic

$t->write_file('nginx.conf',
               $t->read_file('nginx.conf') =~ s/buffer=64k/buffer=4k/r);
$t->reload;

# the new worker: the old one may still be finishing ("shutting down"),
# and gone by the time prlimit looks for it
($worker) = map { $_->[0] } grep { $_->[1] !~ /shutting down/ }
            $t->_workers;

my $size = -s $t->testdir . '/usage.log';
my $offset = length($t->read_file('error.log') // '');

system('prlimit', '--pid', $worker, '--fsize=' . ($size + 1000)
       . ':unlimited');

my @more;
is($l->chats(40, \@more), 40, '40 calls past the limit, a 4k buffer');

my $lost = () = substr($t->read_file('error.log') // '', $offset)
                =~ /a line to "[^"]*usage\.log" is lost/g;
ok($lost > 0 && $lost < 40, 'some lines lost, each said')
    or diag "$lost lost";

system('prlimit', '--pid', $worker, '--fsize=unlimited');

$deadline = time + 10;
for (;;) {
    $text = $t->read_file('usage.log') // '';
    last if @{(sorted($text))[0]} >= @ids + 40 - $lost || time > $deadline;
    sleep 0.05;
}

is(scalar @{(sorted($text))[0]}, @ids + 40 - $lost,
   'the lines the buffer held are written, no more calls');

$t->stop;

is($t->error_log_check(qr/File too large/, qr/a line to .* is lost/,
                       qr/a write\(\) to .* stopped/), '',
   'no other alert or sanitizer report');

# a pipe (a FIFO, a log shipper reading it slowly) takes a write() whole
# only up to PIPE_BUF bytes: four workers write their 64k buffers to it
# in whole lines of at most that much each, and no line is mixed with
# another worker's

my $p = Airlock::Test->new;
my $pl = Airlock::LLM->new($p);
my $pd = $p->testdir;

$pl->setup(log => ' buffer=64k flush=200ms');
unlink "$pd/usage.log";
POSIX::mkfifo("$pd/usage.log", 0644) or die "mkfifo: $!";

# the reader opens the FIFO again when nginx closes it (nginx -t, the
# check of the file's mode): 4k every 20 ms, until told to stop
my $reader = fork // die "fork: $!";

if ($reader == 0) {
    open my $out, '>', "$pd/read.log" or POSIX::_exit(1);
    until (-e "$pd/stop") {
        open my $in, '<', "$pd/usage.log" or POSIX::_exit(1);
        my $buf;
        while (sysread($in, $buf, 4096)) {
            syswrite $out, $buf;
            sleep 0.02;
        }
    }
    POSIX::_exit(0);
}

$p->write_file('nginx.conf',
               $p->read_file('nginx.conf')
               =~ s/worker_processes 1;/worker_processes 4;/r);
$p->run;

my @clients;
for my $k (1 .. 4) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my @i;
        open my $o, '>', "$pd/ids.$k" or POSIX::_exit(1);
        $pl->chats(150, \@i);
        print $o map { "$_\n" } @i;
        close $o;
        POSIX::_exit(0);
    }
    push @clients, $pid;
}
waitpid $_, 0 for @clients;

$p->stop;

# the reader is told to stop, and let go of its open()
$p->write_file('stop', '');
if (open my $w, '>', "$pd/usage.log") { close $w }
waitpid $reader, 0;

my @pids = map { split /\n/, $p->read_file("ids.$_") // '' } 1 .. 4;
$text = $p->read_file('read.log') // '';
(@ok, @bad) = ();
for (split /\n/, $text) {
    my $j = eval { $json->decode($_) };
    if (ref $j eq 'HASH') { push @ok, $j } else { push @bad, $_ }
}
%seen = ();
$seen{$_->{request_id} // ''}++ for @ok;

is(scalar @pids, 600, 'a FIFO: 600 calls from four clients');
is(scalar @bad, 0, 'a FIFO: no line mixed with another')
    or diag scalar(@bad) . ' lines mixed';
is(scalar(grep { !$seen{$_} } @pids), 0, 'a FIFO: every call\'s line');
