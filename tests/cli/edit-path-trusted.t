#!/usr/bin/perl
# airlockctl edit and rollback refuse a policy whose path another user
# can change, as check, nginx and the daemons refuse it
# (al_policy_trusted()), with check's message, before the editor runs
# and before anything is made or renamed in the directory; and again
# before the install, for a directory made unsafe while the editor ran.
# They used to check the candidate less strictly than check: the policy
# was renamed into place and only "nginx -t" refused it (the old file
# then put back), and with --test true it was installed silently, for
# nginx to refuse at its next reload or start.  No nginx: --test is
# true(1), --reload touches a file that must not appear.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file slurp editor one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 27;

mkdir "$dir/top" or die;
mkdir "$dir/top/etc" or die;
my $text = one_route_policy();
my $policy = write_file('top/etc/policy.yaml', $text);
chmod 0640, $policy or die;
chmod 0755, "$dir/top", "$dir/top/etc" or die;
my $reloaded = "$dir/reloaded";
my $opened = "$dir/opened";

# (exit code, stderr)
sub ctl {
    my ($editor, $path, @args) = @_;
    local $ENV{VISUAL} = $editor // 'false';
    my $cmd = join ' ', map { quotemeta } $ctl, @args, '--policy', $path,
                                         '--test', 'true',
                                         '--reload', "touch $reloaded";
    `$cmd </dev/null >$dir/stdout 2>$dir/stderr`;
    return ($? >> 8, slurp("$dir/stderr") // '');
}

sub check_says {
    my $out = `\Q$ctl\E check \Q$_[0]\E 2>&1 </dev/null`;
    return (split /\n/, $out)[0] // '';
}

sub files {
    opendir my $dh, "$dir/top/etc" or die;
    return join ' ', sort grep { /^policy\.yaml/ } readdir $dh;
}

my $good = editor('good.sh', "touch $opened\nsed -i 's/one/two/g' \"\$1\"\n",
                  set_e => 1);

# a directory above, any user may write

chmod 0777, "$dir/top" or die;
my $says = check_says($policy);
like($says, qr/any user can write the directory \Q$dir\E\/top /,
     'check refuses it') or diag($says);

my ($rc, $err) = ctl($good, $policy, 'edit');
is($rc, 2, 'edit refuses it: exit 2');
is((split /\n/, $err)[0], $says, 'with check\'s message') or diag($err);
ok(!-e $opened, 'the editor was not opened');
ok(!-e $reloaded, 'nothing was reloaded');
is(slurp($policy), $text, 'the policy is unchanged');
is(files(), 'policy.yaml', 'no file was made beside it');

write_file('top/etc/policy.yaml.prev', $text =~ s/one/old/gr);
chmod 0640, "$policy.prev" or die;
($rc, $err) = ctl(undef, $policy, 'rollback');
is($rc, 2, 'rollback refuses it: exit 2');
is((split /\n/, $err)[0], $says, 'with check\'s message') or diag($err);
ok(!-e $reloaded, 'nothing was reloaded');
is(slurp($policy), $text, 'the policy is unchanged');
is(files(), 'policy.yaml policy.yaml.prev', 'and FILE.prev kept as it was');
unlink "$policy.prev" or die;

# the directory made unsafe while the editor ran: refused at the install,
# the copy kept for the next edit to resume

chmod 0755, "$dir/top" or die;
my $opens = editor('opens.sh', "chmod 0777 \Q$dir/top\E\n"
                   . "sed -i 's/one/two/g' \"\$1\"\n", set_e => 1);
($rc, $err) = ctl($opens, $policy, 'edit');
is($rc, 2, 'a directory made unsafe during the edit: exit 2');
like($err, qr/^\Q$policy\E: any user can write the directory (?#
              )\Q$dir\E\/top /m, 'with check\'s message') or diag($err);
like($err, qr/your copy is kept in \S+policy\.yaml\.edit; airlockctl (?#
              )edit resumes it/, 'the copy is kept') or diag($err);
ok(!-e $reloaded, 'nothing was reloaded');
is(slurp($policy), $text, 'the policy is unchanged');
is(files(), 'policy.yaml policy.yaml.edit', 'nothing renamed, no FILE.prev');

chmod 0755, "$dir/top" or die;
($rc, $err) = ctl('true', $policy, 'edit');
is($rc, 0, 'once the directory is fixed, the copy is resumed and installed')
    or diag($err);
like(slurp($policy), qr/two/, 'it is the policy');
ok(-e $reloaded, 'and it was reloaded');
unlink $reloaded;

# a policy any user may write: its replacement would get its mode

chmod 0646, $policy or die;
$says = check_says($policy);
($rc, $err) = ctl($good, $policy, 'edit');
is($rc, 2, 'a policy any user may write: exit 2');
is((split /\n/, $err)[0], $says, 'with check\'s message') or diag($err);
ok(!-e $reloaded, 'nothing was reloaded');
chmod 0640, $policy or die;

# a symbolic link in a sticky directory owned by another user

SKIP: {
    my $who = getpwnam('nobody');
    if ($> != 0 || !defined $who) {
        fail('chown to another user needs root, under CI') if $ENV{CI};
        skip 'chown to another user needs root', 3;
    }

    mkdir "$dir/sticky" or die;
    chmod 01777, "$dir/sticky" or die;
    symlink $policy, "$dir/sticky/policy.yaml" or die;
    system('chown', '-h', 'nobody', "$dir/sticky/policy.yaml") == 0
        or die "chown -h";

    my $before = slurp($policy);
    $says = check_says("$dir/sticky/policy.yaml");
    ($rc, $err) = ctl($good, "$dir/sticky/policy.yaml", 'edit');
    is($rc, 2, 'another user\'s link to the policy: exit 2');
    is((split /\n/, $err)[0], $says, 'with check\'s message') or diag($err);
    is(slurp($policy), $before, 'the policy is unchanged');
}
