#!/usr/bin/perl
# unix_uid and unix_gid by name: a group whose entry is larger than a
# few kilobytes (a group lists its members: a team's group in LDAP, or a
# long /etc/group line) is found, as getent finds it, not reported as "no
# such group".  The test puts such a group in a private mount namespace
# (unshare -m, a bind mount over /etc/group), so the machine's own files
# are not touched: it needs root.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file);
use Airlock::Prereq qw(absent need_cmd);

my ($top, $build, $ctl, $dir) = ctl_setup();
need_cmd(qw(unshare mount getent));
absent('a private mount namespace needs root') unless $> == 0;

my $system = do { local (@ARGV, $/) = '/etc/group'; <> };
my $members = join ',', map { sprintf 'member%04d', $_ } 0 .. 899;
my $groups = write_file('group', "$system"
                        . "airlock-big:x:42420:$members\n"
                        . "airlock-small:x:42421:one,two\n");

my $policy = write_file('policy.yaml', <<'Y');
version: 1
clients:
  ops: { unix_gid: airlock-big }
  dev: { unix_gid: airlock-small }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: r
    clients: [ops]
    match: { method: GET, path: /r }
    upstream: up
    to: /r
alerts:
  deny: { threshold: 3, window: 60s }
Y

# runs a command with the group file in place of /etc/group
sub with_groups {
    my ($cmd) = @_;
    my $sh = "mount --bind \Q$groups\E /etc/group && $cmd";
    my $out = `unshare -m sh -c \Q$sh\E 2>&1`;
    return ($? >> 8, $out);
}

my ($rc, $out) = with_groups('getent group airlock-big');
like($out, qr/^airlock-big:x:42420:member0000,/,
     'getent finds the large group') or diag($out);
cmp_ok(length $out, '>', 8192, 'whose entry is over 8 KiB');

($rc, $out) = with_groups("\Q$ctl\E check \Q$policy\E");
is($rc, 0, 'check: a unix_gid naming a group with a large entry loads')
    or diag($out);

($rc, $out) = with_groups("\Q$ctl\E explain \Q$policy\E --uid 1000 "
                          . "--gid 42420 GET /r");
like($out, qr/client: ops\nallow: route "r"/,
     'explain: its gid is the group\'s') or diag($out);

(my $missing = do { local (@ARGV, $/) = $policy; <> })
    =~ s/airlock-small/airlock-none/ or die;
($rc, $out) = with_groups("\Q$ctl\E check "
                          . quotemeta(write_file('missing.yaml', $missing)));
is($rc, 1, 'check: a group that does not exist is refused');
like($out, qr/no such group "airlock-none"/, 'and named');

done_testing();
