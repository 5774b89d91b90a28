package Airlock::MiniRoot;

# A root file system of a few of this machine's programs, to run a
# package's maintainer script in (chroot) against files a test lays out,
# without installing anything here:
#
#   use Airlock::MiniRoot qw(mini_root);
#   mini_root($dir, qw(sh rm rmdir grep));
#
# Each program is copied to the same path it has here, with the shared
# libraries ldd names for it; /etc/passwd and /etc/group are copied too
# (root's name for install -o and chown), and /dev/null is made.  Needs
# root to chroot into.

use strict;
use warnings;

use Exporter qw(import);
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Path qw(make_path);

our @EXPORT_OK = qw(mini_root);


sub put {
    my ($root, $path) = @_;

    return if -e "$root$path";
    make_path(dirname("$root$path"));
    copy($path, "$root$path") or die "copy $path to $root: $!";
    chmod((stat $path)[2] & 07777, "$root$path");
}


sub mini_root {
    my ($root, @cmds) = @_;

    for my $cmd (@cmds) {
        my ($path) = grep { -x "$_/$cmd" } split /:/, $ENV{PATH};
        die "mini_root: $cmd not found" unless $path;
        $path = "$path/$cmd";
        put($root, $path);
        # the same program under /bin and /usr/bin (a merged /usr here
        # or not), where a script names it
        for my $d ('/bin', '/usr/bin') {
            put($root, "$d/$cmd") if -x "$d/$cmd";
        }
        for (`ldd $path 2>/dev/null`) {
            put($root, $1) if m{(/\S+)\s+\(0x};
        }
    }
    make_path("$root/etc", "$root/tmp", "$root/dev");
    put($root, $_) for qw(/etc/passwd /etc/group);
    system('mknod', '-m', '666', "$root/dev/null", 'c', '1', '3') == 0
        or die "mknod $root/dev/null failed"
        unless -e "$root/dev/null";
}

1;
