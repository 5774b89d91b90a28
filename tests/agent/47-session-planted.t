#!/usr/bin/perl

# airlock-agent: session state planted in Redis is refused as a damaged
# session (409 session_damaged, kept as it is), never taken for a Redis
# failure or a run in progress.  A session key of another type (a hash)
# was answered 503 "redis" (WRONGTYPE), as if Redis could not be
# reached; a lock that never expires, which no run takes (a run's lock
# always has a lease), was "another question is running in this
# session", for good.  Neither crashes the agent, nor do sessions whose
# messages and runs are not what the agent writes, nor a million of
# them, which used to cost time quadratic in their number.

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

$a->setup(agent => [ '--max-wall', 30000 ]);

plan tests => 17;

sub redis {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

sub answer {
    my ($raw) = @_;
    my $r = Airlock::Test::parse_response($raw // '');
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}

# a session key that is a hash
redis(qw(HSET airlock:session:hash a b));
$a->script({ pieces => [ 'never' ] });
my (undef, $raw) = $a->ask('hash', 'a question');
my $r = answer($raw);
is($r->{status} . ' ' . ($r->{json}{error} // ''), '409 session_damaged',
   'a hash: the question is refused as a damaged session');
$r = $a->session('hash');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '409 session_damaged',
   'a hash: the session, too');
is(redis(qw(TYPE airlock:session:hash)), 'hash', 'a hash: kept as it is');
is(redis(qw(EXISTS airlock:session:hash:lock)), '0',
   'a hash: its lock let go');

# a lock that never expires
redis(qw(SET airlock:session:stuck:lock someone));
($_, $raw) = $a->ask('stuck', 'a question');
$r = answer($raw);
is($r->{status} . ' ' . ($r->{json}{error} // ''), '409 session_damaged',
   'a lock with no lease: the question is refused as a damaged session');
like($r->{json}{message} // '', qr/lock/, 'a lock with no lease: named');
is(redis(qw(GET airlock:session:stuck:lock)), 'someone',
   'a lock with no lease: kept as it is');

# a run's lock, with its lease: busy, as before
redis(qw(SET airlock:session:busy:lock someone EX 60));
($_, $raw) = $a->ask('busy', 'a question');
$r = answer($raw);
is($r->{status} . ' ' . ($r->{json}{error} // ''), '409 session_busy',
   'a lock with a lease: busy');

# messages and runs of every kind but the agent's: asked and stored
redis('SET', 'airlock:session:odd',
      '{"messages":[1,"x",null,[],{"role":5},{"role":"tool","content":5,'
      . '"untrusted":true,"lead":7,"tool_call_id":{}},{"role":"user"},'
      . '{"role":"assistant","tool_calls":7}],"runs":[1,{"events":5}]}');
$a->script({ pieces => [ 'fine' ] });
my $ev = $a->ask('odd', 'a question');
is(((of_type('answer', $ev))[0] // {})->{text}, 'fine',
   'odd messages: answered');
$r = $a->session('odd');
is($r->{status}, 200, 'odd messages: the session is served');
is(scalar(@{$r->{json}{runs} // []}), 3, 'odd messages: the run kept');

# a million messages and a million runs (5 MB): each dropped from the
# front in turn, each drop moving all after it, the run's process spent
# minutes of CPU (hours for a few MB more) holding the session's lock
my $objects = join(',', ('{}') x 1_000_000);
my $million = join(',', (1) x 1_000_000);
open(my $set, '|-', 'redis-cli', '-s', "$d/redis.sock", '-x', 'SET',
     'airlock:session:many') or die "redis-cli: $!\n";
print $set "{\"messages\":[$objects],\"runs\":[$million]}";
close $set;
$a->script({ pieces => [ 'quick' ] });
$ev = $a->ask('many', 'a question', timeout => 20);
is(((of_type('answer', $ev))[0] // {})->{text}, 'quick',
   'a million: answered');
$r = $a->session('many');
is(join(',', map { ref $_ eq 'HASH' ? $_->{role} // '?' : '?' }
              @{$r->{json}{messages} // []}),
   'user,assistant', 'a million: the old messages dropped');
is(scalar(@{$r->{json}{runs} // []}), 50, 'a million: 50 runs kept');

# the agent is still there
$a->script({ pieces => [ 'still here' ] });
$ev = $a->ask('fresh', 'a question');
is(((of_type('answer', $ev))[0] // {})->{text}, 'still here',
   'a new session: answered');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
