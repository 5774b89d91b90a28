package Airlock::Proxy;

# Helpers for the ngx_http_airlock_module tests (tests/nginx/1*.t), on top
# of Airlock::Test: a keyring and sealed secrets made with airlockctl, a
# policy file in the test prefix, the usual airlock nginx.conf, and checks
# on the deny log and the echo upstream.
#
#   my $t = Airlock::Test->new;
#   my $p = Airlock::Proxy->new($t);     # skipped (failed under CI) without
#                                        # module/airlockctl
#   $p->keygen;
#   my $sealed = $p->seal('s3cret');
#   $t->write_file_expand('policy.yaml', ...);
#   $t->write_file_expand('nginx.conf', $p->conf(locations => '...'));

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use Exporter qw(import);
use JSON::PP;
use Test::More ();

use Airlock::Prereq ();

our @EXPORT = qw(json_body deny_json post_request);


sub new {
    my ($class, $t, %opt) = @_;
    my $ctl = "$t->{build}/airlockctl";

    $t->require_module;

    Airlock::Prereq::absent("airlockctl not built: $ctl")
        unless -x $ctl;

    return bless { t => $t, ctl => $ctl }, $class;
}


sub ctl { $_[0]{ctl} }


# policy.yaml (or file => F in the test dir) with one route, GET /ok
# (route => NAME: a route NAME, GET /NAME) to the echo server on
# %%PORT_8081%%, for one client: token => T (client "a", a bearer token)
# or the loopback address (client "local"); or for several, tokens => {
# NAME => T, ... } (a client of each name, a bearer token each); deny
# alerts past threshold => N (1000) denials in window => W (60s);
# quarantine => "threshold: N, window: W, for: D" adds alerts.quarantine.
sub echo_policy {
    my ($self, %o) = @_;
    my %tokens = $o{tokens} ? %{$o{tokens}}
               : defined $o{token} ? (a => $o{token}) : ();
    my @names = sort keys %tokens;
    my $clients = join "\n", map {
        "  $_: { token_sha256: \"" . $self->token_sha256($tokens{$_}) . '" }'
    } @names;
    my $threshold = $o{threshold} // 1000;
    my $window = $o{window} // '60s';
    my $route = $o{route} // 'ok';
    my $quarantine = defined $o{quarantine}
        ? "\n  quarantine: { $o{quarantine} }" : '';

    unless (@names) {
        @names = ('local');
        $clients = '  local: { cidr: [127.0.0.1/32] }';
    }

    my $names = join ', ', @names;

    $self->{t}->write_file_expand($o{file} // 'policy.yaml', <<"EOF");
version: 1
clients:
$clients
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: $route
    clients: [$names]
    match: { method: GET, path: /$route }
    upstream: echo
    to: /$route
alerts:
  deny: { threshold: $threshold, window: $window }$quarantine
EOF
}


# conf()'s http => text for the zone tests: the zone "airlock" of $size,
# the journal in journal.log, and a server on %%PORT_8082%% with
# airlock_status at /status.
sub zone_status_http {
    my ($self, $size) = @_;
    return <<"EOF";
    airlock_zone airlock $size;
    airlock_journal %%TESTDIR%%/journal.log;

    server {
        listen 127.0.0.1:%%PORT_8082%%;
        location = /status {
            airlock_status;
        }
    }
EOF
}


# keygen NAME: NAME and NAME.pub in the prefix
sub keygen {
    my ($self, $name) = @_;
    my $d = $self->{t}->testdir;
    $name //= 'airlock.key';

    unlink "$d/$name", "$d/$name.pub";
    my $out = qx{$self->{ctl} keygen $d/$name 2>&1};
    die "airlockctl keygen: $out" if $?;

    $self->{key} = "$d/$name";
    return "$d/$name";
}


sub seal {
    my ($self, $secret, $pub) = @_;
    $pub //= "$self->{key}.pub";

    my $in = $self->{t}->write_file('seal.in', $secret);
    my $out = qx{$self->{ctl} seal --pub $pub < $in 2>&1};
    die "airlockctl seal: $out" if $?;
    unlink $in;

    chomp $out;
    return $out;
}


sub token_sha256 {
    my ($self, $token) = @_;
    return sha256_hex($token);
}


# The http{} of a typical airlock proxy.  Options: http (extra http-level
# lines), server (extra server lines), location (extra lines in
# "location /"), locations (extra location blocks), listen (extra listen
# lines), policy (file name), key (0 to leave out airlock_keyring).
sub conf {
    my ($self, %o) = @_;
    my $policy = $o{policy} // 'policy.yaml';
    my $key = exists $o{key} ? $o{key} : $self->{key};
    my $keyline = $key ? "airlock_keyring $key;" : '';
    my $http = $o{http} // '';
    my $server = $o{server} // '';
    my $loc = $o{location} // '';
    my $locs = $o{locations} // '';
    my $listen = $o{listen} // '';

    return <<"EOF";
%%TEST_GLOBALS%%

http {
    %%TEST_GLOBALS_HTTP%%

    log_format airlock '\$airlock_client \$airlock_route \$airlock_reason '
                       '\$airlock_request_id \$airlock_scrubbed \$status';

    airlock_policy $policy;
    $keyline
    airlock_deny_log %%TESTDIR%%/deny.log;

    $http

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        $listen
        server_name localhost;

        access_log %%TESTDIR%%/airlock.log airlock;

        $server

        location / {
            airlock on;

            %%AIRLOCK_LOCATION%%

            proxy_connect_timeout 2s;
            proxy_read_timeout 5s;

            error_page 502 504 \@airlock_error;

            $loc
        }

        location \@airlock_error {
            airlock_error_json;
        }

        $locs
    }
}
EOF
}


# Writes nginx.conf and runs "nginx -t" on it: returns its exit status
# and output (Airlock::Test's reload_test()).
sub conf_test {
    my ($self, $conf) = @_;
    $self->{t}->write_file_expand('nginx.conf', $conf);
    return $self->{t}->reload_test;
}


# conf(%o) with one more location, /x/, of "airlock on" and $body.
sub x_location_conf {
    my ($self, $body, %o) = @_;
    return $self->conf(%o, locations => <<"EOF");
        location /x/ {
            airlock on;   # its body the caller's: what nginx -t refuses
$body
        }
EOF
}

# The deny log, one decoded JSON object per line.
sub deny_log {
    my ($self) = @_;
    return Airlock::Test::json_lines($self->{t}->read_file('deny.log'));
}


sub deny_count {
    my ($self) = @_;
    my @l = $self->deny_log;
    return scalar @l;
}

# How many deny log lines have this reason and client.
sub denials {
    my ($self, $reason, $client) = @_;
    return scalar grep {
        $_->{reason} eq $reason && $_->{client} eq $client
    } $self->deny_log;
}


sub echo_count {
    my ($self, $n) = @_;
    my @r = $self->{t}->echo_requests($n // 8081);
    return scalar @r;
}


# The last whole line of a file in the test's directory that matches
# $re, as written (not decoded); '' when none does.
sub raw_line {
    my ($self, $file, $re) = @_;
    my $text = $self->{t}->read_file($file) // '';
    $text =~ s/[^\n]*\z//;
    my @l = grep { /$re/ } split /\n/, $text;
    return $l[-1] // '';
}

# The decoded JSON body of a raw response, or undef.
sub json_body {
    my ($raw) = @_;
    return undef unless defined $raw;
    my $r = Airlock::Test::parse_response($raw);
    return undef unless defined $r->{body};
    return eval { JSON::PP->new->utf8->decode($r->{body}) };
}


# [status, reason] of a deny answer (or [status, undef])
sub deny_json {
    my ($raw) = @_;
    my $r = Airlock::Test::parse_response($raw);
    my $j = json_body($raw);
    return [ $r->{status}, $j ? $j->{reason} : undef ];
}


# A raw POST request for http(): the body with its Content-Length, a
# Content-Type unless $ct is undef, and any further header lines in
# $extra ("Name: value\r\n" each).
sub post_request {
    my ($target, $ct, $body, $extra) = @_;
    return "POST $target HTTP/1.0\r\n"
           . (defined $ct ? "Content-Type: $ct\r\n" : '')
           . ($extra // '')
           . "Content-Length: " . length($body) . "\r\n\r\n$body";
}


# Posts each case [name, target, Content-Type, body] and checks that it
# is answered 403 with a reason matching $reason (default: "body") and
# not forwarded to the echo upstream on 8081: two tests a case.
sub posts_refused {
    my ($self, $cases, $reason) = @_;
    $reason //= qr/^body$/;

    for my $c (@$cases) {
        my ($name, $target, $ct, $body) = @$c;
        my $before = $self->echo_count;
        my $raw = Airlock::Test::http(post_request($target, $ct, $body));
        my $r = Airlock::Test::parse_response($raw);
        my $j = json_body($raw);

        Test::More::ok($r->{status} == 403 && $j && $j->{reason} =~ $reason,
                       "refused: $name")
            or Test::More::diag("status $r->{status}");
        Test::More::is($self->echo_count, $before,
                       "and not forwarded: $name");
    }
}


# Posts each case [name, target, Content-Type, body] and checks that it
# is answered 200: one test a case.
sub posts_passed {
    my ($self, $cases) = @_;

    for my $c (@$cases) {
        my ($name, $target, $ct, $body) = @$c;
        my $raw = Airlock::Test::http(post_request($target, $ct, $body));
        my $j = json_body($raw);

        Test::More::is(Airlock::Test::parse_response($raw)->{status}, 200,
                       "passes: $name")
            or Test::More::diag($j ? $j->{detail} : $raw);
    }
}


# One test: the raw request is answered 403 with a reason matching
# $reason (default: "body") and not forwarded to the echo upstream on
# 8081.
sub is_refused {
    my ($self, $request, $name, $reason) = @_;
    my $before = $self->echo_count;
    my $raw = Airlock::Test::http($request);
    my $r = Airlock::Test::parse_response($raw);
    my $j = json_body($raw);

    $reason //= qr/^body$/;

    return Test::More::ok($r->{status} == 403 && $j
                          && $j->{reason} =~ $reason
                          && $self->echo_count == $before, $name)
        || Test::More::diag("status $r->{status}, upstream requests "
                            . ($self->echo_count - $before));
}


# One test: the raw request is answered 200.
sub is_passed {
    my ($self, $request, $name) = @_;
    return Test::More::is(
        Airlock::Test::parse_response(Airlock::Test::http($request))
            ->{status}, 200, $name);
}

1;
