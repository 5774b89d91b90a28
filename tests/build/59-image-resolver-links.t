#!/usr/bin/perl
# The image's drop-in for systemd-resolved
# (systemd-resolved.service.d/airlock.conf) sets modes as root, with
# full privileges ("+"), in resolved's runtime directory,
# /run/systemd/resolve, which resolved's user owns and may write: its
# varlink socket 0600 after the start.  chmod(1) follows a link: a link
# resolved's user put at the socket's name had root give 0600 to the
# file it leads to, anywhere (a program, a configuration, a directory),
# and a hard link to another's file there (which the kernel lets a user
# make of a file it may read and write) had that file's mode changed.
# Now no link is followed, nor another owner's file changed, and the
# unit fails.  The drop-in's commands are run in their order, as root,
# on a directory of the test's own owned by nobody (resolved's user),
# around what nobody leaves at the socket's name.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use IO::Socket::UNIX;
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $ov = "$top/appliance-image/root";
my $dropin = "$ov/etc/systemd/system/systemd-resolved.service.d/airlock.conf";

absent('a directory of another user\'s needs root') if $> != 0;
need_cmd(qw(systemd-tmpfiles stat));
my (undef, undef, $nuid, $ngid) = getpwnam('nobody')
    or absent('no user nobody');

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return '';
    local $/;
    return <$fh>;
}

(my $s = slurp($dropin)) =~ s/\\\n\s*/ /g;
my @pre = grep { !/^\s*#/ } $s =~ /^\s*ExecStartPre=(.*)$/mg;
my @post = grep { !/^\s*#/ } $s =~ /^\s*ExecStartPost=(.*)$/mg;
ok(@post && grep({ /io\.systemd\.Resolve/ } @post),
   'the drop-in sets the varlink socket\'s mode after the start');

my $t = tempdir(CLEANUP => 1);
chmod 0755, $t;

# CODE run as nobody, in a child
sub as_nobody {
    my ($code) = @_;
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        POSIX::setgid($ngid);
        $) = "$ngid $ngid";
        POSIX::setuid($nuid);
        POSIX::_exit($< == $nuid && $code->() ? 0 : 1);
    }
    waitpid $pid, 0;
    return $? == 0;
}

sub mode_of {
    my @st = lstat $_[0];
    return @st ? sprintf('%04o', $st[2] & 07777) : 'none';
}

# the drop-in's commands, in their order, on DIR as
# /run/systemd/resolve; each one's exit status, by its place (pre0,
# post0, post1, ...)
sub run_unit {
    my ($dir) = @_;
    my %rc;
    my @cmds = ((map { ["pre$_", $pre[$_]] } 0 .. $#pre),
                (map { ["post$_", $post[$_]] } 0 .. $#post));
    for my $c (@cmds) {
        (my $l = $c->[1]) =~ s{/run/systemd/resolve\b}{$dir}g;
        $l =~ s{/usr/lib/airlock/}{$ov/usr/lib/airlock/}g;
        $l =~ s/^[-+!:@]+//;
        $rc{$c->[0]} = system("exec @{[split ' ', $l]} 2>/dev/null") >> 8;
    }
    return \%rc;
}

# the socket's command's exit status
sub sock_rc {
    my ($rc) = @_;
    for my $i (0 .. $#post) {
        return $rc->{"post$i"} if $post[$i] =~ /io\.systemd\.Resolve/;
    }
    return 'none';
}

# resolved's runtime directory: nobody's, 0755
my $n = 0;
sub resolve_dir {
    my $dir = "$t/resolve" . $n++;
    mkdir $dir or die $!;
    chown $nuid, $ngid, $dir;
    chmod 0755, $dir;
    return $dir;
}

# ---- resolved's own socket: made 0600
my $dir = resolve_dir();
my $srv;
as_nobody(sub {
    my $l = IO::Socket::UNIX->new(Local => "$dir/io.systemd.Resolve",
                                  Listen => 1);
    return $l && chmod(0666, "$dir/io.systemd.Resolve");
}) or die "nobody's socket";
my $rc = run_unit($dir);
is(join(' ', map { "$_=$rc->{$_}" } sort keys %$rc),
   join(' ', map { "$_=0" } sort keys %$rc),
   'resolved\'s socket: every command succeeds');
is(mode_of("$dir/io.systemd.Resolve"), '0600', 'the socket is 0600');
is(mode_of($dir), '0755', 'the directory 0755 again');

# ---- a link at the socket's name to a file of root's
open my $fh, '>', "$t/victim" or die $!;
print $fh "root's\n";
close $fh;
chmod 0644, "$t/victim";
$dir = resolve_dir();
as_nobody(sub { symlink("$t/victim", "$dir/io.systemd.Resolve") })
    or die 'symlink';
$rc = run_unit($dir);
is(mode_of("$t/victim"), '0644',
   'a link to a file at the socket\'s name: the file keeps its mode');
isnt(sock_rc($rc), 0, 'and the unit fails');
ok(-l "$dir/io.systemd.Resolve", 'the link left as it is');

# ---- a link to a directory of root's
mkdir "$t/victim.d", 0755 or die $!;
chmod 0755, "$t/victim.d";
$dir = resolve_dir();
as_nobody(sub { symlink("$t/victim.d", "$dir/io.systemd.Resolve") })
    or die 'symlink';
$rc = run_unit($dir);
is(mode_of("$t/victim.d"), '0755',
   'a link to a directory: the directory keeps its mode');
isnt(sock_rc($rc), 0, 'and the unit fails');

# ---- a hard link to another's file that nobody may read and write
open $fh, '>', "$t/shared" or die $!;
close $fh;
chmod 0666, "$t/shared";
$dir = resolve_dir();
SKIP: {
    skip('fs.protected_hardlinks=2 or a kernel that refuses such a link', 2)
        unless as_nobody(sub {
            link("$t/shared", "$dir/io.systemd.Resolve") });
    $rc = run_unit($dir);
    is(mode_of("$t/shared"), '0666',
       'a hard link to root\'s file: the file keeps its mode');
    isnt(sock_rc($rc), 0, 'and the unit fails');
}

done_testing();
