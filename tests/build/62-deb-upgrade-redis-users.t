#!/usr/bin/perl
# The airlock package's upgrade and Redis's users.  Redis reads its ACL
# file (/etc/redis/airlock-users.acl, which airlock-redis-users.service
# writes from the template the package ships) only when it starts.  An
# upgrade try-restarts the package's running units (debhelper's part of
# the postinst), the users' oneshot among them, which wrote the new
# version's users into the file; the running Redis kept the old ones and
# refused the new agent's commands (NOPERM) until it was restarted.  Now
# the postinst runs the users' unit first and, when the file changed,
# try-restarts Redis, before debhelper restarts the daemons.  Nothing
# else restarts Redis: an upgrade that leaves the file as it was, an
# install, a system where the users' unit is not active, a Redis whose
# configuration does not name the file.  The postinst (debian/
# airlock.postinst, #DEBHELPER# filled in as dh_installsystemd
# --no-start --restart-after-upgrade does) runs in a small chroot, as
# tests/build/46 does, with systemctl and deb-systemd-invoke replaced by
# stand-ins that log their calls; the stand-in's try-restart of the
# users' unit, when that unit is active, writes the ACL file anew from
# /new-users, as the unit does.  A FIFO Redis left by the file's name
# does not hold the postinst.

use strict;
use warnings;
use Cwd ();
use File::Basename qw(dirname);
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
my $snippet = '/usr/share/debhelper/autoscripts/'
    . 'postinst-systemd-restartnostart';

absent('chroot needs root') if $> != 0;
need_cmd(qw(chroot ldd sh grep install perl sha256sum cat cp mv));
absent("$snippet not found (debhelper; auto/deps installs it)")
    unless -r $snippet;

my $t = tempdir(CLEANUP => 1);

# the postinst as the package has it: debhelper's try-restart of every
# unit the package ships (debian/rules: --no-start
# --restart-after-upgrade; debian/airlock.install takes them all)
my @units = sort map { m{([^/]+)$} } glob("$top/conf/*.service");
ok(grep({ $_ eq 'airlock-redis-users.service' } @units),
   'the package ships airlock-redis-users.service');
my $dh = do { local (@ARGV, $/) = $snippet; <> };
$dh =~ s/#RESTART_ACTION#/try-restart/g;
$dh =~ s/#UNITFILES#/@units/g;
my $postinst = do { local (@ARGV, $/) = "$top/debian/airlock.postinst"; <> };
like($postinst, qr/^#DEBHELPER#$/m, 'debian/airlock.postinst has #DEBHELPER#');
$postinst =~ s/^#DEBHELPER#$/$dh/m;

# perl's own modules (Fcntl), which mini_root does not copy
my $perl_lib = dirname(`perl -MFcntl -e 'print \$INC{"Fcntl.pm"}'`);

sub write_file {
    my ($f, $text, $mode) = @_;
    make_path(dirname($f));
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
    chmod $mode // 0644, $f;
}

my $old = "user default off\nuser airlock-agent on #FAKE0 +get\n";
my $new = "user default off\nuser airlock-agent on #FAKE0 +get +zadd\n";

# the postinst run with ARGS; %o: systemd running (systemd), the units
# active (active: list), the ACL file there before (acl: its text, or
# 'fifo'), what the users' unit writes (users), redis.conf's text
# (redis_conf); returns (exit status, output, calls logged)
my $n = 0;
sub postinst {
    my ($args, %o) = @_;
    my $r = "$t/r" . $n++;

    mini_root($r, qw(sh grep install perl sha256sum cat cp mv));
    make_path("$r$perl_lib");
    system('cp', '-a', "$perl_lib/.", "$r$perl_lib") == 0 or die 'cp';
    make_path("$r/usr/bin", "$r/active", "$r/etc/redis");
    make_path("$r/run/systemd/system") if $o{systemd} // 1;
    write_file("$r/postinst", $postinst);
    write_file("$r/active/$_", '') for @{ $o{active} // [] };
    write_file("$r/new-users", $o{users} // $new);
    write_file("$r/etc/redis/redis.conf", $o{redis_conf}
               // "port 0\naclfile /etc/redis/airlock-users.acl\n");
    if (($o{acl} // '') eq 'fifo') {
        POSIX::mkfifo("$r/etc/redis/airlock-users.acl", 0600) or die $!;
    } elsif (defined $o{acl}) {
        write_file("$r/etc/redis/airlock-users.acl", $o{acl}, 0640);
    }
    write_file("$r/usr/bin/systemctl", <<'EOT', 0755);
#!/bin/sh
echo "systemctl $*" >> /calls
u=
for a in "$@"; do case $a in *.service) u=$a ;; esac; done
case " $* " in
*" is-active "*) [ -e "/active/$u" ] ;;
esac
EOT
    # the users' unit, when active, writes the file anew (airlock-redis-
    # users: a new file renamed over the name)
    write_file("$r/usr/bin/deb-systemd-invoke", <<'EOT', 0755);
#!/bin/sh
echo "deb-systemd-invoke $*" >> /calls
if [ "$1" = try-restart ] && [ -e /active/airlock-redis-users.service ]
then
    for a in "$@"; do
        if [ "$a" = airlock-redis-users.service ]; then
            cp /new-users /etc/redis/airlock-users.acl.new
            mv -fT /etc/redis/airlock-users.acl.new \
                /etc/redis/airlock-users.acl
        fi
    done
fi
EOT
    my ($rc, $out) = run_bounded(60, sub {
        $ENV{PATH} = '/usr/sbin:/usr/bin:/sbin:/bin';
    }, 'chroot', $r, '/bin/sh', '/postinst', split ' ', $args);
    my $calls = -e "$r/calls"
        ? do { local (@ARGV, $/) = "$r/calls"; <> } : '';
    return ($rc, $out, $calls);
}

# the order of the logged try-restarts of the users' unit and of Redis
sub restarts {
    my ($calls) = @_;
    my @seq;
    for ($calls =~ /^deb-systemd-invoke try-restart (.*)$/mg) {
        for (split ' ') {
            push @seq, 'users' if $_ eq 'airlock-redis-users.service';
            push @seq, 'redis' if $_ eq 'redis-server.service';
        }
    }
    return join(' ', @seq);
}

sub redis_restarted { $_[0] =~ /^\S+ (?:try-)?restart .*\bredis-server\b/m }

my @running = qw(airlock-redis-users.service redis-server.service
                 airlock-agent.service airlock-worker.service);

# ---- (a) an upgrade whose template changes Redis's users
my ($rc, $out, $calls) = postinst('configure 0.1',
                                  acl => $old, active => \@running);
is($rc, 0, 'an upgrade: postinst configure') or diag($out);
ok(redis_restarted($calls), 'the users changed: Redis is restarted')
    or diag($calls);
like(restarts($calls), qr/^users redis\b/,
     'after the users\' unit wrote the file, before the daemons\' restart')
    or diag($calls);
like($calls, qr/^deb-systemd-invoke try-restart redis-server\.service$/m,
     'a try-restart of Redis alone (Redis only if it runs)');
my @lines = split /\n/, $calls;
my ($ri) = grep { $lines[$_] =~ /try-restart redis-server/ } 0 .. $#lines;
my ($ai) = grep { $lines[$_] =~ /try-restart .*airlock-agent\.service/ }
    0 .. $#lines;
ok(defined $ri && defined $ai && $ri < $ai,
   'the agent and the worker are restarted after Redis') or diag($calls);
like($out, qr/restarting Redis/, 'and the restart is said');

# ---- (b) an upgrade that leaves the file as it was
($rc, $out, $calls) = postinst('configure 0.1', acl => $new,
                               active => \@running);
is($rc, 0, 'an upgrade, the same users: postinst configure') or diag($out);
ok(!redis_restarted($calls), 'Redis is not restarted') or diag($calls);
like($calls, qr/^deb-systemd-invoke try-restart .*airlock-agent\.service/m,
     'the daemons are (debhelper\'s part)');

# ---- (c) an install (configure with no version before)
($rc, $out, $calls) = postinst('configure', acl => $old, active => \@running);
is($rc, 0, 'an install: postinst configure') or diag($out);
ok(!redis_restarted($calls), 'Redis is not restarted') or diag($calls);
is(restarts($calls), '', 'nor the users\' unit') or diag($calls);

# ---- (d) the units not active
($rc, $out, $calls) = postinst('configure 0.1', acl => $old,
                               active => ['redis-server.service']);
is($rc, 0, 'an upgrade, the users\' unit not active: postinst configure')
    or diag($out);
ok(!redis_restarted($calls), 'Redis is not restarted') or diag($calls);
($rc, $out, $calls) = postinst('configure 0.1', acl => $old, active => []);
is($rc, 0, 'an upgrade, no unit active: postinst configure') or diag($out);
ok(!redis_restarted($calls), 'Redis is not restarted') or diag($calls);
($rc, $out, $calls) = postinst('configure 0.1', acl => $old,
                               active => \@running, systemd => 0);
is($rc, 0, 'an upgrade, systemd not running: postinst configure')
    or diag($out);
is($calls, '', 'nothing is asked of systemd') or diag($calls);

# ---- a Redis whose configuration does not name the file
($rc, $out, $calls) = postinst('configure 0.1', acl => $old,
                               active => \@running,
                               redis_conf => "port 0\n");
is($rc, 0, 'an upgrade, redis.conf without aclfile: postinst configure')
    or diag($out);
ok(!redis_restarted($calls), 'Redis, which does not read the file, is not '
   . 'restarted') or diag($calls);
like($out, qr/no \/etc\/redis\/\*\.conf names/, 'the change is said');

# ---- a FIFO by the file's name, no one writing it
($rc, $out, $calls) = postinst('configure 0.1', acl => 'fifo',
                               active => \@running);
is($rc, 0, 'a FIFO by the ACL file\'s name: the postinst ends')
    or diag(Airlock::Bounded::blocked($rc, $out, 60));
ok(redis_restarted($calls), 'the users\' unit replaced it: Redis is '
   . 'restarted') or diag($calls);

done_testing();
