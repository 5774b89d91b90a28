#!/usr/bin/perl
# A failure that repeats (ad_fail()) and changes its cause meanwhile: the
# first try of a cause not said yet since the failure began is said at
# once, with the counts, not left for the next line 5 s to 5 minutes
# later; a cause said already is not said again at once, so two causes
# that take turns are not a line a try.
#
# The failure is made for real: fsync() on STATE/outbox fails through
# the fault injector (lib/fault.c), first with EIO, then ENOSPC, then EIO
# again.  The test waits for lines; it times nothing.

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

my $a = $t->alert(reason => 'na');
ok($t->wait_for(sub { $t->delivered($r, $a) }), 'A is delivered');

my $sync = qr/cannot sync \Q$st\E\/outbox: /;
my $eio = qr/cannot sync \Q$st\E\/outbox: Input\/output error/;
my $full = qr/cannot sync \Q$st\E\/outbox: No space left on device/;
my $over = qr/\binfo: syncing \Q$st\E\/outbox works again, /;

$t->fault_on;
my $b = $t->alert(reason => 'nb');

# an I/O error, said, then tried again
ok($t->wait_for(sub { $t->log_count($eio) >= 2 }), 'the sync fails, twice')
    or diag($t->alertd_log);

# then the disk is full
$t->fault_cause(28);
ok($t->wait_for(sub { $t->log_count($full) >= 1 }), 'a full disk next')
    or diag($t->alertd_log);

my @l = @{$t->failures($sync, $over)->{tries}};
my ($first) = grep { /$full/ } @l;
like($first, qr/\berror: .*\(still failing: \d+ time\(s\) since the last /,
     'the first try of the new cause is said at once, with the counts');

# an I/O error again: said already, so the next tries are not said at once
my $n = $t->log_count($sync);
$t->fault_cause(5);
ok($t->wait_for(sub { $t->log_count($sync) >= $n + 4 }),
   'tried again with the first cause') or diag($t->alertd_log);
@l = @{$t->failures($sync, $over)->{tries}};
my @again = @l[$n .. $n + 3];
ok((grep { /\bdebug: .*$eio/ } @again),
   'a cause said already is a debug line until the interval is over')
    or diag(join "\n", @again);

$t->fault_off;
ok($t->log_has($over), 'the sync works again: said once it does')
    or diag($t->alertd_log);

my $f = $t->failures($sync, $over);
$t->said_checks($f, '');
$t->over_checks($f, '', 'made');
cmp_ok(scalar @{$f->{said}}, '<', $#{$f->{tries}},
       'not a line a try: ' . scalar @{$f->{said}} . ' said after the '
       . 'first, of ' . scalar @{$f->{tries}} . ' tries');

ok($t->wait_for(sub { $t->delivered($r, $b) }),
   'B, written while the sync failed, is delivered');
is(scalar(grep { $_->{id} eq $a || $_->{id} eq $b } $t->accepted($r)), 2,
   'A and B were each sent once');

$t->done;
