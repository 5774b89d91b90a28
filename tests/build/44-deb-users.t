#!/usr/bin/perl
# The airlock package's users.  The policy knows the agent and the worker
# by their uid, and alertd's unit runs as its user; sysusers.d makes them
# system users (uid "-": from the system range) with no home and no
# login shell.  systemd-sysusers keeps a user of that name that is there
# already as it is: one that can log in (a login shell), or root under
# another name, was then taken for the agent, the worker or alertd
# without a word.  The preinst (debian/airlock.preinst, run here in a
# small chroot over an /etc/passwd laid out for each case) refuses such
# a user, saying how to mend it, and lets a system user without a login
# shell, or no user at all, be.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);
use Airlock::MiniRoot qw(mini_root);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

absent('chroot needs root') if $> != 0;
need_cmd(qw(chroot ldd sh stat chown chmod ls getent cut));

# the sysusers.d lines: each user from the system range, no home, no login
my $sysusers = do { local (@ARGV, $/) = "$top/conf/airlock.sysusers"; <> };
my @u = $sysusers =~ /^u\s+(.*)$/mg;
is(scalar @u, 3, 'sysusers.d makes three users');
for (@u) {
    my ($name, $id, $rest) = /^(\S+)\s+(\S+)\s+(.*)$/;
    is($id, '-', "$name: a uid of the system range");
    like($rest, qr{"[^"]*"\s+/nonexistent\s+/usr/sbin/nologin\s*$},
         "$name: home /nonexistent, shell /usr/sbin/nologin");
}

my $t = tempdir(CLEANUP => 1);
my $base = "root:x:0:0:root:/root:/bin/bash\n"
    . "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";

sub preinst_with {
    my ($name, $passwd) = @_;
    my $r = "$t/$name";
    mini_root($r, qw(sh stat chown chmod ls getent cut));
    my $src = "$top/debian/airlock.preinst";
    my $text = -e $src ? do { local (@ARGV, $/) = $src; <> } : "exit 0\n";
    for (["$r/preinst", $text], ["$r/etc/passwd", $base . $passwd]) {
        open my $fh, '>', $_->[0] or die "$_->[0]: $!";
        print $fh $_->[1];
        close $fh;
    }
    my $out = `chroot $r /bin/sh /preinst install 2>&1`;
    return ($? >> 8, $out);
}

my ($rc, $out) = preinst_with('none', '');
is($rc, 0, 'no such users yet: the install goes on') or diag($out);

($rc, $out) = preinst_with('system',
    "airlock-agent:x:995:995:Airlock agent:/nonexistent:/usr/sbin/nologin\n"
    . "airlock-worker:x:994:994::/home/airlock-worker:/bin/false\n");
is($rc, 0, 'system users without a login shell: the install goes on')
    or diag($out);

($rc, $out) = preinst_with('shell',
    "airlock-agent:x:1001:1001:someone:/home/airlock-agent:/bin/bash\n");
isnt($rc, 0, 'an airlock-agent with a login shell is refused');
like($out, qr{airlock-agent .*login shell "/bin/bash".*usermod -s}s,
     'and the message says why and how to mend it');

($rc, $out) = preinst_with('alertd',
    "airlock-alertd:x:993:993::/nonexistent:/bin/sh\n");
isnt($rc, 0, 'an airlock-alertd with a login shell is refused');

($rc, $out) = preinst_with('root',
    "airlock-worker:x:0:0::/nonexistent:/usr/sbin/nologin\n");
isnt($rc, 0, 'an airlock-worker that is uid 0 is refused');
like($out, qr/airlock-worker .*uid 0/s, 'and that is said');

done_testing();
