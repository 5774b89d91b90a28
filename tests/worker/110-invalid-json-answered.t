#!/usr/bin/perl

# An envelope refused as invalid JSON is answered under its job_id when
# that can be read as an oversized envelope's is (named once at the top
# level, unescaped, the object closed and nothing after it), whatever the
# fault elsewhere: an integer too big for the limits, a byte that is not
# UTF-8, a bad escape or a lone surrogate in the script.  Only a
# duplicate key was answered; the rest went to the dead-letter stream
# alone and the client waited for an answer that never came.  An
# envelope whose job_id cannot be read that way is still dead-lettered.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

my $bp = '"blueprint":{"inputs":[]}';
my %answered = (
    ij1 => [ '{"job_id":"ij1","session_id":"s-1","script":"1",' . $bp
             . ',"limits":{"wall_ms":99999999999999999999999}}',
             qr/too big integer/, 'an integer too big in the limits' ],
    ij2 => [ '{"session_id":"s-2","script":"print(\'' . "\xff"
             . '\')",' . $bp . ',"job_id":"ij2"}',
             qr/unable to decode byte 0xff/,
             'a byte that is not UTF-8 in the script, job_id after it' ],
    ij3 => [ '{"job_id":"ij3","session_id":"s-3","script":"\\x",' . $bp
             . '}', qr/invalid escape/, 'a bad escape in the script' ],
    ij4 => [ '{"job_id":"ij4","session_id":"s-4","script":"\\ud800",'
             . $bp . '}', qr/invalid Unicode/,
             'a lone surrogate in the script' ],
);
my %dead = (
    ij5 => [ '{"job_id":"ij5","session_id":"s-5","script":"a' . "\n"
             . 'b",' . $bp . '}', 'a raw newline in a string: not scanned' ],
    ij6 => [ '{"job_id":"ij6","session_id":"s-6","script":"\\x"',
             'not closed' ],
    ij7 => [ '{"job_id":"ij7","script":"\\x","job_id":"ij8"}',
             'two job_ids' ],
    ij9 => [ '{"job_id":"ij9","script":"\\x"} x', 'something after it' ],
);

plan tests => 2 * keys(%answered) + keys(%dead) + 4;

for my $id (sort keys %answered) {
    $w->add_raw($answered{$id}[0]);
}
for my $id (sort keys %dead) {
    $w->add_raw($dead{$id}[0]);
}

for my $id (sort keys %answered) {
    my ($raw, $why, $name) = @{$answered{$id}};
    (my $sess = $id) =~ s/^ij/s-/;
    my $r = $w->wait_result($id, 30);

    ok($r && $r->{status} eq 'rejected'
       && $r->{error}{code} eq 'bad_envelope'
       && $r->{session_id} eq $sess && !defined $r->{exit_code},
       "$name: rejected, answered under its job_id") or diag explain $r;
    like($r && $r->{error}{message},
         qr/^invalid JSON at line 1, column \d+: .*$why/, "$name: why");
}

my @dead;
for (1 .. 400) {
    @dead = @{$w->redis('XRANGE', 'airlock:jobs:dead', '-', '+')};
    last if @dead >= keys %dead;
    sleep 0.05;
}
my %in = map { my %f = @{$_->[1]}; ($f{job} => $f{error}) } @dead;

for my $id (sort keys %dead) {
    my ($raw, $name) = @{$dead{$id}};
    ok(($in{$raw} // '') =~ /^bad_envelope: invalid JSON/
       && !defined $w->redis('GET', "result:$id"),
       "$name: dead-lettered, no result");
}
is(scalar @dead, scalar keys %dead, 'nothing else dead-lettered');
ok(!defined $w->redis('GET', 'result:ij8'), 'no result under the second id');
is($w->pending_after, 0, 'every entry acknowledged');

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
