#!/usr/bin/perl

# ngx_http_airlock_module: the error log lines of a refusal and of an
# alert write the context nginx ends them with (the request line, the
# Host, the Referer, as the client sent them) with every control byte,
# byte outside ASCII and backslash as \xHH.  A client, one the policy
# does not know too, would otherwise put a terminal's escape sequences
# (ESC ] 0 ; sets a window's title, ESC [ 2 J clears the screen) or a
# bidi control in the error log at "error", where nginx writes its own
# refusal of a malformed request at "info".
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

# the second denial in a minute alerts
$p->echo_policy(threshold => 2);

$t->write_file_expand('nginx.conf',
                      $p->conf(http => 'airlock_zone airlock 1m;'));

$t->start_echo(8081);
$t->run;

plan tests => 11;

my $esc = "\e";

# a Referer that sets the window's title and clears the screen
my $r = parse_response(http("GET /nope HTTP/1.0\r\nReferer: ${esc}]0;"
                            . "FAKE-title\a${esc}[2Jx\r\n\r\n"));
is($r->{status}, 403, 'Referer with escapes: refused');

# a request line nginx refuses (400), logged as "refused"
$r = parse_response(http("GET /x${esc}[31m HTTP/1.0\r\n\r\n"));
is($r->{status}, 400, 'ESC in the target: nginx answers 400');

# C1 CSI (U+009B) and U+202E RIGHT-TO-LEFT OVERRIDE, which nginx takes
$r = parse_response(http("GET /x\xc2\x9b31m\xe2\x80\xae HTTP/1.0\r\n\r\n"));
is($r->{status}, 403, 'C1 and bidi bytes in the target: refused');

# a Host nginx refuses (400)
$r = parse_response(http("GET /ok HTTP/1.1\r\nHost: a${esc}[31mb\r\n"
                         . "Connection: close\r\n\r\n"));
is($r->{status}, 400, 'ESC in the Host: nginx answers 400');

# the refused requests' lines are written as they end
my @lines;

for (1 .. 50) {
    @lines = grep { /airlock: (?:denied|alert)/ }
             split /\n/, $t->read_file('error.log') // '';
    last if (grep { /airlock: denied/ } @lines) >= 4
            && grep { /airlock: alert/ } @lines;
    select undef, undef, undef, 0.1;
}

is(scalar(grep { /airlock: denied/ } @lines), 4, 'four denial lines');
ok((grep { /airlock: alert/ } @lines), 'an alert line');

my @raw = grep { /[\x00-\x1f\x7f-\xff]/ } @lines;
is(scalar @raw, 0, 'no control byte or byte outside ASCII (old)')
    or diag(join "\n", map { s/([^\x20-\x7e])/sprintf('<%02X>', ord $1)/ger }
                       @raw);

my $text = join "\n", @lines;

like($text, qr/referrer: "\\x1B\]0;FAKE-title\\x07\\x1B\[2Jx"/,
     'the Referer, escaped (old)');
like($text, qr/request: "GET \/x\\x1B\[31m HTTP\/1\.0"/,
     'the request line nginx refused, escaped (old)');
like($text, qr/request: "GET \/x\\xC2\\x9B31m\\xE2\\x80\\xAE HTTP\/1\.0"/,
     'C1 and bidi bytes, escaped (old)');

is($t->error_log_check, '', 'no alerts');
