#!/usr/bin/perl
# airlockctl usage --by: every group's name is shown whole, so that two
# groups are never shown as one: model names alike in their first 40
# bytes (Bedrock's "us.anthropic.claude-3-5-sonnet-20241022-v1:0" and
# "...-v2:0") are two rows told apart, and names that differ only in
# bytes a terminal would act on are shown as \xHH, never as the bytes.

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

sub line {
    my ($client, $model, $prompt) = @_;
    return '{"time":"2024-07-03T09:46:40.123Z","client":"' . $client
        . '","model":"' . $model . '","status":200,"prompt_tokens":'
        . $prompt . ',"completion_tokens":0,"total_tokens":' . $prompt
        . ',"cost_usd":null}' . "\n";
}

my $m1 = 'us.anthropic.claude-3-5-sonnet-20241022-v1:0';
my $m2 = 'us.anthropic.claude-3-5-sonnet-20241022-v2:0';

open my $fh, '>', "$dir/usage.log" or die;
print $fh line('agent', $m1, 100), line('agent', $m2, 7),
    line('a\u0001', 'm', 1), line('a\u0002', 'm', 2);
close $fh;

my $out = `$ctl usage $dir/usage.log --by model 2>&1`;
is($? >> 8, 0, 'by model: summarised');
like($out, qr/^\Q$m1\E\s+1\s+0\s+100\s/m, 'the first long model, whole')
    or diag($out);
like($out, qr/^\Q$m2\E\s+1\s+0\s+7\s/m, 'the second, whole, apart')
    or diag($out);

$out = `$ctl usage $dir/usage.log --by client 2>&1`;
like($out, qr/^a\\x01\s+1\s+0\s+1\s/m, 'a name with \x01 shown as \\x01')
    or diag($out);
like($out, qr/^a\\x02\s+1\s+0\s+2\s/m, 'and one with \x02 as \\x02')
    or diag($out);
unlike($out, qr/[\x00-\x08\x0b-\x1f\x7f-\xff]/, 'no control byte printed');

done_testing();
