#!/usr/bin/perl

# What a bwrap sandbox's /proc shows is an allow list.  The kernel's
# /proc, mounted for the sandbox's own pid and network namespaces, has
# the host's entries beside the sandbox's; the worker used to cover a
# list of those it knew of, so whatever it did not name stayed: the
# host's cgroups with their counts (one cgroup a job: how many jobs and
# containers the host runs), its filesystems, a kernel's own entries
# (program_cpu), /proc/sys/abi and /proc/sys/user.  Now every entry of
# /proc but the pid directories, self, thread-self, mounts, net, sys,
# cpuinfo, meminfo, stat, loadavg, uptime, version and sysvipc is an
# empty file or directory inside, and of /proc/sys every entry but
# kernel, net and vm, compared here with the host's own /proc (the same
# kernel).  What Python and the C library read still works.  gVisor's
# /proc is its sentry's own (tests/worker/20-containment-gvisor.t).

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

plan tests => 10;

my %shown = map { $_ => 1 }
            qw(self thread-self mounts net sys cpuinfo meminfo stat
               loadavg uptime version sysvipc);
my %sys_shown = map { $_ => 1 } qw(kernel net vm);

my $r = $w->run_job(job_id => 'proc', script => <<'PY');
import json, os, stat, subprocess, threading

res = {}
for d in ("/proc", "/proc/sys"):
    for name in os.listdir(d):
        if name.isdigit():
            continue
        p = d + "/" + name
        try:
            st = os.lstat(p)
        except OSError as e:
            res[p] = e.strerror
            continue
        if stat.S_ISLNK(st.st_mode):
            res[p] = "link"
        elif stat.S_ISDIR(st.st_mode):
            try:
                res[p] = "dir %d" % len(os.listdir(p))
            except OSError as e:
                res[p] = "dir " + e.strerror
        else:
            try:
                with open(p, "rb") as f:
                    res[p] = "file %d" % len(f.read(1 << 16))
            except OSError as e:
                res[p] = "file " + e.strerror

def rd(p):
    try:
        with open(p) as f:
            return f.read().strip()
    except OSError as e:
        return e.strerror

for p in ("/proc/self/status", "/proc/sys/vm/overcommit_memory",
          "/proc/sys/kernel/ngroups_max",
          "/proc/sys/kernel/random/boot_id"):
    res["read " + p] = rd(p)

t = threading.Thread(target=lambda: None)
t.start()
t.join()
res["lib"] = [os.cpu_count(), os.sysconf("SC_NPROCESSORS_ONLN"),
              os.sysconf("SC_PHYS_PAGES") > 0,
              subprocess.run(["/usr/bin/python3", "-c", "print(7)"],
                             capture_output=True, text=True).stdout]
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the /proc probe ran') or diag explain $r;

# every entry of the host's /proc (and /proc/sys) outside the allow
# list is, inside, an empty file or directory
sub uncovered {
    my ($dir, $allow) = @_;
    my @bad;
    opendir(my $dh, $dir) or die "$dir: $!";
    for my $name (sort readdir $dh) {
        next if $name =~ /^(\.|\.\.|\d+)$/ || $allow->{$name};
        my $v = $p->{"$dir/$name"} // 'absent';
        push @bad, "$name ($v)" unless $v =~ /^(dir 0|file 0|absent)$/
                                       || -l "$dir/$name";
    }
    closedir $dh;
    return join ', ', @bad;
}

is(uncovered('/proc', \%shown), '',
   "every entry of /proc outside the allow list is covered");
is(uncovered('/proc/sys', \%sys_shown), '',
   "every entry of /proc/sys but kernel, net and vm is covered");
is($p->{'/proc/cgroups'}, 'file 0',
   "the host's cgroups and their counts are not shown");

# what is shown is the kernel's, for the sandbox's namespaces
my @empty = grep { ($p->{"/proc/$_"} // '') !~ /^file [1-9]/ }
            qw(cpuinfo meminfo stat loadavg uptime version);
is(join(' ', @empty), '', 'cpuinfo, meminfo, stat, loadavg, uptime, '
   . 'version are read');
like($p->{'/proc/sys'} // '', qr/^dir [1-9]/, '/proc/sys is there');
like($p->{'read /proc/self/status'} // '', qr/^Name:/m,
     "the script's own /proc/self");
like(($p->{'read /proc/sys/vm/overcommit_memory'} // '') . ' '
     . ($p->{'read /proc/sys/kernel/ngroups_max'} // ''), qr/^\d+ \d+$/,
     'vm/overcommit_memory and kernel/ngroups_max are read');
my $boot = Airlock::Worker::_slurp('/proc/sys/kernel/random/boot_id')
           // '?';
$boot =~ s/\s+\z//;
isnt($p->{'read /proc/sys/kernel/random/boot_id'} // '', $boot,
     "the host's boot id is not shown");
my $lib = $p->{lib} // [];
ok(($lib->[0] // 0) >= 1 && ($lib->[1] // 0) >= 1 && $lib->[2]
   && ($lib->[3] // '') eq "7\n",
   'CPU count, memory size, a thread and a subprocess work')
    or diag explain $lib;
