#!/usr/bin/perl

# ngx_http_airlock_llm_module: nginx's own retry to the next server of an
# entry's upstream (proxy_next_upstream) never sends a call its provider
# was sent again.  Such a retry drops the first answer, an error that
# may carry the usage the provider billed, or there was none (the
# connection lost after the call went): the call would be settled with
# the last server's usage alone, and a budget overspent.  nginx resends a
# POST, every call the gateway charges, only with "non_idempotent" among
# the conditions, so "nginx -t" refuses that in a gateway location, in
# the fallback's, and in a location of named routes an error_page may
# lead a gateway call to, here or inherited, when the policy has LLM
# entries (one without them keeps it); the gateway's fallback sends a
# failed call again and charges each attempt.  Without it, with two real
# servers in the block: a 500 that carries usage reaches the client and
# is charged, and a server that resets the connection after reading the
# call gives a 502 charged the call's reservation, the other server never
# asked.  Before, nginx -t let "non_idempotent" pass, and a 500 with usage
# sent again to the second server was charged once.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $entries = <<'Y';
  - name: pair
    prefix: /v1/proxy/pair
    max_body_bytes: 65536
    provider: openai
    upstream: "http://llmpair/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    fallback: backup
    clients:
      agent: { max_tokens: 50, over_max_tokens: clamp }
  - name: backup
    prefix: /v1/proxy/backup
    max_body_bytes: 65536
    provider: openai-compatible
    upstream: "http://127.0.0.1:%%PORT_8085%%/v1"
    secret: anthropic_key
    models: [gpt-4o-mini]
    clients:
      agent: {}
Y

my $http = <<'H';
    upstream llmpair {
        server 127.0.0.1:%%PORT_8081%%;
        server 127.0.0.1:%%PORT_8083%%;
    }
H

# NEXT: the pair location's proxy_next_upstream; FB: the fallback's
my $locations = <<'L';
        location /v1/proxy/pair/ {
            airlock_llm pair;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 10s;
            NEXT
        }

        location @airlock_llm_fallback {
            airlock_llm_fallback;

            %%AIRLOCK_LOCATION%%

            FB
        }
L

sub conf {
    my (%o) = @_;
    my $locs = $locations;
    $locs =~ s/NEXT/$o{next} \/\/ ''/e;
    $locs =~ s/FB/$o{fb} \/\/ ''/e;
    $locs .= $o{more} // '';
    return $l->conf(openai_clients => $entries, locations => $locs,
                    http => $http . ($o{http} // ''));
}

my $running = 'proxy_next_upstream error timeout http_500 http_502 '
            . 'http_503 http_429;';

$l->setup(openai_clients => $entries, locations => '', http => $http);
$t->write_file_expand('nginx.conf', conf(next => $running));
$l->start_provider(8083);
$l->start_provider(8085);
$t->run;

plan tests => 18;

# nginx -t

sub conf_test {
    $t->write_file_expand('nginx.conf', conf(@_));
    my ($rc, $out) = $t->reload_test;
    return ($rc, $out // '');
}

my $refused = join '', 'airlock location "([^"]+)" has ',
    '"proxy_next_upstream non_idempotent" \\(here or inherited\\): ',
    'nginx would send an LLM call its provider was sent to the next ',
    'server .*use the entry\'s "fallback", which charges each attempt';
$refused = qr/$refused/;

my ($rc, $out) = conf_test(next => 'proxy_next_upstream error timeout '
                                   . 'http_500 non_idempotent;');
isnt($rc, 0, 'non_idempotent in a gateway location: nginx -t fails');
like($out, $refused, '... naming it and the fallback');
is(($out =~ $refused)[0], '/v1/proxy/pair/', '... in that location');

($rc, $out) = conf_test(fb => 'proxy_next_upstream non_idempotent error;');
isnt($rc, 0, 'non_idempotent in the fallback location: nginx -t fails');
is(($out =~ $refused)[0], '@airlock_llm_fallback', '... naming it')
    or diag($out);

($rc, $out) = conf_test(http => 'proxy_next_upstream error timeout '
                                . 'non_idempotent;');
isnt($rc, 0, 'non_idempotent inherited from the http level: nginx -t '
     . 'fails');
like($out, $refused, '... naming it') or diag($out);

($rc, $out) = conf_test(more => <<'L');
        location / {
            airlock on;

            %%AIRLOCK_LOCATION%%

            proxy_next_upstream error non_idempotent;
        }
L
isnt($rc, 0, 'non_idempotent in a location of named routes, the policy '
     . 'with LLM entries: nginx -t fails');
is(($out =~ $refused)[0], '/', '... naming it') or diag($out);

# a policy of named routes alone: nothing to charge, it passes
$t->write_file_expand('routes.yaml', <<'Y');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: v1
    clients: [local]
    match: { method: POST, path: /x/v1 }
    upstream: echo
    to: /one
    body: { max_bytes: 256 }
alerts:
  deny: { threshold: 1000, window: 60s }
Y
$t->write_file_expand('nginx.conf', $l->proxy->conf(
    policy => 'routes.yaml', key => $l->{key},
    location => 'proxy_next_upstream error non_idempotent;'));
($rc, $out) = $t->reload_test;
is($rc, 0, 'a policy without LLM entries: non_idempotent passes')
    or diag($out);

($rc, $out) = conf_test(next => $running);
is($rc, 0, 'the other conditions pass') or diag($out);

($rc, $out) = conf_test(next => 'proxy_next_upstream off;');
is($rc, 0, '"proxy_next_upstream off" passes') or diag($out);

$t->write_file_expand('nginx.conf', conf(next => $running));

# calls, with both servers of the block answering the same

sub on {
    my ($port, $code) = @_;
    local $l->{provider} = $port;
    return $code->();
}

sub both {
    my (@s) = @_;
    on($_, sub { $l->script(@s) }) for 8081, 8083;
}

sub asked {
    my $n = 0;
    $n += () = on($_, sub { $l->provider_requests }) for 8081, 8083;
    return $n;
}

sub call {
    return $l->request('POST', '/v1/proxy/pair/chat/completions',
                       token => $l->token('agent'), body => {
                           model => 'gpt-4o-mini',
                           messages => [ { role => 'user',
                                           content => 'Hi' } ],
                       });
}

sub usage_of {
    my ($r) = @_;
    my ($id) = ($r->{raw} =~ /^x-request-id: (\S+)\r?$/mi);
    for (1 .. 100) {
        my ($u) = grep { $_->{request_id} eq ($id // '') } $l->usage_log;
        return $u if $u;
        select(undef, undef, undef, 0.05);
    }
    return {};
}

my $usage = '{"error":{"message":"FAKE upstream failure"},'
          . '"usage":{"prompt_tokens":300,"completion_tokens":700,'
          . '"total_tokens":1000}}';

my $before = asked();
both({ raw => [ "HTTP/1.1 500 Error\r\nContent-Type: application/json\r\n"
                . "Content-Length: " . length($usage) . "\r\n\r\n$usage" ] });
my $r = call();
both();
is($r->{status}, 500, 'a 500 with usage, http_500 listed: the client gets '
   . 'it');
is(asked() - $before, 1, '... one server asked: not sent again');
is(usage_of($r)->{total_tokens}, 1000, '... charged its usage')
    or diag(explain usage_of($r));

$before = asked();
both({ raw => [ '' ], reset => 1 });
$r = call();
both();
is($r->{status}, 502, 'a server that resets after reading the call: 502');
is(asked() - $before, 1, '... one server asked: not sent again');
my $u = usage_of($r);
ok(($u->{total_tokens} // 0) >= 50, '... charged the call\'s reservation')
    or diag(explain $u);

$t->stop;
