#!/usr/bin/perl

# ngx_http_airlock_module: a file: secret and the keyring
# (airlock_keyring) are refused at load when another user can change
# their path, as the policy is (187): a directory any user may write,
# from / down and through symbolic links, lets that user put another
# file under the name between airlockctl check and the reload (the mode
# and owner checks are on the file they find).  A secret or key with a
# second name (a hard link) is refused too: where fs.protected_hardlinks
# is 0 any user may link a file of root's under a name of theirs, and the
# owner check passes it.  Each error names the file; a reload refused so
# keeps the running policy.

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

mkdir "$d/keys" or die "mkdir: $!";
mkdir "$d/sec" or die "mkdir: $!";
chmod 0755, "$d/keys", "$d/sec" or die "chmod: $!";
$p->keygen('keys/airlock.key');

my $sealed = $p->seal('FAKE-sealed-0123');
$t->write_file('sec/tok', "FAKE-file-0123\n");
chmod 0600, "$d/sec/tok" or die "chmod: $!";

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { file: "$d/sec/tok" }
  box: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: ok
    clients: [local]
    match: { method: GET, path: /ok }
    upstream: echo
    to: /ok
    inject: { Authorization: "Bearer {tok}", X-Box: "{box}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF
$t->write_file_expand('nginx.conf', $p->conf);

my ($status, $out) = $t->reload_test;
is($status, 0, 'secret and key in directories only root writes: nginx -t '
   . 'passes') or diag($out);

chmod 0777, "$d/sec" or die "chmod: $!";
($status, $out) = $t->reload_test;
isnt($status, 0, 'the secret\'s directory 0777: nginx -t fails');
like($out, qr{\[emerg\] [^\n]*secret "tok": \Q$d\E/sec/tok: any user can (?#
              )write the directory \Q$d\E/sec \(mode 0777\), and replace (?#
              )the secret file there}, 'it names the secret, the file, the '
     . 'directory');
unlike($out, qr/FAKE-file/, 'not the secret');
chmod 0755, "$d/sec" or die "chmod: $!";

link "$d/sec/tok", "$d/sec/tok.again" or die "link: $!";
($status, $out) = $t->reload_test;
isnt($status, 0, 'the secret with a second hard link: nginx -t fails');
like($out, qr{secret "tok": \Q$d\E/sec/tok has 2 hard links}, 'named');
unlink "$d/sec/tok.again" or die "unlink: $!";

chmod 0777, "$d/keys" or die "chmod: $!";
($status, $out) = $t->reload_test;
isnt($status, 0, 'the keyring\'s directory 0777: nginx -t fails');
like($out, qr{\[emerg\] [^\n]*\Q$d\E/keys/airlock\.key: any user can write (?#
              )the directory \Q$d\E/keys \(mode 0777\), and replace the (?#
              )private key there}, 'it names the key and the directory');
chmod 0755, "$d/keys" or die "chmod: $!";

link "$d/keys/airlock.key", "$d/keys/again" or die "link: $!";
($status, $out) = $t->reload_test;
isnt($status, 0, 'the keyring with a second hard link: nginx -t fails');
like($out, qr{\Q$d\E/keys/airlock\.key: private key file has 2 hard links},
     'named');
unlink "$d/keys/again" or die "unlink: $!";

# running: a reload with the secret's directory made writable changes
# nothing

$t->start_echo(8081);
$t->run;

my $r = parse_response($t->http_get('/ok'));
is($r->{status}, 200, 'the policy serves');

chmod 0777, "$d/sec" or die "chmod: $!";
my ($ok) = $t->reload(allow_fail => 1);
ok(!$ok, 'a reload with the secret\'s directory 0777 fails');
$r = parse_response($t->http_get('/ok'));
is($r->{status}, 200, 'the old policy still serves');
chmod 0755, "$d/sec" or die "chmod: $!";

is($t->error_log_check(qr/any user can write the directory/), '',
   'no alerts');

done_testing();
