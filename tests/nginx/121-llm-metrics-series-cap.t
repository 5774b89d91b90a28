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

plan tests => 5;

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

is($t->error_log_check, '', 'no alerts or sanitizer reports');
