#!/usr/bin/perl

# ngx_http_airlock_llm_module: after the key scrubber refuses an encoded
# provider answer with 502, the client's connection either answers its next
# request or is closed; a request sent on it is never left without an
# answer.  The provider's answers pass through a plain nginx server that
# marks some of them "Content-Encoding: gzip".

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(http => <<'EOF');
    server {
        listen 127.0.0.1:%%PORT_8083%%;

        location / {
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
        }

        location /v1/chat/ {
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
            add_header Content-Encoding gzip;
        }
    }
EOF

# the gateway's provider is the marking server
my $policy = $t->read_file('policy.yaml');
my ($from, $to) = map { '127.0.0.1:' . $t->port($_) } 8081, 8083;
$policy =~ s/\Q$from\E/$to/g;
$t->write_file('policy.yaml', $policy);

$t->run;

plan tests => 9;

my $agent = $l->token('agent');

# Two requests on one connection.  Returns the first response, and the
# second one; when the first answer says "Connection: close", "closed" if
# the connection is then closed (the second request is not sent).
sub two {
    my ($first, $second) = @_;
    my $s = http($first, start => 1) or return;
    my $r1 = http(undef, socket => $s, one => 1, timeout => 10);
    my $r2;

    if ((parse_response($r1)->{headers}{connection} // '') =~ /close/i) {
        my $buf = '';
        $r2 = IO::Select->new($s)->can_read(5)
              && defined sysread($s, $buf, 1) && !length $buf
              ? 'closed' : 'not closed';

    } else {
        $r2 = http($second, socket => $s, timeout => 10);
    }

    close $s;
    return ($r1, $r2);
}

my $body = '{"model":"gpt-4o-mini","messages":[{"role":"user",'
         . '"content":"Hi"}]}';
my $chat = "POST /v1/proxy/openai/chat/completions HTTP/1.1\r\n"
         . "Host: localhost\r\nAuthorization: Bearer $agent\r\n"
         . "Content-Type: application/json\r\n"
         . "Content-Length: " . length($body) . "\r\n\r\n$body";
my $models = "GET /v1/proxy/openai/models HTTP/1.1\r\nHost: localhost\r\n"
           . "Authorization: Bearer $agent\r\nConnection: close\r\n\r\n";
(my $models_ka = $models) =~ s/Connection: close\r\n//;

my ($r1, $r2) = two($chat, $models);
is(parse_response($r1)->{status}, 502, 'encoded answer: 502');
is(Airlock::LLM::leaks($r1), 0, 'encoded answer: no key');
ok($r2 eq 'closed' || (parse_response($r2)->{status} // 0) == 200,
   'encoded answer: the next request is answered, or the connection closed');

# the same with the stream flag: the SSE answer is refused as well

(my $sbody = $body) =~ s/}$/,"stream":true}/;
(my $stream = $chat) =~ s/\Q$body\E$/$sbody/;
$stream =~ s/Content-Length: \d+/'Content-Length: ' . length $sbody/e;

($r1, $r2) = two($stream, $models);
is(parse_response($r1)->{status}, 502, 'encoded stream: 502');
ok($r2 eq 'closed' || (parse_response($r2)->{status} // 0) == 200,
   'encoded stream: the next request is answered, or the connection closed');

# an ordinary answer keeps the connection usable

($r1, $r2) = two($models_ka, $models);
is(parse_response($r1)->{status}, 200, 'models: 200');
is(parse_response($r2)->{status}, 200, 'models: the next request too');

my $log = $t->read_file('access.log') // '';
unlike($log, qr/ 499 /, 'no request was lost (499)');

is($t->error_log_check, '', 'no alerts');
