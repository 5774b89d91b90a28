package Airlock::UnitRun;

# A unit's commands run as systemd runs them for a job, without systemd
# (a build host's tests have none to ask):
#
#   use Airlock::UnitRun;
#   my $u = Airlock::UnitRun->new(
#       dir => $t,                       # its files: config, bin/, run/
#       dirs => ["$ov/etc/systemd/system", '/lib/systemd/system'],
#       map => [['/etc/nftables.conf' => "$t/rules.nft"], ...]);
#   $u->job('restart', 'nftables.service');    # 0: done, else failed
#   my @calls = $u->calls;               # systemctl's command lines
#   my $out = $u->output;                # what the commands printed
#                                        # since the last call
#
# The unit is read as Airlock::UnitOrder's unit_merged reads it (its file
# from the first of dirs that has it, then its drop-ins).  A job's
# commands, in systemd's order: start, ExecStartPre=, ExecStart=,
# ExecStartPost= (and after one that failed, ExecStopPost= with
# SERVICE_RESULT=exit-code); stop, ExecStop=, ExecStopPost= with
# SERVICE_RESULT=success; restart, stop then start; reload, ExecReload=.
# Each line's prefixes ("-", "+", "!", "@", ":") are taken off, each
# pair of map replaces its first string with its second, and it is run
# with sh -c, its output and errors to dir/out.log; one that fails
# ends the job unless its prefix has "-".
# RUNTIME_DIRECTORY is dir/run/NAME for a unit's RuntimeDirectory=NAME
# (dir/run/NAME-OF-THE-UNIT when it has none: its own, shared with no
# other unit).  PATH has dir/bin first, whose systemctl is a stand-in
# that logs its command line and runs the job (start, restart, stop,
# reload of one unit) at once.  A systemctl without --no-block asked from
# a job's command for a unit ordered After= a unit whose job is under
# way fails, as systemd would never end it (the job waits for the one
# that waits for it).

use strict;
use warnings;

use Cwd ();
use File::Basename qw(dirname);
use Airlock::UnitOrder qw(unit_merged);


sub new {
    my ($class, %o) = @_;
    my $self = bless { %o }, $class;
    my $lib = Cwd::abs_path(dirname(__FILE__) . '/..');

    mkdir "$o{dir}/bin";
    mkdir "$o{dir}/run";
    open my $fh, '>', "$o{dir}/unitrun.conf" or die "unitrun.conf: $!";
    print $fh "dir $_\n" for @{$o{dirs}};
    print $fh "map $_->[0] $_->[1]\n" for @{$o{map} || []};
    close $fh;
    open $fh, '>', "$o{dir}/bin/systemctl" or die "systemctl: $!";
    print $fh "#!/bin/sh\nexec $^X -I$lib -MAirlock::UnitRun "
              . "-e 'exit Airlock::UnitRun::systemctl(\@ARGV)' "
              . "$o{dir} \"\$\@\"\n";
    close $fh;
    chmod 0755, "$o{dir}/bin/systemctl";
    return $self;
}


sub load {
    my ($dir) = @_;
    my %self = (dir => $dir, dirs => [], map => []);

    open my $fh, '<', "$dir/unitrun.conf" or die "unitrun.conf: $!";
    while (<$fh>) {
        chomp;
        push @{$self{dirs}}, $1 if /^dir (.*)$/;
        push @{$self{map}}, [$1, $2] if /^map (\S+) (.*)$/;
    }
    close $fh;
    return bless \%self, __PACKAGE__;
}


sub calls {
    my ($self) = @_;

    open my $fh, '<', "$self->{dir}/systemctl.log" or return ();
    chomp(my @l = <$fh>);
    return @l;
}


sub output {
    my ($self) = @_;
    my $f = "$self->{dir}/out.log";

    open my $fh, '<', $f or return '';
    my $s = do { local $/; <$fh> };
    close $fh;
    unlink $f;
    return $s;
}


# the stand-in systemctl: DIR, then systemctl's arguments
sub systemctl {
    my ($dir, @args) = @_;
    my $self = load($dir);
    my (@words, $noblock);

    open my $log, '>>', "$dir/systemctl.log" or die "systemctl.log: $!";
    print $log "@args\n";
    close $log;
    for (@args) {
        if ($_ eq '--no-block') {
            $noblock = 1;
        } elsif (!/^-/) {
            push @words, $_;
        }
    }
    my ($verb, $unit) = @words;
    if (@words != 2 || $verb !~ /^(start|restart|stop|reload)$/) {
        print STDERR "systemctl (the test's): @args: not known\n";
        return 1;
    }
    my $d = unit_merged($self->{dirs}, $unit);
    if (!defined $d) {
        print STDERR "systemctl (the test's): $unit: no such unit\n";
        return 5;
    }
    if (!$noblock) {
        my %after = map { $_ => 1 } map { split ' ' } @{$d->{After} || []};
        my @busy = grep { $after{$_} }
                   split ' ', ($ENV{AIRLOCK_UNITRUN_JOBS} // '');
        if (@busy) {
            print STDERR "systemctl (the test's): $verb $unit waits for "
                         . "@busy, whose job waits for it: never done\n";
            return 1;
        }
    }
    return $self->job($verb, $unit);
}


sub job {
    my ($self, $verb, $unit) = @_;
    my $d = unit_merged($self->{dirs}, $unit);

    return 5 unless defined $d;
    if ($verb eq 'restart') {
        my $rc = $self->job('stop', $unit);
        return $rc ? $rc : $self->job('start', $unit);
    }

    my ($rd) = @{$d->{RuntimeDirectory} || []};
    ($rd = $unit) =~ s/\.service$// unless defined $rd;
    mkdir "$self->{dir}/run/$rd";
    local $ENV{RUNTIME_DIRECTORY} = "$self->{dir}/run/$rd";
    local $ENV{PATH} = "$self->{dir}/bin:$ENV{PATH}";
    local $ENV{AIRLOCK_UNITRUN_JOBS} =
        join(' ', grep { defined } $ENV{AIRLOCK_UNITRUN_JOBS}, $unit);

    if ($verb eq 'stop') {
        my $rc = $self->run($d, 'ExecStop');
        local $ENV{SERVICE_RESULT} = 'success';
        $self->run($d, 'ExecStopPost');
        return $rc;
    }
    if ($verb eq 'reload') {
        return $self->run($d, 'ExecReload');
    }
    my $rc = $self->run($d, 'ExecStartPre')
             || $self->run($d, 'ExecStart')
             || $self->run($d, 'ExecStartPost');
    if ($rc) {
        local $ENV{SERVICE_RESULT} = 'exit-code';
        $self->run($d, 'ExecStopPost');
    }
    return $rc;
}


# a unit's lines of one key, in turn: 0, or the status of the one that
# failed
sub run {
    my ($self, $d, $key) = @_;

    for my $line (@{$d->{$key} || []}) {
        my ($pfx, $cmd) = $line =~ /^([-+!\@:]*)(.*)$/;
        for my $m (@{$self->{map}}) {
            $cmd =~ s/\Q$m->[0]\E/$m->[1]/g;
        }
        my $rc = system('sh', '-c',
                        "exec >>'$self->{dir}/out.log' 2>&1\n$cmd") >> 8;
        return $rc if $rc != 0 && $pfx !~ /-/;
    }
    return 0;
}

1;
