#!/usr/bin/perl
# airlockctl misused: every command says in one line what is wrong (an
# unknown option, an option without its value, an argument missing or one
# too many), "airlockctl COMMAND: ...", then its usage, on standard
# error, and exits 2; every command's --help exits 0 and gives its exit
# statuses.  Most misuse printed the usage alone, naming nothing; routes
# took an unknown option for its FILE ("--bogus: cannot open"); seal said
# "reads the secret from standard input only" for any unknown option;
# airlockctl alone printed the command list on standard output.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $p = write_file('policy.yaml', one_route_policy());

# (command and arguments, what the first line of standard error says)
my @cases = (
    [[qw(check)], 'no FILE given'],
    [['check', $p, '--bogus'], 'unknown option "--bogus"'],
    [['check', $p, '-x'], 'unknown option "-x"'],
    [['check', $p, '--key'], '--key needs a PRIVATE_KEY'],
    [['check', $p, $p], "one FILE only, not \"$p\" too"],
    [['explain'], 'no FILE given'],
    [['explain', $p, '--client', 'agent', 'GET'], 'no TARGET given'],
    [['explain', $p, 'GET', '/one'], 'no client: give --client NAME, or '
     . 'the peer (--uid, --gid, --addr) and/or a token'],
    [['explain', $p, '--client', 'agent', '--uid', '1', 'GET', '/one'],
     '--client names the client: it cannot be given with --uid, --gid, '
     . '--addr, --token-stdin or --token-env'],
    [['explain', $p, '--client', 'agent', 'GET', '/one', '--body'],
     '--body needs a value'],
    [['explain', $p, '--client', 'agent', 'GET', '/one', '--bogus'],
     'unknown option "--bogus"'],
    [['explain', $p, '--client', 'agent', 'GET', '/one', 'x'],
     'one FILE, METHOD and TARGET only, not "x" too'],
    [['explain', $p, '--uid', 'x1', 'GET', '/one'],
     '--uid needs a number, not "x1"'],
    [['explain', $p, '--addr', '10.0.0', 'GET', '/one'],
     '--addr needs an IPv4 or IPv6 address, not "10.0.0"'],
    [['explain', $p, '--token-stdin', '--token-env', 'T', 'GET', '/one'],
     '--token-stdin and --token-env are exclusive'],
    [['explain', $p, '--uid', '1', '--addr', '10.0.0.1', 'GET', '/one'],
     '--addr (a TCP peer) cannot be given with --uid or --gid (a unix '
     . 'socket peer): a request comes from one or the other'],
    [['explain', $p, '--token-stdin', 'POST', '/one', '--body', '-'],
     'the token and the body cannot both come from standard input'],
    [['explain', $p, '--token', 'FAKE-token', 'GET', '/one'],
     'explain does not take a token on the command line; use '
     . '--token-stdin (and write it to standard input) or --token-env VAR'],
    [['routes'], 'no FILE given'],
    [['routes', '--bogus'], 'unknown option "--bogus"'],
    [['routes', $p, $p], 'one FILE only'],
    [['diff', $p], 'OLD and NEW are needed'],
    [['diff', $p, $p, $p], 'OLD and NEW only'],
    [['diff', '--bogus', $p, $p], 'unknown option "--bogus"'],
    [['keygen'], 'no PATH given'],
    [['keygen', ''], 'PATH is empty'],
    [['keygen', '--bogus'], 'unknown option "--bogus"'],
    [['keygen', "$dir/a", "$dir/b"], 'one PATH only'],
    [['seal'], '--pub PUBLIC_KEY is needed'],
    [['seal', '--pub'], '--pub needs a PUBLIC_KEY'],
    [['seal', '--pub', "$dir/k.pub", '--bogus'], 'unknown option "--bogus"'],
    [['seal', '--pub', "$dir/k.pub", 'FAKE-secret-on-argv'],
     'an argument that is not an option; seal reads the secret from '
     . 'standard input only'],
    [['tools', $p], '--client NAME is needed'],
    [['tools', '--client', 'agent'], 'no FILE given'],
    [['tools', $p, '--client'], '--client needs a value'],
    [['tools', $p, '--client', 'agent', '--format', 'xml'],
     'unknown format "xml" (openai or mcp)'],
    [['tools', $p, '--client', 'agent', '--bogus'],
     'unknown option "--bogus"'],
    [['edit', '--bogus'], 'unknown option "--bogus"'],
    [['edit', '--policy'], '--policy needs a value'],
    [['edit', 'policy.yaml'], 'no arguments but options, not "policy.yaml"'],
    [['rollback', '--reload'], '--reload needs a value'],
    [['usage'], 'no LOG given (- for standard input)'],
    [['usage', '-', '--by'], '--by needs client, model or day'],
    [['usage', '-', '--by', 'week'],
     '--by takes client, model or day, not "week"'],
    [['usage', '-', '-'], 'one LOG only, not "-" too'],
    [['usage', '--bogus'], 'unknown option "--bogus"'],
);

my @cmds = qw(check explain routes diff keygen seal tools edit rollback
              usage);

plan tests => 4 * @cases + 2 * @cmds + 3;

sub run {
    my $cmd = join ' ', map { length $_ ? quotemeta : "''" } $ctl, @_;
    my $out = `$cmd </dev/null 2>$dir/stderr`;
    my $rc = $? >> 8;
    open my $fh, '<', "$dir/stderr" or die;
    my $err = do { local $/; <$fh> };
    return ($rc, $out, $err);
}

for my $c (@cases) {
    my ($args, $want) = @$c;
    my $what = join ' ', map { length $_ ? $_ : "''" } @$args;
    $what =~ s/\Q$dir\E/DIR/g;
    my ($rc, $out, $err) = run(@$args);
    is($rc, 2, "$what: exit 2");
    is($out, '', "$what: nothing on standard output");
    my ($first, $second) = split /\n/, $err;
    is($first // '', "airlockctl $args->[0]: $want",
       "$what: one line says what is wrong");
    like($second // '', qr/^usage: airlockctl \Q$args->[0]\E /,
         "$what: then the usage");
}

for my $c (@cmds) {
    my ($rc, $out, $err) = run($c, '--help');
    is($rc, 0, "$c --help: exit 0");
    like($out, qr/^usage: airlockctl \Q$c\E.*\sExit status: 0 /s,
         "$c --help: the usage, then the exit statuses") or diag($out);
}

my ($rc, $out, $err) = run();
is($rc, 2, 'no command: exit 2');
is($out, '', 'no command: nothing on standard output');
like($err, qr/^airlockctl: no command given\nusage: airlockctl COMMAND/,
     'no command: said, then the commands, on standard error');
