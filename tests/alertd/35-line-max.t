#!/usr/bin/perl
# The longest journal line alertd reads is 65536 bytes, its newline not
# counted: a line of exactly 65536 bytes is an alert like any other, and
# only a longer one is skipped, which the log says as "longer than 65536
# bytes".  An alertd that skipped the line of 65536 bytes, while saying
# that it was longer, fails the first test.
#
# No sinks: the log line of each alert is what is looked for.  Nothing
# is timed: a later alert's line shows that alertd read past the others.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $max = 65536;

my $t = AlertdTest->new;
$t->policy();
$t->append('');
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

# an alert line of exactly len bytes before its newline, padded with an
# unknown member (ignored)
sub sized {
    my ($len, $reason) = @_;
    my ($id, $line) = $t->alert_line(reason => $reason, pad => '');
    chomp $line;
    my $pad = 'x' x ($len - length $line);
    $line =~ s/"pad":""/"pad":"$pad"/ or die "no pad member";
    die "length " . length($line) unless length($line) == $len;
    return ($id, "$line\n");
}

my ($at, $l1) = sized($max, 'at-max');
my ($below, $l2) = sized($max - 1, 'below-max');
my ($over, $l3) = sized($max + 1, 'over-max');
my ($last, $l4) = $t->alert_line(reason => 'after');

$t->append($l1 . $l2 . $l3 . $l4);
ok($t->log_has(qr/alert \Q$last\E: /), 'the alert after them is read');

like($t->alertd_log, qr/no sinks for alert \Q$at\E: /,
     "a line of $max bytes is read");
like($t->alertd_log, qr/no sinks for alert \Q$below\E: /,
     'a line of ' . ($max - 1) . ' bytes is read');
unlike($t->alertd_log, qr/alert \Q$over\E/,
       'a line of ' . ($max + 1) . ' bytes is not');
is($t->log_count(qr/skipped a line longer than $max bytes/), 1,
   'one line is skipped, and said to be longer than the bound');

my $end = length($l1) + length($l2) + length($l3) - 1;
like($t->alertd_log,
     qr/skipped a line longer than $max bytes ending at offset $end\b/,
     'at the offset where it ends');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');

$t->done;
