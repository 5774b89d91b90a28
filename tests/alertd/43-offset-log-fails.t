#!/usr/bin/perl
# Appending to STATE/offset.log, or emptying it after a snapshot, failing
# (a full disk, an I/O error) is said as a failure that repeats
# (ad_fail()): the first failure is a warning line, the next comes after
# 5 s with the count, the saves between are debug lines (-v), and one
# line says when it works again.  Each failed append is a snapshot
# instead, and while the log cannot be emptied every save is one: the
# position is saved all along, and every alert is delivered.
#
# The failures are made for real, through the fault injector
# (lib/fault.c, LD_PRELOAD) while the test holds it on: write() to
# offset.log fails with ENOSPC, then in a second directory ftruncate()
# of it fails with EIO.  A save comes of a change: the test writes an
# alert, each of its own group, waits for its save to be tried, and
# writes the next, until the failure is said again (the 5 s have to
# pass: the test waits for that line, it times nothing).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest qw(uniq);
use Test::More;
use Time::HiRes qw(sleep);

sub run {
    my ($name, $call, $errno, $re, $over) = @_;
    my $t = AlertdTest->new;
    my $st = $t->state;
    my $env = $t->fault($call, '/state/offset.log', $errno);
    my $fail = $re->($st);
    my $works = $over->($st);

    my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'L' x 32));
    $t->policy({ webhook => $r->{url}, secret => 'hook' });

    my $saved = sub {
        (eval { $t->saved_state->{offset} } // -1) == -s $t->journal
    };
    my @run = ('--verbose', '--repeat-interval', '1h');
    $t->alertd_env($env, @run);

    my @ids = ($t->alert(reason => "$name-0"));
    ok($t->wait_for(sub { $t->delivered($r, @ids) }),
       "$name: the first alert is delivered");
    ok($t->wait_for($saved), "$name: its position is saved");

    # after a restart the first save is a snapshot, which empties the
    # log, and the next ones are appended to it
    is($t->stop($t->alertd_pid) >> 8, 0, "$name: stopped");
    $t->fault_on;
    $t->alertd_env($env, @run);

    my $said = sub { $t->alertd_log =~ /\bwarning: $fail.*still failing/ };
    for (my $i = 1; !$said->() && $i < 300; $i++) {
        push @ids, $t->alert(reason => "$name-$i");
        $t->wait_for($saved) or last;
        sleep 0.1;
    }

    ok($said->(), "$name: the failure is said again after a while")
        or diag($t->alertd_log);

    my $f = $t->failures($fail, $works);
    my @l = @{$f->{tries}};
    like($l[0] // '', qr/\bwarning: $fail$/,
         "$name: the first failure is a warning line, said as the first");
    cmp_ok(scalar @l, '>', 2, "$name: tried again and again");
    $t->said_checks($f, "$name: ");
    ok($t->wait_for($saved),
       "$name: the position is saved meanwhile, in a snapshot");

    $t->fault_off;
    push @ids, $t->alert(reason => "$name-after");

    ok($t->log_has($works), "$name: it works again: said once it does")
        or diag($t->alertd_log);

    $f = $t->failures($fail, $works);
    $t->over_checks($f, "$name: ", 'made');

    # a save after the recovery: appended to the log, which was emptied
    push @ids, $t->alert(reason => "$name-last");
    ok($t->wait_for(sub { $t->delivered($r, @ids) }),
       "$name: every alert (" . scalar(@ids) . ') is delivered');
    ok($t->wait_for($saved),
       "$name: the position after the last one is saved");
    like($t->read_file("$st/offset.log"), qr/\A(?:\{[^\n]*\}\n)+\z/,
         "$name: ... in lines of offset.log");
    is($t->log_count($fail), scalar @{$f->{tries}},
       "$name: no failure since");
    is(scalar(uniq(map { $_->{id} } $t->accepted($r))),
       scalar($t->accepted($r)), "$name: none was sent twice");

    $t->done_logs;
}

run('append', 'write', 28,
    sub { qr/cannot append to \Q$_[0]\E\/offset.log: No space left on device; writing a snapshot instead/ },
    sub { qr/\binfo: appending to \Q$_[0]\E\/offset.log works again, / });

run('empty', 'ftruncate', 5,
    sub { qr/cannot empty \Q$_[0]\E\/offset.log: Input\/output error; the next save writes a snapshot again/ },
    sub { qr/\binfo: emptying \Q$_[0]\E\/offset.log works again, / });

done_testing;
