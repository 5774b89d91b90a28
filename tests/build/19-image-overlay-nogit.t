#!/usr/bin/perl
# configure-root.sh copies, from a git checkout, only the files git
# tracks (tests/build/18-image-overlay.t).  A checkout whose files git
# cannot list (git not installed on the build host, or failing) was taken
# for a tree outside git and copied whole, a credential left in the
# overlay with it; it is refused instead, and nothing is laid.  A tree
# outside any checkout is still copied whole.  Run on a stand-in root,
# with chroot stubbed out and git a stub that fails as a missing one does.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;

my $top = Cwd::abs_path("$FindBin::Bin/../..");

my $t = tempdir(CLEANUP => 1);

sub write_file {
    my ($f, $text) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

mkdir "$t/bin";
write_file("$t/bin/chroot",
           "#!/bin/sh\necho \"chroot \$*\" >> $t/chroot.log\n");
write_file("$t/bin/git", "#!/bin/sh\necho 'git: not found' >&2\nexit 127\n");
chmod 0755, "$t/bin/chroot", "$t/bin/git";

sub stand_in_root {
    my ($root) = @_;
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
}

my $secret = 'etc/airlock/credentials/openai_key';

sub overlay {
    my ($dir) = @_;
    system("mkdir -p $dir && cp -R $top/appliance-image/root/. $dir") == 0
        or die "a copy of the overlay";
    mkdir "$dir/etc/airlock";
    mkdir "$dir/etc/airlock/credentials";
    write_file("$dir/$secret", "untracked\n");
}

sub configure {
    my ($root, $overlay) = @_;
    my $out = `PATH=$t/bin:\$PATH sh $top/appliance-image/configure-root.sh \\
        $root $overlay $top/conf 2>&1`;
    return ($? >> 8, $out);
}

# a checkout (a .git beside the overlay's folder) that git cannot list

stand_in_root("$t/root1");
mkdir "$t/repo";
mkdir "$t/repo/.git";
overlay("$t/repo/appliance-image/root");

my ($rc, $out) = configure("$t/root1", "$t/repo/appliance-image/root");
isnt($rc, 0, 'a checkout git cannot list: configure-root.sh fails');
like($out, qr/git checkout.*cannot list/s, 'and says why') or diag($out);
ok(!-e "$t/root1/$secret", 'the file git was not asked about is not in '
   . 'the root');
ok(!-e "$t/root1/etc/nginx/conf.d", 'nothing of the overlay is laid');

# a tree outside any checkout: copied whole, as before

stand_in_root("$t/root2");
overlay("$t/plain/appliance-image/root");

($rc, $out) = configure("$t/root2", "$t/plain/appliance-image/root");
is($rc, 0, 'a tree outside git: configure-root.sh runs') or diag($out);
ok(-e "$t/root2/etc/nginx/conf.d/airlock.conf", 'its overlay is laid');

done_testing();
