#!/usr/bin/perl

# NUL bytes on the way in and out of a job.  A script's output is text in
# the result: a NUL there becomes U+FFFD, since the agent reads results
# without jansson's JSON_ALLOW_NUL and the LLM gateway refuses "\u0000".
# An input's body reaches the script as it came: a raw NUL in a text body
# and a "\u0000" in a JSON body both fetch, and data.json carries them.
# The inputs come from a stand-in for the proxy on a unix socket (the
# echo upstream behind the real one answers with what it was sent).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

my $fake = $t->testdir . '/fake.sock';
$t->write_file('fake-proxy.pl', <<'PL');
use strict;
use warnings;
use IO::Socket::UNIX;

my %body = (
    '/logs/text' => [ 'text/plain', "line one\nbinary \0 byte\n" ],
    '/logs/json' => [ 'application/json', '{"a":"x\u0000y"}' ],
);
unlink $ARGV[0];
my $s = IO::Socket::UNIX->new(Local => $ARGV[0], Listen => 8) or die $!;
chmod 0777, $ARGV[0];
while (my $c = $s->accept) {
    my $req = '';
    while ($req !~ /\r\n\r\n/) {
        sysread($c, $req, 4096, length $req) or last;
    }
    my ($path) = $req =~ m{^GET (\S+)};
    my ($type, $b) = @{$body{$path // ''} // [ 'text/plain', 'none' ]};
    print {$c} "HTTP/1.1 200 OK\r\nContent-Type: $type\r\n"
             . 'Content-Length: ' . length($b) . "\r\n"
             . "Connection: close\r\n\r\n$b";
    close $c;
}
PL
$t->run_daemon('/usr/bin/perl', $t->testdir . '/fake-proxy.pl', $fake);
for (1 .. 200) {
    last if -S $fake;
    sleep 0.025;
}

$w->start_worker(proxy_socket => $fake);

plan tests => 5;

my ($r, $raw);

# ---- out: a script's output ------------------------------------------------

$r = $w->run_job(job_id => 'nulout', script => <<'PY');
import sys
sys.stdout.write("a\0b\n")
sys.stderr.write("c\0d\n")
PY
$raw = $w->redis('GET', 'result:nulout') // '';
unlike($raw, qr/\\u0000/, 'the stored result holds no \u0000');
ok($r && $r->{status} eq 'ok' && $r->{stdout} eq "a\x{fffd}b\n"
   && $r->{stderr} eq "c\x{fffd}d\n", 'a NUL in stdout and stderr is U+FFFD')
    or diag explain $r;

# ---- in: an input's body ---------------------------------------------------

$r = $w->run_job(job_id => 'nulin', script => <<'PY',
import json
d = json.load(open("/app/data/data.json"))
print(json.dumps(d["t"]["body"]))
print(json.dumps(d["j"]["body"]))
PY
    blueprint => { inputs => [
        { name => 't', route => 'logs', params => { service => 'text' } },
        { name => 'j', route => 'logs', params => { service => 'json' } },
    ] });
is($r && $r->{status}, 'ok', 'inputs with NUL bytes fetched')
    or diag explain $r;
my @out = split /\n/, ($r && $r->{stdout}) // '';
is($out[0], '"line one\nbinary \u0000 byte\n"',
   'a raw NUL in a text body reaches the script');
is($out[1], '{"a": "x\u0000y"}', 'a JSON body with \u0000 is JSON');
