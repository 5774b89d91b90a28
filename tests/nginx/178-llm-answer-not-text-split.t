#!/usr/bin/perl

# ngx_http_airlock_llm_module: the first bytes of a 2xx answer's body are
# read for text (169-llm-answer-not-text.t) whatever buffers they come
# in.  A provider that sends its first byte alone ("x", the first byte of
# zlib's 78 9c, or "(", zstd's 28) and the rest of the compressed body
# after a pause had only that byte read: it is text, and the compressed
# body went on, the key in it unsearched.  The first bytes are now held
# until there are AL_LLM_TEXT_PEEK (16) of them, or the body ends, and
# read together.  Answers whose first event or JSON comes a byte at a
# time, or that are shorter than 16 bytes, still pass, whole.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Compress::Zlib qw(compress);
use IO::Uncompress::AnyInflate qw(anyinflate);
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
$l->setup(tight_tpm => 1000000);
$t->run;
plan tests => 15;

my $tok = $l->token('tight');
my $true = JSON::PP::true;
my $key = $Airlock::LLM::OPENAI_KEY;
my @all;
my $r;

sub call {
    my ($script, %o) = @_;
    $l->script($script);
    my $r = $l->chat(token => $tok, prompt => 'x' x 400,
                     fields => $o{fields} // {});
    $l->script();
    push @all, $r;
    return $r;
}

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

# the header, then each piece of the body a write of its own, 20 ms apart
sub answer {
    my ($type, $pieces, %o) = @_;
    my $body = join '', @$pieces;
    my $framing = $o{chunked}
        ? "Transfer-Encoding: chunked\r\n"
        : "Content-Length: " . length($body) . "\r\n";
    my @w = $o{chunked} ? map { chunk($_) } @$pieces : @$pieces;
    $w[-1] .= "0\r\n\r\n" if $o{chunked};
    return { raw => ["HTTP/1.1 200 OK\r\nContent-Type: $type\r\n"
                     . $framing . "Connection: close\r\n\r\n", @w] };
}

my $json = encode_json({ id => 'chatcmpl-1', object => 'chat.completion',
                         model => 'gpt-4o-mini', echo => "Bearer $key",
                         choices => [{ index => 0, finish_reason => 'stop',
                                       message => { role => 'assistant',
                                                    content => 'Hi' } }] });
my $plain = encode_json({ id => 'chatcmpl-2', object => 'chat.completion',
                          model => 'gpt-4o-mini',
                          choices => [{ index => 0, finish_reason => 'stop',
                                        message => { role => 'assistant',
                                                     content => 'Hi' } }] });
my $z = compress($json);
my $sz = compress("data: " . $json . "\n\ndata: [DONE]\n\n");

# ---- refused ---------------------------------------------------------------

for my $c (['JSON, zlib, its first byte alone',
            answer('application/json', [substr($z, 0, 1), substr($z, 1)])],
           ['JSON, zlib, two bytes then the rest',
            answer('application/json',
                   [substr($z, 0, 1), substr($z, 1, 1), substr($z, 2)])],
           ['stream, zlib, its first byte alone',
            answer('text/event-stream', [substr($sz, 0, 1), substr($sz, 1)],
                   chunked => 1), fields => { stream => $true }],
           ['JSON, zstd, its first byte alone',
            answer('application/json', ["\x28", "\xb5\x2f\xfd\x04\x58\x00"
                                                . "Bearer $key"])])
{
    my ($name, $script, %o) = @$c;

    $r = call($script, %o);
    is($r->{status}, 502, "$name: refused, 502");
    is(Airlock::LLM::leaks(unpacked($r)), 0, "$name: no key, unpacked");
}

# ---- passed ----------------------------------------------------------------

$r = call(answer('application/json',
                 [(map { substr($plain, $_, 1) } 0 .. 19),
                  substr($plain, 20)]));
ok($r->{status} == 200 && $r->{body} eq $plain,
   'JSON whose first bytes come one at a time: 200, whole');

$r = call(answer('text/event-stream',
                 ['d', 'a', 'ta: {"id":1}', "\n\n", "data: [DONE]\n\n"],
                 chunked => 1), fields => { stream => $true });
ok($r->{status} == 200 && $r->{body} =~ /^data: \{"id":1\}\n\n.*\[DONE\]/s,
   'a stream whose first bytes come one at a time: 200, whole');

$r = call(answer('application/json', ['{', '}']));
ok($r->{status} == 200 && $r->{body} eq '{}',
   'a body shorter than the peek, in two pieces: 200, whole');

$r = call(answer('application/json', ["\x1f", "\x8b"]));
is($r->{status}, 502, 'two bytes of gzip, in two pieces: 502');

# nothing of the refused answers' keys reached a client
is(Airlock::LLM::leaks(join '', map { unpacked($_) } @all), 0,
   'no answer carried the key');

like($t->read_file('error.log'),
     qr/answered 200 with a body that is not text \(78 9c/,
     'error log: the refusal names the first two bytes, read together');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
