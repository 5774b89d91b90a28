#!/usr/bin/perl

# ngx_http_airlock_module: reload under load.  While a client keeps sending
# requests, the policy is changed and nginx reloaded several times (and one
# reload with a bad policy is refused): no request fails, every answer is
# the old policy's or the new one's, and the new one takes over.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use POSIX qw(_exit);
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $policy = <<'EOF';
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: stable
    clients: [local]
    match: { method: GET, path: /stable }
    upstream: echo
    to: /stable
  - name: VERSION
    clients: [local]
    match: { method: GET, path: /VERSION }
    upstream: echo
    to: /VERSION
alerts:
  deny: { threshold: 1000000, window: 60s }
EOF

sub policy {
    (my $s = $policy) =~ s/VERSION/$_[0]/g;
    return $s;
}

$t->write_file_expand('policy.yaml', policy('v1'));
$t->write_file_expand('nginx.conf', $p->conf);
$t->start_echo(8081);
$t->run;

plan tests => 7;

# The load: a child sending requests, one connection each, until told to
# stop.  Between reloads the test waits for the child to answer a number
# of requests more, not for a time: on a busy machine it takes longer, it
# does not do less.
my $log = $t->testdir . '/load.log';
my $stop = $t->testdir . '/load.stop';
my $pid = fork // die "fork: $!";

if ($pid == 0) {
    open my $fh, '>', $log or _exit(2);
    $fh->autoflush(1);
    until (-e $stop) {
        my $r = parse_response(http_get('/stable', timeout => 30));
        my $s = $r->{status} // 'none';
        print $fh "$s\n";
    }
    close $fh;
    _exit(0);
}

# waits for 25 more answers; false when none came for a minute
my $seen = 0;
sub more {
    my $want = $seen + 25;
    my ($n, $last, $t0) = (0, -1, time);
    while (time - $t0 < 60) {
        $n = 0;
        if (open my $fh, '<', $log) {
            $n++ while <$fh>;
        }
        ($last, $t0) = ($n, time) if $n != $last;
        last if $n >= $want;
        sleep 0.05;
    }
    $seen = $n;
    return $n >= $want;
}

my $going = more();
for my $v (qw(v2 v3)) {
    $t->write_file_expand('policy.yaml', policy($v));
    $t->reload;
    $going &&= more();
}

$t->write_file('policy.yaml', "version: 1\nclients: [\n");
my ($ok) = $t->reload(allow_fail => 1);
ok(!$ok, 'a reload with a bad policy is refused under load');
$going &&= more();

$t->write_file_expand('policy.yaml', policy('v4'));
$t->reload;
$going &&= more();

$t->write_file('load.stop', '');
waitpid($pid, 0);
is($? >> 8, 0, 'the load client ran');

open my $fh, '<', $log or die;
my @st = map { chomp; $_ } <$fh>;
my %n;
$n{$_}++ for @st;

ok($going, scalar(@st) . ' requests, answered on through every reload');
is(join(',', sort keys %n), '200', 'every one answered 200')
    or diag(join ', ', map { "$_: $n{$_}" } sort keys %n);

like(http_get('/v4'), qr{^HTTP/1\.1 200 }, 'the last policy serves');
like(http_get('/v1'), qr{^HTTP/1\.1 403 }, 'the first one is gone');

is($t->error_log_check(qr/airlock: policy/, qr/unexpected end|invalid YAML/),
   '', 'no alerts');
