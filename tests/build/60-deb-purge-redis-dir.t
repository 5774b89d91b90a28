#!/usr/bin/perl
# The airlock package's purge (debian/airlock.postrm purge) runs as root
# and reads and removes names in /etc/redis, which Redis may write
# (Debian's is 2770 redis:redis): whatever is there may be Redis's
# making.  It read every /etc/redis/*.conf by name to learn whether a
# Redis configuration names Airlock's ACL file (grep): a FIFO there, or
# a link to one elsewhere, blocked the purge for ever in grep's open.
# And it removed the ACL file and its temporary file with rm -f, which
# fails on a directory by that name: the purge failed.  Now no link is
# followed (a *.conf that is a link keeps the ACL file, which it may
# name), no FIFO or device opened to wait on, a directory by one of
# those names is left (and said), and the temporary files
# airlock-redis-users makes under a random name
# (airlock-users.acl.<16 hex digits>.tmp), left by a run cut short, are
# removed too.  Run in a small chroot, as tests/build/41 does.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);
use Airlock::MiniRoot qw(mini_root);
use Airlock::Bounded qw(run_bounded);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

absent('chroot needs root') if $> != 0;
need_cmd(qw(chroot ldd sh rm rmdir grep));

my $t = tempdir(CLEANUP => 1);
my $rnd = 'airlock-users.acl.0123456789abcdef.tmp';

sub write_file {
    my ($f, $text) = @_;
    make_path($f =~ s{/[^/]*$}{}r);
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

# a root with Redis's configuration, REDIS_CONF redis.conf's text
my $n = 0;
sub lay_out {
    my ($redis_conf) = @_;
    my $root = "$t/r" . $n++;

    mini_root($root, qw(sh rm rmdir grep));
    write_file("$root/postrm",
               do { local (@ARGV, $/) = "$top/debian/airlock.postrm"; <> });
    write_file("$root/etc/airlock/redis-agent.pass", "FAKE-agent-password\n");
    write_file("$root/etc/redis/redis.conf", $redis_conf);
    write_file("$root/etc/redis/airlock-users.acl",
               "user airlock-agent on #0000\n");
    return $root;
}

# the purge's exit status (-1: still running after a minute, then
# killed) and output
sub purge {
    my ($root) = @_;
    return run_bounded(60, undef, 'chroot', $root, '/bin/sh', '/postrm',
                       'purge');
}

sub blocked { Airlock::Bounded::blocked(@_, 60) }

# ---- a FIFO among Redis's *.conf, no one writing it
my $r = lay_out("port 6379\n");
POSIX::mkfifo("$r/etc/redis/fifo.conf", 0600) or die "mkfifo: $!";
my ($rc, $out) = purge($r);
is($rc, 0, 'a FIFO in /etc/redis: the purge ends') or diag(blocked($rc, $out));
ok(!-e "$r/etc/redis/airlock-users.acl",
   'the ACL file no configuration names is removed');
ok(!-e "$r/etc/airlock", 'and the passwords');

# ---- a link among them to a FIFO elsewhere
$r = lay_out("port 6379\n");
POSIX::mkfifo("$r/fifo", 0600) or die "mkfifo: $!";
symlink('/fifo', "$r/etc/redis/link.conf") or die $!;
($rc, $out) = purge($r);
is($rc, 0, 'a link to a FIFO in /etc/redis: the purge ends')
    or diag(blocked($rc, $out));
ok(-f "$r/etc/redis/airlock-users.acl",
   'the ACL file is kept: the link, not read, may name it');
my $said = 'keeping /etc/redis/airlock-users.acl, which '
    . '/etc/redis/link.conf, a link (not read), may name';
like($out, qr/\Q$said\E/, 'and that is said');

# ---- the configuration still found when it names the ACL file
$r = lay_out("port 0\naclfile /etc/redis/airlock-users.acl\n");
POSIX::mkfifo("$r/etc/redis/fifo.conf", 0600) or die "mkfifo: $!";
($rc, $out) = purge($r);
is($rc, 0, 'redis.conf naming the ACL file, a FIFO beside it: the purge '
   . 'ends') or diag(blocked($rc, $out));
ok(-f "$r/etc/redis/airlock-users.acl", 'the ACL file is kept');
like($out, qr{keeping /etc/redis/airlock-users\.acl}, 'and that is said');

# ---- a directory by the temporary file's name, and by the ACL file's
$r = lay_out("port 6379\n");
make_path("$r/etc/redis/airlock-users.acl.tmp/in");
unlink "$r/etc/redis/airlock-users.acl";
make_path("$r/etc/redis/airlock-users.acl/in");
write_file("$r/etc/redis/$rnd", "user airlock-agent on #0000\n");
($rc, $out) = purge($r);
is($rc, 0, 'directories by the names the purge removes: the purge '
   . 'succeeds') or diag(blocked($rc, $out));
ok(-d "$r/etc/redis/airlock-users.acl.tmp/in"
   && -d "$r/etc/redis/airlock-users.acl/in", 'the directories are left');
like($out, qr{keeping /etc/redis/airlock-users\.acl\.tmp, a directory},
     'and that is said');
ok(!-e "$r/etc/airlock", 'the passwords are removed');
ok(!-e "$r/etc/redis/$rnd",
   'a temporary file of airlock-redis-users\'s is removed');

done_testing();
