#!/usr/bin/perl

# bwrap, a rootfs already two overlays deep, where the kernel refuses
# the sandbox's root an overlay of its own (a third): the rootfs is
# bound as it is, and /app/code and /app/data keep theirs, as under
# gVisor (tests/worker/104-root-statfs-gvisor.t): statfs() of them
# answers with an empty tmpfs's numbers, and mountinfo names no host
# path for them.  Under bwrap one refused overlay used to give up all
# three: code and data were bound from <workdir>/in/<n>, with the host
# file system's size and free blocks and inodes, live (what the host
# and other jobs write there moves them), and their paths on the host.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Cwd ();
use File::Path qw(make_path);
use JSON::PP;
use Test::More;
use Airlock::Prereq qw(need_cmd);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
need_cmd('stat');
need_cmd('unshare');
$w->start_proxy;
$w->start_redis;

plan tests => 6;

my $real = Cwd::realpath($w->{rootfs});
my $o = $t->testdir . '/deep';
make_path(map { "$o/$_" } qw(a b e1 e2));
$w->start_worker(rootfs => "$o/b", wrap => ['unshare', '-m',
    '--propagation', 'private', 'sh', '-c',
    "mount -t overlay none $o/a -o ro,lowerdir=$real:$o/e1"
    . " && mount -t overlay none $o/b -o ro,lowerdir=$o/a:$o/e2"
    . ' && exec "$0" "$@"']);

my %host;
for my $dir ($real, $t->testdir) {
    my ($blocks, $files) = split ' ', `stat -f -c '%b %c' '$dir'` // '';
    $host{$dir} = { blocks => $blocks // -1, files => $files // -1 };
}
sub host_like {
    my ($s) = @_;
    return grep { $s->{blocks} == $_->{blocks} && $s->{files} == $_->{files} }
           values %host;
}

my $r = $w->run_job(job_id => 'deep', script => <<'PY');
import json, os
res = {"mounts": {}}
for p in ["/", "/app/code", "/app/code/script.py", "/app/data",
          "/app/data/data.json"]:
    s = os.statvfs(p)
    res[p] = {"blocks": s.f_blocks, "files": s.f_files}
with open("/proc/self/mountinfo") as f:
    for line in f:
        pre, post = line.split(" - ")
        if pre.split()[4] in ("/app/code", "/app/data"):
            res["mounts"][pre.split()[4]] = [pre.split()[3],
                                             post.split()[0]]
for p in ["/x", "/app/code/x", "/app/data/x"]:
    try:
        open(p, "w")
        res["wrote"] = p
    except OSError:
        pass
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the job runs') or diag explain $r;
ok($p->{'/'} && host_like($p->{'/'}),
   "its root, bound as it is, answers with the host's numbers")
    or diag explain { sandbox => $p, host => \%host };
my @own = qw(/app/code /app/code/script.py /app/data /app/data/data.json);
is(join(' ', grep { !$p->{$_} || $p->{$_}{blocks} > 16 || host_like($p->{$_}) }
                  @own), '',
   'code and data, still overlays, answer with their own blocks')
    or diag explain { sandbox => $p, host => \%host };
is_deeply($p->{mounts}, { '/app/code' => [ '/', 'overlay' ],
                          '/app/data' => [ '/', 'overlay' ] },
          'and name no host path') or diag explain $p;
ok(exists $p->{mounts} && !exists $p->{wrote}, 'nothing written')
    or diag explain $p;

is(join(' ', $w->leftovers), '', 'nothing left on the host');
