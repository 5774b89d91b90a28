#!/usr/bin/perl
# A journal alertd cannot read at start, or inotify refused, is a
# condition that goes away by itself, not a configuration error: alertd
# used to exit 2 for either, and the unit's RestartPreventExitStatus=2
# then left it stopped for good (no alert delivered, not even those
# queued) once the journal was unreadable for a moment at a restart or
# the user's inotify watches were used up.  Now it runs, says so, polls
# the journal every --poll-interval, and goes on:
#
#   - a journal it cannot open at start is tried again at each poll, and
#     read from the saved position once it opens (the alert before it is
#     not sent again);
#   - without inotify (fs.inotify.max_user_instances reached) or without
#     a watch on the journal's directory (fs.inotify.max_user_watches),
#     it polls, delivers, and watches again once it can.
#
# Each is said as a failure that repeats (ad_fail()): when it begins,
# then after 5 s with the count of tries (each a debug line with -v),
# not at every poll, and once when it works again.  Time has to pass
# (the 5 s before the second line): the test waits for that line, it
# does not time anything.
#
# The journal is made unreadable with chmod 000; as root, alertd then
# runs in a user namespace as a user without capabilities (unshare
# --map-user), so that the mode is obeyed.  The inotify limits are
# lowered in a user namespace of their own (/proc/sys/user/max_inotify_*
# are per user namespace): the machine's limits are not touched.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Airlock::Prereq qw(absent need_cmd);
use Test::More;

my $t = AlertdTest->new;
my $d = $t->dir;

need_cmd('unshare');

# as root, alertd runs as an unprivileged user that owns the test's files
my @user = $> == 0 ? ('unshare', '--map-user=1000', '--map-group=1000', '--')
                   : ();

$t->write_file('probe', "x\n");
chmod 0, "$d/probe" or die "chmod: $!";
system(@user, 'sh', '-c', "exec cat \Q$d/probe\E >/dev/null 2>&1");
absent('a mode 000 file is readable as the user alertd runs as '
       . '(unshare --map-user)') if $? == 0;

my $limits = 'echo 0 >/proc/sys/user/max_inotify_instances';
system('unshare', '-Ur', 'sh', '-c', "$limits 2>/dev/null");
absent('cannot lower an inotify limit in a user namespace (unshare -Ur)')
    if $? != 0;

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'A' x 32));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my @args = ('--policy', "$d/policy.yaml", '--keyring', $t->keyring,
            '--journal', $t->journal, '--state', $t->state, '--foreground',
            '--repeat-interval', '1h', '--poll-interval', '1s',
            '--verbose');

sub log_of { $t->read_file("$_[0].log") }

# starts alertd as name under the wrapper; returns its pid, or undef and
# the exit status when it stopped instead
sub start {
    my ($name, @wrap) = @_;
    my $pid = $t->spawn($name, @wrap, $t->bin, @args);
    my $st;

    $t->wait_for(sub {
        return 1 if log_of($name) =~ /\binfo: started /;
        $st = $t->reap($pid, 0);
        return defined $st;
    });

    return defined $st ? (undef, $st >> 8) : ($pid, undef);
}

# the failure said when it begins, again after a while with the count,
# and not at every try (as ad_fail() says it); over: its recovery line
sub said_as_failure {
    my ($name, $re, $over, $what) = @_;

    ok($t->wait_for(sub { log_of($name) =~ /\berror: $re.*still failing/ }),
       "$what: said again after a while, with the count")
        or diag(log_of($name));

    my $f = $t->failures($re, $over, log_of($name));
    like($f->{tries}[0] // '', qr/\berror: $re/,
         "$what: the first try is an error line");
    $t->said_checks($f, "$what: ");
}

# its recovery line, once, with the count of tries
sub said_over {
    my ($name, $re, $over, $what) = @_;

    ok($t->wait_for(sub { log_of($name) =~ $over }),
       "$what works again: said") or diag(log_of($name));

    my $f = $t->failures($re, $over, log_of($name));
    $t->over_checks($f, "$what: ");
}

sub count_of {
    my ($id) = @_;
    return scalar grep { $_->{id} eq $id } $t->accepted($r);
}

# 1. an unreadable journal at start, readable again later

my $a1 = $t->alert(client => 'one');
my ($pid, $st) = start('alertd-1', @user);
ok($pid, 'alertd runs') or diag(log_of('alertd-1'));
ok($t->wait_for(sub { $t->delivered($r, $a1) }), 'the first alert is sent');
$t->stop($pid) if $pid;

my $a2 = $t->alert(client => 'two');
chmod 0, $t->journal or die "chmod: $!";

($pid, $st) = start('alertd-2', @user);
ok($pid, 'the journal cannot be read at start: alertd runs all the same')
    or diag('exit status ' . ($st // '?') . ":\n" . log_of('alertd-2'));
my $open = qr/cannot open the journal \Q${\ $t->journal}\E: Permission denied; trying again every 1000 ms \(--poll-interval\)/;
my $reopen = qr/\binfo: opening the journal \Q${\ $t->journal}\E works again, /;
like(log_of('alertd-2'), qr/\berror: $open/,
     'and says why and that it tries again');
said_as_failure('alertd-2', $open, $reopen, 'the journal unreadable');

chmod 0640, $t->journal or die "chmod: $!";
ok($t->wait_for(sub { $t->delivered($r, $a2) }),
   'the alert written before it opened is sent once it can be read');
said_over('alertd-2', $open, $reopen, 'opening the journal');
like(log_of('alertd-2'), qr/\binfo: reading journal .* from offset \d+, where alertd was/,
     'read from the saved position');
my $a3 = $t->alert(client => 'three');
ok($t->wait_for(sub { $t->delivered($r, $a3) }), 'and the next one');
is(count_of($a1), 1, 'the alert sent before the restart is not sent again');
$t->stop($pid) if $pid;

# 2. no inotify at all, then no watch on the directory and one later

($pid, $st) = start('alertd-3', 'unshare', '-Ur', 'sh', '-c',
                    "$limits && exec \"\$@\"", 'sh');
ok($pid, 'inotify refused (max_user_instances 0): alertd runs')
    or diag('exit status ' . ($st // '?') . ":\n" . log_of('alertd-3'));
my $noino = qr/cannot use inotify \S+: Too many open files \(sysctl fs.inotify.max_user_instances\); polling the journal every 1000 ms/;
like(log_of('alertd-3'), qr/\berror: $noino/, 'and says it polls instead');
said_as_failure('alertd-3', $noino, undef, 'no inotify');
my $a4 = $t->alert(client => 'four');
ok($t->wait_for(sub { $t->delivered($r, $a4) }), 'an alert is sent');
$t->stop($pid) if $pid;

my $raise = "$d/raise";
my $sh = <<'SH';
echo 0 >/proc/sys/user/max_inotify_watches || exit 99
"$@" &
p=$!
trap 'kill -TERM $p; wait $p; exit' TERM
while [ ! -e "$RAISE" ]; do sleep 0.05; done
echo 100000 >/proc/sys/user/max_inotify_watches
wait $p
SH
$ENV{RAISE} = $raise;

($pid, $st) = start('alertd-4', 'unshare', '-Ur', 'sh', '-c', $sh, 'sh');
ok($pid, 'no watch (max_user_watches 0): alertd runs')
    or diag('exit status ' . ($st // '?') . ":\n" . log_of('alertd-4'));
my $nowatch = qr/cannot watch the journal directory \S+: No space left on device \(sysctl fs.inotify.max_user_watches\); polling/;
my $watch = qr/\binfo: watching the journal directory \S+ works again, /;
like(log_of('alertd-4'), qr/\berror: $nowatch/, 'and says it polls instead');
my $a5 = $t->alert(client => 'five');
ok($t->wait_for(sub { $t->delivered($r, $a5) }), 'an alert is sent');
said_as_failure('alertd-4', $nowatch, $watch, 'no watch');

$t->write_file($raise, '');
said_over('alertd-4', $nowatch, $watch, 'the watch on the directory');
my $a6 = $t->alert(client => 'six');
ok($t->wait_for(sub { $t->delivered($r, $a6) }), 'and alerts go on');
$t->stop($pid) if $pid;

is(join(',', map { count_of($_) } $a1, $a2, $a3, $a4, $a5, $a6),
   '1,1,1,1,1,1', 'every alert sent once');

$t->done;
