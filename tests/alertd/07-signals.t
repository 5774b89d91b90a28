#!/usr/bin/perl
# SIGHUP reloads the policy (a bad one is logged and the old one kept,
# alerts queued for a removed sink are kept); SIGUSR1 and SIGUSR2 are
# logged and ignored; SIGTERM does not wait for a slow attempt to end: it
# cuts it short after its grace, and the alert is sent after the restart.
#
# Nothing is timed.  The attempt SIGTERM cuts is one that only the stop
# can end: the sink answers after an hour, and alertd's attempt timeout
# is an hour (--attempt-timeout 1h).  The log then says it was cut
# short, and the stop did not wait for it.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'signals-test-secret-0123456789abcdef');
my $ra = $t->receiver(secret => $secret);
my $rb = $t->receiver(secret => $secret);

$t->policy({ webhook => $ra->{url}, secret => 'hook' });
# -v: each attempt is logged as it starts
my $pid = $t->alertd('--attempt-timeout', '1h', '-v');
like($t->alertd_log, qr/\binfo: started .*, attempt timeout 3600000 ms,/,
     'alertd says an attempt may take an hour');

# SIGHUP, then a new line of the log that matches re
sub reload {
    my ($re) = @_;
    return $t->log_more($re, sub { kill 'HUP', $pid });
}

my $one = $t->alert(reason => 'one');
ok($t->wait_for(sub { $t->delivered($ra, $one) }), 'sink A gets alert 1');

# reload to sink B
$t->policy({ webhook => $rb->{url}, secret => 'hook' });
ok(reload(qr/reloaded .*: 1 sink/), 'SIGHUP: reloaded');
my $two = $t->alert(reason => 'two');
ok($t->wait_for(sub { $t->delivered($rb, $two) }), 'sink B gets alert 2');
ok(!$t->delivered($ra, $two), 'sink A does not');

# a broken policy: logged, the running one kept
my $good = $t->read_file('policy.yaml');
$t->write_file('policy.yaml', "version: 1\nclients: [\n");
ok(reload(qr/reload failed, the running policy is kept: \S*\.yaml:\d+/),
   'a bad policy is refused with file:line');
my $three = $t->alert(reason => 'three');
ok($t->wait_for(sub { $t->delivered($rb, $three) }),
   'alerts still go to sink B');
ok(kill(0, $pid), 'alertd still runs');

# a policy without sinks is taken, with a warning; alerts are not queued
$t->policy();
ok(reload(qr/warning: reloaded .*: 0 sink\(s\); alerts stay in/),
   'a policy without sinks: reloaded, with a warning');
my $none = $t->alert(reason => 'none');
ok($t->log_has(qr/no sinks for alert \Q$none\E/),
   'an alert then is only logged');
is(scalar($t->outbox), 0, 'and not queued');
$t->write_file('policy.yaml', $good);
ok(reload(qr/reloaded .*: 1 sink\(s\)$/m), 'sink B again');

# sink B goes down, alerts queue for it, then B is removed from the policy
$t->stop($rb->{pid}, 'TERM');
$t->write_file('policy.yaml', $good);
my $four = $t->alert(reason => 'four');
ok($t->log_has(qr/alert \Q$four\E not delivered/),
   'sink B down: alert 4 waits');
$t->policy({ webhook => $ra->{url}, secret => 'hook' });
ok(reload(qr/1 alert\(s\) queued for webhook \S+, which is not in/),
   'its queued alert is kept and the log says so');
ok(scalar($t->outbox) == 1, 'alert 4 is still in the outbox');

# B comes back, on the same port, and into the policy
my $rb2 = $t->receiver(secret => $secret, port => $rb->{port});
$t->policy({ webhook => $ra->{url}, secret => 'hook' },
           { webhook => $rb->{url}, secret => 'hook' });
kill 'HUP', $pid;
# generous: an attempt to B that ended after B left the policy made alert
# 4 itself wait, up to the 5-minute cap of the backoff
ok($t->wait_for(sub { $t->delivered($rb2, $four) },
                300 + $AlertdTest::WAIT),
   'once sink B is back in the policy, alert 4 is delivered');
ok(!$t->delivered($ra, $four), 'sink A never got alert 4 (it was not '
   . 'configured when 4 was written)');

# SIGUSR1 and SIGUSR2 (what a log rotation may send every process): logged,
# nothing else
kill 'USR1', $pid;
kill 'USR2', $pid;
ok($t->log_has(qr/SIGUSR1: nothing to do/)
   && $t->log_has(qr/SIGUSR2: nothing to do/), 'SIGUSR1, SIGUSR2: logged');
ok(kill(0, $pid), 'and alertd still runs');

# SIGTERM while a slow sink holds an attempt: A answers after an hour,
# and an attempt may take an hour, so only the stop can end one to A.
# A is first in the policy: its attempt starts before B's.
$t->stop($ra->{pid}, 'TERM');
my $slow = $t->receiver(secret => $secret, port => $ra->{port},
                        delay => 3600);
my $five = $t->alert(reason => 'five');
ok($t->wait_for(sub { $t->delivered($rb2, $five) }), 'alert 5 reaches B');
unlike($t->alertd_log, qr/\Q$ra->{label}\E: alert \Q$five\E not delivered/,
       'while A\'s attempt has not ended: A does not hold B up');
ok($t->in_flight($ra->{url}), 'the attempt to A is in flight');
# (stop() gives up after its generous wait, and the status is undef)
my $st = $t->stop($pid, 'TERM');
ok(defined $st && $st == 0, 'SIGTERM: exit 0');
my ($stop) = $t->alertd_log =~ /(\binfo: SIGTERM: stopping.*)\z/s;
my $re = qr/^info: SIGTERM: stopping, 1 attempt\(s\) in flight get up to /;
like($stop // '', qr/${re}3000 ms$/m,
     'the stop gives the attempt in flight a grace of 3 s');
$re = qr/alert \Q$five\E to \Q$ra->{label}\E: attempt cut short by /;
like($stop // '', qr/${re}the shutdown; it stays queued/,
     'then cuts it short');
unlike($stop // '', qr/alert \Q$five\E not delivered/,
       'it does not wait for the attempt to end');
is(scalar($t->outbox), 1, 'alert 5 for sink A is still queued');

$t->stop($slow->{pid}, 'TERM');
my $ra2 = $t->receiver(secret => $secret, port => $ra->{port});
$t->alertd;
ok($t->wait_for(sub { $t->delivered($ra2, $five) }),
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
