#!/usr/bin/perl
# A save that keeps failing (a full disk, an I/O error) is not an error
# line a second.  alertd tries it again every second for as long as it
# fails, and each try used to log "cannot save STATE/offset": 86,400
# lines a day on an appliance whose disk is full.  Now the first failure
# is an error line; the next error line comes after 5 s, then 10, 20
# ... up to 5 minutes, and says how many failures there were since the
# last one and in all; the tries in between are debug lines (-v).  When
# a save works again, one line says so, with the count and how long.
# What alertd does is the same: it still tries every second, and the
# alerts read meanwhile are delivered.
#
# The save is made to fail by a directory where alertd writes the new
# state file before it renames it into place (STATE/.tmp-offset), as in
# 26.  Run with -v, every try is a line (an error or a debug line): the
# counts the error lines give are checked against them.  Time has to
# pass (the 5 s before the second error line): the test waits for that
# line, it does not time anything.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $st = $t->state;
my $block = "$st/.tmp-offset";

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'F' x 32));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

mkdir $st or die "mkdir: $!";
mkdir $block or die "mkdir $block: $!";
$t->alertd('--verbose');

my $save = qr/cannot save \Q$st\E\/offset: /;
my $over = qr/\binfo: saving \Q$st\E\/offset works again, after (\d+) /
           . qr/failure\(s\) in [^(]+ \((\d+) since the last line\)$/m;

# every try, in order: one line each
sub tries {
    return grep { /$save/ } split /\n/, $t->alertd_log;
}

my $a = $t->alert(reason => 'ra');
ok($t->wait_for(sub { $t->delivered($r, $a) }),
   'A is queued and delivered while the save fails');

ok($t->wait_for(sub { grep { /\berror: .*still failing/ } tries() }),
   'the failure is said again after a while')
    or diag($t->alertd_log);

# B is read once a save works: alertd holds the journal till then
my $b = $t->alert(reason => 'rb');

my $f = $t->failures($save, $over);
my @l = @{$f->{tries}};
like($l[0], qr/\berror: $save/, 'the first failure is an error line');
unlike($l[0], qr/still failing/, '... said as the first');
cmp_ok(scalar @l, '>', 2, 'the save was tried again and again');

$t->said_checks($f, '');

rmdir $block or die "rmdir: $!";

ok($t->log_has($over), 'a save works again: said once it does')
    or diag($t->alertd_log);

@l = tries();
$f = $t->failures($save, $over);
my ($n, $untold) = $t->alertd_log =~ $over;
is($n, scalar @l, '... with the count of failures');
is($untold, $#{$f->{tries}} - $f->{last},
   '... and of those since the last error line');
like($t->alertd_log, qr/\Q$l[-1]\E\n(?s:.*)$over/,
     '... after the last failure');

ok($t->wait_for(sub { $t->delivered($r, $b) }),
   'B, read once the save worked, is delivered');
ok($t->wait_for(sub {
       ($t->saved_state->{offset} // -1) == -s $t->journal
   }), 'the position after B is saved');
is(scalar tries(), scalar @l, 'no failure since');
is(scalar(grep { /$over/ } split /\n/, $t->alertd_log), 1,
   'the recovery is said once');

$t->done;
