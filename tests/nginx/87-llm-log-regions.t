#!/usr/bin/perl

# ngx_http_airlock_llm_module: the regions of a shared log buffer
# (airlock_llm_log FILE buffer=SIZE) across reloads.
#
# - A reload that changes worker_processes makes a zone of another size:
#   the old workers write what they held as they exit, the new ones take
#   regions of the new zone, and a SIGKILL of those loses nothing.
# - With worker_processes 1 the zone has four regions.  Old workers kept
#   alive by calls in flight hold theirs; the fifth generation finds none
#   free, says so, and holds its lines in its own memory, which it writes
#   when it stops.  Every call's line is in the file, once.
# - A log naming the file without buffer= writes through the buffer.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# calls held until the test lets them go may wait a minute (busy CI).
# The calls send Connection: close; the SIGKILL after the last one finds
# its usage line made, since the module ends a request whose body it
# read when the answer is sent, not when the client hangs up (nginx's
# lingering close; tests/nginx/68-airlock-linger.t).
sub conf {
    my ($workers) = @_;
    return $t->expand($l->conf(log => ' buffer=64k flush=1h'))
           =~ s/worker_processes 1;/worker_processes $workers;/r
           =~ s/proxy_read_timeout 10s;/proxy_read_timeout 60s;/gr;
}

$l->setup(log => ' buffer=64k flush=1h');
$t->write_file('nginx.conf', conf(2));
$t->run;

plan tests => 19;

my @ids;

# the calls' request ids, and their usage lines
sub calls { $l->chats($_[0], \@ids) }
sub lines { $l->usage_lines(@_) }
sub check { $l->check_lines($_[0], \@ids, @_[1 .. $#_]) }

# ---- a reload to three workers: a zone of another size ------------------

is(calls(10), 10, '10 calls, two workers');
is(scalar lines(1, 0.5), 0, 'their lines wait (flush=1h)');

$t->write_file('nginx.conf', conf(3));
$t->reload;
check('reloaded to three workers', lines(scalar @ids, 10));

is(calls(12), 12, '12 calls, three workers');
is(scalar $t->kill_workers, 3, 'SIGKILL: three new workers');
check('the new zone, after SIGKILL', lines(scalar @ids, 10));

# ---- one worker, four regions: five generations ---------------------------

$t->write_file('nginx.conf', conf(1));
$t->reload;
lines(scalar @ids, 10);

# a call that keeps the worker serving it alive until the file "release"
# exists
my @held;
my $release = $t->testdir . '/release';
for my $g (1 .. 4) {
    push @held, $l->held_chat({ wait_file => $release });
    $t->reload;
}

my $none = 'no free region in the shared buffer of "[^"]*usage\.log" '
         . '\(4 regions\)';
like($t->read_file('error.log') // '', qr/$none/,
     'the fifth generation: no free region, said');
is(calls(5), 5, '5 calls to the worker without a region');

# the held calls end, their workers exit and write their lines
$t->write_file('release', '');
my $ok = 0;
for my $s (@held) {
    local $/;
    my $raw = <$s>;
    my $r = parse_response($raw // '');
    $ok++ if $r->{status} == 200;
    push @ids, $r->{headers}{'x-request-id'} // 'none';
}
is($ok, 4, 'the four held calls answered');

my @l = lines(scalar @ids - 5, 10);
is(scalar @l, scalar @ids - 5,
   'the old workers wrote their lines; the last five wait');

# a log naming the file without buffer= (here in the location) writes
# through the file's buffer all the same, as access_log does
$t->write_file('nginx.conf',
               $t->expand($l->conf(log => ' buffer=64k flush=1h',
                   location => 'airlock_llm_log %%TESTDIR%%/usage.log;')));
$t->reload;
is(calls(3), 3, '3 calls, the location\'s log without buffer=');
is(scalar lines(scalar @ids, 0.5), scalar @ids - 3,
   'their lines wait in the buffer (the reload wrote the five before)');

$t->stop;
check('after stop', lines(scalar @ids, 5));
