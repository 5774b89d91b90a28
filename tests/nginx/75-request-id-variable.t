#!/usr/bin/perl

# $request_id as the Airlock modules fill it (ngx_http_airlock_log.c: a
# per-worker generator instead of RAND_bytes for every request): 32 hex
# digits like nginx's own, the same value in the answer's x-request-id,
# the usage line and nginx's access log, and a different one on every
# request.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(http => "log_format rid '\$request_id \$status';",
          location => 'access_log %%TESTDIR%%/rid.log rid;');

$t->run;

plan tests => 6;

my $agent = $l->token('agent');
my (@ids, %seen, $same, $usage);

$same = 1;
$usage = 1;

for my $i (1 .. 40) {
    my $r = $l->chat(token => $agent);
    my $id = $r->{headers}{'x-request-id'} // '';
    push @ids, $id;
    $seen{$id}++;
    my $u = $l->last_usage($i);
    $usage = 0 unless ($u->{request_id} // '') eq $id;
}

is(scalar(grep { /^[0-9a-f]{32}$/ } @ids), 40,
   'every x-request-id is 32 hex digits');
is(scalar(keys %seen), 40, '40 requests, 40 ids');
ok($usage, 'each usage line has its answer\'s id');

my $log = '';
for (1 .. 50) {
    $log = $t->read_file('rid.log') // '';
    last if ($log =~ tr/\n//) >= 40;
    select(undef, undef, undef, 0.1);
}
my @logged = map { (split / /)[0] } grep { / 200$/ } split /\n/, $log;

is_deeply(\@logged, \@ids, 'the access log\'s $request_id is the same id');

my $r = $l->chat(token => $agent, model => 'not-a-model');
like($r->{headers}{'x-request-id'} // '', qr/^[0-9a-f]{32}$/,
     'a refusal has one too');

is($t->error_log_check, '', 'no alerts in the error log');
