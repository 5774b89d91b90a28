#!/usr/bin/perl
# alertd reads the keyring and its sinks' secrets: it makes itself not
# dumpable first, so that a crash writes no core file with them and no
# process of its user can read its memory.  The kernel shows it in /proc:
# the files in /proc/PID of a process that is not dumpable are owned by
# root, whatever user it runs as.  alertd runs as nobody here (the
# shipped unit gives it a dynamic user) so that the two differ.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use lib "$FindBin::Bin/../lib";
use AlertdTest;
use Airlock::Prereq qw(absent need_cmd);
use File::Find;
use Test::More;

absent('needs root to run alertd as another user') if $> != 0;
need_cmd('setpriv');

my $t = AlertdTest->new;
my $d = $t->dir;
my @nobody = getpwnam('nobody') or die "no user nobody\n";

my $secret = $t->secret('hook', 'dumpable-test-secret-0123456789abcdef');
my $r = $t->receiver(secret => $secret);
$t->policy({ webhook => $r->{url}, secret => 'hook' });
mkdir $t->state;
find(sub { chown $nobody[2], $nobody[3], $_ }, $d);

plan tests => 5;

my $pid = $t->spawn('alertd', 'setpriv', '--reuid=nobody',
                    "--regid=$nobody[3]", '--clear-groups', $t->bin,
                    '--policy', "$d/policy.yaml", '--keyring', $t->keyring,
                    '--journal', $t->journal, '--state', $t->state,
                    '--foreground');

ok($t->log_has(qr/\binfo: started /), 'alertd starts as nobody')
    or diag($t->alertd_log);

my ($uid) = ($t->read_file("/proc/$pid/status") // '') =~ /^Uid:\s+(\d+)/m;
is($uid, $nobody[2], 'it runs as nobody');
is((stat "/proc/$pid/environ")[4], 0,
   'it is not dumpable (/proc/PID/environ is root\'s)');

my $id = $t->alert(client => 'agent');
ok($t->wait_for(sub { $t->delivered($r, $id) }),
   'and delivers, its secret opened');

$t->stop($pid);

$t->done;
