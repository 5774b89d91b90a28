#!/usr/bin/perl
# airlockctl keygen "" (an unset variable: keygen "$KEY"): a usage error,
# exit 2, nothing written.  It made ".lock", ".tmp" and ".pub.tmp" in the
# current directory, renamed the last over any ".pub" there, failed to
# link ".tmp" to "" ("cannot link .tmp to : No such file or directory")
# and removed that ".pub": a file of that name was lost.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file slurp);

my ($top, $build, $ctl, $dir) = ctl_setup();

plan tests => 4;

write_file('.pub', "someone's\n");
write_file('.tmp', "someone else's\n");

my $out = `cd $dir && $ctl keygen '' 2>&1`;
is($? >> 8, 2, 'keygen "": a usage error') or diag($out);
like($out, qr/^usage: airlockctl keygen PATH/m, 'with the usage');
is(slurp("$dir/.pub"), "someone's\n", 'a .pub there is left alone');
opendir my $dh, $dir or die;
my @left = sort grep { !/^\.\.?$/ } readdir $dh;
is("@left", '.pub .tmp', 'nothing else is written');
