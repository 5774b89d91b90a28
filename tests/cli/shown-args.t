#!/usr/bin/perl
# What airlockctl prints of its own arguments and of file names (a
# policy, a log, a key, a body, a client, a format, an unknown command)
# is shown as the policy's text is, each byte outside printable ASCII as
# \xHH.  It was printed raw: a file named with a CR and an erase-line
# sequence, in a directory of policies a loop checks, made its own
# "cannot read" read as another file's "ok" on a terminal, and an
# argument from a script (explain --client "$CLIENT") could rewrite the
# screen.  The exit status is what it was.

use strict;
use warnings;
use FindBin;
use POSIX qw(mkfifo);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $evil = "x\r\e[2Kpolicy.yaml: ok\e[8m";
my $policy = write_file('policy.yaml', one_route_policy());
my $named = write_file("ok$evil.yaml", one_route_policy());
mkfifo("$dir/fifo$evil", 0600) or die "mkfifo: $!";
mkdir "$dir/dir$evil" or die;
write_file("key$evil", "FAKE");

my $pub = "$dir/k.pub";
system("$ctl keygen $dir/k >/dev/null 2>&1") == 0 or die 'keygen';

my @cases = (
    [2, 'check a FIFO', 'check', "$dir/fifo$evil"],
    [2, 'check a directory', 'check', "$dir/dir$evil"],
    [2, 'check a missing file', 'check', "$dir/none$evil"],
    [0, 'check a valid policy', 'check', $named],
    [2, 'routes a directory', 'routes', "$dir/dir$evil"],
    [2, 'diff a missing file', 'diff', $policy, "$dir/none$evil"],
    [2, 'explain an unknown client', 'explain', $policy, '--client', $evil,
     'GET', '/one'],
    [2, 'explain a missing body', 'explain', $policy, '--client', 'agent',
     'POST', '/one', '--body', "$dir/none$evil"],
    [2, 'explain an unknown option', 'explain', $policy, "--$evil", 'GET',
     '/one'],
    [1, 'tools an unknown client', 'tools', $policy, '--client', $evil],
    [2, 'tools an unknown format', 'tools', $policy, '--client', 'agent',
     '--format', $evil],
    [2, 'usage a missing log', 'usage', "$dir/none$evil"],
    [2, 'usage --by', 'usage', $policy, '--by', $evil],
    [1, 'keygen over a file', 'keygen', "$dir/key$evil"],
    [1, 'seal to a missing key', 'seal', '--pub', "$dir/none$evil"],
    [2, 'an unknown command', $evil],
    [2, 'edit a missing policy', 'edit', '--policy', "$dir/none$evil"],
);

plan tests => 3 * @cases;

for my $c (@cases) {
    my ($want, $what, @args) = @$c;
    my $cmd = join ' ', map { quotemeta } $ctl, @args;
    my $out = `printf FAKE-secret | $cmd 2>&1`;
    is($? >> 8, $want, "$what: exit $want") or diag($out);
    unlike($out, qr/[\x00-\x09\x0b-\x1f\x7f]/, "$what: no control byte")
        or diag(join ' ', map { sprintf '%02x', ord } split //, $out);
    like($out, qr/\\x0d\\x1b\[2Kpolicy/, "$what: shown as \\xHH")
        or diag($out);
}
