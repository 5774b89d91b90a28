#!/usr/bin/perl
# airlockctl seal refuses a public key another user can replace.  What is
# sealed to a key is opened by whoever holds its private half, and the
# sealed value goes in a policy any local user may read (/etc/airlock is
# 0755, the policy 0644): a public key file others may write (0666), or
# one owned by another user (a copy left in /tmp by someone else, or a
# symbolic link to one), let that user put their own key in it and open
# the credential the operator sealed.  Both were taken, and the value
# printed.  Group write is taken (a group per user makes every file so;
# a group others are in is refused, seal-pub-group.t),
# and so is a symbolic link to a key no one else can write.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 12;

my ($rc, $out) = run_ctl('keygen', "$dir/k");
is($rc, 0, 'keygen') or diag($out);
my $pub = "$dir/k.pub";

sub seal {
    my ($path) = @_;
    my $o = `printf %s FAKE-token-for-sealing | $ctl seal --pub \Q$path\E 2>$dir/err`;
    my $status = $? >> 8;
    open my $fh, '<', "$dir/err" or die;
    local $/;
    my $err = <$fh>;
    return ($status, $o, $err);
}

my ($err);

# others may write it

chmod 0666, $pub or die;
($rc, $out, $err) = seal($pub);
is($rc, 1, 'a public key others may write: seal exits 1');
is($out, '', 'and prints no sealed value');
like($err, qr/public key file can be written by others \(mode 0666\)/,
     'the mode is named');

# a symbolic link is followed, and the file it names checked

symlink($pub, "$dir/link.pub") or die;
($rc, $out, $err) = seal("$dir/link.pub");
is($rc, 1, 'a link to a public key others may write: refused');

chmod 0664, $pub or die;
($rc, $out, $err) = seal($pub);
is($rc, 0, 'group write is taken') or diag($err);
like($out, qr{^[A-Za-z0-9+/]+=*\n$}, 'the sealed value is printed');

chmod 0644, $pub or die;
($rc, $out, $err) = seal("$dir/link.pub");
is($rc, 0, 'a link to a key no one else can write is taken') or diag($err);

# another user's file

SKIP: {
    my $who = getpwnam('nobody');
    if ($> != 0 || !defined $who) {
        fail('chown to another user needs root, under CI') if $ENV{CI};
        skip 'chown to another user needs root', 4;
    }

    chown $who, -1, $pub or die;
    ($rc, $out, $err) = seal($pub);
    is($rc, 1, 'a public key owned by another user: seal exits 1');
    is($out, '', 'and prints no sealed value');
    like($err, qr/public key file is owned by uid $who, neither root nor (?#
                  )the user sealing/, 'the owner is named');

    chown 0, -1, $pub or die;
    ($rc, $out, $err) = seal($pub);
    is($rc, 0, "root's public key is taken") or diag($err);
}
