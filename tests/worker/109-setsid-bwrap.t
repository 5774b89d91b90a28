#!/usr/bin/perl

# bwrap: setsid() is refused in the sandbox (EPERM).  A new session is a
# new scheduler autogroup, numbered from one counter for the whole host,
# which every process's /proc/<pid>/autogroup shows (/autogroup-41866):
# a script that started sessions read it live, how many sessions the
# host and the other jobs were starting (every login, every job), and
# two concurrent jobs could signal each other through it.  The file is
# each process's own, which no cover reaches; without setsid() a script
# reads only the number its sandbox got at its start (bwrap's own
# --new-session, before the filter).  The rest of the filter is as it
# was (tests/worker/71-proc-seccomp-bwrap.t).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 6;

my $r = $w->run_job(job_id => 'setsid', script => <<'PY');
import errno, json, os, socket, subprocess
res = {}
def group():
    try:
        with open("/proc/self/autogroup") as f:
            return f.read().split()[0]
    except OSError:
        return None
res["before"] = group()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        os.setsid()
        out = "made " + str(group())
    except OSError as e:
        out = "refused %d" % e.errno
    os.write(w, out.encode())
    os._exit(0)
os.close(w)
res["setsid"] = os.read(r, 100).decode()
os.waitpid(pid, 0)
try:
    subprocess.run(["/usr/bin/python3", "-c", "pass"],
                   start_new_session=True, check=True)
    res["new_session"] = "ran"
except OSError as e:
    res["new_session"] = "refused %d" % e.errno
res["plain"] = subprocess.run(["/usr/bin/python3", "-c", "print(3)"],
                              capture_output=True).stdout.decode()
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)
    res["netlink"] = "made"
except OSError as e:
    res["netlink"] = "refused %d" % e.errno
res["sid"] = os.getsid(0) == os.getsid(1)
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;
is($p->{setsid}, 'refused 1', 'setsid() is refused (EPERM)')
    or diag explain $p;
is($p->{new_session}, 'refused 1',
   'and so is a subprocess in a session of its own') or diag explain $p;
is($p->{plain}, "3\n", 'a subprocess runs') or diag explain $p;
is($p->{netlink}, 'refused 97', 'the rest of the filter holds (sockets)')
    or diag explain $p;
ok($p->{sid}, 'the script is in the session bwrap made') or diag explain $p;
