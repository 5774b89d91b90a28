#!/usr/bin/perl
# A policy's rendered header values are bounded.  A template may name a
# secret any number of times, and a secret may be 64 KiB, which anyone
# may seal to the appliance's public key: a policy of "{s}{s}{s}..."
# rendered to gigabytes of guarded memory (hundreds for a 16 MiB file)
# in check --key and at nginx's load.  Values over 64 MiB in all are
# refused at the inject that crosses it; check without --key, which
# renders nothing, is unchanged, and a policy under it loads as before.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 6;

my ($rc, $out) = run_ctl('keygen', "$dir/k");
is($rc, 0, 'keygen') or diag($out);

open my $fh, '|-', "$ctl seal --pub $dir/k.pub --keep-newline "
                   . ">$dir/sealed" or die;
print $fh 'FAKE' x 16384;
close $fh;
my $sealed = do { open my $s, '<', "$dir/sealed" or die; local $/; <$s> };
chomp $sealed;

# a route injecting the 64 KiB secret n times in one header
sub policy {
    my ($name, $n) = @_;
    my $path = write_file($name, <<"Y");
version: 1
clients:
  a: { unix_uid: 1000 }
secrets:
  s: { sealed: "$sealed" }
upstreams:
  u: { url: "http://127.0.0.1:9000" }
routes:
  - name: r
    clients: [a]
    match: { method: GET, path: /r }
    upstream: u
    to: /r
    inject: { X-Key: "@{[ '{s}' x $n ]}" }
alerts:
  deny: { threshold: 3, window: 60s }
Y
    chmod 0600, $path or die;
    return $path;
}

my $over = policy('over.yaml', 1100);
my $under = policy('under.yaml', 500);

($rc, $out) = run_ctl('check', $over, '--key', "$dir/k");
is($rc, 1, 'check --key: values over 64 MiB, invalid');
my $why = "the policy's injected header values come to more than 64 MiB "
          . 'with this one (72089600 bytes)';
like($out, qr/^\Q$over\E:14:\d+: \Q$why\E/m, 'named at the inject')
    or diag($out);

($rc, $out) = run_ctl('check', $over);
is($rc, 0, 'check without --key renders nothing: valid') or diag($out);

($rc, $out) = run_ctl('check', $under, '--key', "$dir/k");
is($rc, 0, 'check --key: 32 MiB, valid') or diag($out);
like($out, qr/secrets opened/, 'its secret opened');
