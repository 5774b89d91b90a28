#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that shows what it got through an
# HTML escaper that writes punctuation by its HTML5 name (PHP's
# htmlentities() with ENT_HTML5: "_" is "&lowbar;", "." "&period;", "/"
# "&sol;", "=" "&equals;", ":" "&colon;"; html.unescape() and every
# browser read them back) does not leak the injected credential: the
# secret, the rendered "Bearer" value, the Basic password and the Basic
# credential's base64, so written, each in a header, a held body, a body
# streamed in 2- and 5-byte pieces and a long body through 1 KB buffers,
# come back as "[REDACTED]"; so do the other names HTML5 gives the same
# characters ("&lsqb;" and "&lbrack;"), in any case.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::ScrubForms qw(echo_forms);

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 'FAKE_t0k.3n/x+y=z:w[1]{2}$%@|`!,*(3)^#?;';
my $cred = 'alice:FAKE_pa55.w0rd=:/';
(my $pass = $cred) =~ s/^[^:]*://;

# the name PHP's htmlentities(ENT_QUOTES | ENT_HTML5) writes for each
# character that has one (ext/standard/html_tables.h)
my %php = (
    '!' => 'excl', '"' => 'quot', '#' => 'num', '$' => 'dollar',
    '%' => 'percnt', '&' => 'amp', "'" => 'apos', '(' => 'lpar',
    ')' => 'rpar', '*' => 'ast', '+' => 'plus', ',' => 'comma',
    '.' => 'period', '/' => 'sol', ':' => 'colon', ';' => 'semi',
    '<' => 'lt', '=' => 'equals', '>' => 'gt', '?' => 'quest',
    '@' => 'commat', '[' => 'lbrack', '\\' => 'bsol', ']' => 'rsqb',
    '^' => 'Hat', '_' => 'lowbar', '`' => 'grave', '{' => 'lbrace',
    '|' => 'vert', '}' => 'rcub',
);

# the other HTML5 names of the same characters
my %alias = (
    '*' => 'midast', '[' => 'lsqb', ']' => 'rbrack', '{' => 'lcub',
    '|' => 'verbar', '}' => 'rbrace',
);

sub named {
    my ($s, $names, $case) = @_;
    return join '', map {
        my $n = $names->{$_} // $php{$_};
        defined $n ? '&' . ($case ? $case->($n) : $n) . ';' : $_;
    } split //, $s;
}

my $b64 = encode_base64($cred, '');

my @forms = (
    [ bearer => 'the secret, as PHP writes it', named($tok) ],
    [ bearer => 'the rendered value', named("Bearer $tok") ],
    [ bearer => 'the other names', named($tok, \%alias) ],
    [ bearer => 'upper case names', named($tok, {}, sub { uc $_[0] }) ],
    [ basic => 'basic: the password', named($pass) ],
    [ basic => 'basic: the credential in base64', named($b64) ],
);

for my $f (@forms) {
    die "form without a name: $f->[1]" if index($f->[2], '&') < 0;
}

echo_forms($t, $p, tok => $tok, cred => $cred, forms => \@forms);

done_testing();
