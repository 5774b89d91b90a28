#!/usr/bin/perl
# airlockctl end to end: exit codes, messages, key files, sealing, explain
# and the semantic diff, run as an operator would run them.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use Test::More;

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";
my $example = "$top/conf/policy.example.yaml";
my $dir = tempdir(CLEANUP => 1);

plan skip_all => "$ctl not built" unless -x $ctl;

# runs airlockctl; returns (exit code, stdout, stderr)
sub run {
    my ($stdin, @args) = @_;
    my $in = "$dir/stdin";
    open my $fh, '>', $in or die;
    print $fh $stdin // '';
    close $fh;
    my $cmd = join ' ', map { quotemeta } $ctl, @args;
    my $out = `$cmd <$in 2>$dir/stderr`;
    my $rc = $? >> 8;
    open $fh, '<', "$dir/stderr" or die;
    my $err = do { local $/; <$fh> };
    return ($rc, $out, $err);
}

sub write_file {
    my ($name, $text) = @_;
    open my $fh, '>', "$dir/$name" or die;
    print $fh $text;
    close $fh;
    return "$dir/$name";
}

my ($rc, $out, $err);

# help and usage
($rc, $out) = run('', '--help');
is($rc, 0, '--help exits 0');
like($out, qr/check FILE/, '--help lists the commands');
for my $c (qw(check explain routes diff keygen seal)) {
    ($rc, $out) = run('', $c, '--help');
    ok($rc == 0 && $out =~ /usage: airlockctl \Q$c\E/, "$c --help");
}
($rc, undef, $err) = run('', 'frobnicate');
is($rc, 2, 'unknown command exits 2');
like($err, qr/unknown command "frobnicate"/, 'unknown command is named');
($rc) = run('', 'check');
is($rc, 2, 'check without a file is a usage error');

# check
($rc, $out) = run('', 'check', $example);
is($rc, 0, 'the example policy passes check');
like($out, qr/ok \(3 clients, 4 routes, 1 llm providers/, 'check summary');

my $bad = write_file('bad.yaml', <<'Y');
version: 1
clients:
  agent: { cidr: 10.0.0.0/8 }
routes:
  - name: r
    clients: [agent]
    match: { metod: GET, path: /x }
alerts:
  deny: { threshold: 3, window: 60s }
Y
($rc, $out, $err) = run('', 'check', $bad);
is($rc, 1, 'an invalid policy fails check with 1');
like($err, qr/^\Q$bad\E:7:14: unknown key "metod" in match \(did you mean "method"\?\)/,
     'error has file:line:column and a suggestion');

($rc, undef, $err) = run('', 'check', "$dir/missing.yaml");
is($rc, 1, 'a missing file fails check');
like($err, qr/cannot open: No such file/, 'missing file is reported');

# keygen and seal
my $key = "$dir/airlock.key";
($rc, undef, $err) = run('', 'keygen', $key);
is($rc, 0, 'keygen succeeds');
is((stat $key)[2] & 07777, 0600, 'private key is 0600');
ok(-f "$key.pub", 'public key written');
($rc, undef, $err) = run('', 'keygen', $key);
is($rc, 1, 'keygen refuses to overwrite');
like($err, qr/refusing to overwrite/, 'and says so');

($rc, undef, $err) = run('', 'seal', '--pub', "$key.pub", 's3cret');
is($rc, 2, 'seal refuses a secret on the command line');
like($err, qr/standard input only/, 'and says why');

($rc, $out) = run("s3cret-token\n", 'seal', '--pub', "$key.pub");
is($rc, 0, 'seal reads standard input');
chomp(my $sealed = $out);
like($sealed, qr{^[A-Za-z0-9+/]+=*$}, 'sealed value is base64');
isnt($sealed, '', 'sealed value not empty');
unlike($out, qr/s3cret/, 'the secret is not printed');

my $sealed_policy = write_file('sealed.yaml', <<"Y");
version: 1
clients:
  agent: { cidr: 10.0.0.0/8 }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  up: { url: "http://127.0.0.1:9" }
routes:
  - name: r
    clients: [agent]
    match: { method: GET, path: /x }
    upstream: up
    to: /y
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 3, window: 60s }
Y
($rc, $out) = run('', 'check', $sealed_policy, '--key', $key);
is($rc, 0, 'check --key opens the sealed secret');
like($out, qr/1 secrets opened/, 'and says it opened it');

my $other = "$dir/other.key";
run('', 'keygen', $other);
($rc, undef, $err) = run('', 'check', $sealed_policy, '--key', $other);
is($rc, 1, 'check --key with another key fails');
like($err, qr/sealed\.yaml:5:\d+: secret "tok" cannot be opened/,
     'the failing secret is located');

chmod 0644, $key;
($rc, undef, $err) = run('', 'check', $sealed_policy, '--key', $key);
is($rc, 1, 'a world-readable private key is refused');
like($err, qr/chmod 600/, 'with the fix in the message');
chmod 0600, $key;

# explain
($rc, $out) = run('', 'explain', $example, '--client', 'agent', 'GET',
                  '/prometheus/query?query=up+%7B%7D');
is($rc, 0, 'explain: allowed request exits 0');
like($out, qr/allow: route "prometheus-query"/, 'explain names the route');
like($out, qr{forward:  GET http://127\.0\.0\.1:9090/api/v1/query\?query=up%20%7B%7D},
     'explain shows the canonical upstream request');
like($out, qr/inject:   Authorization: Basic \{prom_basic\|base64\}/,
     'explain shows the template, never a value');

($rc, $out) = run('', 'explain', $example, '--client', 'tools', 'GET',
                  '/logs/api');
is($rc, 1, 'explain: denied request exits 1');
like($out, qr/deny: no_route \(route "logs" does not list client "tools"\)/,
     'explain gives the reason and the detail');

($rc, $out) = run('', 'explain', $example, '--client', 'agent', 'GET',
                  '/logs/..%2Fetc');
like($out, qr/deny: path/, 'explain refuses an encoded slash');

my $body = write_file('pr.json',
    '{"head":"remediation/x","base":"main","title":"fix"}');
($rc, $out) = run('', 'explain', $example, '--client', 'agent', 'POST',
                  '/github/pull-request', '--body', $body,
                  '--content-type', 'application/json');
is($rc, 0, 'explain: valid pull request body allowed');
$body = write_file('pr2.json',
    '{"head":"remediation/x","head":"main","base":"main","title":"fix"}');
($rc, $out) = run('', 'explain', $example, '--client', 'agent', 'POST',
                  '/github/pull-request', '--body', $body,
                  '--content-type', 'application/json');
is($rc, 1, 'explain: duplicate JSON key denied');
like($out, qr/deny: body \(duplicate key/, 'with the reason');

my $token = 'test';   # sha256("test") is the tools token in the example
($rc, $out) = run('', 'explain', $example, '--token', $token, 'GET',
                  '/prometheus/query?query=up');
is($rc, 0, 'explain: a token identifies the tools client');
like($out, qr/client: tools/, 'and names it');
($rc, $out) = run('', 'explain', $example, '--token', 'wrong', '--addr',
                  '10.1.2.3', 'GET', '/prometheus/query?query=up');
like($out, qr/deny: client_unknown/, 'explain: an unknown token is refused');

# routes
($rc, $out) = run('', 'routes', $example);
is($rc, 0, 'routes exits 0');
like($out, qr/github-pull-request\s+POST\s+\/github\/pull-request/,
     'routes lists the pull request route');

# diff
($rc, $out) = run('', 'diff', $example, $example);
is($rc, 0, 'diff of a policy with itself exits 0');
is($out, '', 'and prints nothing');

(my $wider = do { local (@ARGV, $/) = $example; <> })
    =~ s/clients: \[agent\]\n    match: \{ method: POST/clients: [agent, tools]\n    match: { method: POST/;
my $wide = write_file('wide.yaml', $wider);
($rc, $out) = run('', 'diff', $example, $wide);
is($rc, 1, 'diff exits 1 when the new policy grants more');
like($out, qr/^\+ route github-pull-request: client tools added$/m,
     'diff names the grant');
($rc, $out) = run('', 'diff', $wide, $example);
is($rc, 0, 'diff exits 0 when the new policy only takes away');
like($out, qr/^- route github-pull-request: client tools removed$/m,
     'diff names the narrowing');

done_testing();
