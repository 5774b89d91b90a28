#!/usr/bin/perl

# ngx_http_airlock_llm_module: a 2xx answer whose body is compressed but
# comes without a Content-Encoding saying so (gzip 1f 8b, zlib 78 9c, zstd
# 28 b5 2f fd, brotli, which has no magic number) is refused with 502, as
# one marked encoded is, JSON answers and streams alike, held whole by the
# scrubber or streamed: the key scrubber cannot search it, and a client
# unpacks it all the same.  Before, such an answer passed, the key in it
# unseen.  It is charged its reservation, as the refused answers of
# 162-llm-charge-refused.t are.  Answers that begin as JSON or an event
# stream do (a BOM, blanks, a comment, a stream split into one-byte
# chunks) still pass.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Compress::Gzip qw(gzip $GzipError);
use IO::Uncompress::AnyInflate qw(anyinflate);
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
$l->setup(tight_tpm => 1000000);
$t->run;
plan tests => 35;

my $tok = $l->token('tight');           # max_tokens 20
my $true = JSON::PP::true;
my $key = $Airlock::LLM::OPENAI_KEY;
my $n = 0;
my @all;
my ($r, $u);

# the prompt estimate of this body: four bytes a token
my $prompt = 'x' x 400;

sub call {
    my ($script, %o) = @_;
    my ($r, $u) = $l->scripted_call(++$n, $script, token => $tok,
                                    prompt => $prompt, %o);
    push @all, $r;
    return ($r, $u);
}

# charged 100 tokens in (the prompt estimate) and 20 out (max_tokens)
sub reserved { Airlock::LLM::charges_reservation($_[0], 100, 20) }

# the answer with its body as a client would unpack it, whatever it is
sub unpacked {
    my ($r) = @_;
    my $body = $r->{body} // '';
    my $plain = '';

    anyinflate(\$body => \$plain, Transparent => 1) or $plain = '';

    return $r->{raw} . $plain;
}

sub chunk {
    my ($data) = @_;
    return sprintf("%x\r\n%s\r\n", length $data, $data);
}

sub answer {
    my ($type, $body, %o) = @_;
    my $framing = $o{chunked}
        ? "Transfer-Encoding: chunked\r\n"
        : "Content-Length: " . length($body) . "\r\n";
    $body = chunk($body) . "0\r\n\r\n" if $o{chunked};
    return { raw => ["HTTP/1.1 200 OK\r\nContent-Type: $type\r\n"
                     . $framing . "Connection: close\r\n\r\n", $body] };
}

my $json = encode_json({ id => 'chatcmpl-1', object => 'chat.completion',
                         model => 'gpt-4o-mini', echo => "Bearer $key",
                         choices => [{ index => 0, finish_reason => 'stop',
                                       message => { role => 'assistant',
                                                    content => 'Hi' } }] });
gzip(\$json => \my $gz) or die $GzipError;

# a long body, past the scrubber's hold (airlock_scrub_hold, 64 KB)
my $long = encode_json({ id => 'chatcmpl-1', echo => "Bearer $key",
                         pad => join '', map { sprintf '%08x', $_ * 2654435761
                                                         % 4294967296 }
                                         1 .. 20000 });
gzip(\$long => \my $longgz) or die $GzipError;

# ---- refused ---------------------------------------------------------------

for my $c (['JSON, gzip', {}, { echo_auth => 1, gzip => 1 }],
           ['JSON, zlib', {}, { echo_auth => 1, zlib => 1 }],
           ['anthropic JSON, gzip', { anthropic => 1 },
            { echo_auth => 1, gzip => 1 }],
           ['chat stream, gzip', { fields => { stream => $true } },
            { gzip => 1, pieces => ["you sent Bearer $key"] }],
           ['anthropic stream, zlib',
            { anthropic => 1, fields => { stream => $true } },
            { zlib => 1, pieces => ["you sent $key"] }],
           ['chunked JSON, gzip', {},
            answer('application/json', $gz, chunked => 1)],
           ['JSON past the hold, gzip', {},
            answer('application/json', $longgz)],
           ['JSON, zstd', {},
            answer('application/json', "\x28\xb5\x2f\xfd\x04\x58\x00"
                                       . "Bearer $key")],
           ['stream, brotli', { fields => { stream => $true } },
            answer('text/event-stream', "\x1b\x5c\x02\x00\x04"
                                        . "data: Bearer $key\n\n",
                   chunked => 1)])
{
    my ($name, $o, $script) = @$c;

    ($r, $u) = call($script, %$o);
    is($r->{status}, 502, "$name: refused, 502");
    is(Airlock::LLM::leaks(unpacked($r)), 0, "$name: no key, unpacked");
    ok(reserved($u), "$name: charged its reservation") or diag(explain $u);
}

# ---- passed ----------------------------------------------------------------

($r, $u) = call({});
is($r->{status}, 200, 'a plain JSON answer: 200');

($r, $u) = call({}, fields => { stream => $true });
ok($r->{status} == 200 && $r->{body} =~ /\[DONE\]/,
   'a plain stream: 200, whole');

($r, $u) = call({ split => 1, split_delay_ms => 5, pieces => ['Hi'] },
                fields => { stream => $true });
ok($r->{status} == 200 && $r->{body} =~ /\[DONE\]/,
   'a stream in one-byte chunks: 200, whole');

($r, $u) = call(answer('application/json', "\xef\xbb\xbf\r\n  {\n  "
                                            . substr($json, 1)));
is($r->{status}, 200, 'JSON with a BOM and blanks: 200');

($r, $u) = call(answer('text/event-stream', ": keep-alive\n\nevent: x\n"
                                             . "data: {}\n\n",
                       chunked => 1), fields => { stream => $true });
is($r->{status}, 200, 'a stream that begins with a comment: 200');

# nothing of the refused answers' keys reached a client
is(Airlock::LLM::leaks(join '', map { unpacked($_) } @all), 0,
   'no answer carried the key');

like($t->read_file('error.log'),
     qr/answered 200 with a body that is not text/,
     'error log: the refusal is reported');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
