#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that echoes the injected credential
# HTML- or XML-escaped does not leak it.  A secret holding & < > " ' comes
# back as a page or an XML document writes it: &amp; &lt; &gt; &quot;
# &apos;, &#39; &#039; &#x27; (Python's html.escape, PHP's
# htmlspecialchars), or every character as a decimal or hex character
# reference in either case; "Bearer x" and, for Basic auth, the password
# alone too.  Each form is echoed in a response header, in a body held
# whole, streamed in pieces of 2 and 5 bytes, and in a long body through
# 1 KB proxy buffers; the client gets exactly "[REDACTED]" where it was.

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

my $tok = q{s3cr&t<t0k>"q'9};
my $user = 'alice';
my $pass = q{pa&5<w>"d'Z};
my $cred = "$user:$pass";

# ---- the forms --------------------------------------------------------------

srand(3);

my %named = ('&' => '&amp;', '<' => '&lt;', '>' => '&gt;', '"' => '&quot;');

# the five characters as an encoder writes them, the quote as given
sub html {
    my ($s, $apos) = @_;
    return join '', map {
        $_ eq "'" ? $apos : $named{$_} // $_
    } split //, $s;
}

# every character as &#N;
sub html_dec {
    my ($s) = @_;
    return join '', map { sprintf '&#%d;', ord $_ } split //, $s;
}

# every character as &#xN;, the x and each hex letter in a random case
sub html_hex {
    my ($s) = @_;
    return join '', map {
        my $h = sprintf '&#x%X;', ord $_;
        $h =~ s/([xA-F])/rand() < 0.5 ? lc $1 : uc $1/ge;
        $h;
    } split //, $s;
}

my @forms = (
    [ bearer => 'html.escape (&#x27;)', html($tok, '&#x27;') ],
    [ bearer => 'htmlspecialchars (&#039;)', html($tok, '&#039;') ],
    [ bearer => 'XML (&apos;)', html($tok, '&apos;') ],
    [ bearer => '&#39;', html($tok, '&#39;') ],
    [ bearer => '"Bearer x" escaped', 'Bearer ' . html($tok, '&#39;') ],
    [ bearer => 'every char decimal', html_dec($tok) ],
    [ bearer => 'every char hex, mixed case 1', html_hex($tok) ],
    [ bearer => 'every char hex, mixed case 2', html_hex($tok) ],
    [ basic => 'basic: the password escaped', html($pass, '&#x27;') ],
    [ basic => 'basic: user:password escaped', html($cred, '&#39;') ],
);

echo_forms($t, $p, tok => $tok, cred => $cred, forms => \@forms);

done_testing();
