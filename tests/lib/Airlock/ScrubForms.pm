package Airlock::ScrubForms;

# The scrub-form tests' shared part: the encoders that write a credential
# as an upstream might echo it, and echo_forms(), which puts a proxy with
# two routes ("bearer" injecting "Bearer {tok}", "basic" injecting "Basic
# {basic|base64}") before the echo upstream and checks that each form
# given comes back as "[REDACTED]" wherever it is echoed.  The random
# cases come from the caller's srand().

use strict;
use warnings;

use Exporter 'import';
use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;

our @EXPORT_OK = qw(url_all url_reserved json_all b64 unpadded b64url
                    echo_forms echo_policy echo_blobs echo_units
                    inner_pieces);

# the end of each echo location
my $SMALL_BUFFERS = <<'EOF';

            # small proxy buffers: a long body crosses many of them
            proxy_buffer_size 1k;
            proxy_buffers 8 1k;
            proxy_busy_buffers_size 2k;
EOF

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

# the policy of the echo tests: a route "bearer" that injects "Bearer
# tok" and one "basic" that injects cred (user:password) as HTTP Basic,
# both to the echo upstream on port 8081, with the query line given
sub echo_policy {
    my ($t, $p, $tok, $cred, $query) = @_;

    my $tok_sealed = $p->seal($tok);
    my $basic_sealed = $p->seal($cred);

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
}


# Starts the echo upstream on 8081 and nginx; returns a getter: ($route,
# query params) => (the raw response, it parsed), waiting $timeout
# seconds at the most.
sub _run_echo {
    my ($t, $timeout) = @_;

    $t->start_echo(8081);
    $t->run;

    return sub {
        my ($route, %q) = @_;
        my $q = join '&', map { "$_=$q{$_}" } sort keys %q;
        my $raw = $t->http_get("/$route?$q", timeout => $timeout);
        return ($raw, parse_response($raw));
    };
}


# The error log has neither secret and no alert; with $reported, it
# reports the scrub on route "basic".
sub _check_log {
    my ($t, $tok, $pass, $reported) = @_;
    my $log = $t->read_file('error.log');

    like($log, qr/scrubbed an injected credential from the response on (?#
                  )route "basic"/,
         'error log: the scrub on "basic" is reported')
        if $reported;
    ok(index($log, $pass) < 0 && index($log, $tok) < 0,
       'error log: no secret');

    is($t->error_log_check, '', 'no alerts or sanitizer reports');
}

# echo_forms($t, $p, tok => T, cred => "user:password", forms => [[route,
# name, form], ...]): each form echoed in a response header, in a body
# held whole (Content-Length), streamed in pieces of 2 and 5 bytes (cut
# at many offsets), and in a long body through 1 KB proxy buffers.
sub echo_forms {
    my ($t, $p, %a) = @_;
    my @forms = @{$a{forms}};
    my ($tok, $cred) = @a{qw(tok cred)};
    (my $pass = $cred) =~ s/^[^:]*://;

    echo_policy($t, $p, $tok, $cred,
                'query: { allow: [f, size, chunked, piece, delay, hdr] }');

    # The echo upstream answers as X-Echo-* headers say; the client's own
    # headers do not reach it, so the location sets them from the query:
    # ?f=i puts form i, as "<<form>>;", in $echo_pattern.
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
        location => <<'EOF' . $SMALL_BUFFERS));
            proxy_set_header X-Echo-Pattern $echo_pattern;
            proxy_set_header X-Echo-Header $echo_leak;
            proxy_set_header X-Echo-Size $arg_size;
            proxy_set_header X-Echo-Chunked $arg_chunked;
            proxy_set_header X-Echo-Chunk-Size $arg_piece;
            proxy_set_header X-Echo-Delay-Ms $arg_delay;
EOF

    my $get = _run_echo($t, 20);

    for my $i (0 .. $#forms) {
        my ($route, $name, $form) = @{$forms[$i]};
        my $unit = "<<$form>>;";
        my $want = '<<[REDACTED]>>;';

        # a response header

        my ($raw, $r) = $get->($route, f => $i, hdr => 1);
        is($r->{headers}{'x-leak'}, $want, "$name: header");
        ok(index($raw, $form) < 0, "$name: header: not in the response");

        # held whole: a Content-Length under airlock_scrub_hold

        my $n = int(20000 / length $unit);
        ($raw, $r) = $get->($route, f => $i, size => $n * length $unit);
        is($r->{status}, 200, "$name: held: 200");
        ok($r->{body} eq $want x $n
           && $r->{headers}{'content-length'} == length $r->{body},
           "$name: held: every occurrence redacted, exact Content-Length");
        ok(index($raw, $form) < 0, "$name: held: not in the response");

        # streamed in small pieces: every form is cut at many offsets

        for my $piece (2, 5) {
            ($raw, $r) = $get->($route, f => $i, size => 4 * length $unit,
                                chunked => 1, piece => $piece, delay => 1);
            ok($r->{body} eq $want x 4,
               "$name: streamed in $piece-byte pieces")
                or diag($r->{body});
            ok(index($raw, $form) < 0,
               "$name: $piece-byte pieces: not in the response");
        }

        # streamed: longer than the hold, through 1 KB proxy buffers

        $n = int(70000 / length $unit) + 1;
        ($raw, $r) = $get->($route, f => $i, size => $n * length $unit);
        ok(!defined $r->{headers}{'content-length'}
           && $r->{body} eq $want x $n,
           "$name: long body streamed, every occurrence redacted");
        ok(index($raw, $form) < 0, "$name: long body: not in the response");
    }

    # the log says what happened, without the value

    _check_log($t, $tok, $pass, 1);
}

# The pieces of a credential's base64 that only its own bits make, when
# it starts 0, 1 or 2 bytes past a multiple of 3 in a longer encoded text:
# every 16 characters in a row of them, in both alphabets.
sub inner_pieces {
    my ($secret) = @_;
    my %seen;

    for my $o (0 .. 2) {
        my $b = b64(("\0" x $o) . $secret);
        my $from = int((8 * $o + 5) / 6);
        my $to = int(8 * ($o + length $secret) / 6);
        my $pure = substr($b, $from, $to - $from);
        (my $url = $pure) =~ tr{+/}{-_};

        for my $s ($pure, $url) {
            $seen{substr($s, $_, 16)} = 1 for 0 .. length($s) - 16;
        }
    }

    return keys %seen;
}

# echo_blobs($t, $p, tok => T, cred => "user:password", forms => [[route,
# name, unit, secret], ...][, two_every => N]): the echo upstream answers
# unit (any bytes, ending ">>;") over and over: 40 times in a body held
# whole (the units' length odd, so a credential in them starts at every
# offset of a 32-byte block), 8 times in 7-byte pieces and, for every
# Nth form (default every one), in 2-byte pieces (a cut at every offset
# of a unit whose length neither divides: the 7-byte pieces alone cut
# each unit at every offset), and through 1 KB buffers in a body past
# the hold (airlock_scrub_hold 8k).  Each unit must come back with a
# "[REDACTED]" in it, and the response, with its line ends taken out,
# with none of the secret's inner_pieces().
sub echo_blobs {
    my ($t, $p, %a) = @_;
    my @forms = @{$a{forms}};
    my $two_every = $a{two_every} // 1;
    my ($tok, $cred) = @a{qw(tok cred)};
    (my $pass = $cred) =~ s/^[^:]*://;

    echo_policy($t, $p, $tok, $cred,
                'query: { allow: [f, size, chunked, piece, delay] }');

    # ?f=i: form i's unit, given as X-Echo-Pattern-B64 (a header cannot
    # carry a line end)
    my $map = '';
    for my $i (0 .. $#forms) {
        $map .= "        $i \"" . encode_base64($forms[$i][2], '') . "\";\n";
    }

    $t->write_file_expand('nginx.conf', $p->conf(http => <<"EOF",
    map \$arg_f \$echo_pattern {
        default "";
$map    }
EOF
        location => <<'EOF' . $SMALL_BUFFERS));
            proxy_set_header X-Echo-Pattern-B64 $echo_pattern;
            proxy_set_header X-Echo-Size $arg_size;
            proxy_set_header X-Echo-Chunked $arg_chunked;
            proxy_set_header X-Echo-Chunk-Size $arg_piece;
            proxy_set_header X-Echo-Delay-Ms $arg_delay;

            airlock_scrub_hold 8k;
EOF

    my $get = _run_echo($t, 30);

    my $check = sub {
        my ($name, $raw, $r, $n, $secret) = @_;
        my @units = split /(?<=>>;)/, $r->{body} // '';
        my $bad = grep { index($_, '[REDACTED]') < 0 } @units;

        ok(@units == $n && $bad == 0, "$name: every unit redacted")
            or diag(substr($r->{body} // '', 0, 300));

        (my $flat = $raw) =~ s/\r?\n//g;
        my @left = grep { index($flat, $_) >= 0 } inner_pieces($secret);
        ok(@left == 0, "$name: no piece of the secret's base64")
            or diag("left: $left[0]");
    };

    for my $i (0 .. $#forms) {
        my ($route, $name, $unit, $secret) = @{$forms[$i]};
        my $long = int(12000 / length $unit) + 1;
        my ($raw, $r);

        ($raw, $r) = $get->($route, f => $i, size => 40 * length $unit);
        ok($r->{status} == 200
           && $r->{headers}{'content-length'} == length $r->{body},
           "$name: held: 200, exact Content-Length");
        $check->("$name: held", $raw, $r, 40, $secret);

        for my $piece ($i % $two_every ? (7) : (2, 7)) {
            ($raw, $r) = $get->($route, f => $i, size => 8 * length $unit,
                                chunked => 1, piece => $piece, delay => 1);
            $check->("$name: $piece-byte pieces", $raw, $r, 8, $secret);
        }

        ($raw, $r) = $get->($route, f => $i, size => $long * length $unit);
        ok(!defined $r->{headers}{'content-length'},
           "$name: long body streamed");
        $check->("$name: long body", $raw, $r, $long, $secret);
    }

    _check_log($t, $tok, $pass, 0);
}

# echo_units($t, $p, tok => T, cred => "user:password", forms => [[route,
# name, form, option => value, ...], ...]): with ?f=I&n=N the echo
# upstream answers "<<form I>>;" N times, the bodies given in the
# configuration as X-Echo-Body-B64 (a header cannot carry line breaks
# or NULs).  Each form must come back as "<<[REDACTED]>>;" (with the
# form's option kept => BYTES: "<<BYTES[REDACTED]>>;"), and nowhere in
# the response, in a body held whole (about 500 bytes, under
# airlock_scrub_hold 512, with its exact Content-Length), streamed 4
# times in 2- and 5-byte pieces, and in a body longer than the hold
# through 1 KB proxy buffers; with the form's option header => 1, also
# in a response header "X-Leak: <<form>>;" (?hdr=I).
sub echo_units {
    my ($t, $p, %a) = @_;
    my @forms = @{$a{forms}};
    my ($tok, $cred) = @a{qw(tok cred)};
    (my $pass = $cred) =~ s/^[^:]*://;
    my (%held, %long, %opt);
    my $map = '';
    my $hdr = '';

    for my $i (0 .. $#forms) {
        my (undef, undef, $form, %o) = @{$forms[$i]};
        my $unit = "<<$form>>;";

        $opt{$i} = \%o;
        $held{$i} = int(500 / length $unit);
        $long{$i} = int(2500 / length $unit) + 1;

        for my $n (4, $held{$i}, $long{$i}) {
            $map .= "        \"$i:$n\" \"" . encode_base64($unit x $n, '')
                  . "\";\n";
        }

        $hdr .= "        $i \"X-Leak: $unit\";\n" if $o{header};
    }

    echo_policy($t, $p, $tok, $cred,
                'query: { allow: [f, n, chunked, piece'
                . ($hdr ne '' ? ', hdr] }' : '] }'));

    my ($http, $leak) = ('', '');
    if ($hdr ne '') {
        $http = <<"EOF";

    map \$arg_hdr \$echo_leak {
        default "";
$hdr    }
EOF
        $leak = "            proxy_set_header X-Echo-Header \$echo_leak;\n";
    }

    $t->write_file_expand('nginx.conf', $p->conf(http => <<"EOF" . $http,
    map "\$arg_f:\$arg_n" \$echo_body {
        default "";
$map    }
EOF
        location => <<"EOF" . $SMALL_BUFFERS));
            proxy_set_header X-Echo-Body-B64 \$echo_body;
$leak            proxy_set_header X-Echo-Chunked \$arg_chunked;
            proxy_set_header X-Echo-Chunk-Size \$arg_piece;

            airlock_scrub_hold 512;
EOF

    my $get = _run_echo($t, 20);

    for my $i (0 .. $#forms) {
        my ($route, $name, $form) = @{$forms[$i]};
        my $want = '<<' . ($opt{$i}{kept} // '') . '[REDACTED]>>;';
        my ($raw, $r);

        if ($opt{$i}{header}) {
            ($raw, $r) = $get->($route, f => $i, n => 4, hdr => $i);
            is($r->{headers}{'x-leak'}, $want, "$name: header");
            ok(index($raw, $form) < 0, "$name: header: not in the response");
        }

        ($raw, $r) = $get->($route, f => $i, n => $held{$i});
        is($r->{status}, 200, "$name: held: 200");
        ok($r->{body} eq $want x $held{$i}
           && $r->{headers}{'content-length'} == length $r->{body},
           "$name: held: every occurrence redacted, exact Content-Length")
            or diag(substr($r->{body}, 0, 200));
        ok(index($raw, $form) < 0, "$name: held: not in the response");

        for my $piece (2, 5) {
            ($raw, $r) = $get->($route, f => $i, n => 4, chunked => 1,
                                piece => $piece);
            ok($r->{body} eq $want x 4,
               "$name: streamed in $piece-byte pieces")
                or diag($r->{body});
            ok(index($raw, $form) < 0,
               "$name: $piece-byte pieces: not in the response");
        }

        ($raw, $r) = $get->($route, f => $i, n => $long{$i});
        ok(!defined $r->{headers}{'content-length'}
           && $r->{body} eq $want x $long{$i},
           "$name: long body streamed, every occurrence redacted");
        ok(index($raw, $form) < 0, "$name: long body: not in the response");
    }

    _check_log($t, $tok, $pass, 1);
}

1;
