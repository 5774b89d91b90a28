#!/usr/bin/perl
# Manual pages: every program the packages install in /usr/bin or
# /usr/sbin (the Makefile's INSTALL_BINS, which make install, and so the
# airlock package, installs whole; any file debian/*.install names there)
# has one in debian/, NAME.1 or NAME.8, that debian/*.manpages installs;
# man renders it without a warning (as lintian runs it), and so does
# groff -ww; and every option the program's --help prints is in its page,
# so a new option without its documentation fails here.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $build = $ENV{AIRLOCK_BUILD} || "$top/build";

need_cmd(qw(make man groff));

# the make under test is not a sub-make of the one running the suite
delete @ENV{qw(MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES)};

sub slurp {
    my ($f) = @_;
    open(my $fh, '<', $f) or return undef;
    local $/;
    return <$fh>;
}

# the programs make install puts in PREFIX/bin, as the Makefile names
# them (a configuration of its own, in a scratch build directory)
my $tmp = tempdir(CLEANUP => 1);
my $show = "$tmp/show.mk";
open(my $mk, '>', $show) or die "write $show: $!";
print $mk "show-install-bins:\n\t\@echo 'INSTALL_BINS: \$(INSTALL_BINS)'\n";
close $mk;
my $cmd = "make -s --no-print-directory -C $top -f Makefile -f $show "
    . "DEPS=true BUILD=$tmp/b show-install-bins";
my $bins = `$cmd 2>&1`;
is($? >> 8, 0, 'make names the programs it installs') or diag($bins);
my ($list) = $bins =~ /^INSTALL_BINS: (.*)$/m;
ok($list, 'it names them') or diag($bins);
my %prog = map { s{.*/}{}r => 1 } split ' ', $list // '';

for my $f (glob("$top/debian/*.install")) {
    for (split /\n/, slurp($f) // '') {
        s/#.*//;
        $prog{$1} = 1 for m{^\s*/?usr/s?bin/([^\s/*]+)\s*$};
    }
}
ok(scalar(keys %prog) >= 1,
   'the packages install: ' . join(' ', sort keys %prog));

my %listed;
for my $f (glob("$top/debian/*.manpages")) {
    for (split /\n/, slurp($f) // '') {
        s/#.*//;
        $listed{$1} = 1 for m{^\s*debian/(\S+)\s*$};
    }
}

for my $p (sort keys %prog) {
    my ($page) = grep { -f "$top/debian/$_" } "$p.1", "$p.8";
    ok($page, "$p has a manual page, debian/$p.1 or debian/$p.8")
        or next;
    my ($sect) = $page =~ /\.(\d)$/;
    ok($listed{$page}, "debian/*.manpages installs debian/$page");

    my $src = slurp("$top/debian/$page") // '';
    my $title = uc $p;
    ok($src =~ /^\.TH\s+"?\Q$title\E"?\s+$sect\s/m,
       "its .TH names $title, section $sect");
    for my $sh ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS',
                'EXIT STATUS', 'SEE ALSO')
    {
        ok($src =~ /^\.SH\s+"?\Q$sh\E"?\s*$/m, "$page: .SH $sh");
    }

    # as lintian checks a page (its manpages check): man's warnings
    my $man = "man --warnings -E UTF-8 -l -Tutf8 -Z $top/debian/$page";
    my $err = `MANWIDTH=80 LC_ALL=C.UTF-8 $man 2>&1 >/dev/null`;
    is($err, '', "man -l renders $page without a warning");
    $err = `groff -man -Tutf8 -ww -z $top/debian/$page 2>&1`;
    is($err, '', "groff -man -ww renders $page without a warning");

    # the page's text as a reader sees the options in it
    (my $text = $src) =~ s/\\-/-/g;
    $text =~ s/\\f[BIRP]//g;
    $text =~ s/\\&//g;
    ok($text =~ /^\Q$p\E\s+-\s/m, "its NAME line starts with $p");

    my $bin = "$build/$p";
    unless (-x $bin) {
        fail("$p is built, to read its --help ($bin)") if $ENV{CI};
        diag("$bin not built: its options are not checked");
        next;
    }
    # a program without --help says so on stderr, with its usage
    my $help = `$bin --help 2>&1 </dev/null`;
    my %opt;
    $opt{$1} = 1 while $help =~ /(?<![\w-])(--[a-z][a-z0-9-]*)/g;
    # the short options its list of options starts a line with
    $opt{$1} = 1 while $help =~ /^\s+(-[a-zA-Z])\b/mg;
    ok(%opt, "$p --help prints options: " . join(' ', sort keys %opt));
    my @missing = grep { $text !~ /(?<![\w-])\Q$_\E(?![\w-])/ }
        sort keys %opt;
    is("@missing", '', "each of them is in debian/$page");
}

done_testing();
