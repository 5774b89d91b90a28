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
#
# What the tests of the image's egress rule and its units share
# (tests/build/36, 49, 52, 53): each runs in a network namespace of its
# own (unshare -n: the host's rules are not touched), with this build's
# airlockctl and, for a name, a stand-in getent:
#
#   use Airlock::UnitRun qw(egress_setup need_nftables_unit netns_exec
#                           in_own_netns netns_run egress_bin sets_table
#                           sets sinks_policy slurp spew);
#   my %p = egress_setup(qw(nft unshare sh));   # before the plan; its
#                                   # paths: top, build, ov, etc, lib
#   need_nftables_unit();           # Debian's unit, for image()
#   netns_exec();                   # the test, again in a namespace;
#   exit(...) if in_own_netns();    # or its part in one, which
#   my $out = netns_run($t);        # this runs with these arguments
#   egress_bin($t, "$t/hosts");     # airlockctl, a stand-in getent
#   spew("$t/rules.nft", sets_table());         # alertd's two sets
#   sinks_policy("$t/policy.yaml", "$t/hook.secret",
#                'alertmanager: { url: "http://198.51.100.9:9093" }');
#   my $u = Airlock::UnitRun->image($t, ['/bin/kill' => 'true']);
#   is(sets(), '198.51.100.9 . 9093 | ');       # "IPv4 | IPv6"

use strict;
use warnings;

use Cwd ();
use Exporter qw(import);
use File::Basename qw(dirname);
use FindBin ();
use Test::More ();
use Airlock::Prereq qw(absent need_cmd);
use Airlock::UnitOrder qw(unit_merged);

our @EXPORT_OK = qw(egress_setup need_nftables_unit netns_exec in_own_netns
                    netns_run egress_bin sets_table sets sinks_policy
                    slurp spew);

my $TOP = Cwd::abs_path(dirname(__FILE__) . '/../../..');
my $BUILD = $ENV{AIRLOCK_BUILD} // "$TOP/build";
my $OV = "$TOP/appliance-image/root";
my $ETC = "$OV/etc/systemd/system";
my $LIB = '/lib/systemd/system';


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


# The image's units as the appliance has them: the overlay's
# (/etc/systemd/system), the package's (conf/, installed in
# /lib/systemd/system) and Debian's (the host's /lib/systemd/system),
# run in DIR, their paths of the image mapped to the test's: the
# overlay's helpers, DIR/policy.yaml, DIR/rules.nft for
# /etc/nftables.conf, this build's airlock-alertd (a reload's --check),
# nft and systemctl as PATH has them; then MAP's
# pairs
sub image {
    my ($class, $dir, @map) = @_;

    return $class->new(
        dir => $dir,
        dirs => [$ETC, "$TOP/conf", $LIB],
        map => [['/usr/lib/airlock/' => "$OV/usr/lib/airlock/"],
                ['/etc/airlock/policy.yaml' => "$dir/policy.yaml"],
                ['/etc/nftables.conf' => "$dir/rules.nft"],
                ['/usr/bin/airlock-alertd' => "$BUILD/airlock-alertd"],
                ['/usr/sbin/nft' => 'nft'],
                ['/bin/systemctl' => 'systemctl'],
                # alertd's reload check, in alertd's mount namespace
                # as its user there: here, as the test runs
                ['/usr/bin/nsenter --target "$$MAINPID" --mount '
                 . '--setuid "$(stat -c %%u /proc/$$MAINPID)" '
                 . '--setgid "$(stat -c %%g /proc/$$MAINPID)" -- ' => ''],
                ['"$$@"' => '"$@"'],
                @map]);
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
            # a space of the map's, any run of them in the unit's (its
            # continued lines)
            my $re = join '\s+', map { quotemeta } split / /, $m->[0], -1;
            $cmd =~ s/$re/$m->[1]/g;
        }
        my $rc = system('sh', '-c',
                        "exec >>'$self->{dir}/out.log' 2>&1\n$cmd") >> 8;
        return $rc if $rc != 0 && $pfx !~ /-/;
    }
    return 0;
}


# Before the plan: root (a network namespace of its own), the commands
# CMDS and this build's airlockctl and airlock-alertd, absent() when one
# is missing (failed under CI).  Returns the paths the tests use: top,
# the source tree; build, the build (AIRLOCK_BUILD, else top/build); ov,
# the image's overlay (appliance-image/root); etc, its units; lib,
# Debian's units.
sub egress_setup {
    my (@cmds) = @_;

    absent('a network namespace of its own needs root') if $> != 0;
    need_cmd(@cmds);
    absent("$BUILD/airlockctl not built") unless -x "$BUILD/airlockctl";
    absent("$BUILD/airlock-alertd not built")
        unless -x "$BUILD/airlock-alertd";
    return (top => $TOP, build => $BUILD, ov => $OV, etc => $ETC,
            lib => $LIB);
}


# Debian's nftables.service, which the image's drop-ins extend
# (image()'s units): absent() when the host has none
sub need_nftables_unit {
    absent("$LIB/nftables.service missing (Debian's nftables)")
        unless -f "$LIB/nftables.service";
}


# whether this run of the test is the one in a network namespace of its
# own, that netns_exec() or netns_run() started (its arguments after the
# first, --in-netns, are netns_run()'s)
sub in_own_netns {
    return @ARGV && $ARGV[0] eq '--in-netns';
}


# the test becomes itself run again in a network namespace of its own,
# unless it is that run already
sub netns_exec {
    return if in_own_netns();
    exec('unshare', '-n', $^X, "$FindBin::Bin/$FindBin::Script",
         '--in-netns') or die "unshare: $!";
}


# the test run again in a network namespace of its own with ARGS: what
# it printed (its output and errors)
sub netns_run {
    my (@args) = @_;
    my $me = "$FindBin::Bin/$FindBin::Script";

    return `unshare -n $^X $me --in-netns @args 2>&1`;
}


# DIR/bin (PATH's first, for airlock-alertd-egress): this build's
# airlockctl, and with HOSTS a stand-in getent: getent ahosts NAME prints
# HOSTS's lines "NAME ADDRESS" for NAME as glibc's getent does (address,
# padded, type, name), exit 2 when it has none
sub egress_bin {
    my ($dir, $hosts) = @_;

    mkdir "$dir/bin";
    symlink("$BUILD/airlockctl", "$dir/bin/airlockctl") or die $!;
    return unless defined $hosts;
    spew("$dir/bin/getent", <<"EOT");
#!/bin/sh
[ "\$1" = ahosts ] || exit 2
found=2
while read -r name addr; do
    [ "\$name" = "\$2" ] || continue
    for ty in STREAM DGRAM RAW; do
        printf '%-15s %-6s %s\\n' "\$addr" "\$ty" "\$2"
    done
    found=0
done < $hosts
exit \$found
EOT
    chmod 0755, "$dir/bin/getent";
}


# the egress rule's table with alertd's two sets alone, as
# conf/nftables-airlock.conf declares them (a test that it declares two)
sub sets_table {
    my @sets = slurp("$TOP/conf/nftables-airlock.conf")
               =~ /^(\s*set alertd_sinks[46] \{.*?\})/msg;

    Test::More::is(scalar @sets, 2,
                   'the egress rule declares alertd\'s two sets');
    return "table inet airlock {\n" . join("\n", @sets) . "\n}\n";
}


# the sets' elements, as "IPv4 | IPv6", each sorted
sub sets {
    my @s;

    for my $f (4, 6) {
        my $l = `nft list set inet airlock alertd_sinks$f 2>/dev/null`;
        my ($e) = $l =~ /elements = \{\s*(.*?)\s*\}/s;
        push @s, join(', ', sort split /,\s*/, $e // '');
    }
    return "$s[0] | $s[1]";
}


# FILE: a policy of one route whose alerts go to SINKS, each an item of
# alerts.sinks ('alertmanager: { url: "..." }'); with HOOK, a file, the
# secret "hook" (a webhook's hmac_secret) is read there, and written
# there (FAKE, mode 0600: alertd, a reload's --check, takes it)
sub sinks_policy {
    my ($file, $hook, @sinks) = @_;

    if (defined $hook) {
        spew($hook, "FAKE-hmac-secret\n");
        chmod 0600, $hook;              # as alertd takes a secret
    }
    spew($file, "version: 1\n"
                . (defined $hook ? "secrets:\n  hook: { file: \"$hook\" }\n"
                                 : '')
                . <<'EOT' . join('', map { "    - $_\n" } @sinks));
clients:
  agent: { unix_uid: 5000 }
upstreams:
  api: { url: "https://api.example.com" }
routes:
  - name: ping
    clients: [agent]
    match: { method: GET, path: /ping }
    upstream: api
    to: /ping
alerts:
  deny: { threshold: 3, window: 60s }
  sinks:
EOT
}


# the whole of a file, '' when it cannot be read
sub slurp {
    my ($f) = @_;

    open my $fh, '<', $f or return '';
    local $/;
    return <$fh>;
}


sub spew {
    my ($f, $s) = @_;

    open my $fh, '>', $f or die "$f: $!";
    print $fh $s;
    close $fh;
}

1;
