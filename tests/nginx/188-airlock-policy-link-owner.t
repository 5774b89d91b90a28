#!/usr/bin/perl

# ngx_http_airlock_module: a policy reached through a symbolic link
# another user owns, in a sticky directory others may write (/tmp), is
# refused at load: that user may replace the link (and so the policy) at
# will, though neither the link's directory (sticky, root's) nor the
# file it leads to is theirs to write.  nginx loaded it; now "nginx -t"
# and a reload fail naming the link and its owner, and the old policy
# keeps serving.  A link of root's there is taken.  Needs root (chown).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::Prereq qw(absent);

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $d = $t->testdir;

absent('needs root, to chown the link') if $> != 0;
my $nobody = getpwnam('nobody');
absent('no user nobody') unless defined $nobody;

# the policy is read through $d/tmp/policy.yaml (1777, root's), a link
# to $d/etc/policy.yaml
$p->echo_policy;
mkdir "$d/etc" or die "mkdir: $!";
mkdir "$d/tmp" or die "mkdir: $!";
chmod 0755, "$d/etc" or die "chmod: $!";
chmod 01777, "$d/tmp" or die "chmod: $!";
rename "$d/policy.yaml", "$d/etc/policy.yaml" or die "rename: $!";
symlink "$d/etc/policy.yaml", "$d/tmp/policy.yaml" or die "symlink: $!";
$t->write_file_expand('nginx.conf',
                      $p->conf(key => 0, policy => "$d/tmp/policy.yaml"));

sub link_owner {
    my ($who, $to) = @_;
    if (defined $to) {
        unlink "$d/tmp/policy.yaml" or die "unlink: $!";
        symlink $to, "$d/tmp/policy.yaml" or die "symlink: $!";
    }
    system('chown', '-h', $who, "$d/tmp/policy.yaml") == 0
        or die "chown -h";
}

my ($status, $out);

($status, $out) = $t->reload_test;
is($status, 0, 'a link of root\'s in a sticky directory: nginx -t passes')
    or diag($out);

link_owner('nobody');
($status, $out) = $t->reload_test;
isnt($status, 0, 'another user\'s link: nginx -t fails');
like($out, qr{\[emerg\] \Q$d\E/tmp/policy\.yaml: \Q$d\E/tmp/policy\.yaml, (?#
              )in the sticky directory \Q$d\E/tmp others may write, is (?#
              )owned by uid $nobody}, 'it names the link and its owner')
    or diag($out);

# running, a reload once the link is another user's changes nothing

link_owner('root');
$t->start_echo(8081);
$t->run;

my $r = parse_response($t->http_get('/ok'));
is($r->{status}, 200, 'the policy serves');

# a policy of one route, /mine
$p->echo_policy(route => 'mine', file => 'mine.yaml');
chmod 0644, "$d/mine.yaml" or die "chmod: $!";

# what nobody may do there: a link of their own, to a file of their choice
link_owner('nobody', "$d/mine.yaml");

my ($ok) = $t->reload(allow_fail => 1);
ok(!$ok, 'a reload through another user\'s link fails');

$r = parse_response($t->http_get('/mine'));
is($r->{status}, 403, 'the route of the file it leads to is not served');
$r = parse_response($t->http_get('/ok'));
is($r->{status}, 200, 'the old policy still serves');

is($t->error_log_check(qr/is owned by uid $nobody/), '', 'no alerts');

done_testing();
