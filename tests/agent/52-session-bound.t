#!/usr/bin/perl

# airlock-agent: a session is at most 16 MiB of JSON.  One stored larger
# (no agent stores one) is refused as damaged, kept as it is, and not
# read: the agent read a session whole whatever its size, and jansson
# takes up to 80 times the text's size to parse it, so a session planted
# in Redis made the question's process as large as it liked.  And the
# agent never stores one larger: a question that would make it so drops
# the oldest runs' records (then the oldest questions' messages), never
# its own; one that alone is larger has its largest strings cut to a
# note (tests/agent/76-session-kept.t).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-tool-bytes', 20 * 1024 * 1024 ]);

plan tests => 15;

my $MAX = 16 * 1024 * 1024;

sub redis {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

sub plant {
    my ($key, $value) = @_;
    open(my $set, '|-', "redis-cli -s $d/redis.sock -x SET $key "
         . '>/dev/null') or die "redis-cli: $!\n";
    print $set $value;
    close $set;
}

sub sent {
    my ($n) = redis(qw(INFO stats)) =~ /^total_net_output_bytes:(\d+)/m;
    return $n // 0;
}

sub answer {
    my ($raw) = @_;
    my $r = Airlock::Test::parse_response($raw // '');
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}

sub run_record {
    my ($name, $text) = @_;
    return '{"run":"' . $name . '","time":"2026-01-01T00:00:00Z",'
        . '"prompt":"p","outcome":"answer","events":[{"type":"answer",'
        . '"text":"' . $text . '"}]}';
}

# ---- a session of 16 MiB and a byte: refused, not read --------------------

my $head = '{"id":"big","messages":[],"runs":[],"pad":"';
plant('airlock:session:big',
      $head . ('z' x ($MAX + 1 - length($head) - 2)) . '"}');
is(redis(qw(STRLEN airlock:session:big)), $MAX + 1, 'planted: 16 MiB + 1');

my $before = sent();
$a->script({ pieces => [ 'never' ] });
my (undef, $raw) = $a->ask('big', 'a question');
my $r = answer($raw);
is($r->{status} . ' ' . ($r->{json}{error} // ''), '409 session_damaged',
   'over the bound: the question is refused as a damaged session');
like($r->{json}{message} // '', qr/16777217 bytes, over the 16777216/,
     'over the bound: the message says so');
$r = $a->session('big');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '409 session_damaged',
   'over the bound: the session, too');
my $got = sent() - $before;
cmp_ok($got, '<', 1024 * 1024, "over the bound: Redis sent the agent $got "
       . 'bytes, not the session');
is(redis(qw(STRLEN airlock:session:big)), $MAX + 1,
   'over the bound: kept as it is');

# ---- a session a question takes over the bound: its oldest run dropped ----

my $frame = '{"id":"full","messages":[],"runs":[' . run_record('old', '')
    . ',' . run_record('older', '') . ']}';
my $each = int(($MAX - 100 - length($frame)) / 2);
plant('airlock:session:full', '{"id":"full","messages":[],"runs":['
      . run_record('old', 'a' x $each) . ','
      . run_record('older', 'b' x $each) . ']}');
cmp_ok(redis(qw(STRLEN airlock:session:full)), '<=', $MAX,
       'planted: just under the bound');

$a->script({ pieces => [ 'one more' ] });
my $ev = $a->ask('full', 'one more question');
is(((of_type('answer', $ev))[0] // {})->{text}, 'one more',
   'under the bound: answered');
cmp_ok(redis(qw(STRLEN airlock:session:full)), '<=', $MAX,
       'stored: at most 16 MiB');
$r = $a->session('full');
is(join(',', map { $_->{prompt} } @{$r->{json}{runs} // []}),
   'p,one more question', 'stored: the oldest run dropped, the new kept');

# ---- a question alone over the bound: stored, its result cut to a note ---

$a->script({ pieces => [ 'small' ] });
$a->ask('alone', 'a small question');
$t->write_file('service-logs.txt', 'L' x (17 * 1024 * 1024));
$a->script({ tool_calls => [ { name => 'logs', arguments => {
                 params => { service => 'api' } } } ] },
           { pieces => [ 'never' ] });
$ev = $a->ask('alone', 'the whole log');
my @err = map { $_->{code} } of_type('error', $ev);
ok(!grep({ $_ eq 'not_stored' } @err), 'alone: stored');
is(($ev->[-1] // {})->{type}, 'done', 'alone: "done" last');
$r = $a->session('alone');
is(join(',', map { $_->{prompt} } @{$r->{json}{runs} // []}),
   'a small question,the whole log', 'alone: both questions kept');
my @tool = grep { ($_->{role} // '') eq 'tool' }
           @{$r->{json}{messages} // []};
like(($tool[-1] // {})->{content} // '', qr/^\[not kept: \d+ bytes as JSON/,
     'alone: the result cut to a note (tests/agent/76-session-kept.t)');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
