#!/usr/bin/perl
# What a webhook is sent, at its edges:
#
#  - a sample with control bytes, DEL, '"', '\', U+2028 and a character
#    outside the BMP: the body is valid UTF-8 JSON with no raw control
#    byte, it reads back as the same text, and the signature covers the
#    bytes sent (the receiver verifies it), with webhook-id the alert id
#    and webhook-timestamp this attempt's;
#  - a receiver that answers 307 to another place: the redirect is not
#    followed (the signed alert would go where the receiver says), the
#    alert is refused, said, and the other place gets nothing;
#  - an https receiver whose certificate no CA signed: refused by TLS
#    verification, said, the receiver sent nothing.
#
# Tests only: alertd did all of this already.  Nothing is timed: each
# wait is for what alertd logs or a receiver records.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);

absent('openssl not installed') unless -x '/usr/bin/openssl';

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'FAKE-alertd-webhook-edges-secret');

# a certificate of its own for 127.0.0.1, which no CA signed
my $dir = $t->dir;
my $out = `openssl req -x509 -newkey rsa:2048 -nodes -days 1 \\
           -subj '/CN=FAKE alertd test receiver' \\
           -addext subjectAltName=IP:127.0.0.1 \\
           -keyout $dir/tls.key -out $dir/tls.crt 2>&1`;
die "openssl: $out" if $?;

my $plain = $t->receiver(secret => $secret);
my $target = $t->receiver(secret => $secret);
my $redir = $t->receiver(secret => $secret,
                         redirect => "$target->{url}/stolen");
my $tls = $t->receiver(secret => $secret, tls_cert => "$dir/tls.crt",
                       tls_key => "$dir/tls.key");

$t->policy(map { { webhook => $_->{url}, secret => 'hook' } }
           $plain, $redir, $tls);
$t->append('');
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

my $sample = "GET /a\x01b\x1fc\x7fd\"e\\f\x{2028}g\x{1F600}h\x{e9}";
my $id = $t->alert(client => 'agent', reason => 'no_route',
                   sample => $sample);

# 1. the body
ok($t->wait_for(sub { $t->delivered($plain, $id) }),
   'delivered, the signature verified');
my ($rec) = grep { ($_->{id} // '') eq $id } $t->records($plain);
$rec //= {};
is($rec->{json}{sample}, $sample,
   'the sample reads back as it was written');
unlike($rec->{body}, qr/[\x00-\x1f]/, 'no raw control byte in the body');
unlike($rec->{body}, qr/\x{FFFD}/, 'the body is valid UTF-8');
is($rec->{content_type}, 'application/json', 'Content-Type');
ok($rec->{timestamp_ok}, 'webhook-timestamp is now');
like($rec->{signature} // '', qr{^v1,[A-Za-z0-9+/]{43}=$},
     'one v1 signature');

# 2. a redirect is not followed
ok($t->log_has(qr/webhook \Q$redir->{label}\E refused alert \Q$id\E with HTTP 307 \(redirects are not followed\)/),
   'a 307 refuses the alert, said as a redirect not followed');
ok($t->wait_for(sub { grep { $_->{status} eq '307' } $t->records($redir) }),
   '... the receiver answered it 307');
is(scalar($t->records($target)), 0,
   '... and where it pointed got nothing');

# 3. TLS is verified
ok($t->log_has(qr/webhook \Q$tls->{label}\E: alert \Q$id\E not delivered: .*SSL certificate problem/),
   'a certificate no CA signed: not delivered, said');
is(scalar($t->records($tls)), 0, '... the receiver got no request');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stops cleanly');

$t->done;
