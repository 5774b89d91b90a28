#!/usr/bin/perl
# airlockctl edit run by a user other than the policy's owner, who may
# write the policy's directory and file through a group (the policy
# root's, group ops, 0660): the new file, and the edit's copy, keep the
# policy's group.  The owner could not be given (only root can), and the
# group went with it: both files were the user's, in the user's own
# primary group, with the mode's group bits, so every member of that
# group could write the policy nginx loads, or the copy the next edit
# resumes and installs.  Now the group is kept, the owner is the user's
# (airlockctl says so), and a group that cannot be kept while the mode
# gives it access is refused, the policy unchanged.  Needs root (to make
# the user and the group); no nginx: --test and --reload are true(1).

use strict;
use warnings;
use FindBin;
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file slurp one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan skip_all => 'needs root' if $> != 0;

my $nobody = getpwnam('nobody');
plan skip_all => 'no user nobody' unless defined $nobody;
my $nogroup = (getpwnam('nobody'))[3];

# a group no one is in: the policy's
my $gid = 4242;
$gid++ while defined getgrgid($gid) || $gid == $nogroup;

plan tests => 10;

chmod 0755, $dir or die;
mkdir "$dir/etc" or die;
chown 0, $gid, "$dir/etc" or die;
chmod 0770, "$dir/etc" or die;

my $text = one_route_policy();

my $policy = "$dir/etc/policy.yaml";

sub install_policy {
    unlink $policy;
    open my $fh, '>', $policy or die;
    print $fh $text;
    close $fh;
    chown 0, $gid, $policy or die;
    chmod 0660, $policy or die;
}

sub editor { return Airlock::Ctl::editor(@_, set_e => 1); }

# airlockctl as nobody, in group $gid too: (exit code, stderr)
sub edit_as_nobody {
    my ($editor) = @_;
    my $pid = fork // die;

    if ($pid == 0) {
        open STDIN, '<', '/dev/null' or die;
        open STDOUT, '>', "$dir/stdout" or die;
        open STDERR, '>', "$dir/stderr" or die;
        $( = $nogroup;
        $) = "$nogroup $nogroup $gid";
        POSIX::setuid($nobody) or die "setuid: $!";
        $ENV{VISUAL} = $editor;
        exec $ctl, 'edit', '--policy', $policy, '--test', 'true',
             '--reload', 'true';
        die "exec: $!";
    }

    waitpid $pid, 0;
    my $rc = $? >> 8;
    open my $fh, '<', "$dir/stderr" or die;
    my $err = do { local $/; <$fh> };
    return ($rc, $err);
}

install_policy();

my $good = editor('good.sh', "sed -i 's/one/two/g' \"\$1\"\n");
my ($rc, $err) = edit_as_nobody($good);
is($rc, 0, 'the edit is installed') or diag($err);
like(do { open my $fh, '<', $policy or die; local $/; <$fh> },
     qr{path: /two}, 'the new policy is in place');
my @st = stat $policy;
is($st[5], $gid, 'the installed policy keeps its group');
is($st[2] & 07777, 0660, 'and its mode');
like($err, qr/owner/, 'the owner it could not keep is said')
    or diag($err);

# a refused edit: the copy kept for the next edit keeps the group too
install_policy();
unlink "$policy.prev";
my $bad = editor('bad.sh', "sed -i 's/    upstream: up/    upstrem: up/' "
                           . "\"\$1\"\n");
($rc, $err) = edit_as_nobody($bad);
is($rc, 1, 'a broken edit is refused') or diag($err);
@st = stat "$policy.edit";
is($st[5] // -1, $gid, 'the copy kept keeps the policy\'s group');
unlink "$policy.edit";

# the user's own policy in a group the user is not in (root gave it that
# group), with a mode that gives the group access: refused
install_policy();
unlink "$policy.prev";
my $other = $gid + 1;
$other++ while defined getgrgid($other) || $other == $nogroup;
chown $nobody, $other, $policy or die;      # the user's own file
($rc, $err) = edit_as_nobody($good);
is($rc, 2, 'a group that cannot be kept is refused') or diag($err);
like($err, qr/group/, 'and the error says why') or diag($err);
is(do { open my $fh, '<', $policy or die; local $/; <$fh> }, $text,
   'and the policy is unchanged');
