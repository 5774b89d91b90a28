package Airlock::UnitOrder;

# The start order systemd derives from unit files, read without systemd:
#
#   use Airlock::UnitOrder qw(unit_merged starts_before);
#   my @dirs = ("$root/etc/systemd/system", "$root/lib/systemd/system");
#   my $d = unit_merged(\@dirs, 'nftables.service');
#                       # { Key => [ value, ... ] }: the unit file (the
#                       # first of @dirs that has it), then its drop-ins
#                       # (NAME.d/*.conf of every dir, by file name; of
#                       # two of one name the earlier dir's)
#   my @path = starts_before(\@dirs, 'nftables.service',
#                            'systemd-timesyncd.service');
#                       # a chain of units, each ordered before the
#                       # next, from the first to the second; () if none
#
# The order is the one Before= and After= make, in either unit of a
# pair, and a service's default dependencies (After=sysinit.target
# basic.target unless DefaultDependencies=no).  Only units of @dirs
# count; aliases (symlinks to another name) and Wants= do not.

use strict;
use warnings;

use Exporter qw(import);

our @EXPORT_OK = qw(unit_merged starts_before);


sub read_directives {
    my ($file, $d) = @_;

    open my $fh, '<', $file or return;
    my $text = do { local $/; <$fh> };
    $text =~ s/\\\n\s*/ /g;                     # continued lines

    for (split /\n/, $text) {
        next if /^\s*(#|;|\[|$)/;
        my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
        if ($v eq '') {
            $d->{$k} = [];                      # an empty one resets
        } else {
            push @{$d->{$k}}, $v;
        }
    }
}


sub unit_merged {
    my ($dirs, $name) = @_;
    my (%d, %dropin);

    my ($file) = grep { -f $_ } map { "$_/$name" } @$dirs;
    return undef unless defined $file;
    read_directives($file, \%d);

    for my $dir (reverse @$dirs) {
        for my $f (glob "$dir/$name.d/*.conf") {
            my ($base) = $f =~ m{([^/]+)$};
            $dropin{$base} = $f;
        }
    }
    read_directives($dropin{$_}, \%d) for sort keys %dropin;

    return \%d;
}


# every unit of @dirs (files only: a symlink is an alias or an
# enablement) with its merged directives
sub all_units {
    my ($dirs) = @_;
    my %u;

    for my $dir (@$dirs) {
        opendir my $dh, $dir or next;
        for my $n (readdir $dh) {
            next unless $n =~ /\.(service|target|socket|mount|path|timer)$/;
            next if exists $u{$n} || -l "$dir/$n" || !-f "$dir/$n";
            $u{$n} = unit_merged($dirs, $n);
        }
        closedir $dh;
    }

    return \%u;
}


sub starts_before {
    my ($dirs, $from, $to) = @_;
    my (%next, %prev, @queue);

    my $u = all_units($dirs);
    for my $n (keys %$u) {
        my $d = $u->{$n};
        for my $b (map { split ' ' } @{$d->{Before} // []}) {
            $next{$n}{$b} = 1;
        }
        for my $a (map { split ' ' } @{$d->{After} // []}) {
            $next{$a}{$n} = 1;
        }
        my ($dd) = reverse @{$d->{DefaultDependencies} // []};
        if ($n =~ /\.service$/ && !(defined $dd && $dd =~ /^(no|false|0)$/i))
        {
            $next{$_}{$n} = 1 for qw(sysinit.target basic.target);
        }
    }

    %prev = ($from => '');
    @queue = ($from);
    while (@queue) {
        my $n = shift @queue;
        if ($n eq $to) {
            my @path = ($n);
            unshift @path, $prev{$path[0]} while $prev{$path[0]} ne '';
            return @path;
        }
        for my $m (sort keys %{$next{$n} // {}}) {
            next if exists $prev{$m};
            $prev{$m} = $n;
            push @queue, $m;
        }
    }

    return ();
}

1;
