#!/usr/bin/perl

# ngx_http_airlock_module: the deny log and the journal write a path's
# valid UTF-8 as it is, not one \u00XX per byte (which read back as
# Latin-1: "/logs/caf\u00c3\u00a9" for /logs/café, six bytes a byte of
# the sample's room).  A byte of no valid UTF-8 sequence (a lone byte, an
# overlong form, a surrogate) and a C1 control are still \u00XX, so the
# line tells the bytes sent.  A path cut at its limit is not cut inside a
# character.
#
# The old escaper fails the tests marked (old).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my %tok = map { $_ => "token-$_-FAKE-0123456789" } qw(a b);
# clients a and b, a bearer token each, on a route GET /ok; the third
# denial of a client in an hour alerts
$p->echo_policy(tokens => \%tok, threshold => 3, window => '1h');

$t->write_file_expand('nginx.conf', $p->conf(http => <<'EOF'));
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log;
EOF

$t->start_echo(8081);
$t->run;

plan tests => 20;

sub get {
    my ($who, $path) = @_;
    return http("GET $path HTTP/1.0\r\n"
                . "Proxy-Authorization: Bearer $tok{$who}\r\n\r\n");
}

my $cafe = "/logs/caf\xc3\xa9";
my $long = '/' . ('a' x 254) . "\xc3\xa9" . 'b';   # the cut at 256 in é

# client a: three denials of valid UTF-8, the third of them alerts

like(get('a', $cafe), qr{^HTTP/1\.. 403}, 'café denied');
get('a', "/k/\xe6\xbc\xa2\xf0\x9f\x98\x80");
like(get('a', $long), qr{^HTTP/1\.. 403}, 'a long path denied');

# client b: bytes of no valid sequence, and a C1 control

get('b', "/x\xe9y");
get('b', "/o\xc0\xafv");
get('b', "/s\xed\xa0\x80t");
get('b', "/c\xc2\x9b" . '2J');

my @log = $p->deny_log;
my %path = map { ($_->{path} // '') => $_ } @log;

ok($path{"/logs/caf\x{e9}"}, '(old) the deny log reads café back');
ok($path{"/k/\x{6f22}\x{1f600}"}, '(old) ... and a CJK character, an emoji');
my $line = $p->raw_line('deny.log', qr{"/logs/caf});
like($line, qr{"path":"/logs/caf\xc3\xa9"}, '(old) as UTF-8 in the line');
unlike($line, qr{\\u00c3}, '(old) not a byte at a time');

my ($cut) = grep { ($_->{path} // '') =~ /^\/a{254}/ } @log;
is($cut && $cut->{path}, '/' . ('a' x 254) . "\x{2026}",
   '(old) a path is not cut inside a character: before it, then the mark');

like($p->raw_line('deny.log', qr{"/x}), qr{"path":"/x\\u00e9y"},
     'a lone byte as \\u00e9');
like($p->raw_line('deny.log', qr{"/o}), qr{"path":"/o\\u00c0\\u00afv"},
     'an overlong form a byte at a time');
like($p->raw_line('deny.log', qr{"/s}),
     qr{"path":"/s\\u00ed\\u00a0\\u0080t"}, 'a surrogate a byte at a time');
like($p->raw_line('deny.log', qr{"/c}), qr{"path":"/c\\u009b2J"},
     '(old) a C1 control as \\u009b');
unlike($t->read_file('deny.log'), qr{\xc2\x9b}, '... never as it is');

# the journal: the deny lines as the deny log, and the alert's sample

my @j = Airlock::Test::json_lines($t->read_file('journal.log'));
my ($jd) = grep { $_->{type} eq 'deny' && $_->{path} =~ /^\/logs/ } @j;
is($jd && $jd->{path}, "/logs/caf\x{e9}", '(old) the journal reads café');

my ($alert) = grep { $_->{type} eq 'alert' && $_->{client} eq 'a' } @j;
ok($alert, 'client a alerts');
is($alert && $alert->{sample}, 'GET /' . ('a' x 254) . "\x{2026}",
   '(old) its sample is cut before the character, not in it');
my $raw = $p->raw_line('journal.log', qr{"type":"alert".*"client":"a"});
unlike($raw, qr{\\u00c3}, '(old) the sample has no byte escaped');

my ($ab) = grep { $_->{type} eq 'alert' && $_->{client} eq 'b' } @j;
ok($ab, 'client b alerts');
like($p->raw_line('journal.log', qr{"type":"alert".*"client":"b"}),
     qr{"sample":"GET /(s\\u00ed\\u00a0\\u0080t|o\\u00c0\\u00afv)"},
     'its sample tells the bytes');

like($p->raw_line('deny.log', qr{"/logs/caf}), qr{"reason":"path"},
     'café: refused as a path');

is($t->error_log_check, '', 'no alerts');
