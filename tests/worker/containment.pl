# The containment suite, run once per backend by 20-containment-gvisor.t
# and 21-containment-bwrap.t: what a script can reach, read, write and
# spend, asserted from inside the sandbox (a probe script reports what each
# attempt did) and from the host (namespaces, cgroup limits, what is left
# afterwards).

use strict;
use warnings;

use IO::Socket::UNIX;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

our $BACKEND;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $BACKEND);
$w->start_proxy;
$w->start_redis;
$w->start_worker(cpus => 1);

plan tests => 72;

my $SECRET = $Airlock::Worker::SECRET;
my $dir = $t->testdir;
my ($r, $p);

like($w->worker_log, qr/backend $BACKEND/, "worker runs with $BACKEND");

# ---- from inside -----------------------------------------------------------

my $probe = <<'PY';
import ctypes, json, os, signal, socket, sys, time

res = {}

def attempt(name, fn):
    try:
        fn()
        res[name] = "succeeded"
    except BaseException as e:
        res[name] = "%s: %s" % (type(e).__name__, e)

def tcp(host, port, fam=socket.AF_INET):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect((host, port))

def udp(host, fam=socket.AF_INET):
    # connect() on UDP sends nothing: it only asks for a route
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.connect((host, 9))

def unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)

attempt("tcp_redis", lambda: tcp("127.0.0.1", REDIS_PORT))
attempt("tcp_echo", lambda: tcp("127.0.0.1", ECHO_PORT))
attempt("udp_route_v4", lambda: udp("192.0.2.1"))
attempt("udp_route_v6", lambda: udp("2001:db8::1", socket.AF_INET6))
attempt("unix_proxy", lambda: unix("PROXY_SOCKET"))
attempt("unix_abstract", lambda: unix("\0ABSTRACT"))
# /proc/net/dev, not if_nameindex(): bwrap refuses netlink sockets
res["interfaces"] = sorted(l.split(":")[0].strip()
                           for l in open("/proc/net/dev").readlines()[2:])

# a network namespace holds IP and netlink, not AF_VSOCK: its sockets are
# the VM's, to the hypervisor's host and listening on the VM's address
def vsock_listen():
    s = socket.socket(40, socket.SOCK_STREAM)
    s.bind((0xffffffff, 47001))
    s.listen()

attempt("vsock_listen", vsock_listen)

families = []
for fam in range(1, 46):
    for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM,
                socket.SOCK_SEQPACKET, socket.SOCK_RAW):
        try:
            socket.socket(fam, typ, 0).close()
            families.append(fam)
            break
        except OSError:
            pass
res["families"] = families

def write(path, mode="w"):
    with open(path, mode) as f:
        f.write("x")

attempt("write_root", lambda: write("/usr/lib/evil"))
attempt("write_etc", lambda: write("/etc/passwd", "a"))
attempt("mkdir_root", lambda: os.mkdir("/evil"))
attempt("write_code", lambda: write("/app/code/script.py", "a"))
attempt("new_code", lambda: write("/app/code/other.py"))
attempt("write_data", lambda: write("/app/data/data.json", "a"))
attempt("write_scratch", lambda: write("/scratch/ok"))
attempt("write_dev", lambda: write("/dev/evil"))

def pty():
    os.close(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))

attempt("pty", pty)

for name, path in (("keyring", "KEYRING"), ("policy", "POLICY"),
                   ("testdir", "TESTDIR"), ("secret_file", "SECRET_FILE"),
                   ("shadow", "/etc/shadow"),
                   ("host_root_home", "/root")):
    res["exists_" + name] = os.path.exists(path)

res["env"] = sorted(os.environ)

def mounts():
    with open("/proc/self/mountinfo") as f:
        return f.read()
try:
    res["mountinfo"] = mounts()
except BaseException as e:
    res["mountinfo"] = str(e)

def environ_1():
    with open("/proc/1/environ", "rb") as f:
        return f.read().decode("latin-1")
try:
    res["env_1"] = sorted(k.split("=")[0] for k in environ_1().split("\0") if k)
except BaseException as e:
    res["env_1"] = str(e)

cmds = []
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmds.append(f.read().replace(b"\0", b" ").decode("latin-1"))
        except OSError:
            pass
res["processes"] = cmds

needle = "TERCES"[::-1].encode()
leaks = []
for top in ("/etc", "/app", "/scratch", "/tmp", "/run", "/var", "/home",
            "/root", "/proc/self", "/proc/1"):
    for root, dirs, files in os.walk(top):
        if root.startswith("/proc/") and root.count("/") > 3:
            dirs[:] = []
        for fn in files:
            p = os.path.join(root, fn)
            try:
                with open(p, "rb") as f:
                    if needle in f.read(1 << 20):
                        leaks.append(p)
            except OSError:
                pass
res["secret_files"] = leaks

attempt("setuid0", lambda: os.setuid(0))
attempt("setgid0", lambda: os.setgid(0))

libc = ctypes.CDLL(None, use_errno=True)

def call(fn, *args):
    if fn(*args) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

attempt("ptrace_traceme", lambda: call(libc.ptrace, 0, 0, None, None))
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
attempt("ptrace_attach", lambda: call(libc.ptrace, 16, child, None, None))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
attempt("mount", lambda: call(libc.mount, b"none", b"/scratch", b"tmpfs",
                               0, None))
attempt("unshare_user", lambda: call(libc.unshare, 0x10000000))
attempt("unshare_mount", lambda: call(libc.unshare, 0x00020000))
attempt("unshare_net", lambda: call(libc.unshare, 0x40000000))
attempt("chroot", lambda: os.chroot("/scratch"))

def io_uring():
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(425, 8, params)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    os.close(fd)

attempt("io_uring", io_uring)

with open("/proc/self/status") as f:
    st = dict(l.split(":", 1) for l in f if ":" in l)
res["cap_eff"] = st["CapEff"].strip()
res["cap_bnd"] = st["CapBnd"].strip()
res["no_new_privs"] = str(libc.prctl(39, 0, 0, 0, 0))
res["uid"] = os.getuid()
res["fds"] = sorted(int(x) for x in os.listdir("/proc/self/fd"))
res["hostname"] = socket.gethostname()
res["cwd"] = os.getcwd()

print(json.dumps(res))
PY

my %sub = (
    REDIS_PORT => $w->{redis_port}, ECHO_PORT => $t->port(8081),
    PROXY_SOCKET => $w->socket_path, KEYRING => "$dir/airlock.key",
    POLICY => "$dir/policy.yaml", TESTDIR => $dir,
    SECRET_FILE => "$dir/secret-file", ABSTRACT => "airlock-test-$$",
);
$sub{TERCES} = reverse $SECRET;
my $names = join '|', keys %sub;
$probe =~ s/\b($names)\b/$sub{$1}/g;

# a socket of the host's in the abstract namespace, which has no path
# for a mount to hide: a network namespace holds it
my $abstract = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Listen => 1,
                                     Local => "\0airlock-test-$$")
    or die "abstract socket: $!";

$r = $w->run_job(job_id => 'probe', script => $probe,
    limits => { wall_ms => 60000, cpu_ms => 30000 },
    blueprint => { inputs => [
        { name => 'logs', route => 'logs',
          params => { service => 'api' } } ] });
is($r->{status}, 'ok', 'probe ran') or diag explain $r;
$p = eval { decode_json((split /\n/, $r->{stdout})[-1]) } // {};

sub refused {
    my ($k, $name) = @_;
    ok(defined $p->{$k} && $p->{$k} ne 'succeeded', $name)
        or diag "$k: " . ($p->{$k} // 'undef');
}

refused('tcp_redis', 'no TCP to the host loopback (redis)');
refused('tcp_echo', 'no TCP to the host loopback (the upstream)');
refused('udp_route_v4', 'no route to any IPv4 address');
refused('udp_route_v6', 'no route to any IPv6 address');
refused('unix_proxy', "the proxy's unix socket is not reachable");
refused('unix_abstract', "the host's abstract unix sockets are not "
        . 'reachable');
ok(!grep({ $_ ne 'lo' } @{$p->{interfaces} // ['?']}),
   'no interface but loopback: ' . join(',', @{$p->{interfaces} // []}));
refused('vsock_listen', 'no vsock socket (no namespace holds AF_VSOCK)');
# unix, inet, inet6, netlink: the families gVisor's sentry has
is(join(',', grep { !/^(1|2|10|16)$/ } @{$p->{families} // ['?']}), '',
   'no socket family but unix, IP and netlink: '
   . join(',', @{$p->{families} // []}));

refused('write_root', 'root file system not writable');
refused('write_etc', '/etc/passwd not writable');
refused('mkdir_root', 'no new directory in /');
refused('write_code', 'script not writable');
refused('new_code', 'no new file beside the script');
refused('write_data', 'data.json not writable');
is($p->{write_scratch}, 'succeeded', '/scratch writable');
refused('write_dev', '/dev not writable (bwrap made it a tmpfs of ours)');

# bwrap's --dev mounts a devpts of the host kernel: every pty opened there
# counts against kernel.pty.max for the whole host (all but the reserve,
# shared by every other devpts: containers, other sandboxes), which 64
# processes of 256 descriptors use up.  gVisor's ptys are its own.
SKIP: {
    skip "gVisor's ptys are the sentry's, not the host kernel's", 1
        if $BACKEND ne 'bwrap';
    refused('pty', 'no pty of the host kernel (/dev/ptmx)');
}

ok(!$p->{exists_keyring}, 'the keyring is not visible');
ok(!$p->{exists_policy}, 'the policy is not visible');
ok(!$p->{exists_testdir}, "the host's directories are not visible");
ok(!$p->{exists_secret_file}, "the policy's secret files are not visible");
ok(!$p->{exists_shadow}, '/etc/shadow does not exist');
ok(!$p->{exists_host_root_home}, '/root does not exist');
is(join(',', grep { !/^(PATH|HOME|PWD)$/ } @{$p->{env} // ['?']}), '',
   'environment: PATH (and the runtime\'s HOME/PWD) only: '
   . join(',', @{$p->{env} // []}));
ok(!grep({ /AIRLOCK/ } @{ref $p->{env_1} ? $p->{env_1} : []}),
   "pid 1's environment has nothing of the worker's");
# gVisor's sentry has mounts of its own; bwrap's root, code and data are
# overlays of their own (bind mounts named their host paths: the
# workdir, the rootfs; tests/worker/101-mount-sources-bwrap.t)
unlike($p->{mountinfo} // '?', qr{\Q$dir\E|/work/|worker-rootfs|^\?$}m,
       'no host path in /proc/self/mountinfo');
is(join('|', grep { /nginx|redis|airlock|echo-upstream|perl/ }
                  @{$p->{processes} // ['?']}), '',
   'no host process visible');
ok(@{$p->{processes} // []} <= 3, 'only the sandbox\'s own processes: '
   . join(' | ', @{$p->{processes} // []}));
is(join(',', @{$p->{secret_files} // ['?']}), '',
   'the credential is in no file the sandbox can read');
unlike($r->{stdout} . $r->{stderr}, qr/\Q$SECRET\E/,
       'nor in anything it printed');

refused('setuid0', 'setuid(0) fails');
refused('setgid0', 'setgid(0) fails');
refused('ptrace_traceme', 'ptrace(TRACEME) fails');
refused('ptrace_attach', 'ptrace(ATTACH) to its own child fails');
refused('mount', 'mount fails');
refused('unshare_user', 'unshare(user) fails');
refused('unshare_mount', 'unshare(mount) fails');
refused('unshare_net', 'unshare(net) fails');
refused('chroot', 'chroot fails');
refused('io_uring', 'io_uring_setup fails');
is($p->{cap_eff}, '0000000000000000', 'no effective capabilities');
is($p->{cap_bnd}, '0000000000000000', 'empty bounding set');
is($p->{no_new_privs}, '1', 'no_new_privs set');
is($p->{uid}, 10001, 'uid 10001');
ok(!grep({ $_ > 3 } @{$p->{fds} // [99]}),
   'no descriptor of the worker inherited: ' . join(',', @{$p->{fds} // []}));
is($p->{cwd}, '/scratch', 'working directory /scratch');

# ---- from the host, while a job runs ---------------------------------------

$w->add_job(job_id => 'sleeper', script => 'import time; time.sleep(4)');
my (@cg, @pids);
for (1 .. 400) {
    @cg = glob("/sys/fs/cgroup/memory/airlock-test-$$/aw-*"),
          glob("/sys/fs/cgroup/airlock-test-$$/aw-*");
    if (@cg) {
        my $procs = Airlock::Worker::_slurp("$cg[0]/cgroup.procs") // '';
        @pids = grep { /\d/ } split /\n/, $procs;
        # the worker's child joins the cgroup just before it becomes the
        # runtime: wait until it has
        last if @pids && !grep { (Airlock::Worker::_slurp("/proc/$_/cmdline")
                                  // '') =~ /airlock-worker/ } @pids;
    }
    sleep 0.025;
}
ok(scalar @pids, 'the running job has a cgroup with its processes');
# The runtimes' host side (the runsc command waiting for the sandbox, the
# gofer serving its files, the bwrap process that set the sandbox up) runs
# none of the script's code; the sandbox (gVisor's sentry, the script under
# bwrap) is in a network namespace of its own
my $hostnet = readlink('/proc/self/ns/net');
my @shared = grep { (readlink("/proc/$_/ns/net") // $hostnet) eq $hostnet
                    && (Airlock::Worker::_slurp("/proc/$_/cmdline") // '')
                       !~ /^(runsc(-gofer)?|bwrap)\0/ } @pids;
is(join(' ', map { Airlock::Worker::_slurp("/proc/$_/cmdline") // $_ }
             @shared), '',
   'no process of the job in the host network namespace');

# nothing of the worker's reaches the runtime on the host either (its
# processes run none of the script's code but hold the sandbox): no
# variable of its environment, no descriptor of its (the Redis
# connection, its log)
my $wpid = $w->{last_worker};
my %mine = map { $_ => 1 }
           grep { /^socket:/ || m{^/} && !m{^/dev/null$} }
           map { readlink($_) // '' } glob("/proc/$wpid/fd/*");
my (@procs, @env, @fds);
@procs = $w->job_procs($wpid);
for my $proc (@procs) {
    my $env = Airlock::Worker::_slurp("$proc/environ") // '';
    push @env, $proc if $env =~ /AIRLOCK|\Q$SECRET\E/;
    for my $fd (glob("$proc/fd/*")) {
        my $l = readlink($fd) // next;
        push @fds, "$fd -> $l" if $mine{$l};
    }
}
is(join(' ', @env), '', 'no runtime process (' . scalar(@procs)
   . ") has the worker's environment");
is(join(' ', @fds), '', "nor any of the worker's descriptors");
my $mem = Airlock::Worker::_slurp("$cg[0]/memory.limit_in_bytes")
       // Airlock::Worker::_slurp("$cg[0]/memory.max") // 0;
ok($mem > 0 && $mem <= (128 + 64) << 20, "memory limited in the cgroup ($mem)");
(my $pcg = $cg[0]) =~ s{/memory/}{/pids/};
my $pmax = Airlock::Worker::_slurp("$pcg/pids.max") // 0;
# bwrap: the job's 64 and its own two; gVisor: the runtime's backstop
# (the job's own limit is the sentry's), 256 and 16 a process
ok($pmax >= 64 && $pmax <= ($BACKEND eq 'bwrap' ? 64 + 2 : 256 + 16 * 64),
   "pids limited in the cgroup ($pmax)");
(my $ccg = $cg[0]) =~ s{/memory/}{/cpu/};
my $quota = Airlock::Worker::_slurp("$ccg/cpu.cfs_quota_us")
         // Airlock::Worker::_slurp("$ccg/cpu.max") // 0;
is($quota + 0, 100000, 'one CPU at most (CFS quota)');
$r = $w->wait_result('sleeper');
is($r->{status}, 'ok', 'sleeper finished');

# ---- limits ----------------------------------------------------------------

$r = $w->run_job(job_id => 'flood', script => <<'PY');
a = []
while True:
    a.append(b"x" * (1 << 20))
PY
is($r->{status}, 'oom', 'memory flood ends as oom') or diag explain $r;

$r = $w->run_job(job_id => 'bomb', limits => { pids => 32 }, script => <<'PY');
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
except OSError as e:
    print("fork refused after", n, e)
PY
# fork fails inside, under both (gVisor: the sentry's RLIMIT_NPROC)
ok($r->{status} eq 'ok' && $r->{stdout} =~ /fork refused after 31 /,
   "fork bomb held by pids: $r->{status} "
   . ($r->{error}{code} // $r->{stdout}));

$r = $w->run_job(job_id => 'loop', limits => { wall_ms => 2000 },
                 script => "import time\nwhile True: time.sleep(0.1)\n");
ok($r->{status} eq 'timeout' && $r->{error}{code} eq 'wall_time',
   'sleeping loop ends as timeout (wall time)');

$r = $w->run_job(job_id => 'spin', limits => { cpu_ms => 1000 },
                 script => "while True: pass\n");
ok($r->{status} eq 'timeout' && $r->{error}{code} eq 'cpu_time',
   'busy loop ends as timeout (CPU time)') or diag explain $r;

$r = $w->run_job(job_id => 'huge',
                 limits => { stdout_bytes => 1000, stderr_bytes => 10 },
                 script => "import sys\nsys.stdout.write('y' * 5000000)\n"
                         . "sys.stderr.write('z' * 100)\n");
ok($r->{status} eq 'ok' && length($r->{stdout}) == 1000
   && $r->{stdout_truncated} && $r->{stderr} eq 'z' x 10
   && $r->{stderr_truncated}, 'huge output truncated to the bounds, flagged');

# every place a script can write is a tmpfs bounded at scratch_mb: a
# runtime's own /tmp (gVisor mounts one where the bundle has none) or a
# /dev/shm on bwrap's /dev would take all the memory limit allows
$r = $w->run_job(job_id => 'scratch', limits => { memory_mb => 256 },
                 script => <<'PY');
import os
for d in ("/scratch", "/tmp", "/dev/shm"):
    n = 0
    try:
        with open(d + "/fill", "wb") as f:
            while True:
                f.write(b"s" * (1 << 20))
                f.flush()
                n += 1
    except OSError as e:
        print(d, n, e.errno, flush=True)
    try:
        os.unlink(d + "/fill")
    except OSError:
        pass
PY
my %fill = map { my ($d, @v) = split ' '; ($d => \@v) }
           split /\n/, $r->{stdout} // '';
for my $d (qw(/scratch /tmp /dev/shm)) {
    my ($mb, $errno) = @{$fill{$d} // []};
    ok(defined $mb && $mb >= 32 && $mb <= 64 && $errno == 28,
       "$d writable, bounded at 64 MiB (ENOSPC after " . ($mb // '?')
       . " MiB)") or diag explain $r;
}

$r = $w->run_job(job_id => 'exit3', script => "import sys\nsys.exit(3)\n");
ok($r->{status} eq 'error' && $r->{exit_code} == 3
   && $r->{error}{code} eq 'exit', 'exit code 3: error');

$r = $w->run_job(job_id => 'segv',
                 script => "import ctypes\nctypes.string_at(0)\n");
ok($r->{status} eq 'killed' && $r->{exit_code} == 139
   && $r->{error}{code} eq 'signal', 'SIGSEGV: killed') or diag explain $r;

$r = $w->run_job(job_id => 'after', script => 'print("still fine")');
is($r->{stdout}, "still fine\n", 'the next job runs normally');

# an exit code is the script's to choose: 125 and 127 say nothing of the
# sandbox
for my $code (125, 127) {
    $r = $w->run_job(job_id => "exit$code",
                     script => "import sys\nsys.exit($code)\n");
    ok($r->{status} eq 'error' && $r->{exit_code} == $code
       && $r->{error}{code} eq 'exit', "exit code $code: the script's")
        or diag explain $r;
}

# a runtime that cannot be started: the sandbox's error, with the reason
$w->kill_worker('TERM');
$t->write_file('not-a-runtime', "\x00\x01 not a program\n");
chmod 0755, "$dir/not-a-runtime";
$w->start_worker(cpus => 1, ($BACKEND eq 'bwrap' ? 'bwrap' : 'runsc')
                              => "$dir/not-a-runtime");
$r = $w->run_job(job_id => 'noexec', script => 'print("never")');
ok($r->{status} eq 'error' && $r->{error}{code} eq 'sandbox'
   && $r->{error}{message} =~ /could not start: exec \S+not-a-runtime: Exec format error/
   && ($r->{stdout} // '') eq '', 'a runtime that does not exec: sandbox, '
   . 'and why') or diag explain $r;
$w->kill_worker('TERM');
$w->start_worker(cpus => 1);

is(join(' ', $w->leftovers), '', 'nothing left on the host');

1;
