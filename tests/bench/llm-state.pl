#!/usr/bin/perl
# Instructions per Responses API call that names stored state: nginx (one
# process, master_process off) under callgrind, the gateway's
# configuration of the nginx tests, its answers from the scripted
# provider.  A first call binds a response and its items to the client;
# after a warm-up the counters are zeroed, CALLS calls (default 200) are
# made, each naming the previous response and NITEMS - 1 reasoning items
# and the message by item_reference (NITEMS, default 10), or with PLAIN=1
# ten messages and no id, and the profile is copied to OUTFILE for
# callgrind_annotate.
#
#   AIRLOCK_BUILD=$PWD/build OUTFILE=/tmp/cg.out perl tests/bench/llm-state.pl
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Socket::INET;
use JSON::PP;
use Airlock::Test;
use Airlock::LLM;

my $nitems = $ENV{NITEMS} // 10;
my $count = $ENV{CALLS} // 200;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
$l->setup;
$t->run;

my $prefix = $t->testdir;
my $port = $t->port(8095);
my $out = "$prefix/cg.out";
my $conf = $t->read_file('nginx.conf');
$conf =~ s/^daemon off;/daemon off;\nmaster_process off;/m or die "no daemon";
$conf =~ s{^pid \S+;}{pid $prefix/cg.pid;}m;
$conf =~ s/listen 127\.0\.0\.1:\d+;/listen 127.0.0.1:$port;/ or die "no listen";
$conf =~ s/listen unix:\S+;//g;
my $mport = $t->port(8096);
$conf =~ s/listen 127\.0\.0\.1:\d+;(\s+location = \/metrics)/listen 127.0.0.1:$mport;$1/
    or die "no metrics listen";
$conf =~ s/^error_log (\S+) debug;/error_log $prefix\/cg-error.log warn;/m;
$t->write_file('cg.conf', $conf);

# the provider: every answer a response of nitems items
my @out = map { { type => 'reasoning', id => "rs_FAKE_$_", summary => [] } }
          1 .. $nitems - 1;
$l->script_all({ response_id => 'resp_FAKE_1', output => \@out,
             message_id => 'msg_FAKE_1' });

my $pid = fork // die;
if ($pid == 0) {
    open(STDOUT, '>', "$prefix/cg.log");
    open(STDERR, '>&', \*STDOUT);
    exec('valgrind', '--tool=callgrind', "--callgrind-out-file=$out",
         '/usr/sbin/nginx', '-p', "$prefix/", '-c', 'cg.conf',
         '-e', "$prefix/cg-error.log") or die;
}
my $s;
for (1 .. 600) {
    $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                               Proto => 'tcp') and last;
    select(undef, undef, undef, 0.1);
}
$s or die "no start";
my $token = $l->token('agent');

sub call {
    my ($body) = @_;
    my $b = encode_json($body);
    my $req = "POST /v1/proxy/openai/responses HTTP/1.1\r\nHost: localhost\r\n"
            . "Authorization: Bearer $token\r\nContent-Type: application/json\r\n"
            . "Content-Length: " . length($b) . "\r\n\r\n$b";
    syswrite($s, $req) or die;
    my $buf = '';
    for (;;) {
        sysread($s, $buf, 65536, length $buf) or die "read: $!";
        next unless $buf =~ /\r\n\r\n/;
        my ($h, $rest) = split /\r\n\r\n/, $buf, 2;
        my ($cl) = $h =~ /content-length: (\d+)/i;
        if (defined $cl) { next if length($rest) < $cl; }
        else { next unless $rest =~ /\r\n0\r\n\r\n$/; }
        $h =~ m{^HTTP/1.1 200} or die "status: $h\n$rest";
        return;
    }
}

call({ model => 'gpt-4o-mini', input => 'Hi' });      # binds the ids
my $body = { model => 'gpt-4o-mini', previous_response_id => 'resp_FAKE_1',
             input => [ (map { { type => 'item_reference', id => "rs_FAKE_$_" } }
                             1 .. $nitems - 1),
                        { type => 'item_reference', id => 'msg_FAKE_1' },
                        { role => 'user', content => 'Go on' } ] };
$body = { model => 'gpt-4o-mini',
          input => [ map { { role => 'user', content => "Line $_" } } 1 .. 10 ] }
    if $ENV{PLAIN};
call($body) for 1 .. 30;
system("callgrind_control -z $pid >/dev/null") == 0 or die;
call($body) for 1 .. $count;
system("callgrind_control -d $pid >/dev/null") == 0 or die;
close $s;
kill 'QUIT', $pid;
waitpid($pid, 0);
my ($f) = glob("$out.1");
system("cp $f " . ($ENV{OUTFILE} // "callgrind-llm-state.out"));
printf "%d instructions per call\n", (map { /^summary: (\d+)/ ? $1 / $count : () } do { open my $fh, "<", $f or die; <$fh> })[0];
$t->stop;
