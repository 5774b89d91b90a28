#!/usr/bin/perl

# Airlock's own log files and error-log lines.  The deny log, the journal
# and the LLM usage log are created 0640 (nginx would make them 0644),
# also when nginx reopens them on USR1 after a rotation, and an existing
# file readable by others is made 0640.  Denials go to the error log at
# the level airlock_log_level sets (like limit_req_log_level), error by
# default.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Time::HiRes qw(sleep time);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);
my $d = $t->testdir;

$p->echo_policy;

# an old journal, readable by everyone
$t->write_file('journal.log', '');
chmod 0644, "$d/journal.log";

my $conf = $p->conf(key => 0, http => <<'EOF', server => <<'EOF',
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log;
    airlock_llm_log %%TESTDIR%%/usage.log;
EOF
    airlock_log_level info;
EOF
    locations => <<'EOF');
        location /w/ {
            airlock on;
            airlock_log_level warn;
            %%AIRLOCK_LOCATION%%
        }
EOF

umask 022;
$t->write_file_expand('nginx.conf', $conf);
$t->start_echo(8081);
$t->run;

plan tests => 13;

sub mode { my @s = stat("$d/$_[0]"); @s ? sprintf('%04o', $s[2] & 07777)
                                        : 'missing' }

http_get('/nope');
http_get('/w/nope');

is(mode('deny.log'), '0640', 'deny log created 0640');
is(mode('journal.log'), '0640', 'an existing journal made 0640');
is(mode('usage.log'), '0640', 'LLM usage log created 0640');

my $err = $t->read_file('error.log') // '';
like($err, qr/\[info\] [^\n]*airlock: denied[^\n]*GET \/nope /,
     'server level airlock_log_level info: an info line');
like($err, qr/\[warn\] [^\n]*airlock: denied[^\n]*\/w\/nope/,
     'location airlock_log_level warn: a warn line');
unlike($err, qr/\[error\] [^\n]*airlock: denied/,
       'no error-level deny lines');

# rotation: the files are gone when nginx reopens them on USR1

for my $f (qw(deny.log journal.log usage.log)) {
    rename "$d/$f", "$d/$f.1" or die "rename $f: $!";
}

kill 'USR1', $t->nginx_pid;

# the worker reopens its files a moment after the master
my $until = time + 10;

while (time < $until) {
    http_get('/again');
    last if ($t->read_file('deny.log') // '') =~ /"path":"\/again"/;
    sleep 0.1;
}

is(mode('deny.log'), '0640', 'deny log reopened on USR1: 0640');
is(mode('journal.log'), '0640', 'journal reopened on USR1: 0640');
is(mode('usage.log'), '0640', 'LLM usage log reopened on USR1: 0640');
like($t->read_file('deny.log') // '', qr/"path":"\/again"/,
     'the reopened deny log is written');

# the level names

$conf =~ s/airlock_log_level info;/airlock_log_level debug;/;
$t->write_file_expand('nginx.conf', $conf);
my ($status, $out) = $t->reload_test;
isnt($status, 0, 'airlock_log_level debug: refused');
like($out, qr/invalid value "debug"/, 'airlock_log_level debug: message');

is($t->error_log_check, '', 'no alerts');
