#!/usr/bin/perl
# A journal line cut short with the next line glued to it, the newline
# between them lost: a write a crash stopped half-way, or the block of
# zeros a power cut leaves at a file's end, then nginx's next line.
# alertd skips the bytes before the whole line and reads that line: an
# alertd that skipped the glued line whole, the alert in it along, fails
# the first four tests.  A line that is JSON is never looked into (an
# alert nested in an object is no alert), and a line with no whole
# object at its end is skipped as malformed, said once.
#
# No sinks: the log line of each alert is what is looked for.  Nothing
# is timed: a later alert's line shows that alertd read past the others.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use JSON::PP;
use Test::More;

my $t = AlertdTest->new;
$t->policy();
$t->append('');
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

my ($torn_id, $torn) = $t->alert_line(reason => 'torn');
$torn = substr($torn, 0, 60);
my $deny = substr($t->deny_line, 0, 50);

my ($zeros, $l1) = $t->alert_line(reason => 'after-zeros');
my ($glued, $l2) = $t->alert_line(reason => 'after-torn-alert');
my ($denied, $l3) = $t->alert_line(reason => 'after-torn-deny');
my ($junk, $l4) = $t->alert_line(reason => 'after-junk');
my ($nested, $l5) = $t->alert_line(reason => 'nested');
my ($bad, $l6) = $t->alert_line(reason => 'cut-twice');
my ($last, $l7) = $t->alert_line(reason => 'last');

chomp(my $inner = $l5);
my $outer = '{"type":"alert","x":' . $inner . "}\n";

my @lines = (
    ("\0" x 4096) . $l1,                # a power cut's zeros
    $torn . $l2,                        # an alert cut short
    $deny . $l3,                        # a deny line cut short
    "x{\"\"" . $l4,                     # junk, a '{"' in it
    $outer,                             # JSON: not looked into
    $torn . substr($l6, 0, 70) . "\n",  # no whole object at the end
    $l7,
);
my @offsets;
my $off = -s $t->journal;
for my $l (@lines) {
    push @offsets, $off;
    $off += length $l;
}
$t->append(join('', @lines));
ok($t->log_has(qr/alert \Q$last\E: /), 'the alert after them is read');

my $log = $t->alertd_log;
like($log, qr/no sinks for alert \Q$zeros\E: /,
     'an alert after 4096 zero bytes is read');
like($log, qr/no sinks for alert \Q$glued\E: /,
     'an alert glued to an alert line cut short is read');
like($log, qr/no sinks for alert \Q$denied\E: /,
     'an alert glued to a deny line cut short is read');
like($log, qr/no sinks for alert \Q$junk\E: /,
     'an alert after junk with a \'{"\' in it is read');

like($log, qr/offset $offsets[0]: skipped 4096 bytes of a malformed line \(.*\), a line cut short: the line glued to it at offset @{[$offsets[0] + 4096]} is read/,
     'the bytes skipped are said, with both offsets');
is($t->log_count(qr/skipped \d+ bytes of a malformed line/), 4,
   'once for each of the four lines');

unlike($log, qr/alert \Q$nested\E/,
       'an alert nested in a JSON object is not one');
like($log, qr/offset $offsets[4]: skipped a malformed line: no "id"/,
     '... the object is a malformed alert, said');
unlike($log, qr/alert \Q$bad\E/, 'an alert cut short is not read');
like($log, qr/offset $offsets[5]: skipped a malformed line: not JSON/,
     'a line with no whole object at its end is malformed, said');
unlike($log, qr/alert \Q$torn_id\E/, 'nor is the alert cut short');

# Past the longest line, 65536 bytes: a power cut's zeros may be more
# than that, and the line glued to them is still read, from the end of
# the line skipped; and the bytes cut short may hold any number of '{"'
# (here deny lines cut short, each a start that does not parse): the
# starts are tried from the end.  An alertd that read such a line from
# its start, or skipped a line too long whole, fails the tests marked
# (long).

my ($big, $m1) = $t->alert_line(reason => 'after-70000-zeros');
my ($many, $m2) = $t->alert_line(reason => 'after-40-starts');
my ($manybig, $m3) = $t->alert_line(reason => 'after-3000-starts');
my ($plain, $m4) = $t->alert_line(reason => 'after-a-long-line');
my ($last2, $m5) = $t->alert_line(reason => 'last-2');

my @long = (
    ("\0" x 70000) . $m1,
    ($deny x 40) . $m2,
    ($deny x 3000) . $m3,
    ('x' x 70000) . "\n" . $m4,
    $m5,
);
@offsets = ();
$off = -s $t->journal;
for my $l (@long) {
    push @offsets, $off;
    $off += length $l;
}
$t->append(join('', @long));
ok($t->log_has(qr/alert \Q$last2\E: /), 'the alert after them is read');

$log = $t->alertd_log;
like($log, qr/no sinks for alert \Q$big\E: /,
     '(long) an alert after 70000 zero bytes is read');
like($log, qr/no sinks for alert \Q$many\E: /,
     '(long) an alert after 40 deny lines cut short is read');
like($log, qr/no sinks for alert \Q$manybig\E: /,
     '(long) an alert after 3000 of them, past 65536 bytes, is read');
like($log, qr/no sinks for alert \Q$plain\E: /,
     'the alert after a long line of its own is read');

my $end = $offsets[1] - 1;
like($log, qr/a line longer than 65536 bytes, cut short, ends at offset $end with a whole line glued to it at offset @{[$offsets[0] + 70000]}, which is read/,
     '(long) the line glued to a long one is said, with its offset');
is($t->log_count(qr/skipped a line longer than 65536 bytes/), 3,
   'each long line is said to be skipped');
$end = $offsets[3] + 70000;
like($log, qr/skipped a line longer than 65536 bytes ending at offset $end\b/,
     '... the one with no line glued to it too');
is($t->log_count(qr/with a whole line glued to it/), 2,
   '... which is said of the two with a line glued to them only');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');

$t->done;
