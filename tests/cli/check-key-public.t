#!/usr/bin/perl
# check --key given the public key (PATH.pub, 0644 as keygen writes it)
# in place of the private one says so.  It said "private key file is
# readable by others (mode 0644); chmod 600 it", and an operator who
# did so was told only then that it is the public key.  A private key
# readable by others is still refused as such; nginx's airlock_keyring
# reads the key with the same code.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 5;

my ($rc, $out) = run_ctl('keygen', "$dir/k");
is($rc, 0, 'keygen') or diag($out);

my $policy = write_file('policy.yaml', one_route_policy());
chmod 0600, $policy or die;

($rc, $out) = run_ctl('check', $policy, '--key', "$dir/k.pub");
is($rc, 2, 'check --key PATH.pub: exit 2');
like($out, qr/k\.pub: this is the public key; give the private key file/,
     'it says that it is the public key');
unlike($out, qr/chmod/, 'and does not have the file chmod-ed');

chmod 0644, "$dir/k" or die;
($rc, $out) = run_ctl('check', $policy, '--key', "$dir/k");
like($out, qr/private key file is readable by others \(mode 0644\); chmod/,
     'a private key readable by others is refused as before');
