#!/usr/bin/perl

# ngx_http_airlock_llm_module: airlock_llm_metrics shows every series the
# zone holds, also when there are more than "series=" allows: a reload
# that lowers the cap (or a zone of a new size, into which all of the old
# one's series are copied) keeps the series already counted, and they go
# on counting, so the metrics must not drop some of them.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;
$t->run;

plan tests => 9;

sub series {
    my $m = parse_response(http_get('/metrics', port => 8082))->{body} // '';
    my @s = $m =~ /^airlock_llm_requests_total\{provider="openai",client="agent",model="gpt-4o-mini",status="(\d+)"\} 1$/mg;
    return scalar @s;
}

# 70 series: one call answered with each of 70 statuses

my @status = grep { $_ != 444 } 400 .. 470;
$l->script(map { { status => $_ } } @status);

my $ok = 0;
for my $s (@status) {
    my $r = $l->chat(token => $l->token('agent'));
    $ok++ if $r->{status} == $s;
}
is($ok, 70, '70 calls, each answered with its own status');
is(series(), 70, 'the metrics show the 70 series');

# series=1: the zone is reused as it is, with its 70 series

my $conf = $t->read_file('nginx.conf');
$conf =~ s/airlock_llm_zone llm 1m;/airlock_llm_zone llm 1m series=1;/
    or die "no zone in nginx.conf";
$t->write_file('nginx.conf', $conf);
$t->reload;

is(series(), 70, 'after a reload to series=1: still the 70 series');

# a zone of a new size: all 70 are copied, and shown

$conf =~ s/airlock_llm_zone llm 1m series=1;/airlock_llm_zone llm 2m series=1;/;
$t->write_file('nginx.conf', $conf);
$t->reload;

is(series(), 70, 'a zone of a new size: the 70 series copied and shown');

# past the cap: the calls of new series are dropped, and one alert per
# worker says what to change (it asked for a larger zone, which does not
# raise the cap)

sub alerts {
    my ($re) = @_;
    return grep { /\[alert\]/ && $_ =~ $re }
           split /\n/, $t->read_file('error.log');
}

$l->script({ status => 471 }, { status => 472 });
$l->chat(token => $l->token('agent')) for 1 .. 2;

my @cap = alerts(qr/series=1\b/);
is(scalar @cap, 1, 'past series=1: one alert for two calls dropped');
like($cap[0] // '',
     qr/reached series=1: .*airlock_llm_series_dropped_total.* raise "series="/,
     '... which says to raise it')
    or diag($cap[0]);

# a zone full of series: the budget that then finds no room, which
# refuses calls (503), is alerted too, not hidden behind the series alert

$conf =~ s/airlock_llm_zone llm 2m series=1;/airlock_llm_zone llm 32k;/;
$t->write_file('nginx.conf', $conf);
$t->reload;

my @more = grep { $_ != 444 } 500 .. 599;
$l->script(map { { status => $_ } } @more);
for (@more) {
    $l->chat(token => $l->token('agent'));
    last if alerts(qr/no room for a series node/);
}
$l->script();

is(scalar alerts(qr/no room for a series node/), 1,
   'a zone full of series: its alert');

my $r = $l->chat(token => $l->token('tight'));
my @budget = alerts(qr/no room for a budget node.*make the zone larger/);
ok($r->{status} == 503 && @budget == 1,
   '... and a budget it has no room for: 503, and its own alert')
    or diag("$r->{status}, " . scalar @budget);

is($t->error_log_check(qr/reached series=1|no room for a (series|budget)/),
   '', 'no other alerts or sanitizer reports');
