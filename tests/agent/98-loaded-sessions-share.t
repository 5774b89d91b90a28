#!/usr/bin/perl

# airlock-agent: --max-loaded-sessions bounds the sessions all the
# agent's processes hold in memory at once, and one user could take all
# of it: GETs of their own large session, their answers held unread (or
# questions in two large sessions, held for their wall time), and every
# other user's question or GET waited 5 s and got 503 "busy", for as
# long as the first liked.  Now one asker holds at most half of it,
# rounded up to a session at the bound (16 MiB): past that their own
# read is 503 "busy" (naming the share), and others are served.  The
# test holds answers unread and waits for answers, never for a time.

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

# 32 MiB of sessions at once; one user's share 16 MiB
$a->setup(agent => [ '--max-loaded-sessions', 2 ]);

plan tests => 9;

my $ALICE = 61801;
my $BOB = 61802;
my $sock = $a->{agents}{a}{sock};

$SIG{PIPE} = 'IGNORE';

# a session of about MiB mebibytes of long messages, owned by uid
sub plant {
    my ($id, $uid, $mib) = @_;
    my $msg = qq({"role":"user","content":") . ('x' x 4000) . qq("});
    my $n = int(($mib << 20) / (length($msg) + 1));
    my $s = qq({"id":"$id","owner":"uid:$uid","messages":[)
            . join(',', ($msg) x $n) . qq(],"runs":[]});
    $t->write_file("$id.json", $s);
    system("redis-cli -s $d/redis.sock -x SET airlock:session:$id "
           . "< $d/$id.json >/dev/null") == 0 or die "SET failed\n";
    return length $s;
}

my $alen = plant('mem-a', $ALICE, 10);
my $blen = plant('mem-b', $BOB, 4);

# a GET by alice that reads its answer's head, tells it, and reads the
# rest only once told to: (pid, its pipe, the go pipe)
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
        print {$s} "GET /v1/sessions/mem-a HTTP/1.1\r\nHost: a\r\n"
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

sub head {
    my ($c) = @_;
    my $h = '';
    while ($h !~ /\0\z/) {
        sysread($c->[1], $h, 4096, length $h) or last;
    }
    $h =~ s/\0\z//;
    return $h;
}

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

# alice's first GET holds her session (10 MiB), its answer unread; her
# next two would take her past 16 MiB
my @c = (client());
my @heads = (head($c[0]));
push @c, client(), client();
push @heads, head($c[1]), head($c[2]);

# every one of alice's answers has its head: bob asks
my $raw = scalar $a->as_uid($sock, $BOB, "GET /v1/sessions/mem-b "
                            . "HTTP/1.1\r\nHost: a\r\n"
                            . "Connection: close\r\n\r\n");
my $r = Airlock::Test::parse_response($raw);
is($r->{status}, 200, 'bob\'s GET while alice holds hers: 200')
    or diag(substr($raw, 0, 300));
is(length($r->{body} // ''), $blen, '... his session whole');

my @answers = map { Airlock::Test::parse_response($heads[$_] . rest($c[$_])) }
              0 .. $#c;
is($answers[0]{status}, 200, 'alice\'s first GET: 200');
is(length($answers[0]{body} // ''), $alen, '... her session whole');
is(join(',', map { $_->{status} // 'none' } @answers[1, 2]), '503,503',
   'her next two, past her share: 503');
is(scalar(grep { ((eval { decode_json($_->{body}) } // {})->{error} // '')
                 eq 'busy' } @answers[1, 2]), 2, '... "busy"');
like($answers[1]{body} // '', qr/one user's.*--max-loaded-sessions/,
     '... naming the share');
ok(($answers[1]{headers}{'retry-after'} // '') =~ /^\d+$/,
   '... with Retry-After');

# nothing held once they are done
$raw = scalar $a->as_uid($sock, $ALICE, "GET /v1/sessions/mem-a "
                         . "HTTP/1.1\r\nHost: a\r\n"
                         . "Connection: close\r\n\r\n");
$r = Airlock::Test::parse_response($raw);
is($r->{status}, 200, 'then alice\'s GET alone: 200');
