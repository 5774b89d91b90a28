#!/usr/bin/perl
# A secret goes over http:// only to this host (docs/policy.md,
# upstreams): check refuses, as nginx does, a route that injects a secret
# or an llm entry whose http:// upstream is an address of another host or
# a host name with a port (localhost too: nginx asks its resolver for it
# per request, whose answer anyone on the path may forge); it passes
# 127.0.0.0/8 and ::1; a host name without a port (localhost too) is an
# nginx upstream block or nothing, which check cannot see: a warning,
# exit 0.  allow_insecure_http: true on the
# upstream or the llm entry passes any of them, and check, explain and
# diff show it; a route that injects no secret is not held to the rule.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

# URL: upstream "api"; INJECT: route a's header; FIELDS: more of "api";
# LLMURL: the llm entry's upstream; LLMFIELDS: more lines of the entry
my $policy = <<'Y';
version: 1
clients:
  agent: { unix_uid: 1000 }
secrets:
  ta: { sealed: "c2VhbGVk" }
  key: { sealed: "b3RoZXI=" }
upstreams:
  api: { url: "URL"FIELDS }
  far: { url: "http://192.0.2.9:8080" }
routes:
  - name: a
    clients: [agent]
    match: { method: GET, path: /a }
    upstream: api
    to: /a
    inject: { Authorization: INJECT }
  - name: constant
    clients: [agent]
    match: { method: GET, path: /c }
    upstream: far
    to: /c
    inject: { Accept: application/json }
llm:
  - name: oa
    prefix: /v1/proxy/oa
    provider: openai
    upstream: LLMURL
    secret: key
    models: [m1]
LLMFIELDS    clients:
      agent: {}
alerts:
  deny: { threshold: 3, window: 60s }
Y

sub policy {
    my (%o) = @_;
    (my $text = $policy) =~ s/URL"/($o{url} \/\/ 'http:\/\/127.0.0.1:9200') . '"'/e;
    my $fields = $o{fields} ? ", $o{fields}" : '';
    $text =~ s/FIELDS/$fields/;
    $text =~ s/INJECT/$o{inject} \/\/ '"Bearer {ta}"'/e;
    $text =~ s/LLMURL/$o{llm} \/\/ 'https:\/\/api.openai.com\/v1'/e;
    my $lf = $o{llm_fields} ? "    $o{llm_fields}\n" : '';
    $text =~ s/LLMFIELDS/$lf/;
    return $text;
}

my ($rc, $out, $f);

# refused as nginx refuses them, at the upstream the route or entry names

my @refused = (
    [ 'an address of another host', { url => 'http://192.0.2.7:8080' },
      qr/:14:15: route "a" sends a secret to upstream "api" over http:\/\/ (?x)
         to\ "192\.0\.2\.7",\ not\ this\ host:\ the\ credential\ would\ cross
         \ the\ network\ in\ clear;\ use\ https:\/\/,\ or\ set
         \ allow_insecure_http:\ true\ on\ upstream\ "api"$/m ],
    [ 'an IPv6 address of another host', { url => 'http://[2001:db8::9]' },
      qr/to "\[2001:db8::9\]", not this host/ ],
    [ 'localhost with a port', { url => 'http://localhost:9200' },
      qr/over http:\/\/ to "localhost:9200", a host name with a port/ ],
    [ 'a host name with a port', { url => 'http://api.example:8080' },
      qr/:14:15: route "a" .* to "api\.example:8080", a host name with a (?x)
         port,\ which\ nginx\ looks\ up\ in\ DNS/m ],
    [ 'an llm entry to another host', { llm => 'http://192.0.2.7/v1' },
      qr/:27:15: llm "oa" sends its secret over http:\/\/ to "192\.0\.2\.7", (?x)
         not\ this\ host:\ .*allow_insecure_http:\ true\ on\ llm\ "oa"$/m ],
    [ 'an llm entry naming an upstream of another host', { llm => 'api',
      url => 'http://192.0.2.7:8080', inject => 'application/json' },
      qr/llm "oa" sends its secret over http:\/\/ to "192\.0\.2\.7"/ ],
);

for my $c (@refused) {
    my ($name, $o, $re) = @$c;
    $f = write_file('refused.yaml', policy(%$o));
    ($rc, $out) = run_ctl('check', $f);
    ok($rc == 1 && $out =~ $re, "check: $name: refused, naming the fix")
        or diag($out);
}

for my $url ('http://127.0.0.1:9200', 'http://127.9.8.7', 'http://[::1]:81',
             'https://api.example')
{
    $f = write_file('local.yaml', policy(url => $url));
    ($rc, $out) = run_ctl('check', $f);
    ok($rc == 0 && $out !~ /warning|clear/, "check: $url: ok, no warning")
        or diag($out);
}

# a name without a port: nginx's upstream block, or refused at its load

$f = write_file('name.yaml', policy(url => 'http://backend'));
($rc, $out) = run_ctl('check', $f);
my $warn = 'warning: route "a" (line 11) sends a secret to upstream "api" '
    . 'over http:// to "backend": nginx loads this policy only if it has an '
    . 'upstream block "backend" whose servers are all on this host '
    . '(loopback addresses or unix sockets), checked when it loads; '
    . 'otherwise use https://, or set allow_insecure_http: true on '
    . 'upstream "api"';
ok($rc == 0 && $out =~ /^\Q$f\E: ok \(/m && $out =~ /^\Q$warn\E$/m,
   'check: a host name: a warning, exit 0') or diag($out);

$f = write_file('localhost.yaml', policy(url => 'http://LocalHost'));
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out =~ /^warning: route "a" \(line 11\) sends a secret (?x)
                       to\ upstream\ "api"\ over\ http:\/\/\ to
                       \ "LocalHost":\ nginx\ loads/m,
   'check: localhost without a port: a name, a warning, exit 0')
    or diag($out);

$f = write_file('llmname.yaml', policy(llm => 'http://llmblock/v1'));
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out =~ /^warning: llm "oa" \(line \d+\) sends its secret (?x)
                       over\ http:\/\/\ to\ "llmblock":\ nginx\ loads/m,
   'check: an llm entry to a host name: a warning, exit 0') or diag($out);

$f = write_file('trailing.yaml', policy(url => 'http://127.0.0.1.'));
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out =~ /^warning: .* to "127\.0\.0\.1\.": nginx loads/m,
   'check: a trailing dot makes a name') or diag($out);

# no secret: not held to it (route "constant" goes to 192.0.2.9 already)

$f = write_file('constant.yaml', policy(url => 'http://192.0.2.7',
                                        inject => 'application/json'));
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out !~ /warning|clear/,
   'check: routes that inject no secret: ok') or diag($out);

# allow_insecure_http: true

$f = write_file('optin.yaml', policy(url => 'http://192.0.2.7:8080',
                                     fields => 'allow_insecure_http: true'));
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out =~ /^route "a" \(line 11\) sends a secret to upstream (?x)
                       "api"\ over\ http:\/\/\ to\ "192\.0\.2\.7:8080",
                       \ in\ clear:\ allow_insecure_http:\ true$/m,
   'check: allow_insecure_http: true on the upstream: ok, and said')
    or diag($out);

$f = write_file('optout.yaml', policy(url => 'http://192.0.2.7:8080',
                                      fields => 'allow_insecure_http: false'));
($rc, $out) = run_ctl('check', $f);
is($rc, 1, 'check: allow_insecure_http: false: refused as without it');

$f = write_file('word.yaml', policy(url => 'http://192.0.2.7:8080',
                                    fields => 'allow_insecure_http: "yes"'));
($rc, $out) = run_ctl('check', $f);
ok($rc == 1 && $out =~ /allow_insecure_http must be true or false/,
   'check: allow_insecure_http: "yes": refused') or diag($out);

my $llm_optin = write_file('llmoptin.yaml',
    policy(llm => 'http://192.0.2.7/v1',
           llm_fields => 'allow_insecure_http: true'));
($rc, $out) = run_ctl('check', $llm_optin);
ok($rc == 0 && $out =~ /^llm "oa" \(line 24\) sends its secret over (?x)
                       http:\/\/\ to\ "192\.0\.2\.7",\ in\ clear/m,
   'check: allow_insecure_http: true on the llm entry: ok, and said')
    or diag($out);

$f = write_file('llmnamed.yaml', policy(llm => 'api',
    url => 'http://192.0.2.7:8080', inject => 'application/json',
    fields => 'allow_insecure_http: true'));
($rc, $out) = run_ctl('check', $f);
is($rc, 0, 'check: an llm entry naming an upstream that allows it: ok')
    or diag($out);

# explain

($rc, $out) = run_ctl('explain', "$dir/optin.yaml", '--client', 'agent',
                      'GET', '/a');
ok($rc == 0 && $out =~ /^  clear:    the secret goes over http:\/\/ to (?x)
                       192\.0\.2\.7:8080\ without\ TLS
                       \ \(allow_insecure_http:\ true\)$/m,
   'explain: the route says its secret goes in clear') or diag($out);

($rc, $out) = run_ctl('explain', $llm_optin, '--client', 'agent', 'GET',
                      '/v1/proxy/oa/models');
ok($rc == 0 && $out =~ /^  clear:    the secret goes over http:\/\/ to (?x)
                       192\.0\.2\.7\ without\ TLS/m,
   'explain: the llm entry says its secret goes in clear') or diag($out);

$f = write_file('plain.yaml', policy());
($rc, $out) = run_ctl('explain', $f, '--client', 'agent', 'GET', '/a');
ok($rc == 0 && $out !~ /clear:/, 'explain: a local upstream: not said')
    or diag($out);

# diff

my $old = write_file('old.yaml', policy(url => 'http://127.0.0.1:9200'));
my $new = write_file('new.yaml', policy(url => 'http://127.0.0.1:9200',
                                        fields => 'allow_insecure_http: true'));
($rc, $out) = run_ctl('diff', $old, $new);
ok($rc == 1 && $out =~ /^\+ upstream api: allow_insecure_http false -> true$/m,
   'diff: allow_insecure_http on an upstream is a grant') or diag($out);
($rc, $out) = run_ctl('diff', $new, $old);
ok($rc == 0 && $out =~ /^- upstream api: allow_insecure_http true -> false$/m,
   'diff: and off again takes away') or diag($out);

$old = write_file('llmold.yaml', policy(llm => 'http://127.0.0.1:9300/v1'));
$new = write_file('llmnew.yaml', policy(llm => 'http://127.0.0.1:9300/v1',
    llm_fields => 'allow_insecure_http: true'));
($rc, $out) = run_ctl('diff', $old, $new);
ok($rc == 1 && $out =~ /^\+ llm oa: allow_insecure_http false -> true$/m,
   'diff: allow_insecure_http on an llm entry is a grant') or diag($out);

# a route moved to a new upstream of the same url that allows it
(my $moved = policy(url => 'http://127.0.0.1:9200'))
    =~ s/(  far: )/  api2: { url: "http:\/\/127.0.0.1:9200", allow_insecure_http: true }\n$1/;
$moved =~ s/upstream: api\n/upstream: api2\n/;
$new = write_file('moved.yaml', $moved);
($rc, $out) = run_ctl('diff', $old = write_file('base.yaml', policy()), $new);
ok($rc == 1 && $out =~ /^\+ upstream api2 added \(http:\/\/127\.0\.0\.1:9200, (?x)
                       allow_insecure_http:\ true\)$/m
   && $out =~ /^\+ route a: upstream api2 allow_insecure_http false -> true$/m,
   'diff: a route moved to an upstream of the same url that allows it')
    or diag($out);

done_testing();
