#!/usr/bin/perl
# A file: secret, the private key and the public key are refused, as the
# policy is (al_policy_trusted()), when another user can change their
# path: a directory others may write, or one another user owns, from /
# down.  Such a user could put another file under the name between
# airlockctl check and the reload (the mode and owner checks are on the
# file they find), or another key under the public key's name for seal.
# A secret or private key with a second name (a hard link) is refused
# too: where fs.protected_hardlinks is 0, any user may link a file of
# root's under a name they made, and the owner check passes it.  Each
# error names the file and why.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl slurp);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 21;

mkdir "$dir/keys" or die;
chmod 0755, "$dir/keys" or die;
my ($rc, $out) = run_ctl('keygen', "$dir/keys/k");
is($rc, 0, 'keygen') or diag($out);

mkdir "$dir/sec" or die;
chmod 0755, "$dir/sec" or die;
write_file('sec/tok', "FAKE-token-0123\n");
chmod 0600, "$dir/sec/tok" or die;

my $pol = write_file('policy.yaml', <<"Y");
version: 1
clients:
  agent: { unix_uid: 1000 }
secrets:
  tok: { file: "$dir/sec/tok" }
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

($rc, $out) = run_ctl('check', $pol, '--key', "$dir/keys/k");
is($rc, 0, 'the secret and the key in safe directories are taken')
    or diag($out);

# the secret's directory, any user may write

chmod 0777, "$dir/sec" or die;
($rc, $out) = run_ctl('check', $pol, '--key', "$dir/keys/k");
is($rc, 1, 'a secret in a directory any user may write: refused');
like($out, qr{policy\.yaml:5:\d+: secret "tok": \Q$dir\E/sec/tok: any (?#
              )user can write the directory \Q$dir\E/sec \(mode 0777\), (?#
              )and replace the secret file there; chmod o-w it},
     'the error names the secret, its file and the directory')
    or diag($out);
unlike($out, qr/FAKE-token/, 'and not the secret');
chmod 0755, "$dir/sec" or die;

# a directory above it, through a symbolic link

mkdir "$dir/open" or die;
chmod 0777, "$dir/open" or die;
symlink "$dir/sec", "$dir/open/sec" or die;
(my $via = slurp($pol)) =~ s{\Q$dir\E/sec/tok}{$dir/open/sec/tok};
write_file('via.yaml', $via);
($rc, $out) = run_ctl('check', "$dir/via.yaml", '--key', "$dir/keys/k");
is($rc, 1, 'a secret reached from a directory any user may write: refused');
like($out, qr{any user can write the directory \Q$dir\E/open }, 'named')
    or diag($out);

# a second name: a hard link

link "$dir/sec/tok", "$dir/sec/tok2" or die;
($rc, $out) = run_ctl('check', $pol, '--key', "$dir/keys/k");
is($rc, 1, 'a secret with two hard links: refused');
like($out, qr{secret "tok": \Q$dir\E/sec/tok has 2 hard links: }, 'named')
    or diag($out);
unlink "$dir/sec/tok2" or die;
($rc, $out) = run_ctl('check', $pol, '--key', "$dir/keys/k");
is($rc, 0, 'one name again: taken') or diag($out);

# the private key

chmod 0777, "$dir/keys" or die;
($rc, $out) = run_ctl('check', $pol, '--key', "$dir/keys/k");
is($rc, 2, 'a private key in a directory any user may write: exit 2');
like($out, qr{^\Q$dir\E/keys/k: any user can write the directory (?#
              )\Q$dir\E/keys \(mode 0777\), and replace the private key (?#
              )there}m, 'the key and the directory are named') or diag($out);
chmod 0755, "$dir/keys" or die;

link "$dir/keys/k", "$dir/keys/k2" or die;
($rc, $out) = run_ctl('check', $pol, '--key', "$dir/keys/k");
is($rc, 2, 'a private key with two hard links: exit 2');
like($out, qr{^\Q$dir\E/keys/k: private key file has 2 hard links}m,
     'named') or diag($out);
unlink "$dir/keys/k2" or die;

# the public key, for seal

my $cmd = "echo FAKE-secret | \Q$ctl\E seal --pub \Q$dir/keys/k.pub\E 2>&1";
$out = `$cmd`;
is($? >> 8, 0, 'seal with a public key in a safe directory') or diag($out);

chmod 0777, "$dir/keys" or die;
$out = `$cmd`;
isnt($? >> 8, 0, 'seal with a public key in a directory any user may '
                 . 'write: refused');
like($out, qr{\Q$dir\E/keys/k\.pub: any user can write the directory (?#
              )\Q$dir\E/keys \(mode 0777\), and replace the public key}, 'named')
    or diag($out);
chmod 0755, "$dir/keys" or die;

SKIP: {
    my $who = getpwnam('nobody');
    if ($> != 0 || !defined $who) {
        fail('chown to another user needs root, under CI') if $ENV{CI};
        skip 'chown to another user needs root', 4;
    }

    # a directory of another user's, whatever its mode

    chown $who, -1, "$dir/sec" or die;
    ($rc, $out) = run_ctl('check', $pol, '--key', "$dir/keys/k");
    is($rc, 1, 'a secret in a directory another user owns: refused');
    like($out, qr{secret "tok": \Q$dir\E/sec/tok: the directory (?#
                  )\Q$dir\E/sec is owned by uid $who, neither root nor the (?#
                  )secret file's owner}, 'named') or diag($out);
    chown 0, -1, "$dir/sec" or die;

    chown $who, -1, "$dir/keys" or die;
    ($rc, $out) = run_ctl('check', $pol, '--key', "$dir/keys/k");
    is($rc, 2, 'a private key in a directory another user owns: exit 2');
    like($out, qr{the directory \Q$dir\E/keys is owned by uid $who}, 'named')
        or diag($out);
    chown 0, -1, "$dir/keys" or die;
}
