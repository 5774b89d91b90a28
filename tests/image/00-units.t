#!/usr/bin/perl
# The appliance's confinement, checked without booting it: the agent and
# worker units pass `systemd-analyze verify` and carry the directives that
# take their network, capabilities and file system away; /run/airlock is
# root's, the agent's socket in a directory of its own; the nftables
# ruleset lets only nginx's user out, and alertd's to its sinks alone;
# Redis's socket directory, which both units bind, outlives a restart of
# Redis, and the README tells a package install to give Redis the image's
# settings (no TCP port) and to make the key alertd's unit loads; the
# image build script knows its options.  The image itself is built and
# booted by `make image-test` (tests/image/boot.sh), which is too slow for
# this suite.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $ci = $ENV{CI};

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or die "$f: $!";
    local $/;
    my $s = <$fh>;
    $s =~ s/\\\n\s*/ /g;        # continuation lines
    return $s;
}

sub directives {
    my ($s) = @_;
    my %d;
    $s =~ s/\\\n\s*/ /g;                 # continued lines
    for (split /\n/, $s) {
        next if /^\s*(#|;|\[|$)/;
        my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
        push @{$d{$k}}, $v;
    }
    return \%d;
}

my %units = map { $_ => "$top/conf/airlock-$_.service" } qw(agent worker);

# systemd-analyze verify, with the programs the units start stubbed out:
# they need not be installed on the machine running the suite
my $sa = `command -v systemd-analyze 2>/dev/null`;
chomp $sa;
SKIP: {
    if (!$sa) {
        fail("systemd-analyze is missing") if $ci;
        skip "systemd-analyze is missing", 2 unless $ci;
    }
    for my $n (sort keys %units) {
        my $out = `$sa verify $units{$n} 2>&1`;
        my @bad = grep { !/Command \/usr\/bin\/airlock\S* is not executable/ }
                  grep { /\S/ } split /\n/, $out;
        ok(!@bad, "systemd-analyze verify airlock-$n.service")
            or diag(join "\n", @bad);
    }
}

my %common = (
    PrivateNetwork => 'yes',
    NoNewPrivileges => 'yes',
    ProtectSystem => 'strict',
    ProtectHome => 'yes',
    PrivateTmp => 'yes',
    TemporaryFileSystem => '/run',
    AmbientCapabilities => '',
);

for my $n (sort keys %units) {
    my $d = directives(slurp($units{$n}));
    for my $k (sort keys %common) {
        ok((grep { $_ eq $common{$k} } @{$d->{$k} || []}),
           "airlock-$n: $k=$common{$k}");
    }
    my @bind = map { split ' ' }
               @{$d->{BindPaths} || []}, @{$d->{BindReadOnlyPaths} || []};
    is_deeply([sort @bind], ['/run/airlock', '/run/redis'],
              "airlock-$n: only Airlock's and Redis's socket directories "
              . "are bound into its /run");
    my @rw = map { split ' ' } @{$d->{ReadWritePaths} || []};
    ok(!(grep { m{^/(etc|usr|var|home|root)?(/|$)} && $_ ne '/sys/fs/cgroup' }
         @rw), "airlock-$n: no writable system path");
    my @af = map { split ' ' } @{$d->{RestrictAddressFamilies} || []};
    ok(@af && !(grep { /AF_INET|AF_PACKET/ } @af),
       "airlock-$n: no IP or packet sockets (@af)");
    ok((grep { m{/etc/airlock/airlock.key} } @{$d->{InaccessiblePaths} || []}),
       "airlock-$n: the appliance key is out of reach");
}

# the agent: its own user, no capability at all
{
    my $d = directives(slurp($units{agent}));
    is($d->{User}[0], 'airlock-agent', 'agent runs as airlock-agent');
    is($d->{CapabilityBoundingSet}[-1], '', 'agent: empty bounding set');
    ok((grep { $_ eq 'yes' } @{$d->{RestrictNamespaces} || []}),
       'agent: no namespaces of its own');
}

# the worker: root for runsc, but never the capabilities of the network,
# modules, raw I/O, the clock or the audit log
{
    my $d = directives(slurp($units{worker}));
    my @caps = map { split ' ' } @{$d->{CapabilityBoundingSet} || []};
    ok(@caps, 'worker: a capability bounding set is given');
    my @forbidden = grep { /^CAP_(NET_\w+|SYS_MODULE|SYS_RAWIO|SYS_TIME|
                                  AUDIT_\w+|SYS_BOOT|MKNOD|BPF|
                                  SYS_NICE|MAC_\w+|SETPCAP|LINUX_IMMUTABLE)$/x }
                    @caps;
    ok(!@forbidden, "worker: none of the forbidden capabilities")
        or diag("@forbidden");
    is($d->{PrivateDevices}[-1], 'yes',
       'worker: a /dev of pseudo-devices only');
    # root with CAP_DAC_OVERRIDE: the owner and the mode of /run/airlock
    # do not stop it from unlinking the proxy's socket (or Redis's) and
    # binding its own in its place; a read-only bind does, and a unix
    # socket on a read-only mount is still connected to
    my @ro = sort map { split ' ' } @{$d->{BindReadOnlyPaths} || []};
    my @rw = sort map { split ' ' } @{$d->{BindPaths} || []};
    ok("@ro" eq '/run/airlock /run/redis' && !@rw,
       'worker: the socket directories are bound read-only (BindPaths: '
       . "@rw; BindReadOnlyPaths: @ro)");

    # a deny list: runsc needs @mount, @privileged and @debug (ptrace)
    my %denied = map { $_ => 1 }
                 map { s/^~//r } grep { /^~?@/ } split ' ',
                 join ' ', grep { /^~/ } @{$d->{SystemCallFilter} || []};
    my @missing = grep { !$denied{$_} }
                  qw(@clock @cpu-emulation @keyring @module @obsolete
                     @raw-io @reboot @swap);
    ok(!@missing, 'worker: the system calls runsc never makes are denied')
        or diag("not denied: @missing");
    ok(!grep({ $denied{$_} } qw(@mount @privileged @debug)),
       'worker: what runsc needs is not denied');
    is($d->{SystemCallErrorNumber}[-1], 'EPERM',
       'worker: a denied call fails, it does not kill');
}

# /run/airlock (tmpfiles.d): whoever may write the directory of the
# proxy's socket may unlink it and bind their own in its place, and the
# agent's unit binds /run/airlock writable.  So it is root's alone, and
# the agent's own socket lives in a directory of its own, the one nginx
# publishes.
{
    my %dir;
    for (split /\n/, slurp("$top/conf/airlock.tmpfiles")) {
        my ($type, $path, $mode, $user, $group) = split ' ';
        next unless defined $type && $type =~ /^[dD]$/;
        $dir{$path} = { mode => oct($mode), user => $user, group => $group };
    }
    my $ra = $dir{'/run/airlock'};
    ok($ra && $ra->{user} eq 'root' && !($ra->{mode} & 022),
       '/run/airlock: only root may remove or replace the proxy\'s socket '
       . ($ra ? sprintf('(%04o %s %s)', $ra->{mode}, $ra->{user},
                        $ra->{group}) : '(missing)'));
    my $d = directives(slurp($units{agent}));
    my ($listen) = ($d->{ExecStart}[0] // '') =~ /--listen\s+(\S+)/;
    my ($gateway) = ($d->{ExecStart}[0] // '') =~ /--gateway\s+(\S+)/;
    (my $ldir = $listen // '') =~ s{/[^/]+$}{};
    (my $gdir = $gateway // '') =~ s{/[^/]+$}{};
    isnt($ldir, $gdir, "the agent's socket ($listen) is not in the "
         . "directory of the proxy's ($gateway)");
    is($dir{$ldir} && $dir{$ldir}{user}, $d->{User}[0],
       "its directory $ldir is the agent's own (tmpfiles.d)");
    my $ngx = slurp("$top/appliance-image/root/etc/nginx/conf.d/airlock.conf");
    like($ngx, qr{proxy_pass http://unix:\Q$listen\E:;},
         'the image\'s nginx publishes that socket at /api/');
}

# /run/redis, bound into the agent's and the worker's /run, is
# redis-server.service's RuntimeDirectory=, which systemd removes whenever
# Redis stops, a restart included: the daemons would keep the removed
# directory, and never see the new socket.  The package's drop-in for
# redis-server.service keeps it.
{
    my $dropin = "$top/conf/redis-runtime-dir.conf";
    my $d = -f $dropin ? directives(slurp($dropin)) : {};
    ok((grep { /^(yes|restart)$/ } @{$d->{RuntimeDirectoryPreserve} || []}),
       'redis-server.service keeps /run/redis across restarts '
       . '(RuntimeDirectoryPreserve=, conf/redis-runtime-dir.conf)');
    like(slurp("$top/Makefile"),
         qr{conf/redis-runtime-dir\.conf\s+\\?\s*\S*redis-server\.service\.d/}s,
         'make install puts it in redis-server.service.d');
}

# A package install leaves redis.conf to the operator, whom the README
# tells what to set: each setting the image gives Redis
# (configure-root.sh), "port 0" among them.  Debian's Redis also listens
# on 127.0.0.1:6379 without a password, open to every local user: whoever
# adds to the job stream has the worker fetch as the policy's worker
# client, and whoever reads it reads the sessions.
{
    my $cr = slurp("$top/appliance-image/configure-root.sh");
    my @set = $cr =~ /-e 's\|[^|]*\|([^|]+)\|'/g;
    ok((grep { $_ eq 'port 0' } @set),
       'the image turns Redis\'s TCP port off (configure-root.sh)');
    (my $readme = slurp("$top/README.md")) =~ s/\s+/ /g;
    my @missing = grep { $readme !~ /`\Q$_\E`/ } @set;
    is("@missing", '', 'the README tells a package install to set each of '
       . 'them in redis.conf: ' . join(', ', @set));
}

# A file a unit loads with LoadCredential= and no SetCredential= of the
# same ID to fall back on must be there, or the unit does not start: the
# README's "Installing" tells a package install where each comes from
# (the appliance key, which only the image makes on its first boot, and
# which only alertd's keyring drop-in loads).
{
    (my $install = slurp("$top/README.md"))
        =~ s/.*?^## Installing\n(.*?)^## .*/$1/ms;
    $install =~ s/\s+/ /g;
    my @need;
    for my $u (glob("$top/conf/*.service"),
               "$top/conf/airlock-alertd-keyring.conf")
    {
        my $d = directives(slurp($u));
        my %set = map { /^([^:]+):/ ? ($1 => 1) : () }
                  @{$d->{SetCredential} || []};
        for (@{$d->{LoadCredential} || []}) {
            my ($id, $path) = /^([^:]+):(\S+)$/ or next;
            push @need, $path unless $set{$id};
        }
    }
    ok(@need, "units load credentials with no fallback: @need");
    my @missing = grep { $install !~ /\Q$_\E/ } @need;
    is("@missing", '', 'the README says how a package install makes each');
}

# alertd: its ExecStart passes only options alertd takes, and sets the
# outbox bound where an operator looks for it
{
    my $d = directives(slurp("$top/conf/airlock-alertd.service"));
    my $exec = $d->{ExecStart}[0] // '';
    my %known = map { $_ => 1 }
                slurp("$top/alertd/alertd.c")
                =~ /^\s*\{ "([a-z-]+)",\s+(?:required|no)_argument/mg;
    my @unknown = grep { !$known{$_} } $exec =~ /\s--([a-z-]+)/g;
    ok(%known && !@unknown,
       'airlock-alertd: ExecStart passes only options alertd takes')
        or diag("unknown: @unknown");
    my ($max) = $exec =~ /\s--outbox-max\s+(\d+)/;
    ok(defined $max && $max >= 1 && $max <= 1000000,
       'airlock-alertd: --outbox-max is set, from 1 to 1000000');
}

# nftables: output dropped by default, only www-data's sockets let out
{
    my $s = slurp("$top/conf/nftables-airlock.conf");
    like($s, qr/hook output priority filter; policy drop;/,
         'nftables: output policy drop');
    my @accepts = grep { /meta skuid/ } split /\n/, $s;
    ok((grep { /meta skuid "www-data"( meta l4proto tcp)? accept\s*$/ }
        @accepts), 'nftables: nginx\'s user may connect out');
    ok(!(grep { /skuid "?(airlock-agent|airlock-worker|root|0\b)/ }
         @accepts), 'nftables: not the agent, the worker or root');
    # alertd delivers to webhooks off the appliance: its user has a
    # name (a static user, which DynamicUser= takes) the rule lets out
    my $d = directives(slurp("$top/conf/airlock-alertd.service"));
    my $user = $d->{User}[-1] // '';
    my $sysusers = slurp("$top/conf/airlock.sysusers");
    # each user and group declared once (debian/ links to this file)
    my %seen;
    my @twice = grep { $seen{$_}++ == 1 }
                map { /^([ug])\s+(\S+)/ ? "$1 $2" : () } split /\n/, $sysusers;
    ok(!@twice, 'sysusers.d: each user and group declared once')
        or diag("declared twice: @twice");
    ok($user ne '' && $sysusers =~ /^u\s+\Q$user\E\s/m,
       "airlock-alertd runs as a user sysusers.d makes ($user)");
    ok($user ne '' && (grep { /skuid "?\Q$user\E"? .*accept\s*$/ } @accepts),
       'nftables: alertd\'s user may connect out (its webhooks)');
    # to its sinks alone: each rule that lets it out names the sets of
    # their addresses and ports (airlock-alertd-egress fills them)
    my @alertd = grep { /skuid "?\Q$user\E"? .*accept\s*$/ } @accepts;
    my @loose = grep {
        !/\bip6? daddr \. tcp dport \@alertd_sinks[46]\s+accept\s*$/
    } @alertd;
    ok(@alertd && !@loose,
       'nftables: alertd\'s user only to its sinks\' addresses and ports')
        or diag("loose: @loose");
    for my $f (qw(4 6)) {
        like($s, qr/^\s*set\ alertd_sinks$f\ \{
                    \s*type\ ipv${f}_addr\ \.\ inet_service\s*\}/mx,
             "nftables: the set alertd_sinks$f (IPv$f address, port)");
    }
    # but not to the appliance's own listeners on loopback, which the
    # rule lets every other local socket reach: the status is root's and
    # nginx's, the clients' listener and the agent's /api/ the
    # operators' (root and uids 1000 and up), each refused to the rest
    # before lo is let out
    my ($out) = $s =~ /chain output \{(.*?)\n    \}/s;
    my @lines = grep { /\S/ && !/^\s*#/ } split /\n/, $out // '';
    my ($lo) = grep { $lines[$_] =~ /^\s*oif "lo" accept/ } 0 .. $#lines;
    my ($ops) = $s =~ /^define operators = \{([^}]*)\}/m;
    my %allowed = (9901 => '"root", "www-data"', '3128,8080' => $ops // '');
    for my $ports (sort keys %allowed) {
        my ($deny) = grep {
            $lines[$_] =~ /^\s*oif "lo" tcp dport (?:\{ ([\d, ]+) \}|(\d+)) meta skuid != (?:\{([^}]*)\}|\$(\w+)) .*reject/
            && join(',', sort split /,\s*/, $1 // $2) eq $ports
        } 0 .. $#lines;
        ok(defined $deny && defined $lo && $deny < $lo
           && $allowed{$ports} ne ''
           && $allowed{$ports} !~ /"\Q$user\E"/,
           "nftables: alertd's user may not reach $ports on loopback, "
           . 'refused before lo is let out');
    }
    like($s, qr/hook forward priority filter; policy drop;/,
         'nftables: no forwarding');
}

# the image build script: its options, without building anything
{
    my $build = "$top/appliance-image/build.sh";
    ok(-x $build, 'appliance-image/build.sh is executable');
    my $out = `$build --help 2>&1`;
    is($? >> 8, 0, 'build.sh --help');
    $out = `$build --no-such-option 2>&1`;
    is($? >> 8, 2, 'build.sh refuses an unknown option');
    my $fb = "$top/conf/airlock-firstboot.service";
    my $d = directives(slurp($fb));
    ok((grep { m{^!/etc/airlock/airlock.key$} }
        @{$d->{ConditionPathExists} || []}),
       'first boot unit runs only while the key is absent');
    ok((grep { m{airlockctl keygen /etc/airlock/airlock.key} }
        @{$d->{ExecStart} || []}), 'first boot unit runs airlockctl keygen');
    like($d->{StandardOutput}[0] // '', qr/console/,
         'first boot unit prints on the console');
    if ($sa) {
        my @bad = grep { !/Command \/usr\/bin\/airlock\S* is not executable/ }
                  grep { /\S/ } split /\n/, `$sa verify $fb 2>&1`;
        ok(!@bad, 'systemd-analyze verify airlock-firstboot.service')
            or diag(join "\n", @bad);
    }
}

# configure-root.sh lays the overlay (appliance-image/root) over the
# image's root.  The overlay's modes are those of the checkout, which its
# umask made: from a checkout made under umask 077 (or 002) they must
# neither reach the root's own directories (/, /etc, /usr, /usr/lib: the
# overlay's "." and parents) nor make the overlay's files root's alone.
# Run on a stand-in root, with chroot stubbed out (it logs its calls).
{
    my $t = tempdir(CLEANUP => 1);
    my $root = "$t/root";
    mkdir "$t/bin";
    open my $fh, '>', "$t/bin/chroot" or die "$t/bin/chroot: $!";
    print $fh "#!/bin/sh\necho \"chroot \$*\" >> $t/chroot.log\n";
    close $fh;
    chmod 0755, "$t/bin/chroot";
    for my $d ('', qw(/etc /etc/redis /etc/systemd /etc/systemd/system
                      /etc/nginx /usr /usr/lib))
    {
        mkdir "$root$d";
        chmod 0755, "$root$d";
    }
    open $fh, '>', "$root/etc/redis/redis.conf" or die "redis.conf: $!";
    print $fh "# unixsocket /run/redis-server/redis-server.sock\n"
        . "# unixsocketperm 700\nport 6379\nappendonly no\n"
        . "appendfsync everysec\n";
    close $fh;
    system("cp -R $top/appliance-image/root $t/overlay "
           . "&& chmod -R go-rwx $t/overlay") == 0 or die "cp overlay";

    my $out = `PATH=$t/bin:\$PATH sh $top/appliance-image/configure-root.sh \\
        $root $t/overlay $top/conf 2>&1`;
    is($? >> 8, 0, 'configure-root.sh on a stand-in root') or diag($out);
    my @bad = grep { (((stat "$root$_")[2] // 0) & 07777) != 0755 }
              ('', qw(/etc /usr /usr/lib /etc/systemd /etc/systemd/system
                      /etc/nginx));
    is("@bad", '', 'an overlay from a checkout made under umask 077 keeps '
       . 'the modes of the root\'s own directories')
        or diag(join ' ', map { sprintf '%s %04o', $_ || '/',
                                (stat "$root$_")[2] & 07777 } @bad);
    my %want = ('/etc/nginx/conf.d' => 0755,
                '/etc/nginx/conf.d/airlock.conf' => 0644,
                '/etc/systemd/system/airlock-credentials.service' => 0644,
                '/usr/lib/airlock' => 0755,
                '/usr/lib/airlock/placeholder-credentials' => 0755,
                '/usr/lib/airlock/selftest' => 0755);
    @bad = grep { (((stat "$root$_")[2] // 0) & 07777) != $want{$_} }
           sort keys %want;
    is("@bad", '', 'and its files are readable, its programs runnable, by '
       . 'all (0644, 0755)')
        or diag(join ' ', map { sprintf '%s %04o', $_,
                                ((stat "$root$_")[2] // 0) & 07777 } @bad);
}

done_testing();
