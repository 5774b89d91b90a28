#!/usr/bin/perl
# The airlock package's purge (debian/airlock.postrm purge), run in a
# small root laid out as an appliance leaves /etc/airlock: besides the
# key pair and the credentials, the Redis passwords of the agent and the
# worker that airlock-redis-users wrote (Redis's start runs it, through
# the package's redis-server.service drop-in), an edit's lock and the
# mark of an edit whose editor was open.  Purge left those, and with
# them /etc/airlock, secrets in it.  Redis's ACL file for those users
# goes too, unless a Redis configuration names it (aclfile): Redis would
# not start without it.  Symbolic links in the directories it removes
# are removed, never followed; a file of the operator's in /etc/airlock
# keeps it.  The conffiles are dpkg's to remove and are not laid out.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);
use Airlock::MiniRoot qw(mini_root);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

absent('chroot needs root') if $> != 0;
need_cmd(qw(chroot ldd sh rm rmdir grep));

my $t = tempdir(CLEANUP => 1);

sub write_file {
    my ($f, $text) = @_;
    make_path($f =~ s{/[^/]*$}{}r);
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

# a root as a running appliance leaves it; REDIS_CONF is redis.conf's text
sub lay_out {
    my ($root, $redis_conf) = @_;

    mini_root($root, qw(sh rm rmdir grep));
    write_file("$root/postrm",
               do { local (@ARGV, $/) = "$top/debian/airlock.postrm"; <> });
    my $e = "$root/etc/airlock";
    write_file("$e/credentials/openai_key", "FAKE-credential\n");
    write_file("$e/airlock.key", "FAKE-key\n");
    write_file("$e/airlock.key.pub", "FAKE-pub\n");
    write_file("$e/redis-agent.pass", "FAKE-agent-password\n");
    write_file("$e/redis-worker.pass", "FAKE-worker-password\n");
    write_file("$e/redis-worker.pass.tmp", "FAKE-worker-password\n");
    write_file("$e/policy.yaml.prev", "routes: []\n");
    write_file("$e/policy.yaml.lock", '');
    write_file("$e/policy.yaml.edit", "routes: []\n");
    write_file("$e/policy.yaml.edit.open", '');
    write_file("$root/etc/redis/redis.conf", $redis_conf);
    write_file("$root/etc/redis/airlock-users.acl",
               "user airlock-agent on #0000\n");
    write_file("$root/var/log/airlock/journal.log", "{}\n");
    make_path("$root/var/lib/airlock-worker/jobs",
              "$root/var/lib/private/airlock-alertd");
    symlink('private/airlock-alertd', "$root/var/lib/airlock-alertd");
}

sub purge {
    my ($root) = @_;
    my $out = `chroot $root /bin/sh /postrm purge 2>&1`;
    return ($? >> 8, $out);
}

sub left {
    my ($root, @paths) = @_;
    return join(' ', grep { -e "$root$_" || -l "$root$_" } @paths);
}

my @ours = qw(/etc/airlock /var/log/airlock /var/lib/airlock-worker
              /var/lib/airlock-alertd /var/lib/private/airlock-alertd);

# Redis not configured for Airlock's users (the package alone)
my $r = "$t/plain";
lay_out($r, "port 6379\n");
my ($rc, $out) = purge($r);
is($rc, 0, 'postrm purge') or diag($out);
is(left($r, '/etc/airlock/redis-agent.pass', '/etc/airlock/redis-worker.pass',
        '/etc/airlock/redis-worker.pass.tmp'), '',
   'the Redis passwords are removed');
is(left($r, '/etc/airlock/policy.yaml.lock',
        '/etc/airlock/policy.yaml.edit.open'), '',
   'an edit\'s lock and open mark are removed');
is(left($r, @ours), '', 'and with them /etc/airlock, the logs and the state');
is(left($r, '/etc/redis/airlock-users.acl'), '',
   'Redis\'s ACL file for them, which no Redis configuration names, too');
ok(-e "$r/etc/redis/redis.conf", 'Redis\'s own configuration is left');

# Redis's configuration names the ACL file (the appliance's, the README's)
$r = "$t/aclfile";
lay_out($r, "port 0\naclfile /etc/redis/airlock-users.acl\n");
($rc, $out) = purge($r);
is($rc, 0, 'postrm purge, with redis.conf naming the ACL file') or diag($out);
is(left($r, @ours), '', '/etc/airlock, the logs and the state are removed');
ok(-e "$r/etc/redis/airlock-users.acl",
   'the ACL file redis.conf names is kept (Redis starts with it)');
like($out, qr{keeping /etc/redis/airlock-users\.acl}, 'and that is said');

# symbolic links are removed, not followed; the operator's file is kept
$r = "$t/links";
lay_out($r, "port 6379\n");
write_file("$r/outside/creds/keep", "FAKE-elsewhere\n");
write_file("$r/outside/state/keep", "elsewhere\n");
system("rm -rf $r/etc/airlock/credentials $r/var/lib/airlock-worker") == 0
    or die;
symlink('/outside/creds', "$r/etc/airlock/credentials") or die;
symlink('/outside/state', "$r/var/lib/airlock-worker") or die;
write_file("$r/etc/airlock/operator-notes", "mine\n");
($rc, $out) = purge($r);
is($rc, 0, 'postrm purge, with links in /etc/airlock and /var/lib')
    or diag($out);
ok(-e "$r/outside/creds/keep" && -e "$r/outside/state/keep",
   'what the links point to is left');
ok(!-l "$r/etc/airlock/credentials" && !-l "$r/var/lib/airlock-worker",
   'the links are removed');
ok(-e "$r/etc/airlock/operator-notes",
   'a file of the operator\'s in /etc/airlock is kept, and the directory');
is(left($r, '/etc/airlock/airlock.key', '/etc/airlock/redis-agent.pass'), '',
   'the package\'s secrets beside it are not');

done_testing();
