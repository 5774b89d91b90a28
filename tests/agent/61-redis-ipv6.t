#!/usr/bin/perl

# airlock-agent's --redis with an IPv6 address: "[::1]:PORT", and
# "[::1]" for port 6379.  hiredis was handed "[::1]", brackets and all,
# as a host name to look up, so every question got 503 "redis"; a
# malformed one ("[::1", which was read as host "[:" port 1) and a bare
# one ("::1:6379": ::1 port 6379, or the address ::1:6379?) are refused
# at start on one line that names --redis (exit 2).  An agent on the
# host's network with --redis [::1]:PORT asks, stores and reads its
# session in a real redis-server that listens on ::1 alone.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Socket::IP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Prereq ();
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

IO::Socket::IP->new(LocalHost => '::1', LocalPort => 0, Listen => 1)
    or Airlock::Prereq::absent("no IPv6 loopback: $!");

$a->setup(agent => [ '--sandbox', 'none' ]);

my @bad = ('[::1', '[::1]x', '[::1]:', '[::1]:0', '[::1]:6379x',
           '[::1]:6379:', '[]:6379', '[]', '[::g]:6379', '[127.0.0.1]:6379',
           '[::1%lo]:6379', '[' . ('1:' x 100) . ']:6379', '::1:6379',
           '::1', 'fe80::1:6379');

plan tests => 2 * @bad + 9;

# the agent with --redis $where: its exit status, or 'listening'
sub run_agent {
    my ($where) = @_;
    return $a->run_briefly('--redis' => $where, '--sandbox' => 'none');
}

for my $w (@bad) {
    my $shown = length($w) > 40 ? substr($w, 0, 40) . '...' : $w;
    my ($rc, $err) = run_agent($w);
    is($rc, 2, "--redis $shown: refused, exit 2");
    like($err, qr/\Aairlock-agent: --redis wants [^\n]*\n\z/,
         "--redis $shown: one line that names it");
}

my ($rc, $err) = run_agent('::1:6379');
like($err, qr/in brackets/, 'a bare IPv6 address: told to bracket it');

($rc) = run_agent('[::1]');
is($rc, 'listening', '--redis [::1]: taken (port 6379)');

# a real redis-server on ::1 alone, and an agent on the host's network
my $port = $t->port(8090);
$t->run_daemon('redis-server', $t->redis_args, '--bind', '::1',
               '--port', $port,
               '--save', '', '--appendonly', 'no', '--dir', $d);
my $up;
for (1 .. 100) {
    $up = IO::Socket::IP->new(PeerHost => '::1', PeerPort => $port)
        and last;
    sleep 0.05;
}
ok($up, "redis-server listens on [::1]:$port");
close $up if $up;

$a->start_agent_with('v6', { netns => 0 }, '--sandbox', 'none',
                     '--redis', "[::1]:$port");

$a->script({ pieces => [ 'over six' ] });
my $ev = $a->ask('v6s', 'which redis?', agent => 'v6');
my ($done) = of_type('done', $ev);
is($done && $done->{outcome}, 'answer', '--redis [::1]:PORT: answered');
ok(!of_type('error', $ev), 'no error event');

my $r = $a->session('v6s', agent => 'v6');
is($r->{status}, 200, 'the session read back through the agent');
is($r->{json} && $r->{json}{messages}[0]{content} // '', 'which redis?',
   'its question');

my $keys = `redis-cli -h ::1 -p $port --raw EXISTS airlock:session:v6s`;
is($keys, "1\n", 'the session is in the redis-server on ::1');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
