#!/usr/bin/perl
# airlockctl usage on lines no gateway wrote: each skipped line is named
# with what is wrong with it (a number past 64 bits, bytes that are not
# UTF-8, a NUL, a member twice, nesting too deep), and only a line that
# ends too soon is said to be cut short; the reasons are the tool's own
# words, never the line's bytes (an escape sequence in it stays off the
# terminal); a log that cannot be read says why.

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

my $head = '{"time":"2024-07-03T09:46:40.123Z","client":"agent",'
    . '"model":"m","status":200';

my @lines = (
    [qq($head,"prompt_tokens":18446744073709551616}), 'not JSON: a number out of range'],
    [qq($head,"client":"x"}), 'not JSON: a member given twice'],
    [qq({"time":"2024-07-03T09:46:40.123Z","client":"\xff\xfe","model":"m","status":200}),
     'not JSON: not UTF-8'],
    [qq({"time":"2024-07-03T09:46:40.123Z","client":"a\\u0000b","model":"m","status":200}),
     'not JSON: a NUL character'],
    [('[' x 5000) . (']' x 5000), 'not JSON: nested too deep'],
    [qq($head,"x":"\\u001b[2Jok"), 'not JSON (cut short?)'],
    ["\e]0;title\a\e[1A\e[2Kgarbage", 'not JSON'],
);

open my $fh, '>', "$dir/usage.log" or die;
binmode $fh;
print $fh "$_->[0]\n" for @lines;
print $fh qq($head,"prompt_tokens":1}\n);
close $fh;

my $out = `$ctl usage $dir/usage.log 2>&1`;
is($? >> 8, 0, 'a log of bad lines: summarised');
like($out, qr/^lines: 8 read, 1 counted, 7 skipped$/m, 'the counts')
    or diag($out);
unlike($out, qr/[\x00-\x08\x0b-\x1f\x7f-\xff]/,
       'nothing a terminal acts on is printed');

# the first five by their reason in the table, the last two in JSON
for my $i (0 .. 4) {
    my $n = $i + 1;
    like($out, qr/^  line $n: \Q$lines[$i][1]\E$/m,
         "line $n: $lines[$i][1]");
}

for my $i (5, 6) {
    my $n = $i + 1;
    open $fh, '>', "$dir/one.log" or die;
    binmode $fh;
    print $fh "$lines[$i][0]\n";
    close $fh;
    my $j = `$ctl usage $dir/one.log --json 2>&1`;
    my $r = eval { decode_json($j) };
    is($r && $r->{lines}{first_skipped}[0]{reason}, $lines[$i][1],
       "line $n alone, in JSON: $lines[$i][1]") or diag($j);
}

# a log that cannot be read: why
$out = `$ctl usage $dir 2>&1`;
is($? >> 8, 2, 'a directory for a log: exit 2');
like($out, qr/^\Q$dir\E: cannot read: \S/m, 'and the reason given')
    or diag($out);

done_testing();
