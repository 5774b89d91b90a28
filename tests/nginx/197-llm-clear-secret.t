#!/usr/bin/perl

# ngx_http_airlock_llm_module: an llm entry sends its provider key over
# http:// only to this host, unless the entry (or the upstream it names)
# says allow_insecure_http: true.  "nginx -t" and a reload refuse, in one
# line naming the entry and the fix, an address of another host, a host
# name with a port, a name that is no upstream block and a block with a
# server that is not on this host, by url or through a named upstream.  A
# loopback address, a block of loopback servers (the gateway's bound
# blocks) and allow_insecure_http: true load; a refused reload keeps the
# old policy serving.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(block => 1);

my $base = $t->read_file('policy.yaml');

# the policy with the openai entry's upstream replaced (the anthropic one
# keeps the loopback block), its fields added, and upstreams given
sub policy {
    my ($up, $fields, $upstreams) = @_;
    my $y = $base;
    $y =~ s{(name: openai\n(?:.*\n)*?    upstream: )"[^"]*"}{$1"$up"}
        or die 'no openai upstream';
    $y =~ s{(    secret: openai_key\n)}{$1    $fields\n} if $fields;
    $y =~ s{^llm:\n}{upstreams:\n$upstreams\nllm:\n}m if $upstreams;
    return $y;
}

sub conf_test {
    my ($up, $http, $fields, $upstreams) = @_;
    $t->write_file_expand('policy.yaml', policy($up, $fields, $upstreams));
    $t->write_file_expand('nginx.conf', $l->conf(block => 1,
                                                 http => $http // ''));
    my ($rc, $out) = $t->reload_test;
    return ($rc, $out // '');
}

my @refused = (
    # name, upstream, http-level lines, upstreams, message
    [ 'an address of another host', 'http://192.0.2.7:8080/v1', '', '',
      qr/llm "openai" sends its secret over http:\/\/ to "192\.0\.2\.7", not this host: .*set allow_insecure_http: true on llm "openai"/ ],
    [ 'a host name with a port', 'http://llm.example:8080/v1', '', '',
      qr/llm "openai" sends its secret over http:\/\/ to "llm\.example:8080", a host name with a port/ ],
    [ 'a name that is no upstream block', 'http://llm.example/v1', '', '',
      qr/airlock: llm "openai" \(\S+policy\.yaml line \d+\) sends its secret over http:\/\/ to "llm\.example", which is neither this host nor an upstream block: the credential would cross the network in clear; .*or set allow_insecure_http: true on llm "openai" in \S+nginx\.conf:\d+/ ],
    [ 'a block with a server of another host', 'http://farllm/v1',
      "upstream farllm {\n        server 192.0.2.7:8080;\n"
      . "        server 127.0.0.1:%%PORT_8081%%;\n    }", '',
      qr/llm "openai" .*to "farllm", an upstream block with a server not on this host \("192\.0\.2\.7:8080"\)/ ],
    [ 'a named upstream of a name that is no block', 'prov', '',
      '  prov: { url: "http://llm.example/v1" }',
      qr/llm "openai" .*to "llm\.example", which is neither this host nor an upstream block/ ],
);

my @loaded = (
    [ 'a loopback address', 'http://127.0.0.1:%%PORT_8081%%/v1' ],
    [ 'a block of loopback servers', 'http://llmprovider/v1' ],
    [ 'a name with allow_insecure_http: true', 'http://llm.example/v1', '',
      'allow_insecure_http: true' ],
    [ 'a named upstream with allow_insecure_http: true', 'prov', '', '',
      '  prov: { url: "http://llm.example/v1", allow_insecure_http: true }' ],
    [ 'a named upstream, allowed on the entry', 'prov', '',
      'allow_insecure_http: true', '  prov: { url: "http://llm.example/v1" }' ],
);

plan tests => 2 * @refused + @loaded + 4;

for my $c (@refused) {
    my ($name, $up, $http, $upstreams, $re) = @$c;
    my ($rc, $out) = conf_test($up, $http, '', $upstreams);
    isnt($rc, 0, "$name: nginx -t fails");
    like($out, $re, "$name: the error names the entry and the fix")
        or diag($out);
}

for my $c (@loaded) {
    my ($name, $up, $http, $fields, $upstreams) = @$c;
    my ($rc, $out) = conf_test($up, $http, $fields, $upstreams);
    is($rc, 0, "$name: loads") or diag($out);
}

# running on the loopback block; a reload to a block with a server
# elsewhere is refused, and the old policy answers

$t->write_file_expand('policy.yaml', $base);
$t->write_file_expand('nginx.conf', $l->conf(block => 1));
$t->run;

my $r = $l->chat(token => $l->token('agent'));
is($r->{status}, 200, 'a block of loopback servers: answered');

$t->write_file_expand('policy.yaml', policy('http://farllm/v1'));
$t->write_file_expand('nginx.conf', $l->conf(block => 1, http =>
    "upstream farllm {\n        server 192.0.2.7:8080;\n    }"));
my ($ok, $why) = $t->reload(allow_fail => 1);
ok(!$ok && $why =~ /to "farllm", an upstream block with a server not on this host/,
   'reload to a block with a server elsewhere: refused') or diag($why);

$r = $l->chat(token => $l->token('agent'));
is($r->{status}, 200, 'refused reload: the old configuration answers');

is($t->error_log_check(qr/an upstream block with a server not on this host/),
   '', 'no alerts');
