#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that shows what it got through an
# HTML escaper that leaves out the ";" of its references (HTML5 reads
# "&#95", "&#x5F" up to the first byte that is not a digit of theirs,
# and its legacy names "&amp", "&lt", "&gt", "&quot" before anything, as
# every browser and html.unescape() do) does not leak the injected
# credential: the secret, the rendered "Bearer" value and the Basic
# password, so written, each in a header, a held body, a body streamed
# in 2- and 5-byte pieces and a long body through 1 KB buffers, come back
# as "[REDACTED]".

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::ScrubForms qw(echo_forms);

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 'FAKE_t0k<3n>"q"&x.y/z=w&lt';
my $cred = 'alice:FAKE<pa55>&"w0rd"_';
(my $pass = $cred) =~ s/^[^:]*://;

# every byte as "&#N" or "&#xN", without ";": the next byte is the
# next reference's "&", or the ">" after the form
sub all_dec {
    join '', map { sprintf '&#%d', ord } split //, $_[0];
}

sub all_hex {
    my ($s, $fmt) = @_;
    join '', map { sprintf $fmt, ord } split //, $s;
}

# punctuation as "&#N", without ";" where the next byte is no digit
sub punct_dec {
    my @c = split //, $_[0];
    my $out = '';

    for my $i (0 .. $#c) {
        if ($c[$i] =~ /[A-Za-z0-9]/) {
            $out .= $c[$i];
            next;
        }
        my $next = $c[$i + 1] // '>';
        $out .= sprintf('&#%d', ord $c[$i]) . ($next =~ /[0-9]/ ? ';' : '');
    }

    return $out;
}

# "&", "<", ">", '"' by their legacy names without ";", in lower or
# upper case, even before a letter ("&ltx" is "<x")
sub legacy {
    my ($s, $upper) = @_;
    my %name = ('&' => 'amp', '<' => 'lt', '>' => 'gt', '"' => 'quot');

    return join '', map {
        defined $name{$_} ? '&' . ($upper ? uc $name{$_} : $name{$_}) : $_;
    } split //, $s;
}

my @forms = (
    [ bearer => 'the secret, every byte as &#N', all_dec($tok) ],
    [ bearer => 'the secret, every byte as &#xN',
      all_hex($tok, '&#x%x') ],
    [ bearer => 'the secret, every byte as &#XN', all_hex($tok, '&#X%X') ],
    [ bearer => 'the secret, punctuation as &#N', punct_dec($tok) ],
    [ bearer => 'the rendered value, punctuation as &#N',
      punct_dec("Bearer $tok") ],
    [ bearer => 'the secret, legacy names', legacy($tok) ],
    [ bearer => 'the secret, legacy names in upper case', legacy($tok, 1) ],
    [ basic => 'basic: the password, legacy names', legacy($pass) ],
    [ basic => 'basic: the password, every byte as &#N', all_dec($pass) ],
);

for my $f (@forms) {
    die "form without a reference: $f->[1]" if index($f->[2], '&') < 0;
    die "form with a \";\": $f->[1]" if $f->[2] =~ /&#?\w+;/
        && $f->[1] !~ /punctuation/;
}

echo_forms($t, $p, tok => $tok, cred => $cred, forms => \@forms);

done_testing();
