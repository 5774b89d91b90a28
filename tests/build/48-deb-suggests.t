#!/usr/bin/perl
# The airlock package names the worker's sandboxes: gVisor (runsc, its
# default backend) is recommended, and bubblewrap, the backend for hosts
# where gVisor cannot run (backend bwrap in worker.conf, its program
# /usr/bin/bwrap), is suggested, so that apt says where the program the
# worker's configuration names comes from.  Read from debian/control;
# tests/build/10-deb.t checks the fields of the package built.

use strict;
use warnings;
use Cwd ();
use FindBin;
use Test::More;

my $top = Cwd::abs_path("$FindBin::Bin/../..");

my $control = do { local (@ARGV, $/) = "$top/debian/control"; <> };
my ($stanza) = $control =~ /^(Package: airlock\n.*?)(?:\n\n|\z)/ms;
ok($stanza, 'debian/control has the airlock package');
$stanza //= '';
# a field's value, its continuation lines joined
sub field {
    my ($name) = @_;
    my ($v) = $stanza =~ /^\Q$name\E:[ \t]*(.*(?:\n[ \t].*)*)/m;
    return defined $v ? join(' ', split ' ', $v) : undef;
}

like(field('Recommends') // '', qr/(^|,\s*)runsc(\s*[,(]|$)/,
     'it recommends runsc (gVisor, the default backend)');
like(field('Suggests') // '', qr/(^|,\s*)bubblewrap(\s*[,(]|$)/,
     'it suggests bubblewrap (the bwrap backend)');

# the worker's bwrap backend is what bubblewrap installs
my $conf = do { local (@ARGV, $/) = "$top/worker/aw_config.c"; <> } // '';
like($conf, qr{"/usr/bin/bwrap"},
     'the worker\'s bwrap is /usr/bin/bwrap, bubblewrap\'s program');
my $wconf = do { local (@ARGV, $/) = "$top/conf/worker.conf"; <> } // '';
like($wconf, qr/^backend\s+gvisor\b.*\bbwrap\b/m,
     'worker.conf names bwrap as the other backend');

done_testing();
