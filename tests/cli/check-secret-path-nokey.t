#!/usr/bin/perl
# airlockctl check without --key opens no secret, but holds each file:
# secret's file to every check nginx makes when it opens it, but the
# read: its mode, one hard link, not a symbolic link, and a path no other
# user may change (al_path_trusted()).  Check used to say ok to such a
# policy, and nginx refused it at the reload.  A file that cannot be
# reached here (not on this host) is named as not checked, not refused.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl slurp);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 17;

mkdir "$dir/sec" or die;
chmod 0755, "$dir/sec" or die;
write_file('sec/tok', "FAKE-token-0123\n");
chmod 0600, "$dir/sec/tok" or die;

sub policy {
    my ($name, $file) = @_;

    return write_file($name, <<"Y");
version: 1
clients:
  agent: { unix_uid: 1000 }
secrets:
  tok: { file: "$file" }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: one
    clients: [agent]
    match: { method: GET, path: /one }
    upstream: up
    to: /one
    inject:
      X-Token: "{tok}"
alerts:
  deny: { threshold: 3, window: 60s }
Y
}

my $pol = policy('policy.yaml', "$dir/sec/tok");

my ($rc, $out) = run_ctl('check', $pol);
is($rc, 0, 'a secret in a safe directory: ok') or diag($out);
like($out, qr/secrets NOT opened: .*file: secret not read/, 'not read')
    or diag($out);

# the secret's directory, any user may write

chmod 0777, "$dir/sec" or die;
($rc, $out) = run_ctl('check', $pol);
is($rc, 1, 'a secret in a directory any user may write: refused, no key');
like($out, qr{policy\.yaml:5:\d+: secret "tok": \Q$dir\E/sec/tok: any (?#
              )user can write the directory \Q$dir\E/sec \(mode 0777\)},
     'the error names the secret, its file and the directory')
    or diag($out);
unlike($out, qr/FAKE-token/, 'and not the secret');
chmod 0755, "$dir/sec" or die;

# a second name

link "$dir/sec/tok", "$dir/sec/tok2" or die;
($rc, $out) = run_ctl('check', $pol);
is($rc, 1, 'a secret with two hard links: refused, no key');
like($out, qr{secret "tok": \Q$dir\E/sec/tok has 2 hard links: }, 'named')
    or diag($out);
unlink "$dir/sec/tok2" or die;

# its mode

chmod 0644, "$dir/sec/tok" or die;
($rc, $out) = run_ctl('check', $pol);
is($rc, 1, 'a secret others may read: refused, no key');
like($out, qr{secret "tok": \Q$dir\E/sec/tok can be reached by group (?#
              )or others \(mode 0644\)}, 'named') or diag($out);

# not read: a file its reader may not read is still only checked

chmod 0200, "$dir/sec/tok" or die;
($rc, $out) = run_ctl('check', $pol);
is($rc, 0, 'the file is not read (mode 0200 is checked, not opened)')
    or diag($out);
chmod 0600, "$dir/sec/tok" or die;

# a symbolic link

symlink "$dir/sec/tok", "$dir/sec/link" or die;
my $lpol = policy('link.yaml', "$dir/sec/link");
($rc, $out) = run_ctl('check', $lpol);
is($rc, 1, 'a secret that is a symbolic link: refused, no key');
like($out, qr{secret "tok": \Q$dir\E/sec/link is a symbolic link}, 'named')
    or diag($out);

# a directory above, through a symbolic link any user may replace

mkdir "$dir/open" or die;
chmod 0777, "$dir/open" or die;
symlink "$dir/sec", "$dir/open/sec" or die;
my $vpol = policy('via.yaml', "$dir/open/sec/tok");
($rc, $out) = run_ctl('check', $vpol);
is($rc, 1, 'a secret reached from a directory any user may write: refused');
like($out, qr{any user can write the directory \Q$dir\E/open }, 'named')
    or diag($out);

# not on this host: named as not checked, the policy valid

my $mpol = policy('missing.yaml', "$dir/none/tok");
($rc, $out) = run_ctl('check', $mpol);
is($rc, 0, 'a secret file not here: the policy is valid') or diag($out);
like($out, qr{secret "tok" \(line 5\): \Q$dir\E/none/tok cannot be (?#
              )reached here .*NOT checked}, 'and it is named as not checked')
    or diag($out);

# the nginx-side read of the same file agrees: --key refuses it as well

chmod 0777, "$dir/sec" or die;
mkdir "$dir/keys" or die;
chmod 0755, "$dir/keys" or die;
run_ctl('keygen', "$dir/keys/k");
my ($krc) = run_ctl('check', $pol, '--key', "$dir/keys/k");
is($krc, 1, 'check --key refuses it as check without the key does');
chmod 0755, "$dir/sec" or die;
