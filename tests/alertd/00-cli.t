#!/usr/bin/perl
# airlock-alertd's command line: help, and configuration errors that are
# one clear line and exit status 2; detaching without --foreground.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(sleep);

my $t = AlertdTest->new;
my $d = $t->dir;

my $secret = $t->secret('hook', 'cli-test-secret-0123456789abcdef');
$t->policy({ webhook => 'http://127.0.0.1:9/hook', secret => 'hook' });

my @base = ('--policy', "$d/policy.yaml", '--keyring', $t->keyring,
            '--journal', $t->journal, '--state', $t->state);

# (args, expected stderr, name): exit 2 and exactly one line
sub config_error {
    my ($args, $re, $name) = @_;
    my ($rc, $err) = $t->run_alertd(@$args);
    is($rc, 2, "$name: exit 2");
    like($err, $re, "$name: says why");
    my $lines = () = $err =~ /\n/g;
    is($lines, 1, "$name: in one line") or diag($err);
}

my ($rc, $out) = $t->run_alertd('--help');
is($rc, 0, '--help exits 0');
{
    my $help = `\Q${\$t->bin}\E --help`;
    like($help, qr/^usage: airlock-alertd --policy FILE \[--keyring FILE\]/,
         '--help prints the usage on stdout');
    like($help, qr/--repeat-interval/, '--help lists the options');
}
like(`\Q${\$t->bin}\E --version`, qr/^airlock-alertd \d+\.\d+/, '--version');

config_error([], qr/--policy is required/, 'no arguments');
config_error([@base[0 .. 5]], qr/--state is required/, 'no --state');
config_error([@base, '--frob'], qr/unknown option "--frob"/,
             'unknown option');
config_error([@base, 'extra'], qr/unexpected argument "extra"/,
             'stray argument');
config_error([@base, '--repeat-interval'], qr/--repeat-interval needs a value/,
             'option without its value');
for my $bad ('0', '500ms', 'abc', '25h', '5 m', '-1s') {
    config_error([@base, '--repeat-interval', $bad],
                 qr/--repeat-interval "\Q$bad\E" is not a duration/,
                 "--repeat-interval $bad");
}
for my $bad ('0', '500ms', '2h', 'abc') {
    config_error([@base, '--poll-interval', $bad],
                 qr/--poll-interval "\Q$bad\E" is not a duration from 1s to 1h/,
                 "--poll-interval $bad");
}
for my $bad ('0', '500ms', '2h', 'abc') {
    config_error([@base, '--rotate-grace', $bad],
                 qr/--rotate-grace "\Q$bad\E" is not a duration from 1s to 1h/,
                 "--rotate-grace $bad");
}
for my $bad ('0', '500ms', '2h', 'abc') {
    config_error([@base, '--attempt-timeout', $bad],
                 qr/--attempt-timeout "\Q$bad\E" is not a duration from 1s to 1h/,
                 "--attempt-timeout $bad");
}

config_error(['--policy', "$d/nope.yaml", @base[2 .. 7]],
             qr/error: \S*nope\.yaml: .*No such file/, 'missing policy');
config_error([@base[0, 1], '--keyring', "$d/nokey", @base[4 .. 7]],
             qr/error: \S*nokey/, 'missing keyring');

$t->write_file('broken.yaml', "version: 1\nclients: {\n");
config_error(['--policy', "$d/broken.yaml", @base[2 .. 7]],
             qr/error: \S*broken\.yaml:\d+:\d+: /,
             'broken policy: file:line:column');

# no sinks: a valid policy (alerts are only logged); alertd says so
$t->policy();
my $pid0 = $t->alertd;
like($t->alertd_log, qr/warning: \S+ has no alerts\.sinks: alerts stay in /,
     'no sinks: alertd runs and warns');
is($t->stop($pid0, 'TERM') >> 8, 0, 'and stops cleanly');

unlink $secret;
$t->policy({ webhook => 'http://127.0.0.1:9/hook', secret => 'hook' });
config_error([@base], qr/secret "hook".*cannot open/, 'secret file missing');

$t->secret('hook', 'whsec_not*base64!');
$t->policy({ webhook => 'http://127.0.0.1:9/hook', secret => 'hook' });
config_error([@base], qr/starts with whsec_ but the rest is not base64/,
             'whsec_ secret that is not base64');
unlike($t->read_file("$d/run.err"), qr/not\*base64/,
       'the secret is not in the message');

$t->secret('hook', 'cli-test-secret-0123456789abcdef');
$t->policy({ webhook => 'http://127.0.0.1:9/hook', secret => 'hook' },
           { webhook => 'http://127.0.0.1:9/hook', secret => 'hook' });
config_error([@base], qr/policy\.yaml:\d+:\d+: alerts\.sinks lists this webhook url already/,
             'a sink twice (the policy loader refuses it, as nginx -t does)');

$t->policy({ webhook => 'http://127.0.0.1:9/hook', secret => 'hook' });
config_error([@base[0 .. 3], '--journal', "$d/no/such/dir/j", @base[6, 7]],
             qr/journal directory \S+: No such file/,
             'journal directory missing');

$t->write_file('plainfile', '');
config_error([@base[0 .. 5], '--state', "$d/plainfile/state"],
             qr/state directory \S+: Not a directory/,
             'state directory impossible');

# a second alertd on the same state directory
my $pid = $t->alertd;
config_error([@base], qr/another airlock-alertd is using the state directory/,
             'state directory in use');
$t->stop($pid, 'TERM');

# a bad byte before its end: damaged, not cut short by a crash (which
# 53-cut-files.t shows is set aside, and alertd runs)
$t->write_file($t->state . '/offset', '{"version":1,]}');
config_error([@base], qr/offset is not a valid state file .* move it away/,
             'damaged state file');
$t->write_file($t->state . '/offset', '{"version":1}x');
config_error([@base], qr/offset is not a valid state file .* move it away/,
             'a state file with bytes after it: damaged');
unlink $t->state . '/offset';

# a change log line that is JSON but not a save
$t->write_file($t->state . '/offset', '{"version":1,"journal":"/x",'
               . '"dev":1,"ino":1,"offset":0,"groups":[],"gen":1}');
$t->write_file($t->state . '/offset.log', qq({"gen":1,"groups":[]}\n));
config_error([@base],
             qr/offset\.log is not a valid state file .* move it away to go on/,
             'damaged change log');
unlink $t->state . '/offset', $t->state . '/offset.log';

# detaching: the parent returns once the daemon runs
($rc) = $t->run_alertd(@base);
is($rc, 0, 'without --foreground: the parent exits 0 once started');
my $daemon;
ok($t->wait_for(sub { $daemon = find_daemon($t->state) }),
   'and the daemon runs on');
if ($daemon) {
    is(getpgrp(0) == getpgrp($daemon) ? 'same' : 'own', 'own',
       'in its own session');
    kill 'TERM', $daemon;
    ok($t->wait_for(sub { !kill(0, $daemon) }), 'SIGTERM stops it');
}

($rc) = $t->run_alertd(@base[0 .. 5], '--state', "$d/plainfile/state");
is($rc, 2, 'without --foreground a configuration error still exits 2');

sub find_daemon {
    my ($state) = @_;
    for my $p (glob '/proc/[0-9]*') {
        open(my $fh, '<', "$p/cmdline") or next;
        local $/;
        my $c = <$fh> // next;
        next unless $c =~ /airlock-alertd\0/ && $c =~ /\0\Q$state\E(\0|$)/;
        my ($n) = $p =~ /(\d+)$/;
        return $n;
    }
    return undef;
}

$t->done;
