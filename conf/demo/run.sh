#!/bin/bash
# The Airlock appliance demo: the real parts started for real (Debian's
# nginx with the Airlock module, Prometheus, airlock-alertd, Alertmanager),
# stand-ins only for what cannot exist here (GitHub's API and a log
# service: the echo fixture from tests/lib, which shows what reached it;
# the LLM provider: the scripted provider from tests/lib), then the
# agent's and the worker's requests, allowed and denied, one step at a
# time.
#
#   conf/demo/run.sh [--keep]     (make demo)
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

if [ $KEEP = 0 ]; then
    trap cleanup EXIT
else
    trap 'echo "left running; state in $STATE"' EXIT
fi

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
for u in airlock-agent airlock-worker; do
    id "$u" >/dev/null 2>&1 || die "user $u missing (auto/deps)"
done

PROM_PORT=$(free_port)
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
sed "s|@PROM_PORT@|$PROM_PORT|" "$TOP/conf/demo/prometheus.yml" \
    > "$STATE/prometheus.yml"
start prometheus.log prometheus --config.file="$STATE/prometheus.yml" \
    --storage.tsdb.path="$STATE/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT"
note "prometheus (real) on 127.0.0.1:$PROM_PORT"
start logs.log perl "$TOP/tests/lib/echo-upstream.pl" "$LOGS_PORT" \
    --log "$STATE/logs-fixture.jsonl"
note "log service stand-in (echo fixture) on 127.0.0.1:$LOGS_PORT"
start github.log perl "$TOP/tests/lib/echo-upstream.pl" "$GITHUB_PORT" \
    --log "$STATE/github-fixture.jsonl"
note "GitHub API stand-in (echo fixture) on 127.0.0.1:$GITHUB_PORT"

start llm.log python3 "$TOP/tests/lib/llm-provider.py" "$LLM_PORT" \
    --log "$STATE/llm-fixture.jsonl"
note "LLM provider stand-in (scripted fixture) on 127.0.0.1:$LLM_PORT"
start webhook.log python3 "$TOP/tests/lib/webhook-receiver.py" \
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
: > "$STATE/journal.jsonl"
sed -e "s|@TOP@|$TOP|g" -e "s|@STATE@|$STATE|g" \
    -e "s|@PROXY_PORT@|$PROXY_PORT|g" -e "s|@ADMIN_PORT@|$ADMIN_PORT|g" \
    "$TOP/conf/demo/nginx.conf.in" > "$STATE/nginx.conf"
if ! nginx -t -c "$STATE/nginx.conf" -e "$STATE/error.log" \
     > "$STATE/nginx-t.log" 2>&1
then
    sed 's/^/   /' "$STATE/nginx-t.log"
    die "nginx -t failed"
fi
sed 's/^/   /' "$STATE/nginx-t.log"
start nginx.log nginx -c "$STATE/nginx.conf" -e "$STATE/error.log"

mkdir -p "$STATE/alertd"
start alertd.log "$BUILD/airlock-alertd" --policy "$STATE/policy.yaml" \
    --keyring "$STATE/airlock.key" --journal "$STATE/journal.jsonl" \
    --state "$STATE/alertd" --foreground
note "airlock-alertd follows the journal"

for p in $PROM_PORT $LOGS_PORT $GITHUB_PORT $PROXY_PORT $LLM_PORT \
         $WEBHOOK_PORT $AM_PORT $ADMIN_PORT; do
    wait_port "$p" || die "port $p did not open (see $STATE/*.log)"
done
chmod 0666 "$STATE/airlock.sock"
note "nginx + Airlock on unix:$STATE/airlock.sock and 127.0.0.1:$PROXY_PORT"

# until Prometheus has scraped itself once, "up" has no samples
for i in $(seq 1 50); do
    curl -s "http://127.0.0.1:$PROM_PORT/api/v1/query?query=up" \
        | grep -q '"value"' && break
    sleep 0.2
done

say "4. the agent uses its named routes (identified by its unix uid)"
request airlock-agent 200 GET '/prometheus/query?query=up'
request airlock-agent 200 GET '/logs/checkout-api?since=5m'
note "the fixture echoes what it got; the proxy scrubbed the credential out"
note "of that reply ([REDACTED]).  What the log service received (the agent"
note "sent no credential):"
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

if [ $KEEP = 1 ]; then
    say "left running"
    echo "   curl --unix-socket $STATE/airlock.sock 'http://airlock/prometheus/query?query=up'"
    echo "   (as airlock-agent: runuser -u airlock-agent -- curl ...)"
    echo "   stop: kill$PIDS"
    trap - EXIT
fi

if [ $FAILED -ne 0 ]; then
    printf '\n%s%d step(s) did not behave as expected%s\n' "$red" "$FAILED" "$off"
    exit 1
fi

printf '\n%sdemo complete: every step behaved as expected%s\n' "$green" "$off"
