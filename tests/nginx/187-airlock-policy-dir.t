#!/usr/bin/perl

# ngx_http_airlock_module: a policy in a directory another user may write
# is refused at load, and by airlockctl check, as one any user may write
# is (176).  Whoever may write a directory of the policy's path may put
# another policy under its name between a check and the reload, whatever
# the file's own mode: only the file's mode was looked at.  Now every
# directory a name of the path is looked up in, through symbolic links,
# must be writable by root, the policy's owner or its writing group only;
# a sticky one (/tmp) is taken when the name looked up in it is root's or
# the owner's.  The test's own directory (0755 under /tmp) passes.

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

# the policy lives in $d/pub/, policy.yaml is a symbolic link to it
$p->echo_policy;
mkdir "$d/pub" or die "mkdir: $!";
rename "$d/policy.yaml", "$d/pub/policy.yaml" or die "rename: $!";
symlink "pub/policy.yaml", "$d/policy.yaml" or die "symlink: $!";
$t->write_file_expand('nginx.conf', $p->conf(key => 0));

sub check {
    my $out = `\Q$ctl\E check \Q$d\E/policy.yaml 2>&1`;
    return ($? >> 8, $out);
}

my ($status, $out);

chmod 0755, "$d/pub" or die "chmod: $!";
($status, $out) = $t->reload_test;
is($status, 0, 'through a link, in a directory only its owner writes: '
   . 'nginx -t passes') or diag($out);
($status, $out) = check();
is($status, 0, 'and check passes') or diag($out);

chmod 0777, "$d/pub" or die "chmod: $!";
($status, $out) = $t->reload_test;
isnt($status, 0, 'the directory the link leads to is 0777: nginx -t '
     . 'fails');
like($out, qr{\[emerg\] \Q$d\E/policy\.yaml: any user can write the (?#
              )directory \Q$d\E/pub \(mode 0777\)[^\n]*chmod o-w it},
     'it names the policy, the directory, its mode, what to do');
($status, $out) = check();
is($status, 2, 'airlockctl check: exit 2');
like($out, qr{policy\.yaml: any user can write the directory \Q$d\E/pub},
     'airlockctl check says why') or diag($out);

chmod 01777, "$d/pub" or die "chmod: $!";
($status, $out) = $t->reload_test;
is($status, 0, 'sticky, the policy the owner\'s: nginx -t passes')
    or diag($out);

# the policy's writers are root, its owner and its group if it gives the
# group write; a directory another group may write is refused

chmod 0775, "$d/pub" or die "chmod: $!";
chmod 0644, "$d/pub/policy.yaml" or die "chmod: $!";
($status, $out) = $t->reload_test;
isnt($status, 0, 'a directory its group may write, a policy its group '
     . 'may not: nginx -t fails');
like($out, qr{group \d+ can write the directory \Q$d\E/pub \(mode 0775\)},
     'it names the group and the directory');

chmod 0664, "$d/pub/policy.yaml" or die "chmod: $!";
($status, $out) = $t->reload_test;
is($status, 0, 'the group may write the policy too: nginx -t passes')
    or diag($out);

# running, a reload with the directory made writable changes nothing

chmod 0755, "$d/pub" or die "chmod: $!";
chmod 0644, "$d/pub/policy.yaml" or die "chmod: $!";
$t->start_echo(8081);
$t->run;

my $r = parse_response($t->http_get('/ok'));
is($r->{status}, 200, 'the policy serves');

# a policy of one route, /mine
$p->echo_policy(route => 'mine', file => 'pub/policy.yaml');
chmod 0644, "$d/pub/policy.yaml" or die "chmod: $!";
chmod 0777, "$d/pub" or die "chmod: $!";

my ($ok) = $t->reload(allow_fail => 1);
ok(!$ok, 'a reload with the policy\'s directory 0777 fails');

$r = parse_response($t->http_get('/mine'));
is($r->{status}, 403, 'its route is not served');
$r = parse_response($t->http_get('/ok'));
is($r->{status}, 200, 'the old policy still serves');

chmod 0755, "$d/pub" or die "chmod: $!";

is($t->error_log_check(qr/any user can write the directory/), '',
   'no alerts');

done_testing();
