#!/usr/bin/perl
# diff stays n log n in the lists of an llm entry: its models, its
# clients and each client's models were searched from the start for each
# name, and a policy of 50000 clients of one entry took 20 s to diff
# against itself (a 16 MiB one half an hour; edit shows the diff too).
# Loading it was quadratic as well (each client of an entry was looked
# for among those listed before it), for nginx too.
# Nothing here is timed: callgrind counts the instructions of a diff of
# 1000 and of 10000 clients and models; linear work is about 10 times
# more, the search from the start far more.  The limit, 15, leaves room
# for the n log n sort.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $san = 0;
if (open my $fh, '<', "$build/config.mk") {
    while (<$fh>) { $san = $1 if /^SAN\s*=\s*(\d)/ }
}

plan skip_all => 'sanitizer build: counted in the plain build' if $san;

if (system('valgrind --version >/dev/null 2>&1') != 0) {
    fail('prerequisite: valgrind is not installed (auto/deps installs it)')
        if $ENV{CI};
    plan skip_all => 'valgrind is not installed' unless $ENV{CI};
    done_testing;
    exit;
}

# n clients, all of one llm entry with n models
sub policy {
    my ($n) = @_;
    my $text = "version: 1\nclients:\n";

    $text .= "  c$_: { unix_uid: " . (10000 + $_) . " }\n" for 0 .. $n - 1;
    $text .= "secrets:\n  k: { sealed: \"c2VhbGVk\" }\nllm:\n"
             . "  - name: oa\n    prefix: /v1/proxy/oa\n"
             . "    provider: openai\n"
             . "    upstream: https://api.openai.com/v1\n    secret: k\n"
             . '    models: [' . join(', ', map { "m$_" } 0 .. $n - 1)
             . "]\n    clients:\n";
    $text .= "      c$_: {}\n" for 0 .. $n - 1;
    $text .= "alerts:\n  deny: { threshold: 3, window: 60s }\n";

    my $path = write_file("p$n.yaml", $text);
    chmod 0600, $path or die;
    return $path;
}

# instructions a command runs, as callgrind counts them
sub instructions {
    my (@argv) = @_;
    my $cmd = join ' ', 'valgrind', '--tool=callgrind',
        '--callgrind-out-file=/dev/null', map { quotemeta } @argv;
    my $out = `$cmd 2>&1`;
    $? == 0 or return (undef, $out);
    $out =~ /Collected : (\d+)/ or return (undef, $out);
    return ($1, $out);
}

plan tests => 3;

my %ir;

for my $n (1000, 10000) {
    my $p = policy($n);
    my ($ir, $out) = instructions($ctl, 'diff', $p, $p);
    ok(defined $ir, "diff of $n clients and models against itself")
        or diag($out);
    $ir{$n} = $ir // 0;
}

my $ratio = $ir{1000} ? $ir{10000} / $ir{1000} : 0;
ok($ratio > 0 && $ratio < 15,
   sprintf('10 times the clients and models: %.1f times the work', $ratio))
    or diag("1000: $ir{1000}, 10000: $ir{10000}");
