#!/usr/bin/perl
# conf/airlock-redis-users writes Redis's ACL file, as root, into a
# directory Redis may write (Debian's /etc/redis, 2770 redis:redis), at
# every boot before Redis starts.  It made the file at a fixed name,
# ACLFILE.tmp, with the shell's noclobber, which refuses a regular file
# found there but opens anything else as it is: a FIFO Redis left there
# (or a link to one) blocked root's open for ever, and Redis, which
# waits for the unit, never started; a device had the ACL written into
# it, and was then moved into place as the ACL file; a directory failed
# the unit.  Now it writes only a new regular file it made itself, under
# a name no one knows beforehand, and gives it its group through the
# file it opened, not by its name.  Here Redis's part is played by a sed
# and an rm on PATH that leave such a thing at ACLFILE.tmp (sed before
# it runs the real one, rm after: the old script removed the name, then
# opened it, and Redis could put it back in between), and by a chgrp
# and a perl on PATH (what gives the file its group: by its name then,
# through the open file now) that put a link to another file in place
# of every temporary file in the directory before they run the real
# one.

use strict;
use warnings;
use Cwd ();
use Fcntl qw(O_RDWR O_RDONLY O_NONBLOCK);
use FindBin;
use File::Temp qw(tempdir);
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);
use Airlock::Bounded qw(run_bounded);

absent('a device node and the ACL file\'s group need root') if $> != 0;
need_cmd(qw(sed sha256sum chgrp perl mkfifo mknod));

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $t = tempdir(CLEANUP => 1);
my $gen = "$top/conf/airlock-redis-users";
my $tpl = "$top/conf/redis-acl.conf";

my ($real_sed) = grep { -x } map { "$_/sed" } split /:/, $ENV{PATH};
my ($real_chgrp) = grep { -x } map { "$_/chgrp" } split /:/, $ENV{PATH};
my ($real_rm) = grep { -x } map { "$_/rm" } split /:/, $ENV{PATH};
my ($real_perl) = grep { -x } map { "$_/perl" } split /:/, $ENV{PATH};

sub spew {
    my ($f, $s, $mode) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $s;
    close $fh or die "$f: $!";
    chmod $mode, $f if defined $mode;
}

# (a FIFO is not waited on)
sub slurp {
    my ($f) = @_;
    sysopen my $fh, $f, O_RDONLY | O_NONBLOCK or return undef;
    local $/;
    return scalar <$fh>;
}

sub listing {
    my ($d) = @_;
    opendir my $dh, $d or die "$d: $!";
    my @in = sort grep { !/^\.\.?$/ } readdir $dh;
    closedir $dh;
    return "@in";
}

# what is in the FIFO FH now, without waiting
sub drain {
    my ($fh) = @_;
    my ($got, $buf) = ('', '');
    $got .= $buf while sysread($fh, $buf, 65536);
    return $got;
}

my $victim_gid = (stat $t)[5];
my ($group) = grep { defined getgrnam($_) && getgrnam($_) != $victim_gid }
    qw(nogroup daemon);
absent('no group other than root\'s (nogroup, daemon)') unless $group;
my $gid = getgrnam($group);

spew("$t/victim", "FAKE-worker-password\n", 0600);

# runs the script with PATH's sed and rm doing HOOK's plant too (and
# chgrp and perl HOOK's group), ACLFILE DIR/users.acl; its exit status
# (-1: still running after a minute, then killed) and output
my $n = 0;
sub run_with {
    my ($dir, %hook) = @_;
    my $bin = "$t/bin" . $n++;
    mkdir $bin or die $!;
    if ($hook{plant}) {
        spew("$bin/sed",
             "#!/bin/sh\n$hook{plant}\nexec $real_sed \"\$@\"\n", 0755);
        spew("$bin/rm", "#!/bin/sh\n$real_rm \"\$@\"\nst=\$?\n"
             . "$hook{plant}\nexit \$st\n", 0755);
    }
    if ($hook{group}) {
        spew("$bin/chgrp",
             "#!/bin/sh\n$hook{group}\nexec $real_chgrp \"\$@\"\n", 0755);
        spew("$bin/perl",
             "#!/bin/sh\n$hook{group}\nexec $real_perl \"\$@\"\n", 0755);
    }
    return run_bounded(60, sub { $ENV{PATH} = "$bin:$ENV{PATH}"; },
                       $gen, '--acl-group', $group, $tpl, "$dir/users.acl",
                       "$t/agent.pass", "$t/worker.pass");
}

# ACLFILE afterwards: a regular file of the script's, the users in it,
# 0640 and the group given
sub acl_ok {
    my ($dir, $what) = @_;
    my $acl = "$dir/users.acl";
    ok(!-l $acl && -f $acl, "$what: the ACL file is a regular file");
    like(slurp($acl) // '', qr/^user airlock-agent on #[0-9a-f]{64} /m,
         "$what: with the users in it");
    my @st = lstat $acl;
    is(@st ? sprintf('%04o', $st[2] & 07777) : '', '0640',
       "$what: mode 0640");
    is($st[5], $gid, "$what: group $group");
}

# ---- a FIFO at ACLFILE.tmp that someone reads: nothing written into it
my $d = "$t/a";
mkdir $d or die;
POSIX::mkfifo("$t/fifo-a", 0600) or die "mkfifo: $!";
sysopen my $fa, "$t/fifo-a", O_RDWR | O_NONBLOCK or die $!;
my ($rc, $out) = run_with($d, plant => "ln -f $t/fifo-a $d/users.acl.tmp");
is($rc, 0, 'a FIFO at ACLFILE.tmp: written') or diag($out);
is(drain($fa), '', 'nothing written into the FIFO');
acl_ok($d, 'a FIFO at ACLFILE.tmp');
is(listing($d), 'users.acl users.acl.tmp',
   'no temporary file left, the FIFO where it was');

# ---- a FIFO no one reads: root's open of it would never return
$d = "$t/b";
mkdir $d or die;
($rc, $out) = run_with($d, plant => "mkfifo $d/users.acl.tmp 2>/dev/null");
is($rc, 0, 'a FIFO no one reads at ACLFILE.tmp: written, not blocked')
    or diag($rc == -1 ? 'still running after a minute' : $out);
acl_ok($d, 'a FIFO no one reads');

# ---- a link at ACLFILE.tmp to a FIFO elsewhere, which someone reads
$d = "$t/c";
mkdir $d or die;
POSIX::mkfifo("$t/fifo-c", 0600) or die "mkfifo: $!";
sysopen my $fc, "$t/fifo-c", O_RDWR | O_NONBLOCK or die $!;
($rc, $out) = run_with($d, plant => "ln -sfn $t/fifo-c $d/users.acl.tmp");
is($rc, 0, 'a link to a FIFO at ACLFILE.tmp: written') or diag($out);
is(drain($fc), '', 'nothing written into the FIFO it leads to');
acl_ok($d, 'a link to a FIFO');
ok(-p "$t/fifo-c", 'the FIFO is where it was');

# ---- a device at ACLFILE.tmp (as /dev/null)
$d = "$t/d";
mkdir $d or die;
($rc, $out) = run_with($d, plant => "mknod $d/users.acl.tmp c 1 3 "
                       . "2>/dev/null; chmod 0666 $d/users.acl.tmp");
is($rc, 0, 'a device at ACLFILE.tmp: written') or diag($out);
acl_ok($d, 'a device at ACLFILE.tmp');
ok(-c "$d/users.acl.tmp", 'the device is where it was, not the ACL file');

# ---- a directory at ACLFILE.tmp, there before or put there meanwhile
for my $when (qw(before meanwhile)) {
    $d = "$t/e-$when";
    mkdir $d or die;
    mkdir "$d/users.acl.tmp" or die if $when eq 'before';
    ($rc, $out) = run_with($d, $when eq 'before' ? ()
                           : (plant => "mkdir -p $d/users.acl.tmp"));
    is($rc, 0, "a directory at ACLFILE.tmp ($when): written") or diag($out);
    acl_ok($d, "a directory at ACLFILE.tmp ($when)");
    is(listing("$d/users.acl.tmp"), '', 'nothing written into it');
}

# ---- the temporary file replaced by a link before its group is given
$d = "$t/f";
mkdir $d or die;
($rc, $out) = run_with($d, group => "for f in $d/*.tmp; do [ -f \"\$f\" ] "
                       . "&& ln -sfn $t/victim \"\$f\" && : > $t/swapped; "
                       . "done");
is($rc, 0, 'the temporary file replaced by a link: the script ends')
    or diag($out);
ok(-e "$t/swapped", 'the temporary file was replaced');
my @st = stat "$t/victim";
is($st[5], $victim_gid, 'the link\'s target keeps its group');
is(sprintf('%04o', $st[2] & 07777), '0600', 'and its mode');
is(slurp("$t/victim"), "FAKE-worker-password\n", 'and its contents');

done_testing();
