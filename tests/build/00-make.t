#!/usr/bin/perl
# The build itself: a second `make` with nothing changed does nothing (no
# copy of nginx's sources, no configure, no relink), with BUILD given as an
# absolute path; a changed module source rebuilds only the module, once;
# `make help` names every target; BENCH_ARGS reaches a benchmark script;
# auto/deps refuses what it does not know, keeps each purpose's packages
# to itself, and leaves no system service of the packages it lists
# enabled at boot.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use POSIX ();

# a long run: make test runs it beside its other tests (PROVE_RULES in the
# Makefile), at a lower priority, so that they keep their timing
POSIX::nice(10);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $ci = $ENV{CI};

# the make under test is not a sub-make of the one running the suite
delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES)};

sub run {
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

# a scratch copy of the tree, so touching a source changes nothing here
my $tmp = tempdir(CLEANUP => 1);
my $src = "$tmp/src";
my $build = "$tmp/build";
mkdir $src or die "mkdir $src: $!";

my ($rc, $out);
if (-e "$top/.git") {
    ($rc, $out) = run("cd $top && git ls-files -co --exclude-standard -z "
        . "| tar -c --null --ignore-failed-read -T - -f - "
        . "| tar -x -C $src -f -");
} else {
    ($rc, $out) = run("cd $top && tar -c --exclude='./build*' -f - . "
        . "| tar -x -C $src -f -");
}
is($rc, 0, 'scratch copy of the tree') or diag($out);

# DEPS=true: the packages are auto/deps's business, tested below
my $make = "make -C $src DEPS=true BUILD=$build";

($rc, $out) = run("$make -j2 all");
is($rc, 0, 'first make (BUILD is an absolute path outside the tree)')
    or diag((split /\n/, $out)[-20 .. -1]);
ok(-f "$build/modules/ngx_http_airlock_module.so", 'the module is built');
ok(-f "$build/airlockctl", 'airlockctl is built');
ok(!-e "$src/build", 'nothing is written into the tree');

($rc, $out) = run("$make -q all");
is($rc, 0, 'make -q: everything is up to date after one make');

($rc, $out) = run("$make all");
is($rc, 0, 'second make');
like($out, qr/Nothing to be done/, 'second make says nothing to do');
unlike($out, qr/configure|cp -r|\bcc\b|ar rcs/,
       'second make copies, configures, compiles and links nothing')
    or diag($out);

# a module source changes: the module is rebuilt, then nothing again
my $mod = "$src/modules/ngx_http_airlock_variables.c";
utime(undef, undef, $mod) or die "touch $mod: $!";

($rc, $out) = run("$make -q all");
isnt($rc, 0, 'a touched module source makes the build out of date');

($rc, $out) = run("$make all");
is($rc, 0, 'make after touching a module source') or diag($out);
like($out, qr/objs\/Makefile modules/, 'the module is rebuilt');
unlike($out, qr/configure|cp -r/, 'nginx is not copied or reconfigured');

($rc, $out) = run("$make -q all");
is($rc, 0, 'and up to date again');

# make install over an installed tree (an upgrade from source, DESTDIR
# empty on the appliance): the operator's policy and worker.conf stay as
# they are, and /var/log/airlock keeps the set-group-ID mode and group
# tmpfiles.d gave it (alertd reads the journal through that group); the
# other files in /etc (the location snippet, the logrotate file) are
# handled as dpkg handles conffiles: changed here, they are kept and the
# new version is put beside them as FILE.dpkg-dist; as the last install
# wrote them, they are replaced
my $dest = "$tmp/dest";
($rc, $out) = run("$make install DESTDIR=$dest");
is($rc, 0, 'make install DESTDIR=...') or diag($out);
ok(-f "$dest/etc/airlock/policy.yaml", 'it installs the example policy');
my $gid = (getpwnam('nobody'))[3] // 65534;
my %conf = ('etc/airlock/airlock-location.conf' => 'airlock-location.conf',
            'etc/logrotate.d/airlock' => 'airlock.logrotate');
for my $f ('etc/airlock/policy.yaml', 'etc/airlock/worker.conf',
           sort keys %conf)
{
    open(my $fh, '>>', "$dest/$f") or die "$f: $!";
    print $fh "# the operator's own\n";
    close $fh;
}
chown(0, $gid, "$dest/var/log/airlock") if $> == 0;
chmod(02755, "$dest/var/log/airlock") or die "chmod: $!";
($rc, $out) = run("$make install DESTDIR=$dest");
is($rc, 0, 'make install again, over the installed files') or diag($out);
for my $f ('etc/airlock/policy.yaml', 'etc/airlock/worker.conf',
           sort keys %conf)
{
    like(`cat $dest/$f`, qr/^# the operator's own$/m,
         "/$f, changed here, is kept");
}
for my $f (sort keys %conf) {
    is(`cat $dest/$f.dpkg-dist`, `cat $src/conf/$conf{$f}`,
       "this version's /$f is beside it as /$f.dpkg-dist");
    like($out, qr/keeping \Q$dest\E\/\Q$f\E, changed here/,
         'and make install says so');
}
my @st = stat("$dest/var/log/airlock");
is(sprintf('%04o', $st[2] & 07777), '2755',
   '/var/log/airlock keeps its set-group-ID mode');
is($st[5], $> == 0 ? $gid : $st[5], 'and its group');

# a tree an older version installed, not changed since: its location
# snippet and logrotate file are the older version's, and so are the
# checksums that install recorded; they are replaced
my $sums = "$dest/usr/share/airlock/conffiles.sha256";
ok(-f $sums, 'make install records the checksums of what it installed');
mkdir "$dest/usr/share/airlock";
open(my $sf, '>', $sums) or die "$sums: $!";
for my $f (sort keys %conf) {
    open(my $fh, '>', "$dest/$f") or die "$f: $!";
    print $fh "# an older version\n";
    close $fh;
    my ($sum) = split ' ', `sha256sum < $dest/$f`;
    print $sf "$sum  /$f\n";
}
close $sf;
($rc, $out) = run("$make install DESTDIR=$dest");
is($rc, 0, 'make install over an older version\'s files') or diag($out);
for my $f (sort keys %conf) {
    is(`cat $dest/$f`, `cat $src/conf/$conf{$f}`,
       "/$f, as the older version installed it, is replaced");
    ok(!-e "$dest/$f.dpkg-dist", 'and no /' . $f . '.dpkg-dist is left');
}

# a file deleted here stays deleted (rotation turned off), as dpkg leaves
# a deleted conffile
unlink "$dest/etc/logrotate.d/airlock" or die "unlink: $!";
($rc, $out) = run("$make install DESTDIR=$dest");
is($rc, 0, 'make install over a deleted logrotate file') or diag($out);
ok(!-e "$dest/etc/logrotate.d/airlock", 'it is not put back');
like($out, qr/keeping \Q$dest\E\/etc\/logrotate\.d\/airlock, deleted here/,
     'make install says so');
ok(-f "$dest/etc/logrotate.d/airlock.dpkg-dist",
   'this version\'s is beside it');

# PREFIX: the units run the programs installed under it, and name the
# docs installed there
my $local = "$tmp/local";
($rc, $out) = run("$make install DESTDIR=$local PREFIX=/usr/local");
is($rc, 0, 'make install PREFIX=/usr/local') or diag($out);
my @units = glob("$local/lib/systemd/system/*.service");
ok(@units, scalar(@units) . ' units installed');
my (@runs, @docs);
for my $u (@units) {
    my $text = do { local (@ARGV, $/) = $u; <> };
    push @runs, $text =~ m{^Exec\w*=[-+!\@:|]*(/\S*airlock\S*)}mg;
    push @docs, $text =~ m{^Documentation=file://(\S+)}mg;
}
ok(@runs && @docs, 'they run Airlock\'s programs and name its docs');
my @absent = grep { !-x "$local$_" } @runs;
is("@absent", '', 'each program a unit runs is installed there (under '
   . '/usr/local/bin)');
@absent = grep { !-f "$local$_" } @docs;
is("@absent", '', 'and each doc a unit names');

# on the system it installs to (DESTDIR empty), make install does what
# the package's postinst does: users and groups, /run/airlock and
# /var/log/airlock's mode, systemd's reload of the units (make -n: the
# commands it would run); with INSTALL_SETUP=yes, the first two under
# DESTDIR (systemd-sysusers, systemd-tmpfiles and systemctl are stubs)
($rc, $out) = run("$make -n install DESTDIR=");
is($rc, 0, 'make -n install, DESTDIR empty') or diag($out);
like($out, qr/^\s*if test "yes" = yes; then/m, 'it would set the system up')
    or diag($out);
like($out, qr/systemd-sysusers airlock\.conf/, 'the users and groups');
like($out, qr/systemd-tmpfiles --create airlock\.conf/,
     '/run/airlock and /var/log/airlock');
like($out, qr/systemctl daemon-reload/, 'and have systemd read the units');
my $stubs = "$tmp/stubs";
mkdir $stubs;
for my $c (qw(systemd-sysusers systemd-tmpfiles systemctl)) {
    open(my $fh, '>', "$stubs/$c") or die "$c: $!";
    print $fh "#!/bin/sh\necho \"$c \$*\" >> $stubs/log\n";
    close $fh;
    chmod 0755, "$stubs/$c";
}
($rc, $out) = run("PATH=$stubs:\$PATH $make install DESTDIR=$dest");
is($rc, 0, 'make install DESTDIR=... (stubs on PATH)') or diag($out);
ok(!-e "$stubs/log", 'under a DESTDIR, nothing of the system is set up');
($rc, $out) = run("PATH=$stubs:\$PATH $make install DESTDIR=$dest "
                  . "INSTALL_SETUP=yes");
is($rc, 0, 'make install DESTDIR=... INSTALL_SETUP=yes') or diag($out);
is(-e "$stubs/log" ? `cat $stubs/log` : '',
   "systemd-sysusers --root=$dest airlock.conf\n"
   . "systemd-tmpfiles --root=$dest --create airlock.conf\n",
   'with INSTALL_SETUP=yes, the users and directories under DESTDIR, and '
   . 'no reload of the running systemd');

# make help names every target
($rc, $out) = run("make -s -C $src help");
is($rc, 0, 'make help');
my $mk = do { local (@ARGV, $/) = "$src/Makefile"; <> };
my ($phony) = $mk =~ /^\.PHONY:\s*((?:.*\\\n)*.*)$/m;
my @targets = grep { $_ ne '\\' } split /\s+/, $phony;
ok(@targets > 10, scalar(@targets) . ' phony targets');
for my $target (@targets) {
    like($out, qr/(^|[\s|])\Q$target\E([\s|]|$)/m,
         "make help lists $target");
}

# BENCH_ARGS reaches the benchmark script, after its name
($rc, $out) = run("$make -n bench-llm BENCH_ARGS='--pin --rounds 3'");
is($rc, 0, 'make -n bench-llm BENCH_ARGS=...') or diag($out);
like($out, qr{tests/bench/llm\.pl --pin --rounds 3\s*$}m,
     'the benchmark gets BENCH_ARGS');

# make fuzz-build compiles each policy source once, into the archive that
# every target links (compiled into each target, they took six minutes of
# make test's set-up)
($rc, $out) = run("$make -n fuzz-build");
is($rc, 0, 'make -n fuzz-build') or diag($out);
my %compiled;
$compiled{$1}++ while $out =~ m{^clang .* -c (policy/al_\w+\.c) }mg;
my @policy = map { s{^\Q$src\E/}{}r } glob("$src/policy/al_*.c");
is(join(' ', sort keys %compiled), join(' ', sort @policy),
   'it compiles every policy source');
is(scalar(grep { $_ > 1 } values %compiled), 0, 'each once');
my @fuzz = glob("$src/tests/fuzz/fuzz_*.c");
# (the agent's targets link the agent's own archive before it, on a
# continued line)
(my $joined = $out) =~ s/\\\n\s*/ /g;
my @linked = $joined =~ m{^clang\ .*-fsanitize=fuzzer\ (?:\S+/)?tests/fuzz/
                       fuzz_\w+\.c\ +(?:\S+/libairlock-agent-fuzz\.a\ +)?
                       \S+/libairlock-fuzz\.a}mgx;
ok(@fuzz > 5 && @linked == @fuzz,
   scalar(@fuzz) . ' targets, each linked with the archive');
ok($out !~ m{^clang .*tests/fuzz/fuzz_\w+\.c.*policy/al_\w+\.c}m,
   'and with no policy source of its own');

# make test runs its long tests beside the rest (PROVE_RULES): each one
# it names exists, or it would run with the rest, one at a time
my ($slow) = $mk =~ /^SLOW_TESTS = tests\/\{(.*)\}\.t$/m;
my @slow = split /,/, $slow // '';
ok(@slow >= 3, "make test's long tests: @slow");
is(join(' ', grep { !-f "$src/tests/$_.t" } @slow), '', 'each exists');

# auto/deps: options and sets
($rc, $out) = run("sh $top/auto/deps --frobnicate");
is($rc, 2, 'auto/deps rejects an unknown option');
like($out, qr/unknown option "--frobnicate"/, 'and names it');
like($out, qr/usage:/, 'and prints its usage');

($rc, $out) = run("sh $top/auto/deps tset");
is($rc, 2, 'auto/deps rejects an unknown set');
like($out, qr/unknown set "tset"/, 'and names it');

my %list;
for my $set (qw(build test demo bench fuzz deb all)) {
    ($rc, $out) = run("sh $top/auto/deps --list $set");
    is($rc, 0, "auto/deps --list $set");
    $list{$set} = { map { $_ => 1 } split ' ', $out };
}
for my $p (qw(wrk clang prometheus lintian redis-server)) {
    ok(!$list{build}{$p}, "the build set does not pull in $p");
}
ok($list{bench}{wrk}, 'the bench set has wrk');
ok($list{fuzz}{clang}, 'the fuzz set has clang');
ok($list{test}{python3} && $list{demo}{python3}, 'test and demo have python3');
ok($list{deb}{lintian} && $list{deb}{debhelper}, 'the deb set has lintian');
ok(!$list{test}{wrk}, 'the test set has no wrk');
# tests/build/30-demo-redis.t runs the demo: in CI too
ok(!grep({ !$list{test}{$_} } keys %{ $list{demo} }),
   'the test set has every package of the demo set');

# the commands the suites run that a Debian 12 without them (a container,
# no systemd) lacks: the test set installs their packages then (and only
# then: it does not stop or disable their services, as it does its own
# packages'); tests/image/00-units.t runs systemd-analyze verify
{
    my $bin = tempdir(CLEANUP => 1);
    for my $c (qw(awk tr)) {
        my $p = `sh -c 'command -v $c'`;
        chomp $p;
        symlink($p, "$bin/$c") or die "symlink $c: $!";
    }
    ($rc, $out) = run("PATH=$bin /bin/sh $top/auto/deps --list test");
    my %l = map { $_ => 1 } split ' ', $out;
    my @missing = grep { !$l{$_} } qw(nodejs npm systemd);
    is("@missing", '', 'without node, npm and systemd-analyze on PATH, the '
       . 'test set has their packages') or diag($out);
}

# make deb runs dpkg-buildpackage, whose dpkg-checkbuilddeps wants the
# Build-Depends and, beside them, build-essential (Debian's built-in build
# dependency, which dpkg-dev only recommends and auto/deps installs
# without recommends); the test and image sets build the packages too
{
    my $control = do { local (@ARGV, $/) = "$top/debian/control"; <> };
    my ($bd) = $control =~ /^Build-Depends:\s*((?:.*\n)(?:[ \t].*\n)*)/m;
    my %virtual = ('debhelper-compat' => 'debhelper',
                   'dh-sequence-nginx' => 'nginx-dev');
    my @want = ('build-essential',
                map { $virtual{$_} // $_ }
                map { s/[\s(\[].*//sr } map { s/^\s+//r }
                split /,/, $bd // '');
    ok(@want > 5, 'debian/control\'s Build-Depends: ' . join(' ', @want));
    for my $set (qw(deb test)) {
        my @missing = grep { !$list{$set}{$_} } @want;
        is("@missing", '', "the $set set has what dpkg-buildpackage "
           . 'checks for (Build-Depends, build-essential)');
    }
}

# auto/deps stops and disables the system's servers only for the sets
# whose suites start their own (test, demo, bench): make, make deb and
# make image run it too, as root on machines whose nginx may be serving.
# systemctl and update-rc.d are stubs here that call every unit enabled
# and log what they are asked; nothing is missing, so nothing is installed.
SKIP: {
    my $why = $> != 0 ? 'not root'
        : !-x '/usr/bin/dpkg-query' ? 'not a Debian system'
        : system("sh $top/auto/deps --check deb test >/dev/null 2>&1") != 0
            ? 'the deb and test sets are not installed'
        : undef;
    if ($why) {
        skip "services of other sets: $why", 1;
    }
    my $stub = tempdir(CLEANUP => 1);
    for my $c (qw(systemctl update-rc.d)) {
        open(my $fh, '>', "$stub/$c") or die "write $stub/$c: $!";
        print $fh "#!/bin/sh\necho \"$c \$*\" >> $stub/log\n"
            . "[ \"\$1\" = is-enabled ] && echo enabled\n"
            . "[ \"\$1\" = is-active ] && exit 3\nexit 0\n";
        close $fh;
        chmod 0755, "$stub/$c";
    }
    for my $set (qw(build deb test)) {
        unlink "$stub/log";
        ($rc, $out) = run("PATH=$stub:\$PATH sh $top/auto/deps $set");
        is($rc, 0, "auto/deps $set (stubbed systemctl)") or diag($out);
        my $log = -f "$stub/log" ? `cat $stub/log` : '';
        my @off = $log =~ /^systemctl disable .*?(\S+)$/mg;
        if ($set eq 'test') {
            ok((grep { $_ eq 'nginx.service' } @off),
               'auto/deps test disables nginx.service (its suites start '
               . 'their own)');
        } else {
            is("@off", '', "auto/deps $set leaves the services alone");
        }
    }
}

# auto/deps leaves no service of its packages enabled at boot
SKIP: {
    my $why = $> != 0 ? 'not root'
        : !-x '/usr/bin/dpkg-query' ? 'not a Debian system'
        : undef;
    if ($why) {
        fail("service check: $why") if $ci;
        skip "service check: $why", 1;
    }

    ($rc, $out) = run("sh $top/auto/deps test");
    is($rc, 0, 'auto/deps test') or diag($out);

    my %pkgs;
    for my $p (keys %{ $list{all} }) {
        next unless `dpkg-query -W -f='\${db:Status-Status}' $p 2>/dev/null`
            eq 'installed';
        $pkgs{$p} = 1;
        my $deps = `dpkg-query -W -f='\${Depends}' $p`;
        for (split /[,|]/, $deps) {
            s/^\s+//;
            s/[\s(].*//s;
            s/:any$//;
            $pkgs{$_} = 1 if $_ ne '';
        }
    }

    my @units;
    for my $p (sort keys %pkgs) {
        for (`dpkg-query -L $p 2>/dev/null`) {
            chomp;
            push @units, $1 if m{^(?:/usr)?/lib/systemd/system/
                                   ([^/@]+\.(?:service|socket))$}x;
        }
    }
    ok(@units, 'the listed packages bring services: '
       . join(' ', @units));

    my $systemctl = -x '/usr/bin/systemctl' || -x '/bin/systemctl';
    for my $u (@units) {
        (my $name = $u) =~ s/\.service$//;
        if ($systemctl) {
            my $state = `systemctl is-enabled $u 2>/dev/null`;
            chomp $state;
            isnt($state, 'enabled', "$u is not enabled ($state)");
        }
        my @wants = glob("/etc/systemd/system/*.wants/$u");
        is("@wants", '', "no .wants link to $u");
        my @rc = glob("/etc/rc[2-5].d/S[0-9][0-9]$name");
        is("@rc", '', "no System V start link for $name");
    }
}

done_testing();
