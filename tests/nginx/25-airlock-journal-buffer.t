#!/usr/bin/perl

# ngx_http_airlock_module: a buffered journal (airlock_journal FILE
# buffer= flush=).  Deny lines wait in the worker's buffer until the flush
# timer; an alert is written at once, after the deny lines before it, so
# the journal keeps its order and airlock-alertd sees the alert without
# waiting.  What is buffered is written when the worker exits.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(time sleep);
use Time::Local ();
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $tok = 'token-a-0123456789';

$p->echo_policy(token => $tok, threshold => 4);

$t->write_file_expand('nginx.conf', $p->conf(http => <<'EOF'));
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log buffer=64k flush=2s;
EOF

$t->start_echo(8081);
$t->run;

plan tests => 12;

my $json = JSON::PP->new->utf8;

# the deny and alert lines: the zone line a worker writes when it
# starts (tests/nginx/210-airlock-zone-new.t) is not buffered
sub journal {
    my $text = $t->read_file('journal.log') // '';
    return grep { $_->{type} ne 'zone' }
           map { $json->decode($_) } grep { length } split /\n/, $text;
}

sub deny {
    return parse_response(http_get($_[0],
        headers => { 'Proxy-Authorization' => "Bearer $tok" }))->{status};
}

# No guess at when the flush is due: a line tells when it was logged, and
# the file when it was last written.  Lines that wait for the timer are
# not in the file before flush= (2s) after the first of them; a loaded
# machine may only make the timer late, so lines found in the file must
# have been written no sooner than that.  A file's times are kept by a
# coarser clock than nginx's: a tenth of a second is allowed for it.

# "2026-12-07T04:07:49.327Z"
sub wall {
    my ($iso) = @_;
    return undef unless ($iso // '') =~
        /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z$/;
    return Time::Local::timegm($6, $5, $4, $3, $2 - 1, $1) + ($7 // 0);
}

# the journal's lines from the $n-th (from 0) were written no sooner than
# flush= after it was logged, or are not in it yet
sub waited {
    my ($n) = @_;
    my @j = journal();
    return 1 if @j <= $n;
    my $logged = wall($j[$n]{time});
    my $written = (Time::HiRes::stat($t->testdir . '/journal.log'))[9];
    return 1 if defined $logged && $written >= $logged + 1.9;
    diag "line $n logged at $j[$n]{time}, written at $written";
    return 0;
}

# the journal's lines, once it has $n, or after a minute
sub journal_lines {
    my ($n) = @_;
    my $deadline = time + 60;
    my @j;
    while (time < $deadline) {
        @j = journal();
        last if @j >= $n;
        sleep 0.05;
    }
    return @j;
}

is(deny('/nope/1'), 403, 'denied');
my @j = journal_lines(1);
ok(waited(0), 'a deny line waits in the buffer');

is(scalar @j, 1, 'the flush timer writes it');
is($j[0]{type}, 'deny', 'a deny line');

deny("/nope/$_") for 2 .. 3;
ok(waited(1), 'two more wait');

deny('/nope/4');
@j = journal();
is(scalar @j, 5, 'the alert is written at once, with what was buffered');
is_deeply([ map { $_->{type} } @j ], [ qw(deny deny deny deny alert) ],
          'in order: the deny lines, then the alert');
is($j[4]{count}, 4, 'alert count');

deny('/nope/5');
ok(waited(5), 'a later deny line waits again');

$t->stop;
@j = journal();
is(scalar @j, 6, 'worker exit writes the buffer');
is($j[5]{path}, '/nope/5', 'the last deny line');

# flush= alone is a configuration error
$t->write_file_expand('nginx.conf', $p->conf(http => <<'EOF'));
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log flush=2s;
EOF
my ($rc, $out) = $t->reload_test;
like($out, qr/flush= needs buffer=/, 'flush without buffer refused');
