#!/usr/bin/perl

# ngx_http_airlock_module: a form body field named like a path param or a
# query parameter with a pattern is refused with reason "body" and never
# reaches the upstream.  PHP's $_REQUEST, Rails' and Laravel's merged
# params, ASP.NET MVC's model binding and Spring's @ModelAttribute read
# a form field over the query parameter (and ASP.NET and Spring over the
# route value) of the same name: on a POST route whose query parameter
# "file" has the pattern '^[a-z]+\.txt$' and whose body has no rules,
# "?file=a.txt" with the form body "file=../web.config" was forwarded,
# and such an upstream read "../web.config".  The name is read as loosely
# as the _method check reads it ("FILE", "file[]", "%66ile", multipart).
# Other fields, and fields named like a query parameter without a
# pattern, pass.  Rails and Laravel merge a JSON body's top-level fields
# the same way: on a route with json rules and "additional: true", an
# unlisted top-level field named like a checked param (in any case, as
# ASP.NET binds) is refused too.  And PHP's $_REQUEST without a php.ini
# (the official Docker images ship none) reads cookies over both: on a
# route with "cookies: true", a cookie named like a checked param is
# refused ("query").

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

$t->write_file_expand('policy.yaml', <<'EOF');
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
      allow: [file, page]
      patterns: { file: '^[a-z]+\.txt$' }
    body: { max_bytes: 1024 }
  - name: notes
    clients: [local]
    match: { method: POST, path: "/notes/{id}" }
    params: { id: '^[0-9]+$' }
    upstream: echo
    to: "/notes/{id}"
    query:
      allow: [file, page]
      patterns: { file: '^[a-z]+\.txt$' }
    body: { max_bytes: 1024, json: { title: '.+' }, additional: true }
  - name: pages
    clients: [local]
    match: { method: GET, path: "/pages/{id}" }
    params: { id: '^[0-9]+$' }
    upstream: echo
    to: "/pages/{id}"
    query:
      allow: [file, page]
      patterns: { file: '^[a-z]+\.txt$' }
    cookies: true
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $form = 'application/x-www-form-urlencoded';
my $mp = 'multipart/form-data; boundary=b';
my $json = 'application/json';
# the targets of the form and the JSON cases
my $files = '/files/abc?file=a.txt';
my $notes = '/notes/1?file=a.txt';
sub mp_part {
    my ($params) = @_;
    return "--b\r\nContent-Disposition: form-data; $params\r\n\r\n"
           . "../web.config\r\n--b--\r\n";
}

# [name, Content-Type, body]
my @refused = (
    [ 'a checked query parameter', $form, 'file=..%2Fweb.config' ],
    [ 'in another case', $form, 'a=1&FILE=..%2Fweb.config' ],
    [ 'as an array (PHP, Rack)', $form, 'file[]=..%2Fweb.config' ],
    [ 'percent-encoded', $form, '%66ile=..%2Fweb.config' ],
    [ 'without a Content-Type (Rack)', undef, 'file=..%2Fweb.config' ],
    [ 'a path param', $form, 'dir=..' ],
    [ 'multipart', $mp, mp_part('name="file"') ],
);

my @passed = (
    [ 'other fields', $form, 'a=1&files=2&xfile=3' ],
    [ 'a query parameter without a pattern', $form, 'page=..' ],
    [ 'not a form', 'text/plain', 'file=..%2Fweb.config' ],
);

# [name, body]
my @json_refused = (
    [ 'a path param', '{"title":"x","id":"../1"}' ],
    [ 'a checked query parameter in another case',
      '{"title":"x","FILE":"../web.config"}' ],
);

my @json_passed = (
    [ 'other fields', '{"title":"x","other":1,"ids":2}' ],
    [ 'a query parameter without a pattern', '{"title":"x","page":".."}' ],
    [ 'nested', '{"title":"x","x":{"id":"../1"}}' ],
);

# [name, Cookie]
my @cookie_refused = (
    [ 'a checked query parameter', 'sid=1; file=..%2Fweb.config' ],
    [ 'a path param, in another case', 'ID=..' ],
);

my @cookie_passed = (
    [ 'other cookies', 'sid=1; files=2; page=..' ],
);

plan tests => @refused + @passed + @json_refused + @json_passed
              + @cookie_refused + @cookie_passed + 1;

for my $c (@refused) {
    my ($name, $ct, $body) = @$c;
    $p->is_refused(post_request($files, $ct, $body), "refused: $name");
}

for my $c (@passed) {
    my ($name, $ct, $body) = @$c;
    $p->is_passed(post_request($files, $ct, $body), "passes: $name");
}

for my $c (@json_refused) {
    my ($name, $body) = @$c;
    $p->is_refused(post_request($notes, $json, $body),
                   "JSON refused: $name");
}

for my $c (@json_passed) {
    my ($name, $body) = @$c;
    $p->is_passed(post_request($notes, $json, $body), "JSON passes: $name");
}

sub get_cookie {
    my ($cookie) = @_;
    return "GET /pages/1?file=a.txt HTTP/1.0\r\nCookie: $cookie\r\n\r\n";
}

for my $c (@cookie_refused) {
    my ($name, $cookie) = @$c;
    $p->is_refused(get_cookie($cookie), "cookie refused: $name",
                   qr/^query$/);
}

for my $c (@cookie_passed) {
    my ($name, $cookie) = @$c;
    $p->is_passed(get_cookie($cookie), "cookie passes: $name");
}

is($t->error_log_check, '', 'no alerts');
