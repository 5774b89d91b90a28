#!/usr/bin/perl
# The image's Redis has a bound on its memory: maxmemory, a quarter of
# the machine's (MemTotal), and maxmemory-policy noeviction.  Without
# one, Redis, which holds every job, result and session, grew until the
# kernel's OOM killer ended a process (nginx, or Redis and every job it
# held).  /usr/lib/airlock/redis-maxmemory writes both into
# /run/redis/airlock-maxmemory.conf before each start (the overlay's
# drop-in redis-server.service.d/airlock-maxmemory.conf, run as root:
# Debian's unit lets Redis execute nothing but redis-server), from
# MemTotal, or AIRLOCK_REDIS_MAXMEMORY (/etc/airlock/redis-memory.conf:
# "N%" of the memory, or a size in Redis's units); a value it refuses
# writes nothing and keeps Redis from starting.  configure-root.sh
# makes redis.conf include that file last and refuses a redis.conf that
# sets either itself.  Redis reads the file as written.  Run on a
# stand-in root, with chroot stubbed out; no image is built (make
# image-test checks the booted image's bound).

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(need_cmd);

my $top = Cwd::abs_path("$FindBin::Bin/../..");
my $gen = "$top/appliance-image/root/usr/lib/airlock/redis-maxmemory";
my $dropin = "$top/appliance-image/root/etc/systemd/system/"
    . 'redis-server.service.d/airlock-maxmemory.conf';
my $include = 'include /run/redis/airlock-maxmemory.conf';

need_cmd(qw(redis-server redis-cli));

my $t = tempdir(CLEANUP => 1);

sub write_file {
    my ($f, $text) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return undef;
    local $/;
    return <$fh>;
}

# ---- the drop-in ------------------------------------------------------------
my $d = slurp($dropin) // '';
(my $joined = $d) =~ s/\\\n\s*/ /g;
my @lines = grep { !/^\s*(#|;|$)/ } split /\n/, $joined;
is_deeply(\@lines,
          [ '[Service]',
            'EnvironmentFile=-/etc/airlock/redis-memory.conf',
            'ExecStartPre=+/usr/lib/airlock/redis-maxmemory '
            . '/run/redis/airlock-maxmemory.conf' ],
          'the drop-in runs redis-maxmemory as root before Redis starts, '
          . 'with the operator\'s setting if any');
ok(-x $gen, 'redis-maxmemory is in the overlay, executable');

# ---- redis-maxmemory ----------------------------------------------------------
# (exit status, the file written or undef, stderr) for MemTotal KB and
# AIRLOCK_REDIS_MAXMEMORY WANT (undef: unset)
my $n = 0;
sub generate {
    my ($kb, $want) = @_;
    my $dir = "$t/gen" . $n++;
    mkdir $dir;
    write_file("$dir/meminfo", defined $kb
               ? "MemTotal:       $kb kB\nMemFree:         1024 kB\n"
               : "MemFree:         1024 kB\n");
    local $ENV{AIRLOCK_REDIS_MAXMEMORY} = $want;
    delete $ENV{AIRLOCK_REDIS_MAXMEMORY} unless defined $want;
    my $err = `sh $gen --meminfo $dir/meminfo $dir/out 2>&1`;
    return ($? >> 8, slurp("$dir/out"), $err, "$dir/out");
}

my $GiB = 1024 * 1024;          # in kB
my @cases = (
    [ 4 * $GiB, undef, 1073741824, 'a quarter of 4 GiB by default' ],
    [ 4 * $GiB, '', 1073741824, 'empty: the default' ],
    [ 1 * $GiB, undef, 268435456, 'a quarter of 1 GiB' ],
    [ 4028332, undef, 1031252992, 'a quarter of an odd MemTotal' ],
    [ 64 * $GiB, undef, 17179869184, 'a quarter of 64 GiB' ],
    [ 4 * $GiB, '50%', 2147483648, '50%' ],
    [ 4 * $GiB, '2gb', 2147483648, 'a size: 2gb' ],
    [ 4 * $GiB, '512MB', 536870912, '512MB' ],
    [ 4 * $GiB, '100m', 100000000, '100m' ],
    [ 4 * $GiB, '20000000', 20000000, 'bytes' ],
);
for my $c (@cases) {
    my ($kb, $want, $bytes, $name) = @$c;
    my ($rc, $got, $err) = generate($kb, $want);
    is($rc, 0, "$name: written") or diag($err);
    is($got, "maxmemory $bytes\nmaxmemory-policy noeviction\n",
       "$name: maxmemory $bytes, noeviction");
}

my @bad = (
    [ 4 * $GiB, '0', 'a size of 0 (no bound to Redis)' ],
    [ 4 * $GiB, '0%', '0%' ],
    [ 4 * $GiB, '95%', 'over 90%' ],
    [ 4 * $GiB, '12.5%', 'a fraction of a percent' ],
    [ 4 * $GiB, 'lots', 'no number' ],
    [ 4 * $GiB, '1kb', 'under 16 MiB' ],
    [ 4 * $GiB, '4gb', 'the whole machine' ],
    [ 4 * $GiB, '999999999999999gb', 'past 64 bits' ],
    [ 4 * $GiB, '2tb', 'a unit Redis has not' ],
    [ 40 * 1024, undef, 'a quarter under 16 MiB' ],
    [ undef, undef, 'no MemTotal' ],
);
for my $c (@bad) {
    my ($kb, $want, $name) = @$c;
    my ($rc, $got, $err) = generate($kb, $want);
    is($rc, 1, "$name: refused");
    like($err, qr/^redis-maxmemory: \S/, "$name: saying why") or diag($err);
    ok(!defined $got, "$name: nothing written");
}

# ---- Redis reads it ---------------------------------------------------------
my ($rc, $got, $err, $file) = generate(4 * $GiB, undef);
my $sock = "$t/redis.sock";
write_file("$t/redis.conf", "port 0\nunixsocket $sock\nsave \"\"\n"
           . "appendonly no\ndir $t\ninclude $file\n");
my $pid = fork // die "fork: $!\n";
if ($pid == 0) {
    open STDOUT, '>', "$t/redis.log";
    open STDERR, '>&', \*STDOUT;
    exec 'redis-server', "$t/redis.conf";
    exit 127;
}
my $up = 0;
for (1 .. 200) {
    last if ($up = -S $sock
             && `redis-cli -s $sock PING 2>/dev/null` =~ /PONG/);
    select(undef, undef, undef, 0.05);
}
ok($up, 'Redis starts with the file included') or diag(slurp("$t/redis.log"));
is(`redis-cli -s $sock CONFIG GET maxmemory | tail -n 1`, "1073741824\n",
   'Redis\'s maxmemory is the file\'s');
is(`redis-cli -s $sock CONFIG GET maxmemory-policy | tail -n 1`,
   "noeviction\n", 'its policy noeviction');
kill 'TERM', $pid;
waitpid $pid, 0;

# ---- configure-root.sh ----------------------------------------------------------
mkdir "$t/bin";
write_file("$t/bin/chroot", "#!/bin/sh\nexit 0\n");
chmod 0755, "$t/bin/chroot";
system("mkdir -p $t/plain && cp -R $top/appliance-image/root "
       . "$t/plain/root") == 0 or die "a copy of the overlay";

my $debian = "# unixsocket /run/redis-server/redis-server.sock\n"
    . "# unixsocketperm 700\nport 6379\nappendonly no\n"
    . "appendfsync everysec\n# aclfile /etc/redis/users.acl\n"
    . "# maxmemory <bytes>\n# maxmemory-policy noeviction\n"
    . "# include /path/to/local.conf\n";

sub configure {
    my ($name, $conf) = @_;
    my $root = "$t/$name";
    for my $dir ('', qw(/etc /etc/redis /etc/nginx)) {
        mkdir "$root$dir";
    }
    write_file("$root/etc/redis/redis.conf", $conf);
    my $out = `PATH=$t/bin:\$PATH sh $top/appliance-image/configure-root.sh \\
        $root $t/plain/root $top/conf 2>&1`;
    return ($? >> 8, $out, slurp("$root/etc/redis/redis.conf"));
}

# Redis's directives as it reads them, in order, whatever their case
sub directives {
    my ($conf) = @_;
    return grep { $_ ne '' && !/^#/ }
           map { s/^\s+|\s+$//gr } split /\n/, $conf;
}

my ($crc, $out, $conf) = configure('debian', $debian);
is($crc, 0, 'Debian\'s redis.conf: configure-root.sh') or diag($out);
my @dir = directives($conf // '');
is($dir[-1], $include, 'redis.conf includes the bound last');
is(scalar(grep { /^maxmemory(-policy)?\s/i } @dir), 0,
   'and sets neither maxmemory nor its policy otherwise');
($crc, $out, $conf) = configure('again', $conf);
is(scalar(grep { $_ eq $include } directives($conf // '')), 1,
   'configured again: included once');

for my $c ([ 'maxmemory 0', 'a maxmemory of its own' ],
           [ '  MAXMEMORY-POLICY allkeys-lru', 'a policy of its own' ]) {
    ($crc, $out) = configure('own' . $n++, "$debian$c->[0]\n");
    is($crc, 1, "$c->[1]: configure-root.sh fails");
    like($out, qr/sets maxmemory or maxmemory-policy/, "$c->[1]: says so");
}

done_testing();
