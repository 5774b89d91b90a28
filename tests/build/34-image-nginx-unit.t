#!/usr/bin/perl
# The appliance image's nginx.service drop-in
# (appliance-image/root/etc/systemd/system/nginx.service.d/
# airlock-hardening.conf), read without building the image.
#
# UMask=: Debian's nginx.service has none, so nginx ran with systemd's
# 0022, and a log file nginx creates is 0644 less the umask: the image's
# access log, /var/log/nginx/airlock.log, was readable by every local
# user (every client's request line, the denials) until logrotate first
# replaced it.  The drop-in's umask takes the others' bits and the
# group's write away; an nginx started with it creates its access log
# 0640.
#
# A sandbox: Debian's unit has none (systemd-analyze security 9.6,
# "UNSAFE"), and nginx holds every credential while its workers parse
# every client request.  The drop-in makes the system read-only but what
# nginx writes (ProtectSystem=strict, ReadWritePaths=: every path
# nginx's build, Debian's nginx.conf and the image's conf.d/airlock.conf
# write to is under one of them, and neither /var nor /var/lib is one:
# Redis's append-only file, the worker's jobs, alertd's outbox and
# dpkg's database are not nginx's), hides /home and /tmp, keeps no device,
# no new privileges, only the capabilities the master uses (none of
# CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_PTRACE, ...), no
# socket families but unix, IP and netlink, no kernel tunables, modules,
# log, clock or namespaces, and a system call filter; systemd-analyze
# security rates the unit with it below 4.
#
# The drop-in is a file git tracks (configure-root.sh copies no
# other), and systemd-analyze verify passes Debian's nginx.service with
# it and the package's drop-ins.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $rel = 'appliance-image/root/etc/systemd/system/nginx.service.d/'
          . 'airlock-hardening.conf';
my $dropin = "$top/$rel";

need_cmd('git');

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return '';
    local $/;
    return <$fh> // '';
}

sub directives {
    my %d;
    for my $s (@_) {
        (my $t = $s) =~ s/\\\n\s*/ /g;
        for (split /\n/, $t) {
            next if /^\s*(#|;|\[|$)/;
            my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
            push @{$d{$k}}, $v;
        }
    }
    return \%d;
}

ok(-f $dropin, "the image's overlay has $rel");
my $tracked = `git -C $top ls-files -- $rel 2>/dev/null`;
chomp $tracked;
is($tracked, $rel, 'a file git tracks (configure-root.sh copies no other)');
my $d = directives(slurp($dropin));

# --- the umask

my $um = $d->{UMask} ? $d->{UMask}[-1] : undef;
ok(defined $um && $um =~ /^0?[0-7]{3,4}$/, 'UMask= is set')
    or diag($um // 'none');
my $mask = defined $um && $um =~ /^[0-7]+$/ ? oct($um) : 0;
is($mask & 0027, 0027, 'it takes the others\' bits and the group\'s write');
is($mask & 0700, 0, 'and none of the owner\'s (nginx, root, writes its logs)');

# --- the sandbox

my %want = (ProtectSystem => 'strict', ProtectHome => 'yes',
            PrivateTmp => 'yes', PrivateDevices => 'yes',
            PrivateIPC => 'yes', NoNewPrivileges => 'yes',
            AmbientCapabilities => '', ProtectKernelTunables => 'yes',
            ProtectKernelModules => 'yes', ProtectKernelLogs => 'yes',
            ProtectControlGroups => 'yes', ProtectClock => 'yes',
            ProtectHostname => 'yes', KeyringMode => 'private',
            LockPersonality => 'yes', RestrictRealtime => 'yes',
            RestrictSUIDSGID => 'yes', RestrictNamespaces => 'yes',
            SystemCallArchitectures => 'native',
            SystemCallErrorNumber => 'EPERM');
for my $k (sort keys %want) {
    is($d->{$k} ? $d->{$k}[-1] : undef, $want{$k}, "$k=$want{$k}");
}
my @caps = split ' ', ($d->{CapabilityBoundingSet}
                       ? $d->{CapabilityBoundingSet}[-1] : '');
ok(@caps, 'a capability bounding set') or diag('none');
my %allowed = map { $_ => 1 } qw(CAP_NET_BIND_SERVICE CAP_SETUID CAP_SETGID
                                  CAP_CHOWN CAP_DAC_OVERRIDE CAP_FOWNER
                                  CAP_KILL);
my @more = grep { !$allowed{$_} } @caps;
is("@more", '', 'of the capabilities nginx\'s master uses only');
my @af = split ' ', ($d->{RestrictAddressFamilies}
                     ? $d->{RestrictAddressFamilies}[-1] : '');
is(join(' ', sort @af), 'AF_INET AF_INET6 AF_NETLINK AF_UNIX',
   'RestrictAddressFamilies= unix, IP, netlink');
my $scf = join ' ', @{$d->{SystemCallFilter} || []};
my @groups = qw(@clock @debug @module @mount @raw-io @reboot @swap);
my @unfiltered = grep { $scf !~ /^~.*\Q$_\E(\s|$)/ } @groups;
is("@unfiltered", '', 'SystemCallFilter= denies ' . join(' ', @groups));

my $ngx = slurp("$top/appliance-image/root/etc/nginx/conf.d/airlock.conf");
like($ngx, qr{^\s*access_log\s+/var/log/nginx/airlock\.log\b}m,
     'the image\'s nginx writes an access log of its own');

# what nginx writes is writable under the drop-in: its build's paths
# (nginx -V), Debian's nginx.conf, the image's conf.d/airlock.conf
{
    my @rw = map { split ' ' } @{$d->{ReadWritePaths} || []};
    my $ps = $d->{ProtectSystem} ? $d->{ProtectSystem}[-1] : 'no';
    # /var/lock is Debian's link to /run/lock
    my $writable = sub {
        (my $p = shift) =~ s{^/var/lock/}{/run/lock/};
        return 1 if grep { $p eq $_ || index($p, "$_/") == 0 }
                    map { s/^-//r } @rw;
        return 1 if $ps eq 'full' && $p =~ m{^/(var|run)/};
        return 0;
    };
    my @paths;
    my $nginx = `command -v nginx 2>/dev/null || ls /usr/sbin/nginx 2>/dev/null`;
    chomp $nginx;
    if ($nginx && -x $nginx) {
        push @paths, `$nginx -V 2>&1`
            =~ /--(?:http-log|error-log|lock|pid|http-[a-z-]+-temp)-path=(\/\S+)/g;
    }
    my $conf = slurp('/etc/nginx/nginx.conf');
    push @paths, $conf =~ /^\s*(?:pid|error_log|access_log)\s+(\/[^\s;]+)/mg;
    push @paths, $ngx =~ /^\s*(?:access_log|error_log|airlock_deny_log|airlock_journal|airlock_llm_log)\s+(\/[^\s;]+)/mg;
    push @paths, $ngx =~ /^\s*listen\s+unix:(\/[^\s;]+)/mg;
    ok(@paths >= 6, 'the paths nginx writes: ' . join(' ', @paths));
    my @ro = grep { !$writable->($_) } @paths;
    is("@ro", '', 'each is writable under the drop-in');
    my @wide = grep { m{^-?/(var|var/lib|var/log|usr|etc)/?$} } @rw;
    is("@wide", '', 'no ReadWritePaths= opens all of /var, /var/lib, '
       . '/var/log, /usr or /etc');
}

# an nginx started with that umask creates its access log 0640
SKIP: {
    my $nginx = `command -v nginx 2>/dev/null || ls /usr/sbin/nginx 2>/dev/null`;
    chomp $nginx;
    skip 'no nginx here', 1 unless $nginx && -x $nginx;
    my $p = tempdir(CLEANUP => 1);
    mkdir "$p/logs" or die;
    open my $fh, '>', "$p/nginx.conf" or die;
    print $fh "pid $p/nginx.pid; error_log $p/logs/error.log;\n"
              . "daemon off; master_process off;\n"
              . "events {}\nhttp { access_log $p/logs/airlock.log;\n"
              . "    server { listen unix:$p/s.sock; } }\n";
    close $fh;
    my $pid = fork // die;
    if ($pid == 0) {
        umask $mask;
        open STDERR, '>', '/dev/null';
        exec $nginx, '-p', $p, '-c', "$p/nginx.conf";
        exit 127;
    }
    my $mode;
    for (1 .. 50) {
        last if -e "$p/logs/airlock.log" && -S "$p/s.sock";
        select(undef, undef, undef, 0.1);
    }
    $mode = (stat "$p/logs/airlock.log")[2];
    kill 'TERM', $pid;
    waitpid $pid, 0;
    is(defined $mode ? sprintf('%04o', $mode & 07777) : 'none', '0640',
       'nginx with this umask creates its access log 0640');
}

# systemd-analyze verify: Debian's unit, the package's drop-ins, this one
SKIP: {
    my $unit = '/lib/systemd/system/nginx.service';
    my $sa = `command -v systemd-analyze 2>/dev/null`;
    chomp $sa;
    skip "no $unit or systemd-analyze here", 1 unless -f $unit && $sa;
    skip 'no drop-in to verify', 1 unless -f $dropin;
    my $u = tempdir(CLEANUP => 1);
    system('cp', $unit, "$u/nginx.service") == 0 or die;
    mkdir "$u/nginx.service.d" or die;
    system('cp', "$top/conf/nginx-credentials.conf",
           "$u/nginx.service.d/airlock.conf") == 0 or die;
    system('cp', "$top/conf/nginx-restart.conf",
           "$u/nginx.service.d/airlock-restart.conf") == 0 or die;
    system('cp', $dropin, "$u/nginx.service.d/airlock-hardening.conf") == 0
        or die;
    local $ENV{SYSTEMD_UNIT_PATH} = "$u:";
    my @bad = grep { /\S/ } split /\n/, `$sa verify nginx.service 2>&1`;
    ok(!@bad, "systemd-analyze verify Debian's nginx.service with it")
        or diag("@bad");
}

# systemd-analyze security (--offline: systemd 252 and later)
SKIP: {
    my $unit = '/lib/systemd/system/nginx.service';
    my $sa = `command -v systemd-analyze 2>/dev/null`;
    chomp $sa;
    skip "no $unit or systemd-analyze here", 1 unless -f $unit && $sa;
    skip 'no drop-in to rate', 1 unless -f $dropin;
    my $u = tempdir(CLEANUP => 1);
    system('cp', $unit, "$u/nginx.service") == 0 or die;
    mkdir "$u/nginx.service.d" or die;
    system('cp', $dropin, "$u/nginx.service.d/airlock-hardening.conf") == 0
        or die;
    local $ENV{SYSTEMD_UNIT_PATH} = "$u:";
    my $out = `$sa security --offline=yes nginx.service 2>&1`;
    my ($level) = $out =~ /Overall exposure level for \S+: ([\d.]+)/;
    skip 'this systemd-analyze has no security --offline', 1
        unless defined $level;
    ok($level < 4, "systemd-analyze security: $level, below 4");
}

done_testing();
