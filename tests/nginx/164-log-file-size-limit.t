#!/usr/bin/perl

# ngx_http_airlock_module: the usage log at the worker's file size limit
# (RLIMIT_FSIZE, set on the running worker with prlimit).  A write() past
# it fails (EFBIG) and the worker goes on: no SIGXFSZ kills it (then its
# replacement, writing the lines it left, past the limit too).  The lines
# wait in the buffer, and once the limit is lifted every call has its
# line once, whole; lines past a full buffer are lost, each said, and
# those it holds are written with no more traffic.  Counts of lines
# only.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
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

plan tests => 11;

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

my ($text, @ok, @bad);
my $deadline = time + 10;

for (;;) {
    $text = $t->read_file('usage.log') // '';
    last if (() = $text =~ /\n/g) >= @ids || time > $deadline;
    sleep 0.05;
}

for (split /\n/, $text) {
    my $j = eval { $json->decode($_) };
    if (ref $j eq 'HASH') { push @ok, $j } else { push @bad, $_ }
}

my %seen;
$seen{$_->{request_id} // ''}++ for @ok;

is(scalar @bad, 0, 'no line cut short or glued')
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
($worker) = map { $_->[0] } $t->_workers;

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
    last if (() = $text =~ /\n/g) >= @ids + 40 - $lost || time > $deadline;
    sleep 0.05;
}

is((() = $text =~ /\n/g), @ids + 40 - $lost,
   'the lines the buffer held are written, no more calls');

$t->stop;

is($t->error_log_check(qr/File too large/, qr/a line to .* is lost/), '',
   'no other alert or sanitizer report');
