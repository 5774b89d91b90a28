#!/usr/bin/perl
# Receivers whose answers never end where an answer's head should: they
# must not grow alertd's memory, stall the journal or the other sinks,
# or lose an alert.
#
#  - "headers": a 200 status line, then header lines without end;
#  - "continue": "100 Continue" answers without end, each with a header;
#  - "status": a status line whose reason phrase never ends.
#
# libcurl gives up on an answer's head past its limit (300 KiB in all,
# 100 KiB a line).  A 200 that came is the answer, as for a body that
# breaks off (13-no-end.t): the alert is delivered, the log saying the
# rest was not read.  With no final status the attempt failed: the alert
# stays queued and is tried again with the sink's backoff.  A good
# receiver beside them takes every alert meanwhile, and alertd's
# resident memory stays within a few MiB of what it was before.
#
# Tests only: alertd did all of this already.  The receivers are this
# file, run with --server MODE.  Nothing is timed: the test waits for
# what alertd logs and the good receiver records.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use IO::Socket::INET;
use Test::More;

if (@ARGV && $ARGV[0] eq '--server') {
    my (undef, $mode, $port_file) = @ARGV;
    $SIG{PIPE} = 'IGNORE';
    $SIG{CHLD} = 'IGNORE';
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Listen => 16, ReuseAddr => 1)
        or die "listen: $!";
    open(my $fh, '>', "$port_file.tmp") or die;
    print $fh $l->sockport;
    close $fh;
    rename "$port_file.tmp", $port_file or die;

    while (my $c = $l->accept) {
        my $pid = fork // die "fork: $!";
        if ($pid) {
            close $c;
            next;
        }
        local $/ = "\r\n\r\n";
        my $head = <$c> // exit 0;
        my ($len) = $head =~ /^Content-Length: (\d+)/mi;
        my $body = '';
        read($c, $body, $len // 0);
        my $junk = 'x' x 1000;
        if ($mode eq 'headers') {
            print $c "HTTP/1.1 200 OK\r\n" or exit 0;
            print $c "X-Junk: $junk\r\n" or exit 0 while 1;
        } elsif ($mode eq 'continue') {
            print $c "HTTP/1.1 100 Continue\r\nX-Junk: $junk\r\n\r\n"
                or exit 0 while 1;
        } else {
            print $c "HTTP/1.1 200 " or exit 0;
            print $c $junk x 64 or exit 0 while 1;
        }
        exit 0;
    }
    exit 0;
}

sub rss {
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/status") or return 0;
    while (<$fh>) {
        return $1 if /^VmRSS:\s+(\d+)/;
    }
    return 0;
}

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'whsec_' . 'D' x 32);

my %url;
for my $mode (qw(headers continue status)) {
    my $port_file = $t->dir . "/$mode.port";
    $t->spawn($mode, $^X, $0, '--server', $mode, $port_file);
    ok($t->wait_for(sub { -s $port_file }), "the $mode receiver runs");
    my $port = $t->read_file($port_file);
    $url{$mode} = "http://127.0.0.1:$port/hook";
}
my $good = $t->receiver(secret => $secret);

$t->policy((map { { webhook => $url{$_}, secret => 'hook' } }
            sort keys %url),
           { webhook => $good->{url}, secret => 'hook' });
$t->append('');
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');
my $pid = $t->alertd_pid;
ok($t->settle, 'alertd runs');
my $before = rss($pid);

my @ids = map { $t->alert(client => "agent$_", reason => 'no_route') }
          1 .. 4;
ok($t->wait_for(sub { $t->delivered($good, @ids) }),
   'the good receiver takes every alert') or diag($t->alertd_log);

my $h = quotemeta AlertdTest::label($url{headers});
ok($t->wait_for(sub {
       $t->log_count(qr/\binfo: delivered alert \S+ to webhook $h \(HTTP 200, .*the answer's body was not read to its end: /)
       == @ids }),
   'a 200 with a head without end: delivered, the rest said unread')
    or diag($t->alertd_log);

for my $mode (qw(continue status)) {
    my $u = quotemeta AlertdTest::label($url{$mode});
    ok($t->wait_for(sub {
           $t->log_count(qr/\bwarning: webhook $u: alert \Q$ids[0]\E not delivered: .*; retrying in /)
           >= 3 }, 120),
       "$mode: not delivered, tried again with backoff")
        or diag($t->alertd_log);
}

my $after = rss($pid);
ok($before > 0 && $after - $before < 16 * 1024,
   "resident memory grew by less than 16 MiB ($before kB, then $after kB)");

# the journal is still read: a new alert reaches the good receiver
my $late = $t->alert(client => 'agent9', reason => 'no_route');
ok($t->wait_for(sub { $t->delivered($good, $late) }),
   'an alert written meanwhile is delivered');
ok(scalar($t->outbox) >= 2,
   'the alerts the other two did not take stay queued');

is($t->stop($pid, 'TERM') >> 8, 0, 'alertd stops cleanly');

$t->done;
