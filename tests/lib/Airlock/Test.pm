package Airlock::Test;

# Test harness for the nginx-facing tests, in the nginx-tests tradition: a
# .t file writes an nginx.conf into a temporary prefix, starts nginx with -p,
# sends raw HTTP and asserts on the answers, and ends by checking the error
# log for alerts and sanitizer reports.
#
#   use FindBin;
#   use lib "$FindBin::Bin/../lib";
#   use Test::More;
#   use Airlock::Test;
#
#   my $t = Airlock::Test->new;
#   $t->require_module;                 # skipped (failed under CI) unless
#                                       # the .so is built
#   $t->start_echo(8081);
#   $t->write_file_expand('nginx.conf', <<'EOF');
#   %%TEST_GLOBALS%%
#   http {
#       %%TEST_GLOBALS_HTTP%%
#       server {
#           listen 127.0.0.1:%%PORT_8080%%;
#           location / { proxy_pass http://127.0.0.1:%%PORT_8081%%; }
#       }
#   }
#   EOF
#   $t->run;
#   plan tests => 2;
#   like(http_get('/'), qr/ 200 /, 'proxied');
#   is($t->error_log_check, '', 'no alerts');
#
# Ports are written as %%PORT_n%% and mapped to free loopback ports at run
# time; every method that takes a port takes that n.  %%TEST_GLOBALS%% is the
# main-context header (conf_header) and must come first: it holds daemon off,
# pid, error_log, load_module and events {}.  %%TEST_GLOBALS_HTTP%% keeps the
# access log and temp paths inside the prefix and names the CAs upstream
# certificates are checked against (a placeholder; TLS tests set their own).
# %%AIRLOCK_LOCATION%% is the standard Airlock location body, the include
# of conf/airlock-location.conf that every shipped configuration has.
#
# Environment: AIRLOCK_BUILD (build directory, default <top>/build),
# AIRLOCK_NGINX (nginx binary), AIRLOCK_KEEP=1 (keep the prefix),
# AIRLOCK_LOG_LEVEL (error_log level, default debug).

use strict;
use warnings;

use Airlock::Port ();
use Cwd qw(abs_path);
use Exporter qw(import);
use File::Basename qw(dirname);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use IO::Handle;
use IO::Select;
use IO::Socket::INET;
use IO::Socket::IP;
use IO::Socket::UNIX;
use JSON::PP;
use MIME::Base64 qw(decode_base64);
use POSIX qw(WNOHANG setpgid);
use Scalar::Util qw(blessed refaddr weaken);
use Socket ();
use Test::More ();
use Time::HiRes qw(sleep time);

our @EXPORT = qw(http http_get http_post parse_response header_lines
                 answers_on echo_json json_lines allowed_cpus pin_cpus
                 peer_unread wait_peer_read);

my $TOP = abs_path(dirname(__FILE__) . '/../../..');

# A self-signed certificate whose key was thrown away: a trust anchor no
# upstream can present, for configurations that verify nothing.
my $TRUST_PEM = <<'EOF';
-----BEGIN CERTIFICATE-----
MIIBvjCCAWWgAwIBAgIUD0mcYuzIZfnq59BQ1bfPbtCAAEIwCgYIKoZIzj0EAwIw
NDEyMDAGA1UEAwwpQWlybG9jayB0ZXN0IHBsYWNlaG9sZGVyIENBIChubyBrZXkg
a2VwdCkwIBcNMjYxMjAxMTIyODI1WhgPMjEyNjExMDcxMjI4MjVaMDQxMjAwBgNV
BAMMKUFpcmxvY2sgdGVzdCBwbGFjZWhvbGRlciBDQSAobm8ga2V5IGtlcHQpMFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEOw7SKPNcS34yIWB1pxMuXQuIWcA3wJVK
xbjZz49Z3VW9yy3AXcVXDAi7zUDpzgwknhKRPOeBuW9PZLXWLWY2oqNTMFEwHQYD
VR0OBBYEFG9GgjAkO5e48YU0rm6h7Vn9yZevMB8GA1UdIwQYMBaAFG9GgjAkO5e4
8YU0rm6h7Vn9yZevMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIg
S+HQh9a9jUWpBn6WVffNH5QktgUuCh2V6SOh5ZPdACQCIGHTUF9mUqSbDps5wCzW
TL4RkEKXMfzJJaXzbURkHsWk
-----END CERTIFICATE-----
EOF

# The last object created; the exported HTTP functions map ports through it.
our $CURRENT;

# Every live object, so END and fatal signals can stop what they started.
my %LIVE;


sub new {
    my ($class) = @_;
    my $keep = $ENV{AIRLOCK_KEEP};
    my $dir = tempdir('airlock-test-XXXXXX', TMPDIR => 1, CLEANUP => !$keep);

    # nginx workers and helper daemons may run as another user.
    chmod 0755, $dir;

    my $build = $ENV{AIRLOCK_BUILD} // "$TOP/build";
    my $self = bless {
        testdir => $dir,
        top     => $TOP,
        build   => $build,
        module  => "$build/modules/ngx_http_airlock_module.so",
        nginx   => $ENV{AIRLOCK_NGINX} // _config_mk($build, 'NGINX_BIN')
                   // '/usr/sbin/nginx',
        owner   => $$,
        ports   => {},
        used    => {},
        daemons => [],
        echo    => {},
        use_module => 0,
    }, $class;

    Test::More::diag("AIRLOCK_KEEP: prefix is $dir") if $keep;

    $LIVE{refaddr $self} = $self;
    weaken($LIVE{refaddr $self});
    $CURRENT = $self;
    weaken($CURRENT);
    _install_signal_handlers();

    return $self;
}


sub testdir { $_[0]{testdir} }


# redis-server's first arguments: Redis as the appliance has it for its
# clients (conf/redis-acl.conf through conf/airlock-redis-users: the
# default user off, airlock-agent and airlock-worker each with only what
# it uses, their passwords in $REDIS_AGENT_PASS and $REDIS_WORKER_PASS
# in the test directory, redis_pass()), and a user of the tests' own for
# what a test does to Redis itself (CONFIG SET, SHUTDOWN, CLIENT PAUSE,
# INFO, ACL SETUSER): $REDIS_USER, password $REDIS_PASS
our $REDIS_USER = 'airlock-test';
our $REDIS_PASS = 'FAKE-redis-test-pass';
our %REDIS_CLIENT_PASS = ('airlock-agent' => 'FAKE-redis-agent-pass',
                          'airlock-worker' => 'FAKE-redis-worker-pass');

sub redis_args {
    my ($self) = @_;
    my $d = $self->{testdir};

    if (!-f "$d/redis-users.acl") {
        for my $u (sort keys %REDIS_CLIENT_PASS) {
            my $f = $self->redis_pass($u);
            next if -f $f;
            open my $fh, '>', $f or die "$f: $!";
            print $fh "$REDIS_CLIENT_PASS{$u}\n";
            close $fh;
            chmod 0400, $f;
        }
        system("$self->{top}/conf/airlock-redis-users",
               "$self->{top}/conf/redis-acl.conf", "$d/redis-users.acl",
               $self->redis_pass('airlock-agent'),
               $self->redis_pass('airlock-worker')) == 0
            or die "conf/airlock-redis-users failed\n";
    }

    return ("$d/redis-users.acl", '--user', $REDIS_USER,
            'on', ">$REDIS_PASS", '~*', '&*', '+@all');
}

# the password file of Redis user airlock-agent or airlock-worker
sub redis_pass {
    my ($self, $user) = @_;
    return "$self->{testdir}/redis-$user.pass";
}

# the nginx binary run() starts; nginx_bin(PATH) sets another (a wrapper
# that runs it as another user, say)
sub nginx_bin {
    my ($self, $bin) = @_;
    $self->{nginx} = $bin if defined $bin;
    return $self->{nginx};
}
sub module_path { $_[0]{module} }


sub has_module {
    my ($self) = @_;
    return -f $self->{module};
}


# Whether nginx was built --with-debug (Debian's is), and whether debug
# lines reach error.log: that and the level debug (AIRLOCK_LOG_LEVEL,
# debug when unset).
sub nginx_with_debug {
    my ($self) = @_;
    my $v = `'$self->{nginx}' -V 2>&1`;
    return $v =~ /--with-debug\b/ ? 1 : 0;
}


sub has_debug_log {
    my ($self) = @_;
    return ($ENV{AIRLOCK_LOG_LEVEL} // 'debug') eq 'debug'
           && $self->nginx_with_debug;
}


sub require_module {
    my ($self) = @_;
    Airlock::Prereq::absent("module not built: $self->{module}")
        unless $self->has_module;
    $self->{use_module} = 1;
    return $self;
}


sub port {
    my ($self, $n) = @_;
    return $self->{ports}{$n} //= $self->_free_port;
}


sub _free_port {
    my ($self) = @_;
    my $p = Airlock::Port::free_port();

    $self->{used}{$p}++;
    return $p;
}


# ---- configuration ---------------------------------------------------------

sub conf_header {
    my ($self, %opt) = @_;
    my $d = $self->{testdir};
    my $level = $opt{log_level} // $ENV{AIRLOCK_LOG_LEVEL} // 'debug';
    my $module = $opt{module} // $self->{use_module};

    my $h = "daemon off;\n"
          . "worker_processes " . ($opt{workers} // 1) . ";\n"
          . "pid $d/nginx.pid;\n"
          . "error_log $d/error.log $level;\n";

    # As root, nginx would hand the workers to nobody; keep them able to
    # read and write whatever a test puts in the prefix.
    $h .= "user root;\n" if $> == 0;

    # load_module must precede events {}: nginx refuses it "too late".
    $h .= "load_module $self->{module};\n" if $module;

    $h .= "events {\n    worker_connections 1024;\n}\n";

    return $h;
}


sub http_defaults {
    my ($self) = @_;
    my $d = $self->{testdir};

    # The Airlock location body turns proxy_ssl_verify on, which needs a
    # trusted certificate file at every level it is used.
    $self->write_file('trust.pem', $TRUST_PEM) unless -f "$d/trust.pem";

    # Debian's compiled-in temp paths live in /var/lib/nginx.
    return join '', map { "$_\n" }
        "access_log $d/access.log;",
        "client_body_temp_path $d/client_body_temp;",
        "proxy_temp_path $d/proxy_temp;",
        "fastcgi_temp_path $d/fastcgi_temp;",
        "uwsgi_temp_path $d/uwsgi_temp;",
        "scgi_temp_path $d/scgi_temp;",
        "proxy_ssl_trusted_certificate $d/trust.pem;";
}


# The standard Airlock location body, as operators include it.
sub airlock_location {
    my ($self) = @_;
    return "include $self->{top}/conf/airlock-location.conf;";
}


sub expand {
    my ($self, $s) = @_;

    $s =~ s/^([ \t]*)%%TEST_GLOBALS%%/_indent($1, $self->conf_header)/gme;
    $s =~ s/^([ \t]*)%%TEST_GLOBALS_HTTP%%/_indent($1, $self->http_defaults)/gme;
    $s =~ s/%%AIRLOCK_LOCATION%%/$self->airlock_location/ge;
    $s =~ s/%%PORT_(\d+)%%/$self->port($1)/ge;
    $s =~ s/%%TESTDIR%%/$self->{testdir}/g;
    $s =~ s/%%MODULE%%/$self->{module}/g;
    $s =~ s/%%TOP%%/$self->{top}/g;

    die "unknown placeholder $1" if $s =~ /(%%[A-Z0-9_]+%%)/;

    return $s;
}


sub _indent {
    my ($pad, $text) = @_;
    chomp $text;
    $text =~ s/^/$pad/gm;
    return $text;
}


sub write_file {
    my ($self, $name, $content) = @_;
    my $path = "$self->{testdir}/$name";

    make_path(dirname($path));
    open(my $fh, '>:raw', $path) or die "write $path: $!";
    print $fh $content;
    close $fh or die "write $path: $!";

    return $path;
}


sub write_file_expand {
    my ($self, $name, $content) = @_;
    return $self->write_file($name, $self->expand($content));
}


sub read_file {
    my ($self, $name) = @_;
    return _slurp($name =~ m{^/} ? $name : "$self->{testdir}/$name");
}


sub _slurp {
    my ($path) = @_;
    open(my $fh, '<:raw', $path) or return undef;
    local $/;
    my $s = <$fh>;
    return $s // '';
}


# ---- nginx -----------------------------------------------------------------

# The bound on waits for nginx or a helper to start, reload or listen:
# each returns as soon as its condition holds, and a machine under load
# may take many seconds to get there.
our $START_WAIT = 60;

sub run {
    my ($self) = @_;
    my $d = $self->{testdir};

    die "nginx already running" if $self->{pid};
    die "no nginx.conf in $d" unless -f "$d/nginx.conf";

    $self->{pid} = $self->{pgid} = $self->_spawn("$d/stderr.log", $self->_nginx_env,
                                 $self->{nginx}, '-p', "$d/",
                                 '-c', 'nginx.conf', '-e', "$d/error.log");

    $self->_wait_listen($START_WAIT)
        or die "nginx did not start\n" . $self->_log_tail;

    # _workers() knows a worker by its title, which it takes once it runs:
    # under load that may come after the master listens
    my $want = $self->_worker_processes;
    my $deadline = time + $START_WAIT;
    while ($self->_workers < $want) {
        die "nginx started fewer than $want workers\n" . $self->_log_tail
            if time > $deadline;
        sleep 0.02;
    }

    return $self;
}


# worker_processes in nginx.conf: 1 without it, 0 with "master_process
# off" or "auto" (their number is not known here)
sub _worker_processes {
    my ($self) = @_;
    my $conf = _slurp("$self->{testdir}/nginx.conf") // '';

    return 0 if $conf =~ /^\s*master_process\s+off\s*;/m;
    my ($n) = $conf =~ /^\s*worker_processes\s+(\S+)\s*;/m;
    return 1 unless defined $n;
    return $n =~ /^\d+$/ ? $n : 0;
}


sub stop {
    my ($self) = @_;
    local ($?, $!, $@);

    # A forked child carries a copy of the object; only the owner stops.
    return $self if $$ != $self->{owner};

    if (my $pid = delete $self->{pid}) {
        kill 'QUIT', $pid;
        kill 'KILL', -$pid unless _reap($pid, 5);
        _reap($pid, 5);
    }

    # Workers orphaned by a crashed master keep the process group.
    if (my $pgid = delete $self->{pgid}) {
        kill 'KILL', -$pgid;
    }

    $self->stop_daemons;

    return $self;
}


sub stop_daemons {
    my ($self) = @_;
    local ($?, $!, $@);

    return $self if $$ != $self->{owner};

    # The echo upstream forks per connection: signal the whole group.
    kill 'TERM', -$_ for @{$self->{daemons}};
    for my $pid (@{$self->{daemons}}) {
        kill 'KILL', -$pid unless _reap($pid, 5);
        _reap($pid, 1);
        kill 'KILL', -$pid;
    }
    $self->{daemons} = [];

    return $self;
}


sub reload {
    my ($self, %opt) = @_;
    my $pid = $self->{pid} or die "nginx is not running";
    my $log = "$self->{testdir}/error.log";
    my $offset = -s $log // 0;
    my %old = map { $_->[0] => 1 } $self->_workers;
    my $deadline = time + ($opt{timeout} // $START_WAIT);
    my $why;

    kill 'HUP', $pid;

    # Done when a new generation of workers exists and every old worker has
    # either exited or closed its listening sockets ("shutting down").
    for (;;) {
        my @w = $self->_workers;
        my @new = grep { !$old{$_->[0]} } @w;
        my @accepting = grep { $old{$_->[0]} && $_->[1] !~ /shutting down/ }
                        @w;

        last if @new && !@accepting;

        my $tail = substr(_slurp($log) // '', $offset);
        if (my @e = $tail =~ /^(.*\[emerg\].*)$/mg) {
            $why = join "\n", @e;
            last;
        }

        if (!$self->_alive) {
            $why = "nginx exited\n" . $self->_log_tail;
            last;
        }

        if (time > $deadline) {
            $why = "no new worker processes\n" . $self->_log_tail;
            last;
        }

        sleep 0.02;
    }

    if (!defined $why && !$self->_wait_listen($START_WAIT)) {
        $why = "listen sockets not ready\n" . $self->_log_tail;
    }

    return 1 unless defined $why;
    die "reload failed: $why\n" unless $opt{allow_fail};
    return wantarray ? (0, $why) : 0;
}


sub reload_test {
    my ($self) = @_;
    my $d = $self->{testdir};

    # A separate -e log: the expected [emerg] must not reach error.log.
    my ($status, $out) = $self->_capture($self->_nginx_env,
        $self->{nginx}, '-t', '-p', "$d/", '-c', 'nginx.conf',
        '-e', "$d/test-error.log");

    return ($status >> 8, $out);
}


sub nginx_pid { $_[0]{pid} }


sub error_log_check {
    my ($self, @ignore) = @_;
    my @bad;

    for my $name (qw(error.log stderr.log)) {
        my $text = $self->read_file($name) // next;

        for my $line (split /\n/, $text) {
            next if grep { $line =~ $_ } @ignore;

            if ($line =~ m{^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d \[(\w+)\]}) {
                push @bad, $line if $1 =~ /^(?:alert|emerg|crit)$/;

            } elsif ($line =~ /Sanitizer|runtime error:/) {
                push @bad, $line;
            }
        }
    }

    return join "\n", @bad;
}


# More environment for nginx, from the next run() or reload_test() on:
# env(NAME => VALUE, ...).  An LD_PRELOAD (a test's fault injector) comes
# after the sanitizer runtime's.
sub env {
    my ($self, %env) = @_;
    $self->{env} = { %{$self->{env} // {}}, %env };
    return $self;
}


sub _nginx_env {
    my ($self) = @_;
    my %env = %{$self->{env} // {}};

    return \%env unless (_config_mk($self->{build}, 'SAN') // '') eq '1';

    # An ASan-built module loads only with the runtime already in place.
    my $cc = _config_mk($self->{build}, 'CC') // 'cc';
    my $asan = `$cc -print-file-name=libasan.so 2>/dev/null` // '';
    chomp $asan;

    $env{LD_PRELOAD} = join ' ', grep { defined }
                                 ($asan =~ m{^/} ? $asan : undef),
                                 $env{LD_PRELOAD};
    delete $env{LD_PRELOAD} if $env{LD_PRELOAD} eq '';

    return {
        %env,
        ASAN_OPTIONS => $ENV{ASAN_OPTIONS} // 'detect_leaks=0',
        UBSAN_OPTIONS => $ENV{UBSAN_OPTIONS} // 'print_stacktrace=1',
    };
}


sub _alive {
    my ($self) = @_;
    my $pid = $self->{pid} or return 0;

    return 1 if waitpid($pid, WNOHANG) == 0;

    delete $self->{pid};
    return 0;
}


# [pid, command line] of the master's worker processes, from /proc.
sub _workers {
    my ($self) = @_;
    my $master = $self->{pid} or return;
    my @w;

    opendir(my $dh, '/proc') or return;

    for my $p (grep { /^\d+$/ } readdir $dh) {
        my $stat = _slurp("/proc/$p/stat") // next;
        $stat =~ /^\d+ \(.*\) \S+ (\d+)/s or next;
        next unless $1 == $master;

        my $cmd = _slurp("/proc/$p/cmdline") // next;
        $cmd =~ tr/\0/ /;
        push @w, [$p, $cmd] if $cmd =~ /worker process/;
    }

    return @w;
}


# The JSON objects of a log of one per line (usage, journal, the
# provider fixture's requests), read while the writer may still be
# appending: only the lines that end in "\n" are complete, and a last one
# without it is left for the next read.
sub json_lines {
    my ($text) = @_;
    $text //= '';
    $text =~ s/[^\n]*\z//;
    return map { decode_json($_) } grep { length } split /\n/, $text;
}


# The CPUs this process may run on (Cpus_allowed_list), lowest first:
# what the benchmarks place their processes on.
sub allowed_cpus {
    return _cpus_allowed('self');
}


# Every thread of process PID onto the CPUs CPUS ("1", "0,1", "0-3"):
# true when its main thread then may run there and nowhere else (taskset
# -a of a process that is gone does nothing and reports success; the
# other threads are taskset's word).
sub pin_cpus {
    my ($pid, $cpus) = @_;
    system("taskset -a -pc $cpus $pid >/dev/null 2>&1") == 0 or return 0;
    my $want = join ',', _cpu_list($cpus);
    return $want ne '' && join(',', _cpus_allowed($pid)) eq $want;
}


sub _cpus_allowed {
    my ($pid) = @_;
    my $status = _slurp("/proc/$pid/status") // return;
    my ($list) = $status =~ /^Cpus_allowed_list:\s*(\S+)/m or return;
    return _cpu_list($list);
}


# "0-2,5" as (0, 1, 2, 5)
sub _cpu_list {
    my ($list) = @_;
    my %cpus;

    for (split /,/, $list) {
        my ($lo, $hi) = /^(\d+)(?:-(\d+))?$/ or next;
        $cpus{$_} = 1 for $lo .. ($hi // $lo);
    }

    return sort { $a <=> $b } keys %cpus;
}


# The bytes written on loopback TCP socket $s that its peer has not read
# yet (its receive queue, from /proc/net/tcp), or undef when the peer's
# end is not found: 0 once the server has read what the test wrote.
sub peer_unread {
    shift if blessed($_[0]) && $_[0]->isa(__PACKAGE__);
    my ($s) = @_;
    my $want = _proc_net_addr($s->peerhost, $s->peerport) . ' '
             . _proc_net_addr($s->sockhost, $s->sockport);

    for my $f ('/proc/net/tcp', '/proc/net/tcp6') {
        for my $line (split /\n/, _slurp($f) // '') {
            my @f = split ' ', $line;
            next unless @f > 4 && "$f[1] $f[2]" eq $want;
            my ($rx) = $f[4] =~ /:([0-9A-Fa-f]+)$/ or next;
            return hex $rx;
        }
    }

    return undef;
}


# waits (at most $timeout s, 60 by default) until the peer of loopback
# socket $s has read all the test wrote on it; true when it has
sub wait_peer_read {
    shift if blessed($_[0]) && $_[0]->isa(__PACKAGE__);
    my ($s, $timeout) = @_;
    my $deadline = time + ($timeout // 60);

    for (;;) {
        my $n = peer_unread($s);
        return 1 if defined $n && $n == 0;
        return 0 if time > $deadline;
        sleep 0.01;
    }
}


# an address as /proc/net/tcp writes it: 127.0.0.1:80 is 0100007F:0050
sub _proc_net_addr {
    my ($host, $port) = @_;
    my $hex;

    if ($host =~ /^\d+\.\d+\.\d+\.\d+$/) {
        $hex = sprintf '%08X', unpack('V', pack('C4', split /\./, $host));
    } else {
        my $bin = Socket::inet_pton(Socket::AF_INET6(), $host) // '';
        $hex = join '', map { sprintf '%08X', $_ } unpack('V4', $bin);
    }

    return sprintf '%s:%04X', $hex, $port;
}


# SIGKILL to every worker; returns the workers the master starts in their
# place, once there are as many (or after $START_WAIT s, those there are).
sub kill_workers {
    my ($self) = @_;
    my %before = map { $_->[0] => 1 } $self->_workers;
    my $deadline = time + $START_WAIT;
    my @new;

    kill 'KILL', keys %before;

    while (time < $deadline) {
        @new = grep { !$before{$_->[0]} } $self->_workers;
        last if @new >= keys %before;
        sleep 0.05;
    }
    return @new;
}


# Every listen address in nginx.conf and the files it includes.
sub _listens {
    my ($self) = @_;
    my $d = $self->{testdir};
    my @files = ("$d/nginx.conf");
    my (%seen, @out);

    while (defined(my $f = shift @files)) {
        next if $seen{$f}++;
        my $text = _slurp($f) // next;
        $text =~ s/#[^\n]*//g;

        while ($text =~ /(?:^|[\s;{}])include\s+([^\s;]+)\s*;/g) {
            my $inc = $1;
            push @files, glob($inc =~ m{^/} ? $inc : "$d/$inc");
        }

        while ($text =~ /(?:^|[\s;{}])listen\s+([^\s;]+)([^;]*);/g) {
            my ($addr, $params) = ($1, $2);
            next if $params =~ /\budp\b/;

            if ($addr =~ /^unix:(.+)$/) {
                push @out, { unix => $1 };
            } elsif ($addr =~ /^\[(.*)\]:(\d+)$/) {
                push @out, { host => $1 eq '::' ? '::1' : $1, port => $2 };
            } elsif ($addr =~ /^(\d+)$/) {
                push @out, { host => '127.0.0.1', port => $1 };
            } elsif ($addr =~ /^(.+):(\d+)$/) {
                my $h = $1 =~ /^(?:\*|0\.0\.0\.0)$/ ? '127.0.0.1' : $1;
                push @out, { host => $h, port => $2 };
            } else {
                push @out, { host => $addr, port => 80 };
            }
        }
    }

    return @out;
}


sub _wait_listen {
    my ($self, $timeout) = @_;
    my @todo = $self->_listens;
    my $deadline = time + $timeout;

    # Without listen sockets, the pid file marks a finished configuration.
    my $pidfile = "$self->{testdir}/nginx.pid";

    while (time < $deadline) {
        return 0 unless $self->_alive;

        @todo = grep { !_connectable($_) } @todo;
        return 1 if !@todo && -s $pidfile;

        sleep 0.02;
    }

    return 0;
}


sub _connectable {
    my ($l) = @_;
    my $s = $l->{unix}
        ? IO::Socket::UNIX->new(Peer => $l->{unix})
        : IO::Socket::IP->new(PeerHost => $l->{host}, PeerPort => $l->{port},
                              Timeout => 1);
    return 0 unless $s;
    close $s;
    return 1;
}


sub _log_tail {
    my ($self) = @_;
    my $out = '';

    for my $name (qw(error.log stderr.log)) {
        my @lines = grep { !/\[debug\]/ } split /\n/,
                    $self->read_file($name) // '';
        next unless @lines;
        splice @lines, 0, -20;
        $out .= "--- $name:\n" . join("\n", @lines) . "\n";
    }

    return $out;
}


# ---- helper processes ------------------------------------------------------

sub run_daemon {
    my ($self, @cmd) = @_;
    my $n = @{$self->{daemons}};
    my $pid = $self->_spawn("$self->{testdir}/daemon-$n.log", {}, @cmd);

    push @{$self->{daemons}}, $pid;
    $self->{daemon_log}{$pid} = "daemon-$n.log";

    return $pid;
}


sub wait_for_port {
    my ($self, $n, $timeout) = @_;
    my $l = $n =~ m{^(?:unix:)?(/.*)$} ? { unix => $1 }
          : { host => '127.0.0.1', port => $self->port($n) };
    my $deadline = time + ($timeout // $START_WAIT);

    while (time < $deadline) {
        return 1 if _connectable($l);
        sleep 0.02;
    }

    return 0;
}


sub start_echo {
    my ($self, $n) = @_;
    my $log = "$self->{testdir}/echo-$n.log";

    # The log exists from the start, so "no line" means "no request".
    $self->write_file("echo-$n.log", '');

    my $pid = $self->run_daemon($^X, "$TOP/tests/lib/echo-upstream.pl",
                                $self->port($n), '--log', $log);
    $self->{echo}{$n} = $log;

    $self->wait_for_port($n)
        or die "echo upstream on %%PORT_$n%% did not start:\n"
               . ($self->read_file($self->{daemon_log}{$pid}) // '');

    return $pid;
}


sub echo_requests {
    my ($self, $n) = @_;
    my $log = $self->{echo}{$n} or die "no echo upstream on %%PORT_$n%%";

    return map { _echo_normalize($_) } json_lines(_slurp($log));
}


sub _spawn {
    my ($self, $log, $env, @cmd) = @_;

    # Unflushed test output would otherwise be written twice.
    STDOUT->flush;
    STDERR->flush;

    my $pid = fork // die "fork: $!";

    if ($pid == 0) {
        setpgid(0, 0);
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>>', $log) or POSIX::_exit(127);
        open(STDERR, '>&', \*STDOUT);
        @ENV{keys %$env} = values %$env;
        exec { $cmd[0] } @cmd
            or print STDERR "exec $cmd[0]: $!\n";
        POSIX::_exit(127);
    }

    # Set it on both sides so a signal sent right away finds the group.
    setpgid($pid, $pid);

    return $pid;
}


sub _capture {
    my ($self, $env, @cmd) = @_;

    STDOUT->flush;
    STDERR->flush;

    my $pid = open(my $fh, '-|') // die "fork: $!";

    if ($pid == 0) {
        open(STDERR, '>&', \*STDOUT);
        @ENV{keys %$env} = values %$env;
        exec { $cmd[0] } @cmd
            or print "exec $cmd[0]: $!\n";
        POSIX::_exit(127);
    }

    local $/;
    my $out = <$fh> // '';
    close $fh;

    return ($?, $out);
}


sub _reap {
    my ($pid, $timeout) = @_;
    my $deadline = time + $timeout;

    for (;;) {
        my $r = waitpid($pid, WNOHANG);
        return 1 if $r == $pid || $r == -1;
        return 0 if time > $deadline;
        sleep 0.02;
    }
}


sub _config_mk {
    my ($build, $key) = @_;
    my $text = _slurp("$build/config.mk") // return undef;
    return $text =~ /^\Q$key\E\s*=\s*(.*?)\s*$/m ? $1 : undef;
}


sub DESTROY {
    my ($self) = @_;
    $self->stop;
    delete $LIVE{refaddr $self};
}


END {
    $_->stop for grep { defined } values %LIVE;
}


my $signals_installed;

sub _install_signal_handlers {
    return if $signals_installed++;

    # exit runs END, which stops nginx and the helpers.
    for my $sig (qw(INT TERM HUP)) {
        next if defined $SIG{$sig} && $SIG{$sig} ne 'DEFAULT';
        $SIG{$sig} = sub { exit 1 };
    }
}


# ---- HTTP client -----------------------------------------------------------

# How long http() waits for the answer when no timeout is given: a bound
# for a server that never ends its answer, not a time an answer takes.  A
# read ends at the end of the connection (or with one => 1, at the end of
# the response), however soon that comes; a loaded machine may take
# seconds to answer.  A test that checks that nothing comes passes its
# own timeout.
our $HTTP_WAIT = 30;

# Functions below work both as $t->http(...) and as plain http(...), which
# maps ports through the most recently created object.
sub _self {
    my ($args) = @_;
    return shift @$args if blessed($args->[0]) && $args->[0]->isa(__PACKAGE__);
    return $CURRENT;
}


sub http {
    my $self = _self(\@_);
    my ($req, %o) = @_;
    my $timeout = $o{timeout} // $HTTP_WAIT;
    my $deadline = time + $timeout;

    local $SIG{PIPE} = 'IGNORE';

    my $s = $o{socket} // _connect($self, %o);
    if (!$s) {
        Test::More::note("http: connect failed: $!");
        return undef;
    }

    my @parts = !defined $req ? () : ref $req ? @$req : ($req);
    for my $i (0 .. $#parts) {
        sleep($o{pause} // 0.1) if $i;
        _write_all($s, $parts[$i], $deadline) or last;
    }

    return $s if $o{start};

    my $head = defined $req && !ref $req && $req =~ /^HEAD /;
    my $raw = _read($s, $deadline, $o{one}, $head);

    close $s unless $o{socket} || $o{one};

    return $raw;
}


sub _connect {
    my ($self, %o) = @_;

    return IO::Socket::UNIX->new(Peer => $o{unix}) if $o{unix};

    my $n = $o{port} // 8080;
    return IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                 PeerPort => $self ? $self->port($n) : $n,
                                 Proto => 'tcp', Timeout => $HTTP_WAIT);
}


sub _write_all {
    my ($s, $data, $deadline) = @_;
    my $sel = IO::Select->new($s);
    my $off = 0;

    while ($off < length $data) {
        return 0 unless $sel->can_write($deadline - time);
        my $n = syswrite($s, $data, length($data) - $off, $off);
        return 0 unless $n;
        $off += $n;
    }

    return 1;
}


sub _read {
    my ($s, $deadline, $one, $head) = @_;
    my $sel = IO::Select->new($s);
    my $buf = '';

    for (;;) {
        return $buf if $one && _complete($buf, $head);

        my $left = $deadline - time;
        if ($left <= 0 || !$sel->can_read($left)) {
            Test::More::note('http: timeout, returning '
                             . length($buf) . ' bytes');
            return $buf;
        }

        my $n = sysread($s, $buf, 65536, length $buf);
        return $buf unless $n;
    }
}


# True once $buf holds one whole response, so a keep-alive socket can be
# reused; a response delimited by close is only complete at EOF.
sub _complete {
    my ($buf, $head) = @_;
    my $r = parse_response($buf);

    return 0 unless defined $r->{status};
    return 1 if $head || $r->{status} =~ /^(?:1\d\d|204|304)$/;
    return $r->{complete};
}


sub http_get {
    my $self = _self(\@_);
    my ($uri, %o) = @_;
    my $h = _headers(delete $o{headers});

    my $req = "GET $uri HTTP/1.0\r\n"
            . ($h =~ /^host:/im ? '' : "Host: localhost\r\n")
            . $h . "\r\n";

    return http($self ? $self : (), $req, %o);
}


sub http_post {
    my $self = _self(\@_);
    my ($uri, $body, %o) = @_;
    my $h = _headers(delete $o{headers});

    my $req = "POST $uri HTTP/1.0\r\n"
            . ($h =~ /^host:/im ? '' : "Host: localhost\r\n")
            . "Content-Length: " . length($body) . "\r\n"
            . $h . "\r\n" . $body;

    return http($self ? $self : (), $req, %o);
}


# headers: a hash ref, an array ref of name/value pairs (kept in order),
# or a string of ready "Name: value\r\n" lines.
sub _headers {
    my ($h) = @_;

    return '' unless defined $h;
    return $h unless ref $h;

    my @kv = ref $h eq 'HASH' ? map { $_ => $h->{$_} } sort keys %$h : @$h;
    my $out = '';

    while (my ($k, $v) = splice @kv, 0, 2) {
        $out .= "$k: $v\r\n";
    }

    return $out;
}


# The answers read on the connected socket S until a final one is
# whole: [interim statuses (100 Continue...), the final answer as
# parse_response gives it].  Bounded: http() waits at most its timeout
# for each of four reads.
sub answers_on {
    my ($s) = @_;
    my ($raw, @interim) = ('');

    for (1 .. 4) {
        $raw .= http(undef, socket => $s, one => 1, timeout => 10) // '';

        my $r = parse_response($raw);

        # an interim answer has no body: the next begins after its head
        while (defined $r->{status} && $r->{status} =~ /^1\d\d$/) {
            push @interim, $r->{status};
            $raw =~ s/^.*?\r\n\r\n//s;
            $r = parse_response($raw);
        }

        return [ \@interim, $r ] if $r->{complete};
    }

    return [ \@interim, parse_response($raw) ];
}


sub parse_response {
    shift if blessed $_[0];
    my ($raw) = @_;
    my %r = (status => undef, headers => {}, header_list => [],
             raw_headers => [], body => undef, complete => 0, rest => '');

    return \%r unless defined $raw && $raw =~ /\r?\n\r?\n/;

    my $rest = substr($raw, $+[0]);
    my ($status_line, @lines) = split /\r?\n/, substr($raw, 0, $-[0]);

    @r{qw(status_line raw_headers)} = ($status_line, [@lines]);
    @r{qw(version status reason)} =
        ($status_line // '') =~ m{^(HTTP/\d\.\d)\s+(\d{3})(?:\s+(.*))?$};

    for my $line (@lines) {
        my ($k, $v) = $line =~ /^([^:]+):[ \t]*(.*?)[ \t]*$/ or next;
        push @{$r{header_list}}, [$k, $v];
        $k = lc $k;
        $r{headers}{$k} = exists $r{headers}{$k}
                        ? "$r{headers}{$k}, $v" : $v;
    }

    my $te = $r{headers}{'transfer-encoding'} // '';
    my $cl = $r{headers}{'content-length'};

    if ($te =~ /chunked/i) {
        @r{qw(body complete rest chunks)} = _dechunk($rest);

    } elsif (defined $cl && $cl =~ /^\d+$/) {
        $r{body} = substr($rest, 0, $cl);
        $r{rest} = length $rest > $cl ? substr($rest, $cl) : '';
        $r{complete} = length $rest >= $cl;

    } else {
        $r{body} = $rest;
    }

    return \%r;
}


sub _dechunk {
    my ($data) = @_;
    my ($body, @sizes) = ('');

    for (;;) {
        $data =~ /\G([0-9a-fA-F]+)[^\r\n]*\r\n/gc
            or return ($body, 0, '', \@sizes);
        my $size = hex $1;

        if ($size == 0) {
            # trailer fields end with an empty line
            $data =~ /\G(?:[^\r\n]+\r\n)*\r\n/gc
                or return ($body, 0, '', \@sizes);
            return ($body, 1, substr($data, pos $data), \@sizes);
        }

        my $at = pos $data;
        return ($body . substr($data, $at), 0, '', \@sizes)
            if length($data) < $at + $size + 2;

        $body .= substr($data, $at, $size);
        push @sizes, $size;
        pos($data) = $at + $size + 2;
    }
}


sub header_lines {
    shift if blessed $_[0];
    my ($raw) = @_;
    return @{parse_response($raw)->{raw_headers}};
}


# The echo upstream's JSON, from a raw response or a bare body, with every
# field as bytes: body decoded from base64 or UTF-8 as the upstream sent it.
sub echo_json {
    shift if blessed $_[0];
    my ($raw) = @_;
    return undef unless defined $raw;
    my $body = $raw =~ m{^HTTP/} ? parse_response($raw)->{body} : $raw;
    my $j = eval { decode_json($body) };

    return $j ? _echo_normalize($j) : undef;
}


sub _echo_normalize {
    my ($j) = @_;

    if (defined $j->{body}) {
        if (delete $j->{body_b64}) {
            $j->{body} = decode_base64($j->{body});
        } else {
            utf8::encode($j->{body});
        }
    }

    return $j;
}


1;
