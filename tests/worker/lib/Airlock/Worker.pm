package Airlock::Worker;

# Helpers for the airlock-worker tests (tests/worker/*.t), on top of
# Airlock::Test: a real redis-server in the test prefix, the real nginx
# with the Airlock module listening on a unix socket (the worker's only
# door), an echo upstream behind a named route with an injected
# credential, and airlock-worker itself, started as root so it can start
# sandboxes; it fetches as the airlock-worker user.
#
#   my $t = Airlock::Test->new;
#   my $w = Airlock::Worker->new($t, backend => 'gvisor');
#   $w->start_proxy;        # nginx + echo + tests/worker/policy.yaml
#   $w->start_redis;
#   $w->start_worker;
#   my $r = $w->run_job({ job_id => 'j1', script => 'print(1)' });
#
# When CI is set, a missing prerequisite fails instead of skipping.

use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw(WNOHANG);
use Test::More ();
use Time::HiRes qw(sleep time);

use Airlock::Test;
use Airlock::Proxy;
use Airlock::Prereq ();

our $SECRET = 'wk-Secret-7f3a9c1e5b2d';


sub new {
    my ($class, $t, %opt) = @_;
    my $backend = $opt{backend} // 'gvisor';
    my $build = $t->{build};
    my $self = bless {
        t       => $t,
        backend => $backend,
        worker  => "$build/airlock-worker",
        rootfs  => $ENV{AIRLOCK_ROOTFS} // "$build/worker-rootfs",
        workers => {},
        nworker => 0,
    }, $class;

    Airlock::Prereq::absent('needs root to start sandboxes') if $> != 0;
    Airlock::Prereq::absent("airlock-worker not built: $self->{worker}")
        unless -x $self->{worker};
    Airlock::Prereq::absent("sandbox rootfs not built: $self->{rootfs} (make worker-rootfs)")
        unless -x "$self->{rootfs}/usr/bin/python3";
    Airlock::Prereq::absent('redis-server not installed (auto/deps)')
        unless -x '/usr/bin/redis-server';
    Airlock::Prereq::absent('user airlock-worker missing (auto/deps)')
        unless defined getpwnam('airlock-worker');

    if ($backend eq 'gvisor') {
        Airlock::Prereq::absent('runsc not installed (auto/deps)') unless -x '/usr/bin/runsc';
    } else {
        Airlock::Prereq::absent('bwrap not installed (auto/deps)') unless -x '/usr/bin/bwrap';
    }

    return $self;
}


sub t { $_[0]{t} }
sub backend { $_[0]{backend} }


# ---- the proxy -------------------------------------------------------------

sub start_proxy {
    my ($self) = @_;
    my $t = $self->{t};
    my $p = Airlock::Proxy->new($t);

    $p->keygen;
    $self->{sealed} = $p->seal($SECRET);
    $self->{keyring} = "$t->{testdir}/airlock.key";

    # a file: secret too, as systemd credentials are
    $t->write_file('secret-file', "file-$SECRET");
    chmod 0600, "$t->{testdir}/secret-file";

    my $policy = _slurp("$t->{top}/tests/worker/policy.yaml");
    $policy =~ s/%%SEALED%%/$self->{sealed}/g;
    $t->write_file_expand('policy.yaml', $policy);
    chmod 0644, "$t->{testdir}/policy.yaml";

    $t->write_file_expand('nginx.conf', $p->conf(
        listen => 'listen unix:%%TESTDIR%%/airlock.sock;'));

    $t->start_echo(8081);
    $t->run;

    $self->{proxy} = $p;
    return $self;
}


sub socket_path { "$_[0]{t}{testdir}/airlock.sock" }


# ---- redis -----------------------------------------------------------------

sub start_redis {
    my ($self) = @_;
    my $t = $self->{t};
    my $d = "$t->{testdir}/redis";

    mkdir $d;
    $self->{redis_port} //= $t->port(6379);
    $self->{redis_pid} = $t->run_daemon('/usr/bin/redis-server',
        $t->redis_args,
        '--port', $self->{redis_port}, '--bind', '127.0.0.1',
        '--dir', $d, '--appendonly', 'yes', '--appendfsync', 'always',
        '--save', '', '--daemonize', 'no', '--logfile', "$d/redis.log");

    $t->wait_for_port(6379)
        or die "redis-server did not start: " . (_slurp("$d/redis.log") // '');

    # answering PING, AOF loaded
    for (1 .. 200) {
        my $r = eval { $self->redis('PING') } // '';
        last if $r eq 'PONG';
        sleep 0.05;
    }

    return $self;
}


sub stop_redis {
    my ($self, $sig) = @_;
    my $pid = delete $self->{redis_pid} or return;

    kill $sig // 'TERM', $pid;
    for (1 .. 200) {
        last if waitpid($pid, WNOHANG) == $pid;
        sleep 0.05;
    }
    $self->{t}{daemons} = [ grep { $_ != $pid } @{$self->{t}{daemons}} ];
    delete $self->{redis};
}


# A minimal RESP client: one connection, commands as lists of strings,
# sent as the tests' own Redis user (Airlock::Test::redis_args); the
# worker is Redis user airlock-worker, with only what it uses.
sub redis {
    my ($self, @cmd) = @_;
    my $s = $self->{redis};

    if (!defined $s) {
        $s = IO::Socket::INET->new(
            PeerAddr => '127.0.0.1', PeerPort => $self->{redis_port},
            Timeout => 5) or die "redis connect: $!";
        $self->{redis} = $s;
        my $r = eval { $self->redis('AUTH', $Airlock::Test::REDIS_USER,
                                    $Airlock::Test::REDIS_PASS) };
        if (!defined $r || $r ne 'OK') {
            delete $self->{redis};
            die "redis AUTH: " . ($r // $@) . "\n";
        }
    }

    my $req = '*' . @cmd . "\r\n";
    $req .= '$' . length($_) . "\r\n$_\r\n" for @cmd;
    my $ok = eval { print {$s} $req };
    if (!$ok) {
        delete $self->{redis};
        die "redis write: $!";
    }

    my $r = eval { _resp_read($s) };
    if ($@) {
        delete $self->{redis};
        die $@;
    }

    return $r;
}


# A command refused to a Redis user for a while, and its rules as they
# were again: conf/redis-acl.conf gives a client's commands in selectors
# of their own, which a bare "ACL SETUSER USER -CMD" leaves as they are,
# so the command is taken from the user's root rules and every selector.
sub acl_deny {
    my ($self, $user, $cmd) = @_;
    my $list = $self->redis('ACL', 'LIST');
    my ($line) = grep { /^user \Q$user\E / } ref $list ? @$list : ();
    die "no Redis user $user\n" unless defined $line;

    my @rules;
    my $rest = substr($line, length("user $user "));
    push @rules, $1 while $rest =~ /\G\s*(\([^)]*\)|\S+)/gc;
    $self->{acl_saved}{$user} //= [ @rules ];

    my @less = map { /^\((.*)\)$/ ? "($1 -$cmd)" : $_ } @rules;
    my $r = $self->redis('ACL', 'SETUSER', $user, 'reset', @less, "-$cmd");
    die "ACL SETUSER $user: $r\n" unless defined $r && $r eq 'OK';
}

sub acl_restore {
    my ($self, $user) = @_;
    my $rules = delete $self->{acl_saved}{$user}
        or die "no rules of $user kept\n";
    my $r = $self->redis('ACL', 'SETUSER', $user, 'reset', @$rules);
    die "ACL SETUSER $user: $r\n" unless defined $r && $r eq 'OK';
}


# A connection of its own as the tests' Redis user (a SUBSCRIBE holds
# it): the default user is off, as on the appliance.
sub redis_socket {
    my ($self) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $self->{redis_port},
                                  Timeout => 5) or die "redis connect: $!";
    my @a = ('AUTH', $Airlock::Test::REDIS_USER,
             $Airlock::Test::REDIS_PASS);
    print {$s} "*3\r\n",
               map { '$' . length($_) . "\r\n$_\r\n" } @a;
    my $r = _resp_read($s);
    die "redis AUTH: $r\n" unless $r eq 'OK';
    return $s;
}


sub _resp_line {
    my ($s) = @_;
    my $line = <$s>;
    die "redis: connection closed\n" unless defined $line;
    $line =~ s/\r\n\z//;
    return $line;
}


sub _resp_read {
    my ($s) = @_;
    my $line = _resp_line($s);
    my ($type, $rest) = (substr($line, 0, 1), substr($line, 1));

    return $rest if $type eq '+';
    return "ERR:$rest" if $type eq '-';
    return 0 + $rest if $type eq ':';

    if ($type eq '$') {
        return undef if $rest < 0;
        my $buf = '';
        while (length $buf < $rest + 2) {
            my $n = read($s, $buf, $rest + 2 - length $buf, length $buf);
            die "redis: short read\n" unless $n;
        }
        return substr($buf, 0, $rest);
    }

    if ($type eq '*') {
        return undef if $rest < 0;
        return [ map { _resp_read($s) } 1 .. $rest ];
    }

    die "redis: unexpected reply '$line'\n";
}


# A proxy to Redis (tests/worker/redis-hold.pl) that forwards each
# connection until its client sends a command matching the regular
# expression $re, and from there on forwards nothing that client sends:
# a worker started with redis_port => $port stops at that command, for a
# test to kill it there.  Its port, and a sub that tells whether it has
# held a command.  Keep $re off the heartbeat's script (XPENDING,
# XRANGE, ZADD, XACK, XCLAIM), whose connection goes through it too.
sub hold_proxy {
    my ($self, $re) = @_;
    my $t = $self->{t};
    my $n = 'hold-' . $self->{nhold}++;
    my $mark = "$t->{testdir}/$n.held";

    $t->run_daemon($^X, "$t->{top}/tests/worker/redis-hold.pl",
                   $t->port($n), $self->{redis_port}, $re, $mark);
    $t->wait_for_port($n) or die "redis-hold.pl did not start";

    return ($t->port($n), sub { -e $mark });
}


# ---- the worker ------------------------------------------------------------

sub write_conf {
    my ($self, %o) = @_;
    my $t = $self->{t};
    my $name = delete $o{name} // 'worker.conf';
    my %c = (
        redis_port            => $self->{redis_port},
        redis_user            => 'airlock-worker',
        redis_password_file   => $t->redis_pass('airlock-worker'),
        policy                => "$t->{testdir}/policy.yaml",
        proxy_socket          => $self->socket_path,
        rootfs                => $self->{rootfs},
        workdir               => "$t->{testdir}/work",
        backend               => $self->{backend},
        cgroup_name           => "airlock-test-$$",
        consumer              => 'c1',
        block_ms              => 200,
        visibility_timeout_ms => 60000,
        %o,
    );

    # a key given as undef is left out: the worker's default applies
    my $text = join '', map { "$_ $c{$_}\n" }
                        grep { defined $c{$_} } sort keys %c;
    $t->write_file($name, $text);
    $self->{conf}{$name} = \%c;

    return "$t->{testdir}/$name";
}


# wrap => [ command ... ] starts the worker through that command, which
# must end by exec'ing its arguments (the pid stays the worker's);
# wait => 0 returns at once, not once it has connected to Redis; env =>
# { NAME => VALUE } adds to its environment
sub start_worker {
    my ($self, %o) = @_;
    my $t = $self->{t};
    my $wrap = delete $o{wrap} // [];
    my $wait = delete $o{wait} // 1;
    my $env = delete $o{env} // {};
    my $conf = $self->write_conf(%o);
    my $n = $self->{nworker}++;

    # a secret in the worker's own environment, which no sandbox may see
    my $log = "worker-$n.log";
    my $pid = $t->_spawn("$t->{testdir}/$log",
                         { AIRLOCK_WORKER_TEST_SECRET => $SECRET, %$env },
                         @$wrap, $self->{worker}, '-c', $conf);
    push @{$t->{daemons}}, $pid;
    $self->{workers}{$pid} = $log;
    $self->{last_worker} = $pid;

    # ready once it has created the group (or named a problem)
    for (1 .. ($wait ? 400 : 0)) {
        my $l = _slurp("$t->{testdir}/$log") // '';
        last if $l =~ /connected to redis|emerg/;
        sleep 0.025;
    }

    return $pid;
}


sub worker_log {
    my ($self, $pid) = @_;
    $pid //= $self->{last_worker};
    return _slurp("$self->{t}{testdir}/$self->{workers}{$pid}") // '';
}


sub all_worker_logs {
    my ($self) = @_;
    return join '', map { $self->worker_log($_) } sort keys %{$self->{workers}};
}


sub kill_worker {
    my ($self, $sig, $pid) = @_;
    $pid //= $self->{last_worker};

    kill $sig // 'KILL', $pid;
    for (1 .. 400) {
        last if waitpid($pid, WNOHANG) == $pid;
        sleep 0.025;
    }
    $self->{t}{daemons} = [ grep { $_ != $pid } @{$self->{t}{daemons}} ];
}


# The jansson fault injector (lib/jansson-fault.c), built into the
# test's directory: the environment (for start_worker(env => ...)) in
# which every allocation jansson makes in the worker's own process fails
# while jansson_fault_on() holds; jansson_fault_off() ends it and
# jansson_faults() counts the failures made.  Without cc it skips (fails
# under CI).
sub jansson_fault {
    my ($self) = @_;
    my $t = $self->{t};
    my $so = "$t->{testdir}/jansson-fault.so";

    Airlock::Prereq::need_cmd('cc');
    my $cmd = "cc -shared -fPIC -O2 -Wall -Werror -o \Q$so\E "
              . "\Q$t->{top}\E/tests/worker/lib/jansson-fault.c "
              . "-ljansson 2>&1";
    my $out = `$cmd`;
    Airlock::Prereq::absent(
        "cannot build tests/worker/lib/jansson-fault.c: $out") if $?;

    # an ASan-built worker runs only with the runtime first in the list
    my $preload = $so;
    if ((Airlock::Test::_config_mk($t->{build}, 'SAN') // '') eq '1') {
        my $cc = Airlock::Test::_config_mk($t->{build}, 'CC') // 'cc';
        my $asan = `$cc -print-file-name=libasan.so 2>/dev/null` // '';
        chomp $asan;
        $preload = "$asan $so" if $asan =~ m{^/};
    }

    return { LD_PRELOAD => $preload, AIRLOCK_FAULT => 'jansson',
             AIRLOCK_FAULT_ON => "$t->{testdir}/jansson-fault-on" };
}

# from now on, in worker process $pid; with $min, only the allocations
# of at least $min bytes
sub jansson_fault_on {
    my ($self, $pid, $min) = @_;
    my $line = defined $min ? "$pid $min\n" : "$pid\n";
    $self->{t}->write_file('jansson-fault-on', $line);
    # the worker no longer runs as root to count its failures there
    chmod 0666, "$self->{t}{testdir}/jansson-fault-on";
    $self->{jansson_fault_line} = $line;
}

sub jansson_fault_off {
    my ($self) = @_;
    my $d = $self->{t}{testdir};
    rename "$d/jansson-fault-on", "$d/jansson-fault-made"
        or die "rename: $!";
}

sub jansson_faults {
    my ($self) = @_;
    my $d = $self->{t}{testdir};
    my $f = -e "$d/jansson-fault-on" ? "$d/jansson-fault-on"
                                     : "$d/jansson-fault-made";
    my $n = (-s $f) || 0;
    return $n ? $n - length($self->{jansson_fault_line}) : 0;
}


# A memory cgroup of its own for the worker (v1 or v2) named $name, of
# $bytes and no swap: its path, and the wrap => [...] that starts the
# worker in it (the caller removes it at the end).  An ASan build's
# quarantine, which would count, is turned off.
sub memory_cgroup {
    my ($self, $name, $bytes) = @_;
    my ($cg, $limit);

    if (-d '/sys/fs/cgroup/memory') {
        $cg = "/sys/fs/cgroup/memory/airlock-test-$$-$name";
        $limit = 'memory.limit_in_bytes';
    } elsif (-f '/sys/fs/cgroup/cgroup.controllers') {
        $cg = "/sys/fs/cgroup/airlock-test-$$-$name";
        $limit = 'memory.max';
    }
    Airlock::Prereq::absent('no memory cgroup to bound the worker with')
        unless defined $cg && (-d $cg || mkdir $cg) && -f "$cg/$limit";

    my $write = sub {
        my ($file, $v) = @_;
        open my $fh, '>', "$cg/$file" or return 0;
        my $ok = print {$fh} $v;
        return close($fh) && $ok;
    };
    $write->($limit, $bytes) or die "$cg/$limit: $!";
    $write->('memory.memsw.limit_in_bytes', $bytes)
        if -f "$cg/memory.memsw.limit_in_bytes";
    $write->('memory.swap.max', 0) if -f "$cg/memory.swap.max";

    if ((Airlock::Test::_config_mk($self->{t}{build}, 'SAN') // '') eq '1') {
        $ENV{ASAN_OPTIONS} = join ':', grep { defined }
            $ENV{ASAN_OPTIONS} // 'detect_leaks=0', 'quarantine_size_mb=0';
    }

    return ($cg, [ 'sh', '-c',
                   "echo \$\$ > $cg/cgroup.procs && exec \"\$@\"", 'sh' ]);
}


# ---- jobs ------------------------------------------------------------------

sub envelope {
    my ($self, %j) = @_;

    my %e = (
        job_id     => $j{job_id},
        session_id => $j{session_id} // 'sess-1',
        script     => $j{script},
        blueprint  => $j{blueprint} // { inputs => [] },
    );
    $e{limits} = $j{limits} if $j{limits};

    return JSON::PP->new->canonical->encode(\%e);
}


sub add_raw {
    my ($self, $raw, $field) = @_;
    return $self->redis('XADD', 'airlock:jobs', '*', $field // 'job', $raw);
}


sub add_job {
    my ($self, %j) = @_;
    return $self->add_raw($self->envelope(%j));
}


sub result {
    my ($self, $id) = @_;
    my $r = $self->redis('GET', "result:$id");
    return defined $r ? decode_json($r) : undef;
}


sub wait_result {
    my ($self, $id, $timeout) = @_;
    my $deadline = time + ($timeout // 120);

    while (time < $deadline) {
        my $r = eval { $self->result($id) };
        return $r if $r;
        sleep 0.05;
    }

    Test::More::diag("no result for $id; worker log:\n"
                     . $self->all_worker_logs);
    return undef;
}


sub run_job {
    my ($self, %j) = @_;
    $self->add_job(%j);
    return $self->wait_result($j{job_id}, $j{timeout});
}


# The entries the workers' group has not acknowledged, once that is 0
# or after 10 s: a worker acknowledges a job right after its result is
# stored and published, which is what run_job() returns on, so a count
# read at once may still hold it.
sub pending_after {
    my ($self) = @_;
    my $deadline = Time::HiRes::time() + 10;
    my $n;

    for (;;) {
        $n = $self->redis('XPENDING', 'airlock:jobs', 'airlock-workers')->[0];
        return $n if $n == 0 || Time::HiRes::time() > $deadline;
        Time::HiRes::sleep(0.025);
    }
}


# What the worker leaves on the host after its jobs: job directories
# (work/jobs) and their code and data (work/in), runsc's state files
# and job cgroups (empty lists when clean).
sub leftovers {
    my ($self) = @_;
    my $t = $self->{t};
    my @dirs = (glob("$t->{testdir}/work/jobs/*"),
                glob("$t->{testdir}/work/in/*"),
                glob("$t->{testdir}/work/runsc/*"));
    my @cg = grep { -d } glob("/sys/fs/cgroup/*/airlock-test-$$/aw-*"),
                         glob("/sys/fs/cgroup/airlock-test-$$/aw-*");
    return (@dirs, @cg);
}


# The processes of a worker's jobs (worker pid $pid): those in the jobs'
# cgroups, and runsc's processes for them (named by the job's slot).
sub job_procs {
    my ($self, $pid) = @_;
    return grep {
        (_slurp("$_/cgroup") // '') =~ m{/airlock-test-$$/aw-$pid-\d}
        || (_slurp("$_/cmdline") // '') =~ /\baw-$pid-\d/
    } glob('/proc/[0-9]*');
}


# The CPU time a worker's job cgroup has used, in ms (undef when there
# is none): cpuacct (v1) or cpu.stat (v2).
sub job_cpu_ms {
    my ($self, $pid) = @_;
    for my $d (glob("/sys/fs/cgroup/cpuacct/airlock-test-$$/aw-$pid-*")) {
        my $ns = _slurp("$d/cpuacct.usage");
        return int($ns / 1e6) if defined $ns;
    }
    for my $d (glob("/sys/fs/cgroup/airlock-test-$$/aw-$pid-*")) {
        my $s = _slurp("$d/cpu.stat") // next;
        return int($1 / 1000) if $s =~ /^usage_usec (\d+)/m;
    }
    return undef;
}


# The workers' cgroups (cgroup_name airlock-test-<pid> in every
# hierarchy, runsc's included); only empty ones can go, so this never
# touches a running job's.
sub cleanup_cgroups {
    my $owner = $$;
    for my $d (glob("/sys/fs/cgroup/*/airlock-test-$owner/aw-*"),
               glob("/sys/fs/cgroup/airlock-test-$owner/aw-*"),
               glob("/sys/fs/cgroup/*/airlock-test-$owner"),
               glob("/sys/fs/cgroup/airlock-test-$owner")) {
        rmdir $d;
    }
}


my $PARENT = $$;

# after the tests, before global destruction: stop the workers first
END {
    if ($$ == $PARENT && $> == 0) {
        local ($?, $!, $@);
        for my $t (grep { defined } $Airlock::Test::CURRENT) {
            $t->stop_daemons;
        }
        cleanup_cgroups();
    }
}


sub _slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return undef;
    local $/;
    my $s = <$fh>;
    close $fh;
    return $s;
}


1;
