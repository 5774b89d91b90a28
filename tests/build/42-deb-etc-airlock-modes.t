#!/usr/bin/perl
# The airlock package installed over an /etc/airlock made before it: dpkg
# keeps a directory's owner and mode, and one others could write (0777,
# or another user's) stayed so under the package's policy, key and
# credentials; a credentials directory of another user's, or readable
# by all, stayed so too.  The preinst (debian/airlock.preinst, run here
# in a small chroot) makes /etc/airlock root's and writable by root
# alone, and the credentials directory root's and 0700, before anything
# is unpacked, and says so; it refuses a credentials "directory" that is
# a link or a file (the secrets would be written where it leads), and
# leaves the link's target alone.  It is idempotent, and an install
# with no /etc/airlock yet makes nothing.  The postinst then makes the
# credentials directory when there is none, 0700 and root's.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);
use Airlock::MiniRoot qw(mini_root);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

absent('chroot needs root') if $> != 0;
need_cmd(qw(chroot ldd sh stat chown chmod ls install getent cut));

my $t = tempdir(CLEANUP => 1);
my $nobody = getpwnam('nobody') // 65534;

sub root_with {
    my ($name) = @_;
    my $r = "$t/$name";
    mini_root($r, qw(sh stat chown chmod ls install getent cut));
    for my $s (qw(preinst postinst)) {
        my $src = "$top/debian/airlock.$s";
        # an absent script is one that does nothing: its checks fail
        my $text = -e $src ? do { local (@ARGV, $/) = $src; <> }
                           : "exit 0\n";
        open my $fh, '>', "$r/$s" or die "$r/$s: $!";
        print $fh $text;
        close $fh;
    }
    return $r;
}

sub run_in {
    my ($r, $cmd) = @_;
    my $out = `chroot $r /bin/sh -c '$cmd' 2>&1`;
    return ($? >> 8, $out);
}

sub mode_owner {
    my ($p) = @_;
    my @st = stat $p or return 'absent';
    return sprintf('%o %d:%d', $st[2] & 07777, $st[4], $st[5]);
}

# made before the package: everyone's, and another user's credentials
my $r = root_with('loose');
make_path("$r/etc/airlock/credentials");
chmod 0777, "$r/etc/airlock";
chown $nobody, $nobody, "$r/etc/airlock";
chmod 0755, "$r/etc/airlock/credentials";
chown $nobody, $nobody, "$r/etc/airlock/credentials";
my ($rc, $out) = run_in($r, 'sh /preinst install');
is($rc, 0, 'preinst install over a loose /etc/airlock') or diag($out);
is(mode_owner("$r/etc/airlock"), '755 0:0',
   '/etc/airlock is root\'s, writable by root alone');
is(mode_owner("$r/etc/airlock/credentials"), '700 0:0',
   '/etc/airlock/credentials is root\'s, 0700');
like($out, qr{/etc/airlock was 777}, 'which the preinst says');
($rc, $out) = run_in($r, 'sh /preinst upgrade 0.1.0');
is($rc, 0, 'preinst upgrade, again') or diag($out);
is($out, '', 'with nothing to change, nothing said');
is(mode_owner("$r/etc/airlock") . ' ' . mode_owner("$r/etc/airlock/credentials"),
   '755 0:0 700 0:0', 'and the modes kept');

# the credentials "directory" is a link to another user's directory
$r = root_with('link');
make_path("$r/etc/airlock", "$r/home/someone/secrets");
chown $nobody, $nobody, "$r/home/someone/secrets";
symlink('/home/someone/secrets', "$r/etc/airlock/credentials") or die;
($rc, $out) = run_in($r, 'sh /preinst install');
isnt($rc, 0, 'preinst refuses a credentials directory that is a link');
like($out, qr{/etc/airlock/credentials is not a directory of its own},
     'and says why');
is(mode_owner("$r/home/someone/secrets"), "755 $nobody:$nobody",
   'the link\'s target is left alone');

# a file in its place
$r = root_with('file');
make_path("$r/etc/airlock");
open my $fh, '>', "$r/etc/airlock/credentials" or die;
close $fh;
($rc, $out) = run_in($r, 'sh /preinst install');
isnt($rc, 0, 'preinst refuses a credentials file in place of the directory');

# a first install: nothing there, nothing made; the postinst makes it
$r = root_with('fresh');
($rc, $out) = run_in($r, 'sh /preinst install');
is($rc, 0, 'preinst install with no /etc/airlock') or diag($out);
ok(!-e "$r/etc/airlock", 'makes nothing');
make_path("$r/etc/airlock");
($rc, $out) = run_in($r, 'sh /postinst configure');
is($rc, 0, 'postinst configure') or diag($out);
is(mode_owner("$r/etc/airlock/credentials"), '700 0:0',
   'makes /etc/airlock/credentials, root\'s, 0700');

done_testing();
