#!/usr/bin/perl

# airlock-agent: each connection's process reads, parses and keeps its
# own copy of the session it serves, and nothing bounded them all
# together: one user's GETs of their own large session, as many at once
# as --max-user-connections lets them, took as much memory as there
# were (the unit's MemoryMax then had the OOM killer end every user's
# runs).  Now the sessions read into memory at once are bounded by
# --max-loaded-sessions (sessions of 16 MiB, a smaller one counting as
# its size): a read past it waits a little, then is 503 "busy" with
# Retry-After, and nothing is lost.  The test holds every answer
# unread, so each process keeps what it read, and sums the memory of
# the agent's processes once every client has its answer's head: it
# waits for answers, never for a time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Socket::UNIX;
use JSON::PP;
use POSIX ();
use Socket qw(SOCK_STREAM);
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

# one session of 16 MiB in memory at once: two of the test's 6 MiB
$a->setup(agent => [ '--max-loaded-sessions', 1 ]);

plan tests => 12;

my $ALICE = 61701;
my $CLIENTS = 12;
my $sock = $a->{agents}{a}{sock};
my $pid = $a->agent_pid;

$SIG{PIPE} = 'IGNORE';

# alice's session, 6 MiB of short messages, as the agent stores them
my $msg = qq({"role":"user","content":") . ('x' x 200) . qq("});
my $n = int((6 << 20) / (length($msg) + 1));
my $big = qq({"id":"big-1","owner":"uid:$ALICE","messages":[)
          . join(',', ($msg) x $n) . qq(],"runs":[]});
$t->write_file('big.json', $big);
system("redis-cli -s $d/redis.sock -x SET airlock:session:big-1 "
       . "< $d/big.json >/dev/null") == 0 or die "SET failed\n";
is($a->redis_cli('STRLEN', 'airlock:session:big-1'), length $big,
   'alice\'s session of 6 MiB stored');

# a GET by alice that reads its answer's head, tells it, and reads the
# rest only once told to (its pipe closed): (pid, its pipe, the go pipe);
# each closes the earlier ones' pipes, which it would otherwise hold open
my @pipes;

sub client {
    pipe(my $r, my $w) or die "pipe: $!\n";
    pipe(my $gr, my $gw) or die "pipe: $!\n";
    my $cpid = fork // die "fork: $!\n";

    if ($cpid == 0) {
        close $_ for $r, $gw, @pipes;
        $( = $ALICE;
        $) = "$ALICE $ALICE";
        $< = $> = $ALICE;
        POSIX::_exit(3) if $> != $ALICE;
        alarm 120;
        my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $sock)
            or POSIX::_exit(4);
        print {$s} "GET /v1/sessions/big-1 HTTP/1.1\r\nHost: a\r\n"
                   . "Connection: close\r\n\r\n";
        my $head = '';
        while ($head !~ /\r\n\r\n\z/) {
            sysread($s, $head, 1, length $head) or last;
        }
        syswrite($w, $head . "\0");
        my $go = <$gr>;                       # EOF: go on
        local $/;
        my $rest = <$s> // '';
        syswrite($w, $rest);
        close $w;
        POSIX::_exit(0);
    }

    close $w;
    close $gr;
    push @pipes, $r, $gw;

    return [ $cpid, $r, $gw ];
}

# the agent's processes' own memory (RssAnon), all together, in bytes
sub children_memory {
    my $sum = 0;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open(my $fh, '<', $stat) or next;
        my $line = <$fh> // '';
        close $fh;
        my ($ppid) = $line =~ /\)\s+\S+\s+(\d+)/;
        next unless defined $ppid && $ppid == $pid;
        (my $status = $stat) =~ s/stat$/status/;
        open($fh, '<', $status) or next;
        my ($kb) = join('', <$fh>) =~ /^RssAnon:\s+(\d+) kB/m;
        close $fh;
        $sum += ($kb // 0) * 1024;
    }
    return $sum;
}

# a client's answer's head, once it is in (none: '')
sub head {
    my ($c) = @_;
    my $h = '';
    while ($h !~ /\0\z/) {
        sysread($c->[1], $h, 4096, length $h) or last;
    }
    $h =~ s/\0\z//;
    return $h;
}

# the rest of it, once it is told to read on
sub rest {
    my ($c) = @_;
    local $/;
    close $c->[2];
    my $r = $c->[1];
    my $rest = <$r> // '';
    close $r;
    waitpid($c->[0], 0);
    return $rest;
}

# what one GET of it holds as it is sent
my $one = client();
my $h = head($one);
my $copy = children_memory();
like(rest($one), qr/"runs":\[\]\}\z/, 'one GET alone: the session whole')
    or diag($h);
@pipes = ();

my @c = map { client() } 1 .. $CLIENTS;

# every client's head, as it comes
my @heads = map { head($_) } @c;

# every answer's head is in: each process still serving holds its answer
my $held = children_memory();

close $_->[2] for @c;

my @answers = map { Airlock::Test::parse_response($heads[$_] . rest($c[$_])) }
              0 .. $#c;

my @ok = grep { ($_->{status} // 0) == 200 } @answers;
my @busy = grep { ($_->{status} // 0) == 503 } @answers;

is(@ok + @busy, $CLIENTS, "each of $CLIENTS GETs at once: 200, or 503")
    or diag(join "\n", map { $_->{status} // 'none' } @answers);
ok(@ok >= 1, 'at least one reads the session (' . scalar(@ok) . ')');
is(scalar(grep {
       my $s = eval { decode_json($_->{body}) };
       $s && @{$s->{messages} // []} == $n
   } @ok), scalar(@ok), '... each whole');

# --max-loaded-sessions 1: 16 MiB of sessions, two of 6 MiB at once
cmp_ok($held, '<=', 3 * $copy, 'the agent\'s processes held three GETs\' '
       . 'memory at most (' . int($held / 1048576) . ' MiB; one: '
       . int($copy / 1048576) . ' MiB)');

SKIP: {
    ok(@busy, 'some were busy') or skip 'none was busy', 3;

    is(scalar(grep { ((eval { decode_json($_->{body}) } // {})->{error}
                      // '') eq 'busy' } @busy),
       scalar(@busy), 'the others: 503 "busy" (' . scalar(@busy) . ')');
    is(scalar(grep { ($_->{headers}{'retry-after'} // '') =~ /^\d+$/ }
              @busy),
       scalar(@busy), '... with Retry-After');
    like($busy[0]{body}, qr/--max-loaded-sessions/, '... naming the bound');
}

# nothing is held once they are done: one read alone goes through
my $raw = scalar $a->as_uid($sock, $ALICE, "GET /v1/sessions/big-1 "
                            . "HTTP/1.1\r\nHost: a\r\n"
                            . "Connection: close\r\n\r\n");
my $r = Airlock::Test::parse_response($raw);
is($r->{status}, 200, "then one GET alone: 200") or diag($raw);
is(length($r->{body} // ''), length $big, '... the session whole');
