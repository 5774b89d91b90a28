#!/usr/bin/perl
# An appliance without a webhook.  The shipped unit loads the webhook's
# secret, /etc/airlock/credentials/alert_hmac, as a credential; an operator
# who sends alerts to Alertmanager only, or nowhere, has no such file, and
# a LoadCredential= whose file is missing fails the unit (systemd 252:
# status 243/CREDENTIALS), so alertd never ran and no alert was delivered.
# The unit gives each webhook credential a default (SetCredential= with the
# same ID, which systemd 252 uses when the file cannot be read), and alertd
# takes that default for what it is, a missing secret: with Alertmanager
# only, or no sink, it runs and delivers; a webhook that names the secret
# stops it at start (exit 2) with the credential, what is missing and what
# to do, and is never signed with the default; a reload to such a policy
# is refused and the running one kept.  The default is an empty line, an
# empty secret, which no operator's secret can be: a secret that is a
# word, even "missing" (older units' default), is a key like any other.
#
# systemd itself is not run: the test lays out $CREDENTIALS_DIRECTORY as
# systemd 252 leaves it when the file is missing (the SetCredential=
# value, 0400) and runs alertd with the unit's options.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $d = $t->dir;
my $top = "$FindBin::Bin/../..";

delete $ENV{CREDENTIALS_DIRECTORY};

sub directives {
    my ($s) = @_;
    my %h;
    $s =~ s/\\\n\s*/ /g;
    for (split /\n/, $s) {
        next if /^\s*(#|;|\[|$)/;
        my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
        push @{$h{$k}}, $v;
    }
    return \%h;
}

# SetCredential='s value as systemd hands it over: C-style escapes
sub unescape {
    my ($v) = @_;
    my %c = (n => "\n", t => "\t", r => "\r", '\\' => '\\');
    $v =~ s/\\(x([0-9a-fA-F]{2})|[ntr\\])/$2 ? chr(hex $2) : $c{$1}/ge;
    return $v;
}

# the unit: every webhook credential has a default, not empty (systemd
# 252 ignores an empty one), which alertd reads as an empty secret (one
# trailing newline dropped): no key an operator may have chosen
my $unit_file = "$top/conf/airlock-alertd.service";
my $unit = directives($t->read_file($unit_file));
my %load = map { /^([^:]+):(.*)$/ ? ($1 => $2) : () }
           @{$unit->{LoadCredential} || []};
my %set = map { /^([^:]+):(.*)$/ ? ($1 => unescape($2)) : () }
          @{$unit->{SetCredential} || []};
my @hooks = sort grep { $_ ne 'airlock.key' } keys %load;
ok(@hooks, 'the unit loads webhook credentials: ' . join(', ', @hooks));
for my $id (@hooks) {
    ok(defined $set{$id} && $set{$id} =~ /^\r?\n\z/,
       "LoadCredential=$id has a SetCredential= default, an empty line")
        or diag("SetCredential=$id:" . ($set{$id} // '(none)'));
}
my ($hid) = @hooks;
my $default = $set{$hid // ''} // 'no-default-in-the-unit';

my $sa = `command -v systemd-analyze 2>/dev/null`;
chomp $sa;
SKIP: {
    if (!$sa) {
        fail('systemd-analyze is missing') if $ENV{CI};
        skip 'systemd-analyze is missing', 1 unless $ENV{CI};
    }
    my @bad = grep { /\S/ && !/Command \S+ is not executable/ }
              split /\n/, `$sa verify $unit_file 2>&1`;
    ok(!@bad, 'systemd-analyze verify airlock-alertd.service') or diag("@bad");
}

# $CREDENTIALS_DIRECTORY as systemd leaves it when the webhook's file is
# missing: the keyring, and the default under the webhook's ID
mkdir "$d/creds" or die "mkdir: $!";
$t->write_file("$d/creds/airlock.key", $t->read_file($t->keyring));
$t->write_file("$d/creds/$hid", $default) if defined $hid;
chmod 0400, glob("$d/creds/*") or die "chmod: $!";
$ENV{CREDENTIALS_DIRECTORY} = "$d/creds";

my $am = $t->receiver(secret => $t->secret('unused', 'x' x 24));
my $am_url = "http://127.0.0.1:$am->{port}";
my $hook = $t->receiver(secret => $t->secret('unused', 'x' x 24));

sub policy {
    my ($sinks) = @_;
    my $id = $hid // 'airlock_alert_hmac';
    $t->write_file('policy.yaml', <<"YAML");
version: 1
clients:
  agent: { cidr: 127.0.0.1/32 }
secrets:
  alert_hmac: { file: /run/credentials/nginx.service/$id }
alerts:
  deny: { threshold: 3, window: 60s }
$sinks
YAML
}

my @run = ('--once', '--policy', "$d/policy.yaml",
           '--keyring', "$d/creds/airlock.key", '--journal', $t->journal);

sub am_got {
    my ($id) = @_;
    return grep { ($_->{path} // '') eq '/api/v2/alerts'
                  && ($_->{body} // '') =~ /\Q$id\E/ } $t->records($am);
}

# Alertmanager only: alertd runs and delivers
policy("  sinks:\n    - alertmanager: { url: \"$am_url\" }");
my $pid = $t->alertd('--keyring', "$d/creds/airlock.key");
ok($pid && kill(0, $pid) && $t->alertd_log =~ /\binfo: started /,
   'Alertmanager only, the webhook credential missing: alertd runs')
    or diag($t->alertd_log);
my $id = $t->alert(client => 'agent');
ok($t->wait_for(sub { am_got($id) }), 'and delivers to Alertmanager');

# a reload to a policy with a webhook naming the missing secret is
# refused; the running policy is kept and still delivers
policy("  sinks:\n    - alertmanager: { url: \"$am_url\" }\n"
       . "    - webhook: { url: \"$hook->{url}\", hmac_secret: alert_hmac }");
ok($t->log_more(qr/reload failed, the running policy is kept: /,
                sub { kill 'HUP', $pid }),
   'a reload to a webhook whose secret is missing is refused');
like($t->alertd_log,
     qr/reload failed.*secret "alert_hmac": .*\Q$hid\E is empty: /,
     'naming the secret and the missing credential')
    or diag($t->alertd_log);
$id = $t->alert(client => 'agent', reason => 'after_reload');
ok($t->wait_for(sub { am_got($id) }),
   'the running policy still delivers to Alertmanager');
is(scalar($t->records($hook)), 0, 'the webhook got nothing');
is($t->stop($pid, 'TERM') >> 8, 0, 'alertd stops cleanly');

# no sink at all: alertd runs, and says alerts stay in the journal
policy('');
$pid = $t->alertd('--keyring', "$d/creds/airlock.key");
ok($pid && kill(0, $pid) && $t->alertd_log =~ /has no alerts\.sinks/,
   'no sink, the webhook credential missing: alertd runs and says so')
    or diag($t->alertd_log);
is($t->stop($pid, 'TERM') >> 8, 0, 'alertd stops cleanly');

# a webhook naming the missing secret: exit 2 at start, never signed
# with the default
policy("  sinks:\n    - webhook: { url: \"$hook->{url}\", "
       . "hmac_secret: alert_hmac }");
my $n = $t->alert(client => 'agent', reason => 'webhook');
my ($rc, $err) = $t->run_alertd(@run, '--state', "$d/state-hook");
is($rc, 2, 'a webhook whose credential is missing: exit 2');
like($err, qr/policy\.yaml:\d+: secret "alert_hmac": .*\Q$hid\E/,
     'names the secret, where, and the credential') or diag($err);
like($err, qr/LoadCredential=.*restart/,
     'says what is missing and what to do') or diag($err);
is(scalar($t->records($hook)), 0, 'nothing is sent to the webhook');

# a secret that is the word "missing", older units' default, from a file
# that is there: a key like any other, with a warning for an old unit
mkdir "$d/creds2" or die "mkdir: $!";
$t->write_file("$d/creds2/airlock.key", $t->read_file($t->keyring));
$t->write_file("$d/creds2/$hid", "missing\n") if defined $hid;
chmod 0400, glob("$d/creds2/*") or die "chmod: $!";
my $word = $t->receiver(secret => $t->secret('word', 'missing'));
policy("  sinks:\n    - webhook: { url: \"$word->{url}\", "
       . "hmac_secret: alert_hmac }");
$n = $t->alert(client => 'agent', reason => 'word');
{
    local $ENV{CREDENTIALS_DIRECTORY} = "$d/creds2";
    ($rc, $err) = $t->run_alertd(@run, '--keyring', "$d/creds2/airlock.key",
                                 '--state', "$d/state-word");
}
is($rc, 0, 'a webhook whose credential is the word "missing": it runs')
    or diag($err);
ok($t->delivered($word, $n), '... and signs with it')
    or diag(join "\n", map { $_->{body} // '' } $t->records($word));
like($err, qr/warning: .*credential \Q$hid\E is "missing", which older /,
     '... saying that older units gave that word for a missing file')
    or diag($err);

# the example policy, as shipped (its webhook and Alertmanager) and with
# its webhook taken out
my $example = $t->read_file("$top/conf/policy.example.yaml");
$t->write_file('example.yaml', $example);
($rc, $err) = $t->run_alertd('--once', '--policy', "$d/example.yaml",
                             '--keyring', "$d/creds/airlock.key",
                             '--journal', "$d/journal/none.journal",
                             '--state', "$d/state-ex1");
my $users = $err =~ /unix_uid/ && !$ENV{CI};
SKIP: {
    skip 'the example policy names users this machine lacks '
         . '(auto/deps test adds them)', 2 if $users;
    is($rc, 2, 'the example policy, its webhook secret missing: exit 2');
    like($err, qr/secret "\w+": .*\Q$hid\E/, 'naming the credential')
        or diag($err);
}

(my $amonly = $example) =~ s/^\s*- webhook:.*\n//mg;
isnt($amonly, $example, 'the example policy without its webhook');
$t->write_file('example.yaml', $amonly);
($rc, $err) = $t->run_alertd('--once', '--policy', "$d/example.yaml",
                             '--keyring', "$d/creds/airlock.key",
                             '--journal', "$d/journal/none.journal",
                             '--state', "$d/state-ex2");
SKIP: {
    skip 'the example policy names users this machine lacks '
         . '(auto/deps test adds them)', 1 if $users;
    is($rc, 0, 'runs without the webhook secret') or diag($err);
}

$t->done;
