#!/usr/bin/perl

# airlock-worker: an input's body is sent with its route's content_type
# (policy: body.content_type), application/json when the route names
# none, as the agent's tool call of the route sends it
# (al_tool_content_type()).  The proxy holds a request to a route's
# content_type: every body was sent as application/json, so an input of
# a route taking text/plain was denied, every job (route_denied,
# counted against the worker's client).

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
print(d["n"]["status"])
PY

my $r = $w->run_job(job_id => 'ctext', script => $script,
    blueprint => { inputs => [
        { name => 'n', route => 'note-text', body => "disk full\n" } ] });
is($r && $r->{status}, 'ok', 'a text/plain route\'s input: the job ran')
    or diag explain $r;
is((split /\n/, ($r && $r->{stdout}) // '')[0], 200,
   '... the proxy let it through');

my @seen = grep { ($_->{path} // '') eq '/api/note' }
           $t->echo_requests(8081);
is(scalar @seen, 1, 'the upstream got it');
my ($ct) = map { $_->[1] } grep { lc $_->[0] eq 'content-type' }
           @{($seen[0] // {})->{headers} // []};
is($ct // '', 'text/plain', '... as text/plain, the route\'s content_type');
is(($seen[0] // {})->{body} // '', "disk full\n", '... its body as given');

# a route with JSON rules: application/json, as before
$r = $w->run_job(job_id => 'cjson', script => $script,
    blueprint => { inputs => [
        { name => 'n', route => 'annotate',
          body => { text => 'hello world' } } ] });
is($r && $r->{stdout}, "200\n", 'a JSON route\'s input: sent and answered')
    or diag explain $r;
