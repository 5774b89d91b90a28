#!/usr/bin/perl

# ngx_http_airlock_log: a line a full disk cuts, with several workers
# appending to the file.  The fault injector (fixture/cut-write.c,
# LD_PRELOAD) stops one worker's write() of a usage line half-way, and
# its next write() fails (ENOSPC: the old writer's of the rest of the
# line); a call that another worker logs comes next.  Whatever the writer does with the part left in the
# file, no call loses its line and no good line is glued to the part:
# it stays a line of its own, the start of a line written again whole.
# (The writer once cut the part off with ftruncate() at the size it had
# read: a line another worker appended in between was cut off with it.
# The injector holds the ftruncate() until the other line is in the
# file.)  A part that lacks only the newline is the whole line once
# the next write() ends it: it is not written twice.  airlockctl usage
# counts every call once and skips the part.  No timing: each wait is
# for a file or a line.

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

$t->env(LD_PRELOAD => "$d/cut-write.so", AIRLOCK_CUT => "/usage.log $d");

$l->setup;
$t->write_file('nginx.conf',
               $t->read_file('nginx.conf')
               =~ s/worker_processes 1;/worker_processes 2;/r);
$t->run;

plan tests => 13;

my $json = JSON::PP->new->utf8;

sub wait_for {
    my ($cond) = @_;
    my $deadline = time + 10;
    sleep 0.02 until $cond->() || time > $deadline;
    return $cond->();
}

my @ids;
is($l->chats(3, \@ids), 3, '3 calls');
wait_for(sub { (() = ($t->read_file('usage.log') // '') =~ /\n/g) >= 3 });

# the next write() is cut half-way, the rest refused: the line of the
# next call

$t->write_file('cut-on', '');
is($l->chats(1, \@ids), 1, 'a call whose line is cut');
ok(wait_for(sub { -e "$d/cut-made" }), 'the line was cut');

# a call that the other worker logs while the first is held (in the
# ftruncate() of the old writer, if it makes one)

$l->chats(1, \@ids);
my $other = $ids[-1];
wait_for(sub { index($t->read_file('usage.log') // '', $other) >= 0 });
$t->write_file('go', '');

$l->chats(3, \@ids);

# the cut line is written again (a second later, or with the next call)

sub settle {
    wait_for(sub {
        my %s = map { (eval { $json->decode($_) } // {})->{request_id}
                      // '' => 1 }
                split /\n/, $t->read_file('usage.log') // '';
        !grep { !$s{$_} } @ids;
    });

    my (@ok, @bad, %seen);

    for (split /\n/, $t->read_file('usage.log') // '') {
        next if $_ eq '';
        my $j = eval { $json->decode($_) };
        if (ref $j eq 'HASH') { push @ok, $_; $seen{$j->{request_id} // ''}++ }
        else { push @bad, $_ }
    }

    return (\@ok, \@bad, \%seen);
}

my ($ok, $bad, $seen) = settle();

is(scalar(grep { !$seen->{$_} } @ids), 0, 'every call\'s line is there')
    or diag explain [ grep { !$seen->{$_} } @ids ];
is(scalar(grep { $_ > 1 } values %$seen), 0, 'no line twice');

# a part left is the start of a line written whole: nothing glued to it

my @glued = grep { my $b = $_; !grep { index($_, $b) == 0 } @$ok } @$bad;
is(scalar @glued, 0, 'no good line glued to the part of the cut one')
    or diag explain [ map { substr($_, 0, 200) } @glued ];

# a write() that leaves out only the line's newline

my $parts = @$bad;
unlink "$d/cut-made";
$t->write_file('cut-keep', '1');
$t->write_file('cut-on', '');
is($l->chats(1, \@ids), 1, 'a call whose line lacks its newline');
ok(wait_for(sub { -e "$d/cut-made" }), 'the newline was cut');
$l->chats(2, \@ids);

($ok, $bad, $seen) = settle();

is(scalar(grep { !$seen->{$_} } @ids), 0, 'every call\'s line is there');
is(scalar(grep { $_ > 1 } values %$seen), 0,
   'no line twice: the newline to come ends the line');
is(scalar @$bad, $parts, 'no part more');

# airlockctl usage: every call counted, the part skipped

my $ctl = "$t->{build}/airlockctl";
my $report = `\Q$ctl\E usage \Q$d/usage.log\E 2>&1`;
like($report, qr/^lines: \d+ read, ${\ scalar @ids} counted, $parts skipped$/m,
     'airlockctl usage counts each call once, skips the part')
    or diag $report;

$t->stop;

is($t->error_log_check(qr/No space left on device/,
                       qr/a write\(\) to .* stopped|a line is cut short/),
   '', 'no other alert or sanitizer report');
