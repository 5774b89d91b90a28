#!/usr/bin/perl
# airlockctl seal refuses a public key file its group may write when
# another user is in that group.  bc8f383 took group write whatever the
# group ("a group per user makes every file so"): a key left 0664 in a
# shared group (a copy made under umask 002, chgrp'ed to a team's
# group) let any member put their own key in it and open what the
# operator sealed.  Now group write is taken for a group no user but the
# file's owner is in (no other user has it as primary group, its member
# list names no other), and refused otherwise, naming the group and a
# user in it, exit 1, nothing printed.  Needs root to chgrp.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup run_ctl);
use Airlock::Prereq qw(absent);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $nobody = getpwnam('nobody');
absent('needs root, to chgrp') if $> != 0;
absent('no user nobody') unless defined $nobody;
my $nogroup = (getpwnam('nobody'))[3];

plan tests => 8;

# a group no user is in
my %primary;
while (my @pw = getpwent()) {
    $primary{$pw[3]} = 1;
}
endpwent();
my $alone = 4242;
$alone++ while defined getgrgid($alone) || $primary{$alone};

my ($rc, $out) = run_ctl('keygen', "$dir/k");
is($rc, 0, 'keygen') or diag($out);
my $pub = "$dir/k.pub";

sub seal {
    my $cmd = "printf %s FAKE-token-for-sealing | $ctl seal --pub \Q$pub\E";
    my $o = `$cmd 2>$dir/err`;
    my $status = $? >> 8;
    open my $fh, '<', "$dir/err" or die;
    local $/;
    my $err = <$fh>;
    return ($status, $o, $err);
}

my $err;

# the group of nobody (its primary group): nobody may write the key
chown -1, $nogroup, $pub or die;
chmod 0664, $pub or die;
($rc, $out, $err) = seal();
is($rc, 1, 'a key another user\'s group may write: seal exits 1');
is($out, '', 'and prints no sealed value');
like($err, qr/public key file can be written by its group $nogroup (?#
              )\(mode 0664\), which uid \d+ is in: [^\n]*chmod g-w it/,
     'the group, a user in it and what to do are named') or diag($err);

chmod 0644, $pub or die;
($rc, $out, $err) = seal();
is($rc, 0, 'that group may only read it: taken') or diag($err);

# a group no one else is in
chown -1, $alone, $pub or die;
chmod 0664, $pub or die;
($rc, $out, $err) = seal();
is($rc, 0, 'a group no other user is in may write it: taken')
    or diag($err);
like($out, qr{^[A-Za-z0-9+/]+=*\n$}, 'the sealed value is printed');

# through a symbolic link, the file it names is checked
symlink $pub, "$dir/link.pub" or die;
chown -1, $nogroup, $pub or die;
$pub = "$dir/link.pub";
($rc, $out, $err) = seal();
is($rc, 1, 'a link to such a key: refused') or diag($err);
