#!/usr/bin/perl
# airlockctl usage --by: a group's name is cut to its first 256 bytes,
# and cut before the character the limit falls in, never inside it: the
# JSON output used to carry the lone lead byte of a cut character as
# \u00XX, a character the name does not have ("...\u00c3" for a name
# whose 256th byte began an e-acute), and the table as a stray \xc3.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use JSON::PP;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";
my $dir = tempdir(CLEANUP => 1);

absent("$ctl not built") unless -x $ctl;

sub line {
    my ($model, $prompt) = @_;
    return '{"time":"2024-07-03T09:46:40.123Z","client":"agent","model":"'
        . $model . '","status":200,"prompt_tokens":' . $prompt
        . ',"completion_tokens":0,"total_tokens":' . $prompt
        . ',"cost_usd":null}' . "\n";
}

# 255 bytes, then a two-byte character (bytes 256 and 257), then a
# three-byte one across 256 (bytes 255 to 257), as UTF-8 in the log

my $two = ('m' x 255) . "\xc3\xa9" . 'tail';
my $three = ('n' x 254) . "\xe2\x82\xac" . 'tail';

open my $fh, '>', "$dir/usage.log" or die;
print $fh line($two, 3), line($three, 5);
close $fh;

my $out = `$ctl usage $dir/usage.log --by model --json 2>&1`;
is($? >> 8, 0, 'summarised');

my $j = eval { JSON::PP->new->decode($out) };
ok($j, 'the output is JSON') or diag($out);

my %keys = map { $_->{key} => $_->{prompt_tokens} }
    @{ $j ? $j->{groups} : [] };

is($keys{'m' x 255}, 3,
   'a two-byte character at byte 256: the name cut before it')
    or diag(explain([keys %keys]));
is($keys{'n' x 254}, 5,
   'a three-byte character across byte 256: the name cut before it')
    or diag(explain([keys %keys]));
unlike($out, qr/\\u00c3|\\u00e2/, 'no lone lead byte as \\u00XX');

$out = `$ctl usage $dir/usage.log --by model 2>&1`;
is($? >> 8, 0, 'the table: summarised');
like($out, qr/^m{255}\s+1\s+0\s+3\s/m, 'the table: m x 255, no stray byte')
    or diag($out);
like($out, qr/^n{254}\s+1\s+0\s+5\s/m, 'the table: n x 254, no stray byte')
    or diag($out);

done_testing();
