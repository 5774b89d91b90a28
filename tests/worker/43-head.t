#!/usr/bin/perl

# An input on a route whose only method is HEAD.  The answer to a HEAD
# has headers only, its Content-Length that of the body a GET would get;
# the fetch sent "HEAD" as a custom method, and libcurl then waited for
# that body until fetch_timeout_ms, so every such input ended the job as
# fetch_failed after the whole timeout.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use JSON::PP;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;
$w->start_worker(fetch_timeout_ms => 5000);

plan tests => 5;

my $r = $w->run_job(job_id => 'head1', script => <<'PY',
import json
d = json.load(open('/app/data/data.json'))
print(json.dumps(d['exists'], sort_keys=True))
PY
    blueprint => { inputs => [ { name => 'exists', route => 'head-only' } ] });
is($r && $r->{status}, 'ok', 'the job ran') or diag explain $r;
my $d = eval { decode_json($r->{stdout}) } // {};
is($d->{status}, 200, 'the input has the answer\'s status');
is($d->{body}, '', 'and no body');
ok($r && $r->{timing_ms}{fetch} < 5000,
   'fetched without waiting for a body (' . ($r && $r->{timing_ms}{fetch})
   . ' ms)');

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
