#!/usr/bin/perl
# airlockctl edit and a Ctrl-C while the editor runs.  The terminal sends
# SIGINT to the whole foreground process group: airlockctl, the shell it
# runs the editor with, and the editor.  An editor such as vi takes it
# (it cancels a command there), but airlockctl and the shell died of it:
# the edit was over, its lock let go, while the editor went on in a group
# with no one waiting for it, writing the copy for no one.  Now, as
# system(3) does, airlockctl ignores SIGINT and SIGQUIT while it waits
# for the editor, and the shell outlives the signal: an editor that takes
# it goes on and its edit is installed; one that dies of it is an editor
# that failed, the copy kept.  No nginx: --test and --reload are true(1).

use strict;
use warnings;
use FindBin;
use POSIX ();
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file slurp editor one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 8;

my $text = one_route_policy();

my $policy = write_file('policy.yaml', $text);

# airlockctl edit in a process group of its own, as a terminal's
# foreground job: (wait status, stderr)
sub edit {
    my ($editor) = @_;
    my $pid = fork // die;

    if ($pid == 0) {
        POSIX::setsid();
        open STDIN, '<', '/dev/null' or die;
        open STDOUT, '>', "$dir/stdout" or die;
        open STDERR, '>', "$dir/stderr" or die;
        $ENV{VISUAL} = $editor;
        exec $ctl, 'edit', '--policy', $policy, '--test', 'true',
             '--reload', 'true'
            or die "exec: $!";
    }

    waitpid $pid, 0;
    my $status = $?;
    sleep 1;                            # an editor left behind finishes
    return ($status, slurp("$dir/stderr"));
}

# Ctrl-C in an editor that takes it, then the edit saved
my $takes = editor('takes.sh', <<'SH');
trap '' INT QUIT
kill -INT 0
sleep 0.3
sed -i 's/one/two/g' "$1"
SH
my ($status, $err) = edit($takes);
is($status & 127, 0, 'airlockctl is not killed by the Ctrl-C')
    or diag("signal " . ($status & 127));
is($status, 0, 'the edit made after it is installed') or diag($err);
like(slurp($policy) // '', qr{path: /two}, 'the policy is the edited one');
ok(!-e "$policy.edit", 'no copy left');

# Ctrl-C ends an editor that does not take it: a failed editor
unlink "$policy.edit";
my $before = slurp($policy);
my $dies = editor('dies.sh', <<'SH');
kill -INT 0
sleep 0.3
sed -i 's/two/three/g' "$1"
SH
($status, $err) = edit($dies);
is($status & 127, 0, 'airlockctl is not killed by it either')
    or diag("signal " . ($status & 127));
is($status >> 8, 2, 'an editor killed by it installs nothing')
    or diag($err);
like($err // '', qr/nothing installed; your copy is in/,
     'and the copy is kept') or diag($err);
is(slurp($policy), $before, 'the policy is unchanged');
