#!/usr/bin/perl
# airlockctl explain with a token and no peer: the proxy always has a
# peer (a unix socket's uid and gid, a TCP address) and refuses a token
# of one client from a peer of another, or a peer whose uid and gid name
# two; explain, told no peer or one id of it, decides for a peer whose
# part not given names no client and says so, naming the clients whose
# peer the proxy would refuse, on a named route and under an LLM prefix.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file);

my ($top, $build, $ctl, $dir) = ctl_setup();

# airlockctl with the token "test" on standard input: (exit code, stdout)
sub run {
    my $cmd = join ' ', map { quotemeta } $ctl, @_;
    my $out = `printf test | $cmd 2>&1`;
    return ($? >> 8, $out);
}

# sha256("test")
my $hash = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';

my $policy = write_file('peers.yaml', <<"Y");
version: 1
clients:
  agent: { unix_uid: 1000 }
  ops:   { unix_gid: 50, cidr: 192.168.0.0/16 }
  ci:    { cidr: 10.0.0.0/8 }
  tools: { token_sha256: "$hash", unix_uid: 3000 }
secrets:
  oa_key: { file: /run/credentials/nginx.service/airlock_oa_key }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: r
    clients: [agent, ops, ci, tools]
    match: { method: GET, path: /r }
    upstream: up
    to: /r
llm:
  - name: openai
    prefix: /v1/proxy/openai
    provider: openai
    upstream: https://api.openai.com/v1
    secret: oa_key
    models: [gpt-4o-mini]
    clients: { tools: {} }
alerts:
  deny: { threshold: 3, window: 60s }
Y

my ($rc, $out);

# what the proxy does from each peer, as explain says it given the peer
($rc, $out) = run('explain', $policy, '--token-stdin', '--uid', '1000',
                  '--gid', '1000', 'GET', '/r');
ok($rc == 1 && $out =~ /deny: client_unknown \(token and peer name/,
   'the token from the uid of agent: refused') or diag($out);
($rc, $out) = run('explain', $policy, '--token-stdin', '--addr', '10.1.2.3',
                  'GET', '/r');
ok($rc == 1 && $out =~ /deny: client_unknown/,
   'the token from an address of ci: refused') or diag($out);
($rc, $out) = run('explain', $policy, '--token-stdin', '--addr', '172.16.0.1',
                  'GET', '/r');
ok($rc == 0 && $out =~ /^client: tools$/m,
   'the token from an address no client has: tools') or diag($out);
unlike($out, qr/peer:/, 'a peer given: no peer line');

# no peer: the answer holds for a peer that names no client, and says so
($rc, $out) = run('explain', $policy, '--token-stdin', 'GET', '/r');
is($rc, 0, 'no peer: allowed, for a peer that names no client');
like($out, qr/^client: tools\n  peer: +not given .*names no client there/m,
     'no peer: said, under the client') or diag($out);
like($out, qr/refuses it \(client_unknown: token and peer name different/,
     'no peer: the refusal a peer of another client gets');
like($out, qr/agent \(unix_uid\)/, 'no peer: agent named, by its uid');
like($out, qr/ops \(unix_gid, cidr\)/, 'no peer: ops, by its gid and cidr');
like($out, qr/ci \(cidr\)/, 'no peer: ci, by its cidr');
unlike($out, qr/tools \(/, 'no peer: not the token\'s own client');

# under an LLM prefix, the same
($rc, $out) = run('explain', $policy, '--token-stdin', 'GET',
                  '/v1/proxy/openai/models');
ok($rc == 0 && $out =~ /peer: +not given.*agent \(unix_uid\)/,
   'no peer, an LLM prefix: said too') or diag($out);

# a unix peer given by one id: the other is taken to name no client, and
# the clients it could name are said, with or without a token
($rc, $out) = run('explain', $policy, '--uid', '1000', 'GET', '/r');
ok($rc == 0 && $out =~ /^client: agent$/m, '--uid alone: agent')
    or diag($out);
like($out, qr/peer: +no --gid given: .*more than one client\) from a peer of ops \(unix_gid\)$/m,
     '--uid alone: the gid not given, ops named by its gid') or diag($out);
($rc, $out) = run('explain', $policy, '--gid', '50', 'GET', '/r');
ok($rc == 0 && $out =~ /^client: ops$/m, '--gid alone: ops') or diag($out);
like($out, qr/peer: +no --uid given: .* from a peer of agent \(unix_uid\), tools \(unix_uid\)$/m,
     '--gid alone: the uid not given, agent and tools named by their uid')
    or diag($out);
($rc, $out) = run('explain', $policy, '--token-stdin', '--uid', '2000',
                  'GET', '/r');
like($out, qr/peer: +no --gid given: .*token and peer name different clients\) from a peer of ops \(unix_gid\)$/m,
     'a token and --uid alone: ops named by its gid') or diag($out);
# the token's own uid: a gid of ops makes the peer name two clients
($rc, $out) = run('explain', $policy, '--token-stdin', '--uid', '3000',
                  'GET', '/r');
like($out, qr/peer: +no --gid given: .*more than one client\) from a peer of ops \(unix_gid\)$/m,
     'a token and its own uid alone: ops named, the peer naming two')
    or diag($out);
($rc, $out) = run('explain', $policy, '--uid', '1000', '--gid', '1000', 'GET',
                  '/r');
ok($rc == 0 && $out !~ /peer:/, 'both ids: no peer line') or diag($out);

# a policy whose other clients have tokens only: no peer can name one
my $tokens = write_file('tokens.yaml', <<"Y");
version: 1
clients:
  tools: { token_sha256: "$hash" }
  other: { token_sha256: "${\ ('0' x 64)}" }
upstreams:
  up: { url: "http://127.0.0.1:9090" }
routes:
  - name: r
    clients: [tools]
    match: { method: GET, path: /r }
    upstream: up
    to: /r
alerts:
  deny: { threshold: 3, window: 60s }
Y
($rc, $out) = run('explain', $tokens, '--token-stdin', 'GET', '/r');
ok($rc == 0 && $out !~ /peer:/,
   'no other client has a peer identity: no peer line') or diag($out);

done_testing();
