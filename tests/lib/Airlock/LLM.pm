package Airlock::LLM;

# Helpers for the LLM gateway tests (tests/nginx/3*.t), on top of
# Airlock::Test and Airlock::Proxy: the scripted provider
# (tests/lib/llm-provider.py), a policy with an OpenAI and an Anthropic
# entry, the usual gateway nginx.conf, the usage log, and a raw HTTP/1.1
# client that timestamps what arrives.
#
#   my $t = Airlock::Test->new;
#   my $l = Airlock::LLM->new($t);      # skip_all without module/airlockctl
#   $l->setup(policy_extra => ..., http => ..., locations => ...);
#   $t->run;
#   $l->script({ status => 429 });      # the next provider answer
#   my $r = $l->chat(model => 'gpt-4o-mini', token => $l->token('agent'));

use strict;
use warnings;

use Exporter qw(import);
use File::Copy ();
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Test::More ();
use Time::HiRes qw(time sleep);

use Airlock::Test;
use Airlock::Proxy;
use Airlock::Prereq ();

our @EXPORT = qw(jdecode provider_error error_message);

# The provider keys the gateway injects: the tests look for them (and
# their base64) in every response and log line.
our $OPENAI_KEY = 'sk-test-OPENAI-0123456789abcdefXYZ';
our $ANTHROPIC_KEY = 'sk-ant-test-ANTHROPIC-9876543210zyx';

my %TOKENS = (
    agent  => 'al-agent-token-000111222333',
    worker => 'al-worker-token-444555666777',
    tight  => 'al-tight-token-888999000111',
);


sub new {
    my ($class, $t, %opt) = @_;
    my $p = Airlock::Proxy->new($t);

    Airlock::Prereq::need_cmd('python3');

    return bless { t => $t, p => $p }, $class;
}


sub t { $_[0]{t} }
sub proxy { $_[0]{p} }
sub token { $TOKENS{$_[1]} // die "no token for $_[1]" }


sub jdecode {
    my ($s) = @_;
    return undef unless defined $s;
    return eval { JSON::PP->new->utf8->decode($s) };
}


# The policy: agent (token, full access), worker (token, fewer models,
# reject over max_tokens), tight (token, tiny budget), and the unix uid of
# the test as client "local".  OpenAI entry "openai" and Anthropic entry
# "anthropic", both at the scripted provider on %%PORT_8081%%.  Options add
# YAML: clients, openai_clients, anthropic_clients (client entries),
# openai_fields, anthropic_fields (fields of either entry, e.g. prices).  block => 1
# names the provider by the upstream block "llmprovider" that conf() then
# declares, which binds the gateway locations to it (docs/nginx.md,
# "Upstreams, keepalive and TLS"); AIRLOCK_LLM_BLOCK=1 in the environment
# runs the gateway tests that way (those that rewrite the provider's
# address in the policy then fail).
sub policy {
    my ($self, %o) = @_;
    my $p = $self->{p};
    my $up = _block(%o) ? 'http://llmprovider/v1'
                        : 'http://127.0.0.1:%%PORT_8081%%/v1';
    my $ok = $p->seal($OPENAI_KEY);
    my $ak = $p->seal($ANTHROPIC_KEY);
    my $tpm = $o{tight_tpm} // 60;
    my $extra_clients = $o{clients} // '';
    my $extra_openai = $o{openai_clients} // '';
    my $openai_fields = $o{openai_fields} // '';
    my $extra_anthropic = $o{anthropic_clients} // '';
    my $anthropic_fields = $o{anthropic_fields} // '';
    my $alerts = $o{alerts} // '  deny: { threshold: 1000, window: 60s }';

    my %sha = map { $_ => $p->token_sha256($TOKENS{$_}) } keys %TOKENS;

    return <<"EOF";
version: 1
clients:
  agent: { token_sha256: "$sha{agent}" }
  worker: { token_sha256: "$sha{worker}" }
  tight: { token_sha256: "$sha{tight}" }
  local: { unix_uid: $> }
$extra_clients
secrets:
  openai_key: { sealed: "$ok" }
  anthropic_key: { sealed: "$ak" }
llm:
  - name: openai
    prefix: /v1/proxy/openai
    provider: openai
    upstream: "$up"
    secret: openai_key
    models: [gpt-4o-mini, gpt-4o, text-embedding-3-small]
    max_body_bytes: 65536
$openai_fields
    clients:
      agent:
        max_tokens: 100
        over_max_tokens: clamp
      worker:
        models: [gpt-4o-mini]
        max_tokens: 50
        over_max_tokens: reject
      tight:
        tokens_per_minute: $tpm
        tokens_per_day: 100000
        max_tokens: 20
        over_max_tokens: clamp
      local: {}
$extra_openai
  - name: anthropic
    prefix: /v1/proxy/anthropic
    provider: anthropic
    upstream: "$up"
    secret: anthropic_key
    models: [claude-3-5-haiku]
    max_body_bytes: 65536
$anthropic_fields
    clients:
      agent:
        max_tokens: 1000
        over_max_tokens: clamp
      tight:
        tokens_per_minute: $tpm
        max_tokens: 20
        over_max_tokens: clamp
$extra_anthropic
alerts:
$alerts
EOF
}


# nginx.conf: the gateway on %%PORT_8080%% (and a unix socket), the
# metrics on %%PORT_8082%%.
sub conf {
    my ($self, %o) = @_;
    my $d = $self->{t}->testdir;
    my $http = $o{http} // '';
    my $loc = $o{location} // '';
    my $locs = $o{locations} // '';
    my $zone = $o{zone} // 'airlock_llm_zone llm 1m;';
    my $log = $o{log} // '';
    my $block = _block(%o) ? "upstream llmprovider {\n"
                . "        server 127.0.0.1:%%PORT_8081%%;\n"
                . "        keepalive 8;\n    }" : '';

    return <<"EOF";
%%TEST_GLOBALS%%

http {
    %%TEST_GLOBALS_HTTP%%

    log_format llm '\$airlock_llm_client \$airlock_llm_provider '
                   '\$airlock_llm_model \$status '
                   '\$airlock_llm_prompt_tokens \$airlock_llm_completion_tokens '
                   '\$airlock_llm_usage_source \$http_authorization '
                   '\$http_x_api_key';

    airlock_policy policy.yaml;
    airlock_keyring $self->{key};
    airlock_deny_log %%TESTDIR%%/deny.log;

    $zone
    airlock_llm_log %%TESTDIR%%/usage.log$log;

    client_body_buffer_size 64k;
    client_max_body_size 1m;

    $http
    $block

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        listen unix:%%TESTDIR%%/gw.sock;
        server_name localhost;

        access_log %%TESTDIR%%/access.log llm;

        location /v1/proxy/openai/ {
            airlock_llm openai;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 10s;
            $loc
        }

        location /v1/proxy/anthropic/ {
            airlock_llm anthropic;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 10s;
            $loc
        }

        $locs
    }

    server {
        listen 127.0.0.1:%%PORT_8082%%;

        location = /metrics {
            airlock_llm_metrics;
        }
    }
}
EOF
}


sub _block {
    my (%o) = @_;
    return $o{block} // $ENV{AIRLOCK_LLM_BLOCK};
}


sub setup {
    my ($self, %o) = @_;
    my $t = $self->{t};

    $self->{key} = $self->{p}->keygen;

    $t->write_file_expand('policy.yaml', $self->policy(%o));
    $t->write_file_expand('nginx.conf', $self->conf(%o));
    $t->write_file('usage.log', '');

    $self->start_provider(8081);

    return $self;
}


# setup() for the tests of answers held before an error page: the
# openai and anthropic locations intercept the provider's errors (429
# 500 502 503 504 529) and lead them to @airlock_llm_fallback, and
# /v1/proxy/openai/chat/ does so with proxy_read_timeout read_timeout
# => T; %o as for setup().
sub setup_intercepting {
    my ($self, %o) = @_;
    my $read = delete $o{read_timeout};
    my $fallback = <<'L';
proxy_intercept_errors on;
            error_page 429 500 502 503 504 529 = @airlock_llm_fallback;
L

    return $self->setup(%o, location => $fallback, locations => <<"L");
        location /v1/proxy/openai/chat/ {
            airlock_llm openai;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout $read;
            $fallback
        }

        location \@airlock_llm_fallback {
            airlock_llm_fallback;

            %%AIRLOCK_LOCATION%%
        }
L
}


# A usage line that charges the call its reservation: at least
# $prompt_tokens in, at least $max_tokens out, the total their sum.
sub charges_reservation {
    my ($u, $prompt_tokens, $max_tokens) = @_;
    return $u->{completion_tokens} >= $max_tokens
           && $u->{prompt_tokens} >= $prompt_tokens
           && $u->{total_tokens} == $u->{prompt_tokens}
                                    + $u->{completion_tokens};
}

# setup() for the long-context price tests: clients "spender" and
# "small" of the tokens given, both on the openai entry, gpt-4o-mini
# only, default_max_tokens 100, spender with usd_per_day 5 and small
# with 0.001; gpt-4o-mini at 0.15 and 0.6 a million tokens, 1.5 and 6
# above 1000 input tokens.
sub setup_long_context {
    my ($self, %tok) = @_;
    my $sha = $self->{p}->token_sha256($tok{spender});
    my $ssha = $self->{p}->token_sha256($tok{small});

    return $self->setup(
        clients => qq{  spender: { token_sha256: "$sha" }\n}
                 . qq{  small: { token_sha256: "$ssha" }\n},
        openai_fields => "    prices:\n"
            . "      gpt-4o-mini:\n"
            . "        input: 0.15\n"
            . "        output: 0.6\n"
            . "        long_context: { above_input_tokens: 1000, input: 1.5, "
            . "output: 6 }\n",
        openai_clients => "      spender:\n        models: [gpt-4o-mini]\n"
            . "        usd_per_day: 5\n        default_max_tokens: 100\n"
            . "      small:\n        models: [gpt-4o-mini]\n"
            . "        usd_per_day: 0.001\n        default_max_tokens: 100\n");
}

# setup() with one client, "spender", of the token given: a dollar
# budget (usd_per_day 5, default_max_tokens 100) on the openai entry,
# gpt-4o-mini at 0.15 and 0.6 a million tokens; %o as for setup() (more
# entries' fields and clients).  Returns the token.
sub setup_spender {
    my ($self, $token, %o) = @_;
    my $sha = $self->{p}->token_sha256($token);

    $self->setup(
        clients => qq{  spender: { token_sha256: "$sha" }\n},
        openai_fields => "    prices:\n"
            . "      gpt-4o-mini: { input: 0.15, output: 0.6 }\n",
        openai_clients => "      spender:\n        models: [gpt-4o-mini]\n"
            . "        usd_per_day: 5\n        default_max_tokens: 100\n",
        %o);

    return $token;
}


sub start_provider {
    my ($self, $n) = @_;
    my $t = $self->{t};
    my $d = $t->testdir;

    $t->write_file("provider-$n.log", '');
    $t->write_file("provider-$n.control", '');

    my $pid = $t->run_daemon('python3', "$t->{top}/tests/lib/llm-provider.py",
                             $t->port($n), '--log', "$d/provider-$n.log",
                             '--control', "$d/provider-$n.control");

    $t->wait_for_port($n)
        or die "llm provider on %%PORT_$n%% did not start:\n"
               . ($t->read_file($t->{daemon_log}{$pid}) // '');

    $self->{provider} = $n;

    return $pid;
}


# nginx locations for entries that fall back (docs/nginx.md): for each
# of names => [NAME, ...], a location /v1/proxy/NAME/ of "airlock_llm
# NAME" that intercepts the provider's errors codes => "..." (default
# "429 500 502 503 504") and leads them to @airlock_llm_fallback; then
# that named location.  read_timeout => T: proxy_read_timeout in the
# entries' locations; fallback_read_timeout => T: in the named one.
sub fallback_locations {
    my (%o) = @_;
    my $codes = $o{codes} // '429 500 502 503 504';
    my $read = defined $o{read_timeout}
        ? "            proxy_read_timeout $o{read_timeout};\n" : '';
    my $fb_read = defined $o{fallback_read_timeout}
        ? "\n            proxy_read_timeout $o{fallback_read_timeout};\n" : '';
    my $text = '';

    for my $name (@{$o{names}}) {
        $text .= <<"L";
        location /v1/proxy/$name/ {
            airlock_llm $name;

            %%AIRLOCK_LOCATION%%

$read            proxy_intercept_errors on;
            error_page $codes = \@airlock_llm_fallback;
        }

L
    }

    return $text . <<"L";
        location \@airlock_llm_fallback {
            airlock_llm_fallback;

            %%AIRLOCK_LOCATION%%
$fb_read        }
L
}


# Runs $code with the provider on $port (start_provider()) as the one
# script() and provider_requests() speak to; returns what $code does.
sub on_provider {
    my ($self, $port, $code) = @_;
    local $self->{provider} = $port;
    return $code->();
}

# The next answers of the provider: one script each, or {} for plain ones;
# script() without arguments resets.
sub script {
    my ($self, @s) = @_;
    my $n = $self->{provider};
    $self->{t}->write_file("provider-$n.control",
                           @s ? encode_json(\@s) : '');
}


# Every script for every answer, until the next script() call.
sub script_all {
    my ($self, $s) = @_;
    my $n = $self->{provider};
    $self->{t}->write_file("provider-$n.control", encode_json($s));
}


sub provider_requests {
    my ($self) = @_;
    my $n = $self->{provider};
    return json_lines($self->{t}->read_file("provider-$n.log"));
}


sub last_provider_request {
    my ($self) = @_;
    my @r = $self->provider_requests;
    return $r[-1];
}


sub usage_log {
    my ($self) = @_;
    return json_lines($self->{t}->read_file('usage.log'));
}


# For the tests of buffered usage logs: $n chats with the token of
# $o{client} (agent), each call's x-request-id pushed on @$ids; returns
# how many were answered 200.
sub chats {
    my ($self, $n, $ids, %o) = @_;
    my $ok = 0;

    for (1 .. $n) {
        my $r = $self->chat(token => $self->token($o{client} // 'agent'));
        $ok++ if $r->{status} == 200;
        push @$ids, $r->{headers}{'x-request-id'} // 'none';
    }
    return $ok;
}


# The usage log's lines (JSON objects only: an access_log may write to the
# same file), waiting up to $wait seconds for $want of them.
sub usage_lines {
    my ($self, $want, $wait) = @_;
    my $deadline = time + $wait;
    my @l;

    for (;;) {
        @l = grep { /^\{/ }
             split /\n/, $self->{t}->read_file('usage.log') // '';
        last if @l >= $want || time > $deadline;
        sleep 0.05;
    }
    return @l;
}


# Three Test::More checks that @lines are the usage lines of the calls
# whose request ids are @$ids: as many, every call's, none twice.
sub check_lines {
    my ($self, $what, $ids, @lines) = @_;
    my %seen;

    $seen{(jdecode($_) // {})->{request_id} // ''}++ for @lines;

    Test::More::is(scalar @lines, scalar @$ids, "$what: one line per call");
    Test::More::is(scalar(grep { !$seen{$_} } @$ids), 0,
                   "$what: every call's line is there");
    Test::More::is(scalar(grep { $_ > 1 } values %seen), 0,
                   "$what: no line twice");
}


# A chat left in flight: sent on a connection of its own, with the
# provider's script for it (e.g. { wait_file => F }); returns the socket
# once the provider has the request.  Read the answer from the socket.
# Options: token (the agent's), body (a short chat).
sub held_chat {
    my ($self, $script, %o) = @_;
    my $n = scalar $self->provider_requests;

    $self->script($script);

    my $s = $self->raw_chat($o{token} // $self->token('agent'),
                            $o{body} // '{"model":"gpt-4o-mini","messages":'
                                        . '[{"role":"user","content":"Hi"}]}');

    my $deadline = time + $Airlock::Test::START_WAIT;
    sleep 0.02
        while scalar $self->provider_requests == $n && time < $deadline;

    return $s;
}


# A chat call written on a socket of its own, which is returned unread:
# for tests that hang up or hold the connection.
sub raw_chat {
    my ($self, $token, $body) = @_;
    $self->_usage_before;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $self->{t}->port(8080),
                                  Proto => 'tcp',
                                  Timeout => $Airlock::Test::HTTP_WAIT)
        or die "connect: $!";
    syswrite($s, "POST /v1/proxy/openai/chat/completions HTTP/1.1\r\n"
                 . "Host: localhost\r\nAuthorization: Bearer $token\r\n"
                 . "Content-Type: application/json\r\n"
                 . "Content-Length: " . length($body) . "\r\n"
                 . "Connection: close\r\n\r\n$body");
    return $s;
}


# The usage line of the last call, waiting for it: the log phase runs
# after the client has the response.  $count is the least number of
# lines the log must have; and when the call went through request() or
# raw_chat(), the log must have more lines than before it: calls the
# gateway answers itself (the models list) have lines and no provider
# request, so a count of provider requests alone can be reached before
# the last call's line is written.
sub last_usage {
    my ($self, $count) = @_;
    my $deadline = time + $Airlock::Test::HTTP_WAIT;
    my $before = $self->{usage_before} // -1;

    for (;;) {
        my @l = $self->usage_log;
        return $l[-1] if (@l >= $count && @l > $before) || time > $deadline;
        sleep 0.02;
    }
}


# the usage log's lines before a call, for last_usage()
sub _usage_before {
    my ($self) = @_;
    my $f = $self->{t}->testdir . '/usage.log';
    my $text = -f $f ? $self->{t}->read_file($f) : '';

    # the lines usage_log() would give, counted, not decoded
    $text =~ s/[^\n]*\z//;
    $self->{usage_before} = scalar grep { length } split /\n/, $text;
}


# One call with the provider's next answer scripted ($script, reset
# after the call): chat() or, with anthropic => 1, messages() with
# max_tokens 20; the other options (token, prompt, fields) go to either.
# Returns the response and the call's usage line, waited for as by
# last_usage($count).
sub scripted_call {
    my ($self, $count, $script, %o) = @_;
    my $anthropic = delete $o{anthropic};

    $self->script($script);
    my $r = $anthropic ? $self->messages(%o, max_tokens => 20)
                       : $self->chat(%o);
    $self->script();
    return ($r, $self->last_usage($count));
}

# True when the parsed response $r carries an error in the provider's
# own format (Anthropic's with $anthropic, else OpenAI's as JSON).
sub provider_error {
    my ($r, $anthropic) = @_;
    my $j = $r->{json} // {};
    return $anthropic
        ? ($j->{type} // '') eq 'error' && ref $j->{error} eq 'HASH'
          && defined $j->{error}{type}
        : ref $j->{error} eq 'HASH' && defined $j->{error}{message}
          && ($r->{headers}{'content-type'} // '') =~ m{application/json};
}

# A raw HTTP/1.1 request to the gateway; returns the parsed response.
sub request {
    my ($self, $method, $path, %o) = @_;
    my $body = $o{body};
    my $h = '';

    $body = encode_json($body) if ref $body;

    if (defined $o{token}) {
        $h .= $o{anthropic} ? "x-api-key: $o{token}\r\n"
                            : "Authorization: Bearer $o{token}\r\n";
    }

    for my $kv (@{$o{headers} // []}) {
        $h .= "$kv->[0]: $kv->[1]\r\n";
    }

    if (defined $body) {
        $h .= "Content-Type: application/json\r\n"
            unless $h =~ /^content-type:/im;
        $h .= "Content-Length: " . length($body) . "\r\n";
    }

    my $req = "$method $path HTTP/1.1\r\nHost: localhost\r\n$h"
            . "Connection: close\r\n\r\n" . ($body // $o{raw_body} // '');

    $self->_usage_before;

    my $raw = $self->{t}->http($req, %{$o{http} // {}},
                               timeout => $o{timeout}
                                          // $Airlock::Test::HTTP_WAIT);

    my $r = parse_response($raw);
    $r->{raw} = $raw;
    $r->{json} = jdecode($r->{body});

    return $r;
}


sub chat {
    my ($self, %o) = @_;
    my $body = $o{body} // {
        model => $o{model} // 'gpt-4o-mini',
        messages => [ { role => 'user', content => $o{prompt} // 'Hi' } ],
        %{$o{fields} // {}},
    };

    return $self->request('POST', '/v1/proxy/openai/chat/completions',
                          body => $body, %o);
}


sub messages {
    my ($self, %o) = @_;
    my $body = $o{body} // {
        model => $o{model} // 'claude-3-5-haiku',
        max_tokens => $o{max_tokens} // 100,
        messages => [ { role => 'user', content => $o{prompt} // 'Hi' } ],
        %{$o{fields} // {}},
    };

    return $self->request('POST', '/v1/proxy/anthropic/messages',
                          body => $body, anthropic => 1, %o);
}


# A Responses API call on the openai entry: POST /v1/proxy/openai/
# responses with the token given, body { model: gpt-4o-mini, %fields }.
sub responses {
    my ($self, $token, %f) = @_;
    return $self->request('POST', '/v1/proxy/openai/responses',
                          token => $token,
                          body => { model => 'gpt-4o-mini', %f });
}


# The error message of a gateway's answer, without its "(request id
# ...)"; '' when the answer is not JSON.
sub error_message {
    my ($r) = @_;
    my $m = $r->{json} ? $r->{json}{error}{message} : '';
    $m =~ s/ \(request id \w+\)$//;
    return $m;
}

# Sends a request and reads the response as it arrives: returns the raw
# bytes and [time, bytes] of every read, times relative to the send.
sub timed {
    my ($self, $req, %o) = @_;
    my $t = $self->{t};
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $t->port(8080),
                                  Proto => 'tcp', Timeout => 5)
        or die "connect: $!";
    my $sel = IO::Select->new($s);
    my $start = time;
    my $deadline = $start + ($o{timeout} // 15);
    my ($raw, @reads) = ('');

    syswrite($s, $req);

    while (time < $deadline) {
        last unless $sel->can_read($deadline - time);
        my $buf;
        my $n = sysread($s, $buf, 65536);
        last unless $n;
        $raw .= $buf;
        push @reads, [time - $start, $buf];
    }

    close $s;

    return ($raw, \@reads);
}


# Every occurrence of a provider key (raw, base64, "Bearer k") in $text.
sub leaks {
    my ($text) = @_;
    return 0 unless defined $text;
    require MIME::Base64;
    my $n = 0;

    for my $k ($OPENAI_KEY, $ANTHROPIC_KEY) {
        for my $s ($k, MIME::Base64::encode_base64($k, '')) {
            $n++ while $text =~ /\Q$s\E/g;
        }
    }

    return $n;
}



# The official SDKs (tests/llm-client/package-lock.json), installed with
# npm ci in the test prefix, and a client script of tests/lib run with
# them.  sdk_install() must come before the plan: without node, npm or the
# registry the test is skipped (failed under CI).
#
#   my $dir = $l->sdk_install('openai-client.mjs', 'openai');
#   my $r = $l->sdk_run($dir, 'openai-client.mjs',
#                       { AIRLOCK_BASE_URL => ..., AIRLOCK_API_KEY => ... },
#                       qw(chat stream));
#   $r->{chat}{ok}, $r->{chat}{result}
sub sdk_install {
    my ($self, $script, $package) = @_;
    my $t = $self->{t};
    my $dir = $t->testdir . '/llm-client';

    Airlock::Prereq::need_cmd(qw(node npm));

    mkdir $dir;
    for my $f ("llm-client/package.json", "llm-client/package-lock.json",
               "lib/$script")
    {
        File::Copy::copy("$t->{top}/tests/$f", $dir)
            or die "copy tests/$f: $!";
    }

    my $ci = 'timeout 120 npm ci --no-audit --no-fund --loglevel=error';
    my $npm = `cd $dir && $ci 2>&1`;
    Airlock::Prereq::absent('npm ci failed (no registry?): '
                            . ((split /\n/, $npm)[-1] // ''))
        if $? || !-d "$dir/node_modules/$package";

    return $dir;
}


# runs the steps; each prints one JSON line {"step", "ok", "result"}
sub sdk_run {
    my ($self, $dir, $script, $env, @steps) = @_;
    local @ENV{keys %$env} = values %$env;
    my $out = `cd $dir && timeout 60 node $script @steps 2>&1`;
    my %r;

    for (split /\n/, $out) {
        my $j = eval { decode_json($_) } or next;
        $r{$j->{step}} = $j;
    }

    Test::More::diag($out) if keys %r != @steps;

    return \%r;
}

1;
