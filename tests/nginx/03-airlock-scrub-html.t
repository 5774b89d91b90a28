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

# ---- the proxy --------------------------------------------------------------

my $tok_sealed = $p->seal($tok);
my $basic_sealed = $p->seal($cred);
my $query = 'query: { allow: [f, size, chunked, piece, delay, hdr] }';

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$tok_sealed" }
  basic: { sealed: "$basic_sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: bearer
    clients: [local]
    match: { method: GET, path: /bearer }
    upstream: echo
    to: /bearer
    $query
    inject: { Authorization: "Bearer {tok}" }
  - name: basic
    clients: [local]
    match: { method: GET, path: /basic }
    upstream: echo
    to: /basic
    $query
    inject: { Authorization: "Basic {basic|base64}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

# ?f=i puts form i, as "<<form>>;", in $echo_pattern
my $map = '';
for my $i (0 .. $#forms) {
    (my $v = "<<$forms[$i][2]>>;") =~ s/(["\\])/\\$1/g;
    $map .= "        $i \"$v\";\n";
}

my $http = <<"EOF";
    map \$arg_f \$echo_pattern {
        default "";
$map    }

    map \$arg_hdr \$echo_leak {
        default "";
        1 "X-Leak: \$echo_pattern";
    }
EOF

$t->write_file_expand('nginx.conf', $p->conf(http => $http,
                                             location => <<'EOF'));
            proxy_set_header X-Echo-Pattern $echo_pattern;
            proxy_set_header X-Echo-Header $echo_leak;
            proxy_set_header X-Echo-Size $arg_size;
            proxy_set_header X-Echo-Chunked $arg_chunked;
            proxy_set_header X-Echo-Chunk-Size $arg_piece;
            proxy_set_header X-Echo-Delay-Ms $arg_delay;

            proxy_buffer_size 1k;
            proxy_buffers 8 1k;
            proxy_busy_buffers_size 2k;
EOF

$t->start_echo(8081);
$t->run;

# ---- the checks -------------------------------------------------------------

sub get {
    my ($route, %q) = @_;
    my $q = join '&', map { "$_=$q{$_}" } sort keys %q;
    my $raw = $t->http_get("/$route?$q", timeout => 20);
    return ($raw, parse_response($raw));
}

for my $i (0 .. $#forms) {
    my ($route, $name, $form) = @{$forms[$i]};
    my $unit = "<<$form>>;";
    my $want = '<<[REDACTED]>>;';

    my ($raw, $r) = get($route, f => $i, hdr => 1);
    is($r->{headers}{'x-leak'}, $want, "$name: header");

    my $n = int(20000 / length $unit);
    ($raw, $r) = get($route, f => $i, size => $n * length $unit);
    ok($r->{body} eq $want x $n
       && $r->{headers}{'content-length'} == length $r->{body},
       "$name: held: every occurrence redacted, exact Content-Length");

    for my $piece (2, 5) {
        ($raw, $r) = get($route, f => $i, size => 4 * length $unit,
                         chunked => 1, piece => $piece, delay => 1);
        ok($r->{body} eq $want x 4, "$name: streamed in $piece-byte pieces");
    }

    $n = int(70000 / length $unit) + 1;
    ($raw, $r) = get($route, f => $i, size => $n * length $unit);
    ok(!defined $r->{headers}{'content-length'}
       && $r->{body} eq $want x $n,
       "$name: long body streamed, every occurrence redacted");
    ok(index($raw, $form) < 0, "$name: not in the response");
}

my $log = $t->read_file('error.log');
ok(index($log, $pass) < 0 && index($log, $tok) < 0, 'error log: no secret');
is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
