#!/usr/bin/perl

# A job is reported killed/pids only when its process limit ended it.
# Under bwrap a fork past the limit fails inside (EAGAIN): a script that
# handles that and exits with a code of its choosing is reported by its
# code (error/exit), as any other; it used to be killed/pids whenever
# the cgroup's pids.max had been hit.  One that hits the limit and then
# dies of a signal is still killed/pids.  Under gVisor too the fork
# fails inside (the sentry's RLIMIT_NPROC; tests/worker/105-pids-inside-
# gvisor.t): a chosen exit is the script's; a signal after it is
# killed/signal, as the host's count never saw the refusal.  The host's
# pids.max is gVisor's backstop: a sentry refused a thread by it ends
# the sandbox, killed/pids, told by runsc's log of the sandbox gone (a
# gVisor script whose sandbox lives on after that limit was hit:
# tests/worker/98-pids-alive.t).  The gVisor sandbox used to end at the
# limit here: killed/pids either way.
# 96-pids-exit-bwrap.t runs this file with that backend.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $backend = $ENV{AIRLOCK_WORKER_BACKEND} // 'gvisor';
my $w = Airlock::Worker->new($t, backend => $backend);
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 6;

sub bomb {
    my ($end) = @_;
    return <<"PY";
import os, signal, sys, time
kids = []
try:
    while len(kids) < 100:
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("fork refused after", len(kids), e.errno)
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
$end
PY
}

my $r = $w->run_job(job_id => 'chosen', limits => { pids => 16 },
                    script => bomb('sys.exit(3)'));
like($r->{stdout}, qr/fork refused after 15 11/,
     'a fork past the limit fails inside') or diag explain $r;
is("$r->{status}/$r->{error}{code}/" . ($r->{exit_code} // 'null'),
   'error/exit/3', 'a chosen exit after it is reported by its code')
    or diag explain $r;

$r = $w->run_job(job_id => 'aborted', limits => { pids => 16 },
                 script => bomb('os.abort()'));
is($r->{status}, 'killed', 'a signal after the limit: killed')
    or diag explain $r;
is($r->{error}{code}, $backend eq 'bwrap' ? 'pids' : 'signal',
   $backend eq 'bwrap' ? 'by the process limit' : 'by its signal')
    or diag explain $r;

# the limit not reached: a code is the script's
$r = $w->run_job(job_id => 'plain', script => 'import sys; sys.exit(3)');
is("$r->{status}/$r->{error}{code}/" . ($r->{exit_code} // 'null'),
   'error/exit/3', 'an exit code of its own') or diag explain $r;

is(join(' ', $w->leftovers), '', 'nothing left on the host');
