#!/usr/bin/perl

# ngx_http_airlock_module: an upstream that echoes the injected credential
# in a form a client decodes trivially does not leak it.  URL-encoded
# (upper, lower and mixed-case hex, every byte or only the reserved ones,
# "+" for the space of "Bearer x"), JSON-escaped ("\/", "\uXXXX" in either
# case), base64 without padding, base64url with and without, and for
# Basic auth "user:password" and the password alone.  Each form is echoed
# in a response header, in a body held whole (Content-Length), in a body
# streamed in pieces of 2 and 5 bytes (every form crosses buffer
# boundaries at many offsets), and in a long body through 1 KB proxy
# buffers; the client gets exactly "[REDACTED]" where the form was.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

# reserved characters, so that encoders have something to encode
my $tok = 's3cr3t/t0k+n?x>~9';
my $user = 'alice';
my $pass = 'pa55/w0rd~Q:z';
my $cred = "$user:$pass";

# ---- the forms --------------------------------------------------------------

srand(60);

# every byte as %XX, each hex letter in a random case
sub url_all {
    my ($s) = @_;
    return join '', map {
        my $h = sprintf '%%%02X', ord $_;
        $h =~ s/([A-F])/rand() < 0.5 ? lc $1 : $1/ge;
        $h;
    } split //, $s;
}

# what encodeURIComponent leaves alone is left alone
sub url_reserved {
    my ($s, $lower) = @_;
    (my $e = $s) =~ s/([^A-Za-z0-9\-_.!~*'()])/sprintf '%%%02X', ord $1/ge;
    $e =~ s/(%[0-9A-F]{2})/lc $1/ge if $lower;
    return $e;
}

# every character as \uXXXX, each hex letter in a random case
sub json_all {
    my ($s) = @_;
    return join '', map {
        my $h = sprintf '\\u%04X', ord $_;
        $h =~ s/([A-F])/rand() < 0.5 ? lc $1 : $1/ge;
        $h;
    } split //, $s;
}

sub b64 { encode_base64($_[0], '') }
sub unpadded { (my $s = $_[0]) =~ s/=+$//; $s }
sub b64url { (my $s = b64($_[0])) =~ tr{+/}{-_}; $s }

my @forms = (
    [ bearer => 'url, reserved bytes, upper case', url_reserved($tok) ],
    [ bearer => 'url, reserved bytes, lower case', url_reserved($tok, 1) ],
    [ bearer => 'url, every byte, mixed case 1', url_all($tok) ],
    [ bearer => 'url, every byte, mixed case 2', url_all($tok) ],
    [ bearer => 'url, every byte, mixed case 3', url_all($tok) ],
    [ bearer => 'url, "Bearer x" with %20', 'Bearer%20' . url_reserved($tok) ],
    [ bearer => 'form-encoded, "Bearer+x"', 'Bearer+' . url_reserved($tok) ],
    [ bearer => 'json, \/', do { (my $s = $tok) =~ s{/}{\\/}g; $s } ],
    [ bearer => 'json, every char \uXXXX, mixed case', json_all($tok) ],
    [ bearer => 'json, some chars \uXXXX',
      's3cr3t\/t0k\u002bn\u003Fx\u003e~9' ],
    [ bearer => 'base64, no padding', unpadded(b64($tok)) ],
    [ bearer => 'base64url, padded', b64url($tok) ],
    [ bearer => 'base64url, no padding', unpadded(b64url($tok)) ],
    [ bearer => 'base64, URL-encoded', url_reserved(b64($tok)) ],
    [ bearer => 'base64 of "Bearer x"', b64("Bearer $tok") ],
    [ bearer => 'base64url of "Bearer x"', b64url("Bearer $tok") ],
    [ basic => 'basic: the password alone', $pass ],
    [ basic => 'basic: the password URL-encoded', url_all($pass) ],
    [ basic => 'basic: user:password JSON-escaped', json_all($cred) ],
    [ basic => 'basic: user:password', $cred ],
    [ basic => 'basic: base64url of user:password, no padding',
      unpadded(b64url($cred)) ],
    [ basic => 'basic: base64 of "Basic t"', b64('Basic ' . b64($cred)) ],
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

# The echo upstream answers as X-Echo-* headers say; the client's own
# headers do not reach it, so the location sets them from the query:
# ?f=i puts form i, as "<<form>>;", in $echo_pattern.
my $map = '';
for my $i (0 .. $#forms) {
    (my $v = "<<$forms[$i][2]>>;") =~ s/\\/\\\\/g;
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

            # small proxy buffers: a long body crosses many of them
            proxy_buffer_size 1k;
            proxy_buffers 8 1k;
            proxy_busy_buffers_size 2k;
EOF

$t->start_echo(8081);
$t->run;

# ---- the checks -------------------------------------------------------------

ok(b64($tok) =~ /=/ && b64url($tok) ne b64($tok),
   'the secret has padding and a base64url form of its own');

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

    # a response header

    my ($raw, $r) = get($route, f => $i, hdr => 1);
    is($r->{headers}{'x-leak'}, $want, "$name: header");
    unlike($raw, qr/\Q$form\E/, "$name: header: not in the response");

    # held whole: a Content-Length under airlock_scrub_hold

    my $n = int(20000 / length $unit);
    ($raw, $r) = get($route, f => $i, size => $n * length $unit);
    is($r->{status}, 200, "$name: held: 200");
    ok($r->{body} eq $want x $n
       && $r->{headers}{'content-length'} == length $r->{body},
       "$name: held: every occurrence redacted, exact Content-Length");
    unlike($raw, qr/\Q$form\E/, "$name: held: not in the response");

    # streamed in small pieces: every form is cut at many offsets

    for my $piece (2, 5) {
        ($raw, $r) = get($route, f => $i, size => 4 * length $unit,
                         chunked => 1, piece => $piece, delay => 1);
        ok($r->{body} eq $want x 4, "$name: streamed in $piece-byte pieces")
            or diag($r->{body});
        unlike($raw, qr/\Q$form\E/,
               "$name: $piece-byte pieces: not in the response");
    }

    # streamed: longer than the hold, through 1 KB proxy buffers

    $n = int(70000 / length $unit) + 1;
    ($raw, $r) = get($route, f => $i, size => $n * length $unit);
    ok(!defined $r->{headers}{'content-length'}
       && $r->{body} eq $want x $n,
       "$name: long body streamed, every occurrence redacted");
    unlike($raw, qr/\Q$form\E/, "$name: long body: not in the response");
}

# the log says what happened, without the value

my $log = $t->read_file('error.log');
like($log, qr/scrubbed an injected credential from the response on route (?#
              )"basic"/, 'error log: the scrub on "basic" is reported');
unlike($log, qr/\Q$pass\E|\Q$tok\E/, 'error log: no secret');

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
