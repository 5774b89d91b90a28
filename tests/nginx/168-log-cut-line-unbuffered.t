#!/usr/bin/perl

# ngx_http_airlock_log: a line a full disk cuts in a file without a
# buffer (the journal without buffer=), with two workers appending to
# it.  The fault injector (fixture/cut-write.c, LD_PRELOAD) stops one
# worker's write() of a deny line half-way, and its next write() fails
# (ENOSPC: the old writer's of the rest of the line); a denial that the
# other worker logs comes next.  The
# cut line is lost, with an alert (a file without a buffer keeps no
# line); every other denial's line is there once, whole, none glued to
# the part.  (The writer once cut the part off with ftruncate() at the
# size it had read, and the other worker's line with it: the injector
# holds the ftruncate() until that line is in the file.)  No timing:
# each wait is for a file or a line.

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

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
my $d = $t->testdir;

need_cmd('cc');
my $src = "$FindBin::Bin/fixture/cut-write.c";
my $cmd = "cc -shared -fPIC -O2 -Wall -Werror -o \Q$d/cut-write.so\E "
          . "\Q$src\E -ldl 2>&1";
my $out = `$cmd`;
absent("cannot build $src: $out") if $?;

$t->env(LD_PRELOAD => "$d/cut-write.so", AIRLOCK_CUT => "/journal.log $d");

$l->setup(http => "airlock_journal %%TESTDIR%%/journal.log;");
$t->write_file('nginx.conf',
               $t->read_file('nginx.conf')
               =~ s/worker_processes 1;/worker_processes 2;/r);
$t->run;

plan tests => 7;

my $json = JSON::PP->new->utf8;

sub wait_for {
    my ($cond) = @_;
    my $deadline = time + 10;
    sleep 0.02 until $cond->() || time > $deadline;
    return $cond->();
}

# a denial: its request id
sub deny {
    my $r = $l->chat(token => $l->token('agent'), model => 'gpt-nope');
    return $r->{status} == 403 ? $r->{headers}{'x-request-id'} // '' : '';
}

sub journal { $t->read_file('journal.log') // '' }

my @ids = map { deny() } 1 .. 3;
is(scalar(grep { length } @ids), 3, '3 denials');
wait_for(sub { (() = journal() =~ /\n/g) >= 3 });

$t->write_file('cut-on', '');
my $cut = deny();
ok(wait_for(sub { -e "$d/cut-made" }), 'a denial whose line is cut');

# a denial that the other worker logs while the first is held (in the
# ftruncate() of the old writer, if it makes one)

push @ids, deny();
wait_for(sub { index(journal(), $ids[-1]) >= 0 });
$t->write_file('go', '');

push @ids, map { deny() } 1 .. 3;
wait_for(sub { index(journal(), $ids[-1]) >= 0 });

my (@bad, %seen);

for (split /\n/, journal()) {
    next if $_ eq '';
    my $j = eval { $json->decode($_) };
    if (ref $j eq 'HASH') { $seen{$j->{request_id} // ''}++ }
    else { push @bad, $_ }
}

is(scalar(grep { !$seen{$_} } @ids), 0,
   'every other denial\'s line is there')
    or diag explain [ grep { !$seen{$_} } @ids ];
is(scalar(grep { $_ > 1 } values %seen), 0, 'no line twice');
ok(!$seen{$cut}, 'the cut line is lost');
is(scalar(grep { my $b = $_; grep { index($b, $_) >= 0 } @ids } @bad), 0,
   'no other line glued to the part')
    or diag explain [ map { substr($_, 0, 200) } @bad ];

$t->stop;

like($t->read_file('error.log') // '',
     qr/a line to "[^"]*journal\.log" is lost/, 'the loss is said');
