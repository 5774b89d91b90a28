#!/usr/bin/perl
# The appliance's placeholder credentials (airlock-credentials.service,
# /usr/lib/airlock/placeholder-credentials), run at every boot against a
# stand-in /etc (bound over the real one in a private mount namespace):
# each file: secret of the policy without a file gets a random one, root
# only; an operator's file is kept.  A placeholder appears whole or not at
# all: written beside, flushed, renamed into place, since a power loss
# after the first boot wrote it in place left an empty file, which the
# next boots kept and the policy refuses ("secret is empty"), and nginx
# never started again; such an empty file is written anew.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $script = "$top/appliance-image/root/usr/lib/airlock/placeholder-credentials";

absent('a private mount namespace needs root') unless $> == 0;
need_cmd(qw(unshare mount strace));

my $t = tempdir(CLEANUP => 1);
my $etc = "$t/etc";
my $dir = "$etc/airlock/credentials";
mkdir "$etc";
mkdir "$etc/airlock";
mkdir $dir, 0700;

sub put {
    my ($path, $text) = @_;
    open my $fh, '>', $path or die "$path: $!";
    print $fh $text;
    close $fh;
}

put("$etc/airlock/policy.yaml", <<'YAML');
secrets:
  kept:     { file: /run/credentials/nginx.service/airlock_kept }
  cut:      { file: /run/credentials/nginx.service/airlock_cut }
  missing:  { file: /run/credentials/nginx.service/airlock_missing }
  sealed:   { sealed: "AAAA" }
YAML
put("$dir/kept", "the operator's\n");
put("$dir/cut", '');            # a first boot's write cut by a power loss

my $out = `unshare --mount --propagation private sh -c 'mount --bind $etc /etc \\
    && strace -f -qq -o $t/trace -e trace=%file,fsync,fdatasync,syncfs \\
       $script' 2>&1`;
is($? >> 8, 0, 'placeholder-credentials runs') or diag($out);

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return undef;
    local $/;
    return <$fh>;
}

is(slurp("$dir/kept"), "the operator's\n", 'an operator\'s file is kept');
like(slurp("$dir/missing") // '', qr/^[A-Za-z0-9+\/]{32}\n$/,
     'a missing one gets a random placeholder');
is(((stat "$dir/missing")[2] // 0) & 07777, 0600, 'root only (0600)');
like(slurp("$dir/cut") // '', qr/^[A-Za-z0-9+\/]{32}\n$/,
     'an empty one (a write a power loss cut) gets one too');
like($out, qr{placeholder credential /etc/airlock/credentials/cut\b},
     'and says so');
opendir(my $dh, $dir) or die "$dir: $!";
my @left = sort grep { !/^\.\.?$/ } readdir $dh;
is("@left", 'cut kept missing', 'nothing else is left in the directory '
   . '(nginx loads every file of it)');

# how each placeholder was written: never opened for writing in place,
# flushed before it was renamed into place
my $trace = slurp("$t/trace") // '';
my @inplace = $trace =~ m{(open\w*\([^"]*"/etc/airlock/credentials/(?:cut|missing)",
                          [^)]*O_(?:WRONLY|RDWR)[^)]*\))}xg;
is("@inplace", '', 'no placeholder is written in place');
for my $n (qw(cut missing)) {
    my ($before) = $trace =~ m{\A(.*?)rename\w*\([^\n]*"\Q/etc/airlock/credentials/$n\E"}s;
    ok(defined $before, "$n: renamed into place");
    ok(defined $before && $before =~ /\b(?:fsync|fdatasync)\(/,
       "$n: flushed to disk before");
}

done_testing();
