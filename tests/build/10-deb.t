#!/usr/bin/perl
# make deb: the two packages' contents, dependencies and maintainer
# scripts, and nothing git does not track in them; every command has its
# manual page; lintian finds no error and no command without a manual
# page; the packages would install here (dpkg --dry-run); installed into
# a fresh root of this release, its users, groups and /run/airlock exist
# and nginx -t passes; unpacked, the module loads into this machine's
# nginx and airlockctl passes the packaged policy; the packaged policy's
# file: secrets, the nginx.service drop-in and alertd's unit name the
# same credentials; in another fresh root, an upgrade keeps the running
# daemons running (and the key pair, the credentials and an edited
# policy), a removal stops them, a log rotation reopens nginx's
# Airlock logs whatever the policy on disk, the module's upgrade under a
# running nginx asks for a restart only while nginx -t passes, and a
# purge leaves nothing of the package behind.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use POSIX ();
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

# a long run: make test runs it beside its other tests (PROVE_RULES in the
# Makefile), at a lower priority, so that they keep their timing
POSIX::nice(10);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $ci = $ENV{CI};

# the make under test is not a sub-make of the one running the suite
delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES)};

need_cmd(qw(dpkg-buildpackage dh dpkg-deb git));

sub run {
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

my $tmp = tempdir(CLEANUP => !$ENV{AIRLOCK_KEEP});
my $build = "$tmp/build";
my $deb = "$build/deb";

# built from a git checkout of this tree's tracked files (as they are in
# its working tree), in which files git does not track lie in the
# directories the install takes whole (every conf/*.service, every
# docs/*.md): a unit written for this machine, a note with a secret in
# it.  Neither may reach a package.
my $copy = "$tmp/src";
mkdir $copy or die "mkdir $copy: $!";
system("git -C $top ls-files -c -z | (cd $top && tar -c --null "
       . "--ignore-failed-read -T - -f - 2>/dev/null) | tar -x -C $copy -f - "
       . "&& git -C $copy init -q && git -C $copy add -A") == 0
    or die "a git checkout of $top in $copy failed";
my $secret = "untracked-secret-$$";
my %untracked = (
    'conf/airlock-local.service' =>
        "[Service]\nExecStart=/bin/true\n",
    'docs/local-notes.md' =>
        "the webhook secret: $secret\n",
);
for my $f (sort keys %untracked) {
    open(my $uf, '>', "$copy/$f") or die "write $copy/$f: $!";
    print $uf $untracked{$f};
    close $uf;
}

my ($rc, $out) = run("make -s -C $copy DEPS=true BUILD=$build deb");
is($rc, 0, 'make deb') or diag($out);
for my $f (sort keys %untracked) {
    like($out, qr/not packaged.*\Q$f\E/,
         "make deb says it leaves out $f, which git does not track");
}

my ($mod) = glob("$deb/libnginx-mod-http-airlock_*.deb");
my ($pkg) = glob("$deb/airlock_*.deb");
ok($mod, 'libnginx-mod-http-airlock .deb built');
ok($pkg, 'airlock .deb built');
unless ($mod && $pkg) {
    diag(`tail -40 $deb/build.log`);
    done_testing();
    exit;
}

sub tail_lines {
    my ($text, $n) = @_;
    my @l = split /\n/, $text;
    return join("\n", @l > $n ? @l[-$n .. -1] : @l);
}

sub field {
    my ($file, $name) = @_;
    my $v = `dpkg-deb -f $file $name`;
    chomp $v;
    return $v;
}

sub contents {
    my ($file) = @_;
    my %c;
    for (`dpkg-deb -c $file`) {
        my @f = split ' ';
        (my $path = $f[5]) =~ s{^\.}{};
        $path =~ s{/$}{} if $path ne '/';
        $c{$path} = $f[0];
    }
    return \%c;
}

# the module package
my ($abi) = `dpkg-query -W -f='\${Provides}' nginx` =~ /(nginx-abi-[\w.+~-]+)/;
ok($abi, "this nginx provides $abi");
my $dep = field($mod, 'Depends');
like($dep, qr/(^|, )\Q$abi\E(,|$)/, "the module depends on $abi exactly");
like($dep, qr/libsodium/, 'and on the libraries it links (shlibs)');

my $c = contents($mod);
is($c->{'/usr/lib/nginx/modules/ngx_http_airlock_module.so'}, '-rw-r--r--',
   'the module in /usr/lib/nginx/modules');
ok(exists $c->{'/usr/share/nginx/modules-available/mod-http-airlock.conf'},
   'its load snippet in /usr/share/nginx/modules-available');

my $ctl = "$tmp/ctl-mod";
system("dpkg-deb -e $mod $ctl") == 0 or die "dpkg-deb -e failed";
my $postinst = do { local (@ARGV, $/) = "$ctl/postinst"; <> } // '';
like($postinst,
     qr{mod-http-airlock\.conf:50-mod-http-airlock\.conf},
     'postinst links it into /etc/nginx/modules-enabled (dh_nginx)');
like($postinst, qr/nginx-reload/, 'and asks nginx to reload');

# the airlock package
$dep = field($pkg, 'Depends');
my $version = field($pkg, 'Version');
like($dep, qr/libnginx-mod-http-airlock \(= \Q$version\E\)/,
     'airlock depends on the module of the same version');
like($dep, qr/(^|, )nginx(,|$)/, 'and on nginx');
like($dep, qr/systemd-sysusers/, 'and on something to create its users');
like($dep, qr/(^|, )redis-server(,|$)/,
     'and on redis-server (the agent and worker units join its group)');
like(field($pkg, 'Recommends') // '', qr/(^|, )runsc(,|$)/,
     'and recommends runsc (the worker runs each job under it)');
like(field($pkg, 'Suggests') // '', qr/(^|, )bubblewrap(,|$)/,
     'and suggests bubblewrap (the worker\'s bwrap backend)');

$c = contents($pkg);
for my $f ('/usr/bin/airlockctl', '/usr/bin/airlock-alertd') {
    is($c->{$f}, '-rwxr-xr-x', "$f");
}
for my $f ('/lib/systemd/system/airlock-alertd.service',
           '/lib/systemd/system/nginx.service.d/airlock.conf',
           '/lib/systemd/system/nginx.service.d/airlock-restart.conf',
           '/etc/airlock/policy.yaml',
           '/etc/logrotate.d/airlock',
           '/usr/lib/sysusers.d/airlock.conf',
           '/usr/lib/tmpfiles.d/airlock.conf',
           '/usr/share/doc/airlock/copyright',
           '/usr/share/airlock/airlock-alertd-keyring.conf')
{
    is($c->{$f}, '-rw-r--r--', "$f");
}
ok(exists $c->{'/etc/airlock/airlock-location.conf'},
   '/etc/airlock/airlock-location.conf')
    if -f "$top/conf/airlock-location.conf";
ok(exists $c->{'/etc/airlock/worker.conf'}, '/etc/airlock/worker.conf')
    if glob("$top/worker/*.c");
ok(grep(m{^/usr/share/doc/airlock/policy\.md}, keys %$c), 'the docs');

# the docs the units (Documentation=) and the manual pages point to are
# there under the names they give (not compressed to NAME.md.gz)
my %doc;
for my $f (glob("$top/conf/*.service"), glob("$top/debian/*.[18]")) {
    my $text = do { local (@ARGV, $/) = $f; <> } // '';
    $text =~ s/\\//g;
    (my $name = $f) =~ s{.*/}{};
    $doc{$1}{$name} = 1 while $text =~ m{(/usr/share/doc/airlock/[\w.-]+)}g;
}
ok(%doc, 'the units and manual pages name docs: '
   . join(' ', sort map { s{.*/}{}r } keys %doc));
for my $d (sort keys %doc) {
    ok(exists $c->{$d}, "$d, which " . join(', ', sort keys %{$doc{$d}})
       . ' names, is in the package');
}
# every command has its manual page (tests/build/45-man-pages.t checks
# the pages themselves)
my @cmds = sort grep { m{^/usr/s?bin/[^/]+$} && $c->{$_} =~ /^-/ } keys %$c;
ok(@cmds, 'the package installs commands: ' . join(' ', @cmds));
for my $f (@cmds) {
    (my $n = $f) =~ s{.*/}{};
    ok(grep({ exists $c->{"/usr/share/man/man$_/$n.$_.gz"} } 1, 8),
       "$f has its manual page in /usr/share/man/man1 or man8");
}
ok(!grep(m{^/usr/lib/debug|\.a$|/etc/airlock/credentials}, keys %$c),
   'no debug files, static libraries or credentials directory');
my @leaked = grep { m{/(airlock-local\.service|local-notes\.md)$} } keys %$c;
is("@leaked", '', 'nothing git does not track is in the package');
($rc, $out) = run("grep -rl $secret $deb/src");
isnt($rc, 0, 'nor in the sources it was built from') or diag($out);

$ctl = "$tmp/ctl-airlock";
system("dpkg-deb -e $pkg $ctl") == 0 or die "dpkg-deb -e failed";
my $conffiles = do { local (@ARGV, $/) = "$ctl/conffiles"; <> } // '';
like($conffiles, qr{^/etc/airlock/policy\.yaml$}m, 'the policy is a conffile');
$postinst = do { local (@ARGV, $/) = "$ctl/postinst"; <> } // '';
like($postinst, qr/systemd-sysusers.*airlock\.conf/, 'postinst adds the users');
like($postinst, qr/systemd-tmpfiles .*--create airlock\.conf/,
     'postinst makes /run/airlock (tmpfiles.d)');
like($postinst, qr/systemd-sysusers .*airlock\.conf.*systemd-tmpfiles /s,
     'after the users, whose group /run/airlock has');
like($postinst, qr{install -d -m 0700 .*/etc/airlock/credentials},
     'postinst makes the credentials directory, root only');
unlike($postinst, qr/deb-systemd-invoke\s+(?:start|restart)\b/,
       'and starts no unit (an upgrade try-restarts the running ones)');
my @enable = $postinst =~ /((?:.*\n){2})\s*deb-systemd-helper enable/g;
ok(!grep({ !/was-enabled/ } @enable),
   'and enables one only where the admin had enabled it before');
# the maintainer scripts tests/build/41, 42 and 44 run from debian/ are
# the package's
for my $s (qw(preinst postrm)) {
    my $built = do { local (@ARGV, $/) = "$ctl/$s"; <> } // '';
    my $src = do { local (@ARGV, $/) = "$top/debian/airlock.$s"; <> } // '';
    $src =~ s/^#DEBHELPER#\n.*//ms;
    ok($src ne '' && index($built, $src) == 0,
       "the package's $s is debian/airlock.$s (then debhelper's)");
}

# lintian: no error
SKIP: {
    if (system('command -v lintian >/dev/null 2>&1') != 0) {
        fail('lintian not installed (auto/deps test installs it)') if $ci;
        skip 'lintian not installed', 3;
    }
    # it exits 0 when it reports no error, 1 when it does, anything else
    # when it could not check the packages at all (as with an unknown tag
    # given to --suppress-tags: no tag was then ever reported, and this
    # check passed whatever the packages held).  As root it only says so
    # on stderr: "running with root privileges" is no tag.
    ($rc, $out) = run("lintian $mod $pkg");
    my @errors = grep { /^E: / } split /\n/, $out;
    ok($rc == 0 || ($rc == 1 && @errors), "lintian checked the packages "
       . "(exit $rc)") or diag($out);
    is("@errors", '', 'lintian reports no error');
    my @noman = grep {
        /^[WEI]: .*\b(?:no-manual-page|binary-without-manpage)\b/
    } split /\n/, $out;
    is("@noman", '', 'lintian finds a manual page for every command');
    diag("lintian: $_") for grep { /^[WE]: / } split /\n/, $out;
}

# it would install here
SKIP: {
    skip 'dpkg --dry-run needs root', 1 if $> != 0;
    ($rc, $out) = run("dpkg --dry-run -i $mod $pkg");
    is($rc, 0, 'dpkg --dry-run -i: dependencies are satisfiable here')
        or diag($out);
}

# installed with apt into a fresh root of this release (mmdebstrap, from
# this machine's apt sources): users, module link, nginx -t with the
# module, units that systemd accepts, nothing enabled; purge removes it
SKIP: {
    my $why = $> != 0 ? 'needs root'
        : system('command -v mmdebstrap >/dev/null 2>&1') != 0
            ? 'mmdebstrap not installed (auto/deps test installs it)'
        : undef;
    if ($why) {
        fail("fresh root install: $why") if $ci;
        skip "fresh root install: $why", 1;
    }

    my ($suite) = `sh -c '. /etc/os-release; echo \$VERSION_CODENAME'`
        =~ /(\w+)/;
    my @sources = glob('/etc/apt/sources.list.d/*.sources');
    my $sources = @sources ? join(' ', @sources) : '/etc/apt/sources.list';
    my $sep = @sources ? "printf '\\n';" : '';
    my $feed = join('', map { "cat $_; $sep" } split ' ', $sources);

    my $check = "$tmp/check.sh";
    open(my $ch, '>', $check) or die "write $check: $!";
    print $ch <<'SH';
set -e
id airlock-agent
id airlock-worker
ls -l /etc/nginx/modules-enabled/
stat -c "credentials %a" /etc/airlock/credentials
stat -c "run-airlock %a %U %G" /run/airlock
stat -c "run-airlock-agent %a %U %G" /run/airlock/agent
stat -c "log-airlock %a %U %G" /var/log/airlock
# every group a unit of ours joins exists
for g in $(sed -n 's/^SupplementaryGroups=//p' /lib/systemd/system/airlock-*.service); do
    getent group "$g" >/dev/null && echo "group $g: yes" || echo "group $g: no"
done
nginx -t 2>&1
airlockctl check /etc/airlock/policy.yaml
echo "enabled: $(systemctl is-enabled airlock-alertd || true)"
for u in /lib/systemd/system/airlock-*.service; do
    systemd-analyze verify "$u" 2>&1 || true
done
systemd-analyze verify /lib/systemd/system/nginx.service 2>&1 || true
dpkg --purge airlock libnginx-mod-http-airlock
echo "after purge: $(ls /etc/nginx/modules-enabled/)$(ls -d /etc/airlock \
    /var/log/airlock 2>/dev/null)."
SH
    close $ch;

    my $debs = join(' ', map { m{([^/]+)$} && "/tmp/debs/$1" } $mod, $pkg);
    ($rc, $out) = run("($feed) | mmdebstrap --variant=apt --format=null "
        . "--include=nginx,systemd "
        . "--customize-hook='mkdir -p \"\$1/tmp/debs\"' "
        . "--customize-hook='copy-in $mod $pkg $check /tmp/debs' "
        . "--customize-hook='chroot \"\$1\" apt-get install -y -q "
        . "--no-install-recommends $debs' "
        . "--customize-hook='chroot \"\$1\" sh /tmp/debs/check.sh' "
        . "$suite /dev/null -");
    is($rc, 0, "mmdebstrap $suite, apt-get install of both packages")
        or diag(tail_lines($out, 40));
    like($out, qr/uid=\d+\(airlock-agent\)/, 'airlock-agent user created');
    like($out, qr/uid=\d+\(airlock-worker\)/, 'airlock-worker user created');
    like($out, qr{50-mod-http-airlock\.conf\ ->\ /usr/share/nginx/
                  modules-available/mod-http-airlock\.conf}x,
         'module enabled in /etc/nginx/modules-enabled');
    like($out, qr/^credentials 700$/m, '/etc/airlock/credentials is 0700');
    like($out, qr/^run-airlock 755 root root$/m,
         '/run/airlock made by the package (tmpfiles.d), 0755 root:root');
    like($out, qr/^run-airlock-agent 2750 airlock-agent airlock-api$/m,
         '/run/airlock/agent, the agent\'s own, for its socket '
         . '(set-group-ID airlock-api)');
    like($out, qr/^log-airlock 2755 root airlock-log$/m,
         '/var/log/airlock set-group-ID airlock-log (tmpfiles.d)');
    my %g = $out =~ /^group (\S+): (\w+)$/mg;
    ok(%g, 'our units join supplementary groups: ' . join(' ', sort keys %g));
    is(join(' ', grep { $g{$_} ne 'yes' } sort keys %g), '',
       'each of them exists once the package is installed');
    like($out, qr/nginx\.conf test is successful/,
         'nginx -t passes with the module loaded');
    like($out, qr{/etc/airlock/policy\.yaml: ok}, 'the policy checks');
    like($out, qr/^enabled: disabled$/m, 'airlock-alertd is not enabled');
    my @unit_errors = grep { /airlock/ && !/^I: / } grep { !/^\s*$/ }
        ($out =~ /^(.*(?:airlock-[\w-]+\.service|airlock\.conf):.*)$/mg);
    is("@unit_errors", '', 'systemd-analyze verify: nothing about our units');
    like($out, qr/^after purge: \.$/m,
         'purge removes the module link, /etc/airlock and its logs');
}

# the package's life on a running system, in another fresh root: an
# upgrade (the package installed over itself) and a removal as systemd
# would be asked them (/run/systemd/system, and deb-systemd-invoke and
# systemctl replaced by stubs that log their calls); logrotate's rotation
# of nginx's Airlock logs while the policy on disk is half edited; the
# module upgraded under a running nginx; a purge after the first boot's
# key pair, an edit's rollback copy and the daemons' state were made
SKIP: {
    my $why = $> != 0 ? 'needs root'
        : system('command -v mmdebstrap >/dev/null 2>&1') != 0
            ? 'mmdebstrap not installed (auto/deps test installs it)'
        : undef;
    if ($why) {
        fail("package life in a fresh root: $why") if $ci;
        skip "package life in a fresh root: $why", 1;
    }

    my ($suite) = `sh -c '. /etc/os-release; echo \$VERSION_CODENAME'`
        =~ /(\w+)/;
    my @sources = glob('/etc/apt/sources.list.d/*.sources');
    my $sources = @sources ? join(' ', @sources) : '/etc/apt/sources.list';
    my $sep = @sources ? "printf '\\n';" : '';
    my $feed = join('', map { "cat $_; $sep" } split ' ', $sources);

    my $life = "$tmp/life.sh";
    open(my $lf, '>', $life) or die "write $life: $!";
    print $lf <<'SH';
pkg=$(ls /tmp/debs/airlock_*.deb)
mkdir -p /run/systemd/system
for c in /usr/bin/deb-systemd-invoke /bin/systemctl; do
    dpkg-divert --quiet --local --rename --add "$c"
    printf '#!/bin/sh\necho "%s $*" >> /tmp/systemd.log\n' "${c##*/}" > "$c"
    chmod 755 "$c"
done
: > /tmp/systemd.log
dpkg -i "$pkg" > /tmp/dpkg.log 2>&1 || cat /tmp/dpkg.log
sed -n 's/^deb-systemd-invoke /upgrade: /p' /tmp/systemd.log
: > /tmp/systemd.log
dpkg -r airlock > /tmp/dpkg.log 2>&1 || cat /tmp/dpkg.log
sed -n 's/^deb-systemd-invoke /remove: /p' /tmp/systemd.log
for c in /usr/bin/deb-systemd-invoke /bin/systemctl; do
    rm -f "$c"
    dpkg-divert --quiet --local --rename --remove "$c"
done
rmdir /run/systemd/system
dpkg -i "$pkg" > /tmp/dpkg.log 2>&1 || cat /tmp/dpkg.log

# nginx with the module's logs, the first boot's key and the example
# policy's credentials where nginx.service would have them
airlockctl keygen /etc/airlock/airlock.key
mkdir -p /run/credentials/nginx.service
creds='s|.*file: */run/credentials/nginx\.service/\(airlock_[a-z_]*\).*|\1|p'
for s in $(sed -n "$creds" /etc/airlock/policy.yaml); do
    (umask 077; echo placeholder > "/run/credentials/nginx.service/$s")
done
cat > /etc/nginx/conf.d/airlock.conf <<'EOT'
airlock_policy /etc/airlock/policy.yaml;
airlock_keyring /etc/airlock/airlock.key;
airlock_journal /var/log/airlock/journal.log;
airlock_zone airlock 1m;
EOT
rm -f /etc/nginx/sites-enabled/default
nginx && sleep 1 && echo "nginx: $(cat /run/nginx.pid)"
echo '{"type":"deny"}' >> /var/log/airlock/journal.log
cp /etc/airlock/policy.yaml /tmp/policy.yaml
echo 'routes: [' >> /etc/airlock/policy.yaml
logrotate -f /etc/logrotate.d/airlock
sleep 1
[ -s /var/log/airlock/journal.log.1 ] && echo "rotated: journal.log.1"
# this nginx's workers: a chroot shares the host's processes, and any
# other nginx running there has no journal open
for p in $(pgrep -P "$(cat /run/nginx.pid)"); do
    echo "journal fd: $(readlink /proc/$p/fd/* | grep journal)"
done
cp /tmp/policy.yaml /etc/airlock/policy.yaml
# the module upgraded (installed over itself) under the running nginx,
# then the reload nginx's trigger asks for
dpkg -i /tmp/debs/libnginx-mod-http-airlock_*.deb > /tmp/dpkg.log 2>&1 \
    || cat /tmp/dpkg.log
nginx -s reload
sleep 1
if grep -qs 'airlock_module\.so (deleted)$' "/proc/$(cat /run/nginx.pid)/maps"
then
    echo "module after the reload: the previous one"
fi
grep -q 'restart' /tmp/dpkg.log && echo "module upgrade: restart asked"
# again, with a policy on disk that fails nginx -t: a restart would leave
# nginx stopped
echo 'routes: [' >> /etc/airlock/policy.yaml
dpkg -i /tmp/debs/libnginx-mod-http-airlock_*.deb > /tmp/dpkg.log 2>&1 \
    || cat /tmp/dpkg.log
grep -q 'fails nginx -t' /tmp/dpkg.log \
    && echo "module upgrade, bad policy: nginx -t failure said"
grep -q 'policy\.yaml:' /tmp/dpkg.log \
    && echo "module upgrade, bad policy: nginx -t's reason given"
grep -q 'systemctl restart nginx' /tmp/dpkg.log \
    && echo "module upgrade, bad policy: restart asked"
cp /tmp/policy.yaml /etc/airlock/policy.yaml
nginx -s stop
sleep 1

# an upgrade keeps the key pair, the credentials and the operator's
# policy
echo '# the operator' >> /etc/airlock/policy.yaml
(umask 077; echo 'the real one' > /etc/airlock/credentials/openai_key)
key=$(cat /etc/airlock/airlock.key /etc/airlock/airlock.key.pub | sha256sum)
dpkg -i "$pkg" > /tmp/dpkg.log 2>&1 || cat /tmp/dpkg.log
[ "$(cat /etc/airlock/airlock.key /etc/airlock/airlock.key.pub | sha256sum)" \
    = "$key" ] && echo "upgrade kept: the key pair"
grep -qx '# the operator' /etc/airlock/policy.yaml \
    && echo "upgrade kept: the policy"
grep -qx 'the real one' /etc/airlock/credentials/openai_key \
    && echo "upgrade kept: the credentials"

# what an edit (its rollback copy, a first copy an edit killed while it
# copied left), a keygen cut short, the worker and alertd leave (the
# stopped daemons' state)
cp /etc/airlock/policy.yaml /etc/airlock/policy.yaml.prev
cp /etc/airlock/policy.yaml /etc/airlock/policy.yaml.edit.part
cp /etc/airlock/airlock.key /etc/airlock/airlock.key.tmp
cp /etc/airlock/airlock.key.pub /etc/airlock/airlock.key.pub.tmp
mkdir -p /var/lib/airlock-worker/jobs /var/lib/private/airlock-alertd
ln -s private/airlock-alertd /var/lib/airlock-alertd
dpkg --purge airlock libnginx-mod-http-airlock > /tmp/dpkg.log 2>&1 \
    || cat /tmp/dpkg.log
echo "after purge: $(ls -d /etc/airlock /var/lib/airlock-worker \
    /var/lib/airlock-alertd /var/lib/private/airlock-alertd 2>/dev/null \
    | tr '\n' ' ')."
SH
    close $lf;

    my $debs = join(' ', map { m{([^/]+)$} && "/tmp/debs/$1" } $mod, $pkg);
    ($rc, $out) = run("($feed) | mmdebstrap --variant=apt --format=null "
        . "--include=nginx,systemd,logrotate "
        . "--customize-hook='mkdir -p \"\$1/tmp/debs\"' "
        . "--customize-hook='copy-in $mod $pkg $life /tmp/debs' "
        . "--customize-hook='chroot \"\$1\" apt-get install -y -q "
        . "--no-install-recommends $debs' "
        . "--customize-hook='chroot \"\$1\" sh /tmp/debs/life.sh' "
        . "$suite /dev/null -");
    is($rc, 0, "mmdebstrap $suite: upgrade, removal, rotation, purge")
        or diag(tail_lines($out, 40));
    my @daemons = qw(airlock-agent airlock-alertd airlock-worker);
    my @up = $out =~ /^upgrade: (.*)$/mg;
    ok(!grep({ /^stop\b/ } @up),
       'an upgrade does not stop the daemons (it stopped them and never '
       . 'started them again)') or diag("@up");
    for my $u (@daemons) {
        ok(grep({ /^try-restart\b.*\b\Q$u\E\.service\b/ } @up),
           "an upgrade restarts $u where it runs");
    }
    my @rm = $out =~ /^remove: (.*)$/mg;
    for my $u (@daemons) {
        ok(grep({ /^stop\b.*\b\Q$u\E\.service\b/ } @rm),
           "a removal stops $u");
    }
    like($out, qr/^nginx: \d+$/m, 'nginx runs with the journal')
        or diag(tail_lines($out, 20));
    like($out, qr/^rotated: journal\.log\.1$/m, 'logrotate rotated it');
    my @fd = $out =~ /^journal fd: (.*)$/mg;
    ok(@fd, 'nginx\'s workers have it open');
    is(join(' ', grep { $_ ne '/var/log/airlock/journal.log' } @fd), '',
       'after logrotate, with the policy on disk half edited, nginx '
       . 'writes the new journal (the reopen parsed no configuration)');
    like($out, qr/^module after the reload: the previous one$/m,
         'a reload keeps the module nginx loaded before its upgrade');
    like($out, qr/^module upgrade: restart asked$/m,
         'so the module\'s upgrade says nginx must be restarted');
    like($out, qr/^module upgrade, bad policy: nginx -t failure said$/m,
         'unless the configuration fails nginx -t with the new module: '
         . 'the upgrade says so');
    like($out, qr/^module upgrade, bad policy: nginx -t's reason given$/m,
         'with nginx -t\'s reason');
    unlike($out, qr/^module upgrade, bad policy: restart asked$/m,
           'and does not ask for the restart that would leave nginx stopped');
    for my $k ('the key pair', 'the policy', 'the credentials') {
        like($out, qr/^upgrade kept: \Q$k\E$/m, "an upgrade keeps $k");
    }
    like($out, qr/^after purge: \.$/m,
         'purge removes the key pair, the edit\'s copies and the daemons\' '
         . 'state with /etc/airlock');
}

# unpacked: the module loads into this nginx, the policy checks
my $root = "$tmp/root";
for ($mod, $pkg) {
    system("dpkg-deb -x $_ $root") == 0 or die "dpkg-deb -x $_ failed";
}

my $nginx = `sh -c 'command -v nginx'` || '/usr/sbin/nginx';
chomp $nginx;
my $prefix = "$tmp/nginx";
mkdir $prefix;
mkdir "$prefix/logs";
open(my $fh, '>', "$prefix/nginx.conf") or die "write: $!";
print $fh "load_module "
    . "$root/usr/lib/nginx/modules/ngx_http_airlock_module.so;\n"
    . "error_log $prefix/logs/error.log;\n"
    . "pid $prefix/logs/nginx.pid;\n"
    . "events {}\n"
    . "http { access_log off; }\n";
close $fh;
($rc, $out) = run("$nginx -t -p $prefix -c $prefix/nginx.conf "
                  . "-g 'daemon off;'");
is($rc, 0, 'the packaged module loads into this nginx (nginx -t)')
    or diag($out);

($rc, $out) = run("$root/usr/bin/airlockctl check "
                  . "$root/etc/airlock/policy.yaml");
is($rc, 0, 'the packaged airlockctl passes the packaged policy') or diag($out);

# one credentials story: policy paths, nginx drop-in, alertd unit
my $policy = do { local (@ARGV, $/) = "$root/etc/airlock/policy.yaml"; <> };
my $dropin = do {
    local (@ARGV, $/) = "$root/lib/systemd/system/nginx.service.d/airlock.conf";
    <>
};
my $alertd = do {
    local (@ARGV, $/) = "$root/lib/systemd/system/airlock-alertd.service";
    <>
};

my ($id, $src) = $dropin =~ /^LoadCredential=([\w.-]+):(\S+)$/m;
ok($id && $src, "the drop-in loads the credentials directory $src as $id");
my @paths = $policy =~ /\{\s*file:\s*"?([^\s"}]+)/g;
ok(@paths, scalar(@paths) . ' file: secrets in the policy');
for my $p (@paths) {
    like($p, qr{^/run/credentials/nginx\.service/\Q$id\E_\w+$},
         "$p is one of nginx.service's credentials from the drop-in");
}
my ($hmac) = $policy =~ /hmac_secret:\s*(\w+)/;
my ($hpath) = $policy =~ /^\s*\Q$hmac\E:\s*\{\s*file:\s*"?([^\s"}]+)/m;
(my $hid = $hpath) =~ s{.*/}{};
(my $hfile = $hid) =~ s/^\Q$id\E_//;
like($alertd, qr/^LoadCredential=\Q$hid\E:\Q$src\E\/\Q$hfile\E$/m,
     "alertd's unit loads the webhook secret $hid from the same file");

done_testing();
