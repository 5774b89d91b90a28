#!/usr/bin/perl
# The appliance image (appliance-image/build.sh) and the sandboxes' root
# file system (make worker-rootfs) are installed from bookworm,
# bookworm-updates and bookworm-security.  Both handed mmdebstrap one
# mirror URL, and mmdebstrap adds the updates and security suites only
# when it is given no mirror (mmdebstrap(1)): the image's nginx, OpenSSL,
# libcurl, Redis, runsc and kernel, and the sandboxes' Python and libssl,
# were bookworm's point release without its security fixes, and the
# image's sources.list had no bookworm-security line.  Now each gets the
# three suites as sources.list lines (which mmdebstrap also writes into
# the root), the security archive from --security-mirror (build.sh) or
# ROOTFS_SECURITY_MIRROR (the Makefile), deb.debian.org/debian-security
# by default.
#
# mmdebstrap is a stub that records its arguments (and leaves a python3
# where the worker-rootfs rule looks for one); no root is built.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

need_cmd(qw(dpkg-deb make));

plan(tests => 14);

# make test's own make flags are not the make run here's
delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES)};

my $t = tempdir(CLEANUP => 1);

my $debian = 'http://deb.debian.org/debian';
my $security = 'http://deb.debian.org/debian-security';

sub write_file {
    my ($f, $text) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

sub run {
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

# the stub: its arguments one a line; the second argument that is no
# option is the root, given a python3
mkdir "$t/bin";
write_file("$t/bin/mmdebstrap", <<"EOF");
#!/bin/sh
printf '%s\\n' "\$@" > $t/mmdebstrap.args
n=0
for a; do
    case "\$a" in
    -*) ;;
    *) n=\$((n + 1))
       if [ \$n = 2 ]; then
           mkdir -p "\$a/usr/bin" && touch "\$a/usr/bin/python3" \\
               && chmod 755 "\$a/usr/bin/python3" || exit 1
       fi ;;
    esac
done
EOF
chmod 0755, "$t/bin/mmdebstrap";
system("mkdir -p $t/rootfs/usr/bin && touch $t/rootfs/usr/bin/python3 "
       . "&& chmod 755 $t/rootfs/usr/bin/python3") == 0 or die "rootfs";

for my $name (qw(libnginx-mod-http-airlock airlock)) {
    my $p = "$t/pkg-$name";
    system("mkdir -p $p/DEBIAN $t/debs") == 0 or die "mkdir";
    write_file("$p/DEBIAN/control",
               "Package: $name\nVersion: 1.0\nArchitecture: all\n"
               . "Maintainer: t <t\@example.org>\nDepends: nginx\n"
               . "Description: t\n");
    system("dpkg-deb -b -Zgzip $p $t/debs/${name}_1.0_all.deb >/dev/null")
        == 0 or die "dpkg-deb -b";
}

# what mmdebstrap was given after its suite and its root: the mirrors
# (undef when it was not run)
sub mirrors {
    my ($suite) = @_;
    my (@args, $i);

    open my $fh, '<', "$t/mmdebstrap.args" or return undef;
    @args = map { chomp; $_ } <$fh>;
    close $fh;
    ($i) = grep { $args[$_] eq $suite } 0 .. $#args;
    return [] unless defined $i;
    return [ @args[$i + 2 .. $#args] ];
}

sub sources {
    my ($main, $sec) = @_;
    return [ "deb $main bookworm main", "deb $main bookworm-updates main",
             "deb $sec bookworm-security main" ];
}

sub image {
    my ($opts) = @_;
    unlink "$t/mmdebstrap.args";
    system("rm -rf $t/out");
    return run("PATH=$t/bin:\$PATH sh $top/appliance-image/build.sh "
               . "--debs $t/debs --rootfs $t/rootfs --out $t/out "
               . "--root-only $opts");
}

# the image, by default
my ($rc, $out) = image('');
is($rc, 0, 'build.sh --root-only with a stub mmdebstrap') or diag($out);
is_deeply(mirrors('bookworm'), sources($debian, $security),
          'the image: bookworm, bookworm-updates from deb.debian.org/debian,'
          . ' bookworm-security from deb.debian.org/debian-security')
    or diag(explain(mirrors('bookworm')));

# with its mirrors given
($rc, $out) = image('--mirror http://mirror.example/debian '
                    . '--security-mirror http://mirror.example/security');
is($rc, 0, 'build.sh --mirror URL --security-mirror URL') or diag($out);
is_deeply(mirrors('bookworm'),
          sources('http://mirror.example/debian',
                  'http://mirror.example/security'),
          'the image: the suites from the mirrors given')
    or diag(explain(mirrors('bookworm')));

# a mirror that would make another field or line of the sources.list
($rc, $out) = image("--security-mirror 'http://a.example/x "
                    . "bookworm-backports main'");
isnt($rc, 0, 'a mirror with a space in it is refused');
like($out, qr/is no mirror URL/, 'and build.sh says why') or diag($out);
ok(!defined mirrors('bookworm'), 'mmdebstrap is not run');
($rc, $out) = image("--mirror ''");
isnt($rc, 0, 'an empty mirror is refused') or diag($out);

($rc, $out) = run("sh $top/appliance-image/build.sh --help");
like($out, qr/--security-mirror URL.*\n.*bookworm-security/,
     'build.sh --help names --security-mirror') or diag($out);

# the sandboxes' root file system, as make worker-rootfs builds it
sub rootfs {
    my ($build, $vars) = @_;
    unlink "$t/mmdebstrap.args";
    return run("PATH=$t/bin:\$PATH make -s -C $top DEPS=true "
               . "BUILD=$t/$build $vars worker-rootfs");
}

($rc, $out) = rootfs('build1', '');
is($rc, 0, 'make worker-rootfs with a stub mmdebstrap') or diag($out);
is_deeply(mirrors('bookworm'), sources($debian, $security),
          'worker-rootfs: bookworm, bookworm-updates and bookworm-security')
    or diag(explain(mirrors('bookworm')));
ok(-x "$t/build1/worker-rootfs/usr/bin/python3", 'and the rule finished');

($rc, $out) = rootfs('build2', 'ROOTFS_MIRROR=http://mirror.example/debian '
                     . 'ROOTFS_SECURITY_MIRROR=http://mirror.example/security');
is($rc, 0, 'make worker-rootfs ROOTFS_MIRROR=... ROOTFS_SECURITY_MIRROR=...')
    or diag($out);
is_deeply(mirrors('bookworm'),
          sources('http://mirror.example/debian',
                  'http://mirror.example/security'),
          'worker-rootfs: the suites from the mirrors given')
    or diag(explain(mirrors('bookworm')));
