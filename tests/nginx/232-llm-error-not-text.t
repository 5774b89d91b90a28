#!/usr/bin/perl

# ngx_http_airlock_llm_module: an error answer of the provider (4xx, 5xx)
# whose body is compressed without a Content-Encoding saying so (gzip 1f
# 8b, zlib 78 9c) is not passed on: the key scrubber cannot search it, a
# client unpacks it all the same, and an error is where a provider, or a
# proxy in front of it, echoes the request's headers, the key among them.
# Before, only 2xx answers were read for it (169-llm-answer-not-text.t),
# and such an error reached the client with the key in it.  The error's
# header is not held as a 2xx answer's is: its body's first bytes are
# read as they come, and the request ends there, the connection closed,
# nothing of the body sent.  Error answers that are text pass as before,
# scrubbed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Uncompress::AnyInflate qw(anyinflate);
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);
$l->setup;
$t->run;
plan tests => 11;

my $agent = $l->token('agent');
my $n = 0;

sub call {
    my ($script, %o) = @_;
    return $l->scripted_call(++$n, $script, token => $agent, %o);
}

# the answer with its body as a client would unpack it, whatever it is
sub unpacked {
    my ($r) = @_;
    my $body = $r->{body} // '';
    my $plain = '';

    anyinflate(\$body => \$plain, Transparent => 1) or $plain = '';

    return ($r->{raw} // '') . $plain;
}

my ($r, $u);

($r) = call({ status => 401, echo_auth => 1, gzip => 1 });
is(Airlock::LLM::leaks(unpacked($r)), 0,
   'a 401 gzipped with no header: no key, unpacked');
isnt($r->{status} // 0, 401, '... its answer not passed on');

($r) = call({ status => 500, echo_auth => 1, echo_b64 => 1, zlib => 1 });
is(Airlock::LLM::leaks(unpacked($r)), 0,
   'a 500 in zlib with no header: no key, unpacked');

($r) = call({ status => 529, echo_auth => 1, gzip => 1 }, anthropic => 1);
is(Airlock::LLM::leaks(unpacked($r)), 0,
   'anthropic: a 529 gzipped with no header: no key, unpacked');

my $log = $t->read_file($t->testdir . '/error.log');
is(scalar(() = $log =~ /answered (?:401|500|529) with a body that is not text/g),
   3, 'one error line for each');

# text errors pass as they did

($r) = call({ status => 401, echo_auth => 1 });
is($r->{status}, 401, 'a 401 in JSON passes');
like($r->{json}{error}{message} // '', qr/\[REDACTED\]/, '... scrubbed');
is(Airlock::LLM::leaks(unpacked($r)), 0, '... no key');

($r) = call({ status => 429 });
is($r->{status}, 429, 'a 429 passes');

($r, $u) = call({ status => 200, gzip => 1 });
is($r->{status}, 502, 'a 2xx answer gzipped with no header: 502, as before');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
