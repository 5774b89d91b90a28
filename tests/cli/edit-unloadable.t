#!/usr/bin/perl
# airlockctl edit over an installed policy that does not load (a policy
# broken on disk, nginx still running an older one): the edit that fixes
# it is installed, and the loader's error about the installed file, which
# names that file as a refused edit's names its copy, is said to be about
# the policy replaced, with no changes compared; a policy that loads gets
# its changes shown.  No nginx: --test and --reload are true(1).

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $good = <<'Y';
version: 1
clients:
  agent: { unix_uid: 1000 }
  ops: { unix_uid: 1001 }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: r
    clients: [agent]
    match: { method: GET, path: /r }
    upstream: up
    to: /r
alerts:
  deny: { threshold: 3, window: 60s }
Y

# the editor: ops on the route, and the alert's key spelt right
my $editor = write_file('editor.sh', <<'SH');
#!/bin/sh
sed -i 's/clients: \[agent\]/clients: [agent, ops]/; s/thresholdx:/threshold:/' "$1"
SH
chmod 0755, $editor or die;

# runs edit on $policy; returns (exit code, stdout, stderr)
sub edit {
    my ($policy) = @_;
    local $ENV{VISUAL} = $editor;
    my $cmd = join ' ', map { quotemeta } $ctl, 'edit', '--policy', $policy,
                                          '--test', 'true', '--reload', 'true';
    my $out = `$cmd </dev/null 2>$dir/stderr`;
    my $rc = $? >> 8;
    open my $fh, '<', "$dir/stderr" or die;
    my $err = do { local $/; <$fh> };
    return ($rc, $out, $err);
}

# installed policy that loads: the grant is shown
my $policy = write_file('good.yaml', $good);
my ($rc, $out, $err) = edit($policy);
is($rc, 0, 'an edit of a policy that loads: installed') or diag($err);
like($out, qr/^\+ route r: client ops added$/m, 'and its grant shown')
    or diag($out);
unlike($err, qr/does not load/, 'and nothing said of the old one');

# installed policy broken on disk
(my $broken = $good) =~ s/threshold:/thresholdx:/;
$policy = write_file('broken.yaml', $broken);
($rc, $out, $err) = edit($policy);
is($rc, 0, 'an edit that fixes a policy broken on disk: installed')
    or diag($err);
like($out, qr/installed and reloaded/, 'it says so') or diag($out);
like($err, qr/^\Q$policy\E:14:\d+: unknown key "thresholdx"/m,
     'the error of the installed policy is shown');
like($err, qr/\Q$policy\E, the policy this edit replaces, does not load/,
     'and said to be the replaced policy\'s, not the edit\'s') or diag($err);
like($err, qr/no change is shown/, 'with no change compared');
is(do { local (@ARGV, $/) = $policy; <> }
   =~ /clients: \[agent, ops\]/ ? 1 : 0, 1, 'the edit is in place');

done_testing();
