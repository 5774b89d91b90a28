#!/usr/bin/perl
# /usr/lib/airlock/redis-maxmemory runs as root with every capability
# (redis-server.service's ExecStartPre=+) and writes into Redis's own
# runtime directory, /run/redis, which Redis may write and which
# outlives its restarts: what Redis (or whoever runs as it) leaves there
# is found by the next start.  A link at the temporary name it used
# (OUT.tmp) to another file had that file overwritten by root; a link at
# OUT to a directory had the file moved into that directory.  Neither
# may happen: the file is made under a name of its own, by an open that
# follows no link, and replaces OUT, a link there included, as a file.
# A directory at OUT is refused, written nowhere.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $gen = "$top/appliance-image/root/usr/lib/airlock/redis-maxmemory";
my $t = tempdir(CLEANUP => 1);
my $want = "maxmemory 1073741824\nmaxmemory-policy noeviction\n";

sub spew {
    my ($f, $s) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $s;
    close $fh or die "$f: $!";
}

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return undef;
    local $/;
    return scalar <$fh>;
}

# its exit status and stderr, OUT being DIR/out, for 4 GiB
sub run_in {
    my ($dir) = @_;
    local $ENV{AIRLOCK_REDIS_MAXMEMORY};
    delete $ENV{AIRLOCK_REDIS_MAXMEMORY};
    my $err = `sh $gen --meminfo $t/meminfo $dir/out 2>&1`;
    return ($? >> 8, $err);
}

spew("$t/meminfo", "MemTotal:       4194304 kB\n");

# a link at OUT.tmp to a file of someone else's
mkdir "$t/a";
mkdir "$t/victim";
spew("$t/victim/file", "not Redis's\n");
symlink("$t/victim/file", "$t/a/out.tmp") or die $!;
my ($rc, $err) = run_in("$t/a");
is($rc, 0, 'a link at OUT.tmp: written') or diag($err);
is(slurp("$t/victim/file"), "not Redis's\n",
   'the file the link leads to is not written');
is(slurp("$t/a/out"), $want, 'OUT holds the bound');
ok(-f "$t/a/out" && !-l "$t/a/out", 'OUT is a file of its own');
is(sprintf('%04o', (stat "$t/a/out")[2] & 07777), '0644',
   'OUT is 0644: Redis reads it');

# a link at OUT.tmp that leads nowhere yet: nothing made where it leads
mkdir "$t/b";
symlink("$t/victim/new", "$t/b/out.tmp") or die $!;
($rc, $err) = run_in("$t/b");
is($rc, 0, 'a dangling link at OUT.tmp: written') or diag($err);
ok(!-e "$t/victim/new", 'nothing made where the link leads');
is(slurp("$t/b/out"), $want, 'OUT holds the bound');

# a link at OUT to a directory
mkdir "$t/c";
mkdir "$t/elsewhere";
symlink("$t/elsewhere", "$t/c/out") or die $!;
($rc, $err) = run_in("$t/c");
is($rc, 0, 'a link at OUT to a directory: written') or diag($err);
opendir my $dh, "$t/elsewhere" or die $!;
my @in = grep { !/^\.\.?$/ } readdir $dh;
closedir $dh;
is("@in", '', 'nothing moved into the directory the link leads to');
ok(-f "$t/c/out" && !-l "$t/c/out", 'the link replaced by a file');
is(slurp("$t/c/out"), $want, 'which holds the bound');

# a link at OUT to a file: replaced, the file untouched
mkdir "$t/d";
spew("$t/victim/other", "not Redis's either\n");
symlink("$t/victim/other", "$t/d/out") or die $!;
($rc, $err) = run_in("$t/d");
is($rc, 0, 'a link at OUT to a file: written') or diag($err);
is(slurp("$t/victim/other"), "not Redis's either\n",
   'the file is not written');
ok(-f "$t/d/out" && !-l "$t/d/out", 'the link replaced by a file');

# a directory at OUT: refused, nothing left behind
mkdir "$t/e";
mkdir "$t/e/out";
($rc, $err) = run_in("$t/e");
is($rc, 1, 'a directory at OUT: refused');
like($err, qr/^redis-maxmemory: \S/m, 'saying why') or diag($err);
opendir $dh, "$t/e" or die $!;
@in = sort grep { !/^\.\.?$/ } readdir $dh;
closedir $dh;
is("@in", 'out', 'no temporary file left');
opendir $dh, "$t/e/out" or die $!;
@in = grep { !/^\.\.?$/ } readdir $dh;
closedir $dh;
is("@in", '', 'nothing written into the directory');

done_testing();
