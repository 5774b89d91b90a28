#!/usr/bin/perl
# The appliance image's root file system, built as make image builds it
# (appliance-image/build.sh --root-only: mmdebstrap from Debian's archive,
# our packages, the sandbox root file system, the image's configuration)
# and checked without booting it: the packages and the services the image
# runs, its sources.list (bookworm, bookworm-updates, bookworm-security),
# the worker's configuration and sandbox (airlock-worker -t, Python in
# the sandbox root, nothing in it for local users: no device node, no
# set-ID bit, nothing others may write), nginx -t on the image's configuration with the
# first boot's key and placeholder credentials, Redis on its socket, the
# egress rule (the root's nft loads it, resolving its users in the
# root's /etc/passwd, and it loads before the network's units start), the
# overlay's files, and nothing of the tests in the image.  The boot itself is
# make image-test (tests/image/boot.sh), too slow for this suite.
#
# Needs root (mmdebstrap, chroot) and Debian's archive; AIRLOCK_KEEP=1
# keeps the root.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use POSIX ();
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);
use Airlock::UnitOrder qw(starts_before);

# a long run: make test runs it beside its other tests (PROVE_RULES in the
# Makefile), at a lower priority, so that they keep their timing
POSIX::nice(10);

my $top = Cwd::abs_path("$FindBin::Bin/../..");

delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES)};

absent('image root: needs root (mmdebstrap, chroot)') if $> != 0;
need_cmd(qw(mmdebstrap dpkg-buildpackage));

sub run {
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

sub tail_lines {
    my ($text, $n) = @_;
    my @l = split /\n/, $text;
    return join("\n", @l > $n ? @l[-$n .. -1] : @l);
}

my $tmp = tempdir(CLEANUP => !$ENV{AIRLOCK_KEEP});
my $build = "$tmp/build";

# the packages, and the sandbox root file system make test has built
my $rootfs = ($ENV{AIRLOCK_BUILD} // "$top/build") . '/worker-rootfs';
my $targets = -x "$rootfs/usr/bin/python3" ? 'deb' : 'deb worker-rootfs';
$rootfs = "$build/worker-rootfs" if $targets ne 'deb';
my ($rc, $out) = run("make -s -C $top DEPS=true BUILD=$build $targets");
is($rc, 0, "make $targets") or diag(tail_lines($out, 30));

($rc, $out) = run("$top/appliance-image/build.sh --debs $build/deb "
                  . "--rootfs $rootfs --out $tmp/image --root-only");
is($rc, 0, 'build.sh --root-only') or diag(tail_lines($out, 30));
diag($_) for grep { /built in/ } split /\n/, $out;
my $root = "$tmp/image/root";
unless ($rc == 0 && -d "$root/etc") {
    done_testing();
    exit;
}

sub in_root {
    my ($cmd) = @_;
    return run("chroot $root /bin/sh -c '$cmd'");
}

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return '';
    local $/;
    return <$fh>;
}

# packages
for my $p (qw(airlock libnginx-mod-http-airlock nginx redis-server runsc
              nftables linux-image-amd64 systemd-resolved openssl)) {
    ($rc, $out) = in_root("dpkg-query -W -f=\\\${db:Status-Status} $p");
    is($out, 'installed', "$p installed");
}
ok(-f (glob("$root/boot/vmlinuz-*"))[0] && -f (glob("$root/boot/initrd.img-*"))[0],
   'a kernel and its initrd in /boot');
# installed from, and pointing at, bookworm's updates and security fixes
my $sl = slurp("$root/etc/apt/sources.list");
for my $s (qw(bookworm bookworm-updates bookworm-security)) {
    like($sl, qr/^deb\s+\S+\s+\Q$s\E\s+main\s*$/m, "sources.list: $s")
        or diag($sl);
}

# services: what the appliance runs at boot, what it leaves to the operator
# (the root's own systemctl: the host needs no systemd)
for my $u (qw(nginx redis-server nftables systemd-networkd systemd-resolved
              airlock-firstboot airlock-credentials airlock-alertd
              airlock-worker airlock-ready))
{
    ($rc, $out) = in_root("systemctl is-enabled $u.service");
    is($out =~ s/\s+$//r, 'enabled', "$u enabled");
}
# the places alertd may connect to, put in the egress rule each minute
($rc, $out) = in_root('systemctl is-enabled airlock-alertd-egress.timer');
is($out =~ s/\s+$//r, 'enabled', 'airlock-alertd-egress.timer enabled');
ok(-x "$root/usr/lib/airlock/alertd-egress",
   '/usr/lib/airlock/alertd-egress is in the root, a program');
($rc, $out) = in_root('systemctl is-enabled airlock-agent.service');
is($out =~ s/\s+$//r, 'disabled',
   'airlock-agent disabled (it needs the operator\'s model key)');
like(slurp("$root/etc/systemd/system/airlock-selftest.service"),
     qr/^ConditionKernelCommandLine=airlock\.selftest$/m,
     'the self-test runs only with airlock.selftest on the kernel command line');
ok(!grep({ -e "$root$_" } '/usr/lib/airlock/guest-check.sh',
                          '/run/airlock-check'),
   'the host\'s check script is not in the image');

# tmpfiles.d from the package, no copy of the image's own
ok(-f "$root/usr/lib/tmpfiles.d/airlock.conf"
   && !-e "$root/etc/tmpfiles.d/airlock.conf",
   '/run/airlock comes from the package\'s tmpfiles.d');

# the worker: its configuration, its sandbox root, a check by itself
my $wc = slurp("$root/etc/airlock/worker.conf");
like($wc, qr{^redis_unix\s+/run/redis/redis\.sock\s*$}m,
     'worker.conf: Redis through its socket (the unit has no network)');
like($wc, qr{^rootfs\s+/usr/lib/airlock/sandbox-rootfs\b}m,
     'worker.conf: the sandbox root file system');
($rc, $out) = in_root('airlock-worker -c /etc/airlock/worker.conf -t');
is($rc, 0, 'airlock-worker -t: configuration, policy, runsc, rootfs')
    or diag($out);
my $wt = $out;
($rc, $out) = run("chroot $root/usr/lib/airlock/sandbox-rootfs "
                  . "/usr/bin/python3 -I -c 'print(6 * 7)'");
is($out, "42\n", 'Python runs in the sandbox root file system');
ok(!-e "$root/usr/lib/airlock/sandbox-rootfs/bin/sh"
   && !-e "$root/usr/lib/airlock/sandbox-rootfs/usr/bin/sh",
   'which has no shell');
# nor anything that gives the appliance's local users more than they have
($rc, $out) = run("find $root/usr/lib/airlock/sandbox-rootfs -xdev "
                  . "\\( -type b -o -type c -o -type p -o -type s -o "
                  . "\\( ! -type l -perm /6022 \\) \\) -print");
is($out, '', 'and no device node, FIFO, socket, set-ID bit or file '
             . 'others may write');

# Redis: a unix socket for group redis, no TCP port, AOF
my $rconf = slurp("$root/etc/redis/redis.conf");
like($rconf, qr{^unixsocket /run/redis/redis\.sock$}m, 'Redis: unix socket');
like($rconf, qr{^unixsocketperm 770$}m, 'Redis: for its group only');
like($rconf, qr{^port 0$}m, 'Redis: no TCP port');
like($rconf, qr{^appendonly yes$}m, 'Redis: AOF');
like($rconf, qr{^appendfsync always$}m, 'Redis: on disk before each reply');
like($rconf, qr{^include /run/redis/airlock-maxmemory\.conf\n(?:#.*\n|\s*\n)*\z}m,
     'Redis: its memory bound included last');
# (the chroot has no /proc: the host's MemTotal)
system("cp /proc/meminfo $root/tmp/meminfo") == 0 or die "meminfo\n";
($rc, $out) = in_root('/usr/lib/airlock/redis-maxmemory --meminfo '
                      . '/tmp/meminfo /tmp/maxmemory.conf '
                      . '&& cat /tmp/maxmemory.conf; '
                      . 'rm -f /tmp/maxmemory.conf /tmp/meminfo');
like($out, qr/\Amaxmemory [1-9][0-9]{7,}\nmaxmemory-policy noeviction\n\z/,
     'Redis: redis-maxmemory writes its bound, noeviction, in the root')
    or diag($out);

# the egress rule and name resolution
is(slurp("$root/etc/nftables.conf"), slurp("$top/conf/nftables-airlock.conf"),
   '/etc/nftables.conf is conf/nftables-airlock.conf');
is(readlink("$root/etc/resolv.conf"), '/run/systemd/resolve/stub-resolv.conf',
   'resolv.conf: systemd-resolved\'s stub');

# the overlay: every file git tracks in appliance-image/root is in the
# root as it is in the checkout, 0755 for a program and 0644 for the
# rest (the resolver's and Redis's drop-ins, resolved's D-Bus policy,
# the egress rule's fail-safe and its order among others, named below)
{
    my @files = split /\0/, `git -C $top ls-files -z appliance-image/root`;
    SKIP: {
        skip 'not a git checkout', 1 unless @files;
        my @bad;
        for my $f (@files) {
            (my $in = $f) =~ s{^appliance-image/root}{};
            my $want = -x "$top/$f" ? 0755 : 0644;
            my @st = lstat "$root$in";
            push @bad, $in
                unless @st && -f _ && ($st[2] & 07777) == $want
                       && slurp("$root$in") eq slurp("$top/$f");
        }
        ok(!@bad, 'the overlay\'s ' . scalar(@files) . ' files are in the '
           . 'root, as the checkout has them, 0644 or 0755')
            or diag("missing or not the same: @bad");
    }
}
for my $f (qw(/etc/systemd/resolved.conf.d/airlock.conf
              /etc/dbus-1/system.d/airlock-resolve1.conf
              /etc/systemd/system/systemd-resolved.service.d/airlock.conf
              /etc/systemd/system/redis-server.service.d/airlock-hardening.conf
              /etc/systemd/system/redis-server.service.d/airlock-maxmemory.conf
              /etc/systemd/system/nftables.service.d/airlock-failsafe.conf
              /etc/systemd/system/nftables.service.d/airlock-before-network.conf
              /etc/systemd/system/nftables.service.d/airlock-alertd-egress.conf
              /etc/systemd/system/airlock-alertd-egress-refill.service))
{
    ok(-s "$root$f", "$f is in the root");
}
ok(-x "$root/usr/lib/airlock/nftables-failsafe",
   '/usr/lib/airlock/nftables-failsafe is in the root, a program');
ok(-x "$root/usr/lib/airlock/set-mode",
   '/usr/lib/airlock/set-mode is in the root, a program');

# the egress rule as the booted appliance's nftables.service loads it:
# the root's own nft, its user names resolved through the root's own
# /etc/passwd (chroot), in a network namespace of its own (nft -c sends
# the ruleset to the kernel and commits nothing)
my $rules = slurp("$root/etc/nftables.conf");
my %names;
$names{$1} = 1 while $rules =~ /"([a-z_][a-z0-9_-]*)"/g;
delete $names{lo};
my $passwd = slurp("$root/etc/passwd");
my @absent = grep { $passwd !~ /^\Q$_\E:/m } sort keys %names;
ok(%names && !@absent, 'the users the egress rule names are in the '
   . 'root\'s /etc/passwd (' . join(' ', sort keys %names) . ')')
    or diag("absent: @absent");
($rc, $out) = run("unshare -n chroot $root nft -c -f /etc/nftables.conf");
is($rc, 0, 'nft -c -f /etc/nftables.conf in the root (its own nft and '
   . '/etc/passwd)') or diag($out);
# and the root's passwd is what decides: a name it lacks fails
{
    (my $bad = $rules) =~ s/"www-data"/"airlock-no-such-user-10"/g;
    open my $fh, '>', "$root/tmp/airlock-10-bad.nft" or die $!;
    print $fh $bad;
    close $fh;
    ($rc, $out) = run("unshare -n chroot $root nft -c -f "
                      . '/tmp/airlock-10-bad.nft');
    unlink "$root/tmp/airlock-10-bad.nft";
    ok($rc != 0 && $out =~ /User does not exist/,
       'nft -c in the root fails on a user its /etc/passwd lacks')
        or diag("rc $rc: $out");
}

# the egress rule loads before the units that use the network start,
# as the root's own units and drop-ins order them (Debian's, the
# overlay's; tests/build/40-image-nft-order.t with the host's)
{
    my @dirs = map { "$root$_" } qw(/etc/systemd/system /lib/systemd/system
                                    /usr/lib/systemd/system);
    for my $u (qw(systemd-networkd.service systemd-resolved.service
                  systemd-timesyncd.service sysinit.target nginx.service
                  redis-server.service airlock-alertd.service
                  airlock-worker.service airlock-agent.service)) {
        my @p = starts_before(\@dirs, 'nftables.service', $u);
        ok(@p, "the egress rule loads before $u starts")
            and note(join ' -> ', @p);
        my @back = starts_before(\@dirs, $u, 'nftables.service');
        ok(!@back, "$u is not ordered before the rule (no cycle)")
            or diag(join ' -> ', @back);
    }
}

# nginx -t on the image's configuration, with what the boot makes
# (systemd-tmpfiles, with a /proc of its own in a private mount
# namespace) and what the first boot makes
# (the key pair, placeholder credentials) and nginx.service's credentials
# where its drop-in puts them
($rc, $out) = run("unshare --mount --propagation private chroot $root "
                  . "/bin/sh -c 'mount -t proc proc /proc "
                  . "&& systemd-tmpfiles --create airlock.conf'");
is($rc, 0, 'systemd-tmpfiles --create airlock.conf') or diag($out);
($rc, $out) = in_root('airlockctl keygen /etc/airlock/airlock.key '
                      . '&& /usr/lib/airlock/placeholder-credentials '
                      . '&& mkdir -p /run/credentials/nginx.service '
                      . '&& for f in /etc/airlock/credentials/*; do '
                      . 'cp "$f" /run/credentials/nginx.service/'
                      . 'airlock_${f##*/}; done');
is($rc, 0, 'first boot: key pair, placeholder credentials') or diag($out);
($rc, $out) = in_root('stat -c "%a %U %G" /run/airlock /run/airlock/agent');
is($out, "755 root root\n2750 airlock-agent airlock-api\n",
   '/run/airlock (root\'s) and /run/airlock/agent (the agent\'s socket, '
   . 'set-group-ID airlock-api) made by the package\'s tmpfiles.d');
# who may use the agent's socket: nginx's user is in its group, and the
# tool docs/agent.md gives operators for /api/'s passwords is there
($rc, $out) = in_root('id -nG www-data');
like($out, qr/(^|\s)airlock-api(\s|$)/, 'www-data is in airlock-api');
($rc, $out) = in_root('printf "FAKE\n" | openssl passwd -6 -stdin');
like($out, qr/^\$6\$/, 'openssl passwd -6 makes an /api/ password\'s hash');
($rc, $out) = in_root('stat -c "%a %U %G" /var/log/airlock');
is($out, "2755 root airlock-log\n",
   '/var/log/airlock set-group-ID airlock-log: alertd reads the journal');
($rc, $out) = in_root('nginx -t');
is($rc, 0, 'nginx -t with the image\'s configuration and the module')
    or diag($out);
($rc, $out) = in_root('airlockctl check --key /etc/airlock/airlock.key '
                      . '/etc/airlock/policy.yaml');
is($rc, 0, 'airlockctl check --key: the policy and its secrets')
    or diag($out);

# first boot state: no machine id, no root password
is(-s "$root/etc/machine-id", 0, 'an empty machine-id (made at first boot)');
like($wt, qr/warn: .*no machine id in \/etc\/machine-id/,
     'airlock-worker -t: no consumer name before the first boot (each '
     . 'appliance\'s own after it)');
like($wt, qr/warn: .*redis-worker\.pass: No such file/,
     'airlock-worker -t: no Redis password before the first boot '
     . '(airlock-redis-users.service writes it)');
ok(!grep({ -e "$root$_" } '/etc/airlock/redis-agent.pass',
         '/etc/airlock/redis-worker.pass', '/etc/redis/airlock-users.acl'),
   'no Redis password nor ACL file in the image');
like($rconf, qr{^aclfile /etc/redis/airlock-users\.acl$}m,
     'Redis: its users from the file airlock-redis-users writes');
($rc, $out) = in_root('systemctl is-enabled airlock-redis-users.service');
is($out =~ s/\s+$//r, 'enabled', 'airlock-redis-users enabled');
# what the first boot does: the files, each client's own
($rc, $out) = in_root('/usr/lib/airlock/airlock-redis-users --agent-owner '
                      . 'airlock-agent --worker-owner root --acl-group redis '
                      . '/usr/share/airlock/redis-acl.conf '
                      . '/etc/redis/airlock-users.acl '
                      . '/etc/airlock/redis-agent.pass '
                      . '/etc/airlock/redis-worker.pass '
                      . '&& stat -c "%a %U %G" /etc/airlock/redis-agent.pass '
                      . '/etc/airlock/redis-worker.pass '
                      . '/etc/redis/airlock-users.acl');
is($out, "400 airlock-agent airlock-agent\n400 root root\n640 root redis\n",
   'first boot: the Redis passwords, each its client\'s, and Redis\'s ACL')
    or diag($out);
($rc, $out) = in_root('airlock-worker -c /etc/airlock/worker.conf -t');
unlike($out, qr/redis-worker\.pass/, 'airlock-worker -t takes the password')
    or diag($out);
like(slurp("$root/etc/shadow"), qr/^root:!/m, 'root\'s password is locked');

done_testing();
