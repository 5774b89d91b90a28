#!/usr/bin/perl
# make deb and the image's overlay copy (configure-root.sh) take only the
# files git tracks.  A copy of Airlock that is no checkout of its own but
# lies inside another git repository (a tarball unpacked in a dotfiles
# repository) was listed by that repository, which tracks none of it:
# make deb packaged an empty tree, the image got no overlay.  Both are
# refused now, with the repository named, and so is a git init without
# git add; a repository that tracks the copy in a subdirectory (a
# monorepo) is packaged from its files, by their exact names, and
# without the install layout (PREFIX, ...) the make was given.
# dpkg-buildpackage is a stub that records the tree it was run in; no
# package is built.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

need_cmd(qw(git tar));

# the make under test is not a sub-make of the one running the suite
delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES)};

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
write_file("$t/bin/dpkg-buildpackage",
           "#!/bin/sh\nfind . ! -type d -print0 > ../stub.list\n"
           . "env > ../stub.env\ntouch ../stub_0_all.deb\n");
write_file("$t/bin/chroot", "#!/bin/sh\nexit 0\n");
chmod 0755, "$t/bin/dpkg-buildpackage", "$t/bin/chroot";

my $git = 'git -c user.name=t -c user.email=t@example.org';

# the tree's tracked files, without .git, copied to DIR
sub tree {
    my ($dir) = @_;
    system("mkdir -p $dir && git -C $top ls-files -c -z | (cd $top && tar "
           . "-c --null --ignore-failed-read -T - -f - 2>/dev/null) "
           . "| tar -x -C $dir -f -") == 0 or die "a copy of the tree";
}

sub make_deb {
    my ($dir, $build) = @_;
    unlink "$build/deb/stub.list";
    return run("PATH=$t/bin:\$PATH make -s -C $dir DEPS=true BUILD=$build "
               . "deb");
}

sub stub_list {
    my ($build) = @_;
    open my $fh, '<', "$build/deb/stub.list" or return undef;
    local $/ = "\0";
    return [ map { chomp; s{^\./}{}r } <$fh> ];
}

# a dotfiles repository with an Airlock tarball unpacked in it

my $dot = "$t/dotfiles";
mkdir $dot;
write_file("$dot/.bashrc", "# mine\n");
system("cd $dot && git init -q && git add .bashrc && $git commit -qm home")
    == 0 or die "a dotfiles repository";
tree("$dot/src/airlock");

my ($rc, $out) = make_deb("$dot/src/airlock", "$t/b1");
isnt($rc, 0, 'a tree inside another repository: make deb fails');
like($out, qr/repository \Q$dot\E\) does not track the Makefile/,
     'and says which repository does not track it') or diag($out);
ok(!defined stub_list("$t/b1"), 'dpkg-buildpackage is not run');

my $overlay = "$dot/src/airlock/appliance-image/root";
for my $d ('', qw(/etc /etc/redis /etc/nginx)) {
    mkdir "$t/root$d";
}
write_file("$t/root/etc/redis/redis.conf",
           "# unixsocket /run/redis-server/redis-server.sock\n"
           . "# unixsocketperm 700\nport 6379\nappendonly no\n"
           . "appendfsync everysec\n");
($rc, $out) = run("PATH=$t/bin:\$PATH sh $top/appliance-image/"
                  . "configure-root.sh $t/root $overlay $top/conf");
isnt($rc, 0, 'its overlay: configure-root.sh fails');
like($out, qr/\Q$dot\E, which tracks none of its files/,
     'and says which repository does not track it') or diag($out);
ok(!-e "$t/root/etc/nginx/conf.d", 'nothing of the overlay is laid');

# git init, no git add

tree("$t/fresh");
system("git -C $t/fresh init -q") == 0 or die "git init";
($rc, $out) = make_deb("$t/fresh", "$t/b2");
isnt($rc, 0, 'a git init without git add: make deb fails');
like($out, qr/does not track the Makefile/, 'and says why') or diag($out);
ok(!defined stub_list("$t/b2"), 'dpkg-buildpackage is not run');

# a monorepo that tracks the tree in a subdirectory, with tracked files
# whose names git quotes or tar could read as options

my $mono = "$t/mono";
tree("$mono/vendor/airlock");
my @odd = ('-C', '--null', "a b\tc", "caf\xc3\xa9", 'q"uote', "new\nline",
           '[g]*?', 'back\\slash');
write_file("$mono/vendor/airlock/$_", "tracked: $_\n") for @odd;
write_file("$mono/vendor/airlock/untracked-note", "not packaged\n");
system("cd $mono && git init -q && git add -A && git rm -q --cached "
       . "vendor/airlock/untracked-note") == 0 or die "a monorepo";
($rc, $out) = make_deb("$mono/vendor/airlock", "$t/b3");
is($rc, 0, 'a tree a monorepo tracks in a subdirectory: make deb')
    or diag($out);
my $list = stub_list("$t/b3") // [];
my %in = map { $_ => 1 } @$list;
ok($in{Makefile} && $in{'debian/control'} && $in{'policy/airlock.h'},
   'dpkg-buildpackage runs in a copy of its files');
ok(!$in{'untracked-note'}, 'but the one it does not track');
my @want = split /\0/, `git -C $mono/vendor/airlock ls-files -c -z`;
my @missing = grep { !$in{$_} } @want;
is(scalar(@missing), 0, "every file it tracks is in the copy (" . scalar(@want) . ")")
    or diag("missing: @missing");
for my $f (@odd) {
    my $p = "$t/b3/deb/src/$f";
    my $got = -f $p ? do { local (@ARGV, $/) = $p; <> } : undef;
    (my $show = $f) =~ s/([^ -~])/sprintf('\\x%02x', ord $1)/ge;
    is($got, "tracked: $f\n", "$show is copied by its exact name");
}

# the install layout the make was given is not the packages': it does
# not reach debian/rules' make install through the environment
($rc, $out) = run("PATH=$t/bin:\$PATH make -s -C $mono/vendor/airlock "
                  . "DEPS=true BUILD=$t/b4 deb PREFIX=/usr/local "
                  . "SYSTEMD_DIR=/usr/lib/systemd/system "
                  . "NGX_MOD_DIR=/opt/nginx/modules DESTDIR=/tmp/x");
is($rc, 0, 'make deb PREFIX=/usr/local ...') or diag($out);
my $env = -f "$t/b4/deb/stub.env" ? `cat $t/b4/deb/stub.env` : '';
my @leak = $env =~ /^(PREFIX|SYSTEMD_DIR|NGX_MOD_DIR|DESTDIR)=/mg;
is("@leak", '', 'dpkg-buildpackage does not get the layout it was given');

done_testing();
