#!/usr/bin/perl

# ngx_http_airlock_module, ngx_http_airlock_llm_module: every line the
# modules write at run time ends with the context nginx adds (the request
# line, the Host, the Referer, as the client sent them) escaped, each
# control byte, byte outside ASCII and backslash as \xHH, as a refusal's
# line does (224-*.t).  The LLM gateway's lines wrote it as it came: here
# the one of a request that reaches a fallback location without a call
# the gateway let through.  And the header an upstream sent that makes
# its answer one that cannot be scrubbed ("upstream sent \"Content-
# Encoding: ...\"") is written the same way: an upstream, or a client
# whose bytes it echoes, would otherwise put a terminal's escape
# sequences (ESC ] 0 ; sets a window's title, ESC [ 2 J clears the
# screen) in the error log at "error".
#
# nginx refuses ESC in the request line and in the Host (224-*.t), but
# takes bytes outside ASCII there (C1 CSI, U+202E RIGHT-TO-LEFT
# OVERRIDE), and any byte but CR, LF and NUL in the Referer.
#
# The old code fails the tests marked (old).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

# nginx's own debug lines are not the modules'
local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $esc = "\e";

# a Referer that sets the window's title and clears the screen
my $referer = "${esc}]0;FAKE-title\a${esc}[2Jx";

# C1 CSI (U+009B) and U+202E, in the Host and in the target (which a
# route or an LLM entry would refuse)
my $odd = "\xc2\x9b31m\xe2\x80\xae";
my $host = "a${odd}b";

# what the echo upstream answers with: a Content-Encoding, so the answer
# cannot be scrubbed, whose value holds the same escapes
my $encoding = "x${esc}]0;FAKE-title\a${esc}[2J";

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
my $p = $l->proxy;

$l->setup(http => <<"EOF", locations => <<'EOF');
    map \$arg_c \$enc_header {
        default "";
        1 "Content-Encoding: $encoding";
    }
EOF
        location /enc {
            airlock on;

            %%AIRLOCK_LOCATION%%

            proxy_set_header X-Echo-Header $enc_header;
        }

        location /fallback/ {
            airlock_llm_fallback;

            %%AIRLOCK_LOCATION%%
        }
EOF

# the gateway's policy, and a named route to the echo upstream that
# injects a credential: its answers are scrubbed
my $policy = $l->policy;
my $sealed = $p->seal('enc-FAKE-0123456789abcdef');

$policy =~ s/^secrets:\n/secrets:\n  enc_key: { sealed: "$sealed" }\n/m
    or die "no secrets in the policy\n";
$policy .= <<'EOF';
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8083%%" }
routes:
  - name: enc
    clients: [agent]
    match: { method: GET, path: /enc }
    upstream: echo
    to: /enc
    query: { allow: [c] }
    inject: { Authorization: "Bearer {enc_key}" }
EOF

$t->write_file_expand('policy.yaml', $policy);

$t->start_echo(8083);
$t->run;

plan tests => 12;

my $agent = $l->token('agent');

sub shown {
    my ($s) = @_;
    return ($s // '') =~ s/([^\x20-\x7e])/sprintf('<%02X>', ord $1)/ger;
}

# a request the gateway never saw, at a fallback location: its target,
# Host and Referer hold what nginx takes (ngx_http_airlock_llm_fallback.c)

my $r = parse_response(http("GET /fallback/x$odd HTTP/1.1\r\n"
                            . "Host: $host\r\n"
                            . "Referer: $referer\r\n"
                            . "Connection: close\r\n\r\n"));

is($r->{status}, 403, 'the fallback location, reached directly: 403');

# A named route's answer that cannot be scrubbed (ngx_http_airlock_
# filter.c).  The line is written once the upstream answers, when the
# client's Host and Referer are no longer the request's (the route's
# headers replaced them), so its context holds only what the route let
# through.

$r = parse_response(http("GET /enc?c=1 HTTP/1.1\r\n"
                         . "Host: $host\r\n"
                         . "Referer: $referer\r\n"
                         . "Proxy-Authorization: Bearer $agent\r\n"
                         . "Connection: close\r\n\r\n"));

is($r->{status}, 502, 'a Content-Encoding from the upstream: refused');

my $fallback = qr/"airlock_llm_fallback" reached by a request/;
my $sent = qr/airlock: upstream sent/;
my ($fline, $sline, @lines);

for (1 .. 50) {
    @lines = grep { /^\S+ \S+ \[(?:alert|crit|error|warn|notice|info)\]/
                    && /airlock:/ }
             split /\n/, $t->read_file('error.log') // '';
    ($fline) = grep { $_ =~ $fallback } @lines;
    ($sline) = grep { $_ =~ $sent } @lines;
    last if defined $fline && defined $sline;
    select undef, undef, undef, 0.1;
}

ok(defined $fline, 'the fallback\'s line');

$fline //= '';

unlike($fline, qr/[\x00-\x1f\x7f-\xff]/,
       'the fallback: no control byte or byte outside ASCII (old)')
    or diag(shown($fline));
my $want = ', request: "GET /fallback/x\\xC2\\x9B31m\\xE2\\x80\\xAE '
           . 'HTTP/1.1"';
like($fline, qr/\Q$want\E/, 'the fallback: the request line, escaped (old)');
like($fline, qr/, host: "a\\xC2\\x9B31m\\xE2\\x80\\xAEb"/,
     'the fallback: the Host, escaped (old)');
like($fline, qr/, referrer: "\\x1B\]0;FAKE-title\\x07\\x1B\[2Jx"$/,
     'the fallback: the Referer, escaped (old)');

ok(defined $sline, 'the "upstream sent" line');

$sline //= '';

unlike($sline, qr/[\x00-\x1f\x7f-\xff]/,
       '"upstream sent": no control byte or byte outside ASCII (old)')
    or diag(shown($sline));
$want = 'upstream sent "Content-Encoding: x\\x1B]0;FAKE-title\\x07\\x1B[2J" '
        . 'on route "enc"';
like($sline, qr/\Q$want\E/,
     '"upstream sent": the upstream\'s header value, escaped (old)');

my @raw = grep { /[\x00-\x1f\x7f-\xff]/ } @lines;
is(scalar @raw, 0, 'no control byte in any line of the modules (old)')
    or diag(join "\n", map { shown($_) } @raw[0 .. ($#raw < 4 ? $#raw : 4)]);

is($t->error_log_check, '', 'no alerts');

$t->stop;
