#!/usr/bin/perl

# airlock-worker: an input's body is sent as a tool call of its route
# sends it (agent/ag_run.c, ag_tool_route()): a string as its text, any
# other value as its JSON text.  run_python's inputs take the body "as
# for that route's tool", and a route's tool takes a body without JSON
# rules as a string.  The worker used to send a string JSON-encoded: the
# upstream got '"{\"text\":...}"', quotes and all, and the proxy refused
# it on a route with JSON rules (an object wanted), where the tool call
# with the same string was sent and answered.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 6;

my $script = <<'PY';
import json
d = json.load(open("/app/data/data.json"))
print(d["note"]["status"])
print(d["note"]["body"]["body"])
PY

# a string: its text, as the route's tool call sends it
my $r = $w->run_job(job_id => 'bodystr', script => $script,
    blueprint => { inputs => [
        { name => 'note', route => 'annotate',
          body => '{"text":"hello world"}' } ] });
is($r && $r->{status}, 'ok', 'a string body: fetched, the job ran')
    or diag explain $r;
my @out = split /\n/, ($r && $r->{stdout}) // '';
is($out[0], 200, 'the proxy let it through (its JSON rules read the text)');
is($out[1], '{"text":"hello world"}',
   'the upstream got the string as it is, not JSON-encoded');

# any other value: its JSON text, as before
$r = $w->run_job(job_id => 'bodyobj', script => $script,
    blueprint => { inputs => [
        { name => 'note', route => 'annotate',
          body => { text => 'hello world' } } ] });
@out = split /\n/, ($r && $r->{stdout}) // '';
is($r && $r->{status}, 'ok', 'an object body: fetched') or diag explain $r;
is($out[1], '{"text":"hello world"}', 'an object is sent as its JSON text');

# the same string on the proxy's wire: exactly its bytes
my @seen = grep { ($_->{path} // $_->{uri} // '') =~ m{/api/annotate} }
           $t->echo_requests(8081);
is(scalar(grep { ($_->{body} // '') eq '{"text":"hello world"}' } @seen), 2,
   'both requests carried the same body bytes');
