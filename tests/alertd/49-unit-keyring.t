#!/usr/bin/perl
# The shipped unit gives alertd the appliance key only where the policy
# needs it.  alertd is run here as conf/airlock-alertd.service runs it:
# its ExecStart= expanded as systemd does ($VAR as its words, ${VAR}
# whole, %d the credentials directory, %b the boot id, Environment= in
# order, a drop-in after the unit) and a $CREDENTIALS_DIRECTORY holding
# what its LoadCredential= lines copy, with the test's files in place of
# /etc's.
#
# - The unit as shipped, a file: webhook secret (the example policy's):
#   no --keyring, no key among its credentials, the alert delivered.
# - The unit as shipped, a sealed webhook secret: exit 2, naming the
#   secret and the drop-in that gives the key.
# - With that drop-in (conf/airlock-alertd-keyring.conf, as an operator
#   installs it): the key among its credentials, --keyring to it, and
#   the sealed secret opened and the alert delivered.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $d = $t->dir;
my $top = "$FindBin::Bin/../..";
my $unit = "$top/conf/airlock-alertd.service";
my $dropin = "$top/conf/airlock-alertd-keyring.conf";

delete $ENV{CREDENTIALS_DIRECTORY};

my $value = 'unit-keyring-test-FAKE-secret-0123456789';
my $hook = $t->secret('hook', $value);
my $r = $t->receiver(secret => $hook);

# the unit's directives, the drop-ins' after it, in order
sub directives {
    my %d;
    for my $f (@_) {
        my $s = $t->read_file($f);
        $s =~ s/\\\n\s*/ /g;
        for (split /\n/, $s) {
            next if /^\s*(#|;|\[|$)/;
            my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
            push @{$d{$k}}, $v;
        }
    }
    return \%d;
}

# the test's files for the paths the unit names
my %file = (
    '/etc/airlock/airlock.key'            => $t->keyring,
    '/etc/airlock/credentials/alert_hmac' => $hook,
    '/etc/airlock/policy.yaml'            => "$d/policy.yaml",
    '/var/log/airlock/journal.log'        => $t->journal,
    '/usr/bin/airlock-alertd'             => $t->bin,
);

# (argv, credentials directory, the IDs in it) of the unit and drop-ins
my $n = 0;
sub unit_run {
    my (@files) = @_;
    my $dd = directives(@files);
    my $creds = "$d/creds-" . ++$n;
    my $state = "$d/state-$n";
    my (%env, @ids);

    mkdir $creds or die "mkdir: $!";
    for (@{$dd->{LoadCredential} || []}) {
        my ($id, $path) = /^([^:]+):(\S+)$/ or die "LoadCredential=$_";
        die "the test has no file for $path" unless $file{$path};
        $t->write_file("$creds/$id", $t->read_file($file{$path}));
        chmod 0400, "$creds/$id" or die "chmod: $!";
        push @ids, $id;
    }

    %env = (CREDENTIALS_DIRECTORY => $creds, STATE_DIRECTORY => $state);
    for my $line (@{$dd->{Environment} || []}) {
        while ($line =~ /\G\s*(?:"([^"]*)"|(\S+))/gc) {
            my $a = $1 // $2;
            my ($k, $v) = $a =~ /^(\w+)=(.*)$/s or die "Environment=$line";
            $v =~ s/%d/$creds/g;
            $env{$k} = $v;
        }
    }

    my @argv;
    my $exec = $dd->{ExecStart}[-1] // die "no ExecStart";
    for my $w (split ' ', $exec) {
        if ($w =~ /^\$(\w+)$/) {
            push @argv, split(' ', $env{$1} // '');
            next;
        }
        $w =~ s/\$\{(\w+)\}/$env{$1} \/\/ die "no \$$1"/ge;
        $w =~ s/%b/boot_id()/ge;
        push @argv, $file{$w} // $w;
    }

    return (\@argv, $creds, [sort @ids]);
}

# systemd's %b: the kernel's boot id without its dashes
sub boot_id {
    my $id = $t->read_file('/proc/sys/kernel/random/boot_id')
             // die "no boot id";
    $id =~ tr/-\n//d;
    return $id;
}

sub run_unit {
    my ($argv, $creds) = @_;
    local $ENV{CREDENTIALS_DIRECTORY} = $creds;
    my @args = @$argv;
    shift @args;
    return $t->run_alertd(@args, '--once');
}

sub write_policy {
    my ($secret) = @_;
    $t->write_file('policy.yaml', <<"YAML");
version: 1
clients:
  agent: { cidr: 127.0.0.1/32 }
secrets:
  alert_hmac: $secret
alerts:
  deny: { threshold: 3, window: 60s }
  sinks:
    - webhook: { url: "$r->{url}", hmac_secret: alert_hmac }
YAML
}

# the example policy's webhook secret: a file: one, nginx's credential
write_policy('{ file: /run/credentials/nginx.service/airlock_alert_hmac }');
my ($argv, $creds, $ids) = unit_run($unit);
is($argv->[0], $t->bin, 'the unit runs airlock-alertd');
ok(!(grep { $_ eq '--keyring' } @$argv),
   'the unit as shipped passes no --keyring') or diag("@$argv");
ok(!(grep { $_ eq 'airlock.key' } @$ids),
   'and loads no key among its credentials') or diag("@$ids");
is_deeply([grep { $t->read_file("$creds/$_") eq $t->read_file($t->keyring) }
           @$ids], [], 'none of its credentials is the key');
my $id = $t->alert(client => 'agent');
my ($rc, $err) = run_unit($argv, $creds);
is($rc, 0, 'a file: webhook secret: alertd runs without the key')
    or diag($err);
ok($t->delivered($r, $id), 'and delivers the alert, signed');

# a sealed webhook secret, the unit as shipped: exit 2, what to do
my $sealed = `\Q$t->{ctl}\E seal --pub \Q${\$t->keyring}\E.pub < \Q$hook\E`;
is($?, 0, 'airlockctl seal');
chomp $sealed;
write_policy("{ sealed: \"$sealed\" }");
$t->write_file($t->journal, '');
($argv, $creds, $ids) = unit_run($unit);
($rc, $err) = run_unit($argv, $creds);
is($rc, 2, 'a sealed webhook secret, the unit as shipped: exit 2');
like($err, qr/policy\.yaml:\d+: secret "alert_hmac" is sealed and no keyring was given: .*airlock-alertd-keyring\.conf/,
     'names the secret and the drop-in that gives the key') or diag($err);

# the drop-in: the key, and --keyring to it
ok(-f $dropin, 'conf/airlock-alertd-keyring.conf is there');
SKIP: {
    skip 'no drop-in', 6 unless -f $dropin;
    ($argv, $creds, $ids) = unit_run($unit, $dropin);
    ok((grep { $_ eq 'airlock.key' } @$ids),
       'with the drop-in, the key is among its credentials');
    my $i = (grep { $argv->[$_] eq '--keyring' } 0 .. $#$argv)[0];
    ok(defined $i, 'and the unit passes --keyring') or diag("@$argv");
    is($argv->[($i // -2) + 1], "$creds/airlock.key",
       'to its own copy of the key, %d/airlock.key');
    $id = $t->alert(client => 'agent');
    ($rc, $err) = run_unit($argv, $creds);
    is($rc, 0, 'a sealed webhook secret with the drop-in: runs')
        or diag($err);
    ok($t->delivered($r, $id), 'and delivers the alert, signed with it');

    # the drop-in gives the key and nothing else
    my $dd = directives($dropin);
    is_deeply([sort keys %$dd], [qw(Environment LoadCredential)],
              'the drop-in sets LoadCredential= and Environment= only');
}

$t->done;
