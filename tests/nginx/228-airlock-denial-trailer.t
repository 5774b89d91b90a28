#!/usr/bin/perl

# ngx_http_airlock_denial_module: an upstream's trailer named
# Airlock-Denial is removed, as its header of that name is (59-*.t).
# Trailers come after the body, long after the header filter ran: nginx
# hands them on from a gRPC upstream (grpc_pass, every version) and,
# from nginx 1.27.2, from an HTTP one with "proxy_pass_trailers on"; an
# error_page or a location of the same server may take a request there.
# A client that reads trailers as headers would otherwise take the
# upstream's word for the proxy's refusal.
#
# The old code fails the tests marked (old).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->echo_policy;

$t->write_file_expand('nginx.conf', $p->conf(locations => <<'END'));
        location = /grpc {
            grpc_pass grpc://127.0.0.1:%%PORT_8083%%;
        }
END

$t->run_daemon($^X, "$FindBin::Bin/../lib/grpc-upstream.pl", $t->port(8083),
               'grpc-status=0', 'airlock-denial=no_route',
               'AIRLOCK-DENIAL=forged', 'x-plain=kept');
$t->wait_for_port(8083) or die 'gRPC upstream did not start';
$t->run;

plan tests => 6;

my $raw = $t->http("GET /grpc HTTP/1.1\r\nHost: localhost\r\n"
                   . "TE: trailers\r\nConnection: close\r\n\r\n") // '';
my $r = parse_response($raw);

is($r->{status}, 200, 'gRPC upstream: 200');
like($raw, qr/\r\nhello\r\n/, 'its body');
like($raw, qr/\r\nx-plain: kept\r\n/i, 'its trailers went to the client');
unlike($raw, qr/airlock-denial/i, 'no Airlock-Denial trailer (old)')
    or diag($raw);

my $log = $t->read_file('error.log') // '';
my @removed = $log =~ /\[warn\].*"(airlock-denial)" trailer .*removed/gi;
is(scalar @removed, 2, 'each logged at warn (old)');

is($t->error_log_check, '', 'no alerts');
