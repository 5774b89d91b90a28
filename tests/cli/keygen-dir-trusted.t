#!/usr/bin/perl
# airlockctl keygen refuses a PATH in a directory another user can
# change (one any user, or a group, may write, not sticky), as nginx,
# check --key and seal refuse the keys it would hold: there the pair can
# be swapped for another between keygen's writes and renames, and
# keygen wrote it and said so, to be refused once in use.  Exit 1, the
# reason named, nothing left behind.  A sticky directory (/tmp) holds
# the pair, the names in it being keygen's own; a PATH.lock another user
# made there is refused, not taken for keygen's (its owner would be
# taken for the pair's).

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 17;

sub listing {
    my ($d) = @_;
    opendir my $dh, $d or die "$d: $!";
    my @names = sort grep { !/^\.\.?$/ } readdir $dh;
    closedir $dh;
    return join ' ', @names;
}

for my $case ([ 'others', 0777,
                qr/any user can write the directory [^\n]* \(mode 0777\)/ ],
              [ 'group', 0775,
                qr/group \d+ can write the directory [^\n]* \(mode 0775\)/ ])
{
    my ($name, $mode, $why) = @$case;
    my $d = "$dir/$name";
    mkdir $d or die;
    chmod $mode, $d or die;

    my ($rc, $out) = run_ctl('keygen', "$d/k");
    is($rc, 1, "a directory $name may write: exit 1") or diag($out);
    like($out, qr/\Q$d\E\/k: /, "$name: names PATH") or diag($out);
    like($out, $why, "$name: and why") or diag($out);
    unlike($out, qr/^wrote/m, "$name: says nothing was written");
    is(listing($d), '', "$name: nothing left behind");
}

my $d = "$dir/ok";
mkdir $d or die;
chmod 0755, $d or die;
my ($rc, $out) = run_ctl('keygen', "$d/k");
is($rc, 0, 'a directory only its owner writes: written') or diag($out);
is(listing($d), 'k k.pub', 'the pair, and nothing else');

$d = "$dir/sticky";
mkdir $d or die;
chmod 01777, $d or die;
($rc, $out) = run_ctl('keygen', "$d/k");
is($rc, 0, 'a sticky directory any user writes: written') or diag($out);
is(listing($d), 'k k.pub', 'the pair, and nothing else');

# PATH.lock made by another user in the sticky directory
SKIP: {
    my $nobody = getpwnam('nobody');
    if ($> != 0 || !defined $nobody) {
        fail('root and the user nobody are needed, under CI') if $ENV{CI};
        skip 'root and the user nobody are needed', 3;
    }

    open my $fh, '>', "$d/k2.lock" or die;
    close $fh;
    chown $nobody, -1, "$d/k2.lock" or die;

    ($rc, $out) = run_ctl('keygen', "$d/k2");
    is($rc, 1, 'a lock another user made: exit 1') or diag($out);
    like($out, qr/the lock file \Q$d\E\/k2\.lock is not yours/,
         'and says so') or diag($out);
    ok(!-e "$d/k2" && !-e "$d/k2.pub", 'nothing written');
}
