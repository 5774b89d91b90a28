#!/usr/bin/perl

# Ordered fallback: an llm entry whose provider answers 429 or 503, or
# refuses connections, hands the call to its "fallback" entry, which gets
# its own URI, key and model (by alias), and the client gets that answer
# alone: never the first provider's key or body.  A stream that failed
# after its header was sent is not sent again.  The budget is charged
# once, with what the provider that served reports, and the usage line
# says which entry served and that a fallback happened.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $entries = <<'Y';
  - name: primary
    prefix: /v1/proxy/primary
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini, gpt-4o]
    aliases: { fast: gpt-4o-mini }
    fallback: backup
    clients:
      agent: {}
      tight: { tokens_per_day: 100000, max_tokens: 20, over_max_tokens: clamp }
      worker: { max_concurrent_requests: 1 }
  - name: dead
    prefix: /v1/proxy/dead
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8084%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    aliases: { fast: gpt-4o-mini }
    fallback: backup
    clients:
      agent: {}
  - name: quiet
    prefix: /v1/proxy/quiet
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    aliases: { fast: gpt-4o-mini }
    include_usage: false
    fallback: backup
    clients:
      agent: {}
  - name: backup
    prefix: /v1/proxy/backup
    max_body_bytes: 65536
    provider: openai-compatible
    upstream: "http://127.0.0.1:%%PORT_8083%%/v1"
    secret: anthropic_key
    models: [llama3.1:8b]
    aliases: { fast: llama3.1:8b, gpt-4o-mini: llama3.1:8b }
    clients:
      agent: {}
      tight: {}
      worker: {}
Y

my $locations = Airlock::LLM::fallback_locations(
    names => [qw(primary dead quiet)],
    read_timeout => '10s', fallback_read_timeout => '10s');

$l->setup(openai_clients => $entries, locations => $locations);
$l->start_provider(8083);
$t->run;

plan tests => 61;

# the scripted providers: 8081 primary, 8083 backup
sub on { $l->on_provider(@_) }

sub requests { my ($port) = @_; return on($port, sub { $l->provider_requests }) }

sub call {
    my ($name, %o) = @_;
    return $l->request('POST', "/v1/proxy/$name/chat/completions",
                       token => $l->token($o{client} // 'agent'), body => {
                           model => $o{model} // 'fast',
                           messages => [ { role => 'user', content => 'Hi' } ],
                           %{$o{fields} // {}},
                       });
}

sub usage_of {
    my ($r) = @_;
    my ($id) = ($r->{raw} =~ /^x-request-id: (\S+)\r?$/mi);
    my $deadline = time + 30;
    while (time < $deadline) {
        my ($u) = grep { $_->{request_id} eq ($id // '') } $l->usage_log;
        return $u if $u;
        select(undef, undef, undef, 0.05);
    }
    return {};
}

# 429: the backup answers

on(8081, sub { $l->script({ status => 429, echo_auth => 1, echo_b64 => 1 }) });
my $r = call('primary');
on(8081, sub { $l->script() });

is($r->{status}, 200, '429: the client gets the fallback\'s answer');
is($r->{json}{choices}[0]{message}{content}, 'Hello from fixture',
   '429: its text');
is($r->{json}{model}, 'llama3.1:8b', '429: the answer names the real model');
unlike($r->{raw}, qr/fixture error/, '429: nothing of the first body');
is(Airlock::LLM::leaks($r->{raw}), 0, '429: no key of either provider');

my @p = requests(8081);
my @b = requests(8083);
is(scalar @p, 1, '429: the primary was asked once');
is(scalar @b, 1, '429: the backup was asked once');
is($b[0]{path}, '/v1/chat/completions', 'the backup: its own URI');
is($b[0]{body}{model}, 'llama3.1:8b', 'the backup: its model for the alias');
is($b[0]{headers}{authorization}, "Bearer $Airlock::LLM::ANTHROPIC_KEY",
   'the backup: its own key');
is_deeply($b[0]{body}{messages}, [ { role => 'user', content => 'Hi' } ],
          'the backup: the same messages');
is($p[0]{headers}{authorization}, "Bearer $Airlock::LLM::OPENAI_KEY",
   'the primary had its own key');

my $u = usage_of($r);
is($u->{provider}, 'backup', 'usage line: the backup served');
is($u->{fallback_from}, 'primary', 'usage line: it fell back from primary');
is($u->{fallback_status}, 429, 'usage line: after a 429');
is($u->{model}, 'llama3.1:8b', 'usage line: the model served');
is($u->{alias}, 'fast', 'usage line: the alias asked for');
is($u->{total_tokens}, 14, 'usage line: the backup\'s usage');

# 503

on(8081, sub { $l->script({ status => 503 }) });
$r = call('primary');
on(8081, sub { $l->script() });
is($r->{status}, 200, '503: the fallback answers');
is(usage_of($r)->{fallback_status}, 503, '503: in the usage line');

# no connection at all

$r = call('dead');
is($r->{status}, 200, 'connection refused: the fallback answers');
$u = usage_of($r);
ok($u->{provider} eq 'backup' && $u->{fallback_from} eq 'dead'
   && $u->{fallback_status} == 502, 'connection refused: the usage line');

# a stream that failed after its header: not sent again

my $nb = () = requests(8083);
on(8081, sub { $l->script({ cut_after => 2 }) });
$r = call('primary', fields => { stream => JSON::PP::true });
on(8081, sub { $l->script() });
like($r->{raw}, qr/^HTTP\/1\.1 200/, 'a stream cut mid-way: its 200 went out');
my $nb2 = () = requests(8083);
is($nb2, $nb, 'a stream cut mid-way: not sent to the fallback');
ok(!exists usage_of($r)->{fallback_from},
   'a stream cut mid-way: no fallback in the usage line');

# a stream refused before it started falls back, and streams from there

on(8081, sub { $l->script({ status => 429 }) });
$r = call('primary', fields => { stream => JSON::PP::true });
on(8081, sub { $l->script() });
is($r->{status}, 200, 'a stream refused with 429: the fallback streams');
like($r->{body}, qr/data: \[DONE\]/, '... to its end');
like($r->{body}, qr/"model": ?"llama3\.1:8b"/, "... from the backup");

# a stream from an entry that does not ask for usage, to a backup that
# does: the usage chunk the backup's check asked for is hidden, as the
# first entry's would be, and accounted

on(8081, sub { $l->script({ status => 429 }) });
$r = call('quiet', fields => { stream => JSON::PP::true });
on(8081, sub { $l->script() });
is($r->{status}, 200, 'a stream to a backup that asks for usage: 200');
my @breq = on(8083, sub { $l->provider_requests });
is_deeply($breq[-1]{body}{stream_options}, { include_usage => JSON::PP::true },
          '... the backup was asked for the usage chunk');
like($r->{body}, qr/data: \[DONE\]/, '... the stream to its end');
unlike($r->{body}, qr/"prompt_tokens"/, '... the usage chunk hidden');
$u = usage_of($r);
ok($u->{provider} eq 'backup' && $u->{usage_source} eq 'stream',
   '... and its usage accounted');

# both fail: the client gets the backup's answer as it is

on(8081, sub { $l->script({ status => 503 }) });
on(8083, sub { $l->script({ status => 503, echo_auth => 1 }) });
$r = call('primary');
on(8081, sub { $l->script() });
on(8083, sub { $l->script() });
is($r->{status}, 503, 'both fail: the backup\'s status');
is(Airlock::LLM::leaks($r->{raw}), 0, 'both fail: no key in the answer');
is(usage_of($r)->{fallback_from}, 'primary',
   'both fail: the usage line names the fallback');

# a model the backup does not serve: no fallback, the first status

$nb = () = requests(8083);
on(8081, sub { $l->script({ status => 503, echo_auth => 1 }) });
$r = call('primary', model => 'gpt-4o');
on(8081, sub { $l->script() });
is($r->{status}, 503, 'no fallback for the model: the first status');
is($r->{json}{error}{type}, 'server_error',
   'no fallback: an OpenAI-style error body');
unlike($r->{raw}, qr/fixture error/, 'no fallback: not the first body');
is(Airlock::LLM::leaks($r->{raw}), 0, 'no fallback: no key');
$nb2 = () = requests(8083);
is($nb2, $nb, 'no fallback: the backup was not asked');

# its x-request-id is the gateway's, once; the provider gave none, so
# there is no x-provider-request-id (the gateway's own id, renamed as if
# the provider's, was one)

my @ids = $r->{raw} =~ /^x-request-id: (\S+)\r?$/mgi;
is(scalar @ids, 1, 'no fallback: one x-request-id');
unlike($r->{raw}, qr/^x-provider-request-id:/mi,
       'no fallback: no x-provider-request-id');
like($r->{json}{error}{message}, qr/\(request id \Q$ids[0]\E\)/,
     'no fallback: the body names the x-request-id');

# the model the first entry checked, written with an escape: the backup
# would get it as it is (not the model its alias names), so no fallback

$nb = () = requests(8083);
on(8081, sub { $l->script({ status => 503 }) });
$r = $l->request('POST', '/v1/proxy/primary/chat/completions',
                 token => $l->token('agent'),
                 body => '{"model":"gpt-4o-min\u0069","messages":[]}');
on(8081, sub { $l->script() });
is($r->{status}, 503, 'an escaped model: no fallback, the first status');
$nb2 = () = requests(8083);
is($nb2, $nb, 'an escaped model: the backup was not asked');
$r = call('primary', model => 'gpt-4o-mini', fields => {});
is($r->{status}, 200, 'the same model unescaped: answered');

# 4xx other than 429: the provider's own answer

on(8081, sub { $l->script({ status => 400 }) });
$r = call('primary');
on(8081, sub { $l->script() });
is($r->{status}, 400, 'a 400 is the client\'s to see');
like($r->{body}, qr/fixture error 400/, '... with the provider\'s body');

# the budget is charged once, with the backup's usage

on(8083, sub { $l->script({ usage => { prompt => 50, completion => 7 } }) });
on(8081, sub { $l->script({ status => 503 }) });
my $r1 = call('primary', client => 'tight');
on(8081, sub { $l->script() });
on(8083, sub { $l->script() });
my $r2 = call('primary', client => 'tight');

my ($rem1) = $r1->{raw} =~ /^x-ratelimit-remaining-tokens: (\d+)/mi;
my ($rem2) = $r2->{raw} =~ /^x-ratelimit-remaining-tokens: (\d+)/mi;
my ($rst1) = $r1->{raw} =~ /^x-ratelimit-reset-tokens: (\d+)/mi;
my ($rst2) = $r2->{raw} =~ /^x-ratelimit-reset-tokens: (\d+)/mi;
is(usage_of($r1)->{total_tokens}, 57, 'budget: the backup\'s usage recorded');

# the first entry (openai) capped the call in max_completion_tokens only;
# the openai-compatible backup reads max_tokens, and gets the cap there
# too (the tight client's 20)

@breq = on(8083, sub { $l->provider_requests });
is_deeply([@{$breq[-1]{body}}{qw(max_completion_tokens max_tokens)}],
          [20, 20], 'an openai-compatible backup gets the cap in max_tokens');

SKIP: {
    skip 'the UTC day rolled between the two calls', 1
        if !defined $rst2 || !defined $rst1 || $rst2 > $rst1;
    is($rem1 - $rem2, 57,
       'budget: charged once, with the usage of the provider that served');
}

# a call that fell back gives its place back: one request in flight at a
# time, three calls in a row, each through the fallback

on(8081, sub { $l->script({ status => 503 }) });
for my $n (1 .. 3) {
    $r = call('primary', client => 'worker');
    is($r->{status}, 200, "in flight: call $n after a fallback is admitted");
}
on(8081, sub { $l->script() });

# nginx -t: a gateway location of an entry with a fallback that does not
# intercept the provider's errors gets a warning

my $conf = $t->read_file('nginx.conf');
my ($status, $out) = $t->reload_test;
is($status, 0, 'nginx -t: the configuration of this test passes');
unlike($out, qr/does not intercept/, 'nginx -t: no warning with intercepts');

(my $plain = $conf) =~ s/proxy_intercept_errors on;//;
$t->write_file('nginx.conf', $plain);
($status, $out) = $t->reload_test;
$t->write_file('nginx.conf', $conf);
is($status, 0, 'nginx -t: without the intercept it still passes');
like($out, qr/\[warn\].*llm "primary" has the fallback "backup", but location "\/v1\/proxy\/primary\/" does not intercept/,
     'nginx -t: and warns that calls there never fall back');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
my $log = $t->read_file('error.log') // '';
like($log, qr/llm "primary" failed with 429, the call goes to its fallback "backup"/,
     'the error log says why a call fell back');
