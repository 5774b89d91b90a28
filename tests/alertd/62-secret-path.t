#!/usr/bin/perl
# airlock-alertd refuses a webhook's file: secret, and its keyring, when
# another user can change their path, as the policy is (al_path_trusted()
# in the library, as nginx and airlockctl check): a directory any user
# may write lets that user put another file under the name between a
# check and the start or reload, whatever the mode and owner of the file
# found there.  A secret or key with a second name (a hard link) is
# refused too: where fs.protected_hardlinks is 0 any user may link a file
# of root's under a name of theirs, and the owner check passes it.  Each
# refusal is exit 2, naming the secret and the file.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

delete $ENV{CREDENTIALS_DIRECTORY};

my $t = AlertdTest->new;
my $d = $t->dir;

mkdir "$d/sec" or die "mkdir: $!";
chmod 0755, "$d/sec" or die "chmod: $!";
my $hook = $t->secret('sec/hook', 'FAKE-webhook-secret-0123456789abcdef');
my $r = $t->receiver(secret => $hook);
$t->policy({ webhook => $r->{url}, secret => 'sec/hook' });

# the policy names the secret "sec/hook": give it a plain name
my $y = $t->read_file('policy.yaml');
$y =~ s{sec/hook:}{hook:}; $y =~ s{hmac_secret: sec/hook}{hmac_secret: hook};
$t->write_file('policy.yaml', $y);

my @args = ('--policy', "$d/policy.yaml", '--keyring', $t->keyring,
            '--journal', $t->journal, '--state', $t->state);

my $pid = $t->alertd;
ok($pid && kill(0, $pid) && $t->alertd_log =~ /\binfo: started /,
   'alertd starts with its secret in a directory only root writes')
    or diag($t->alertd_log);
$t->stop($pid);

chmod 0777, "$d/sec" or die "chmod: $!";
my ($rc, $err) = $t->run_alertd(@args);
is($rc, 2, 'the secret\'s directory 0777: exit 2');
like($err, qr{secret "hook": \Q$hook\E: any user can write the directory (?#
              )\Q$d\E/sec \(mode 0777\), and replace the secret file there},
     'says which secret, its file, the directory') or diag($err);
unlike($err, qr/FAKE-webhook/, 'not the secret');
chmod 0755, "$d/sec" or die "chmod: $!";

link $hook, "$hook.again" or die "link: $!";
($rc, $err) = $t->run_alertd(@args);
is($rc, 2, 'the secret with a second hard link: exit 2');
like($err, qr{secret "hook": \Q$hook\E has 2 hard links}, 'says so')
    or diag($err);
unlink "$hook.again" or die "unlink: $!";

# the keyring, moved to a directory any user may write

mkdir "$d/keys" or die "mkdir: $!";
chmod 0777, "$d/keys" or die "chmod: $!";
rename $t->keyring, "$d/keys/keyring" or die "rename: $!";
my @kargs = @args;
$kargs[3] = "$d/keys/keyring";
($rc, $err) = $t->run_alertd(@kargs);
is($rc, 2, 'the keyring\'s directory 0777: exit 2');
like($err, qr{\Q$d\E/keys/keyring: any user can write the directory (?#
              )\Q$d\E/keys \(mode 0777\), and replace the private key},
     'says which key and directory') or diag($err);

done_testing();
