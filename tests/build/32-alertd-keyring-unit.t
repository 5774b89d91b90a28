#!/usr/bin/perl
# airlock-alertd needs the appliance key only to open a webhook's sealed
# hmac_secret.  Its unit as shipped (conf/airlock-alertd.service, in the
# package and so in the image) gives it no key: no LoadCredential= of
# /etc/airlock/airlock.key, no --keyring, an empty AIRLOCK_ALERTD_KEYRING
# in its ExecStart=.  The key comes only with the drop-in
# conf/airlock-alertd-keyring.conf, which make install (and so the
# package) puts in /usr/share/airlock, where it does nothing until an
# operator installs it; nothing the image lays over its root (its one
# drop-in for alertd is the egress sets'), nor its configure-root.sh,
# installs it.  systemd-analyze verify passes the unit
# with the drop-in.  What alertd does under each is tests/alertd/49.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $unit = "$top/conf/airlock-alertd.service";
my $dropin = "$top/conf/airlock-alertd-keyring.conf";
my $key = '/etc/airlock/airlock.key';

absent("$build/airlock-alertd not built") unless -x "$build/airlock-alertd";

delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES)};

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return '';
    local $/;
    return <$fh> // '';
}

sub directives {
    my ($s) = @_;
    $s =~ s/\\\n\s*/ /g;
    my %d;
    for (split /\n/, $s) {
        next if /^\s*(#|;|\[|$)/;
        my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
        push @{$d{$k}}, $v;
    }
    return \%d;
}

# the unit: no key
my $u = directives(slurp($unit));
my $exec = join ' ', @{$u->{ExecStart} || []};
ok($exec =~ m{airlock-alertd\b}, 'the unit runs airlock-alertd');
unlike($exec, qr/--keyring/, 'its ExecStart= has no --keyring');
ok(!(grep { m{:\Q$key\E$} || /^airlock\.key:/ }
     @{$u->{LoadCredential} || []}, @{$u->{LoadCredentialEncrypted} || []}),
   'it loads no appliance key (LoadCredential=)')
    or diag(join "\n", @{$u->{LoadCredential} || []});
ok(!(grep { m{\Q$key\E} } @{$u->{ReadOnlyPaths} || []},
     @{$u->{BindReadOnlyPaths} || []}, @{$u->{BindPaths} || []}),
   'nor reads or binds it otherwise');
like($exec, qr/(^|\s)\$AIRLOCK_ALERTD_KEYRING(\s|$)/,
     'its ExecStart= takes $AIRLOCK_ALERTD_KEYRING as words of its own');
is_deeply($u->{Environment} || [], ['AIRLOCK_ALERTD_KEYRING='],
          'which the unit sets empty');

# ProcSubset=pid leaves /proc/sys out of the unit's /proc, and with it the
# kernel's boot id alertd reads to tell a clock step while it was stopped
# from a reboot (docs/alerts.md): systemd's %b gives it
ok(!(grep { $_ eq 'pid' } @{$u->{ProcSubset} || []})
   || $exec =~ /(^|\s)--boot-id %b(\s|$)/,
   'its /proc has no /proc/sys: ExecStart= passes --boot-id %b');

# the drop-in: the key, and --keyring to it
my $dd = directives(slurp($dropin));
ok(-f $dropin, 'conf/airlock-alertd-keyring.conf is there');
is_deeply($dd->{LoadCredential} || [], ["airlock.key:$key"],
          'the drop-in loads the key as the credential airlock.key');
is_deeply($dd->{Environment} || [],
          ['"AIRLOCK_ALERTD_KEYRING=--keyring %d/airlock.key"'],
          'and passes --keyring %d/airlock.key');
is_deeply([sort keys %$dd], [qw(Environment LoadCredential)],
          'and sets nothing else');
like(slurp($dropin), qr{/etc/systemd/system/airlock-alertd\.service\.d/},
     'it says where an operator installs it');

SKIP: {
    my $sa = `command -v systemd-analyze 2>/dev/null`;
    chomp $sa;
    skip 'systemd-analyze is missing', 2 unless $sa;
    skip 'no drop-in to verify', 2 unless -f $dropin;
    my $d = tempdir(CLEANUP => 1);
    system('cp', $unit, "$d/airlock-alertd.service") == 0 or die;
    mkdir "$d/airlock-alertd.service.d" or die;
    system('cp', $dropin, "$d/airlock-alertd.service.d/keyring.conf") == 0
        or die;
    for my $with (0, 1) {
        rename "$d/airlock-alertd.service.d/keyring.conf" => "$d/off.conf"
            if !$with;
        local $ENV{SYSTEMD_UNIT_PATH} = "$d:";
        my @bad = grep { /\S/ && !/Command \S+ is not executable/ }
                  split /\n/, `$sa verify airlock-alertd.service 2>&1`;
        ok(!@bad, 'systemd-analyze verify airlock-alertd.service'
                  . ($with ? ' with the drop-in' : ''))
            or diag("@bad");
        rename "$d/off.conf" => "$d/airlock-alertd.service.d/keyring.conf"
            if !$with;
    }
}

# make install: the drop-in in /usr/share/airlock, in no unit's .d
my $dest = tempdir(CLEANUP => 1);
my $out = `make -C $top DEPS=true BUILD=$build INSTALL_SETUP=no install DESTDIR=$dest 2>&1`;
is($? >> 8, 0, 'make install DESTDIR=...') or diag($out);
my $shared = "$dest/usr/share/airlock/airlock-alertd-keyring.conf";
ok(-f $shared && -f $dropin && slurp($shared) eq slurp($dropin),
   'it installs the drop-in as '
   . '/usr/share/airlock/airlock-alertd-keyring.conf');
my @active = grep { /keyring/ || slurp($_) =~ /airlock\.key|--keyring/ }
             glob("$dest/{lib,etc,usr/lib}/systemd/system/*.service.d/*");
is("@active", '', 'and in no unit\'s drop-in directory');
my $inst = directives(slurp("$dest/lib/systemd/system/airlock-alertd.service"));
unlike(join(' ', @{$inst->{ExecStart} || []}), qr/--keyring/,
       'the installed unit has no --keyring');

# the package takes it from make install's tree
my @install = grep { /\S/ && !/^#/ } split /\n/, slurp("$top/debian/airlock.install");
ok((grep { $_ eq 'usr/share/airlock/airlock-alertd-keyring.conf' } @install),
   'debian/airlock.install ships it');

# the image: the package's files, and its overlay, whose drop-ins for
# alertd (its egress sets) give no key (a reload's check takes
# $AIRLOCK_ALERTD_KEYRING as the unit's ExecStart= does: empty unless
# the keyring's drop-in is installed)
my @overlay = grep {
    my $d = directives(slurp($_));
    my $exec = join(' ', map { @{$d->{$_} || []} }
                         grep { /^Exec/ } keys %$d);
    (grep { /^LoadCredential|^SetCredential|^ImportCredential/ } keys %$d)
    || join(' ', @{$d->{Environment} || []}) =~ /KEYRING|airlock\.key/
    || $exec =~ /--keyring|airlock\.key/
} grep { -f } glob("$top/appliance-image/root/etc/systemd/system/"
                   . "airlock-alertd.service.d/*");
is("@overlay", '', 'the image\'s overlay gives airlock-alertd no key');
unlike(slurp("$top/appliance-image/configure-root.sh"),
       qr/airlock-alertd-keyring|airlock-alertd\.service\.d/,
       'configure-root.sh installs none');

done_testing();
