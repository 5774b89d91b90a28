#!/usr/bin/perl
# appliance-image/build.sh unpacks the root in OUT/root and removed
# whatever stood there first: "--out /" removed /root, "--out ~" a home's
# root/ directory, with everything in them.  It now removes OUT/root only
# when OUT/.root-by-build.sh says an earlier run unpacked it, and refuses
# otherwise.  mmdebstrap is a stub that makes the directory it is given;
# the packages are empty ones made here; no image is built.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

need_cmd('dpkg-deb');

my $t = tempdir(CLEANUP => 1);

sub write_file {
    my ($f, $text) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

# the stub makes its target (the argument after the suite) and a file
mkdir "$t/bin";
write_file("$t/bin/mmdebstrap", <<'EOF');
#!/bin/sh
while [ $# -gt 0 ] && [ "$1" != bookworm ]; do shift; done
shift
mkdir -p "$1" && touch "$1/unpacked"
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

sub build {
    my ($out) = @_;
    my $cmd = "PATH=$t/bin:\$PATH sh $top/appliance-image/build.sh "
              . "--debs $t/debs --rootfs $t/rootfs --out $out --root-only";
    my $text = `$cmd 2>&1`;
    return ($? >> 8, $text);
}

# an OUT whose root/ is someone's (as / or a home directory has one)
mkdir "$t/home";
mkdir "$t/home/root";
write_file("$t/home/root/.profile", "mine\n");

my ($rc, $text) = build("$t/home");
isnt($rc, 0, 'an OUT/root build.sh did not unpack: build.sh fails');
like($text, qr/\Q$t\E\/home\/root exists and is not a root this script unpacked/,
     'and says why') or diag($text);
ok(-f "$t/home/root/.profile", 'what was in it is still there');
ok(!-e "$t/home/root/unpacked", 'mmdebstrap is not run');

# a link named root is not followed nor removed
symlink("$t/home/root", "$t/link-out-root") or die "symlink";
mkdir "$t/link-out";
rename("$t/link-out-root", "$t/link-out/root") or die "rename";
($rc, $text) = build("$t/link-out");
isnt($rc, 0, 'an OUT/root that is a link: build.sh fails');
ok(-l "$t/link-out/root" && -f "$t/home/root/.profile",
   'the link and what it names are left');

# a new OUT: unpacked there, and a second run replaces its own root
($rc, $text) = build("$t/new");
is($rc, 0, 'a new OUT: the root is unpacked') or diag($text);
ok(-f "$t/new/root/unpacked" && -f "$t/new/.root-by-build.sh",
   'in OUT/root, marked as build.sh\'s');
write_file("$t/new/root/stale", "old\n");
($rc, $text) = build("$t/new");
is($rc, 0, 'a second run into the same OUT succeeds') or diag($text);
ok(!-e "$t/new/root/stale" && -f "$t/new/root/unpacked",
   'and replaces the root it unpacked before');

# a failed mmdebstrap leaves neither a root nor the mark: a root/ made
# there later is someone's, and refused
write_file("$t/bin/mmdebstrap", <<'EOF');
#!/bin/sh
while [ $# -gt 0 ] && [ "$1" != bookworm ]; do shift; done
shift
mkdir -p "$1" && touch "$1/half"
exit 1
EOF
($rc, $text) = build("$t/failed");
isnt($rc, 0, 'mmdebstrap fails: build.sh fails');
ok(!-e "$t/failed/root" && !-e "$t/failed/.root-by-build.sh",
   'and leaves no root and no mark');
mkdir "$t/failed/root";
write_file("$t/failed/root/mine", "mine\n");
($rc, $text) = build("$t/failed");
ok($rc != 0 && -f "$t/failed/root/mine",
   'a root/ made there later is refused, not removed') or diag($text);

done_testing();
