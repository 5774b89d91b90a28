#!/usr/bin/perl
# airlockctl usage on a compressed log (a rotated llm.log.2.gz, or one
# piped in): refused with exit 2, naming the compression and the command
# that decompresses it.  It was read as a line or two of garbage, skipped,
# and summarised as a log with no calls at all, exit 0: a month of usage
# read as none, in a report or a CI check that looks at the status.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";
my $dir = tempdir(CLEANUP => 1);

absent("$ctl not built") unless -x $ctl;

plan tests => 16;

my $line = '{"time":"2024-07-03T09:46:40.123Z","client":"agent",'
    . '"model":"m","status":200,"prompt_tokens":10,"completion_tokens":2,'
    . '"cached_tokens":0,"total_tokens":12,"cost_usd":0.001}' . "\n";

open my $fh, '>', "$dir/llm.log" or die;
print $fh $line x 50;
close $fh;

system("gzip -c $dir/llm.log > $dir/llm.log.2.gz") == 0 or die 'gzip';

# (exit status, stdout, stderr)
sub usage {
    my ($args) = @_;
    my $out = `$ctl usage $args 2>$dir/err`;
    my $st = $? >> 8;
    open my $e, '<', "$dir/err" or die;
    local $/;
    return ($st, $out, scalar <$e>);
}

my ($st, $out, $err) = usage("$dir/llm.log");
is($st, 0, 'the plain log: summarised');
like($out, qr/^lines: 50 read, 50 counted, 0 skipped$/m, 'every line');

($st, $out, $err) = usage("$dir/llm.log.2.gz");
is($st, 2, 'gzip: exit 2') or diag($out, $err);
is($out, '', 'gzip: no summary of nothing');
like($err, qr/gzip-compressed/, 'gzip: said so') or diag($err);
like($err, qr/zcat LOG \| airlockctl usage -/, 'gzip: and how to read it');

($st, $out, $err) = usage("- < $dir/llm.log.2.gz");
is($st, 2, 'gzip on standard input: exit 2') or diag($out, $err);
like($err, qr/^\(stdin\): cannot read: gzip-compressed/m,
     'gzip on standard input: said so') or diag($err);

($st, $out, $err) = usage("--json $dir/llm.log.2.gz");
is($st, 2, 'gzip with --json: exit 2');
is($out, '', 'gzip with --json: no JSON of nothing');

# the other compressors logrotate may be told to use, by their magic
my %magic = (
    xz    => ["\xfd7zXZ\0\0\x04\xe6\xd6\xb4\x46", 'xzcat'],
    zstd  => ["\x28\xb5\x2f\xfd\x24\x00", 'zstdcat'],
    bzip2 => ["BZh91AY&SY\x00\x01", 'bzcat'],
);

for my $kind (sort keys %magic) {
    open $fh, '>', "$dir/llm.$kind" or die;
    binmode $fh;
    print $fh $magic{$kind}[0], "\xff" x 100, "\n", "\x01" x 100;
    close $fh;
    ($st, $out, $err) = usage("$dir/llm.$kind");
    is($st, 2, "$kind: exit 2") or diag($out, $err);
    like($err, qr/\Q$kind\E-compressed.*\Q$magic{$kind}[1]\E LOG/,
         "$kind: said so, with $magic{$kind}[1]") or diag($err);
}
