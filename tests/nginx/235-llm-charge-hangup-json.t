#!/usr/bin/perl

# ngx_http_airlock_llm_module: a client that hangs up in the middle of
# a JSON answer, after its first bytes and before its "usage" (at its
# end) was read, is charged as docs/nginx.md says: its reservation, the
# output cap whole and the prompt at its bound, a token a byte of its
# text, not at the estimate's four bytes a token.  Any client can hang
# up on any call, and a token-dense prompt is billed near a token a
# byte.  The budget is charged the same.  The line's status is nginx's
# $status, 200: the client had the header.  A short answer, which the
# key scrubber holds whole, is charged so too when the client hangs up
# after the provider sent its first half (the client had no byte of it:
# 499).  A JSON answer the client read whole is charged its usage, as
# before.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use Time::HiRes qw(sleep time);
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $dense = 'al-dense-token-FAKE-235235';
my $sha = $l->proxy->token_sha256($dense);

$l->setup(
    clients => qq{  dense: { token_sha256: "$sha" }\n},
    openai_clients => "      dense:\n        models: [gpt-4o-mini]\n"
        . "        tokens_per_day: 1000000\n"
        . "        default_max_tokens: 100\n");
$t->run;
plan tests => 11;

my $n = 0;

# 4000 digits: the estimate counts them and the message's "role",
# "user" and "content", 4015 bytes, as 1004 tokens
my $digits = '0123456789' x 400;
my $bound = 4 + 4 + 7 + 4000;
my $estimate = int(($bound + 3) / 4);

# a long answer, of 144 KB: its first half is past what the key
# scrubber holds whole (airlock_scrub_hold, 64 KB, for a body of known
# length), so it goes on as it comes, a full proxy buffer at a time
my $text = 'lorem ipsum ' x 12000;

# ---- the client hangs up after the first half of the answer -------------

my $gate = $t->testdir . '/gate';
$l->script({ body_gate => $gate, pieces => [$text] });

my $s = $l->raw_chat($dense, encode_json({
    model => 'gpt-4o-mini',
    messages => [{ role => 'user', content => $digits }] }));
my ($got, $sel) = ('', IO::Select->new($s));
while ($got !~ /\r\n\r\n.*lorem ipsum/s && $sel->can_read(10)) {
    sysread($s, $got, 4096, length $got) or last;
}
like($got, qr/\A\S+ 200 .*\r\n\r\n(?:[0-9a-f]+\r\n)?\{.*lorem ipsum/s,
     'hung up: the first of the answer read before closing');
unlike($got, qr/"usage"/, '... and not its usage');
close $s;

my $u = $l->last_usage(++$n);
$t->write_file('gate', '');

is($u->{usage_source}, 'estimated', 'hung up: estimated');
is_deeply([@$u{qw(prompt_tokens completion_tokens total_tokens)}],
          [$bound, 100, $bound + 100],
          'hung up: the prompt at its bound, a token a byte '
          . "($bound, not the estimate's $estimate), the output cap")
    or diag(explain $u);
# nginx logs 499 only for a client gone before a byte of its answer was
# sent; this one had the header and part of the body: its line says 200,
# as $status does (docs/nginx.md, "a JSON answer whose sending failed")
is($u->{status}, 200, 'hung up: its status, as nginx logs it');

# the budget was charged the same: what remains after the next call's
# reservation (the estimate of "Hi" and its keys, 5, and the cap, 100)

my $r = $l->chat(token => $dense);
is($r->{headers}{'x-ratelimit-remaining-tokens'},
   1000000 - ($bound + 100) - (5 + 100),
   'hung up: the day budget was charged the bound');
$l->last_usage(++$n);

# ---- a short answer, held whole by the key scrubber: nothing sent --------

# the client hangs up once the provider has sent the first half of an
# answer of 500 bytes or so, which the scrubber holds until its end: the
# client had no byte of it, and nginx logs 499

unlink $gate, "$gate.half";
$l->script({ body_gate => $gate });
$s = $l->raw_chat($dense, encode_json({
    model => 'gpt-4o-mini',
    messages => [{ role => 'user', content => $digits }] }));
my $deadline = time + 10;
sleep 0.02 while !-e "$gate.half" && time < $deadline;
ok(-e "$gate.half", 'short answer: its first half sent');
close $s;

$u = $l->last_usage(++$n);
$t->write_file('gate', '');
is_deeply([@$u{qw(status prompt_tokens completion_tokens usage_source)}],
          [499, $bound, 100, 'estimated'],
          'short answer, hung up: 499, the output cap, the prompt at its '
          . 'bound') or diag(explain $u);

# ---- the long answer read whole: its usage --------------------------------

unlink $gate, "$gate.half";
$l->script({ body_gate => $gate, pieces => [$text] });
my $body = encode_json({ model => 'gpt-4o-mini',
                         messages => [{ role => 'user',
                                        content => $digits }] });
$s = $l->raw_chat($dense, $body);
$got = '';
$sel = IO::Select->new($s);
while ($got !~ /\r\n\r\n.*lorem ipsum/s && $sel->can_read(10)) {
    sysread($s, $got, 4096, length $got) or last;
}
$t->write_file('gate', '');
while ($sel->can_read(10)) {
    sysread($s, $got, 4096, length $got) or last;
}
close $s;
like($got, qr/"usage"/, 'read whole: the answer came with its usage');

$u = $l->last_usage(++$n);
is_deeply([@$u{qw(status prompt_tokens completion_tokens usage_source)}],
          [200, 11, 1, 'response'], 'read whole: as the provider counts');

$l->script();
$r = $l->chat(token => $dense);
is($r->{status}, 200, 'later calls are answered');
