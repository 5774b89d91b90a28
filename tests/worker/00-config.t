#!/usr/bin/perl

# airlock-worker -t: the shipped conf/worker.conf is complete and valid,
# and each kind of mistake is named with its file and line.  The job
# stream, the dead-letter stream and errors_key are three keys: one
# dead-letter stream that was the job stream fed every entry with no
# job_id back to the workers for ever, and capped it (XADD MAXLEN),
# trimming jobs still to be done.  The fetch
# user may not be root (uid 0) or of root's group (gid 0): the fetch
# child would keep the unit's capabilities (it took "user root").

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Prereq qw(absent);
use Airlock::Test;

my $t = Airlock::Test->new;
my $bin = "$t->{build}/airlock-worker";
my $rootfs = $ENV{AIRLOCK_ROOTFS} // "$t->{build}/worker-rootfs";
my $dir = $t->testdir;

if (!-x $bin || !-x "$rootfs/usr/bin/python3"
    || !defined getpwnam('airlock-worker'))
{
    absent("needs $bin, $rootfs and the airlock-worker user");
}

plan tests => 14;

$t->write_file('policy.yaml', <<'EOF');
version: 1
clients:
  worker: { unix_uid: airlock-worker }
upstreams:
  up: { url: "http://127.0.0.1:9" }
routes:
  - name: r
    clients: [worker]
    match: { method: GET, path: /r }
    upstream: up
    to: /r
alerts:
  deny: { threshold: 3, window: 60s }
EOF

# the shipped example, pointed at this prefix
my $example = do {
    local $/;
    open my $fh, '<', "$t->{top}/conf/worker.conf" or die $!;
    <$fh>;
};
$example =~ s{^policy\s+\S+}{policy $dir/policy.yaml}m;
$example =~ s{^rootfs\s+\S+}{rootfs $rootfs}m;
$example =~ s{^workdir\s+\S+}{workdir $dir/work}m;

sub check {
    my ($text) = @_;
    $t->write_file('w.conf', $text);
    my $out = qx{$bin -c $dir/w.conf -t 2>&1};
    return ($? >> 8, $out);
}

my ($rc, $out) = check($example);
is($rc, 0, 'conf/worker.conf is valid') or diag $out;
like($out, qr/backend gvisor platform ptrace/, 'backend and platform named');

($rc, $out) = check("$example\nbogus 1\n");
like($out, qr/w\.conf:\d+: unknown key "bogus"/, 'unknown key, with its line');

($rc, $out) = check("$example\npids 3\n");
like($out, qr/pids must be a number from 8 to 65536, not "3"/,
     'number out of range');

($rc, $out) = check("$example\nmemory_mb 1024\n");
like($out, qr/memory_mb 1024 is above max_memory_mb 512/,
     'a default above its maximum');

($rc, $out) = check("$example\nbackend docker\n");
like($out, qr/backend must be gvisor or bwrap/, 'unknown backend');

($rc, $out) = check("$example\npolicy $dir/none.yaml\n");
like($out, qr/policy: .*none\.yaml/, 'missing policy named');

($rc, $out) = check("$example\nrootfs $dir\n");
like($out, qr/no usr\/bin\/python3 \(make worker-rootfs/, 'empty rootfs named');

($rc, $out) = check("$example\nuser nosuchuser-x\n");
like($out, qr/user "nosuchuser-x" does not exist/, 'unknown user');

($rc, $out) = check("$example\nuser root\n");
like($out, qr/w\.conf: user "root" has uid 0: fetches may not run as root/,
     'the fetch user root is refused');
isnt($rc, 0, 'and the worker does not start');

($rc, $out) = check("$example\ndead_letter airlock:jobs\n");
like($out, qr/w\.conf: stream and dead_letter are one key, "airlock:jobs"/,
     'a dead-letter stream that is the job stream is refused');
($rc, $out) = check("$example\nerrors_key airlock:jobs\n");
like($out, qr/stream and errors_key are one key/,
     'so is an errors_key that is the job stream');
($rc, $out) = check("$example\nerrors_key airlock:jobs:dead\n");
like($out, qr/dead_letter and errors_key are one key/,
     'or the dead-letter stream');
