#!/usr/bin/perl
# configure-root.sh puts the image's Redis on a unix socket the agent and
# the worker reach (group redis, 0770), with no TCP port and AOF written
# before each reply.  It edits Debian's redis.conf line by line and
# checked only the socket and appendfsync lines afterwards: a port line
# its edit missed (a tab after the name), or a second one further down
# (Redis takes the last, whatever its case or leading blanks), left Redis
# on 127.0.0.1:6379 without a password, which every local user may then
# use to queue jobs and read sessions; the image was built.  Every
# setting is checked now, and no other line may set it.  Its users come
# from an ACL file, /etc/redis/airlock-users.acl, which
# airlock-redis-users.service writes from conf/redis-acl.conf at boot:
# the default user off, the agent and the worker each a user of its own
# with no admin command (tests/build/28-redis-acl.t, 29-redis-users.t);
# a user line in redis.conf would stop Redis from starting.  Run on a
# stand-in root, with chroot stubbed out; no image is built.

use strict;
use warnings;
use Cwd ();
use FindBin;
use File::Temp qw(tempdir);
use Test::More;

my $top = Cwd::abs_path("$FindBin::Bin/../..");

my $t = tempdir(CLEANUP => 1);

sub write_file {
    my ($f, $text) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh;
}

mkdir "$t/bin";
write_file("$t/bin/chroot", "#!/bin/sh\nexit 0\n");
chmod 0755, "$t/bin/chroot";

# a plain overlay (no checkout: copied whole)
system("mkdir -p $t/plain && cp -R $top/appliance-image/root "
       . "$t/plain/root") == 0 or die "a copy of the overlay";

my $debian = "# unixsocket /run/redis-server/redis-server.sock\n"
    . "# unixsocketperm 700\nport 6379\nappendonly no\n"
    . "appendfsync everysec\n# aclfile /etc/redis/users.acl\n";

sub configure {
    my ($name, $conf) = @_;
    my $root = "$t/$name";
    for my $d ('', qw(/etc /etc/redis /etc/nginx)) {
        mkdir "$root$d";
    }
    write_file("$root/etc/redis/redis.conf", $conf);
    my $out = `PATH=$t/bin:\$PATH sh $top/appliance-image/configure-root.sh \\
        $root $t/plain/root $top/conf 2>&1`;
    my $rc = $? >> 8;
    my $got = do { local (@ARGV, $/) = "$root/etc/redis/redis.conf"; <> };
    return ($rc, $out, $got);
}

# the settings as Redis reads them: the last line of each directive,
# whatever its case and leading blanks; the port is 6379 when none is set
sub settings {
    my ($conf) = @_;
    my %s = (port => '6379');
    for (split /\n/, $conf) {
        s/^\s+//;
        s/\s+$//;
        next if $_ eq '' || /^#/;
        my ($k, $v) = split /\s+/, $_, 2;
        $s{lc $k} = $v;
    }
    return \%s;
}

my %want = (unixsocket => '/run/redis/redis.sock', unixsocketperm => '770',
            port => '0', appendonly => 'yes', appendfsync => 'always',
            aclfile => '/etc/redis/airlock-users.acl');

sub wrong {
    my ($conf) = @_;
    my $s = settings($conf);
    return join(', ', map { "$_ " . ($s->{$_} // '(none)') }
                grep { ($s->{$_} // '') ne $want{$_} } sort keys %want);
}

# conf/redis-acl.conf, the ACL file's template, has the three users
my $acl = do { local (@ARGV, $/) = "$top/conf/redis-acl.conf"; <> };
is(join(' ', map { /^user (\S+)/ ? $1 : () } split /\n/, $acl),
   'default airlock-agent airlock-worker',
   'conf/redis-acl.conf: the default user, the agent\'s, the worker\'s');

my ($rc, $out, $got) = configure('debian', $debian);
is($rc, 0, 'Debian\'s redis.conf: configure-root.sh') or diag($out);
is(wrong($got), '', 'Redis reads the appliance\'s settings from it');

# other redis.conf files: configure-root.sh either writes the settings
# Redis will read, or fails and says which is wrong
my %other = (
    'a tab after "port"' => $debian =~ s/^port 6379$/port\t6379/mr,
    'a second port line' => $debian . "  PORT 6379\n",
    'no port line' => $debian =~ s/^port 6379\n//mr,
    'an indented appendfsync line' => $debian . "  appendfsync no\n",
    'a second unixsocketperm line' => $debian . "unixsocketperm 777\n",
    'a user line of its own' => $debian
        . "user default on nopass ~* &* +\@all\n",
    'an aclfile line' => $debian . "aclfile /etc/redis/users.acl\n",
);
my $n = 0;
for my $case (sort keys %other) {
    ($rc, $out, $got) = configure('other' . $n++, $other{$case});
    if ($rc != 0) {
        like($out,
             qr/redis\.conf (?:has no|sets \w+ otherwise|has a user line)/,
             "$case: configure-root.sh fails, and says what is wrong")
            or diag($out);
    } else {
        is(wrong($got), '', "$case: Redis reads the appliance's settings");
    }
}

done_testing();
