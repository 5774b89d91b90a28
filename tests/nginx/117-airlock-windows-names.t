#!/usr/bin/perl

# ngx_http_airlock_module: a path param or query value must match its
# pattern also as Windows reads it as a file name: with its trailing dots
# and spaces trimmed (in each component of a path in a query value),
# and without an NTFS stream suffix "::$" (the file's own data).  With the deny-list pattern '^(?!web\.config$).+',
# "web.config.", "web.config%20" and "web.config::$DATA" were forwarded,
# and a Windows upstream that opens the value as a file name opened
# web.config.  A value whose pattern takes it either way passes: a
# trailing dot (a DNS zone "example.org.", PowerDNS), a colon inside
# ("gemini:generateContent").

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
    match: { method: GET, path: "/files/{name}" }
    params: { name: '^(?!web\.config$).+' }
    upstream: echo
    to: "/data/{name}"
    query:
      allow: [as, path]
      patterns:
        as: '^(?!web\.config$).+'
        path: '^(?!(.*/)?web\.config(/.*)?$).+'

  - name: zones
    clients: [local]
    match: { method: GET, path: "/zones/{zone}" }
    params: { zone: '^[a-z0-9.:-]+$' }
    upstream: echo
    to: "/zones/{zone}"
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my @refused = (
    [ '/files/web.config', 'param', 'the name itself' ],
    [ '/files/web.config.', 'param', 'a trailing dot' ],
    [ '/files/web.config..%20.', 'param', 'trailing dots and spaces' ],
    [ '/files/web.config%20', 'param', 'a trailing space' ],
    [ '/files/web.config%E3%80%80', 'param', 'a trailing U+3000' ],
    [ '/files/web.config::$DATA', 'param', 'the NTFS data stream' ],
    [ '/files/web.config::$DATA.', 'param', 'the stream and a dot' ],
    [ '/files/a?as=web.config.', 'query', 'a query value, a dot' ],
    [ '/files/a?as=web.config%3A%3A%24DATA', 'query',
      'a query value, the stream' ],
    [ '/files/a?path=app/web.config.%20/x', 'query',
      'a folder of a query value, trailing dots and spaces' ],
    [ '/files/a?path=app/web.config::$DATA', 'query',
      'a query value, the stream of its file' ],
);

my @passed = (
    [ '/files/web.configx', '/data/web.configx' ],
    [ '/files/a.txt?as=b.txt.', '/data/a.txt?as=b.txt.' ],
    [ '/files/a?path=../v1./x', '/data/a?path=../v1./x' ],
    [ '/zones/example.org.', '/zones/example.org.' ],
    [ '/zones/gemini:generatecontent', '/zones/gemini:generatecontent' ],
);

plan tests => @refused + @passed + 1;

for my $c (@passed) {
    my ($target, $sent) = @$c;
    my $j = Airlock::Test::echo_json(http("GET $target HTTP/1.0\r\n\r\n"));
    is($j && $j->{target}, $sent, "$target passes, forwarded as $sent")
        or diag(explain($j));
}

my $seen = $p->echo_count;

for my $c (@refused) {
    my ($target, $reason, $name) = @$c;
    my $d = deny_json(http("GET $target HTTP/1.0\r\n\r\n"));
    is_deeply([ @$d, $p->echo_count ], [ 403, $reason, $seen ],
              "$name: 403 $reason, not forwarded");
}

is($t->error_log_check, '', 'no alerts');
