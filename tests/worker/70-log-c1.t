#!/usr/bin/perl

# A C1 control (U+0080 to U+009F; U+009B is a terminal's CSI) in envelope
# text the worker logs is escaped as C0 controls are: it reached the log
# raw (UTF-8 C2 9B), and so a terminal that tails the log.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'bwrap');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 3;

$w->add_raw('{"job_id":"c1","session_id":"sess-1","script":"print(1)",'
           . '"blueprint":{"inputs":[]},'
           . '"limits":{"\\u009b2J\\u009b31mFAKE\\u001b[0m":1}}');
my $r = $w->wait_result('c1', 30);
is($r && $r->{status}, 'rejected', 'the job with the odd limit: rejected')
    or diag explain $r;

my $log = $w->worker_log;
unlike($log, qr/\xc2[\x80-\x9f]/, 'no raw C1 control in the log');
like($log, qr/\\u009b2J\\u009b31mFAKE\\x1b\[0m/,
     'the C1 controls written as \\u009b, ESC as \\x1b');
