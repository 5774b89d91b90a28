#!/usr/bin/perl
# configure-root.sh lays the overlay (appliance-image/root) over the
# image's root.  From a git checkout only the files git tracks are laid:
# an editor's copy or a credential left in the overlay to try an image
# out must not reach an image that is handed out.  Those it copies keep
# the modes the image needs (0644, 0755, directories 0755) from a
# checkout made under umask 077.  Run on a stand-in root, with chroot
# stubbed out, as tests/image/00-units.t runs it; no image is built.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

need_cmd('git');

my $t = tempdir(CLEANUP => 1);
my $root = "$t/root";

sub write_file {
    my ($f, $text) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

mkdir "$t/bin";
write_file("$t/bin/chroot",
           "#!/bin/sh\necho \"chroot \$*\" >> $t/chroot.log\n");
chmod 0755, "$t/bin/chroot";
for my $d ('', qw(/etc /etc/redis /etc/systemd /etc/systemd/system
                  /etc/nginx /usr /usr/lib))
{
    mkdir "$root$d";
    chmod 0755, "$root$d";
}
write_file("$root/etc/redis/redis.conf",
           "# unixsocket /run/redis-server/redis-server.sock\n"
           . "# unixsocketperm 700\nport 6379\nappendonly no\n"
           . "appendfsync everysec\n");

# a git checkout of the overlay, made under umask 077, with files git
# does not track beside the tracked ones
my $repo = "$t/repo";
my $overlay = "$repo/appliance-image/root";
system("mkdir -p $repo/appliance-image && cp -R $top/appliance-image/root "
       . "$overlay && chmod -R go-rwx $repo && git -C $repo init -q "
       . "&& git -C $repo add -A") == 0 or die "a git copy of the overlay";
my @untracked = ('etc/airlock/credentials/openai_key',
                 'etc/systemd/system/airlock-ready.service~',
                 'usr/lib/airlock/local-debug');
mkdir "$overlay/etc/airlock";
mkdir "$overlay/etc/airlock/credentials";
write_file("$overlay/$_", "untracked\n") for @untracked;

my $out = `PATH=$t/bin:\$PATH sh $top/appliance-image/configure-root.sh \\
    $root $overlay $top/conf 2>&1`;
is($? >> 8, 0, 'configure-root.sh on a stand-in root') or diag($out);

for my $f (@untracked) {
    ok(!-e "$root/$f", "/$f, which git does not track, is not in the root");
    like($out, qr/\Q$f\E/, "and configure-root.sh says it left it out");
}
ok(!-e "$root/etc/airlock", 'nor the directories only they are in');

my @tracked = split /\n/, `git -C $overlay ls-files -c .`;
ok(@tracked, scalar(@tracked) . ' files git tracks in the overlay');
my @missing = grep { !-f "$root/$_" } @tracked;
is("@missing", '', 'each of them is in the root');

my %want = ('' => 0755, '/etc' => 0755, '/usr/lib' => 0755,
            '/etc/nginx/conf.d' => 0755,
            '/etc/nginx/conf.d/airlock.conf' => 0644,
            '/etc/systemd/network' => 0755,
            '/etc/systemd/system/airlock-credentials.service' => 0644,
            '/usr/lib/airlock' => 0755,
            '/usr/lib/airlock/placeholder-credentials' => 0755,
            '/usr/lib/airlock/selftest' => 0755);
my @bad = grep { (((stat "$root$_")[2] // 0) & 07777) != $want{$_} }
          sort keys %want;
is("@bad", '', 'from a checkout made under umask 077, the root\'s own '
   . 'directories keep their modes, and the overlay\'s files and '
   . 'directories are readable by all (0644, 0755)')
    or diag(join ' ', map { sprintf '%s %04o', $_ || '/',
                            ((stat "$root$_")[2] // 0) & 07777 } @bad);

done_testing();
