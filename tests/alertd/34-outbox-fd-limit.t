#!/usr/bin/perl
# A queued alert's file that cannot be read at start for a reason of the
# moment (no file descriptor left, no memory, an I/O error) is not taken
# for a damaged file: it was renamed *.bad, "not sent", and alertd went
# on, so every alert queued was lost, and --once exited 0 ("none is
# left").  Now alertd stops with exit status 1, as for any state it
# cannot set up for such a reason (the unit restarts it), and every file
# stays queued for the next start.
#
# The limit: RLIMIT_NOFILE (prlimit) one descriptor short of what
# alertd needs to read an outbox file, found by lowering it from where
# --once runs until alertd no longer gets that far.  Nothing is timed.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Airlock::Prereq qw(need_cmd);
use Test::More;

need_cmd('prlimit');

my $t = AlertdTest->new;
my $d = $t->dir;
my $up = "$d/up";
my $r = $t->receiver(secret => $t->secret('hook', 'fd-test-secret-0123456789'),
                     fail_until => $up);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

$t->alertd('--repeat-interval', '1h', '--poll-interval', '1h');
my @ids = map { $t->alert(reason => "fd-$_") } 1 .. 3;
ok($t->wait_for(sub { scalar($t->outbox) == 3 }), 'three alerts queued');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');

my @files = $t->outbox;

sub once {
    return $t->run_alertd('--policy', "$d/policy.yaml", '--keyring',
                          $t->keyring, '--journal', $t->journal, '--state',
                          $t->state, '--once', '--attempt-timeout', '1s');
}

# --once runs to its end with the sink down: 1, the files kept
my ($rc, $err) = once();
is($rc, 1, '--once with the sink down: 1, alerts left');
is(join(' ', $t->outbox), join(' ', @files), 'all still queued');

# the lowest limit at which alertd reads the outbox: from the last limit
# that fails before it, one descriptor more is the one it needs
my ($n, $out);
for my $try (reverse 4 .. 64) {
    system("prlimit --nofile=$try:$try \Q$t->{bin}\E --policy \Q$d/policy.yaml\E"
           . " --keyring \Q$t->{keyring}\E --journal \Q$t->{journal}\E"
           . " --state \Q$t->{state}\E --once --attempt-timeout 1s"
           . " >/dev/null 2>\Q$d/limited.err\E");
    $rc = $? >> 8;
    $out = $t->read_file('limited.err');
    if (grep({ /\.bad$/ } glob($t->state . '/outbox/*'))
        || $out =~ /\boutbox\/\S+: Too many open files/)
    {
        $n = $try;
        last;
    }
    last if $out =~ /cannot list the outbox|cannot open the outbox/;
}

ok(defined $n, 'a limit under which an outbox file cannot be opened')
    or diag($out);
is($rc, 1, 'alertd stops with exit status 1 (restarted by the unit)')
    or diag($out);
like($out, qr/\berror: cannot read the outbox: outbox\/\S+\.json: Too many open files/,
     'and says why');
is(scalar(grep { /\.bad$/ } glob($t->state . '/outbox/*')), 0,
   'no queued alert is renamed *.bad');
is(join(' ', $t->outbox), join(' ', @files), 'every alert is still queued');

# the next start, with descriptors enough, delivers them
$t->write_file($up, '');
$t->alertd('--repeat-interval', '1h', '--poll-interval', '1h');
ok($t->wait_for(sub { $t->delivered($r, @ids) }), 'and they are delivered');

$t->done;
