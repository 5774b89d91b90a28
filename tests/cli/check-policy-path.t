#!/usr/bin/perl
# airlockctl check refuses a policy whose path another user can change,
# as nginx, airlock-alertd, the agent and the worker refuse it (the same
# library call, al_policy_trusted()): a directory others may write, or
# one owned by another user, anywhere from / down to the file, relative
# paths from the working directory, and a symbolic link in a sticky
# directory (/tmp) owned by another user.  Only the file's own mode was
# looked at: any of these let that user put another policy under the
# name between check and the reload.  The scratch directory (0700 under
# the sticky /tmp) and a sticky directory holding the owner's own link
# are taken.

use strict;
use warnings;
use Cwd ();
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 17;

# check, from the directory cwd: (exit code, stdout and stderr)
sub check {
    my ($path, $cwd) = @_;
    my $here = Cwd::getcwd();
    chdir($cwd // $dir) or die "chdir: $!";
    my $out = `\Q$ctl\E check \Q$path\E 2>&1 </dev/null`;
    my $rc = $? >> 8;
    chdir $here or die;
    return ($rc, $out);
}

my ($rc, $out);

my $policy = write_file('policy.yaml', one_route_policy());
($rc, $out) = check($policy);
is($rc, 0, 'the scratch directory\'s policy is taken') or diag($out);

# a directory above the policy's own, others may write

mkdir "$dir/top" or die;
mkdir "$dir/top/etc" or die;
write_file('top/etc/policy.yaml', one_route_policy());
chmod 0755, "$dir/top/etc" or die;
chmod 0777, "$dir/top" or die;
($rc, $out) = check("$dir/top/etc/policy.yaml");
is($rc, 2, 'a directory above, 0777: exit 2');
like($out, qr{^\Q$dir\E/top/etc/policy\.yaml: any user can write the (?#
              )directory \Q$dir\E/top \(mode 0777\), and replace the (?#
              )policy there; chmod o-w it$}m, 'the directory is named');

# relative paths are looked up from the working directory

($rc, $out) = check('etc/policy.yaml', "$dir/top");
is($rc, 2, 'a relative path under it: exit 2');
like($out, qr{^etc/policy\.yaml: any user can write the directory (?#
              )\Q$dir\E/top }m, 'the directory is named') or diag($out);
($rc, $out) = check('policy.yaml', "$dir/top/etc");
is($rc, 2, 'the working directory\'s parent, 0777: exit 2');

chmod 0755, "$dir/top" or die;
($rc, $out) = check('top/etc/../etc/./policy.yaml');
is($rc, 0, 'once 0755, taken, with . and .. in the path') or diag($out);

# a symbolic link in a sticky directory: its owner can replace it

mkdir "$dir/sticky" or die;
chmod 01777, "$dir/sticky" or die;
symlink "$dir/top/etc/policy.yaml", "$dir/sticky/policy.yaml" or die;
($rc, $out) = check("$dir/sticky/policy.yaml");
is($rc, 0, 'a link of the owner\'s in a sticky directory is taken')
    or diag($out);

# the link leads into a directory others may write
chmod 0777, "$dir/top/etc" or die;
($rc, $out) = check("$dir/sticky/policy.yaml");
is($rc, 2, 'a link to a policy in a directory others may write: exit 2');
like($out, qr{any user can write the directory \Q$dir\E/top/etc }m,
     'the directory the link leads to is named') or diag($out);
chmod 0755, "$dir/top/etc" or die;

# a relative link, out of its directory
symlink "../top/etc/policy.yaml", "$dir/sticky/rel.yaml" or die;
($rc, $out) = check("$dir/sticky/rel.yaml");
is($rc, 0, 'a relative link out of the sticky directory is taken')
    or diag($out);

SKIP: {
    my $who = getpwnam('nobody');
    if ($> != 0 || !defined $who) {
        fail('chown to another user needs root, under CI') if $ENV{CI};
        skip 'chown to another user needs root', 6;
    }

    # another user's link in the sticky directory
    system('chown', '-h', 'nobody', "$dir/sticky/policy.yaml") == 0
        or die "chown -h";
    ($rc, $out) = check("$dir/sticky/policy.yaml");
    is($rc, 2, 'another user\'s link in a sticky directory: exit 2');
    like($out, qr{\Q$dir\E/sticky/policy\.yaml, in the sticky directory (?#
                  )\Q$dir\E/sticky others may write, is owned by uid $who}m,
         'the link and its owner are named') or diag($out);

    # a directory of another user's, whatever its mode
    chown $who, -1, "$dir/top" or die;
    ($rc, $out) = check("$dir/top/etc/policy.yaml");
    is($rc, 2, 'a directory above owned by another user: exit 2');
    like($out, qr{the directory \Q$dir\E/top is owned by uid $who, (?#
                  )neither root nor the policy's owner}, 'its owner named')
        or diag($out);

    # a policy of that user's is theirs anyway: taken
    chown $who, -1, "$dir/top/etc/policy.yaml" or die;
    chown $who, -1, "$dir/top/etc" or die;
    ($rc, $out) = check("$dir/top/etc/policy.yaml");
    is($rc, 0, 'directories of the policy\'s own owner are taken')
        or diag($out);
    chown 0, -1, "$dir/top", "$dir/top/etc", "$dir/top/etc/policy.yaml"
        or die;

    # explain, routes and diff read such a file still (as before)
    chmod 0777, "$dir/top" or die;
    ($rc, $out) = run_routes("$dir/top/etc/policy.yaml");
    is($rc, 0, 'routes still reads it') or diag($out);
    chmod 0755, "$dir/top" or die;
}

sub run_routes {
    my $out = `\Q$ctl\E routes \Q$_[0]\E 2>&1 </dev/null`;
    return ($? >> 8, $out);
}
