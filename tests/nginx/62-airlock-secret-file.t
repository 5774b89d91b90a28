#!/usr/bin/perl

# ngx_http_airlock_module: file: secrets get the private key's checks when
# nginx loads the policy.  A FIFO in place of the file is refused at once
# (it used to block "nginx -t" until something wrote to it); a file group
# or others can read is refused; a symbolic link is refused; each error
# names the secret and the file.  A 0600 file loads.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use POSIX qw(mkfifo);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $d = $t->testdir;
my $value = 'file-secret-value-0123456789';

sub policy {
    my ($file) = @_;
    return <<"EOF";
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { file: "$file" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: r
    clients: [local]
    match: { method: GET, path: /r }
    upstream: echo
    to: /r
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
EOF
}

$t->write_file_expand('nginx.conf', $p->conf);

# nginx -t; a FIFO that is still blocking the load after a minute (a
# safety net, not a measure) gets a writer, so the run ends either way
sub conf_test {
    my ($file) = @_;
    my $unblocked = 0;

    $t->write_file_expand('policy.yaml', policy($file));

    local $SIG{ALRM} = sub {
        $unblocked = 1;
        if (-p $file && open(my $w, '>', $file)) {
            close $w;
        }
    };

    alarm 60;
    my ($status, $out) = $t->reload_test;
    alarm 0;

    return ($status, $out, $unblocked);
}

my ($status, $out, $unblocked);

# the usual case

$t->write_file('tok.secret', "$value\n");
chmod 0600, "$d/tok.secret" or die "chmod: $!";

($status, $out) = conf_test("$d/tok.secret");
is($status, 0, '0600 file secret: nginx -t passes') or diag($out);

chmod 0400, "$d/tok.secret" or die "chmod: $!";
($status, $out) = conf_test("$d/tok.secret");
is($status, 0, '0400 file secret: nginx -t passes') or diag($out);

# readable by others

chmod 0644, "$d/tok.secret" or die "chmod: $!";
($status, $out) = conf_test("$d/tok.secret");
isnt($status, 0, '0644 file secret: nginx -t fails');
like($out, qr{\[emerg\] \Q$d\E/policy\.yaml:5:\d+: secret "tok": (?#
              )\Q$d\E/tok\.secret can be reached by group or others (?#
              )\(mode 0644\); chmod 600 it}, '0644: the secret, the file, '
     . 'the mode, what to do');
unlike($out, qr/\Q$value\E/, '0644: no value in the output');

chmod 0640, "$d/tok.secret" or die "chmod: $!";
($status, $out) = conf_test("$d/tok.secret");
like($out, qr/secret "tok": .*\(mode 0640\)/, '0640 file secret: refused');

# a FIFO nobody writes to

mkfifo("$d/tok.fifo", 0600) or die "mkfifo: $!";
($status, $out, $unblocked) = conf_test("$d/tok.fifo");
isnt($status, 0, 'FIFO file secret: nginx -t fails');
like($out, qr{secret "tok": \Q$d\E/tok\.fifo is not a regular file (?#
              )\(a FIFO\)}, 'FIFO: refused as not a regular file');
ok(!$unblocked, 'FIFO: refused without waiting for a writer');

# a symbolic link, and a directory

chmod 0600, "$d/tok.secret" or die "chmod: $!";
symlink("$d/tok.secret", "$d/tok.link") or die "symlink: $!";
($status, $out) = conf_test("$d/tok.link");
like($out, qr{secret "tok": \Q$d\E/tok\.link is a symbolic link},
     'symbolic link: refused');

($status, $out) = conf_test($d);
like($out, qr{secret "tok": \Q$d\E is not a regular file \(a directory\)},
     'directory: refused');

# nginx runs with the 0600 file and injects it

$t->write_file_expand('policy.yaml', policy("$d/tok.secret"));
$t->start_echo(8081);
$t->run;

my $r = parse_response($t->http_get('/r'));
is($r->{status}, 200, 'the 0600 secret is used');
my @seen = $t->echo_requests(8081);
my ($auth) = map { $_->[1] } grep { lc $_->[0] eq 'authorization' }
             @{$seen[0]{headers} // []};
is($auth, "Bearer $value", 'the upstream got the file\'s value, newline '
   . 'dropped');

is($t->error_log_check, '', 'no alerts');

done_testing();
