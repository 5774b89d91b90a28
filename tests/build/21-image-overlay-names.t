#!/usr/bin/perl
# configure-root.sh copies the files git tracks in the overlay
# (tests/build/18-image-overlay.t) by their exact names.  The list went
# to tar one name a line, as git prints it: a name git quotes (a tab, a
# quote, a backslash, a byte above 127, a newline) was looked for under
# its quoted form, and one starting with '-' was read by tar as an
# option; either was left out of the image without failing the build.
# Run on a stand-in root, with chroot stubbed out; no image is built.

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

# a git checkout of the overlay, with tracked files whose names git
# quotes or tar could read as options (a name at the overlay's top is a
# line of its own), some in directories so named
my $repo = "$t/repo";
my $overlay = "$repo/appliance-image/root";
system("mkdir -p $repo/appliance-image && cp -R $top/appliance-image/root "
       . "$overlay") == 0 or die "a copy of the overlay";
my @odd = ('usr/lib/airlock/-n', 'usr/lib/airlock/--files-from=x',
           'usr/lib/airlock/a b', "usr/lib/airlock/tab\tname",
           "usr/lib/airlock/caf\xc3\xa9", 'usr/lib/airlock/q"uote',
           'usr/lib/airlock/back\\slash', "usr/lib/airlock/new\nline",
           'usr/lib/airlock/[g]*?', "usr/lib/airlock/-d\nir/f",
           'usr/lib/airlock/-C', '-n', '--null', '-C', "-d\nir/-f");
for my $f (@odd) {
    mkdir "$overlay/$1" if $f =~ m{^(.*)/}s;
    write_file("$overlay/$f", "tracked: $f\n");
}
system("git -C $repo init -q && git -C $repo add -A") == 0
    or die "a git checkout of the overlay";

my $out = `PATH=$t/bin:\$PATH sh $top/appliance-image/configure-root.sh \\
    $root $overlay $top/conf 2>&1`;
is($? >> 8, 0, 'configure-root.sh on a stand-in root') or diag($out);

for my $f (@odd) {
    my $got = -f "$root/$f" ? do { local (@ARGV, $/) = "$root/$f"; <> }
            : undef;
    (my $show = $f) =~ s/([^ -~])/sprintf('\\x%02x', ord $1)/ge;
    is($got, "tracked: $f\n", "/$show is in the root, as tracked");
}
my $mode = ((stat "$root/usr/lib/airlock/-d\nir")[2] // 0) & 07777;
is(sprintf('%04o', $mode), '0755', 'a directory so named is 0755');

done_testing();
