#!/usr/bin/perl

# A call whose body the module read is ended as soon as its answer is
# sent, not when the client hangs up.  nginx lingers on a connection
# closed after any request with a body (lingering_close), and runs the
# request's log phase (for a gateway call: its usage line, its budget
# settled) only at the end of that wait; a worker stopped fast or killed
# during it lost the line.  Here lingering_timeout and lingering_time are
# an hour, the client reads the answer to its end (Connection: close)
# and keeps its socket open: the usage line must be written all the
# same, and must survive a fast stop (SIGTERM).  A request with bytes
# past its body still lingers, as nginx means it to.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;
$t->write_file('nginx.conf', $t->expand($l->conf)
               =~ s/^http \{/http {\n    lingering_timeout 1h;\n    lingering_time 1h;/mr);
$t->run;

plan tests => 5;

my $body = '{"model":"gpt-4o-mini","messages":[{"role":"user",'
         . '"content":"Hi"}]}';

# the call, read to its end; the socket stays open
sub call {
    my ($extra) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $t->port(8080),
                                  Proto => 'tcp', Timeout => 5)
        or die "connect: $!";
    syswrite($s, "POST /v1/proxy/openai/chat/completions HTTP/1.1\r\n"
                 . "Host: localhost\r\nAuthorization: Bearer "
                 . $l->token('agent') . "\r\n"
                 . "Content-Type: application/json\r\n"
                 . "Content-Length: " . length($body) . "\r\n"
                 . "Connection: close\r\n\r\n$body" . ($extra // ''));
    my $raw = '';
    my $deadline = time + 30;
    while (time < $deadline) {
        my $n = sysread($s, my $buf, 65536);
        last unless $n;
        $raw .= $buf;
    }
    return ($s, $raw);
}

my ($s, $raw) = call();
like($raw, qr/^HTTP\/1\.1 200 /, 'the call is answered, to its end');
my ($rid) = $raw =~ /^x-request-id: (\S+)\r$/mi;
is(scalar $l->usage_lines(1, 30), 1,
   'its usage line is written while the client keeps its socket open');

# bytes past the body: nginx lingers, the line waits for the client
my ($s2, $raw2) = call("GET / HTTP/1.1\r\n");
like($raw2, qr/^HTTP\/1\.1 200 /, 'a call with bytes past its body');
is(scalar $l->usage_lines(2, 1), 1,
   '... lingers: its line waits for the client');
close $s2;

# a fast stop: the first call's line is in the file already
my $pid = delete $t->{pid};
kill 'TERM', $pid;
my $deadline = time + 30;
sleep 0.05 while waitpid($pid, WNOHANG) == 0 && time < $deadline;
my @lines = grep { /"request_id":"\Q$rid\E"/ } $l->usage_lines(2, 1);
is(scalar @lines, 1, 'after a fast stop (SIGTERM) the line is there');
close $s;
