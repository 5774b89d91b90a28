#!/usr/bin/perl
# The outbox directory's fsync failing (an I/O error) is said as a
# failure that repeats (ad_fail()): alertd tries it again every second,
# the first failure is an error line, the next comes after 5 s with the
# count, the tries between are debug lines (-v), and one line says when
# it works again.  Meanwhile the position is not saved past what is not
# durable; once the sync works, what was read is delivered and saved.
#
# The failure is made for real: fsync() on STATE/outbox fails with EIO
# through the fault injector (lib/fault.c, LD_PRELOAD) while the test
# holds it on.  Time has to pass (the 5 s before the second error line):
# the test waits for that line, it does not time anything.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $st = $t->state;
my $env = $t->fault('fsync', '/state/outbox', 5);

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'S' x 32));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

$t->alertd_env($env, '--verbose', '--repeat-interval', '1h');

my $a = $t->alert(reason => 'sa');
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'A is delivered');

my $sync = qr/cannot sync \Q$st\E\/outbox: Input\/output error/;
my $over = qr/\binfo: syncing \Q$st\E\/outbox works again, /;

$t->fault_on;
my $b = $t->alert(reason => 'sb');

ok($t->wait_for(sub { $t->alertd_log =~ /\berror: $sync.*still failing/ }),
   'the failure is said again after a while')
    or diag($t->alertd_log);

my $f = $t->failures($sync, $over);
my @l = @{$f->{tries}};
like($l[0], qr/\berror: $sync; the journal position is saved once it works$/,
     'the first failure is an error line, said as the first');
cmp_ok(scalar @l, '>', 2, 'the sync was tried again and again');
$t->said_checks($f, '');

$t->fault_off;

ok($t->log_has($over), 'the sync works again: said once it does')
    or diag($t->alertd_log);

$f = $t->failures($sync, $over);
$t->over_checks($f, '', 'made');

ok($t->wait_for(sub { $t->delivered($r, $b) }),
   'B, written while the sync failed, is delivered');
my $c = $t->alert(reason => 'sc');
ok($t->wait_for(sub { $t->delivered($r, $c) }), 'and C after it');
ok($t->wait_for(sub {
       ($t->saved_state->{offset} // -1) == -s $t->journal
   }), 'the position after C is saved');
is($t->log_count($sync), scalar @{$f->{tries}}, 'no failure since');
is(scalar(grep { $_->{id} eq $a || $_->{id} eq $b } $t->accepted($r)), 2,
   'A and B were each sent once');

$t->done;
