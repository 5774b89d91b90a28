#!/usr/bin/perl
# A journal read failing (an I/O error) is said as a failure that
# repeats (ad_fail()): alertd reads again at every wake-up and poll, the
# first failure is an error line, the next comes after 5 s with the
# count, the tries between are debug lines (-v), and one line says when
# reading works again.  Nothing written meanwhile is lost: it is read
# from where alertd was, and delivered.
#
# The failure is made for real: pread() on the journal fails with EIO
# through the fault injector (lib/fault.c, LD_PRELOAD) while the test
# holds it on.  Time has to pass (the 5 s before the second error line):
# the test waits for that line, it does not time anything.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest qw(uniq);
use Test::More;

my $t = AlertdTest->new;
my $j = $t->journal;
my $env = $t->fault('pread', '/journal/airlock.journal', 5);

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'R' x 32));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

$t->alertd_env($env, '--verbose', '--repeat-interval', '1h',
               '--poll-interval', '1s');

my $a = $t->alert(reason => 'ra');
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'A is delivered');
my $at = -s $j;

my $read = qr/reading journal \Q$j\E at offset (\d+): Input\/output error/;
my $over = qr/\binfo: reading journal \Q$j\E works again, /;

$t->fault_on;
my $b = $t->alert(reason => 'rb');

ok($t->wait_for(sub { $t->alertd_log =~ /\berror: $read.*still failing/ }),
   'the failure is said again after a while')
    or diag($t->alertd_log);

my $f = $t->failures($read, $over);
my @l = @{$f->{tries}};
like($l[0], qr/\berror: $read$/, 'the first failure is an error line, '
     . 'said as the first');
is(join(',', uniq(map { /$read/ } @l)), $at,
   '... at the offset after A, each time');
cmp_ok(scalar @l, '>', 2, 'the read was tried again and again');
$t->said_checks($f, '');
ok(!$t->delivered($r, $b), 'B is not read meanwhile');

$t->fault_off;

ok($t->log_has($over), 'reading works again: said once it does')
    or diag($t->alertd_log);

$f = $t->failures($read, $over);
$t->over_checks($f, '', 'made');

ok($t->wait_for(sub { $t->delivered($r, $b) }),
   'B, written while reads failed, is delivered');
my $c = $t->alert(reason => 'rc');
ok($t->wait_for(sub { $t->delivered($r, $c) }), 'and C after it');
ok($t->wait_for(sub {
       ($t->saved_state->{offset} // -1) == -s $j
   }), 'the position after C is saved');
is($t->log_count($read), scalar @{$f->{tries}}, 'no failure since');
is(join(',', map { my $id = $_; scalar grep { $_->{id} eq $id }
                   $t->accepted($r) } $a, $b, $c),
   '1,1,1', 'A, B and C were each sent once');

$t->done;
