#!/usr/bin/perl
# A change of a webhook's secret without a flag day.
#
# alertd signed each alert with the one hmac_secret: a receiver that
# knew only the other key refused every alert (401) from the moment the
# secret changed on one side until it changed on the other, and each
# refusal made the sink wait (41-refusals.t).  A webhook may now name a
# second secret, hmac_secret_also, for the time of the change: each
# alert then carries a signature under each key in its
# webhook-signature header, "v1,<hmac_secret's> v1,<hmac_secret_also's>"
# (space-delimited, as Standard Webhooks lists several): the
# hmac_secret's stays first and as it was, so a receiver that reads the
# first signature only sees what it saw before, and one that checks
# each (the Standard Webhooks libraries, tests/lib/webhook-receiver.py)
# takes the alert under either key.
#
# Two receivers that refuse what does not verify (--refuse-unverified),
# one with the old key, one with the new, each the URL of a sink:
#
#   1. "next": hmac_secret old, hmac_secret_also new: both take every
#      alert, the old key's signature first;
#   2. "previous" (a reload): hmac_secret new, hmac_secret_also old:
#      both take every alert, the new key's signature first;
#   3. the window over (a reload, no hmac_secret_also): one signature,
#      the new key's; the receiver with the new key takes the alerts,
#      the one with the old key refuses them.
#
# Neither secret, nor its key, is in the log or the state directory;
# the log names the second secret by its name.  A second secret that
# cannot be opened stops alertd at start (exit 2) naming it, and a
# reload to such a policy is refused and the running one kept.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Digest::SHA qw(hmac_sha256);
use File::Find;
use MIME::Base64 qw(decode_base64 encode_base64);
use Test::More;

delete $ENV{CREDENTIALS_DIRECTORY};

my $t = AlertdTest->new;
my $d = $t->dir;

# the old key a raw secret, the new one a Standard Webhooks whsec_ secret
my %secret = (
    old => 'FAKE-old-webhook-secret-0123456789abcdef',
    new => 'whsec_FAKENEW0' . ('Bq9x' x 10),
);
my %key = (
    old => $secret{old},
    new => decode_base64(substr($secret{new}, 6)),
);

$t->secret($_, $secret{$_}) for sort keys %secret;

my %r;
for my $k ('old', 'new') {
    $r{$k} = $t->receiver(secret => "$d/$k.secret", refuse_unverified => 1);
}

sub policy {
    my ($current, $also) = @_;
    return $t->policy(map { {
        webhook     => $r{$_}{url},
        secret      => $current,
        secret_also => $also,
    } } 'old', 'new');
}

# "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" of a record
sub sig {
    my ($rec, $k) = @_;
    my $msg = "$rec->{id}.$rec->{timestamp}.$rec->{body}";
    utf8::encode($msg);
    my $b = encode_base64(hmac_sha256($msg, $key{$k}), '');
    return "v1,$b";
}

# alerts, each of its own group (a reason of its own): sent at once
my $n = 0;
sub alerts {
    my ($count) = @_;
    return map { $t->alert(reason => 'r' . ++$n) } 1 .. $count;
}

sub records_of {
    my ($k, @ids) = @_;
    my %want = map { $_ => 1 } @ids;
    return grep { $want{$_->{id} // ''} } $t->records($r{$k});
}

# every record of these ids at both receivers: taken, verified, and
# signed with the keys named, in that order
sub both_take {
    my ($what, $keys, @ids) = @_;

    for my $k ('old', 'new') {
        ok($t->wait_for(sub { $t->delivered($r{$k}, @ids) }),
           "$what: the receiver with the $k key takes every alert")
            or diag($t->alertd_log);

        my @rec = records_of($k, @ids);
        ok(@rec >= @ids
           && !grep({ !$_->{verified} || $_->{status} ne 200 } @rec),
           "$what: ... and refused none ($k)");

        my @bad = grep {
            my $rec = $_;
            ($rec->{signature} // '') ne join(' ', map { sig($rec, $_) }
                                                       @$keys)
        } @rec;
        ok(@rec && !@bad, "$what: each header is \""
           . join(' ', map { "v1,<$_>" } @$keys) . "\" ($k)")
            or diag(explain($bad[0]));
    }
}

# 1. next: the old key signs, the new one too
policy('old', 'new');
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

like($t->alertd_log,
     qr/\binfo: sink 1: webhook \S+, each alert also signed with secret "new" \(hmac_secret_also\)/,
     'the log says that a second key signs, by its name');

my @ids = alerts(3);
both_take('next', ['old', 'new'], @ids);

# a receiver that reads one signature only, the first: the one it had
my ($rec) = records_of('old', $ids[0]);
my ($first) = split / /, $rec->{signature} // '';
is($first, sig($rec, 'old'), 'the first signature is the hmac_secret\'s, '
   . 'as when it was the only one');

# 2. previous: the new key signs, the old one too
policy('new', 'old');
ok($t->log_more(qr/\binfo: reloaded /, sub { kill 'HUP', $t->alertd_pid }),
   'reloaded');
@ids = alerts(3);
both_take('previous', ['new', 'old'], @ids);

# 3. the window is over: the new key alone
policy('new', undef);
ok($t->log_more(qr/\binfo: sink 2: /, sub { kill 'HUP', $t->alertd_pid }),
   'reloaded without hmac_secret_also');
my @sinks = $t->alertd_log =~ /^.*\binfo: sink \d+: .*$/mg;
splice(@sinks, 0, -2) if @sinks > 2;
ok(@sinks == 2 && !grep({ /also signed/ } @sinks),
   'the log no longer says a second key signs');

@ids = alerts(2);
ok($t->wait_for(sub { $t->delivered($r{new}, @ids) }),
   'after: the receiver with the new key takes the alerts');
my @rec = records_of('new', @ids);
ok(@rec && !grep({ ($_->{signature} // '') ne sig($_, 'new') } @rec),
   'after: one signature, the new key\'s');

my $old_label = quotemeta $r{old}{label};
ok($t->log_has(qr/\berror: webhook $old_label refused alert \Q$ids[0]\E with HTTP 401/),
   'after: the receiver with the old key refuses them');
is(scalar(grep { $_->{verified} } records_of('old', @ids)), 0,
   'after: none verifies under the old key');

# nothing of either secret in the log or the state directory
my @places = ($t->alertd_log);
find(sub { push @places, $t->read_file($File::Find::name) if -f $_ },
     $t->state);
for my $k ('old', 'new') {
    my @forms = ($secret{$k}, encode_base64($key{$k}, ''),
                 unpack('H*', $key{$k}));
    push @forms, substr($secret{$k}, 6) if $secret{$k} =~ /^whsec_/;
    my $found = grep { my $p = $_; grep { index($p, $_) >= 0 } @forms }
                @places;
    is($found, 0, "the $k secret is in neither the log nor the state");
}

# a second secret that cannot be opened: a configuration error, naming it
my $gone = "$d/gone.secret";
$t->write_file('broken.yaml', <<"YAML");
version: 1
clients:
  agent: { cidr: 127.0.0.1/32 }
secrets:
  new: { file: "$d/new.secret" }
  gone: { file: "$gone" }
alerts:
  deny: { threshold: 3, window: 60s }
  sinks:
    - webhook: { url: "$r{new}{url}", hmac_secret: new, hmac_secret_also: gone }
YAML
my ($rc, $err) = $t->run_alertd('--policy', "$d/broken.yaml",
                                '--journal', $t->journal,
                                '--state', "$d/state-broken", '--once');
is($rc, 2, 'hmac_secret_also that cannot be opened: exit 2');
like($err, qr/broken\.yaml:\d+: secret "gone": cannot open \S*gone\.secret/,
     'says which secret, where, and why');

# the same at a reload: refused, the running policy kept
$t->write_file('policy.yaml', $t->read_file('broken.yaml'));
ok($t->log_more(qr/\berror: reload failed, the running policy is kept: .*secret "gone"/,
                sub { kill 'HUP', $t->alertd_pid }),
   'a reload to it is refused, naming the secret');
@ids = alerts(1);
ok($t->wait_for(sub { $t->delivered($r{new}, @ids) }),
   'and the running policy delivers');

# empty: never a key
$t->write_file($gone, "\n");
chmod 0600, $gone or die "chmod: $!";
($rc, $err) = $t->run_alertd('--policy', "$d/broken.yaml",
                             '--journal', $t->journal,
                             '--state', "$d/state-broken", '--once');
is($rc, 2, 'an empty hmac_secret_also: exit 2');
like($err, qr/secret "gone"/, 'naming it') or diag($err);

$t->done;
