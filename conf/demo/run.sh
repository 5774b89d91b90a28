#!/bin/bash
# The Airlock appliance demo: the real parts started for real (Debian's
# nginx with the Airlock module, Prometheus behind basic auth scraping
# this machine's node exporter, airlock-alertd, Alertmanager, Redis,
# airlock-agent with no network, the worker when it is built), stand-ins
# only for what cannot exist here (GitHub's API: the echo fixture from
# tests/lib, which shows what reached it; a log service: log-service.py;
# the LLM provider: the scripted provider from tests/lib, driven by the
# scenario files here), then the agent's and the worker's requests,
# allowed and denied, one step at a time, and the two assistant
# scenarios asked with the airlock CLI.
#
#   conf/demo/run.sh [--keep]     (make demo; --keep: make demo-up)
#   conf/demo/run.sh --down       (make down: stop a kept demo)
#
# Every step says what it expects and checks it; the demo exits non-zero
# if the appliance does anything else.  --keep leaves everything running
# and prints how to talk to it.  Run as root (it starts clients as the
# airlock-agent and airlock-worker users).

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${AIRLOCK_BUILD:-$TOP/build}
CTL=$BUILD/airlockctl
KEEP=0
[ "${1:-}" = "--keep" ] && KEEP=1
KEPT=/run/airlock-demo.state

if [ "${1:-}" = "--down" ]; then
    if [ ! -s "$KEPT" ]; then
        echo "no demo is up"
        exit 0
    fi
    state=$(cat "$KEPT")
    # only the processes this demo started, by the pids it recorded
    for p in $(cat "$state/pids" 2>/dev/null); do
        kill "$p" 2>/dev/null
    done
    sleep 1
    for p in $(cat "$state/pids" 2>/dev/null); do
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$state" "$KEPT"
    echo "demo stopped"
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "run the demo as root: it starts clients as other users" >&2
    exit 2
fi

STATE=$(mktemp -d /tmp/airlock-demo.XXXXXX)
chmod 0755 "$STATE"
PIDS=""
FAILED=0

bold=$(printf '\033[1m'); dim=$(printf '\033[2m'); red=$(printf '\033[31m')
green=$(printf '\033[32m'); off=$(printf '\033[0m')
[ -t 1 ] || { bold=; dim=; red=; green=; off=; }

cleanup() {
    for p in $PIDS; do
        kill "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$STATE"
}

# kept (--keep) only once it is up: a demo that stops on the way stops
# what it started, which make down could not find
trap cleanup EXIT

say()  { printf '\n%s== %s%s\n' "$bold" "$*" "$off"; }
note() { printf '%s   %s%s\n' "$dim" "$*" "$off"; }
die()  { printf '%sdemo: %s%s\n' "$red" "$*" "$off" >&2; exit 1; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
    local i
    for i in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

start() {
    local log=$1
    shift
    "$@" >"$STATE/$log" 2>&1 &
    PIDS="$PIDS $!"
    echo "$!" >> "$STATE/pids"
}

# the Python fixtures from tests/lib exit when their parent does; a shell
# that waits for them stays their parent after run.sh --keep returns
start_fixture() {
    local log=$1
    shift
    start "$log" sh -c '"$@" & wait' sh "$@"
}

# request AS EXPECT METHOD PATH [curl args]: prints the exchange and checks
# the status code
request() {
    local as=$1 expect=$2 method=$3 path=$4
    shift 4
    local who=(runuser -u "$as" --) code
    [ "$as" = tools ] && who=()

    printf '%s%s%s %s %s\n' "$bold" "$as" "$off" "$method" "$path"
    if [ "$as" = tools ]; then
        code=$(curl -s -o "$STATE/reply" -w '%{http_code}' -X "$method" \
               "$@" "http://127.0.0.1:$PROXY_PORT$path")
    else
        code=$("${who[@]}" curl -s -w '\n%{http_code}' \
               -X "$method" --unix-socket "$STATE/airlock.sock" "$@" \
               "http://airlock$path" | tee "$STATE/out" | tail -n 1)
        head -n -1 "$STATE/out" > "$STATE/reply"
    fi

    printf '   -> %s  %s\n' "$code" "$(head -c 300 "$STATE/reply" | tr -d '\n')"
    if [ "$code" = "$expect" ]; then
        printf '   %sok: expected %s%s\n' "$green" "$expect" "$off"
    else
        printf '   %sUNEXPECTED: wanted %s%s\n' "$red" "$expect" "$off"
        FAILED=$((FAILED + 1))
    fi
}

for b in "$CTL" "$BUILD/modules/ngx_http_airlock_module.so"; do
    [ -e "$b" ] || die "$b is missing: run make first"
done
command -v prometheus >/dev/null || die "prometheus missing (auto/deps --demo)"
command -v prometheus-node-exporter >/dev/null \
    || die "prometheus-node-exporter missing (auto/deps --demo)"
command -v redis-server >/dev/null || die "redis-server missing (auto/deps)"
[ -x "$BUILD/airlock-agent" ] || die "$BUILD/airlock-agent is missing: run make"
if [ $KEEP = 1 ] && [ -s "$KEPT" ]; then
    die "a demo is already up ($(cat "$KEPT")): make down first"
fi
for u in airlock-agent airlock-worker; do
    id "$u" >/dev/null 2>&1 || die "user $u missing (auto/deps)"
done

PROM_PORT=$(free_port)
NODE_PORT=$(free_port)
LOGS_PORT=$(free_port)
GITHUB_PORT=$(free_port)
WEBHOOK_PORT=$(free_port)
PROXY_PORT=$(free_port)
ADMIN_PORT=$(free_port)
AM_PORT=$(free_port)
LLM_PORT=$(free_port)

say "1. the appliance key and the sealed secrets"
"$CTL" keygen "$STATE/airlock.key" 2>/dev/null || die "keygen failed"
note "airlockctl keygen $STATE/airlock.key  (private 0600, public .pub)"

seal() {
    printf %s "$1" | "$CTL" seal --pub "$STATE/airlock.key.pub"
}

TOOLS_TOKEN=demo-tools-token
HMAC_SECRET=whsec_ZGVtby13ZWJob29rLXNlY3JldA==
sed -e "s|@TOOLS_TOKEN_SHA256@|$(printf %s $TOOLS_TOKEN | sha256sum | cut -d' ' -f1)|" \
    -e "s|@SEALED_PROM@|$(seal demo:prometheus-password)|" \
    -e "s|@SEALED_LOGS@|$(seal logs-token-4f1c9e)|" \
    -e "s|@SEALED_GITHUB@|$(seal demo-github-pr-scoped-token)|" \
    -e "s|@SEALED_HMAC@|$(seal "$HMAC_SECRET")|" \
    -e "s|@SEALED_OPENAI@|$(seal sk-demo-provider-key-kept-in-the-proxy)|" \
    -e "s|@PROM_PORT@|$PROM_PORT|" -e "s|@LOGS_PORT@|$LOGS_PORT|" \
    -e "s|@GITHUB_PORT@|$GITHUB_PORT|" -e "s|@WEBHOOK_PORT@|$WEBHOOK_PORT|" \
    -e "s|@AM_PORT@|$AM_PORT|" -e "s|@LLM_PORT@|$LLM_PORT|" \
    "$TOP/conf/demo/policy.yaml.in" > "$STATE/policy.yaml"
note "secrets are sealed with airlockctl seal; the policy holds no plaintext:"
grep -m 2 'sealed:' "$STATE/policy.yaml" | sed 's/^/     /'

say "2. check the policy, as an operator does before every reload"
"$CTL" check "$STATE/policy.yaml" --key "$STATE/airlock.key" \
    || die "policy check failed"
"$CTL" routes "$STATE/policy.yaml"

say "3. start the services"
start node-exporter.log prometheus-node-exporter \
    --web.listen-address="127.0.0.1:$NODE_PORT"
note "prometheus-node-exporter (real, this machine) on 127.0.0.1:$NODE_PORT"
sed "s|@NODE_PORT@|$NODE_PORT|" "$TOP/conf/demo/prometheus.yml" \
    > "$STATE/prometheus.yml"
# basic auth on Prometheus's API: user demo, the password only Airlock has
# (sealed in the policy as prom_basic); bcrypt through libc's crypt()
PROM_HASH=$(perl -e 'my @c = ("a".."z", "A".."Z", 0..9, ".", "/");
    print crypt($ARGV[0], q{$2b$10$} . join "", map { $c[rand @c] } 1..22)' \
    prometheus-password)
printf 'basic_auth_users:\n  demo: %s\n' "$PROM_HASH" > "$STATE/web.yml"
start prometheus.log prometheus --config.file="$STATE/prometheus.yml" \
    --web.config.file="$STATE/web.yml" \
    --storage.tsdb.path="$STATE/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT"
note "prometheus (real) on 127.0.0.1:$PROM_PORT, its API behind basic auth"
start logs.log python3 "$TOP/conf/demo/log-service.py" "$LOGS_PORT" \
    --token logs-token-4f1c9e --logs "$TOP/conf/demo/logs" \
    --log "$STATE/logs-fixture.jsonl"
note "log service stand-in on 127.0.0.1:$LOGS_PORT (conf/demo/logs/)"
start github.log perl "$TOP/tests/lib/echo-upstream.pl" "$GITHUB_PORT" \
    --log "$STATE/github-fixture.jsonl"
note "GitHub API stand-in (echo fixture) on 127.0.0.1:$GITHUB_PORT"

: > "$STATE/llm.control"
start_fixture llm.log python3 "$TOP/tests/lib/llm-provider.py" "$LLM_PORT" \
    --log "$STATE/llm-fixture.jsonl" --control "$STATE/llm.control"
note "LLM provider stand-in (scripted fixture) on 127.0.0.1:$LLM_PORT"
start_fixture webhook.log python3 "$TOP/tests/lib/webhook-receiver.py" \
    --port "$WEBHOOK_PORT" --secret "$HMAC_SECRET" \
    --log "$STATE/webhook.jsonl"
note "a webhook receiver that checks signatures on 127.0.0.1:$WEBHOOK_PORT"
printf 'route:\n  receiver: ops\nreceivers:\n  - name: ops\n' \
    > "$STATE/alertmanager.yml"
start alertmanager.log prometheus-alertmanager \
    --config.file="$STATE/alertmanager.yml" \
    --storage.path="$STATE/am" --cluster.listen-address= \
    --web.listen-address="127.0.0.1:$AM_PORT"
note "alertmanager (real) on 127.0.0.1:$AM_PORT"

for d in body proxy fastcgi uwsgi scgi; do mkdir -p "$STATE/$d"; done
# /api/'s one user, demo, with a password of this run's (SHA-512 crypt,
# which nginx reads through libc's crypt()); nginx's workers read it
API_PASS=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
perl -e 'my @c = ("a".."z", "A".."Z", 0..9, ".", "/");
    print "demo:", crypt($ARGV[0], q{$6$} . join("", map { $c[rand @c] }
                                                  1..16)), "\n"' \
    "$API_PASS" > "$STATE/api.htpasswd"
chgrp www-data "$STATE/api.htpasswd"
chmod 0640 "$STATE/api.htpasswd"
: > "$STATE/journal.jsonl"
sed -e "s|@TOP@|$TOP|g" -e "s|@BUILD@|$BUILD|g" -e "s|@STATE@|$STATE|g" \
    -e "s|@PROXY_PORT@|$PROXY_PORT|g" -e "s|@ADMIN_PORT@|$ADMIN_PORT|g" \
    "$TOP/conf/demo/nginx.conf.in" > "$STATE/nginx.conf"
# an ASan build's module loads only with the runtime in place first, as
# the tests' nginx has it (tests/lib/Airlock/Test.pm)
NGX_ENV=
if grep -q '^SAN = 1$' "$BUILD/config.mk" 2>/dev/null; then
    cc=$(sed -n 's/^CC = //p' "$BUILD/config.mk")
    NGX_ENV="LD_PRELOAD=$(${cc:-cc} -print-file-name=libasan.so)"
    NGX_ENV="$NGX_ENV ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}"
fi
if ! env $NGX_ENV nginx -t -c "$STATE/nginx.conf" -e "$STATE/error.log" \
     > "$STATE/nginx-t.log" 2>&1
then
    sed 's/^/   /' "$STATE/nginx-t.log"
    die "nginx -t failed"
fi
sed 's/^/   /' "$STATE/nginx-t.log"
start nginx.log env $NGX_ENV nginx -c "$STATE/nginx.conf" \
    -e "$STATE/error.log"

mkdir -p "$STATE/alertd"
start alertd.log "$BUILD/airlock-alertd" --policy "$STATE/policy.yaml" \
    --keyring "$STATE/airlock.key" --journal "$STATE/journal.jsonl" \
    --state "$STATE/alertd" --foreground
note "airlock-alertd follows the journal"

for p in $PROM_PORT $NODE_PORT $LOGS_PORT $GITHUB_PORT $PROXY_PORT $LLM_PORT \
         $WEBHOOK_PORT $AM_PORT $ADMIN_PORT; do
    wait_port "$p" || die "port $p did not open (see $STATE/*.log)"
done
chmod 0666 "$STATE/airlock.sock"
note "nginx + Airlock on unix:$STATE/airlock.sock and 127.0.0.1:$PROXY_PORT"

# until Prometheus has scraped the node exporter once, no samples
for i in $(seq 1 100); do
    curl -s -u demo:prometheus-password \
        "http://127.0.0.1:$PROM_PORT/api/v1/query?query=node_load1" \
        | grep -q '"value"' && break
    sleep 0.2
done

say "4. the agent uses its named routes (identified by its unix uid)"
request airlock-agent 200 GET '/prometheus/query?query=node_load1'
printf '%sroot%s curl http://127.0.0.1:%s/api/v1/query?query=node_load1\n' \
    "$bold" "$off" "$PROM_PORT"
code=$(curl -s -o /dev/null -w '%{http_code}' \
       "http://127.0.0.1:$PROM_PORT/api/v1/query?query=node_load1")
printf '   -> %s  (Prometheus directly, without the credential)\n' "$code"
if [ "$code" = 401 ]; then
    printf '   %sok: expected 401%s\n' "$green" "$off"
else
    printf '   %sUNEXPECTED: wanted 401%s\n' "$red" "$off"
    FAILED=$((FAILED + 1))
fi
request airlock-agent 200 GET '/logs/checkout-api?since=5m'
note "what the log service received (the agent sent no credential; the"
note "proxy injected the token):"
python3 - "$STATE/logs-fixture.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
print("     %s %s" % (r["method"], r["target"]))
for k, v in r["headers"]:
    print("     %s: %s" % (k, v))
PY

say "5. the agent opens a remediation pull request; the branch rule holds"
request airlock-agent 403 POST /github/pull-request \
    -H 'Content-Type: application/json' \
    -d '{"head":"main","base":"main","title":"push straight to main"}'
request airlock-agent 403 POST /github/pull-request \
    -H 'Content-Type: application/json' \
    -d '{"head":"remediation/x","head":"main","base":"main","title":"dup key"}'
request airlock-agent 200 POST /github/pull-request \
    -H 'Content-Type: application/json' \
    -d '{"head":"remediation/raise-oom-limit","base":"main","title":"Raise memory limit"}'
note "the GitHub stand-in saw the PR-scoped token, injected by the proxy:"
python3 - "$STATE/github-fixture.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
print("     %s %s  body=%s" % (r["method"], r["target"], r.get("body")))
print("     " + "; ".join("%s: %s" % (k, v) for k, v in r["headers"]
                         if k.lower() == "authorization"))
PY

say "6. everything else is a 403 with a reason, and never reaches a service"
request airlock-agent 403 GET '/logs/api%2F..%2Fsecrets'
request airlock-agent 400 GET '/logs/..%2F..%2Fetc%2Fpasswd'
note "(nginx itself refuses a path that climbs above the root)"
request airlock-agent 403 GET '/prometheus/query?query=up&query=down'
request airlock-agent 403 DELETE '/prometheus/query?query=up'
request airlock-agent 403 GET '/exfiltrate?to=https://attacker.example'
request airlock-worker 403 POST /github/pull-request \
    -H 'Content-Type: application/json' \
    -d '{"head":"remediation/x","base":"main","title":"the worker may not"}'
request nobody 403 GET '/prometheus/query?query=up'
request tools 403 GET '/prometheus/query?query=up' \
    -H 'Proxy-Authorization: Bearer wrong-token'
request tools 200 GET '/prometheus/query?query=up' \
    -H "Proxy-Authorization: Bearer $TOOLS_TOKEN"

say "7. every denial is one JSON line (the hand-off to alerting)"
tail -n 4 "$STATE/deny.log" | sed 's/^/   /'
n=$(wc -l < "$STATE/deny.log")
note "$n denials logged"

say "8. the agent keeps trying: an alert, signed, at the webhook and in Alertmanager"
note "policy: alerts.deny is 3 denials of one reason in 60s"
request airlock-agent 403 GET '/upload?dest=s3://attacker-bucket'
request airlock-agent 403 POST '/paste' -d 'aws_secret=...'
for i in $(seq 1 50); do
    grep -q '"verified": *true' "$STATE/webhook.jsonl" 2>/dev/null && break
    sleep 0.2
done
python3 - "$STATE/webhook.jsonl" <<'PY' || FAILED=$((FAILED + 1))
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ok = [l for l in lines if l.get("verified") and l.get("json")]
for l in ok[:2]:
    a = l["json"]
    print("   webhook-id %s  signature verified" % l["id"])
    print("     %s: client %s, reason %s, %s denials in %ss, sample %r"
          % (a["kind"], a["client"], a["reason"], a["count"], a["window"],
             a["sample"]))
sys.exit(0 if ok else 1)
PY
for i in $(seq 1 50); do
    curl -s "http://127.0.0.1:$AM_PORT/api/v2/alerts" \
        | grep -q AirlockDenied && break
    sleep 0.2
done
curl -s "http://127.0.0.1:$AM_PORT/api/v2/alerts" | python3 -c '
import json, sys
alerts = json.load(sys.stdin)
for a in alerts:
    l = a["labels"]
    print("   alertmanager: %s client=%s reason=%s severity=%s"
          % (l["alertname"], l.get("client"), l.get("reason"),
             l.get("severity")))
sys.exit(0 if alerts else 1)' || FAILED=$((FAILED + 1))
note "the admin listener shows the counters:"
curl -s "http://127.0.0.1:$ADMIN_PORT/status" | head -c 400 | sed 's/^/   /'
echo

say "9. the LLM gateway: the agent calls it as if it were the provider"
request airlock-agent 200 POST /v1/proxy/openai/chat/completions \
    -H 'Content-Type: application/json' \
    -d '{"model":"gpt-4o-mini","max_tokens":4096,"messages":[{"role":"user","content":"why is prod-vm-04 slow?"}]}'
note "what the provider received: the real key, max_tokens clamped to 512:"
python3 - "$STATE/llm-fixture.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
print("     " + json.dumps({k: r[k] for k in r if k in ("method", "path")}))
hdrs = r.get("headers") or {}
items = hdrs.items() if isinstance(hdrs, dict) else hdrs
for k, v in items:
    if k.lower() == "authorization":
        print("     Authorization: %s" % v)
body = r.get("body") or r.get("json") or {}
if isinstance(body, str):
    body = json.loads(body)
print("     max_tokens sent: %s" % (body.get("max_tokens")
                                     or body.get("max_completion_tokens")))
PY
request airlock-agent 403 POST /v1/proxy/openai/chat/completions \
    -H 'Content-Type: application/json' \
    -d '{"model":"gpt-4-turbo","messages":[{"role":"user","content":"hi"}]}'
request airlock-worker 403 POST /v1/proxy/openai/chat/completions \
    -H 'Content-Type: application/json' \
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'
note "streaming: the events arrive as the provider sends them"
runuser -u airlock-agent -- curl -sN --unix-socket "$STATE/airlock.sock" \
    -H 'Content-Type: application/json' \
    -d '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}' \
    http://airlock/v1/proxy/openai/chat/completions | head -c 600 | sed 's/^/   /'
note "one usage line per call:"
tail -n 2 "$STATE/llm-usage.jsonl" | sed 's/^/   /'

say "10. airlockctl explain gives the same answer the proxy gave"
"$CTL" explain "$STATE/policy.yaml" --uid "$(id -u airlock-worker)" \
    POST /github/pull-request | sed 's/^/   /'

say "11. the assistant: Redis, the worker, and airlock-agent with no network"
mkdir -p "$STATE/redis" "$STATE/agent" "$STATE/bin"
# Redis holds the jobs and the sessions: as on the appliance (its socket
# for group redis, which the agent and the worker join), only what the
# demo runs reaches it, Redis (root), the worker and the agent, not
# every local user (who would queue jobs fetched as the client
# "worker").  The worker drops root for airlock-worker and keeps only
# the groups it was started with: group redis is one of them
getent group redis >/dev/null \
    || die "no group redis (the redis-server package makes it)"
chgrp redis "$STATE/redis" && chmod 0750 "$STATE/redis" \
    || die "cannot restrict $STATE/redis"
# and, as there, its users are airlock-redis-users': the default user
# off, the agent (driven by a model) and the worker each a user of its
# own with only what it uses and none of Redis's admin commands
# (conf/redis-acl.conf: CONFIG, FLUSHALL, SHUTDOWN, REPLICAOF, or the
# agent's DEL or XTRIM of the job stream, would lose the jobs and
# results), each password in a file of the client's own, 0400
"$TOP/conf/airlock-redis-users" --agent-owner airlock-agent \
    --worker-owner root "$TOP/conf/redis-acl.conf" \
    "$STATE/redis/users.acl" "$STATE/redis-agent.pass" \
    "$STATE/redis-worker.pass" || die "cannot write Redis's users"
# and, as there, bounded: a quarter of the machine's memory, noeviction
# (appliance-image/root/usr/lib/airlock/redis-maxmemory, which
# AIRLOCK_REDIS_MAXMEMORY sets as on the appliance): one user's sessions
# fill it, and everyone is told Redis is full, before the kernel's OOM
# killer picks Redis or nginx
"$TOP/appliance-image/root/usr/lib/airlock/redis-maxmemory" \
    "$STATE/redis/memory.conf" || die "cannot bound Redis's memory"
start redis.log redis-server "$STATE/redis/memory.conf" \
    --aclfile "$STATE/redis/users.acl" --port 0 \
    --unixsocket "$STATE/redis/redis.sock" --unixsocketperm 777 --save '' \
    --appendonly no --dir "$STATE/redis"
for i in $(seq 1 100); do
    [ -S "$STATE/redis/redis.sock" ] && break
    sleep 0.1
done
note "redis-server on unix:$STATE/redis/redis.sock (sessions, jobs)"

WORKER=0
WORKER_BIN=${AIRLOCK_WORKER_BIN:-$BUILD/airlock-worker}
ROOTFS=${AIRLOCK_ROOTFS:-$BUILD/worker-rootfs}
BACKEND=bwrap
command -v runsc >/dev/null && BACKEND=gvisor
if [ -x "$WORKER_BIN" ] && [ -x "$ROOTFS/usr/bin/python3" ]; then
    mkdir -p "$STATE/work"
    sed -e "s|@STATE@|$STATE|g" -e "s|@ROOTFS@|$ROOTFS|g" \
        -e "s|@BACKEND@|$BACKEND|g" \
        "$TOP/conf/demo/worker.conf.in" > "$STATE/worker.conf"
    start worker.log setpriv --groups redis -- \
        "$WORKER_BIN" -c "$STATE/worker.conf"
    WORKER=1
    note "airlock-worker: jobs from Redis, inputs through Airlock as the"
    note "airlock-worker user, scripts in $BACKEND sandboxes"
else
    note "airlock-worker or its sandbox rootfs is not built here (make,"
    note "make worker-rootfs): the load question skips its run_python step"
fi

# the agent runs as airlock-agent, in a network namespace of its own: its
# only ways out are the unix sockets of Airlock, Redis and its own.  Its
# socket is, as on the appliance (docs/agent.md, "Who may use the
# agent"), 0660 and one group's: here www-data, the group nginx's
# workers run as (nginx.conf.in's user), which publish it at /api/, so
# root (the demo's airlock ask) and nginx connect, and no other local
# user, who would ask with the agent's tools and LLM tokens.  The
# directory is set-group-ID and www-data's, so the socket is the
# group's as it is made (the agent is not a member), and keeps others
# out too: the appliance's /run/airlock/agent with airlock-api.  As
# there, a new session is made only under an id of 128 random bits
# (--random-session-ids); the demo's questions are root's, which may
# name any
cp "$BUILD/airlock-agent" "$BUILD/airlock" "$STATE/bin/"
chown airlock-agent:www-data "$STATE/agent" && chmod 2750 "$STATE/agent" \
    || die "cannot restrict $STATE/agent"
start agent.log unshare -n runuser -u airlock-agent -G redis -- \
    "$STATE/bin/airlock-agent" --listen "$STATE/agent/agent.sock" \
    --listen-group www-data \
    --gateway "$STATE/airlock.sock" --redis "unix:$STATE/redis/redis.sock" \
    --redis-user airlock-agent \
    --redis-password-file "$STATE/redis-agent.pass" \
    --policy "$STATE/policy.yaml" --max-denials 5 --api-peer www-data \
    --random-session-ids
for i in $(seq 1 100); do
    [ -S "$STATE/agent/agent.sock" ] && break
    sleep 0.1
done
[ -S "$STATE/agent/agent.sock" ] \
    || die "the agent did not start (see $STATE/agent.log)"
note "airlock-agent on unix:$STATE/agent/agent.sock, published at"
note "http://127.0.0.1:$ADMIN_PORT/api/ by nginx; its tools are the policy's:"
"$CTL" tools "$STATE/policy.yaml" --client agent \
    | python3 -c 'import json, sys
for t in json.load(sys.stdin):
    print("     %-20s %s" % (t["function"]["name"],
                             t["function"]["description"][:54]))'

# scenario FILE: the scripted model's answers for the next question
scenario() {
    python3 - "$TOP/conf/demo/$1" "$WORKER" > "$STATE/llm.control" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))
out = []
for s in steps:
    if s.pop("needs_worker", False) and sys.argv[2] != "1":
        continue
    alt = s.pop("quote_no_worker", None)
    if alt and sys.argv[2] != "1":
        s["quote"] = alt
    out.append(s)
json.dump(out, sys.stdout)
PY
}

# ask EXPECT_EXIT QUESTION: airlock ask, as a person would, shown
ask() {
    local expect=$1 q=$2 rc
    printf '%s$ airlock ask %s%s\n' "$bold" "'$q'" "$off"
    "$STATE/bin/airlock" ask --socket "$STATE/agent/agent.sock" \
        --session "demo-$3" "$q" 2>&1 | sed 's/^/   /'
    rc=${PIPESTATUS[0]}
    "$STATE/bin/airlock" history --socket "$STATE/agent/agent.sock" \
        "demo-$3" > "$STATE/history-$3.json"
    if [ "$rc" = "$expect" ]; then
        printf '   %sok: exit %s%s\n' "$green" "$rc" "$off"
    else
        printf '   %sUNEXPECTED: exit %s, wanted %s%s\n' "$red" "$rc" \
            "$expect" "$off"
        FAILED=$((FAILED + 1))
    fi
}

say "12. scenario one: why is the load high on this host right now?"
note "the model is scripted (conf/demo/scenario-load.json); the metrics are"
note "this machine's, read by Prometheus, fetched through Airlock"
scenario scenario-load.json
ask 0 "why is the load high on this host right now?" load
REAL=$(curl -s -u demo:prometheus-password \
       "http://127.0.0.1:$PROM_PORT/api/v1/query?query=node_load1" \
       | python3 -c 'import json, sys
print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')
note "node_load1 asked of Prometheus directly, with the password: $REAL"
python3 - "$STATE/history-load.json" <<'PY' || FAILED=$((FAILED + 1))
import json, re, sys
h = json.load(open(sys.argv[1]))
ev = h["runs"][-1]["events"]
answer = [e["text"] for e in ev if e["type"] == "answer"]
calls = [e for e in ev if e["type"] == "tool_call"]
ok = bool(answer) and re.search(r"[0-9]\.[0-9]", answer[0]) \
     and any(c.get("route") == "prometheus-query" for c in calls)
print("   %s: the answer quotes the number the route returned"
      % ("ok" if ok else "UNEXPECTED"))
sys.exit(0 if ok else 1)
PY

say "13. scenario two: a planted log line tells the assistant to fetch and run"
note "conf/demo/logs/checkout-api.log carries the line; the scripted model"
note "(conf/demo/scenario-attack.json) plays one that obeys it"
grep -m 1 'AI ASSISTANT' "$TOP/conf/demo/logs/checkout-api.log" \
    | cut -c 1-150 | sed 's/^/     /'
scenario scenario-attack.json
ask 0 "what is wrong with checkout-api?" attack
note "the proxy's deny log:"
grep -F 'evil.example' "$STATE/deny.log" | tail -n 3 | cut -c 1-160 \
    | sed 's/^/   /'
for i in $(seq 1 50); do
    curl -s "http://127.0.0.1:$AM_PORT/api/v2/alerts" \
        | grep -q '"reason":"query"' && break
    sleep 0.2
done
curl -s "http://127.0.0.1:$AM_PORT/api/v2/alerts" | python3 -c '
import json, sys
alerts = [a for a in json.load(sys.stdin)
          if a["labels"].get("client") == "agent"
          and a["labels"].get("reason") == "query"]
for a in alerts[:1]:
    l = a["labels"]
    print("   alertmanager: %s client=%s reason=%s severity=%s"
          % (l["alertname"], l.get("client"), l.get("reason"),
             l.get("severity")))
print("   %s: the attack raised an alert"
      % ("ok" if alerts else "UNEXPECTED"))
sys.exit(0 if alerts else 1)' || FAILED=$((FAILED + 1))

if [ $KEEP = 1 ]; then
    say "left running"
    echo "$STATE" > "$KEPT"
    echo "   $STATE/bin/airlock ask \\"
    echo "       --socket $STATE/agent/agent.sock 'why is the load high?'"
    echo "   $STATE/bin/airlock ask \\"
    echo "       --url http://demo:$API_PASS@127.0.0.1:$ADMIN_PORT/api/ 'hello'"
    echo "   (the scripted model answers from $STATE/llm.control)"
    echo "   (the agent's socket is root's and group www-data's, 0660)"
    echo "   curl --unix-socket $STATE/airlock.sock 'http://airlock/prometheus/query?query=up'"
    echo "   (as airlock-agent: runuser -u airlock-agent -- curl ...)"
    echo "   stop: make down"
    trap - EXIT
fi

if [ $FAILED -ne 0 ]; then
    printf '\n%s%d step(s) did not behave as expected%s\n' "$red" "$FAILED" "$off"
    exit 1
fi

printf '\n%sdemo complete: every step behaved as expected%s\n' "$green" "$off"
