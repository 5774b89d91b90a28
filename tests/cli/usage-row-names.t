#!/usr/bin/perl
# airlockctl usage: the summary rows, "total" and "(other)" (the groups
# past the 100,000th), are told apart from groups of those names.  A
# client may be named "total" (a valid policy name), and a model
# "(other)": their rows showed them as the summary rows read, so a reader,
# or awk '$1 == "total"', took one for the other.  Now such a name has the
# first byte of its first word shown as \xHH, as airlockctl shows bytes
# it does not print, and in JSON the other groups' key is null, with
# "other": true, where a group named "(other)" keeps its name.  Every
# other name is shown as before.

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
    my ($client, $model, $prompt) = @_;
    return encode_json({ time => '2024-07-03T09:46:40.123Z',
                         client => $client, model => $model, status => 200,
                         prompt_tokens => $prompt, completion_tokens => 0,
                         total_tokens => $prompt, cost_usd => undef })
           . "\n";
}

# the rows whose first field is $name, as awk splits them
sub rows {
    my ($out, $name) = @_;
    return grep { ((split ' ', $_)[0] // '') eq $name } split /\n/, $out;
}

open my $fh, '>', "$dir/usage.log" or die;
print $fh line('total', 'm', 100), line('agent', 'm', 7),
    line('totals', 'm', 1), line('total x', 'm', 2);
close $fh;

# ---- a client named "total" --------------------------------------------

my $out = `$ctl usage $dir/usage.log --by client 2>&1`;
is($? >> 8, 0, 'by client: summarised');

my @t = rows($out, 'total');
is(scalar @t, 1, 'one row reads as the total') or diag($out);
like($t[0] // '', qr/^total\s+4\s+0\s+110\s/, '... the summary: 4 calls')
    or diag($out);
like($out, qr/^\\x74otal\s+1\s+0\s+100\s/m,
     'the client "total": its first byte as \x74') or diag($out);
like($out, qr/^\\x74otal x\s+1\s+0\s+2\s/m,
     'the client "total x" too: its first word reads as the total')
    or diag($out);
like($out, qr/^totals\s+1\s+0\s+1\s/m, '"totals" is shown as before');
like($out, qr/^agent\s+1\s+0\s+7\s/m, '"agent" is shown as before');

# the JSON names them as they are: its total is apart

$out = `$ctl usage $dir/usage.log --by client --json 2>&1`;
my $j = eval { decode_json($out) } // {};
is_deeply([map { $_->{key} } @{$j->{groups} // []}],
          ['agent', 'total', 'total x', 'totals'],
          'JSON: the names as they are');
is($j->{total}{requests}, 4, 'JSON: the total apart');

# ---- the groups past the 100,000th and a model named "(other)" -----------

open $fh, '>', "$dir/many.log" or die;
print $fh line('agent', '(other)', 5);
print $fh line('agent', sprintf('model-%06d', $_), 1) for 1 .. 100_000;
close $fh;

$out = `$ctl usage $dir/many.log --by model 2>&1`;
is($? >> 8, 0, 'by model, 100,001 models: summarised');

my @o = rows($out, '(other)');
is(scalar @o, 1, 'one row reads as the other groups') or diag(explain \@o);
like($o[0] // '', qr/^\(other\)\s+1\s+0\s+1\s/,
     '... theirs: the model past the 100,000th') or diag(explain \@o);
like($out, qr/^\\x28other\)\s+1\s+0\s+5\s/m,
     'the model "(other)": its first byte as \x28');

$out = `$ctl usage $dir/many.log --by model --json 2>&1`;
$j = eval { decode_json($out) } // {};
my @g = @{$j->{groups} // []};
my @named = grep { defined $_->{key} && $_->{key} eq '(other)' } @g;
my @other = grep { !defined $_->{key} } @g;
ok(@named == 1 && $named[0]{prompt_tokens} == 5 && !exists $named[0]{other},
   'JSON: the model "(other)" by its name') or diag(explain \@named);
ok(@other == 1 && $other[0]{other} && $other[0]{prompt_tokens} == 1,
   'JSON: the other groups, key null and "other": true')
    or diag(explain \@other);

done_testing();
