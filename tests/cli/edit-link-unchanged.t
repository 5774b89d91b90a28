#!/usr/bin/perl
# airlockctl edit as a careful operator expects it, in three cases:
#
# - FILE a symbolic link: the file it leads to is edited and replaced
#   (FILE.prev beside it), the link stays a link to it, nothing is made
#   beside the link; a link retargeted while the editor ran is refused
#   (nothing installed, neither file changed): the path was checked on
#   the new target while the old one was about to be replaced;
# - an editor that leaves the copy unchanged: "no changes", exit 0, no
#   test and no reload run, no copy left;
# - an editor killed by a signal: nothing installed, no test or reload,
#   exit 2, the copy kept (and FILE.edit.open, its mark) and no FILE.new,
#   FILE.old or FILE.lock left.
#
# --test and --reload append to a file that says whether they ran.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file slurp editor one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 24;

mkdir "$dir/real" or die;
chmod 0755, "$dir/real" or die;
my $text = one_route_policy();
my $real = write_file('real/policy.yaml', $text);
chmod 0640, $real or die;
symlink 'real/policy.yaml', "$dir/policy.yaml" or die;
my $ran = "$dir/ran";

# (exit code, stderr)
sub ctl {
    my ($editor, @args) = @_;
    local $ENV{VISUAL} = $editor;
    my $cmd = join ' ', map { quotemeta } $ctl, @args,
                        '--policy', "$dir/policy.yaml",
                        '--test', "echo test >> $ran",
                        '--reload', "echo reload >> $ran";
    unlink $ran;
    `$cmd </dev/null >$dir/stdout 2>$dir/stderr`;
    return ($? >> 8, slurp("$dir/stderr") // '');
}

sub files {
    my ($sub) = @_;
    opendir my $dh, "$dir$sub" or die;
    return join ' ', sort grep { /^policy\.yaml/ } readdir $dh;
}

# through the link

my $good = editor('good.sh', "sed -i 's/one/two/g' \"\$1\"\n", set_e => 1);
my ($rc, $err) = ctl($good, 'edit');
is($rc, 0, 'an edit through a link is installed') or diag($err);
is(readlink("$dir/policy.yaml"), 'real/policy.yaml',
   'the link is still a link to the same file');
like(slurp($real), qr/two/, 'the file it leads to is the new policy');
is(slurp("$real.prev"), $text, 'the replaced policy is kept beside it');
is((stat $real)[2] & 07777, 0640, 'with its mode');
is(files(''), 'policy.yaml', 'nothing is made beside the link');
is(slurp($ran), "test\nreload\n", 'tested and reloaded');

# unchanged

my $after = slurp($real);
($rc, $err) = ctl('true', 'edit');
is($rc, 0, 'an editor that changes nothing: exit 0');
like($err, qr/no changes/, 'no changes');
ok(!-e $ran, 'neither tested nor reloaded');
is(files('/real'), 'policy.yaml policy.yaml.prev', 'no copy left');
is(slurp($real), $after, 'the policy is as it was');

# the editor killed by a signal, half way through its write

my $dies = editor('dies.sh', "printf 'version: 1\\nclie' > \"\$1\"\n"
                             . "kill -KILL \$\$\n");
($rc, $err) = ctl($dies, 'edit');
is($rc, 2, 'an editor killed by a signal: exit 2');
# the shell the editor runs in outlives the signal, and exits 128 + 9
like($err, qr/the editor \(\S+\) (?:was killed by signal 9|exited (?#
              )with status 137)/, 'says so') or diag($err);
like($err, qr/nothing installed; your copy is in \S+policy\.yaml\.edit/,
     'nothing installed, the copy named') or diag($err);
ok(!-e $ran, 'neither tested nor reloaded');
is(slurp($real), $after, 'the policy is as it was');
is(files('/real'), 'policy.yaml policy.yaml.edit policy.yaml.edit.open '
   . 'policy.yaml.prev', 'no FILE.new, FILE.old or FILE.lock left (the '
   . 'copy marked as an interrupted editor\'s: edit-cut-resume.t)');
unlink "$real.edit", "$real.edit.open" or die;

# the link retargeted while the editor ran

my $other = write_file('real/other.yaml', $text);
chmod 0640, $other or die;
my $moves = editor('moves.sh', "ln -sfn real/other.yaml \Q$dir\E/policy.yaml\n"
                   . "sed -i 's/two/three/g' \"\$1\"\n", set_e => 1);
($rc, $err) = ctl($moves, 'edit');
is($rc, 2, 'a link retargeted during the edit: exit 2');
like($err, qr{policy\.yaml no longer leads to \S+/real/policy\.yaml},
     'says so') or diag($err);
ok(!-e $ran, 'neither tested nor reloaded');
is(slurp($real), $after, 'the file it led to is unchanged');
is(slurp($other), $text, 'and the one it leads to now');
is(files('/real'), 'policy.yaml policy.yaml.edit policy.yaml.prev',
   'the copy is kept, nothing else left');
