#!/usr/bin/perl

# ngx_http_airlock_module: the ALERT of a full airlock_zone writes the
# context nginx ends it with (the request line, the Host, the Referer, as
# the client sent them) escaped, as a refusal's line does (224-*.t).  Any
# client can fill the zone, and the denial that finds it full is the
# client's: its Referer, with a terminal's escape sequences in it, would
# otherwise reach the error log at "alert" as it was sent.
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

my $n = 300;
my @who = map { sprintf 'c%03d', $_ } 0 .. $n - 1;
my %tok = map { $_ => "token-$_-FAKE-0123456789" } @who;

# each client quarantined at its first denial, for longer than the test:
# a running quarantine is never freed to make room, so the zone stays full
$p->echo_policy(tokens => \%tok, threshold => 1, window => '60s',
                quarantine => 'threshold: 1, window: 60s, for: 3600s');

# 8 pages: the smallest zone nginx accepts
$t->write_file_expand('nginx.conf',
                      $p->conf(http => $p->zone_status_http('32k')));

$t->start_echo(8081);
$t->run;

plan tests => 6;

my $esc = "\e";

# a Referer that sets the window's title and clears the screen
my $referer = "${esc}]0;FAKE-title\a${esc}[2Jx";

my $answered = 0;

for my $w (@who) {
    my $r = parse_response(http("GET /nope HTTP/1.0\r\n"
                                . "Proxy-Authorization: Bearer $tok{$w}\r\n"
                                . "Referer: $referer\r\n\r\n"));
    $answered++ if ($r->{status} // 0) == 403;
}

is($answered, $n, 'every denial answered while the zone fills');

my ($alert, @lines);

for (1 .. 50) {
    @lines = grep { /^\S+ \S+ \[(?:alert|crit|error|warn|notice)\].*airlock:/ }
             split /\n/, $t->read_file('error.log') // '';
    ($alert) = grep { /\[alert\].*could not allocate node in airlock_zone/ }
               @lines;
    last if defined $alert;
    select undef, undef, undef, 0.1;
}

ok(defined $alert, 'the zone filled: one ALERT');

$alert //= '';

unlike($alert, qr/[\x00-\x1f\x7f-\xff]/,
       'no control byte in the ALERT (old)')
    or diag($alert =~ s/([^\x20-\x7e])/sprintf('<%02X>', ord $1)/ger);
like($alert, qr/referrer: "\\x1B\]0;FAKE-title\\x07\\x1B\[2Jx"/,
     'the ALERT: the Referer, escaped (old)');

my @raw = grep { /[\x00-\x1f\x7f-\xff]/ } @lines;
is(scalar @raw, 0, 'no control byte in any line of the module (old)')
    or diag(join "\n", map { s/([^\x20-\x7e])/sprintf('<%02X>', ord $1)/ger }
                       @raw[0 .. ($#raw < 4 ? $#raw : 4)]);

is($t->error_log_check(qr/could not allocate node in airlock_zone/), '',
   'no other alerts');
