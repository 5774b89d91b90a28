#!/usr/bin/perl
# A journal string may hold a NUL: JSON's \u0000, which a client chooses
# as any other byte of its name, its path or a header.  alertd read the
# journal without jansson's JSON_ALLOW_NUL, so an alert line whose
# client, peer, route or sample held one was not read at all ("not
# JSON"): a client could keep its own alerts from being sent.  Read as a
# C string, "abc\u0000evil" would be "abc" and group with client "abc".
# Now the free text is kept with its length: the webhook body and the
# Alertmanager labels and annotations carry the NUL as \u0000, the
# summary and the log show it as the text \u0000, grouping tells
# "abc\u0000evil", "abc" and the text "abc\\u0000evil" apart, and the
# outbox and the state keep it across a restart.  A NUL in a field with
# a form (id, time, kind, severity, quarantine_until) makes the line
# malformed, said with its offset, rather than cut to a valid value.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'nul-field-test-FAKE-0123456789abcdef');
my $r = $t->receiver(secret => $secret);
my $am = $t->receiver(secret => $secret);
my $am_url = "http://127.0.0.1:$am->{port}";
my $gate = $t->dir . '/late-up';
my $late = $t->receiver(secret => $secret, fail_until => $gate);

$t->policy({ webhook => $r->{url}, secret => 'hook' },
           { alertmanager => $am_url },
           { webhook => $late->{url}, secret => 'hook' });

my @hour = ('--repeat-interval', '1h', '--poll-interval', '1h');

sub hook { my %h = map { $_->{id} => $_ } $t->accepted($_[0]); \%h }

sub am {
    my %h;
    for my $rec ($t->records($am)) {
        next unless $rec->{status} =~ /^2\d\d$/
                    && $rec->{path} eq '/api/v2/alerts';
        $h{$_->{annotations}{id}} = $_ for @{$rec->{json} // []};
    }
    return \%h;
}

$t->alertd(@hour);

my $nul = $t->alert(client => "abc\0evil", route => "r\0x",
                    sample => "GET /p\0q", reason => 'no_route');
my $peer = $t->alert(client => undef, peer => "10.0.0.5\0evil",
                     reason => "no\0route");

ok($t->wait_for(sub { $t->delivered($r, $nul, $peer)
                      && am()->{$nul} && am()->{$peer} }),
   'alerts with a NUL in client, route, sample, peer and reason: sent')
    or diag($t->alertd_log);

my $w = hook($r)->{$nul} // {};
is($w->{json}{client}, "abc\0evil", 'webhook: the client whole');
is($w->{json}{route}, "r\0x", 'webhook: the route whole');
is($w->{json}{sample}, "GET /p\0q", 'webhook: the sample whole');
like($w->{body} // '', qr/"client":"abc\\u0000evil"/,
     'webhook body: the NUL written as \u0000');
my $wp = hook($r)->{$peer} // {};
is($wp->{json}{peer}, "10.0.0.5\0evil", 'webhook: the peer whole');
is($wp->{json}{reason}, "no\0route", 'webhook: the reason whole');

my $a = am()->{$nul} // {};
is($a->{labels}{client}, "abc\0evil", 'Alertmanager: the client label');
is($a->{labels}{route}, "r\0x", 'Alertmanager: the route label');
is($a->{annotations}{sample}, "GET /p\0q",
   'Alertmanager: the sample annotation');
like($a->{annotations}{summary} // '', qr/client abc\\u0000evil /,
     'Alertmanager: the summary shows the NUL as the text \u0000');
my $ap = am()->{$peer} // {};
is($ap->{labels}{peer}, "10.0.0.5\0evil", 'Alertmanager: the peer label');
is($ap->{labels}{reason}, "no\0route", 'Alertmanager: the reason label');
like($t->alertd_log, qr/alert \Q$nul\E: deny_threshold, client abc\\u0000evil,/,
     'the log shows the NUL as the text \u0000');


# grouping: "abc" and the text "abc\u0000evil" are other clients; a
# repeat of "abc\0evil" is folded into its group

my $short = $t->alert(client => 'abc', reason => 'no_route');
my $text = $t->alert(client => 'abc\\u0000evil', reason => 'no_route');
my $rep = $t->alert(client => "abc\0evil", route => "r\0x",
                    reason => 'no_route');
my $peer2 = $t->alert(client => undef, peer => '10.0.0.5',
                      reason => "no\0route");
my $mark = $t->alert(client => 'mark');

ok($t->wait_for(sub { $t->delivered($r, $short, $text, $peer2, $mark) }),
   'client "abc", the text "abc\\u0000evil" and peer "10.0.0.5": each its '
   . 'own group, sent at once')
    or diag($t->alertd_log);
ok(!hook($r)->{$rep},
   'a repeat of "abc\0evil" is folded into its group, not sent');
is(hook($r)->{$text}{json}{client}, 'abc\\u0000evil',
   'the text "abc\\u0000evil" is sent as that text');


# the state and the outbox keep the NUL across a restart

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');
my ($g) = grep { ($_->{last}{client} // '') eq "abc\0evil" }
          @{$t->saved_state->{groups}};
ok($g && $g->{count} == 1, 'the state holds the group of "abc\0evil", '
   . 'its repeat counted');
my @queued = grep { /\Q$nul\E/ } $t->outbox;
is(scalar(@queued), 1, 'the third sink, down, holds the alert queued')
    or diag(join ' ', $t->outbox);

$t->write_file($gate, '');
$t->alertd(@hour);
my $rep2 = $t->alert(client => "abc\0evil", route => "r\0x",
                     reason => 'no_route');
my $short2 = $t->alert(client => 'abc', reason => 'no_route');
my $mark2 = $t->alert(client => 'mark2');
ok($t->wait_for(sub { $t->delivered($r, $mark2) }), 'restarted')
    or diag($t->alertd_log);
ok(!hook($r)->{$rep2} && !hook($r)->{$short2},
   'after the restart, repeats of "abc\0evil" and of "abc" are folded '
   . 'into their groups, each its own');

ok($t->wait_for(sub { $t->delivered($late, $nul, $peer) }),
   'the queued alerts are sent after the restart, the sink up')
    or diag($t->alertd_log);
my $l = hook($late)->{$nul} // {};
is($l->{json}{client}, "abc\0evil", 'read back from the outbox: client');
is($l->{json}{route}, "r\0x", 'route');
is($l->{json}{sample}, "GET /p\0q", 'sample');
is((hook($late)->{$peer} // {})->{json}{peer}, "10.0.0.5\0evil", 'peer');


# a NUL where a field has a form: the line is malformed, said

my ($bad_id, $line) = $t->alert_line(id => "abc\0x");
$t->append($line);
my $id_cut = $t->alert(id => 'abc');
my ($tid, $tline) = $t->alert_line(time => AlertdTest::now_rfc3339() . "\0x");
$t->append($tline);
my $mark3 = $t->alert(client => 'mark3');
ok($t->wait_for(sub { $t->delivered($r, $mark3, $id_cut) }),
   'the alerts after them are sent')
    or diag($t->alertd_log);
like($t->alertd_log, qr/"id" holds a NUL/,
     'an id with a NUL: the line is malformed, said');
like($t->alertd_log, qr/"time" holds a NUL/,
     'a time with a NUL likewise');
ok(!hook($r)->{$tid}, 'and not sent');
is(scalar(grep { $_->{id} eq 'abc' } $t->accepted($r)), 1,
   'the id "abc\0x" is not cut to "abc": that id is sent once, its own');

$t->done;
