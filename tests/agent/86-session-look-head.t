#!/usr/bin/perl

# GET /v1/sessions/{id} of another's session read it whole, up to 16 MiB,
# before answering 404: the answer came as much later than one for a
# session not there as the session was large, and so told any local
# user whether a session was stored under an id, and about how large
# it was.  Now another's is told from the head of the session (its
# owner) or its id's tag, and nothing more of it is read.  The test
# counts what Redis sent, not the time.

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

plan tests => 8;

my ($ALICE, $BOB) = (61601, 61602);
my $sock = $a->{agents}{a}{sock};

sub get {
    my ($uid, $id) = @_;
    my $raw = scalar $a->as_uid($sock, $uid, "GET /v1/sessions/$id "
                                . "HTTP/1.1\r\nHost: a\r\n"
                                . "Connection: close\r\n\r\n");
    return Airlock::Test::parse_response($raw);
}

# bytes Redis has sent its clients
sub sent {
    my ($n) = $a->redis_cli('INFO', 'stats')
              =~ /^total_net_output_bytes:(\d+)/m;
    return $n // -1;
}

# alice's session, 8 MiB, "id" and "owner" first as the agent stores them
my $big = qq({"id":"big-1","owner":"uid:$ALICE","messages":[{"role":)
          . qq("user","content":") . ('x' x (8 << 20)) . qq("}],"runs":[]});
$t->write_file('big.json', $big);
system("redis-cli -s $d/redis.sock -x SET airlock:session:big-1 "
       . "< $d/big.json >/dev/null") == 0 or die "SET failed\n";
is($a->redis_cli('STRLEN', 'airlock:session:big-1'), length $big,
   'alice\'s session of 8 MiB stored');

my $none = get($BOB, 'never-there');
is($none->{status}, 404, 'bob, a session not there: 404');

my $before = sent();
my $r = get($BOB, 'big-1');
my $used = sent() - $before;
is($r->{status}, 404, 'bob, alice\'s: 404');
is($r->{body}, $none->{body}, '... word for word the answer for none');
cmp_ok($used, '<', 1 << 20, "... Redis sent less than 1 MiB for it "
                            . "($used bytes)");

# another's new session id, never stored: the tag tells
my $new = eval { decode_json(Airlock::Test::parse_response(scalar
    $a->as_uid($sock, $ALICE, "POST /v1/sessions HTTP/1.1\r\nHost: a\r\n"
               . "Content-Length: 0\r\nConnection: close\r\n\r\n"))->{body})
}->{id} // '';
is(get($BOB, $new)->{body}, $none->{body},
   'bob, alice\'s new session: the same answer');

$before = sent();
$r = get($ALICE, 'big-1');
is($r->{status}, 200, 'alice reads hers');
cmp_ok(sent() - $before, '>', 8 << 20, '... read whole');
