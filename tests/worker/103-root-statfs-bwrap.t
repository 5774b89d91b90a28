#!/usr/bin/perl

# statfs() of an overlay answers for its top layer.  Under bwrap the
# sandbox's root, /app/code and /app/data are read-only overlays of
# their own, and their top layer was the host's directory (the rootfs,
# and the job's in <workdir>): statvfs() of any file there
# (os.statvfs(), shutil.disk_usage()) gave the host file system's
# size, free blocks and inodes, live, which what the host and other
# jobs' sandboxes write there moves.  Now an empty tmpfs of root's, one
# block and one inode, read-only, is the top layer of each
# (aw_layers_top() in worker/aw_sandbox.c): its numbers are what a
# script sees, and its root directory, owned by root, is the
# sandbox's root.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Cwd ();
use JSON::PP;
use Test::More;
use Airlock::Prereq qw(need_cmd);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
need_cmd('stat');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 5;

# the host's file systems under the rootfs and the workdir: their size
# and inode count
my %host;
for my $dir (Cwd::realpath($w->{rootfs}), $t->testdir) {
    my ($blocks, $files) = split ' ', `stat -f -c '%b %c' '$dir'` // '';
    $host{$dir} = { blocks => $blocks // -1, files => $files // -1 };
}

my $r = $w->run_job(job_id => 'statfs', script => <<'PY');
import json, os
res = {}
for p in ["/", "/usr/lib", "/app/code", "/app/code/script.py", "/app/data",
          "/app/data/data.json"]:
    s = os.statvfs(p)
    res[p] = {"blocks": s.f_blocks, "files": s.f_files}
st = os.stat("/")
res["root"] = {"uid": st.st_uid, "mode": "%o" % st.st_mode,
               "writable": os.access("/", os.W_OK)}
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;

my @paths = ('/', '/usr/lib', '/app/code', '/app/code/script.py',
             '/app/data', '/app/data/data.json');
sub host_like {
    my ($s) = @_;
    return grep { $s->{blocks} == $_->{blocks} && $s->{files} == $_->{files} }
           values %host;
}
is(join(' ', grep { !$p->{$_} || host_like($p->{$_}) } @paths), '',
   "none answers with the host file system's size and inodes")
    or diag explain { sandbox => $p, host => \%host };
is(join(' ', grep { !$p->{$_} || $p->{$_}{blocks} > 16 } @paths), '',
   'each answers with a few blocks of its own');
is(($p->{root} // {})->{uid}, 65534,
   "the root is not the sandbox user's (root's, unmapped)")
    or diag explain $p->{root};
is(($p->{root} // {})->{writable}, JSON::PP::false, 'nor writable');
