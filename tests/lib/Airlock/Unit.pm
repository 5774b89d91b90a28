package Airlock::Unit;

# A systemd unit file as the unit-file tests read it, without systemd:
#
#   use Airlock::Unit qw(unit_directives unit_paths unit_verify);
#   my $d = unit_directives($file);     # { Key => [ value, ... ] }
#   my @gone = unit_paths($d, 'InaccessiblePaths');  # '-' prefixes off
#   my @bad = unit_verify($file);       # systemd-analyze verify's
#                                       # complaints, but for the absent
#                                       # /usr/bin/airlock* programs
#
# Continued lines are joined; comments and section headers skipped.

use strict;
use warnings;

use Exporter qw(import);

our @EXPORT_OK = qw(unit_directives unit_paths unit_verify);


sub unit_directives {
    my ($file) = @_;
    my %d;

    open my $fh, '<', $file or die "$file: $!";
    my $text = do { local $/; <$fh> };
    $text =~ s/\\\n\s*/ /g;                     # continued lines

    for (split /\n/, $text) {
        next if /^\s*(#|;|\[|$)/;
        my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
        push @{$d{$k}}, $v;
    }

    return \%d;
}


sub unit_paths {
    my ($d, $key) = @_;

    return map { s/^[-+]//r } map { split ' ' } @{$d->{$key} // []};
}


sub unit_verify {
    my ($file) = @_;
    my $out = `systemd-analyze verify $file 2>&1`;

    return grep { !/Command \/usr\/bin\/airlock\S* is not executable/ }
           grep { /\S/ } split /\n/, $out;
}

1;
