#!/usr/bin/perl
# What the package and the image ship around nginx.
#
# nginx restarts after a failure: Debian's nginx.service has no
# Restart=, so a master that died (a crash, the OOM killer, kill -9)
# stayed down.  conf/nginx-restart.conf, a drop-in with Restart=on-failure,
# a RestartSec= of a few seconds and a start limit that a configuration
# that keeps failing trips, is installed by make install (and so by the
# package, which the image installs) as
# /lib/systemd/system/nginx.service.d/airlock-restart.conf; nothing in
# the image's overlay undoes it; systemd-analyze verify passes Debian's
# unit with it, and with it the unit's last Restart= is on-failure.
#
# No guessable client token: no file the package, the image or the docs
# ship holds the SHA-256 of a word (the docs' example was sha256("test"),
# which an operator who copied it made a token anyone could guess).  The
# docs' token_sha256 examples are a placeholder, which airlockctl check
# refuses with the error docs/policy.md shows; with a hash in its place
# the docs' example policy passes; the shipped example passes as it is.
#
# The clients' TCP listener is plain HTTP: each TCP port the image's
# nginx listens on past loopback is named in docs/nginx.md's notes, in
# the README and beside the listen line as carrying tokens in clear, and
# the notes say how to keep it off the network.

use strict;
use warnings;
use Cwd ();
use FindBin;
use Digest::SHA qw(sha256_hex);
use File::Find ();
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";

absent("$build/airlockctl not built") unless -x "$build/airlockctl";

delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES)};

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

sub seconds {
    my ($v) = @_;
    return undef unless defined $v && $v =~ /^(\d+)(ms|s|min)?$/;
    return $1 / 1000 if ($2 // 's') eq 'ms';
    return $1 * 60 if ($2 // 's') eq 'min';
    return $1;
}

my $dest = tempdir(CLEANUP => 1);
my $out = `make -C $top DEPS=true BUILD=$build INSTALL_SETUP=no install DESTDIR=$dest 2>&1`;
is($? >> 8, 0, 'make install DESTDIR=...') or diag($out);

# --- nginx restarts after a failure

my $src = "$top/conf/nginx-restart.conf";
my $rel = 'lib/systemd/system/nginx.service.d/airlock-restart.conf';
my $r = directives(slurp($src));
is($r->{Restart} ? $r->{Restart}[-1] : undef, 'on-failure',
   'conf/nginx-restart.conf: Restart=on-failure');
my $sec = seconds($r->{RestartSec} ? $r->{RestartSec}[-1] : undef);
ok(defined $sec && $sec >= 1 && $sec <= 30, 'RestartSec= from 1 to 30 s')
    or diag($r->{RestartSec} ? "@{$r->{RestartSec}}" : 'none');
my $burst = $r->{StartLimitBurst} ? $r->{StartLimitBurst}[-1] : undef;
my $int = seconds($r->{StartLimitIntervalSec}
                  ? $r->{StartLimitIntervalSec}[-1] : undef);
ok(defined $burst && $burst =~ /^\d+$/ && $burst >= 2 && defined $int
   && defined $sec && $burst * $sec < $int,
   'a start limit a configuration that keeps failing reaches');
ok(-f "$dest/$rel" && slurp("$dest/$rel") eq slurp($src),
   "make install installs it as /$rel");

# the package takes make install's lib/systemd/system whole
my @install = grep { /\S/ && !/^\s*#/ }
              split /\n/, slurp("$top/debian/airlock.install");
ok((grep { my $p = $_; $p =~ s{/+$}{}; $rel =~ m{^\Q$p\E(/|$)} } @install),
   'debian/airlock.install ships it');

# the image installs the package, and its overlay does not undo it
(my $bs = slurp("$top/appliance-image/build.sh")) =~ s/\\\n\s*/ /g;
like($bs, qr{dpkg -i [^\n]*/airlock-debs/airlock\.deb},
     'the image installs the airlock package');
my @undo = grep { directives(slurp($_))->{Restart}
                  || m{/airlock-restart\.conf$} }
           glob("$top/appliance-image/root/{etc,lib,usr/lib}/systemd/system/"
                . "nginx.service.d/*");
is("@undo", '', 'the image\'s overlay sets no Restart= of its own');
unlike(slurp("$top/appliance-image/configure-root.sh"),
       qr/nginx\.service\.d|airlock-restart/,
       'configure-root.sh leaves the drop-in alone');

SKIP: {
    my $unit = '/lib/systemd/system/nginx.service';
    my $sa = `command -v systemd-analyze 2>/dev/null`;
    chomp $sa;
    skip "no $unit or systemd-analyze here", 2 unless -f $unit && $sa;
    my $d = tempdir(CLEANUP => 1);
    system('cp', $unit, "$d/nginx.service") == 0 or die;
    mkdir "$d/nginx.service.d" or die;
    for my $f (glob("$dest/lib/systemd/system/nginx.service.d/*")) {
        (my $n = $f) =~ s{.*/}{};
        system('cp', $f, "$d/nginx.service.d/$n") == 0 or die;
    }
    local $ENV{SYSTEMD_UNIT_PATH} = "$d:";
    my @bad = grep { /\S/ } split /\n/,
              `$sa verify nginx.service 2>&1`;
    ok(!@bad, "systemd-analyze verify Debian's nginx.service with the "
              . 'installed drop-ins') or diag("@bad");
    # drop-ins apply after the unit, in the order of their names
    my $m = directives(slurp($unit),
                       map { slurp($_) } sort glob("$d/nginx.service.d/*"));
    is($m->{Restart} ? $m->{Restart}[-1] : undef, 'on-failure',
       'with them, nginx.service has Restart=on-failure');
}

# --- no guessable client token

my @words = ('', qw(test token password secret changeme admin tools
                    example airlock demo 123456 foo));
my %weak = map { sha256_hex($_) => $_ } @words;
my @found;
File::Find::find({ no_chdir => 1, wanted => sub {
    return unless -f $_;
    my $s = lc slurp($_);
    for my $h (sort keys %weak) {
        push @found, "$_: sha256(\"$weak{$h}\")" if index($s, $h) >= 0;
    }
} }, map { "$top/$_" } qw(docs conf debian appliance-image README.md));
is(join("\n", @found), '', 'no shipped file holds the SHA-256 of a word');

my $doc = slurp("$top/docs/policy.md");
my @values = $doc =~ /token_sha256:\s*"([^"]*)"/g;
ok(@values, 'docs/policy.md shows token_sha256 examples');
my @real = grep { /^[0-9a-fA-F]{64}$/ } @values;
is("@real", '', 'each is a placeholder, not a hash');

my ($example) = $doc =~ /^```yaml\n(.*?)^```/ms;
my ($shown) = $doc =~ /^ +policy\.yaml:(\d+:\d+: token_sha256 [^\n]*)$/m;
ok($shown, 'docs/policy.md shows the error of its example\'s placeholder');
my $tmp = tempdir(CLEANUP => 1);
open my $fh, '>', "$tmp/policy.yaml" or die;
print $fh $example // '';
close $fh;
my $ctl = "$build/airlockctl";
$out = `$ctl check $tmp/policy.yaml 2>&1`;
my $rc = $? >> 8;
isnt($rc, 0, 'airlockctl check refuses the docs\' example as it is');
like($out, qr/\Q$tmp\E\/policy\.yaml:\Q${\($shown \/\/ 'none')}\E/,
     'with the error, line and column the docs show') or diag($out);
my $hash = sha256_hex("FAKE-token-$$-" . time);
(my $filled = $example // '') =~ s/PUT-THE-SHA256-OF-YOUR-TOKEN-HERE/$hash/g;
open $fh, '>', "$tmp/filled.yaml" or die;
print $fh $filled;
close $fh;
$out = `$ctl check $tmp/filled.yaml 2>&1`;
is($? >> 8, 0, 'with a hash in the placeholder\'s place, it passes')
    or diag($out);
$out = `$ctl check $top/conf/policy.example.yaml 2>&1`;
$rc = $? >> 8;
SKIP: {
    skip 'the example policy names users this machine lacks '
         . '(auto/deps test adds them)', 1
        if $out =~ /unix_uid/ && !$ENV{CI};
    is($rc, 0, 'airlockctl check passes the shipped example policy')
        or diag($out);
}

# --- the clients' TCP listener, in clear

my $ngx = slurp("$top/appliance-image/root/etc/nginx/conf.d/airlock.conf");
my @open;
for ($ngx =~ /^\s*listen\s+([^;\s]+)[^;]*;/mg) {
    next if /^unix:/ || /^(127\.|\[::1\]|localhost)/;
    push @open, /(\d+)$/;
}
ok(@open, 'the image listens on TCP past loopback: ' . join(', ', @open));
(my $notes = $doc = slurp("$top/docs/nginx.md"))
    =~ s/.*?^## Notes\n(.*?)^## .*/$1/ms;
$notes =~ s/\s+/ /g;
(my $readme = slurp("$top/README.md")) =~ s/\s+/ /g;
(my $ngx1 = $ngx) =~ s/\s*\n#\s*/ /g;
for my $port (@open) {
    like($notes, qr/port $port\b.*\bin clear\b/,
         "docs/nginx.md's notes say port $port carries tokens in clear");
    like($readme, qr/port $port\b[^.]*\.[^.]*\bin clear\b/,
         "the README says so");
    like($ngx1, qr/Port $port is plain HTTP[^.]*\bin clear\b/,
         'and the image\'s nginx conf, beside it');
}
like($notes, qr/listen 127\.0\.0\.1:\d+;/,
     'the notes show how to bind it to loopback');

done_testing();
