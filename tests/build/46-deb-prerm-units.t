#!/usr/bin/perl
# The airlock package's removal stops its units (debian/airlock.prerm,
# run here in a small chroot with systemctl and deb-systemd-invoke
# replaced by stubs that log their calls): every unit the package ships
# (every conf/*.service), the oneshots too, and whatever other
# airlock-*.service systemd has active (the appliance image's own:
# airlock-credentials, airlock-ready).  A oneshot left active
# (RemainAfterExit=) does not run again on a new install before the next
# boot: after a purge, the key pair (airlock-firstboot), the Redis users'
# passwords (airlock-redis-users) and the placeholder credentials
# (airlock-credentials) would not be made again, and nginx, Redis and
# the daemons would start without them.  An upgrade stops nothing (the
# postinst restarts the daemons); nor does a removal without systemd
# running, and a systemctl that cannot list the units still leaves the
# package's own to stop.

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
need_cmd(qw(chroot ldd sh sed cat));

my $t = tempdir(CLEANUP => 1);

# the units the package ships: every conf/*.service (debian/airlock.install
# takes lib/systemd/system whole)
my @pkg = sort map { m{([^/]+)$} } glob("$top/conf/*.service");
ok(@pkg >= 5, "the package ships units: @pkg");

sub write_file {
    my ($f, $text, $mode) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
    chmod $mode // 0644, $f;
}

# prerm ARG, systemd running or not, what systemctl list-units prints
# (undef: it fails); returns (exit status, output, the units stopped)
sub prerm {
    my ($name, $arg, $systemd, $listed) = @_;
    my $r = "$t/$name";

    mini_root($r, qw(sh sed cat));
    make_path("$r/usr/bin", "$r/run");
    make_path("$r/run/systemd/system") if $systemd;
    write_file("$r/prerm",
               do { local (@ARGV, $/) = "$top/debian/airlock.prerm"; <> });
    write_file("$r/listed", $listed // '');
    write_file("$r/usr/bin/systemctl", <<EOT, 0755);
#!/bin/sh
echo "systemctl \$*" >> /calls
case "\$1" in
list-units) @{[ defined $listed ? 'cat /listed' : 'exit 1' ]} ;;
esac
EOT
    write_file("$r/usr/bin/deb-systemd-invoke",
               "#!/bin/sh\necho \"deb-systemd-invoke \$*\" >> /calls\n",
               0755);
    my $out = `env PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        chroot $r /bin/sh /prerm $arg 2>&1`;
    my $rc = $? >> 8;
    my $calls = -e "$r/calls"
        ? do { local (@ARGV, $/) = "$r/calls"; <> } : '';
    my %stopped;
    for ($calls =~ /^deb-systemd-invoke stop (.*)$/mg) {
        $stopped{$_} = 1 for split ' ';
    }
    return ($rc, $out, join(' ', sort keys %stopped));
}

# systemctl list-units --plain --no-legend, as systemd 252 prints it
my $listed = join('', map { "$_\n" }
    'airlock-agent.service     loaded active running Airlock agent',
    'airlock-credentials.service loaded active exited Airlock placeholder '
        . 'credentials for the policy\'s file: secrets',
    'airlock-ready.service     loaded active exited Airlock appliance '
        . 'ready line',
    'airlock-redis-users.service loaded active exited Airlock\'s Redis '
        . 'users and their passwords');

my ($rc, $out, $stopped) = prerm('remove', 'remove', 1, $listed);
is($rc, 0, 'prerm remove') or diag($out);
my %s = map { $_ => 1 } split ' ', $stopped;
for my $u (@pkg) {
    ok($s{$u}, "a removal stops $u") or diag("stopped: $stopped");
}
for my $u (qw(airlock-credentials.service airlock-ready.service)) {
    ok($s{$u}, "and the active $u, the image's own")
        or diag("stopped: $stopped");
}
is(join(' ', grep { !/^airlock-[\w-]+\.service$/ } sort keys %s), '',
   'and nothing that is not an airlock-*.service');

($rc, $out, $stopped) = prerm('nolist', 'remove', 1, undef);
is($rc, 0, 'prerm remove, systemctl list-units failing') or diag($out);
%s = map { $_ => 1 } split ' ', $stopped;
is(join(' ', grep { !$s{$_} } @pkg), '',
   'still stops every unit of the package');

($rc, $out, $stopped) = prerm('upgrade', 'upgrade', 1, $listed);
is($rc, 0, 'prerm upgrade') or diag($out);
is($stopped, '', 'an upgrade stops nothing');

($rc, $out, $stopped) = prerm('nosystemd', 'remove', 0, $listed);
is($rc, 0, 'prerm remove without systemd running') or diag($out);
is($stopped, '', 'stops nothing');

done_testing();
