#!/usr/bin/perl

# airlock-agent: one user's questions cannot hold every other user's
# sandbox jobs behind theirs.  The workers take the jobs of the stream
# in the order they came, and --max-queued-jobs (1024) bounds the
# stream, every user's together: one user's questions at once, each
# awaiting a job, queued as many as they had connections (32 a local
# uid), and every other user's job waited behind them, its run out of
# wall time before a worker reached it.  Now the jobs one asker awaits
# at once, all their questions', are at most --max-user-jobs: past it
# the call is an error the model is told, no job added, and another
# user's job is still queued.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use POSIX ();
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 60000, '--max-user-jobs', 2 ]);

plan tests => 12;

my ($ALICE, $BOB) = (61001, 61002);
my $sock = $a->{agents}{a}{sock};

sub ask_start {
    my ($uid, $id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return [ $a->as_uid_start($sock, $uid,
                              "POST /v1/sessions/$id/ask HTTP/1.1\r\n"
                              . "Host: a\r\nContent-Length: "
                              . length($body)
                              . "\r\nConnection: close\r\n\r\n$body") ];
}

sub ask_end {
    my ($p) = @_;
    return [ AgentTest::events(scalar $a->as_uid_end(@$p)) ];
}

sub xlen { $a->redis_cli(qw(XLEN airlock:jobs)) || 0 }

# a bounded wait for a condition, polled
sub wait_until {
    my ($cond) = @_;
    for (1 .. 300) {
        return 1 if $cond->();
        select(undef, undef, undef, 0.1);
    }
    return 0;
}

sub python {
    my ($n) = @_;
    return { tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('job $n')" } } ] };
}

# no worker yet: bob's two questions each await a job
$a->script(python(1));
my $b1 = ask_start($BOB, 'bob-1', 'first');
ok(wait_until(sub { xlen() == 1 }), 'bob\'s first job queued');

$a->script(python(2));
my $b2 = ask_start($BOB, 'bob-2', 'second');
ok(wait_until(sub { xlen() == 2 }), 'his second job queued');

# his third, at once: refused, the run goes on
$a->script(python(3), { pieces => [ 'without it' ] });
my $b3 = ask_start($BOB, 'bob-3', 'third');
my $ended = 0;
ok(wait_until(sub { $ended ||= waitpid($b3->[0], POSIX::WNOHANG())
                               == $b3->[0];
                    $ended || xlen() > 2 }),
   'his third question ends, or its job is queued');
is(xlen(), 2, 'no job of his third question queued');
my $ev = !$ended ? [] : [ AgentTest::events(do { local $/; my $fh = $b3->[1];
                                                 <$fh> =~ s/^answer //r }) ];
my ($err) = of_type('error', $ev);
is(($err // {})->{code}, 'job', 'the call is an error');
like($err->{message} // '', qr/uid:$BOB await 2 jobs at once.*--max-user-jobs 2/,
     'naming whose jobs, and the option');
my ($ans) = of_type('answer', $ev);
is(($ans // {})->{text}, 'without it', 'the model told, the run goes on');

# alice's job is queued all the same
$a->script(python(4));
my $a1 = ask_start($ALICE, 'alice-1', 'hers');
ok(wait_until(sub { xlen() == 3 }), 'alice\'s job queued');

# a worker runs the three
$a->llm->script_all({ pieces => [ 'done' ] });
$a->start_worker;
for my $p ([ 'bob\'s first', $b1 ], [ 'bob\'s second', $b2 ],
           [ 'alice\'s', $a1 ]) {
    my $e = ask_end($p->[1]);
    my ($job) = of_type('job', $e);
    is(($job // {})->{status}, 'ok', "$p->[0] job run");
}

is($a->agent_errors, '', 'no sanitizer report');
