#!/usr/bin/perl

# airlock, the user CLI: a request's URL (--url and the path) is never
# cut to fit.  It was written into a buffer of 1 KiB and cut there, so a
# long --url (a long password in it, say) cut the session id at its end
# and named another session: "history abcdef" read the session "abc",
# and "ask" posted its question to the cut path.  Now a URL over the
# buffer is refused (exit 2) and nothing is sent.  A fake agent on a
# loopback port records the requests it gets.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX ();
use Test::More;
use Airlock::Prereq qw(absent);

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $cli = "$build/airlock";
my $dir = tempdir(CLEANUP => 1);

absent("$cli not built") unless -x $cli;

plan tests => 6;

my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                              Listen => 8, ReuseAddr => 1)
    or die "cannot listen: $!";
my $port = $l->sockport;

# the fake agent: each request line into $dir/requests, a session back
my $server = fork // die;
if ($server == 0) {
    while (my $c = $l->accept) {
        my $req = '';
        while ($req !~ /\r\n\r\n/) {
            sysread($c, $req, 4096, length $req) or last;
        }
        my ($line) = $req =~ /^([^\r\n]*)/;
        open my $fh, '>>', "$dir/requests" or die;
        print $fh "$line\n";
        close $fh;
        my $body = '{"id":"x","messages":[1]}';
        print {$c} "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   . "Content-Length: " . length($body) . "\r\n"
                   . "Connection: close\r\n\r\n$body";
        close $c;
    }
    POSIX::_exit(0);
}
close $l;

END { kill 'TERM', $server if $server; }

sub run_cli {
    my (@args) = @_;
    my $pid = fork // die;
    if ($pid == 0) {
        open(STDOUT, '>', "$dir/out");
        open(STDERR, '>', "$dir/err");
        exec($cli, @args) or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    my %r = (rc => $? >> 8);
    for my $f (qw(out err requests)) {
        $r{$f} = -e "$dir/$f"
                 ? do { local (@ARGV, $/) = "$dir/$f"; <> } : '';
    }
    unlink "$dir/requests";
    return %r;
}

# a URL whose length puts the buffer's end right after "abc"
my $head = "http://op:";
my $tail = "\@127.0.0.1:$port/api/";
my $pass = 'p' x (1023 - length($head) - length($tail)
                  - length('v1/sessions/abc'));
my $url = "$head$pass$tail";

my %r = run_cli('history', '--url', $url, 'abcdef');
is($r{rc}, 2, 'history: a URL too long to hold: exit 2');
is($r{requests}, '', 'history: nothing sent');
unlike($r{requests}, qr{/v1/sessions/abc }, 'history: no other session read');

%r = run_cli('ask', '--url', $url, '--session', 'abcdef', 'hello');
is($r{rc}, 2, 'ask: exit 2');
is($r{requests}, '', 'ask: nothing sent');

# a URL that fits is used as it is
%r = run_cli('history', '--url', "http://op:pw\@127.0.0.1:$port/api/",
             'abcdef');
is($r{requests}, "GET /api/v1/sessions/abcdef HTTP/1.1\n",
   'a URL that fits: the session named');
