#!/usr/bin/perl

# ngx_http_airlock_denial_module: no operator-written header can forge the
# proxy's "Airlock-Denial".  "add_header Airlock-Denial ..." and
# "add_trailer Airlock-Denial ..." (any case of the name, any value,
# $upstream_http_airlock_denial included) fail nginx -t, at the http,
# server, location and if levels and in an included file, naming the file
# and line.  Every other add_header and add_trailer works as nginx's own,
# inheritance and "always" included, with or without Airlock.  The
# module's header filter runs after add_header's: an add_header value
# still reads the upstream's Airlock-Denial, which the client never gets.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: plain
    clients: [local]
    match: { method: GET, path: /plain }
    upstream: echo
    to: /plain
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

# the line of the (expanded) file name that holds $needle
sub line_of {
    my ($name, $needle) = @_;
    my @lines = split /\n/, $t->read_file($name);
    for my $i (0 .. $#lines) {
        return $i + 1 if index($lines[$i], $needle) >= 0;
    }
    die "\"$needle\" is not in $name";
}

my $port = $t->port(8081);

my @refused = (
    # name, directive, where (conf option), file the directive is in
    [ 'a location',
      'add_header Airlock-Denial no_route always;', 'locations' ],
    [ 'an Airlock location, with $upstream_http_airlock_denial',
      'add_header airlock-DENIAL $upstream_http_airlock_denial;',
      'location' ],
    [ 'a server', 'add_header AIRLOCK-DENIAL query;', 'server' ],
    [ 'http', 'add_header Airlock-Denial method always;', 'http' ],
    [ 'an if block',
      'if ($arg_x) { add_header Airlock-Denial path; }', 'location' ],
    [ 'add_trailer', 'add_trailer Airlock-Denial no_route;', 'server' ],
    [ 'an included file',
      'add_header Airlock-denial "no_route";', 'include' ],
);

plan tests => 3 * @refused + 15;

for my $c (@refused) {
    my ($name, $line, $where) = @$c;
    my $file = 'nginx.conf';
    my %o;

    if ($where eq 'locations') {
        $o{locations} = "location /other/ {\n"
                        . "            $line\n"
                        . "            proxy_pass http://127.0.0.1:$port/;\n"
                        . "        }";

    } elsif ($where eq 'include') {
        $file = 'headers.conf';
        $t->write_file($file, "add_header X-Fine yes;\n$line\n");
        $o{server} = 'include ' . $t->testdir . "/$file;";

    } else {
        $o{$where} = $line;
    }

    $t->write_file_expand('nginx.conf', $p->conf(%o));
    my ($status, $out) = $t->reload_test;
    my ($directive) = $line =~ /(add_\w+ \S+)/;
    my $at = $t->testdir . "/$file:" . line_of($file, $line);

    isnt($status, 0, "$name: nginx -t fails");
    like($out, qr/\[emerg\] "\Q$directive\E" is not allowed: only the proxy's/,
         "$name: the emerg names \"$directive\"") or diag($out);
    like($out, qr/ in \Q$at\E\n/, "$name: ... and its file and line")
        or diag($out);
}

# ---- what passes, and works --------------------------------------------------

$t->write_file_expand('nginx.conf', $p->conf(
    server => 'add_header X-Server s always;',
    location => 'add_header X-Route r always;',
    locations => <<"EOF"));
location /inherit/ {
            proxy_pass http://127.0.0.1:$port/;
        }

        location /own/ {
            add_header X-Own o;
            add_trailer X-Trail t;
            proxy_pass http://127.0.0.1:$port/;
        }

        # the headers filter runs before the strip: it still reads the
        # upstream's header (the client does not get it)
        location /seen/ {
            proxy_set_header X-Echo-Header "Airlock-Denial: path";
            proxy_pass_header Airlock-Denial;
            add_header X-Seen "[\$sent_http_airlock_denial]";
            proxy_pass http://127.0.0.1:$port/;
        }
EOF

my ($status, $out) = $t->reload_test;
is($status, 0, 'other add_header and add_trailer: nginx -t passes')
    or diag($out);

$t->start_echo(8081);
$t->run;

# every header of a response named $name, as sent
sub values_of {
    my ($raw, $name) = @_;
    return map { $_->[1] }
           grep { lc $_->[0] eq lc $name }
           @{Airlock::Test::parse_response($raw)->{header_list}};
}

my $raw = $t->http_get('/nowhere');
is(Airlock::Test::parse_response($raw)->{status}, 403,
   'a denial in a location with add_header: 403');
is_deeply([values_of($raw, 'Airlock-Denial')], ['no_route'],
          '... with one "Airlock-Denial: no_route"');
is_deeply([values_of($raw, 'X-Route')], ['r'],
          '... and the location\'s add_header ("always")');
is_deeply([values_of($raw, 'X-Server')], [],
          '... not the server\'s, as nginx inherits add_header');

$raw = $t->http_get('/plain');
is(Airlock::Test::parse_response($raw)->{status}, 200, 'an allowed route: 200');
is_deeply([values_of($raw, 'X-Route')], ['r'], '... with its add_header');
is_deeply([values_of($raw, 'Airlock-Denial')], [], '... no Airlock-Denial');

$raw = $t->http_get('/inherit/x');
is_deeply([values_of($raw, 'X-Server')], ['s'],
          'a location without add_header inherits the server\'s');

$raw = $t->http("GET /own/x HTTP/1.1\r\nHost: localhost\r\n"
                . "Connection: close\r\n\r\n");
is_deeply([values_of($raw, 'X-Own')], ['o'], 'a location\'s own add_header');
is_deeply([values_of($raw, 'X-Server')], [],
          '... instead of the server\'s');
like($raw, qr/\r\nX-Trail: t\r\n/, '... and its add_trailer')
    or diag($raw);

$raw = $t->http_get('/seen/x');
is_deeply([values_of($raw, 'X-Seen')], ['[path]'],
          'add_header reads the upstream\'s Airlock-Denial: the strip has '
          . 'not run yet');
is_deeply([values_of($raw, 'Airlock-Denial')], [],
          '... and the client does not get it');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
