#!/usr/bin/perl
# appliance-image/build.sh --debs DIR installs one
# libnginx-mod-http-airlock and one airlock package from DIR.  Of
# several, it took the last of each by name, and 0.9.0 sorts after
# 0.10.0: the image got the older version without a word (or a module
# and a package of different versions, which dpkg -i refuses in the root
# after the root is made).  Several, or two versions, are refused now,
# before mmdebstrap runs.  mmdebstrap is a stub that records what it was
# given; the packages are empty ones made here; no image is built.

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

sub run {
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

sub write_file {
    my ($f, $text) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

mkdir "$t/bin";
# the stub records its arguments and the packages' paths the hooks are
# given in the environment
write_file("$t/bin/mmdebstrap",
           "#!/bin/sh\nprintf '%s\\n' \"\$@\" > $t/mmdebstrap.args\n"
           . "printf 'pkg=%s\\nmod=%s\\n' \"\$AIRLOCK_IMAGE_PKG\" "
           . "\"\$AIRLOCK_IMAGE_MOD\" >> $t/mmdebstrap.args\n");
chmod 0755, "$t/bin/mmdebstrap";
system("mkdir -p $t/rootfs/usr/bin && touch $t/rootfs/usr/bin/python3 "
       . "&& chmod 755 $t/rootfs/usr/bin/python3") == 0 or die "rootfs";

# an empty package NAME of VERSION in DIR
sub deb {
    my ($dir, $name, $version) = @_;
    my $p = "$t/pkg-$name-$version";
    system("mkdir -p $p/DEBIAN $dir") == 0 or die "mkdir";
    write_file("$p/DEBIAN/control",
               "Package: $name\nVersion: $version\nArchitecture: all\n"
               . "Maintainer: t <t\@example.org>\nDepends: nginx\n"
               . "Description: t\n");
    system("dpkg-deb -b -Zgzip $p $dir/${name}_${version}_all.deb "
           . ">/dev/null") == 0 or die "dpkg-deb -b";
}

sub build {
    my ($dir) = @_;
    unlink "$t/mmdebstrap.args";
    my @r = run("PATH=$t/bin:\$PATH sh $top/appliance-image/build.sh "
                . "--debs $dir --rootfs $t/rootfs --out $t/out --root-only");
    my $args = -f "$t/mmdebstrap.args" ? `cat $t/mmdebstrap.args` : undef;
    return (@r, $args);
}

# two versions of each
for my $v (qw(0.9.0 0.10.0)) {
    deb("$t/two", $_, $v) for qw(libnginx-mod-http-airlock airlock);
}
my ($rc, $out, $args) = build("$t/two");
isnt($rc, 0, 'two versions of each package: build.sh fails');
like($out, qr/2 libnginx-mod-http-airlock packages in \Q$t\E\/two: leave one/,
     'and says why') or diag($out);
ok(!defined $args, 'mmdebstrap is not run')
    or diag("it was given " . join(' ', grep { /\.deb/ } split /\n/, $args));

# a module of another version than the package
deb("$t/mixed", 'libnginx-mod-http-airlock', '0.9.0');
deb("$t/mixed", 'airlock', '0.10.0');
($rc, $out, $args) = build("$t/mixed");
isnt($rc, 0, 'a module of another version than the package: build.sh fails');
like($out, qr/is not of .*airlock_0\.10\.0_all\.deb's version \(0\.10\.0\)/,
     'and says why') or diag($out);
ok(!defined $args, 'mmdebstrap is not run');

# one of each
deb("$t/one", $_, '0.10.0') for qw(libnginx-mod-http-airlock airlock);
($rc, $out, $args) = build("$t/one");
is($rc, 0, 'one of each: build.sh makes the root') or diag($out);
like($args // '', qr{^pkg=\Q$t\E/one/airlock_0\.10\.0_all\.deb$}m,
     'with the package');
like($args // '',
     qr{^mod=\Q$t\E/one/libnginx-mod-http-airlock_0\.10\.0_all\.deb$}m,
     'and the module');

# none
mkdir "$t/none";
($rc, $out, $args) = build("$t/none");
isnt($rc, 0, 'no package: build.sh fails');
like($out, qr/no Airlock packages in/, 'and says why') or diag($out);

done_testing();
