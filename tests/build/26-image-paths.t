#!/usr/bin/perl
# appliance-image/build.sh writes the packages', the sandboxes' root's and
# its own directory's paths into the customize hooks mmdebstrap runs with
# "sh -c": a path with a space in it was split there (the image failed to
# build, or was built without a part), and one with "$(...)" in it ran as
# shell.  The paths now reach the hooks in the environment.
#
# mmdebstrap is a stub that runs the hooks as mmdebstrap does (a shell
# hook with "sh -c HOOK exec ROOT", "upload" and the other special hooks
# split with shellwords), with a stub chroot; build.sh is run from a copy
# of appliance-image/ whose configure-root.sh is a stub that records its
# arguments.  No image is built.
#
# The sandboxes' root is copied without what would give the appliance's
# local users more than they have: its device nodes (mmdebstrap's
# /dev/console is 0666), FIFOs, set-user-ID and set-group-ID bits, and
# write access for others (its /tmp was 1777).

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
    my ($f, $text, $mode) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
    chmod $mode, $f if defined $mode;
}

sub read_file {
    my ($f) = @_;
    open my $fh, '<', $f or return undef;
    local $/;
    return scalar <$fh>;
}

# every directory the build reads from has a space, a quote and a "$(...)"
my $odd = "a b 'q' \$(touch PWNED)";
my $tree = "$t/tree $odd";
my $debs = "$t/debs $odd";
my $rootfs = "$t/rootfs $odd";
my $out = "$t/out";

for my $d ("$t/bin", "$tree", "$tree/appliance-image",
           "$tree/appliance-image/root", "$tree/conf", $debs,
           $rootfs, "$rootfs/usr", "$rootfs/usr/bin") {
    mkdir $d or die "$d: $!";
}
write_file("$rootfs/usr/bin/python3", "", 0755);
write_file("$rootfs/.built", "");

# what mmdebstrap leaves in the sandboxes' root that the appliance's
# local users must not get: a device node (as root only), a FIFO, a
# set-user-ID program, a directory any user may write
for my $d ("$rootfs/dev", "$rootfs/tmp", "$rootfs/usr/sbin") {
    mkdir $d or die "$d: $!";
}
my $mknod = $> == 0
            && system('mknod', '-m', '0666', "$rootfs/dev/console", 'c',
                      '5', '1') == 0;
system('mkfifo', "$rootfs/dev/initctl") == 0 or die 'mkfifo';
write_file("$rootfs/usr/sbin/setuid", "", 0755);
chmod 04755, "$rootfs/usr/sbin/setuid" or die;
chmod 01777, "$rootfs/tmp" or die;

system('cp', "$top/appliance-image/build.sh", "$tree/appliance-image/")
    == 0 or die "cp build.sh";
write_file("$tree/appliance-image/configure-root.sh", <<'EOF', 0755);
#!/bin/sh
printf '%s\n' "$@" > "$1/configure-root.args"
EOF

write_file("$t/bin/chroot", <<'EOF', 0755);
#!/bin/sh
printf '%s\n' "$@" > "$1/chroot.args"
EOF

write_file("$t/bin/mmdebstrap", <<'EOF', 0755);
#!/usr/bin/perl
use strict;
use warnings;
use Text::ParseWords qw(shellwords);
my @hooks;
my @rest;
for (@ARGV) {
    if (/^--customize-hook=(.*)\z/s) { push @hooks, $1 }
    elsif (!/^--/) { push @rest, $_ }
}
my $root = $rest[1];
system('mkdir', '-p', "$root/etc") == 0 or exit 1;
for my $h (@hooks) {
    if ($h =~ /^(copy-in|upload|tar-in|sync-in)\s/) {
        my ($cmd, @args) = shellwords($h);
        my $in = pop @args;
        if ($cmd ne 'upload' || @args != 1) {
            print STDERR "$cmd: wrong arguments\n";
            exit 1;
        }
        system('cp', $args[0], "$root$in") == 0 or exit 1;
    } else {
        system('sh', '-c', $h, 'exec', $root) == 0 or exit 1;
    }
}
EOF

for my $name (qw(libnginx-mod-http-airlock airlock)) {
    my $p = "$t/pkg-$name";
    system('mkdir', '-p', "$p/DEBIAN") == 0 or die "mkdir";
    write_file("$p/DEBIAN/control",
               "Package: $name\nVersion: 1.0\nArchitecture: all\n"
               . "Maintainer: t <t\@example.org>\nDepends: nginx\n"
               . "Description: t $name\n");
    system("dpkg-deb -b -Zgzip '$p' $t/$name.deb >/dev/null") == 0
        or die "dpkg-deb -b";
    system('mv', "$t/$name.deb", "$debs/${name}_1.0_all.deb") == 0
        or die "mv";
}

sub build {
    my ($debs_dir, $out_dir) = @_;
    my $pid = open(my $fh, '-|');
    defined $pid or die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>&', \*STDOUT or die;
        chdir $t or die;
        $ENV{PATH} = "$t/bin:$ENV{PATH}";
        exec 'sh', "$tree/appliance-image/build.sh", '--debs', $debs_dir,
             '--rootfs', $rootfs, '--out', $out_dir, '--root-only';
        die "exec: $!";
    }
    my $text = do { local $/; <$fh> };
    close $fh;
    return ($? >> 8, $text . (read_file("$out_dir/mmdebstrap.log") // ''));
}

my ($rc, $text) = build($debs, $out);
is($rc, 0, 'build.sh succeeds with spaces, quotes and $(...) in its paths')
    or diag($text);

my $r = "$out/root";
for my $name (qw(libnginx-mod-http-airlock airlock)) {
    my $got = `dpkg-deb -f "$r/tmp/airlock-debs/$name.deb" Description 2>&1`;
    like($got, qr/^t \Q$name\E$/, "$name.deb is uploaded as itself");
}
is(read_file("$r/chroot.args"),
   "$r\ndpkg\n-i\n/tmp/airlock-debs/libnginx-mod-http-airlock.deb\n"
   . "/tmp/airlock-debs/airlock.deb\n",
   'and installed with dpkg -i in the root');
ok(-f "$r/usr/lib/airlock/sandbox-rootfs/usr/bin/python3",
   'the sandboxes\' root is copied in');
ok(!-e "$r/usr/lib/airlock/sandbox-rootfs/.built",
   'without its build mark');
my $sr = "$r/usr/lib/airlock/sandbox-rootfs";
SKIP: {
    skip 'a device node needs root', 1 unless $mknod;
    ok(!-e "$sr/dev/console" && !-l "$sr/dev/console",
       'without its device nodes (/dev/console, 0666)');
}
ok(!-e "$sr/dev/initctl", 'nor FIFOs');
ok(-d "$sr/dev", 'its /dev kept, empty (the sandboxes mount theirs)');
ok(-f "$sr/usr/sbin/setuid" && !((stat _)[2] & 06000),
   'no set-user-ID or set-group-ID bit');
is(sprintf('%o', (stat "$sr/tmp")[2] & 0022), '0',
   'no directory others may write (its /tmp was 1777)');
is(read_file("$r/configure-root.args"),
   "$r\n$tree/appliance-image/root\n$tree/conf\n",
   'configure-root.sh is given the root, the overlay and conf/ whole');

# the packages from a plain path, so that the hooks after theirs run
mkdir "$t/debs" or die;
for my $name (qw(libnginx-mod-http-airlock airlock)) {
    system('cp', "$debs/${name}_1.0_all.deb", "$t/debs/") == 0 or die "cp";
}
($rc, $text) = build("$t/debs", "$t/out2");
my @pwned = grep { -e $_ } ("$t/PWNED", "$t/out2/root/PWNED", "$tree/PWNED");
is_deeply(\@pwned, [], 'no "$(...)" in a path ran as shell') or diag($text);
is($rc, 0, 'and that build succeeds too') or diag($text);

done_testing();
