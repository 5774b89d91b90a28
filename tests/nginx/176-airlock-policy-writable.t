#!/usr/bin/perl

# ngx_http_airlock_module: a policy any user may write (chmod 666 by
# mistake) is refused at load, and by airlockctl check.  The policy
# decides where every secret goes: nginx loaded such a file at the next
# reload, so any local user (an agent's or a worker's uid on the
# appliance) could add a route of their own, to an upstream of theirs,
# carrying the credential.  Now "nginx -t" and a reload fail naming the
# file and its mode, the old policy keeps serving, and check exits 2
# (the file cannot be used), as for a private key others can read.
# Group write stays allowed (airlockctl edit keeps an operators' group).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $d = $t->testdir;
my $ctl = $p->ctl;

$p->echo_policy;
$t->write_file_expand('nginx.conf', $p->conf(key => 0));

sub check {
    my $out = `\Q$ctl\E check \Q$d\E/policy.yaml 2>&1`;
    return ($? >> 8, $out);
}

my ($status, $out);

chmod 0666, "$d/policy.yaml" or die "chmod: $!";
($status, $out) = $t->reload_test;
isnt($status, 0, 'a policy others may write: nginx -t fails');
like($out, qr{\[emerg\] \Q$d\E/policy\.yaml: any user can write the (?#
              )policy \(mode 0666\)[^\n]*chmod o-w it}, 'it names the file, '
     . 'the mode, what to do');

($status, $out) = check();
is($status, 2, 'airlockctl check: exit 2');
like($out, qr/policy\.yaml: any user can write the policy \(mode 0666\)/,
     'airlockctl check says why');

chmod 0664, "$d/policy.yaml" or die "chmod: $!";
($status, $out) = $t->reload_test;
is($status, 0, 'group write: nginx -t passes') or diag($out);
($status, $out) = check();
is($status, 0, 'group write: check passes') or diag($out);

# running, a reload to a policy others may write changes nothing

chmod 0644, "$d/policy.yaml" or die "chmod: $!";
$t->start_echo(8081);
$t->run;

my $r = parse_response($t->http_get('/ok'));
is($r->{status}, 200, 'the policy serves');

# a policy of one route, /mine
$p->echo_policy(route => 'mine');
chmod 0646, "$d/policy.yaml" or die "chmod: $!";

my ($ok) = $t->reload(allow_fail => 1);
ok(!$ok, 'a reload to a policy others may write fails');

$r = parse_response($t->http_get('/mine'));
is($r->{status}, 403, 'its route is not served');
$r = parse_response($t->http_get('/ok'));
is($r->{status}, 200, 'the old policy still serves');

is($t->error_log_check(qr/any user can write the policy/), '', 'no alerts');

done_testing();
