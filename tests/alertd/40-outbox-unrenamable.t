#!/usr/bin/perl
# An outbox file that is no outbox entry and cannot be renamed *.bad.
#
# alertd renames a damaged outbox file *.bad and says so.  The rename's
# result was not looked at: where it failed (something in the way of
# the new name, a file system gone read-only) the log still said
# "renamed", and the file stayed under its name, where alertd takes a
# file for its alert queued.  That alert, read again from the journal
# (a crash before its position was saved, an offset moved away), was
# "queued already" and never sent.  Now the log says that the rename
# failed and why, once, the file stays, and its name holds no alert:
# the alert is queued again over it, and a directory, which no file can
# replace, is said, and the other alerts go on.
#
#   A   outbox/<sink>-A.json is not JSON; a directory A.json.bad is in
#       the way of the rename (EISDIR): A is queued in its place, sent
#   C   outbox/<sink>-C.json is a directory; a file C.json.bad is in
#       the way of its rename (ENOTDIR): C is said not to be queued
#   B   read after them: sent
#
# No state: the journal is read from its start, as after an offset
# moved away.  Nothing is timed: each step waits for a delivery or a
# log line.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Digest::SHA qw(sha256_hex);
use Test::More;

my $t = AlertdTest->new;
my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'D' x 32));
$t->policy({ webhook => $r->{url}, secret => 'hook' });
my $key = substr(sha256_hex("webhook\n$r->{url}"), 0, 16);

my ($a, $la) = $t->alert_line(reason => 'ra');
my ($c, $lc) = $t->alert_line(reason => 'rc');
my ($b, $lb) = $t->alert_line(reason => 'rb');
$t->append($la . $lc . $lb);

my $ob = $t->state . '/outbox';
mkdir $t->state or die "mkdir: $!";
mkdir $ob or die "mkdir: $!";

my $fa = "$key-$a.json";
$t->write_file("$ob/$fa", "{\"v\":1,\"sink\":");
mkdir "$ob/$fa.bad" or die "mkdir: $!";
$t->write_file("$ob/$fa.bad/kept", "an older damaged file\n");

my $fc = "$key-$c.json";
mkdir "$ob/$fc" or die "mkdir: $!";
$t->write_file("$ob/$fc/kept", "not an entry\n");
$t->write_file("$ob/$fc.bad", "an older damaged file\n");

$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

ok($t->log_has(qr/\Q$fa\E is not an outbox entry \(.*\) and cannot be renamed to \Q$fa\E\.bad: Is a directory; it is not sent/),
   'A: the failed rename is said, with its reason')
    or diag($t->alertd_log);
ok($t->log_has(qr/\Q$fc\E is not an outbox entry \(not a regular file\) and cannot be renamed to \Q$fc\E\.bad: Not a directory/),
   'C: likewise');
is($t->log_count(qr/\Q$fa\E is not an outbox entry .*: renamed to/), 0,
   'no rename is said that did not happen');

ok($t->wait_for(sub { $t->delivered($r, $b) }), 'B is delivered');
ok($t->delivered($r, $a), 'A, queued before B over its damaged file, too');
ok($t->log_has(qr/\bwarning: outbox\/\Q$fa\E, which was no outbox entry, is replaced by alert \Q$a\E queued again/, 0),
   'A: the file replaced is said');
ok($t->log_has(qr/\berror: alert \Q$c\E is not queued for webhook \S+: outbox\/\Q$fc\E, which is no outbox entry, holds its name/, 0),
   'C: not queued, said');
ok($t->log_has(qr/not queued \(a damaged outbox file holds its name\): alert \Q$c\E: /, 0),
   'C: its line says so');
ok(!$t->delivered($r, $c), 'C is not sent');
ok($t->wait_for(sub { join(' ', $t->outbox) eq $fc }),
   'nothing else is queued');

ok(-d "$ob/$fa.bad" && -e "$ob/$fa.bad/kept", 'A.json.bad is as it was');
ok(!-e "$ob/$fa", 'A\'s file is gone with its delivery');
ok(-d "$ob/$fc" && -e "$ob/$fc/kept", 'C.json stays as it was');

# said once: the next round neither says it again nor loops on it
ok($t->settle, 'alertd goes round its loop');
my $d = $t->alert(reason => 'rd');
ok($t->wait_for(sub { $t->delivered($r, $d) }), 'a later alert is sent');
is($t->log_count(qr/is not an outbox entry/), 2, 'each file said once');
is($t->log_count(qr/alert \Q$c\E is not queued/), 1, 'C said once');

# a restart says what is still there, once
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');
$d = $t->alert(reason => 're');
ok($t->wait_for(sub { $t->delivered($r, $d) }), 'restarted: alerts sent');
is($t->log_count(qr/\Q$fc\E is not an outbox entry/), 2,
   'C.json said again at the restart');
is($t->log_count(qr/\Q$fa\E is not an outbox entry/), 1,
   'A.json is gone');

$t->done;
