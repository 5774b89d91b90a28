#!/usr/bin/perl
# A state directory alertd cannot set up for a reason that goes away by
# itself (a full disk, a file or memory limit) is not a configuration
# error: alertd exits 1, which the unit restarts (Restart=on-failure),
# not 2, which it never restarts (RestartPreventExitStatus=2) and which
# used to leave alerting stopped for good after a boot with /var full.
# What an operator must fix still exits 2: a state path that is not a
# directory (here), a damaged state file or another alertd on it
# (00-cli.t).
#
# The full disk is a tmpfs with no inode to spare, mounted over the
# state directory in a mount namespace of alertd's own (unshare -Urm):
# nothing outside the test sees it.

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

my $mount = 'mount -t tmpfs -o nr_inodes=2,size=64k tmpfs "$STATE"';
$ENV{STATE} = "$d/probe";
mkdir $ENV{STATE} or die "mkdir: $!";
system('unshare', '-Urm', 'sh', '-c', "$mount 2>/dev/null");
absent('cannot mount a tmpfs in a user namespace (unshare -Urm)') if $?;

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'D' x 32));
$t->policy({ webhook => $r->{url}, secret => 'hook' });

sub run {
    my ($name, $state, @wrap) = @_;
    my $pid = $t->spawn($name, @wrap, $t->bin, '--policy', "$d/policy.yaml",
                        '--keyring', $t->keyring, '--journal', $t->journal,
                        '--state', $state, '--foreground');
    my $st = $t->reap($pid);
    unless (defined $st) {
        $t->stop($pid);
        return -1;
    }
    return $st >> 8;
}

# a full disk: the lock file takes the last inode, the outbox has none
$ENV{STATE} = $t->state;
mkdir $t->state or die "mkdir: $!";
my $rc = run('full', $t->state, 'unshare', '-Urm', 'sh', '-c',
             "$mount && exec \"\$@\"", 'sh');
is($rc, 1, 'a full state disk: exit 1, restarted by the unit');
like($t->read_file('full.log'),
     qr/\berror: cannot create \Q${\ $t->state}\E\/outbox: No space left on device/,
     'with the reason');

# the same directory with room: alertd runs
$t->alertd;
ok($t->log_has(qr/\binfo: started /), 'with room, alertd starts');
my $id = $t->alert;
ok($t->wait_for(sub { $t->delivered($r, $id) }), 'and delivers');
$t->stop($t->alertd_pid);

# a state path that is a file: a configuration error, exit 2
$t->write_file('not-a-dir', '');
is(run('file', "$d/not-a-dir"), 2, 'a state path that is a file: exit 2');
like($t->read_file('file.log'),
     qr/\berror: cannot open the state directory \S+: Not a directory/,
     'with the reason');

$t->done;
