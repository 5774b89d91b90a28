#!/usr/bin/perl

# What one input costs the fetch process: a small constant times
# fetch_max_bytes, whatever the body holds.  The fetch parsed each JSON
# body into a jansson tree to check it and write it out again: for many
# small values ([{},{},...]) about 80 times the body, so about 80 MB for
# the default fetch_max_bytes of 1 MiB and 5 GB at its maximum, in the
# worker's unit.  It now checks a body without a tree and copies its
# text.  The fetch process is caught while the upstream holds its third
# input: its peak by then covers a JSON body of 349000 objects and a
# body of 1 MiB of control bytes, the most a string grows escaped.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');

my $dir = $t->testdir;

# /nested/1: [{},{},...]; /nested/2: control bytes, not JSON; /nested/3
# and 4 say they are held (a file) and answer once the test lets them
# (another); 5 to 8: what is JSON and what is not
$t->write_file('nested.pl', <<'PL');
use strict;
use IO::Socket::INET;
use Time::HiRes qw(sleep);
$SIG{PIPE} = 'IGNORE';
my ($port, $dir) = @ARGV;
my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
    LocalPort => $port, Listen => 16, ReuseAddr => 1) or die "$!";
my %body = (1 => '[' . join(',', ('{}') x 349000) . ']',
            2 => "\x01" x 1048000,
            3 => '{"held":true}', 4 => '{"held":true}',
            5 => '{"a":1,"\\u0061":2}', 6 => "[1\x00]", 7 => '[1e400]',
            8 => ' {"k":"\\ud83d\\ude00","n":1.50,"m":[-0,{}]} ');
while (my $c = $s->accept) {
    my $req = '';
    while ($req !~ /\r\n\r\n/) {
        my $n = sysread($c, $req, 4096, length $req) or last;
    }
    my ($n) = $req =~ m{^GET /nested/(\d+)};
    if (!$n || !$body{$n}) {
        close $c;
        next;
    }
    if ($n == 3 || $n == 4) {
        open(my $f, '>', "$dir/held$n") or die "$dir/held$n: $!";
        close $f;
        sleep 0.02 until -e "$dir/release$n";
    }
    print {$c} "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
               . "Content-Length: " . length($body{$n}) . "\r\n"
               . "Connection: close\r\n\r\n" . $body{$n};
    close $c;
}
PL
$w->start_proxy;
$w->start_redis;
$t->run_daemon($^X, "$dir/nested.pl", $t->port(8082), $dir);
$t->wait_for_port(8082) or die 'the nested upstream did not start';

plan tests => 7;

# an ASan build keeps what is freed in quarantine (256 MB), which the
# peak would count
if ((Airlock::Test::_config_mk($t->{build}, 'SAN') // '') eq '1') {
    $ENV{ASAN_OPTIONS} = join ':', grep { defined }
        $ENV{ASAN_OPTIONS} // 'detect_leaks=0', 'quarantine_size_mb=0';
}

my $pid = $w->start_worker;
my $fuid = getpwnam('airlock-worker');

sub status_kb {
    my ($p, $field) = @_;
    my $s = Airlock::Worker::_slurp("/proc/$p/status") // '';
    return $s =~ /^\Q$field\E:\s+(\d+) kB/m ? $1 : -1;
}

# the worker's child running as the fetch user (the worker and its
# heartbeat run as that user too: the fetch is known by its name)
sub fetch_child {
    for my $st (glob '/proc/[0-9]*/status') {
        my $s = Airlock::Worker::_slurp($st) // next;
        next unless $s =~ /^PPid:\s+$pid$/m && $s =~ /^Uid:\s+$fuid\s/m
                    && $s =~ /^Name:\s+aw-fetch$/m;
        return ($st =~ m{/proc/(\d+)/})[0];
    }
    return undef;
}

$w->add_job(job_id => 'mem',
    script => "import json\n"
              . "d = json.load(open('/app/data/data.json'))\n"
              . "print(len(d['n1']['body']), len(d['n2']['body']),"
              . " d['n2']['body'][:2] == '\\x01\\x01', d['n3']['body'])\n",
    limits => { memory_mb => 512 },
    blueprint => { inputs => [ map { { name => "n$_", route => 'nested',
                                       params => { n => "$_" } } } 4, 1 .. 3 ]
    });

sub held {
    my ($n) = @_;
    for (1 .. 2400) {
        return 1 if -e "$dir/held$n";
        sleep 0.025;
    }
    return 0;
}

# its size before the first input, and its peak once two are in
ok(held(4), 'the fetch process asks for its first input');
my $child = fetch_child();
my $base = defined $child ? status_kb($child, 'VmHWM') : -1;
$t->write_file('release4', '');

ok(held(3), 'and for its last, after the two large ones');
my $peak = defined $child ? status_kb($child, 'VmHWM') : -1;
my $grew = int(($peak - $base) / 1024);

# fetch_max_bytes is 1 MiB: the body, a string of it and its escaped form
# (6 bytes a control byte), about 9 MB
ok($base > 0 && $peak > 0 && $grew < 16,
   "the fetch process's peak grew by under 16 times fetch_max_bytes "
   . "(by $grew MB, from $base kB)");

$t->write_file('release3', '');
my $r = $w->wait_result('mem', 120);
is($r && $r->{status}, 'ok', 'the job runs') or diag explain $r;
is($r && $r->{stdout}, "349000 1048000 True {'held': True}\n",
   'and its script reads every input as it came');

# jansson's rules, which decided before, less its reading of a raw NUL
$r = $w->run_job(job_id => 'kinds',
    script => "import json\n"
              . "d = json.load(open('/app/data/data.json'))\n"
              . "print([d['n%d' % i]['body'] for i in range(5, 9)])\n",
    blueprint => { inputs => [ map { { name => "n$_", route => 'nested',
                                       params => { n => "$_" } } } 5 .. 8 ]
    });
is($r && $r->{stdout},
   q{['{"a":1,"\\\\u0061":2}', '[1\\x00]', '[1e400]', }
   . qq{{'k': '\x{1f600}', 'n': 1.5, 'm': [0, {}]}]\n},
   'a duplicate key, a raw NUL, a real too large: strings; JSON: JSON')
    or diag explain $r;

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
