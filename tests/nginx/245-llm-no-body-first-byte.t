#!/usr/bin/perl

# ngx_http_airlock_llm_module: an endpoint that takes no body (GET
# models, models/{id}) reads a chunked body (an HTTP/2 body without a
# length) as a route that takes none does (tests/nginx/239, 243): an
# empty one (the last chunk alone, an empty DATA frame that ends the
# stream) is no body, and the call is answered; one with a byte is
# refused at its first byte, after at most one buffer of it
# ($request_length), with none written to a temporary file.  The
# gateway refused any chunked body on such an endpoint from its framing
# alone, an empty one too.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(time);
use Airlock::Test;
use Airlock::LLM;
use Airlock::H2 qw(h2_frame h2_hpack h2_preface h2_stream);

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $h2 = `'${\ $t->nginx_bin}' -V 2>&1` =~ /--with-http_v2_module/;

# client_max_body_size as an operator raises it for calls with a body
$l->setup(
    http => "log_format length '\$status \$request_length';\n"
        . ($h2 ? <<'EOF' : ''),
    server {
        listen 127.0.0.1:%%PORT_8083%% http2;
        server_name localhost;

        location /v1/proxy/openai/ {
            airlock_llm openai;

            %%AIRLOCK_LOCATION%%
        }
    }
EOF
    location => 'client_max_body_size 16m;'
        . ' client_body_timeout 5s;'
        . ' access_log %%TESTDIR%%/length.log length;');

$t->run;

plan tests => 21;

my $token = $l->token('worker');      # gpt-4o-mini only
my $agent = $l->token('agent');       # the one client of anthropic

# the request length of the n-th request logged, once it is logged
sub logged_length {
    my ($n) = @_;
    my $deadline = time + 10;
    my @l;

    while (time < $deadline) {
        @l = split /\n/, $t->read_file('length.log') // '';
        last if @l >= $n;
        select(undef, undef, undef, 0.05);
    }

    return @l >= $n && $l[$n - 1] =~ /^\d+ (\d+)$/ ? $1 : undef;
}

sub head {
    my ($path, %o) = @_;
    return "GET $path HTTP/1.1\r\nHost: localhost\r\n"
           . ($o{anthropic} ? "x-api-key: $agent\r\n"
                            : "Authorization: Bearer $token\r\n")
           . ($o{keep} ? '' : "Connection: close\r\n")
           . "Transfer-Encoding: chunked\r\n\r\n";
}

sub ids {
    my ($r) = @_;
    my $j = Airlock::LLM::jdecode($r->{body});
    return join ' ', map { $_->{id} } @{$j->{data} // []};
}

my $models = '/v1/proxy/openai/models';
my $n = scalar $l->provider_requests;
my $r;

# an empty body: no body

$r = parse_response($t->http(head($models) . "0\r\n\r\n"));
is($r->{status}, 200, 'chunked, empty: 200');
is(ids($r), 'gpt-4o-mini', 'chunked, empty: the client\'s models');

$r = parse_response($t->http([ head($models), "0\r\n\r\n" ]));
is($r->{status}, 200, 'chunked, empty, its end later: 200');

$r = parse_response($t->http(head("$models/gpt-4o-mini")
                             . "0\r\n\r\n"));
is($r->{status}, 200, 'models/{id}, chunked, empty: 200');

$r = parse_response($t->http(head('/v1/proxy/anthropic/v1/models',
                                  anthropic => 1) . "0\r\n\r\n"));
is($r->{status}, 200, 'anthropic, chunked, empty: 200');

# and the request after it on the connection is one of its own

my $raw = $t->http([ head($models, keep => 1),
                     "0\r\n\r\n" . head($models) . "0\r\n\r\n" ]);
my @status = ($raw // '') =~ m{^HTTP/1\.1 (\d{3})}mg;
is("@status", '200 200', 'chunked, empty later, then a request: two answers');

is(scalar $l->provider_requests, $n, 'the provider is not asked');

# a body with a byte is refused

$r = parse_response($t->http(head($models) . "2\r\n{}\r\n0\r\n\r\n"));
is($r->{status}, 400, 'chunked, a byte: 400');
like($r->{body} // '', qr/takes no request body/,
     'chunked, a byte: takes no request body');

# a chunk announced with bytes is refused before they come

$r = parse_response($t->http([ head($models) . "1000\r\n" ], timeout => 15));
is($r->{status}, 400, 'a chunk announced, no byte yet: 400');

# 2 MB in chunks of 4 KB: refused after at most a buffer of it (64 KB)

my $chunk = sprintf("%x\r\n", 4096) . ('x' x 4096) . "\r\n";
my $before = () = split /\n/, $t->read_file('length.log') // '';

$r = parse_response($t->http(head($models) . ($chunk x 512) . "0\r\n\r\n",
                             timeout => 30));
is($r->{status}, 400, 'chunked, 2 MB: 400');
like($r->{body} // '', qr/takes no request body/,
     'chunked, 2 MB: takes no request body');

my $len = logged_length($before + 1);
ok(defined $len && $len < 256 * 1024,
   'chunked, 2 MB: refused after at most a buffer of it')
    or diag('request length ' . ($len // 'not logged'));

# HTTP/2 (h2c, prior knowledge): HEADERS without END_STREAM, then DATA

# @data: what is written after the head, each a while after the one
# before, as DATA frames of stream 1 ([bytes, END_STREAM])
sub h2_get {
    my ($uri, @data) = @_;
    my $hpack = h2_hpack([ ':method', 'GET' ], [ ':scheme', 'http' ],
                         [ ':path', $uri ], [ ':authority', 'localhost' ],
                         [ 'authorization', "Bearer $token" ]);
    my @parts = (h2_preface() . h2_frame(1, 4, 1, $hpack));
    push @parts, join '', map { h2_frame(0, $_->[1] ? 1 : 0, 1, $_->[0]) }
                              @$_
        for @data;
    return h2_stream(\@parts, port => 8083, wait => 15);
}

SKIP: {
    if (!$h2) {
        fail('nginx without http_v2_module') if $ENV{CI};
        skip 'nginx without http_v2_module', $ENV{CI} ? 4 : 5;
    }

    $r = h2_get($models, [ [ '', 1 ] ]);
    is($r->{status}, 200, 'HTTP/2, an empty DATA frame later: 200');
    like($r->{data}, qr/gpt-4o-mini/, 'HTTP/2, an empty DATA frame: models');

    $r = h2_get($models, [ [ 'x' x 16384 ], [ 'x' x 16384 ] ]);
    is($r->{status}, 400, 'HTTP/2, DATA and more to come: 400');
    like($r->{data}, qr/"code":\s*"invalid_request_body"/,
         'HTTP/2, DATA and more to come: invalid_request_body');
    like($r->{data}, qr/takes no request body/,
         'HTTP/2, DATA and more to come: takes no request body');
}

unlike($t->read_file('error.log') // '',
       qr/a client request body is buffered to a temporary file/,
       'no request body temporary file');

opendir(my $dh, $t->testdir . '/client_body_temp') or die "opendir: $!";
my @left = grep { !/^\.\.?$/ } readdir $dh;
closedir $dh;
is_deeply(\@left, [], 'nothing in client_body_temp_path');

is($t->error_log_check, '', 'no alerts');
