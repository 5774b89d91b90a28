#!/usr/bin/perl
# conf/airlock-redis-users writes Redis's ACL file into a directory Redis
# itself may write (Debian's /etc/redis is 2770 redis:redis), as root, at
# every boot and at every upgrade of the package (which restarts
# airlock-redis-users.service while Redis runs).  It wrote ACLFILE.tmp by
# name, then read, chmod'ed and chgrp'ed it by name: a Redis that put a
# link there while the file was written had root make any file the link
# led to 0640 and Redis's group's (another client's password file among
# them), and the link installed as the ACL file.  Here the link is put
# there by a sed on PATH that does so before it runs the real one (the
# moment the old script wrote the file through it); the script must
# leave the link's target alone and install a file of its own.  An
# ACLFILE that is a directory is refused, not written into.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

need_cmd(qw(sed sha256sum));

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $t = tempdir(CLEANUP => 1);
my $gen = "$top/conf/airlock-redis-users";
my $tpl = "$top/conf/redis-acl.conf";

my ($real_sed) = grep { -x } map { "$_/sed" } split /:/, $ENV{PATH};
my $redis = "$t/redis";
mkdir $redis or die;
mkdir "$t/bin" or die;
open my $fh, '>', "$t/bin/sed" or die;
print $fh "#!/bin/sh\nln -sfn $t/victim $redis/users.acl.tmp\n"
    . "exec $real_sed \"\$@\"\n";
close $fh;
chmod 0755, "$t/bin/sed";

open $fh, '>', "$t/victim" or die;
print $fh "FAKE-worker-password\n";
close $fh;
chmod 0600, "$t/victim";

# as root, the group is given too (chgrp): another than the victim's
my @group;
my $victim_gid = (stat "$t/victim")[5];
if ($> == 0) {
    my ($g) = grep { defined getgrnam($_) && getgrnam($_) != $victim_gid }
        qw(nogroup daemon);
    @group = ('--acl-group', $g) if $g;
}

my $out = `PATH=$t/bin:\$PATH $gen @group $tpl $redis/users.acl \\
           $t/agent.pass $t/worker.pass 2>&1`;
is($?, 0, 'airlock-redis-users with a link put in its way') or diag($out);
is(sprintf('%04o', (stat "$t/victim")[2] & 07777), '0600',
   'the link\'s target keeps its mode');
is((stat "$t/victim")[5], $victim_gid, 'and its group') if @group;
is(do { local (@ARGV, $/) = "$t/victim"; <> }, "FAKE-worker-password\n",
   'and its contents');
ok(!-l "$redis/users.acl" && -f "$redis/users.acl",
   'the ACL file is a file of its own, not the link');
like(do { local (@ARGV, $/) = "$redis/users.acl"; <> } // '',
     qr/^user airlock-agent on #[0-9a-f]{64} /m, 'with the users in it');
is(sprintf('%04o', (stat "$redis/users.acl")[2] & 07777), '0640',
   'mode 0640');
is((stat "$redis/users.acl")[5], scalar getgrnam($group[1]),
   "group $group[1]") if @group;

# ACLFILE a directory: refused, not written into
mkdir "$t/dir.acl" or die;
$out = `$gen $tpl $t/dir.acl $t/agent.pass $t/worker.pass 2>&1`;
isnt($?, 0, 'an ACL file that is a directory is refused');
ok(!-e "$t/dir.acl/dir.acl.tmp", 'nothing is written into it');

done_testing();
