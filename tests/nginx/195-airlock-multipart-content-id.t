#!/usr/bin/perl

# ngx_http_airlock_module: a multipart part named by its Content-ID.
# Rack (Rails, Sinatra) names a part whose Content-Disposition has no
# name (or that has none at all; Rack 3 also one over 1536 bytes) by its
# Content-ID header, and Rack's MethodOverride takes the method of a POST
# from the "_method" field it parsed.  A body whose part said only
# "Content-ID: _method" passed the form checks, was forwarded, and a Rack
# upstream ran the POST as a DELETE; "Content-ID: file" stood for the
# checked ?file= the same way.  Each is refused with reason "body" and
# never reaches the upstream; other Content-IDs pass.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

$t->write_file_expand('policy.yaml', <<'END');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: files
    clients: [local]
    match: { method: POST, path: "/files/{dir}" }
    params: { dir: '^[a-z]+$' }
    upstream: echo
    to: "/data/{dir}"
    query:
      allow: [file]
      patterns: { file: '^[a-z]+\.txt$' }
    body: { max_bytes: 1024 }
alerts:
  deny: { threshold: 1000, window: 60s }
END

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $mp = 'multipart/form-data; boundary=b';
my $files = '/files/abc?file=a.txt';

# [name, part headers]
my @refused = (
    [ 'a part named _method by its Content-ID', "Content-ID: _method" ],
    [ 'a checked param', "content-id: file" ],
    [ 'beside a disposition without a name',
      "Content-Disposition: form-data; filename=\"x\"\r\n"
      . "Content-ID: _method" ],
);

my @passed = (
    [ 'another Content-ID', "Content-ID: <part1\@example.org>" ],
    [ 'a named part with a Content-ID',
      "Content-Disposition: form-data; name=\"comment\"\r\nContent-ID: c1" ],
);

sub part {
    my ($head) = @_;
    return "--b\r\n$head\r\n\r\nDELETE\r\n--b--\r\n";
}

plan tests => @refused + @passed;

for my $c (@refused) {
    my ($name, $params) = @$c;
    $p->is_refused(post_request($files, $mp, part($params)),
                   "refused: $name");
}

for my $c (@passed) {
    my ($name, $params) = @$c;
    $p->is_passed(post_request($files, $mp, part($params)), "passes: $name");
}
