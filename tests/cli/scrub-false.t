#!/usr/bin/perl
# A route of "scrub: false" (docs/policy.md, scrub): check warns, and
# still passes the policy, when another route or an llm entry sends a
# secret to the same host and port; says nothing when none does, or when
# the policy has no secret to scrub; a route that injects a secret
# cannot say it; diff reports it as a grant.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

# LOGS_URL: the opted-out route's upstream; INJECT: route a's header
my $policy = <<'Y';
version: 1
clients:
  agent: { unix_uid: 1000 }
secrets:
  ta: { sealed: "c2VhbGVk" }
  key: { sealed: "b3RoZXI=" }
upstreams:
  api: { url: "http://127.0.0.1:9200/api" }
  raw: { url: "LOGS_URL" }
routes:
  - name: a
    clients: [agent]
    match: { method: GET, path: /a }
    upstream: api
    to: /a
    inject: { Authorization: INJECT }
  - name: raw-logs
    clients: [agent]
    match: { method: GET, path: /raw }
    upstream: raw
    to: /raw
    scrub: false
llm:
  - name: oa
    prefix: /v1/proxy/oa
    provider: openai
    upstream: https://api.openai.com/v1
    secret: key
    models: [m1]
    clients:
      agent: {}
alerts:
  deny: { threshold: 3, window: 60s }
Y

sub policy {
    my ($url, $inject) = @_;
    (my $text = $policy) =~ s/LOGS_URL/$url/;
    $text =~ s/INJECT/$inject/;
    return $text;
}

my ($rc, $out);

my $f = write_file('shared.yaml',
                   policy('http://127.0.0.1:9200/logs', '"Bearer {ta}"'));
($rc, $out) = run_ctl('check', $f);
my $warn = 'warning: route "raw-logs" (line 17) has scrub: false, but '
    . 'route "a" (line 11) sends a secret to its upstream 127.0.0.1:9200: '
    . 'its answers are not scrubbed of it';
ok($rc == 0 && $out =~ /^\Q$f\E: ok \(/m && $out =~ /^\Q$warn\E$/m,
   'check: another route sends a secret to the same host and port: '
   . 'a warning, exit 0') or diag($out);

# names without a port: nginx's upstream blocks (check only warns)
(my $p2 = $policy) =~ s/127\.0\.0\.1:9200\/api/backend/;
$p2 =~ s/LOGS_URL/http:\/\/BACKEND/;
$p2 =~ s/INJECT/"Bearer {ta}"/;
$f = write_file('upper.yaml', $p2);
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out =~ /^warning: route "raw-logs" .* route "a" /m,
   'check: the host compared without case') or diag($out);

$f = write_file('llm.yaml',
                policy('https://api.openai.com/files', 'application/json'));
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out =~ /^warning: route "raw-logs" \(line 17\) has scrub: (?x)
                        false,\ but\ llm\ entry\ "oa"\ \(line\ \d+\)\ sends
                        \ a\ secret\ to\ its\ upstream\ api\.openai\.com/m,
   'check: an llm entry sends a secret to the same host: a warning')
    or diag($out);

$f = write_file('port.yaml',
                policy('http://127.0.0.1:9201', '"Bearer {ta}"'));
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out !~ /warning/, 'check: another port: no warning')
    or diag($out);

$f = write_file('constant.yaml',
                policy('http://127.0.0.1:9200', 'application/json'));
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out !~ /warning/,
   'check: a constant header to the same upstream: no warning')
    or diag($out);

(my $nosecrets = policy('http://127.0.0.1:9200', 'application/json'))
    =~ s/secrets:\n.*\n.*\n//;
$nosecrets =~ s/llm:\n(?:  .*\n)+//;
$f = write_file('nosecrets.yaml', $nosecrets);
($rc, $out) = run_ctl('check', $f);
ok($rc == 0 && $out !~ /warning/, 'check: no secrets: no warning')
    or diag($out);

(my $self = $policy) =~ s/LOGS_URL/http:\/\/127.0.0.1:9300/;
$self =~ s/INJECT/"Bearer {ta}"/;
$self =~ s/(    to: \/raw\n)/$1    inject: { X-Key: "{ta}" }\n/;
$f = write_file('self.yaml', $self);
($rc, $out) = run_ctl('check', $f);
ok($rc == 1 && $out =~ /^\Q$f\E:23:12: route "raw-logs" injects a secret (?x)
                       in\ X-Key,\ so\ its\ answers\ are\ scrubbed/m,
   'check: scrub: false on a route that injects a secret: refused')
    or diag($out);

my $old = write_file('old.yaml', policy('http://127.0.0.1:9300',
                                        '"Bearer {ta}"'));
(my $on = $policy) =~ s/    scrub: false\n//;
$on =~ s/LOGS_URL/http:\/\/127.0.0.1:9300/;
$on =~ s/INJECT/"Bearer {ta}"/;
my $scrubbed = write_file('on.yaml', $on);
($rc, $out) = run_ctl('diff', $scrubbed, $old);
ok($rc == 1 && $out =~ /^\+ route raw-logs: answers not scrubbed (?x)
                       \(scrub:\ false\)$/m,
   'diff: scrub: false is a grant') or diag($out);
($rc, $out) = run_ctl('diff', $old, $scrubbed);
ok($rc == 0 && $out =~ /^- route raw-logs: answers scrubbed$/m,
   'diff: scrubbed again takes away') or diag($out);

done_testing();
