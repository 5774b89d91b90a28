#!/usr/bin/perl
# The cap on open groups (AD_GROUPS_MAX, 4096): a flood of new peers
# past it is sent, not grouped, and the log says so once, then counts,
# instead of one warning per alert.  An alertd that warns for every
# alert not grouped fails the tests that count the warning lines (and
# those that look for the counts).
#
# 1. live: 4096 peers fill the table and 250 more come, then a repeat of
#    one of them; one warning names the first alert not grouped, then at
#    most a count a minute, and the stop tells the rest: 251 in all;
# 2. a backlog read at start: 4096 + 100 peers whose windows ended long
#    ago; the table fills while the journal is read, then every group
#    closes, and one line says the cap is over, with the count.
#
# No sinks: every alert is only logged, which is what is counted here.
# Counts are said at most every 60 s while the table is full; how many
# of those a slow machine makes is bounded by the time it took, never
# required.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $cap = 4096;

sub peer_alert {
    my ($t, $i, @f) = @_;
    return $t->alert_line(client => undef, reason => 'no_route',
                          peer => sprintf('10.9.%d.%d', $i >> 8, $i & 255),
                          @f);
}

# the warnings about the cap, and the counts among them
sub cap_lines {
    my ($t) = @_;
    return grep { /\bwarning: .*alert groups? / }
           split /\n/, $t->alertd_log;
}

sub counts {
    return map { /: (\d+) alert\(s\) not grouped since the last count(.*)/
                 ? { untold => $1, rest => $2, line => $_ } : () } @_;
}

sub sent { my ($t, $id) = @_; $t->log_has(qr/alert \Q$id\E: /, 120) }


# 1. live

my $t = AlertdTest->new;
$t->policy();
$t->append('');

my $pid = $t->alertd('--repeat-interval', '1h');

my ($text, @ids) = ('');
for my $i (1 .. $cap + 250) {
    my ($id, $line) = peer_alert($t, $i);
    push @ids, $id;
    $text .= $line;
}

my $t0 = time;
$t->append($text);
ok(sent($t, $ids[-1]), ($cap + 250) . ' peers read');

# a repeat of a peer not grouped is sent again, not folded
my ($rep, $line) = peer_alert($t, $cap + 1);
$t->append($line);
ok(sent($t, $rep), 'a repeat of a peer not grouped is sent again');
my $took = time - $t0;

my @lines = cap_lines($t);
my @start = grep { /the most alertd keeps: alert \S+ .*is sent but not/ }
            @lines;
is(scalar(@start), 1, 'one warning when the cap is reached')
    or diag(scalar(@lines) . " lines, the first: " . ($lines[0] // ''));
like($start[0] // '',
     qr/\b$cap alert groups open, the most alertd keeps: alert \Q$ids[$cap]\E /,
     'it names the first alert not grouped');
cmp_ok(scalar(@lines), '<=', 1 + 1 + int($took / 60),
       sprintf('then at most a count a minute (%.0f s): not a line per '
               . 'alert', $took));

my $info = () = $t->alertd_log =~ /\binfo: no sinks for alert /g;
is($info, $cap + 250 + 1, 'every alert is still logged, one line each');

is($t->stop($pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
@lines = cap_lines($t);
my ($stop) = grep { /alertd stops: / } @lines;
my $re = "\\b$cap alert groups open, alertd stops: \\d+ alert\\(s\\) not "
       . 'grouped since the last count.*; 251 since the cap was reached '
       . 'at \S+$';
like($stop // '', qr/$re/, 'the stop tells the count: 251 alerts not grouped');
my $told = 0;
$told += $_->{untold} for counts(@lines);
is($told + 1, 251, 'the warning and the counts add up to them');
like($stop // '', qr/ to \S+ \(alert \Q$rep\E\);/,
     'the last of them is the repeat');


# 2. a backlog read at start; its windows ended an hour ago

my $u = AlertdTest->new;
$u->policy();

my $old = AlertdTest::now_rfc3339(time - 7200);
($text, @ids) = ('');
for my $i (1 .. $cap + 100) {
    my ($id, $l) = peer_alert($u, $i, time => $old);
    push @ids, $id;
    $text .= $l;
}
$u->append($text);

$t0 = time;
$pid = $u->alertd('--repeat-interval', '1h');
ok(sent($u, $ids[-1]), ($cap + 100) . ' peers read at start');
ok($u->log_has(qr/the cap is over/, 120), 'then the groups close');
$took = time - $t0;

@lines = cap_lines($u);
@start = grep { /the most alertd keeps: alert \S+ .*is sent but not/ }
         @lines;
is(scalar(@start), 1, 'backlog: one warning when the cap is reached');
like($start[0] // '', qr/alert \Q$ids[$cap]\E /,
     'it names the first alert not grouped');
my ($over) = grep { /the cap is over/ } @lines;
$re = ': 0 alert groups open, fewer than 3072, the cap is over: \d+ '
    . 'alert\(s\) not grouped since the last count, from \S+ \(alert \S+\) '
    . "to \\S+ \\(alert \Q$ids[-1]\E\\); 100 since the cap was reached at "
    . '\S+$';
like($over // '', qr/$re/,
     'when the groups close: the count, 100, to the last alert');
$told = 0;
$told += $_->{untold} for counts(@lines);
is($told + 1, 100, 'the warning and the counts add up to them');
cmp_ok(scalar(@lines), '<=', 2 + int($took / 60),
       'backlog: the warning, the end, and at most a count a minute');

is($u->stop($pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
is(scalar(grep { /alertd stops: / } cap_lines($u)), 0,
   'the cap was over: the stop has nothing to tell');
unlike($u->alertd_log, qr/AddressSanitizer|LeakSanitizer|runtime error:/,
       'no sanitizer reports there');

$t->done;
