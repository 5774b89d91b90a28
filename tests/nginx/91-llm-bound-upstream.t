#!/usr/bin/perl

# A gateway location whose llm entry names its provider by an upstream
# block is bound to that block when nginx loads the configuration: the
# proxy module takes the block from the configuration instead of building
# and parsing "$airlock_upstream$airlock_uri" on every call, and sends the
# route's target through r->unparsed_uri, set for the call only.  What
# the provider gets must not change: the target to the byte, through a
# retry to the block's next server, over TLS with the block's name as SNI
# and verified.  What the client and the logs see must not change either:
# $request_uri stays the client's, on answers, on errors raised while the
# proxy module runs, and through a fallback; also in an error_page of the
# operator's own when the block has no live server, an error nginx raises
# before the proxy handler returns.  An entry named by address and port
# stays on the per-call URL.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

Airlock::Prereq::need_cmd('openssl');

my $d = $t->testdir;

sub ssl {
    my ($cmd) = @_;
    system("openssl $cmd >>$d/openssl.log 2>&1") == 0
        or die "openssl $cmd failed: " . ($t->read_file('openssl.log') // '');
}

ssl("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=airlock-test-ca "
    . "-keyout $d/ca.key -out $d/ca.pem");
ssl("req -newkey rsa:2048 -nodes -subj /CN=llmprovider.test "
    . "-keyout $d/up.key -out $d/up.csr");
ssl("x509 -req -in $d/up.csr -CA $d/ca.pem -CAkey $d/ca.key "
    . "-CAcreateserial -days 2 -out $d/up.pem");

# direct: by address and port; retry: a block whose first server is
# dead; down (with a fallback) and gone: a block with no live server;
# dead: a block of two dead servers, which nginx marks down
my %upstream = (direct => 'http://127.0.0.1:%%PORT_8081%%/v1',
                retry => 'http://llmretry/v1', down => 'http://llmdown/v1',
                gone => 'http://llmdown/v1', dead => 'http://llmdead/v1');
my $entries = '';
for my $name (qw(direct retry down gone dead)) {
    my $fallback = $name eq 'down' ? "\n    fallback: direct" : '';
    $entries .= <<"Y";
  - name: $name
    prefix: /v1/proxy/$name
    max_body_bytes: 65536
    provider: openai
    upstream: "$upstream{$name}"
    secret: openai_key
    models: [gpt-4o-mini]$fallback
    clients:
      agent: {}
Y
}

my $ruri = 'access_log %%TESTDIR%%/ruri.log ruri;';
my $ca = 'proxy_ssl_trusted_certificate %%TESTDIR%%/ca.pem;';

my $locations = '';
for my $name (qw(direct retry down gone dead)) {
    my $fallback = $name eq 'down'
        ? "proxy_intercept_errors on;\n"
          . "            error_page 502 = \@airlock_llm_fallback;"
        : $name eq 'dead' ? 'error_page 502 = @dead;' : '';
    $locations .= <<"L";
        location /v1/proxy/$name/ {
            airlock_llm $name;

            %%AIRLOCK_LOCATION%%

            $ruri
            $fallback
        }
L
}
$locations .= <<"L";
        location \@dead {
            add_header X-Target \$request_uri always;
            return 502 "target \$request_uri\\n";
        }

        location \@airlock_llm_fallback {
            airlock_llm_fallback;

            %%AIRLOCK_LOCATION%%

            $ruri
        }
L

# %%PORT_8090%%: nothing listens there
my $http = <<'H';
    log_format ruri '$request_uri $status';
    log_format tls '$ssl_server_name $request_uri';

    upstream llmretry {
        server 127.0.0.1:%%PORT_8090%%;
        server 127.0.0.1:%%PORT_8081%%;
    }

    upstream llmdown {
        server 127.0.0.1:%%PORT_8090%%;
    }

    upstream llmdead {
        server 127.0.0.1:%%PORT_8090%%;
        server 127.0.0.1:%%PORT_8091%%;
    }

    upstream llmprovider.test {
        server 127.0.0.1:%%PORT_8443%%;
    }

    upstream wrong.test {
        server 127.0.0.1:%%PORT_8443%%;
    }

    server {
        listen 127.0.0.1:%%PORT_8443%% ssl;
        ssl_certificate %%TESTDIR%%/up.pem;
        ssl_certificate_key %%TESTDIR%%/up.key;
        access_log %%TESTDIR%%/tls.log tls;

        location / {
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
        }
    }
H

$l->setup(block => 1, openai_clients => $entries, locations => $locations,
          location => "$ruri\n$ca", http => $http);

# anthropic: over TLS, by the block named as the certificate is; a
# second entry reaches the same server by a name its certificate lacks
my $policy = $t->read_file('policy.yaml');
my $n = 0;
$policy =~ s{http://llmprovider/v1}{++$n == 2 ? 'https://llmprovider.test/v1'
                                              : 'http://llmprovider/v1'}ge;
$policy =~ s{(alerts:\n)}{  - name: wrong
    prefix: /v1/proxy/wrong
    max_body_bytes: 65536
    provider: anthropic
    upstream: "https://wrong.test/v1"
    secret: anthropic_key
    models: [claude-3-5-haiku]
    clients:
      agent: {}
$1};
$t->write_file('policy.yaml', $policy);

my $conf = $t->read_file('nginx.conf');
$conf =~ s{(\n\s*location /v1/proxy/gone/)}{
        location /v1/proxy/wrong/ {
            airlock_llm wrong;

            %%AIRLOCK_LOCATION%%

            $ca
        }
$1};
$t->write_file_expand('nginx.conf', $conf);

$t->run;

plan tests => 38;

my $agent = $l->token('agent');

sub call {
    my ($name, %o) = @_;
    return $l->request('POST', "/v1/proxy/$name/chat/completions",
                       token => $agent, body => {
                           model => 'gpt-4o-mini',
                           messages => [ { role => 'user', content => 'Hi' } ],
                       });
}

# what the provider got since the last look
my $seen = 0;
sub provider_new {
    my @r = $l->provider_requests;
    my @new = @r[$seen .. $#r];
    $seen = @r;
    return @new;
}

# the last line of ruri.log, once it is $want: nginx writes it after the
# answer went out
sub ruri_last {
    my ($want) = @_;
    my $last = '';
    for (1 .. 100) {
        my @l = split /\n/, ($t->read_file('ruri.log') // '');
        $last = $l[-1] // '';
        last if $last eq $want;
        select(undef, undef, undef, 0.05);
    }
    return $last;
}

sub ruri_is {
    my ($want, $name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    is(ruri_last($want), $want, $name);
}

# error.log's lines for calls sent through a bound location
sub bound_calls {
    my @m = (($t->read_file('error.log') // '')
             =~ /llm call to the upstream block "([^"]+)", target "([^"]+)"/g);
    my @pairs;
    push @pairs, [splice(@m, 0, 2)] while @m;
    return @pairs;
}

# ---- bound, over http -------------------------------------------------------

my $r = call('openai');
is($r->{status}, 200, 'bound: 200');
my @p = provider_new();
is(scalar @p, 1, 'bound: one request to the provider');
is($p[0]{path}, '/v1/chat/completions', 'bound: the route\'s target');
is($p[0]{headers}{host}, 'llmprovider', 'bound: Host is the block\'s name');
ruri_is('/v1/proxy/openai/chat/completions 200',
   'bound: $request_uri is still the client\'s');
is_deeply([bound_calls()], [['llmprovider', '/v1/chat/completions']],
          'bound: the call went the bound way');

# ---- by address and port: not bound -----------------------------------------

my $before = () = bound_calls();
$r = call('direct');
is($r->{status}, 200, 'address and port: 200');
@p = provider_new();
is($p[0]{path}, '/v1/chat/completions', 'address and port: the target');
is(scalar(() = bound_calls()), $before,
   'address and port: evaluated per call, not bound');

# ---- a retry to the block's next server -------------------------------------

for my $i (1, 2) {
    $r = call('retry');
    is($r->{status}, 200, "retry $i: 200 from the block's live server");
    @p = provider_new();
    is(join(' ', map { $_->{path} } @p), '/v1/chat/completions',
       "retry $i: the provider got the target once");
}
like($t->read_file('error.log'), qr/connect\(\) failed \(111/,
     'retry: the dead server was tried');
ruri_is('/v1/proxy/retry/chat/completions 200',
   'retry: $request_uri is still the client\'s');

# ---- errors raised inside the proxy module ----------------------------------

$r = call('gone');
is($r->{status}, 502, 'no live server: 502');
ruri_is('/v1/proxy/gone/chat/completions 502',
   'no live server: $request_uri is the client\'s');
is(scalar(provider_new()), 0, 'no live server: nothing reached the provider');

# the first call finds both servers dead and nginx marks them down: the
# second gets "no live upstreams" inside the proxy handler, and the
# operator's error page reads $request_uri there
for my $i (1, 2) {
    $r = call('dead');
    is($r->{status}, 502, "no live server, call $i: 502");
    is($r->{body} . ($r->{headers}{'x-target'} // ''),
       "target /v1/proxy/dead/chat/completions\n"
       . '/v1/proxy/dead/chat/completions',
       "no live server, call $i: an error_page reads the client's target");
}
like($t->read_file('error.log'), qr/no live upstreams/,
     'no live server: nginx had marked the block\'s servers down');

$r = call('down');
is($r->{status}, 200, 'fallback from a bound location: 200');
@p = provider_new();
is(join(' ', map { $_->{path} } @p), '/v1/chat/completions',
   'fallback: the fallback entry\'s target, once');
ruri_is('/v1/proxy/down/chat/completions 200',
   'fallback: $request_uri is the client\'s');
my $u;
for (1 .. 100) {
    ($u) = grep { ($_->{fallback_from} // '') eq 'down' } $l->usage_log;
    last if $u;
    select(undef, undef, undef, 0.05);
}
is($u && $u->{provider}, 'direct', 'fallback: the usage line says so');

# ---- over TLS ---------------------------------------------------------------

sub messages {
    my ($name, $query) = @_;
    $query //= '';
    return $l->request('POST', "/v1/proxy/$name/messages$query",
                       token => $agent,
                       anthropic => 1,
                       headers => [ [ 'anthropic-version', '2023-06-01' ] ],
                       body => { model => 'claude-3-5-haiku',
                                 max_tokens => 10,
                                 messages => [ { role => 'user',
                                                 content => 'Hi' } ] });
}

$r = messages('anthropic');
is($r->{status}, 200, 'TLS: 200');
@p = provider_new();
is($p[0]{path}, '/v1/messages', 'TLS: the route\'s target');
is((split /\n/, $t->read_file('tls.log') // '')[-1],
   'llmprovider.test /v1/messages', 'TLS: SNI is the block\'s name');

# a query the route allows, byte for byte (GET models is answered by the
# gateway itself: messages' beta is the other query a route lets through)
$r = messages('anthropic', '?beta=true');
is($r->{status}, 200, 'TLS, a query: 200');
@p = provider_new();
is($p[0]{path}, '/v1/messages?beta=true',
   'TLS, a query: the target as routed');
is((bound_calls())[-1][1], '/v1/messages?beta=true',
   'TLS, a query: the target sent is the one logged');
ruri_is('/v1/proxy/anthropic/messages?beta=true 200',
   'TLS, a query: $request_uri is still the client\'s');

$r = messages('wrong');
is($r->{status}, 502, 'TLS, a name the certificate lacks: 502');
is(scalar(provider_new()), 0, 'TLS, a name the certificate lacks: nothing '
                              . 'reached the provider');
like($t->read_file('error.log'),
     qr/upstream SSL certificate (?:verify error|does not match)/,
     'TLS: the certificate was checked');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
