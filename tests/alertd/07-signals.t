#!/usr/bin/perl
# SIGHUP reloads the policy (a bad one is logged and the old one kept,
# alerts queued for a removed sink are kept); SIGUSR1 and SIGUSR2 are
# logged and ignored; SIGTERM ends a slow attempt
# within the grace and the alert is sent after the restart.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(sleep time);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'signals-test-secret-0123456789abcdef');
my $ra = $t->receiver(secret => $secret);
my $rb = $t->receiver(secret => $secret);

$t->policy({ webhook => $ra->{url}, secret => 'hook' });
my $pid = $t->alertd;

my $one = $t->alert(reason => 'one');
ok($t->wait_for(sub { $t->delivered($ra, $one) }, 2), 'sink A gets alert 1');

# reload to sink B
$t->policy({ webhook => $rb->{url}, secret => 'hook' });
kill 'HUP', $pid;
ok($t->log_has(qr/reloaded .*: 1 sink/, 3),
   'SIGHUP: reloaded');
my $two = $t->alert(reason => 'two');
ok($t->wait_for(sub { $t->delivered($rb, $two) }, 2), 'sink B gets alert 2');
ok(!$t->delivered($ra, $two), 'sink A does not');

# a broken policy: logged, the running one kept
my $good = $t->read_file('policy.yaml');
$t->write_file('policy.yaml', "version: 1\nclients: [\n");
kill 'HUP', $pid;
ok($t->log_has(qr/reload failed, the running policy is kept: \S*\.yaml:\d+/,
               3),
   'a bad policy is refused with file:line');
my $three = $t->alert(reason => 'three');
ok($t->wait_for(sub { $t->delivered($rb, $three) }, 2),
   'alerts still go to sink B');
ok(kill(0, $pid), 'alertd still runs');

# a policy without sinks is taken, with a warning; alerts are not queued
$t->policy();
kill 'HUP', $pid;
ok($t->log_has(qr/warning: reloaded .*: 0 sink\(s\); alerts stay in/, 3),
   'a policy without sinks: reloaded, with a warning');
my $none = $t->alert(reason => 'none');
ok($t->log_has(qr/no sinks for alert \Q$none\E/, 2),
   'an alert then is only logged');
is(scalar($t->outbox), 0, 'and not queued');
$t->write_file('policy.yaml', $good);
kill 'HUP', $pid;
ok($t->log_has(qr/reloaded .*: 1 sink\(s\)$/m, 3),
   'sink B again');

# sink B goes down, alerts queue for it, then B is removed from the policy
$t->stop($rb->{pid}, 'TERM');
$t->write_file('policy.yaml', $good);
my $four = $t->alert(reason => 'four');
ok($t->log_has(qr/alert \Q$four\E not delivered/, 3),
   'sink B down: alert 4 waits');
$t->policy({ webhook => $ra->{url}, secret => 'hook' });
kill 'HUP', $pid;
ok($t->log_has(qr/1 alert\(s\) queued for webhook \S+, which is not in/, 3),
   'its queued alert is kept and the log says so');
ok(scalar($t->outbox) == 1, 'alert 4 is still in the outbox');

# B comes back, on the same port, and into the policy
my $rb2 = $t->receiver(secret => $secret, port => $rb->{port});
$t->policy({ webhook => $ra->{url}, secret => 'hook' },
           { webhook => $rb->{url}, secret => 'hook' });
kill 'HUP', $pid;
ok($t->wait_for(sub { $t->delivered($rb2, $four) }, 8),
   'once sink B is back in the policy, alert 4 is delivered');
ok(!$t->delivered($ra, $four), 'sink A never got alert 4 (it was not '
   . 'configured when 4 was written)');

# SIGUSR1 and SIGUSR2 (what a log rotation may send every process): logged,
# nothing else
kill 'USR1', $pid;
kill 'USR2', $pid;
ok($t->log_has(qr/SIGUSR2: nothing to do/, 3), 'SIGUSR1, SIGUSR2: logged');
ok(kill(0, $pid), 'and alertd still runs');

# SIGTERM while a slow sink holds an attempt
$t->stop($ra->{pid}, 'TERM');
my $slow = $t->receiver(secret => $secret, port => $ra->{port},
                        delay => 20);
my $five = $t->alert(reason => 'five');
ok($t->wait_for(sub { $t->delivered($rb2, $five) }, 2),
   'alert 5 reaches B while A is slow');
sleep 0.3;
my $s0 = time;
is($t->stop($pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
my $took = time - $s0;
ok($took < 4.5, sprintf('within the grace (%.1f s)', $took));
like($t->alertd_log, qr/attempt cut short by the shutdown; it stays queued/,
     'the cut attempt is logged');
is(scalar($t->outbox), 1, 'alert 5 for sink A is still queued');

$t->stop($slow->{pid}, 'TERM');
my $ra2 = $t->receiver(secret => $secret, port => $ra->{port});
$t->alertd;
ok($t->wait_for(sub { $t->delivered($ra2, $five) }, 3),
   'after the restart alert 5 reaches A, with the same id');

# --once: read, try once, exit
$t->stop($t->alertd_pid, 'TERM');
my $six = $t->alert(reason => 'six');
my ($rc, $err) = $t->run_alertd('--policy', $t->dir . '/policy.yaml',
                                '--keyring', $t->keyring,
                                '--journal', $t->journal,
                                '--state', $t->state, '--once');
is($rc, 0, '--once with both sinks up: exit 0');
ok($t->delivered($ra2, $six) && $t->delivered($rb2, $six),
   '--once delivered alert 6 to both');

$t->stop($rb2->{pid}, 'TERM');
my $seven = $t->alert(reason => 'seven');
($rc, $err) = $t->run_alertd('--policy', $t->dir . '/policy.yaml',
                             '--keyring', $t->keyring,
                             '--journal', $t->journal,
                             '--state', $t->state, '--once');
is($rc, 1, '--once with a sink down: exit 1');
like($err, qr/1 alert\(s\) still queued/, 'and it says what is left');
ok($t->delivered($ra2, $seven), 'the sink that is up got alert 7');

$t->done;
