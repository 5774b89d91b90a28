package AgentTest;

# The appliance around airlock-agent for tests/agent/*.t: real nginx with
# the Airlock module (named routes, LLM gateway, /api/ publishing the
# agent), redis-server on a unix socket, the scripted LLM provider
# (tests/lib/llm-provider.py), upstream services that want the injected
# credentials (lib/services.py), and the agent itself in a network
# namespace of its own (unshare -n), so every byte it exchanges goes
# through a unix socket.  The worker's side of the job contract is played
# by lib/fake-worker.py.
#
#   my $a = AgentTest->new;
#   $a->setup(agent => [ '--max-steps', 4 ]);
#   $a->script({ tool_calls => [...] }, { pieces => [...] });
#   my @ev = $a->ask('s1', 'why is the load high?');

use strict;
use warnings;

use Exporter qw(import);
use Cwd ();
use File::Basename ();
use FindBin;
use IO::Socket::UNIX;
use JSON::PP;
use MIME::Base64 ();
use POSIX ();
use Socket qw(SOCK_STREAM);
use Test::More ();
use Time::HiRes qw(sleep time);

use Airlock::Test;
use Airlock::Proxy;
use Airlock::LLM;
use Airlock::Prereq ();

our @EXPORT = qw(of_type answer_of);

our $PROM_SECRET = 'demo:prom-pass-0451';
our $LOGS_TOKEN = 'logs-token-4f1c9e77';
our $WORKER_TOKEN = 'worker-token-0123456789abcdef';
our $LOAD = '3.14159';

# this file's directory (its helpers' too), whichever test dir uses it
my $HERE = Cwd::abs_path(File::Basename::dirname(__FILE__));


sub new {
    my ($class) = @_;
    my $t = Airlock::Test->new;
    my $l = Airlock::LLM->new($t);
    my $self = bless { t => $t, l => $l, p => $l->proxy, agents => {} },
                     $class;

    for my $bin ('redis-server', 'unshare') {
        next if grep { -x "$_/$bin" } split /:/, $ENV{PATH};
        Airlock::Prereq::absent("$bin not found (auto/deps installs it)");
    }

    my $agent = "$t->{build}/airlock-agent";
    if (!-x $agent) {
        Airlock::Prereq::absent("not built: $agent");
    }
    $self->{agent} = $agent;

    # the tests' redis-cli is the tests' own Redis user, with the admin
    # commands a test runs (CONFIG SET, SHUTDOWN, CLIENT PAUSE, INFO);
    # the agents are Redis user airlock-agent, and the fake worker
    # airlock-worker, each with only what it uses, as on the appliance
    # (Airlock::Test::redis_args, redis_opts())
    my ($cli) = grep { -x } map { "$_/redis-cli" } split /:/, $ENV{PATH};
    if (defined $cli) {
        mkdir "$t->{testdir}/redis-bin";
        $t->write_file("redis-bin/redis-cli",
                       "#!/bin/sh\nexec $cli --user $Airlock::Test::REDIS_USER"
                       . " --pass $Airlock::Test::REDIS_PASS"
                       . " --no-auth-warning \"\$@\"\n");
        chmod 0755, "$t->{testdir}/redis-bin/redis-cli";
        $ENV{PATH} = "$t->{testdir}/redis-bin:$ENV{PATH}";
    }

    return $self;
}


sub t { $_[0]{t} }


# an agent's Redis user options: airlock-agent and its password file
sub redis_opts {
    my ($self) = @_;
    return ('--redis-user', 'airlock-agent', '--redis-password-file',
            $self->{t}->redis_pass('airlock-agent'));
}
sub llm { $_[0]{l} }
sub proxy { $_[0]{p} }


sub policy {
    my ($self, %o) = @_;
    my $p = $self->{p};
    my $ok = $p->seal($Airlock::LLM::OPENAI_KEY);
    my $prom = $p->seal($PROM_SECRET);
    my $logs = $p->seal($LOGS_TOKEN);
    my $wsha = $p->token_sha256($WORKER_TOKEN);
    my $uid = $>;
    my $worker = $self->{worker_uid}
        ? "{ unix_uid: airlock-worker }"
        : "{ token_sha256: \"$wsha\" }";
    my $extra = $self->{routes} // '';
    my $llm = $self->{llm} // '';
    my $llm_agent = $self->{llm_agent} // '{}';
    my $models = $self->{models} // '[gpt-4o-mini]';
    my $alerts = $self->{alerts} // '';

    return <<"EOF";
version: 1
clients:
  agent: { unix_uid: $uid }
  worker: $worker
secrets:
  openai_key: { sealed: "$ok" }
  prom_basic: { sealed: "$prom" }
  logs_token: { sealed: "$logs" }
upstreams:
  svc: { url: "http://127.0.0.1:%%PORT_8082%%" }
routes:
  - name: prometheus-query
    description: instant PromQL queries, read-only
    clients: [agent, worker]
    match: { method: GET, path: /prometheus/query }
    upstream: svc
    to: /api/v1/query
    query:
      allow: [query, time]
      require: [query]
      patterns: { time: '^[0-9]+(\\.[0-9]+)?\$' }
    inject: { Authorization: "Basic {prom_basic|base64}" }
  - name: logs
    description: recent log lines of one service
    clients: [agent, worker]
    match: { method: GET, path: "/logs/{service}" }
    params: { service: '^[a-z0-9][a-z0-9-]{0,62}\$' }
    upstream: svc
    to: "/api/v1/services/{service}/logs"
    query:
      allow: [since, limit]
      patterns: { since: '^[0-9]{1,4}[smh]\$', limit: '^[0-9]{1,4}\$' }
    inject: { Authorization: "Bearer {logs_token}" }
  - name: queue-admin
    description: the worker's own route; the agent lacks it
    clients: [worker]
    match: { method: GET, path: /internal/queue }
    upstream: svc
    to: /api/v1/queue
$extra
llm:
  - name: openai
    prefix: /v1/proxy/openai
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: $models
    max_body_bytes: 1048576
$llm
    clients:
      agent: $llm_agent
alerts:
  deny: { threshold: 1, window: 60s }
$alerts
EOF
}


# nginx.conf; its /api/ location has $self->{api}'s directives
sub conf {
    my ($self) = @_;
    my $api = $self->{api} // '';

    my $conf = $self->{p}->conf(
        listen => 'listen unix:%%TESTDIR%%/airlock.sock;',
        http => <<'EOF',
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log;
    airlock_llm_zone llm 1m;
    airlock_llm_log %%TESTDIR%%/usage.log;
    client_body_buffer_size 1m;
    client_max_body_size 1m;
EOF
        locations => <<'EOF');
        location /v1/proxy/openai/ {
            airlock_llm openai;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 60s;
        }

        location /api/ {
            proxy_pass http://unix:%%TESTDIR%%/agent-a.sock:/;
            proxy_http_version 1.1;
            proxy_buffering off;
            proxy_read_timeout 120s;
            %%API%%
        }
EOF
    $conf =~ s/%%API%%/$api/;

    return $conf;
}


# policy, nginx, provider, services, redis, and agent "a" with the
# options in $o{agent}; $o{routes}: more routes; the openai llm entry's
# $o{models}, more lines of it ($o{llm}), the agent's settings in it
# ($o{llm_agent}); $o{api}: more directives in nginx's /api/ location;
# $o{alerts}: more lines of the policy's alerts (a quarantine)
sub setup {
    my ($self, %o) = @_;
    my $t = $self->{t};
    my $d = $t->testdir;

    $self->{key} = $self->{p}->keygen;
    $self->{l}{key} = $self->{key};
    $self->{worker_uid} = $o{worker_uid};
    $self->{routes} = $o{routes};
    $self->{llm} = $o{llm};
    $self->{llm_agent} = $o{llm_agent};
    $self->{models} = $o{models};
    $self->{api} = $o{api};
    $self->{alerts} = $o{alerts};

    $t->write_file_expand('policy.yaml', $self->policy);
    $t->write_file_expand('nginx.conf', $self->conf);
    $t->write_file('usage.log', '');
    $t->write_file('journal.log', '');
    $t->write_file('services.log', '');
    $t->write_file('service-logs.txt', $o{logs} // "12:00:01 api ok\n");
    $t->write_file('jobs.log', '');

    $self->{l}->start_provider(8081);

    my $pid = $t->run_daemon('python3', "$HERE/services.py", $t->port(8082),
        '--log', "$d/services.log",
        '--prom-auth', 'Basic ' . MIME::Base64::encode_base64($PROM_SECRET,
                                                              ''),
        '--logs-auth', "Bearer $LOGS_TOKEN", '--load', $LOAD,
        '--logs-file', "$d/service-logs.txt");
    $t->wait_for_port(8082)
        or die "services did not start\n"
               . ($t->read_file($t->{daemon_log}{$pid}) // '');

    $self->start_redis;

    $t->run;

    # the worker fetches as its own user
    chmod 0666, "$d/airlock.sock";

    $self->start_agent('a', @{$o{agent} // []});

    return $self;
}


sub start_redis {
    my ($self) = @_;
    my $t = $self->{t};
    my $d = $t->testdir;

    my $pid = $t->run_daemon('redis-server', $t->redis_args,
                             '--port', '0', '--unixsocket',
                             "$d/redis.sock", '--unixsocketperm', '777',
                             '--save', '', '--appendonly', 'no',
                             '--dir', $d);
    $t->wait_for_port("unix:$d/redis.sock")
        or die "redis did not start\n"
               . ($t->read_file($t->{daemon_log}{$pid}) // '');
    $self->{redis} = $pid;

    return $pid;
}


# Redis restarted with its data, as a server with persistence restarts:
# SHUTDOWN SAVE writes dump.rdb into the test directory, and the new
# server, started with the same arguments, loads it.  Every client's
# connection is closed in between.
sub restart_redis {
    my ($self) = @_;
    my $d = $self->{t}->testdir;

    system("redis-cli -s $d/redis.sock SHUTDOWN SAVE >/dev/null 2>&1");
    waitpid($self->{redis}, 0);
    die "redis saved nothing\n" unless -f "$d/dump.rdb";

    return $self->start_redis;
}


# airlock-agent with these options over the test's own (a socket
# DIR/bad.sock, the gateway, Redis, its user, the policy; one given as
# undef is left out), for options it should
# refuse at start: (its exit status, or 'listening' once its socket is
# there, or 'still running' after 5 s, and then it is stopped; its
# stderr)
sub run_briefly {
    my ($self, %opt) = @_;
    my $t = $self->{t};
    my $d = $t->testdir;
    my %o = ('--listen' => "$d/bad.sock", '--gateway' => "$d/airlock.sock",
             '--redis' => "unix:$d/redis.sock",
             '--policy' => "$d/policy.yaml", $self->redis_opts, %opt);

    unlink "$d/bad.sock";
    my $pid = fork // die;
    if ($pid == 0) {
        open(STDOUT, '>', "$d/agent.out");
        open(STDERR, '>', "$d/agent.err");
        exec($self->{agent}, map { ($_, $o{$_}) } grep { defined $o{$_} }
                                                   keys %o)
            or POSIX::_exit(127);
    }

    my $rc;
    for (1 .. 50) {
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            $rc = $? >> 8;
            last;
        }
        if (-S "$d/bad.sock") {
            $rc = 'listening';
            last;
        }
        sleep 0.1;
    }
    $rc //= 'still running';
    if ($rc !~ /^\d+$/) {
        kill 'TERM', $pid;
        waitpid($pid, 0);
    }

    return ($rc, $t->read_file('agent.err') // '');
}


# an agent process in its own network namespace, listening on
# agent-NAME.sock
sub start_agent {
    my ($self, $name, @opt) = @_;

    return $self->start_agent_with($name, {}, @opt);
}


# start_agent() with $w->{env} (variables set for the agent),
# $w->{netns} 0 (the host's network: loopback TCP, which the agent's own
# namespace lacks) and $w->{userns} 1 (a user namespace of its own, where
# only the test's uid is mapped, as root: systemd's PrivateUsers=)
sub start_agent_with {
    my ($self, $name, $w, @opt) = @_;
    my $t = $self->{t};
    my $d = $t->testdir;
    my $sock = "$d/agent-$name.sock";
    my $env = $w->{env} // {};

    unlink $sock;

    my @ns = !($w->{netns} // 1) ? ()
           : $> == 0 && !$w->{userns} ? ('unshare', '-n')
           : ('unshare', '-r', '-n');
    my $pid = do {
        local @ENV{keys %$env} = values %$env;
        $t->run_daemon(@ns, $self->{agent}, '--listen', $sock,
                       '--gateway', "$d/airlock.sock",
                       '--redis', "unix:$d/redis.sock",
                       '--policy', "$d/policy.yaml", $self->redis_opts,
                       @opt);
    };

    $t->wait_for_port("unix:$sock", 20)
        or die "agent $name did not start\n"
               . ($t->read_file($t->{daemon_log}{$pid}) // '');

    $self->{agents}{$name} = { pid => $pid, sock => $sock,
                               log => $t->{daemon_log}{$pid} };

    return $pid;
}


sub agent_log {
    my ($self, $name) = @_;
    return $self->{t}->read_file($self->{agents}{$name // 'a'}{log}) // '';
}


# The pid of the agent itself (unshare execs it, so the daemon's pid).
sub agent_pid {
    my ($self, $name) = @_;
    return $self->{agents}{$name // 'a'}{pid};
}


# sanitizer reports and crashes in every agent's output
sub agent_errors {
    my ($self) = @_;
    my @bad;

    for my $a (values %{$self->{agents}}) {
        my $text = $self->{t}->read_file($a->{log}) // '';
        push @bad, grep { /Sanitizer|runtime error:|Segmentation/ }
                   split /\n/, $text;
    }

    return join "\n", @bad;
}


sub start_worker {
    my ($self, @opt) = @_;
    my $t = $self->{t};
    my $d = $t->testdir;

    my $pid = $t->run_daemon('python3', "$HERE/fake-worker.py",
                             '--redis', "$d/redis.sock",
                             '--user', 'airlock-worker', '--password-file',
                             $t->redis_pass('airlock-worker'),
                             '--log', "$d/jobs.log",
                             '--proxy', '127.0.0.1:' . $t->port(8080),
                             '--token', $WORKER_TOKEN, @opt);
    $self->{worker} = $pid;

    return $pid;
}


# A process of uid $uid that sends $req on the unix socket $sock: its
# gid is $o{gid} (else $uid), its supplementary groups @{$o{groups}}
# (else that gid alone).  Returns its pid and a pipe it writes to:
# "answer " and the raw answer, or "errno " and connect()'s errno.
sub as_uid_start {
    my ($self, $sock, $uid, $req, %o) = @_;
    my $gid = $o{gid} // $uid;
    my @groups = @{$o{groups} // []};

    pipe(my $r, my $w) or die "pipe: $!\n";
    my $pid = fork // die "fork: $!\n";

    if ($pid == 0) {
        close $r;
        $( = $gid;
        $) = join ' ', $gid, @groups ? @groups : ($gid);
        $< = $> = $uid;
        POSIX::_exit(3) if $> != $uid || $< != $uid || $( != $gid;
        alarm 60;
        my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $sock);
        if (!$s) {
            print {$w} 'errno ' . ($! + 0);
            close $w;
            POSIX::_exit(0);
        }
        print {$s} $req;
        local $/;
        my $out = <$s> // '';
        print {$w} "answer $out";
        close $w;
        POSIX::_exit(0);
    }

    close $w;

    return ($pid, $r);
}


# as_uid_start()'s process waited for: the raw answer ('' when it could
# not connect), and in list context connect()'s errno (0 when it did,
# -1 when the process did not get that far)
sub as_uid_end {
    my ($self, $pid, $r) = @_;

    local $/;
    my $out = <$r> // '';
    close $r;
    waitpid($pid, 0);

    my ($raw, $errno) = $out =~ /^answer (.*)\z/s ? ($1, 0)
                      : $out =~ /^errno (\d+)\z/ ? (undef, $1)
                      : (undef, -1);

    return wantarray ? ($raw, $errno) : $raw // '';
}


# the two at once
sub as_uid {
    my $self = shift;
    return $self->as_uid_end($self->as_uid_start(@_));
}


# redis-cli on the test's Redis: its output, the last newline cut
sub redis_cli {
    my ($self, @args) = @_;
    my $d = $self->{t}->testdir;

    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @args)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;

    return $out;
}


sub script {
    my ($self, @s) = @_;
    $self->{l}->script(@s);
}


sub provider_requests {
    my ($self) = @_;
    return $self->{l}->provider_requests;
}


# Asks agent NAME (default a) a question; returns the events in order
# (each a hash with "type"), and in list context the raw answer too.
sub ask {
    my ($self, $session, $prompt, %o) = @_;
    my $t = $self->{t};
    my $body = encode_json({ prompt => $prompt });
    my $req = "POST /v1/sessions/$session/ask HTTP/1.1\r\nHost: agent\r\n"
            . "Content-Type: application/json\r\n"
            . "Content-Length: " . length($body) . "\r\n"
            . "Connection: close\r\n\r\n$body";

    my %to = $o{via_nginx} ? (port => 8080)
           : (unix => $self->{agents}{$o{agent} // 'a'}{sock});
    $req =~ s{^POST /}{POST /api/} if $o{via_nginx};

    my $raw = $t->http($req, %to, timeout => $o{timeout} // 60) // '';
    my @ev = events($raw);

    return wantarray ? (\@ev, $raw) : \@ev;
}


# The first model call's prompt, as an agent with options @opt (those
# that shape its requests: --sandbox, --system-prompt) counts it before
# the call (its request's bytes at 2 a token), for the question $prompt
# in a new session: the next_prompt of the "limit" event of an agent
# with 1 token a question (or, from an agent that made the call all the
# same, the bytes the provider got at 2 a token).
sub first_prompt {
    my ($self, $prompt, @opt) = @_;
    my $key = join ' ', @opt;
    my $name = $self->{first}{$key} //= 'first-' . keys %{$self->{first}};

    $self->start_agent($name, @opt, '--max-tokens', 1,
                       '--max-user-tokens', 0)
        unless $self->{agents}{$name};
    my $n = scalar(() = $self->provider_requests);
    my $ev = $self->ask("$name-" . ++$self->{first_n}, $prompt,
                        agent => $name);
    my ($l) = grep { ($_->{limit} // '') eq 'tokens' } of_type('limit', $ev);
    return $l->{next_prompt} if defined(($l // {})->{next_prompt});

    my $r = ($self->provider_requests)[$n]
        // die "no first prompt counted for \"$prompt\"\n";
    return int((($r->{headers}{'content-length'} // 0) + 1) / 2);
}


sub events {
    my ($raw) = @_;
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    my @ev;

    return () unless defined $body;

    # nginx may have sent it chunked
    if ($head =~ /^transfer-encoding:\s*chunked/im) {
        my $r = Airlock::Test::parse_response($raw);
        $body = $r->{body} // '';
    }

    for my $frame (split /\n\n/, $body) {
        next unless $frame =~ /^data: (.*)$/m;
        my $j = eval { JSON::PP->new->utf8->decode($1) } or next;
        push @ev, $j;
    }

    return @ev;
}


sub of_type {
    my ($type, $ev) = @_;
    return grep { $_->{type} eq $type } @$ev;
}


# the text of the first answer event of a reply from api or ask_as
sub answer_of {
    my ($r) = @_;
    return ((of_type('answer', $r->{events}))[0] // {})->{text} // '';
}


# a raw HTTP answer parsed, with its events and its body as JSON
# ({} when it is not JSON)
sub reply {
    my ($raw) = @_;
    my $r = Airlock::Test::parse_response($raw // '');
    $r->{events} = [ events($raw // '') ];
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}


# METHOD /api PATH through nginx (port 8080), as USER with the password
# the tests' htpasswd files give (FAKE-USER-pw), or with no
# Authorization when USER is undef; prompt => P sends {"prompt": P},
# header => H adds header lines.  The reply as reply() gives it.
sub api {
    my ($self, $method, $path, $user, %o) = @_;
    my $body = $o{prompt} ? encode_json({ prompt => $o{prompt} }) : '';
    my $auth = defined $user
        ? 'Authorization: Basic '
          . MIME::Base64::encode_base64("$user:FAKE-$user-pw", '') . "\r\n"
        : '';
    my $raw = $self->{t}->http("$method /api$path HTTP/1.1\r\nHost: a\r\n"
                               . $auth . ($o{header} // '')
                               . ($body ne '' ? 'Content-Length: '
                                                . length($body) . "\r\n"
                                              : '')
                               . "Connection: close\r\n\r\n$body",
                               port => 8080, timeout => 60);
    return reply($raw);
}


# runs the airlock command line with ARGS; its exit status, standard
# output and standard error
sub run_cli {
    my ($self, @args) = @_;
    my $t = $self->{t};
    my $d = $t->testdir;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(STDOUT, '>', "$d/cli.out");
        open(STDERR, '>', "$d/cli.err");
        exec("$t->{build}/airlock", @args) or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    return ($? >> 8, $t->read_file('cli.out'), $t->read_file('cli.err'));
}


sub session {
    my ($self, $id, %o) = @_;
    my $raw = $self->{t}->http("GET /v1/sessions/$id HTTP/1.1\r\n"
                               . "Host: agent\r\nConnection: close\r\n\r\n",
                               unix => $self->{agents}{$o{agent} // 'a'}
                                            {sock}, timeout => 10);
    my $r = Airlock::Test::parse_response($raw // '');
    $r->{json} = eval { JSON::PP->new->utf8->decode($r->{body}) };
    return $r;
}


sub jsonl {
    my ($self, $name) = @_;
    my $text = $self->{t}->read_file($name) // '';
    return map { decode_json($_) } grep { length } split /\n/, $text;
}


1;
