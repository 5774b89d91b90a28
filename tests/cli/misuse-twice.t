#!/usr/bin/perl
# An option given twice is a misuse: "airlockctl COMMAND: --OPT is given
# twice", the usage, exit 2, nothing done.  The last one counted, without
# a word: explain --client agent ... --client tools answered for tools,
# in lines that do not name the client (an allow read as agent's); tools
# printed another client's tools; edit --policy A --policy B edited B.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file one_route_policy);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $p = write_file('policy.yaml', one_route_policy());
my $log = write_file('usage.log', '');

$ENV{AIRLOCK_TEST_TOKEN} = 'FAKE-token';

# (command and arguments, the option given twice)
my @cases = (
    [['check', $p, '--key', "$dir/a", '--key', "$dir/b"], '--key'],
    [['explain', $p, '--client', 'agent', '--client', 'other', 'GET',
      '/one'], '--client'],
    [['explain', $p, '--uid', '1000', '--uid', '0', 'GET', '/one'],
     '--uid'],
    [['explain', $p, '--gid', '1000', '--gid', '0', 'GET', '/one'],
     '--gid'],
    [['explain', $p, '--addr', '10.0.0.1', '--addr', '10.0.0.2', 'GET',
      '/one'], '--addr'],
    [['explain', $p, '--token-env', 'AIRLOCK_TEST_TOKEN', '--token-env',
      'PATH', 'GET', '/one'], '--token-env'],
    [['explain', $p, '--token-stdin', '--token-stdin', 'GET', '/one'],
     '--token-stdin'],
    [['explain', $p, '--client', 'agent', 'POST', '/one', '--body', $p,
      '--body', $log], '--body'],
    [['explain', $p, '--client', 'agent', 'POST', '/one',
      '--content-type', 'a/b', '--content-type', 'c/d'],
     '--content-type'],
    [['tools', $p, '--client', 'agent', '--client', 'other'], '--client'],
    [['tools', $p, '--client', 'agent', '--sandbox', 'a', '--sandbox',
      'b'], '--sandbox'],
    [['tools', $p, '--client', 'agent', '--format', 'mcp', '--format',
      'openai'], '--format'],
    [['seal', '--pub', "$dir/a", '--pub', "$dir/b"], '--pub'],
    [['seal', '--pub', "$dir/a", '--keep-newline', '--keep-newline'],
     '--keep-newline'],
    [['edit', '--policy', $p, '--policy', "$dir/b"], '--policy'],
    [['edit', '--test', 'true', '--key', "$dir/k", '--test', 'false'],
     '--test'],
    [['rollback', '--reload', 'true', '--reload', 'false'], '--reload'],
    [['rollback', '--key', "$dir/a", '--key', "$dir/b"], '--key'],
    [['usage', $log, '--by', 'client', '--by', 'model'], '--by'],
    [['usage', $log, '--json', '--json'], '--json'],
);

plan tests => 4 * @cases + 2;

sub run {
    my $cmd = join ' ', map { quotemeta } $ctl, @_;
    my $out = `$cmd </dev/null 2>$dir/stderr`;
    my $rc = $? >> 8;
    open my $fh, '<', "$dir/stderr" or die;
    my $err = do { local $/; <$fh> };
    return ($rc, $out, $err);
}

for my $c (@cases) {
    my ($args, $opt) = @$c;
    my $what = join ' ', @$args;
    $what =~ s/\Q$dir\E/DIR/g;
    my ($rc, $out, $err) = run(@$args);
    is($rc, 2, "$what: exit 2");
    is($out, '', "$what: nothing on standard output");
    my ($first, $second) = split /\n/, $err // '';
    is($first // '', "airlockctl $args->[0]: $opt is given twice",
       "$what: says so");
    like($second // '', qr/^usage: airlockctl \Q$args->[0]\E /,
         "$what: then the usage");
}

# once each, the same options are taken
my ($rc, $out) = run('explain', $p, '--uid', '1000', '--gid', '1000',
                     'GET', '/one');
isnt($rc, 2, '--uid and --gid once each: decided') or diag($out);
($rc, $out) = run('usage', $log, '--by', 'client', '--json');
is($rc, 0, '--by and --json once each: summarised') or diag($out);
