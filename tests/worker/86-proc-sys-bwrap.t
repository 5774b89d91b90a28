#!/usr/bin/perl

# What a bwrap sandbox's /proc/sys/kernel and /proc/sys/vm show is an
# allow list too.  Their entries are the host's own settings, not the
# sandbox's: the kernel's taint flags, where its core dumps go, whether
# kernel pointers and perf events are restricted, its panic and watchdog
# settings, its memory tuning, and whatever a kernel of its own adds
# there (init_private_* on the test machines' kernel): what a script
# looking for a kernel exploit wants to know.  Both used to be shown
# whole (tests/worker/83-proc-allow-bwrap.t allowed them for the two
# files the C library reads).  Now each is a read-only directory with
# only those two files in it, compared here with the host's /proc/sys;
# /proc/sys/net stays the sandbox's own.  gVisor's /proc/sys is its
# sentry's own, with a handful of entries.

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

plan tests => 9;

my %allow = (kernel => { ngroups_max => 1 },
             vm => { overcommit_memory => 1 });

my $r = $w->run_job(job_id => 'sys', script => <<'PY');
import json, os, socket

res = {}
for d in ("kernel", "vm", "net"):
    try:
        res[d] = sorted(os.listdir("/proc/sys/" + d))
    except OSError as e:
        res[d] = e.strerror

def rd(p):
    try:
        with open(p) as f:
            return f.read().strip()
    except OSError as e:
        return e.strerror

for p in ("kernel/tainted", "kernel/core_pattern", "kernel/kptr_restrict",
          "kernel/perf_event_paranoid", "vm/swappiness",
          "kernel/random/boot_id", "kernel/ngroups_max",
          "vm/overcommit_memory"):
    res[p] = rd("/proc/sys/" + p)

try:
    with open("/proc/sys/kernel/evil", "w") as f:
        f.write("x")
    res["write"] = "written"
except OSError as e:
    res["write"] = e.strerror

res["ngroups"] = os.sysconf("SC_NGROUPS_MAX")
res["host"] = socket.gethostname()
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the /proc/sys probe ran') or diag explain $r;

# every entry of the host's /proc/sys/kernel (vm) outside the allow list
# is absent inside
for my $d (qw(kernel vm)) {
    my %in = map { $_ => 1 } @{ref $p->{$d} ? $p->{$d} : []};
    opendir(my $dh, "/proc/sys/$d") or die "/proc/sys/$d: $!";
    my @shown = grep { !/^\.\.?$/ && !$allow{$d}{$_} && $in{$_} }
                sort readdir $dh;
    closedir $dh;
    is(join(' ', @shown), '', "of /proc/sys/$d only the allow list "
       . 'is shown') or diag explain $p->{$d};
}

is(join(' ', map { $p->{$_} // '?' }
            qw(kernel/tainted kernel/core_pattern kernel/kptr_restrict
               kernel/perf_event_paranoid vm/swappiness
               kernel/random/boot_id)),
   join(' ', ('No such file or directory') x 6),
   "the host's taint, core pattern, pointer and perf restrictions, "
   . 'memory tuning and boot id are not read');

like(($p->{'kernel/ngroups_max'} // '') . ' '
     . ($p->{'vm/overcommit_memory'} // ''), qr/^\d+ \d+$/,
     'what the C library reads is read');
is($p->{ngroups}, $p->{'kernel/ngroups_max'}, 'sysconf(NGROUPS_MAX)');
is($p->{host}, 'sandbox', "the hostname is the sandbox's own");
ok(ref $p->{net} && grep({ $_ eq 'ipv4' } @{$p->{net}}),
   "/proc/sys/net, the sandbox's own network namespace's, is shown")
    or diag explain $p->{net};
isnt($p->{write} // 'written', 'written', '/proc/sys/kernel is read-only')
    or diag explain $p;
