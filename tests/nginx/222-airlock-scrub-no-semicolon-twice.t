#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that shows what it got through an
# HTML escaper that leaves out the ";" of its references (HTML5 reads
# "&#95", "&#x5F" up to the first byte that is not a digit of theirs,
# and its legacy names "&amp", "&lt", "&gt", "&quot" before anything, as
# every browser and html.unescape() do), or escaped twice (a URL in a
# query parameter, "%252F"; a JSON document in a JSON string,
# "\\u003c", "\\\/"; an escaped value escaped again, "&amp;lt;",
# "&amp;#34;") does not leak the injected credential: the secret, the
# rendered "Bearer" value and the Basic password, so written, each in a
# header, a held body, a body streamed in 2- and 5-byte pieces and a long
# body through 1 KB buffers, come back as "[REDACTED]".

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::ScrubForms qw(echo_forms url_all url_reserved);

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

# twice: the text escaped once, escaped again whole
sub url_twice {
    my ($s) = @_;
    (my $e = $s) =~ s/%/%25/g;
    return $e;
}

# Go's encoding/json writes "<", ">", "&" as \u003c..., PHP's
# json_encode() "/" as "\/"; the document so written in a JSON string
sub json_inner {
    my ($s) = @_;
    $s =~ s{([\\"/])}{\\$1}g;
    $s =~ s{([<>&])}{sprintf '\\u%04x', ord $1}ge;
    return $s;
}

sub json_outer {
    my ($s) = @_;
    $s =~ s{([\\"/])}{\\$1}g;
    return $s;
}

# html.escape(), and Go's html.EscapeString() ('"' as "&#34;")
sub html_escape {
    my ($s, $go) = @_;
    my %e = ('&' => '&amp;', '<' => '&lt;', '>' => '&gt;',
             '"' => $go ? '&#34;' : '&quot;', "'" => $go ? '&#39;' : '&#x27;');
    return join '', map { $e{$_} // $_ } split //, $s;
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
    [ bearer => 'twice: the secret, URL-encoded twice',
      url_twice(url_reserved($tok)) ],
    [ bearer => 'twice: the secret, every byte as %25XX',
      url_twice(url_all($tok)) ],
    [ bearer => 'twice: the rendered value, URL-encoded twice',
      url_twice(url_reserved("Bearer $tok", 1)) ],
    [ bearer => 'twice: the secret, a JSON string in a JSON string',
      json_outer(json_inner($tok)) ],
    [ bearer => 'twice: the secret, HTML-escaped twice',
      html_escape(html_escape($tok)) ],
    [ bearer => 'twice: the secret, HTML-escaped twice as Go does',
      html_escape(html_escape($tok, 1)) ],
    [ basic => 'twice: basic: the password, URL-encoded twice',
      url_twice(url_reserved($pass)) ],
    [ basic => 'twice: basic: the password, a JSON string in a JSON string',
      json_outer(json_inner($pass)) ],
    [ basic => 'twice: basic: the password, HTML-escaped twice',
      html_escape(html_escape($pass, 1)) ],
);

for my $f (@forms) {
    die "form left raw: $f->[1]" if index($f->[2], $f->[0] eq 'basic'
                                                   ? $pass : $tok) >= 0;
    die "form with a \";\": $f->[1]" if $f->[2] =~ /&#?\w+;/
        && $f->[1] !~ /punctuation|twice/;
}

echo_forms($t, $p, tok => $tok, cred => $cred, forms => \@forms);

done_testing();
