#!/usr/bin/perl

# ngx_http_airlock_module: a multipart body's part headers read as PHP
# reads them.  Laravel and Symfony take a POST's method from the
# "_method" field PHP parsed, and PHP's $_REQUEST a field over the query
# parameter of its name.  PHP's multipart parser (main/rfc1867.c) takes
# a value quoted in ' as in " (name='_method'), and joins a header line
# that begins with a blank or holds no ':' to the line before it, the
# line end taken out: name="_me<CRLF>thod", name=_me<CRLF>thod and
# na<CRLF>me="_method" are "_method" to it.  Such a body was forwarded,
# and a PHP upstream ran the POST as a DELETE.  Each is refused with
# reason "body" and never reaches the upstream; a body whose names are
# other names passes.

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

sub part {
    my ($params) = @_;
    return "--b\r\nContent-Disposition: form-data; $params\r\n\r\n"
           . "DELETE\r\n--b--\r\n";
}

# [name, Content-Disposition parameters]
my @refused = (
    [ 'a name in single quotes', "name='_method'" ],
    [ 'a checked param in single quotes', "name='file'" ],
    [ 'a quoted name cut by a line end', "name=\"_me\r\nthod\"" ],
    [ 'a folded quoted name', "name=\"\r\n _method\"" ],
    [ 'a token cut by a line end', "name=_me\r\nthod" ],
    [ '"name" cut by a line end', "na\r\nme=\"_method\"" ],
);

my @passed = (
    [ 'another name in single quotes', "name='comment'" ],
    [ 'a folded line keeps its blank', "name=\"_me\r\n thod\"" ],
    [ 'a name and the next header', "name=\"a\"\r\nContent-Type: text/plain" ],
);

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
