#!/usr/bin/perl

# airlock-agent: a tool call's body is sent with its route's
# content_type (policy: body.content_type), application/json when the
# route names none.  The proxy holds a request to a route's content_type
# (a route with one refuses a request of another type): every body was
# sent as application/json, so a route taking text/plain refused every
# call of its tool, each a denial counted against the run and the
# agent's client.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;
$a->setup(agent => [ '--max-wall', 30000 ], routes => <<'EOF');
  - name: note-text
    description: a note, plain text
    clients: [agent]
    match: { method: POST, path: /note }
    upstream: svc
    to: /api/v1/note
    body: { max_bytes: 4096, content_type: text/plain }
  - name: note-any
    description: a note, any type
    clients: [agent]
    match: { method: POST, path: /note-any }
    upstream: svc
    to: /api/v1/note-any
    body: { max_bytes: 4096 }
EOF

plan tests => 8;

$a->script({ tool_calls => [ { name => 'note-text',
                               arguments => { body => "disk full\n" } } ] },
           { pieces => [ 'noted' ] });
my $ev = $a->ask('text', 'note it');
ok(!of_type('denial', $ev), 'a text/plain route\'s call is not denied')
    or diag explain [ of_type('denial', $ev) ];
my ($res) = of_type('tool_result', $ev);
is($res && $res->{status}, 200, '... the upstream answered it');

my @seen = grep { $_->{method} eq 'POST' } $a->jsonl("$d/services.log");
is(scalar @seen, 1, 'the service got the POST');
is($seen[0]{headers}{'content-type'} // '', 'text/plain',
   '... as text/plain, the route\'s content_type');
is($seen[0]{body} // '', "disk full\n", '... its body as the model gave it');

# a route with no content_type: application/json, as before
$a->script({ tool_calls => [ { name => 'note-any',
                               arguments => { body => '{"a":1}' } } ] },
           { pieces => [ 'noted' ] });
$ev = $a->ask('any', 'note it');
@seen = grep { $_->{method} eq 'POST' } $a->jsonl("$d/services.log");
is(scalar @seen, 2, 'a route without content_type: posted');
is($seen[1]{headers}{'content-type'} // '', 'application/json',
   '... as application/json');

is($a->agent_errors, '', 'no sanitizer report or crash');
