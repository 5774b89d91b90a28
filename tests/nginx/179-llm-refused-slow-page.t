#!/usr/bin/perl

# A 2xx answer refused from a body filter (a body that is not text,
# 169-llm-answer-not-text.t; or one marked with a Content-Encoding the
# scrubber cannot read, its header held until the body's first bytes)
# gets the client nginx's 502 page in its place.  When that page cannot
# all be sent at once (here limit_rate; a slow client or an HTTP/2
# window does the same), nginx went on with the upstream, and the
# refused body followed the page on the connection, unsearched: a client
# reading past the page's Content-Length had the compressed key.  Now
# what comes of the refused answer after its page is dropped.  An answer
# that passes is not slowed or cut.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Compress::Zlib qw(compress);
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# the 502 page and its header, about 330 bytes, take three seconds
$l->setup(tight_tpm => 1000000, location => 'limit_rate 100;');
$t->run;
plan tests => 10;

my $tok = $l->token('tight');
my $key = $Airlock::LLM::OPENAI_KEY;

sub call {
    my ($script) = @_;
    $l->script($script);
    my $r = $l->chat(token => $tok, prompt => 'x' x 400);
    $l->script();
    return $r;
}

# what follows the header: exactly the body its Content-Length announces
sub exact {
    my ($r) = @_;
    my ($head, $body) = split /\r\n\r\n/, $r->{raw} // '', 2;
    my ($len) = ($head // '') =~ /^Content-Length: (\d+)/mi;
    return defined $len && length($body // '') == $len;
}

sub answer {
    my ($body, $more) = @_;
    return { raw => ["HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     . ($more // '') . "Content-Length: " . length($body)
                     . "\r\nConnection: close\r\n\r\n", $body] };
}

my $json = encode_json({ id => 'chatcmpl-1', object => 'chat.completion',
                         model => 'gpt-4o-mini', echo => "Bearer $key" });
my $z = compress($json);

my $r = call(answer($z));
is($r->{status}, 502, 'not text, the page slow: 502');
ok(exact($r), 'not text: nothing after the page') or diag(explain $r->{raw});
unlike($r->{raw}, qr/\x78\x9c/, 'not text: none of the zlib body');

# text, so the gateway's check passes it on, and the scrubber's refuses
$r = call(answer($json, "Content-Encoding: br\r\n"));
is($r->{status}, 502, 'marked br, the page slow: 502');
ok(exact($r), 'marked br: nothing after the page')
    or diag(explain $r->{raw});
unlike($r->{raw}, qr/chatcmpl-1/, 'marked br: none of its body');

my $plain = encode_json({ id => 'chatcmpl-2', object => 'chat.completion',
                          model => 'gpt-4o-mini' });
$r = call(answer($plain));
ok($r->{status} == 200 && $r->{body} eq $plain && exact($r),
   'an answer that passes: 200, whole');

like($t->read_file('error.log'),
     qr/answered 200 with a body that is not text/,
     'error log: the not-text refusal');
like($t->read_file('error.log'), qr/upstream sent "Content-Encoding: br"/,
     'error log: the encoded refusal');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
