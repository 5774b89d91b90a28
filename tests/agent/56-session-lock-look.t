#!/usr/bin/perl

# airlock-agent: a question is refused for its session's lock on one
# look at the lock, taken with the lock in one script: a free session is
# taken, a session a run holds is busy (409 session_busy), a lock with
# no lease, which no run takes, is a damaged session (409
# session_damaged).  The agent took the lock with SET NX and, when that
# failed, looked again (TTL) to tell a run's lock from one with no
# lease; the lock could change between the two, and the answer mixed
# two looks: a run that let its lock go in between left the question
# refused as busy by a look that found the session free, and a run's
# lock replaced in between by one with no lease made a busy session
# "damaged".  A proxy in front of Redis (lib/redis-look.pl) runs the
# change right after the agent's first look at the lock, before the
# agent has its answer, and logs what each of the agent's looks found:
# the interleaving is forced, never a matter of timing.

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

$a->setup;

plan tests => 14;

sub redis {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

# agent "b" reaches Redis through the proxy
my $look = "$d/redis-look.log";
my $plan = "$d/redis-look.plan";
$t->write_file('redis-look.log', '');
$t->write_file('redis-look.plan', '');
my $pid = $t->run_daemon($^X, "$FindBin::Bin/lib/redis-look.pl",
                         "$d/redis-look.sock", "$d/redis.sock", $look,
                         $plan);
$t->wait_for_port("unix:$d/redis-look.sock")
    or die "redis-look.pl did not start\n"
           . ($t->read_file($t->{daemon_log}{$pid}) // '');
$a->start_agent('b', '--redis', "unix:$d/redis-look.sock");

# what the proxy is to do after the first look at a session's lock
sub plan_for {
    my ($session, @cmd) = @_;
    open(my $fh, '>>', $plan) or die "$plan: $!\n";
    print {$fh} "airlock:session:$session:lock @cmd\n";
    close $fh;
}

# the lock's PTTL at each of the agent's looks at a session's lock
sub looks {
    my ($session) = @_;
    my $key = "airlock:session:$session:lock";
    my $text = $t->read_file('redis-look.log') // '';
    return map { (split ' ')[3] } grep { /^\Q$key\E / } split /\n/, $text;
}

sub ask_b {
    my ($session, $text) = @_;
    $a->script({ pieces => [ $text ] });
    my ($ev, $raw) = $a->ask($session, 'a question', agent => 'b');
    my $r = Airlock::Test::parse_response($raw // '');
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    $r->{answer} = ((of_type('answer', $ev))[0] // {})->{text} // '';
    $r->{said} = $r->{status} . ' ' . ($r->{json}{error} // '');
    return $r;
}

# ---- the run lets its lock go right after the agent's look ------------------

redis(qw(SET airlock:session:let-go:lock a-run EX 60));
plan_for('let-go', 'DEL', 'airlock:session:let-go:lock');

my $r = ask_b('let-go', 'never');
is($r->{said}, '409 session_busy',
   'a run holds the lock at the look: busy');
my @l = looks('let-go');
cmp_ok($l[-1] // -2, '>', 0,
       '... and the look the answer rests on found it held')
    or diag("the looks found: @l");
is(redis(qw(EXISTS airlock:session:let-go:lock)), '0', 'the run let it go');

$r = ask_b('let-go', 'now');
is($r->{answer}, 'now', 'the session, free, is taken');

# ---- a lock with no lease, deleted right after the look ---------------------

redis(qw(SET airlock:session:planted:lock someone));
plan_for('planted', 'DEL', 'airlock:session:planted:lock');

$r = ask_b('planted', 'never');
is($r->{said}, '409 session_damaged',
   'a lock with no lease at the look: a damaged session');
@l = looks('planted');
is($l[-1] // '', '-1', '... as the look the answer rests on found it')
    or diag("the looks found: @l");

# ---- a run's lock replaced by one with no lease right after the look --------

redis(qw(SET airlock:session:replaced:lock a-run EX 60));
plan_for('replaced', 'SET', 'airlock:session:replaced:lock', 'someone');

$r = ask_b('replaced', 'never');
is($r->{said}, '409 session_busy',
   'a run holds the lock at the look: busy, not damaged');
@l = looks('replaced');
cmp_ok($l[-1] // -2, '>', 0,
       '... as the look the answer rests on found it')
    or diag("the looks found: @l");
is(redis(qw(GET airlock:session:replaced:lock)), 'someone',
   'the lock put there afterwards is kept as it is');

# ---- another run asks right after the look at a free session ---------------

plan_for('taken', 'SET', 'airlock:session:taken:lock', 'a-run', 'NX', 'EX',
         '60');

$r = ask_b('taken', 'mine');
is($r->{answer}, 'mine', 'a free session at the look is taken');
is(redis(qw(EXISTS airlock:session:taken:lock)), '0',
   '... the other run did not take it, and it is let go at the end');
is(scalar(@{$a->session('taken')->{json}{runs} // []}), 1,
   '... its run stored');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
