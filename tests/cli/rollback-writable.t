#!/usr/bin/perl
# airlockctl rollback, and edit resuming its copy, over a file that others
# can write (or a symbolic link: the editor used to open what it named).  FILE.prev and FILE.edit keep the mode the policy had when
# they were made; a policy once world-writable by mistake, then fixed
# with chmod, left a FILE.prev anyone could write, and the next rollback
# checked and installed whatever was in it (as root, with the policy's
# own mode and owner).  Now the file installed must be a regular file,
# not a symbolic link, owned by root, the policy's owner or the user
# running airlockctl, and writable by no group (but root's) or others
# the policy itself is not: any other is refused, the policy unchanged,
# and the error says why.  No nginx: --test and --reload are true(1).

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file slurp one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 22;

my $text = one_route_policy();

(my $evil = $text) =~ s/one/evil/g;

my $policy = write_file('policy.yaml', $text);
chmod 0640, $policy or die;

sub editor { return Airlock::Ctl::editor(@_, set_e => 1); }

# (exit code, stderr)
sub ctl {
    my ($editor, @args) = @_;
    local $ENV{VISUAL} = $editor // 'false';
    my $cmd = join ' ', map { quotemeta } $ctl, @args, '--policy', $policy,
                                         '--test', 'true', '--reload', 'true';
    `$cmd </dev/null >$dir/stdout 2>$dir/stderr`;
    return ($? >> 8, slurp("$dir/stderr"));
}

my $good = editor('good.sh', "sed -i 's/one/two/g' \"\$1\"\n");
my ($rc, $err) = ctl($good, 'edit');
is($rc, 0, 'an edit installed') or diag($err);
my $two = slurp($policy);

# FILE.prev anyone may write, someone did
open my $fh, '>', "$policy.prev" or die;
print $fh $evil;
close $fh;
chmod 0666, "$policy.prev" or die;

($rc, $err) = ctl(undef, 'rollback');
is($rc, 2, 'a FILE.prev others can write is not rolled back to');
like($err // '', qr/policy\.yaml\.prev is not installed: others can write/,
     'the error says why') or diag($err);
is(slurp($policy), $two, 'the policy is unchanged');

# group-writable (a group not root's), the policy not
chmod 0660, "$policy.prev" or die;
chown -1, 4242, "$policy.prev" or die;
($rc, $err) = ctl(undef, 'rollback');
is($rc, 2, 'nor one its group can write and the policy\'s cannot');
is(slurp($policy), $two, 'the policy is unchanged');

# owned by another user
chmod 0640, "$policy.prev" or die;
chown 12345, 0, "$policy.prev" or die;
($rc, $err) = ctl(undef, 'rollback');
is($rc, 2, 'nor one another user owns');
like($err // '', qr/owne/, 'the error says why') or diag($err);
is(slurp($policy), $two, 'the policy is unchanged');

# a symbolic link
chown 0, -1, "$policy.prev" or die;
rename "$policy.prev", "$dir/elsewhere.yaml" or die;
symlink "$dir/elsewhere.yaml", "$policy.prev" or die;
($rc, $err) = ctl(undef, 'rollback');
is($rc, 2, 'nor a symbolic link');
is(slurp($policy), $two, 'the policy is unchanged');

# the same file, the policy's own: rolled back
unlink "$policy.prev";
rename "$dir/elsewhere.yaml", "$policy.prev" or die;
($rc, $err) = ctl(undef, 'rollback');
is($rc, 0, 'a FILE.prev only the policy\'s owner writes is rolled back to')
    or diag($err);
is(slurp($policy), $evil, 'the policy is the one it held');

# the edit's copy kept, then made writable by others: not resumed
my $bad = editor('bad.sh', "sed -i 's/    upstream: up/    upstrem: up/' "
                           . "\"\$1\"\n");
($rc, $err) = ctl($bad, 'edit');
is($rc, 1, 'a refused edit keeps its copy');
chmod 0666, "$policy.edit" or die;
my $fix = editor('fix.sh', "sed -i 's/    upstrem: up/    upstream: up/; "
                           . "s/evil/three/g' \"\$1\"\n");
($rc, $err) = ctl($fix, 'edit');
is($rc, 2, 'a copy others can write is not installed') or diag($err);
is(slurp($policy), $evil, 'the policy is unchanged');

# nor is it resumed: the editor does not run on it
my $ran = "$dir/editor-ran";
my $mark = editor('mark.sh', "touch '$ran'\n");
($rc, $err) = ctl($mark, 'edit');
is($rc, 2, 'a copy others can write is not resumed') or diag($err);
ok(!-e $ran, 'the editor did not run on it');

# a copy that is a symbolic link to another file
unlink "$policy.edit";
my $other = write_file('other.txt', "not a policy\n");
symlink $other, "$policy.edit" or die;
($rc, $err) = ctl($mark, 'edit');
is($rc, 2, 'a copy that is a symbolic link is not resumed') or diag($err);
like($err // '', qr/policy\.yaml\.edit is not installed: it is a symbolic/,
     'the error says why') or diag($err);
ok(!-e $ran, 'the editor did not run on it');
is(slurp($other), "not a policy\n", 'the file it points to is untouched');
