#!/usr/bin/perl

# A path param that starts with a drive ("C:x") is refused by the proxy
# unless the route's param takes one ("drive: true"): al_decide()'s
# "request target refused: drive letter", whatever the param's pattern.
# The worker parsed the target it built with the proxy's parser, which
# keeps such a segment for al_decide() to judge, so it fetched "C:x"
# (and "c:x", "z:generateContent") for a route whose param takes none, and
# each was a denial of the worker's client, which every job shares (its
# alerts, its quarantine).  Now al_route_target() refuses it as the
# proxy would: bad_envelope, nothing fetched.  A colon later in the
# param ("ab:c" is no drive) is still fetched.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'bwrap');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 5;

my $n = 0;

for my $v ('C:x', 'c:x', 'z:generateContent') {
    my $id = 'drive' . $n++;
    my $r = $w->run_job(job_id => $id, script => 'print(1)',
        blueprint => { inputs => [ { name => 'a', route => 'files',
                                     params => { name => $v } } ] });
    ok($r && $r->{status} eq 'rejected'
       && $r->{error}{code} eq 'bad_envelope'
       && $r->{error}{message} =~ /input "a": its params make a request target the proxy refuses \(drive letter\)/,
       "path param \"$v\" refused before the proxy") or diag explain $r;
}

my $r = $w->run_job(job_id => 'colon', script => 'print(1)',
    blueprint => { inputs => [ { name => 'a', route => 'files',
                                 params => { name => 'ab:c' } } ] });
is($r->{status}, 'ok', 'a colon past the first character is fetched')
    or diag explain $r;

my @paths = map { $_->{path} } grep { $_->{path} =~ m{^/api/files/} }
            $t->echo_requests(8081);
is(join(' ', @paths), '/api/files/ab:c/meta',
   'no param with a drive fetched')
    or diag explain \@paths;
