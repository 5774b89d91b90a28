#!/usr/bin/perl

# A session stored before sessions had owners has none at the head of
# its JSON, and is root's alone.  Anyone who named its id had the agent
# read it whole (up to 16 MiB) and parse it before it answered 404: for
# a GET, and for a question (before its lock, and again on a look after
# a busy lock), as many at once as they liked.  Now a head that names no
# owner has the session's text read through a piece at a time (GETRANGE,
# 64 KiB) for an owner, nothing parsed nor held whole: none, root's
# alone, 404.  Root still reads it whole.  The test counts the commands
# Redis ran (INFO commandstats), not the time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup;

plan tests => 12;

my $BOB = 61801;
my $sock = $a->{agents}{a}{sock};

sub req {
    my ($uid, $req) = @_;
    return Airlock::Test::parse_response(scalar $a->as_uid($sock, $uid,
                                                           $req));
}

sub get {
    my ($uid, $id) = @_;
    return req($uid, "GET /v1/sessions/$id HTTP/1.1\r\nHost: a\r\n"
                     . "Connection: close\r\n\r\n");
}

sub ask {
    my ($uid, $id) = @_;
    my $body = encode_json({ prompt => 'what is in it?' });
    return req($uid, "POST /v1/sessions/$id/ask HTTP/1.1\r\nHost: a\r\n"
                     . "Content-Length: " . length($body)
                     . "\r\nConnection: close\r\n\r\n$body");
}

# bytes Redis has sent its clients
sub sent {
    my ($n) = $a->redis_cli('INFO', 'stats')
              =~ /^total_net_output_bytes:(\d+)/m;
    return $n // -1;
}

# the calls Redis has run of a command, as INFO commandstats counts them
sub calls {
    my ($cmd) = @_;
    return ($a->redis_cli('INFO', 'commandstats')
            =~ /^cmdstat_\Q$cmd\E:calls=(\d+)/m)[0] // 0;
}

# a session of before owners, 8 MiB: "id", then its messages
my $old = qq({"id":"old-1","messages":[{"role":"user","content":")
          . ('x' x (8 << 20)) . qq("}],"runs":[]});
$t->write_file('old.json', $old);
system("redis-cli -s $d/redis.sock -x SET airlock:session:old-1 "
       . "< $d/old.json >/dev/null") == 0 or die "SET failed\n";
is($a->redis_cli('STRLEN', 'airlock:session:old-1'), length $old,
   'a session of before owners, 8 MiB, stored');

my $none = get($BOB, 'never-there');
is($none->{status}, 404, 'bob, a session not there: 404');

# the script that reads a session whole is an EVAL; the look at the
# head an EVAL_RO, the pieces GETRANGE
my ($eval, $range) = (calls('eval'), calls('getrange'));
my $r = get($BOB, 'old-1');
is($r->{status}, 404, 'bob\'s GET of it: 404');
is($r->{body}, $none->{body}, '... word for word the answer for none');
is(calls('eval') - $eval, 0, '... the session not read whole');
cmp_ok(calls('getrange') - $range, '>=', 128, '... but in pieces');

$eval = calls('eval');
$r = ask($BOB, 'old-1');
is($r->{status}, 404, 'bob\'s question in it: 404');
is(calls('eval') - $eval, 0, '... the session not read whole, no lock '
                             . 'taken');

my $before = sent();
$r = get(0, 'old-1');
is($r->{status}, 200, 'root reads it');
cmp_ok(sent() - $before, '>', 8 << 20, '... whole');

# an owner at the top level is found wherever it is; one nested in a
# message is no session's owner
$a->redis_cli('SET', 'airlock:session:nested', qq({"id":"nested",)
              . qq("messages":[{"role":"user","content":"x",)
              . qq("owner":"uid:$BOB"}],"runs":[]}));
is(get($BOB, 'nested')->{status}, 404,
   'an owner nested in a message: not bob\'s');
$a->redis_cli('SET', 'airlock:session:late', qq({"id":"late",)
              . qq("messages":[{"role":"user","content":"x"}],)
              . qq("runs":[],"owner":"uid:\\u0036) . substr($BOB, 1)
              . qq("}));
is(get($BOB, 'late')->{status}, 200,
   'an owner last, written with an escape: bob\'s');
