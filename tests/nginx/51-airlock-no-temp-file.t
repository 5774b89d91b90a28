#!/usr/bin/perl

# Credentials never reach the disk.  A large response to a slow client is
# not buffered to a proxy temporary file in an Airlock location, even one
# whose body does not say proxy_max_temp_file_size 0: the module sets it.
# nginx writes that file before any output filter, the scrubber included,
# has seen the bytes, so an echoed credential would be written to disk.
# The client here reads nothing for a while through a small receive
# buffer; then it reads everything and gets the whole body, scrubbed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Socket qw(SOL_SOCKET SO_RCVBUF);
use Time::HiRes qw(sleep time);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;
my $secret = 'temp-file-secret-0123456789';
my $sealed = $p->seal($secret);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: big
    clients: [local]
    match: { method: GET, path: /big/x }
    upstream: echo
    to: /big
    inject: { X-Token: "{tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
EOF

my $size = 8_000_000;

# no proxy_max_temp_file_size here: what nginx would do by default
$t->write_file_expand('nginx.conf', $p->conf(
    listen => 'listen 127.0.0.1:%%PORT_8090%% sndbuf=4k;',
    locations => <<"EOF"));
        location /big/ {
            airlock on;
            proxy_pass \$airlock_upstream\$airlock_uri;
            proxy_ignore_headers X-Accel-Redirect X-Accel-Expires
                                 X-Accel-Limit-Rate X-Accel-Buffering
                                 X-Accel-Charset;
            proxy_set_header X-Echo-Size $size;
            proxy_set_header X-Echo-Pattern "0123456789$secret";
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 5;

# a slow client: a small receive buffer, and nothing read for a while

socket(my $s, Socket::PF_INET, Socket::SOCK_STREAM, 0) or die "socket: $!";
setsockopt($s, SOL_SOCKET, SO_RCVBUF, 4096) or die "setsockopt: $!";
connect($s, Socket::pack_sockaddr_in($t->port(8090),
                                     Socket::inet_aton('127.0.0.1')))
    or die "connect: $!";
syswrite($s, "GET /big/x HTTP/1.0\r\nHost: localhost\r\n\r\n");

sub temp_files {
    my @open;

    for my $w ($t->_workers) {
        my $dir = "/proc/$w->[0]/fd";
        opendir(my $dh, $dir) or next;
        push @open, grep { /proxy_temp/ }
                    map { readlink("$dir/$_") // '' } readdir $dh;
    }

    return @open;
}

# nginx spools within milliseconds once its buffers are full; the wait is
# a bound for a slow machine, not a measure
my @seen;
my $until = time + 3;

while (time < $until) {
    push @seen, temp_files();
    last if @seen;
    last if ($t->read_file('error.log') // '') =~ /temporary file/;
    sleep 0.05;
}

is_deeply(\@seen, [], 'no proxy temporary file open while the client '
          . 'stalls');

# now the client reads everything

my ($buf, $raw) = ('', '');
my $deadline = time + 60;

while (time < $deadline) {
    my $n = sysread($s, $buf, 65536);
    last unless $n;
    $raw .= $buf;
}

close $s;

my ($head, $body) = split /\r\n\r\n/, $raw, 2;
$body //= '';

like($head // '', qr{^HTTP/1\.1 200 }, 'answered 200');
ok(length($body) > $size / 2 && $body =~ /\[REDACTED\]/,
   'the whole body came, scrubbed');
unlike($body, qr/\Q$secret\E/, 'no secret in the body');

unlike($t->read_file('error.log') // '',
       qr/an upstream response is buffered to a temporary file/,
       'no "buffered to a temporary file" in the error log');
