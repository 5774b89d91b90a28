#!/usr/bin/perl

# airlock-agent: the reply to the script that adds a job (XADD, and its
# record in airlock:jobs:awaited) lost with the connection, after Redis
# ran it: the agent looks for the job's record once Redis answers again,
# and awaits the job it finds.  It used to tell the model the job was
# not added ("redis XADD: ..."), though it was, and a worker ran it all
# the same; a model told so asks again, and the job ran twice, its
# inputs fetched twice.  A proxy in front of Redis runs the script and
# drops the connection in place of its reply, once.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

$a->setup(agent => [ '--max-wall', 30000 ]);

# the proxy: every connection forwarded both ways; the first command
# that adds a job goes to Redis, and its reply is dropped with the
# connection (MARK written then)
$t->write_file('drop-proxy.pl', <<'PL');
use strict;
use warnings;
use IO::Select;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);

my ($listen, $redis, $mark) = @ARGV;
$SIG{PIPE} = 'IGNORE';
unlink $listen;
my $l = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $listen,
                              Listen => 64) or die "listen: $!";
chmod 0777, $listen;
my $sel = IO::Select->new($l);
my (%peer, %drop, $dropped);

for (;;) {
    for my $s ($sel->can_read) {
        if ($s == $l) {
            my $c = $l->accept or next;
            my $r = IO::Socket::UNIX->new(Type => SOCK_STREAM,
                                          Peer => $redis)
                or do { close $c; next };
            @peer{$c, $r} = ($r, $c);
            $sel->add($c, $r);
            next;
        }
        my $o = $peer{$s};
        my $n = sysread($s, my $buf, 65536);
        if (!$n || ($drop{$s} && !$dropped)) {
            if ($n) {
                $dropped = 1;
                open(my $fh, '>', $mark);
                close $fh;
            }
            for my $x ($s, $o) {
                $sel->remove($x);
                delete $peer{$x};
                delete $drop{$x};
                close $x;
            }
            next;
        }
        # a client's command that adds a job: its reply, from Redis, is
        # dropped
        $drop{$o} = 1 if !$dropped && $buf =~ /'xadd'/;
        syswrite($o, $buf);
    }
}
PL
$t->run_daemon('/usr/bin/perl', "$d/drop-proxy.pl", "$d/drop.sock",
               "$d/redis.sock", "$d/dropped");
$t->wait_for_port("unix:$d/drop.sock")
    or BAIL_OUT('the proxy did not start');

$a->start_agent('b', '--redis', "unix:$d/drop.sock", '--max-wall', 30000);
$a->start_worker;

plan tests => 6;

$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('once')" } } ] },
           { quote => '"stdout":"(\w+)', pieces => [ '{{1}}' ] });
my $ev = $a->ask('lost', 'a job whose XADD reply is lost', agent => 'b');

ok(-e "$d/dropped", 'the reply to the XADD was dropped');
is(((of_type('answer', $ev))[0] // {})->{text}, 'once',
   'the run awaited the job it had added, and answered with its result');
ok(!grep({ ($_->{code} // '') eq 'job' } of_type('error', $ev)),
   'no "not added" error');
my @jobs = $a->jsonl('jobs.log');
is(scalar @jobs, 1, 'the worker ran the job once');
like($a->agent_log('b'), qr/the reply to its XADD was lost .*it was added: /,
     'the log says so');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
