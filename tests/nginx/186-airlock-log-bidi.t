#!/usr/bin/perl

# ngx_http_airlock_module: the deny log and the journal write the format
# characters that make a line read as something else to an operator's
# terminal or viewer as \u20XX, not as they are: U+2028 and U+2029 (line
# and paragraph separators: a viewer breaks the line there), the bidi
# controls U+202A..U+202E and U+2066..U+2069, and U+200E, U+200F (a path
# "/x<U+202E>gpj.exe" shows as "/xexe.jpg").  A JSON reader reads the
# characters back; other UTF-8 is still written as it is.  The request
# target carries them raw (the deny log's "path" is the target as sent),
# and the alert's sample with it.

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


plan tests => 11;

sub get {
    my ($who, $path) = @_;
    return http("GET $path HTTP/1.0\r\n"
                . "Proxy-Authorization: Bearer $tok{$who}\r\n\r\n");
}

my %cp = (rlo => 0x202e, lre => 0x202a, ls => 0x2028, ps => 0x2029,
          lri => 0x2066, pdi => 0x2069, rlm => 0x200f, lrm => 0x200e);

sub utf8_of { my $c = chr(shift); utf8::encode($c); return $c }

# client a: a denial for each, the third of them alerts

for my $k (sort keys %cp) {
    get('a', "/$k/x" . utf8_of($cp{$k}) . 'gpj.exe');
}

# client b: a line separator next to an ordinary non-ASCII character

get('b', '/sep/caf' . utf8_of(0xe9) . utf8_of(0x2028) . 'rm' . utf8_of(0x20ac));

my $deny = $t->read_file('deny.log') // '';
$deny =~ s/[^\n]*\z//;

my ($ok, $back) = (1, 1);
my %path = map { ($_->{path} // '') => $_ } $p->deny_log;

for my $k (sort keys %cp) {
    my $want = sprintf('"path":"/%s/x\\u%04xgpj.exe"', $k, $cp{$k});

    if (index($p->raw_line('deny.log', qr{"/$k/}), $want) < 0) {
        $ok = 0;
        diag("$k: " . $p->raw_line('deny.log', qr{"/$k/}));
    }

    $back = 0 unless $path{"/$k/x" . chr($cp{$k}) . 'gpj.exe'};
}

ok($ok, 'deny log: each of them as \\u20XX');
ok($back, 'deny log: a JSON reader reads each back');
unlike($deny, qr{\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]},
       'deny log: none of them as it is');
is(scalar(() = $deny =~ /\n/g), 9, 'deny log: one line for each denial');

like($p->raw_line('deny.log', qr{"/sep/}),
     qr{"path":"/sep/caf\xc3\xa9\\u2028rm\xe2\x82\xac"},
     'é and € as they are, beside an escaped U+2028');

# the journal: the deny lines as the deny log, and the alert's sample

my $journal = $t->read_file('journal.log') // '';
$journal =~ s/[^\n]*\z//;

like($p->raw_line('journal.log', qr{"type":"deny".*"/rlo/}),
     qr{"path":"/rlo/x\\u202egpj\.exe"}, 'journal: U+202E as \\u202e');
unlike($journal, qr{\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]},
       'journal: none of them as it is');

my @j = Airlock::Test::json_lines($journal);
my ($alert) = grep { $_->{type} eq 'alert' && $_->{client} eq 'a' } @j;
ok($alert, 'client a alerts');
like($p->raw_line('journal.log', qr{"type":"alert".*"client":"a"}),
     qr{"sample":"GET /\w+/x\\u20[0-6][0-9a-f]gpj\.exe"},
     'the alert\'s sample: escaped too');
ok($alert && $alert->{sample} =~ /^GET \/\w+\/x[\x{200e}-\x{2069}]gpj\.exe$/,
   '... and read back');

# (the error log's "request:" is nginx's own, the request line as sent)

is($t->error_log_check, '', 'no alerts');
