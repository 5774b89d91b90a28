#!/usr/bin/perl

# An answer refused from ngx_http_airlock_module's header filter as it
# comes straight from nginx's upstream (one marked with a Content-Encoding
# the scrubber cannot read, whose header no filter holds: here an error
# answer) gets the client nginx's 502 page in its place.  When that page
# could not all be sent at once (here limit_rate; a slow client or an
# HTTP/2 window does the same), nginx went on with the upstream, found
# the proxy's context cleared by the page, and closed the connection
# with the page half sent.  Now the page is sent whole, and nothing of
# the refused answer follows it (179-llm-refused-slow-page.t: the same
# for a 2xx answer, whose header the gateway holds).  An error answer
# that passes is not cut.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# the 502 page and its header, about 330 bytes, take three seconds
$l->setup(tight_tpm => 1000000, location => 'limit_rate 100;');
$t->run;
plan tests => 11;

my $tok = $l->token('tight');
my $true = JSON::PP::true;

sub call {
    my ($script, %o) = @_;
    $l->script($script);
    my $r = $l->chat(token => $tok, prompt => 'x' x 400, %o);
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

my $err = encode_json({ error => { message => 'fixture-error-1',
                                   type => 'invalid_request_error' } });

sub answer {
    my ($status, $more, $body) = @_;
    return { raw => ["HTTP/1.1 $status\r\nContent-Type: application/json\r\n"
                     . $more . "Content-Length: " . length($body)
                     . "\r\nConnection: close\r\n\r\n", $body] };
}

my $r = call(answer('400 Bad Request', "Content-Encoding: br\r\n", $err));
is($r->{status}, 502, '400 marked br, the page slow: 502');
ok(exact($r), '400 marked br: the page whole, nothing after it')
    or diag(explain $r->{raw});
unlike($r->{raw}, qr/fixture-error/, '400 marked br: none of its body');

my $chunked = "HTTP/1.1 429 Too Many Requests\r\n"
              . "Content-Type: application/json\r\nContent-Encoding: gzip\r\n"
              . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
$r = call({ raw => [$chunked, sprintf("%x\r\n%s\r\n0\r\n\r\n", length $err,
                                      $err)] },
          fields => { stream => $true });
is($r->{status}, 502, 'a stream\'s 429 marked gzip, the page slow: 502');
ok(exact($r), '429 marked gzip: the page whole, nothing after it')
    or diag(explain $r->{raw});
unlike($r->{raw}, qr/fixture-error/, '429 marked gzip: none of its body');

# a 2xx answer, its header held: refused from the body filter, as before
my $json = encode_json({ id => 'chatcmpl-1', object => 'chat.completion',
                         model => 'gpt-4o-mini' });
$r = call(answer('200 OK', "Content-Encoding: br\r\n", $json));
ok($r->{status} == 502 && exact($r) && $r->{raw} !~ /chatcmpl-1/,
   '200 marked br, the page slow: 502, whole, nothing after it');

$r = call(answer('400 Bad Request', '', $err));
ok($r->{status} == 400 && $r->{body} eq $err && exact($r),
   'a 400 that passes: whole');

my $log = $t->read_file('error.log');
like($log, qr/upstream sent "Content-Encoding: br"/,
     'error log: the br refusal');
like($log, qr/upstream sent "Content-Encoding: gzip"/,
     'error log: the gzip refusal');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
