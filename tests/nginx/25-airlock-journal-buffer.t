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
use Time::HiRes qw(sleep);
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

is(deny('/nope/1'), 403, 'denied');
is(scalar journal(), 0, 'a deny line waits in the buffer');

sleep 2.6;
my @j = journal();
is(scalar @j, 1, 'the flush timer writes it');
is($j[0]{type}, 'deny', 'a deny line');

deny("/nope/$_") for 2 .. 3;
is(scalar journal(), 1, 'two more wait');

deny('/nope/4');
@j = journal();
is(scalar @j, 5, 'the alert is written at once, with what was buffered');
is_deeply([ map { $_->{type} } @j ], [ qw(deny deny deny deny alert) ],
          'in order: the deny lines, then the alert');
is($j[4]{count}, 4, 'alert count');

deny('/nope/5');
is(scalar journal(), 5, 'a later deny line waits again');

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
