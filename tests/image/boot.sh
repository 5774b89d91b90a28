#!/bin/sh
# make image-test: boots the appliance image under qemu with software
# emulation (TCG: KVM is not assumed), waits for the ready line on the
# serial console, and checks from the host, through a forwarded port and
# the console:
#
# - the first boot printed the appliance's public key; nginx, alertd,
#   nftables and the worker are active;
# - the agent's and the worker's units have no interface but loopback
#   (the image's airlock-selftest probe);
# - with tests/image/guest-check.sh handed to the guest through qemu's
#   firmware configuration (-fw_cfg): an unknown route gets Airlock's 403
#   and the same request id is in the guest's deny log; a route added with
#   `airlockctl edit` (EDITOR a script) answers after the reload; a broken
#   edit is refused with FILE:LINE:COLUMN and the route keeps answering;
#   a Python job runs in the worker's gVisor sandbox and its result comes
#   back through Redis; a job past its wall time is killed and nothing of
#   either job is left behind;
# - the worker's main process, in its mount namespace and as its uid,
#   reaches the proxy's socket and not the agent's;
# - alertd's user may connect to a receiver off the appliance (the host)
#   while the policy names it as a sink, and not before or after;
# - after Redis restarts, the worker's unit still sees Redis's socket and
#   a job still runs;
# - the agent, started, has its socket 0660 and airlock-api's: daemons
#   outside the group (systemd-resolve, redis) cannot connect, www-data
#   and root can; /api/ lets no one in without /etc/airlock/api.htpasswd,
#   and with one made by `openssl passwd -6` a wrong password gets 401
#   and the right one the agent's own 404;
# - the airlock package installed again over itself, as an upgrade is (the
#   .deb beside the image, IMAGE_DIR/../deb, as make image leaves it;
#   AIRLOCK_DEB=FILE another), leaves alertd and the worker running.
#
# TAP output.
#
#   tests/image/boot.sh IMAGE_DIR     (airlock.qcow2, vmlinuz, initrd.img,
#                                      cmdline, as build.sh writes them)
#
# The disk is opened with -snapshot: the image is never changed.
# AIRLOCK_BOOT_TIMEOUT (default 1800 s) is only a safety net.
# AIRLOCK_KEEP_CONSOLE=FILE keeps a copy of the serial console there.

set -u

dir=${1:?usage: tests/image/boot.sh IMAGE_DIR}
here=$(cd "$(dirname "$0")" && pwd)
timeout=${AIRLOCK_BOOT_TIMEOUT:-1800}
n=0
failed=0

# printf, not echo: dash's echo would expand the \n of the JSON quoted
ok() {
    n=$((n + 1))
    printf 'ok %s - %s\n' "$n" "$1"
}

not_ok() {
    n=$((n + 1))
    failed=$((failed + 1))
    printf 'not ok %s - %s\n' "$n" "$1"
}

for f in airlock.qcow2 vmlinuz initrd.img cmdline; do
    [ -f "$dir/$f" ] || { echo "Bail out! $dir/$f is missing (make image)"; exit 1; }
done
command -v qemu-system-x86_64 >/dev/null 2>&1 \
    || { echo "Bail out! qemu-system-x86_64 is missing (auto/deps image)"; exit 1; }

# the airlock package for the upgrade check, handed in like the script
deb=${AIRLOCK_DEB:-$(ls "$dir"/../deb/airlock_*.deb 2>/dev/null | tail -1)}
fwdeb=""
[ -n "$deb" ] && [ -f "$deb" ] && fwdeb="name=opt/airlock/deb,file=$deb"

tmp=$(mktemp -d)
console=$tmp/console.log
: > "$console"

# a free port on the host's loopback for the clients' listener (3128)
port=$(perl -MIO::Socket::INET -e \
    'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1",
                                 LocalPort => 0)->sockport')

# a webhook receiver on the host's loopback (10.0.2.2:PORT to the guest):
# answers 200 to anything
hookport=$(perl -MIO::Socket::INET -e \
    'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1",
                                 LocalPort => 0)->sockport')
perl -MIO::Socket::INET -e '
    my $s = IO::Socket::INET->new(Listen => 5, LocalAddr => "127.0.0.1",
                                  LocalPort => $ARGV[0], ReuseAddr => 1)
        or die "webhook receiver: $!";
    while (my $c = $s->accept) {
        sysread($c, my $b, 65536);
        print $c "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
        close $c;
    }' "$hookport" &
hook=$!

start=$(date +%s)
qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 2 -m 1024 \
    -display none -monitor none -no-reboot \
    -serial "file:$console" \
    -kernel "$dir/vmlinuz" -initrd "$dir/initrd.img" \
    -append "$(cat "$dir/cmdline") airlock.selftest" \
    -drive "file=$dir/airlock.qcow2,if=virtio,format=qcow2" -snapshot \
    -fw_cfg "name=opt/airlock/check,file=$here/guest-check.sh" \
    ${fwdeb:+-fw_cfg "$fwdeb"} \
    -fw_cfg "name=opt/airlock/hookport,string=$hookport" \
    -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:3128" \
    -device virtio-net-pci,netdev=n0 \
    -device virtio-rng-pci &
qemu=$!

cleanup() {
    kill "$qemu" "$hook" 2>/dev/null
    wait "$qemu" "$hook" 2>/dev/null
    [ -n "${AIRLOCK_KEEP_CONSOLE:-}" ] && cp "$console" "$AIRLOCK_KEEP_CONSOLE"
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# guest-check.sh's lines: "airlock-check: KEY REST"; check KEY waits
# for the first one and prints REST (the serial console ends lines with
# CR LF)
check() {
    while :; do
        l=$(tr -d '\r' < "$console" | grep -a -m1 "airlock-check: $1\( \|\$\)")
        if [ -n "$l" ]; then
            printf '%s\n' "${l#*airlock-check: $1}" | sed 's/^ //'
            return 0
        fi
        kill -0 "$qemu" 2>/dev/null || return 1
        [ $(($(date +%s) - start)) -gt "$timeout" ] && return 1
        sleep 2
    done
}

# GET PATH [TOKEN]: the status code, the body in $tmp/body
get() {
    if [ -n "${2:-}" ]; then
        set -- "$1" -H "Proxy-Authorization: Bearer $2"
    fi
    u=$1
    shift
    curl -s -o "$tmp/body" -w '%{http_code}' --max-time 120 "$@" \
        "http://127.0.0.1:$port$u"
}

echo "# booting $dir/airlock.qcow2 under TCG (console: $console)"
ready=""
while :; do
    ready=$(grep -a -m1 'airlock: ready' "$console" || true)
    [ -n "$ready" ] && break
    if ! kill -0 "$qemu" 2>/dev/null; then
        echo "# qemu exited before the ready line"
        break
    fi
    if grep -aq 'Kernel panic' "$console"; then
        echo "# kernel panic"
        break
    fi
    if [ $(($(date +%s) - start)) -gt "$timeout" ]; then
        echo "# no ready line after $timeout s"
        break
    fi
    sleep 2
done
boot=$(($(date +%s) - start))

if [ -n "$ready" ]; then
    ok "ready line on the serial console after ${boot} s: $ready"
else
    not_ok "ready line on the serial console"
    tail -40 "$console" | sed 's/^/# /'
    echo "1..$n"
    exit 1
fi

case "$ready" in
*nginx=active*) ok "nginx is active" ;;
*) not_ok "nginx is active" ;;
esac
case "$ready" in
*alertd=active*) ok "airlock-alertd is active" ;;
*)
    not_ok "airlock-alertd is active"
    check alertd-log-end > /dev/null
    tr -d '\r' < "$console" | grep -a 'airlock-check: alertd-log ' \
        | sed 's/.*airlock-check: alertd-log /# /'
    ;;
esac

case "$ready" in
*nftables=active*) ok "the nftables ruleset is loaded" ;;
*) not_ok "the nftables ruleset is loaded" ;;
esac
case "$ready" in
*worker=active*) ok "airlock-worker is active" ;;
*) not_ok "airlock-worker is active" ;;
esac

if grep -aq 'airlock: appliance public key [A-Za-z0-9+/=]' "$console"; then
    ok "first boot printed the appliance public key"
else
    not_ok "first boot printed the appliance public key"
fi

# the agent's and the worker's units, run with a probe for a command
# (airlock-selftest.service, only with airlock.selftest on the kernel
# command line): loopback is their only interface
while ! grep -aq 'airlock-selftest: done' "$console"; do
    kill -0 "$qemu" 2>/dev/null || break
    [ $(($(date +%s) - start)) -gt "$timeout" ] && break
    sleep 2
done
for u in airlock-agent airlock-worker; do
    line=$(grep -a -m1 "airlock-selftest $u:" "$console" | sed 's/.*airlock-selftest/airlock-selftest/')
    case "$line" in
    *": if=lo, "*) ok "$u's unit has no interface but loopback: $line" ;;
    *) not_ok "$u's unit has no interface but loopback: $line" ;;
    esac
    case "$line" in
    *sockets=ww*) ok "$u reaches Airlock's and Redis's sockets" ;;
    *) not_ok "$u reaches Airlock's and Redis's sockets: $line" ;;
    esac
done
line=$(grep -a -m1 "airlock-selftest airlock-agent:" "$console")
case "$line" in
*"user=airlock-agent capbnd=0000000000000000"*)
    ok "airlock-agent runs as airlock-agent with no capability" ;;
*) not_ok "airlock-agent runs as airlock-agent with no capability: $line" ;;
esac
# CAP_DAC_OVERRIDE (1), CAP_KILL (5), CAP_SETGID (6), CAP_SETUID (7),
# CAP_SYS_CHROOT (18), CAP_SYS_ADMIN (21): conf/airlock-worker.service
line=$(grep -a -m1 "airlock-selftest airlock-worker:" "$console")
case "$line" in
*"capbnd=00000000002400e2"*)
    ok "airlock-worker's bounding set is the six capabilities its unit names" ;;
*) not_ok "airlock-worker's bounding set is the six capabilities its unit names: $line" ;;
esac

# the tools client's token once the edit below put its hash in the policy
token=test

if ! check ready-for-deny > /dev/null; then
    not_ok "the guest ran the check script"
    tail -40 "$console" | sed 's/^/# /'
    echo "1..$n"
    exit 1
fi

# before that edit, the example policy's tools client is no one's: a
# well-known token does not reach a route with the appliance's credential
# (sent before the unknown route, whose deny line starts the edit)
code=$(get '/prometheus/query?query=up' $token)
body=$(head -c 300 "$tmp/body" 2>/dev/null)
case "$code $body" in
'403 '*'"reason":"client_unknown"'*)
    ok "the shipped policy knows no token of a well-known value: $body" ;;
*) not_ok "the shipped policy knows no token of a well-known value (got $code: $body)" ;;
esac

# an unknown route, from the host through the forwarded port
code=$(get /airlock-check/unknown)
body=$(head -c 300 "$tmp/body" 2>/dev/null)
if [ "$code" = 403 ]; then
    ok "an unknown route gets 403"
else
    not_ok "an unknown route gets 403 (got $code)"
fi
case "$body" in
*'"error":"forbidden"'*) ok "the 403 is Airlock's JSON deny body: $body" ;;
*) not_ok "the 403 is Airlock's JSON deny body: $body" ;;
esac
rid=$(printf '%s' "$body" | sed -n 's/.*"request_id":"\([^"]*\)".*/\1/p')
line=$(check deny-line)
case "$line" in
*'"type":"deny"'*'"path":"/airlock-check/unknown"'*)
    ok "a deny line in the guest's deny log: $line" ;;
*'"path":"/airlock-check/unknown"'*)
    ok "a deny line in the guest's deny log: $line" ;;
*) not_ok "a deny line in the guest's deny log: $line" ;;
esac
if [ -n "$rid" ] && [ "${line#*$rid}" != "$line" ]; then
    ok "the deny line has the 403's request id $rid"
else
    not_ok "the deny line has the 403's request id ($rid)"
fi

# the edit cycle: a new route, then a refused edit
rc=$(check edit-ok)
grep -a 'airlock-check: edit-ok-out' "$console" \
    | sed 's/.*airlock-check: edit-ok-out/#/'
if [ "$rc" = 0 ]; then
    ok "airlockctl edit installed the new route"
else
    not_ok "airlockctl edit installed the new route (exit $rc)"
fi
# the reload replaces nginx's workers: a few tries
i=0
while :; do
    code=$(get /airlock-check/status $token)
    [ "$code" = 200 ] && break
    i=$((i + 1))
    [ $i -ge 30 ] && break
    sleep 2
done
if [ "$code" = 200 ] && grep -q '{' "$tmp/body"; then
    ok "the new route answers after the reload: $(head -c 120 "$tmp/body")"
else
    not_ok "the new route answers after the reload (got $code: $(head -c 200 "$tmp/body"))"
fi
code=$(get /airlock-check/status)
if [ "$code" = 403 ]; then
    ok "and only for its client (no token: 403)"
else
    not_ok "and only for its client (no token: got $code)"
fi

rc=$(check edit-broken)
out=$(tr -d '\r' < "$console" | grep -a 'airlock-check: edit-broken-out' \
    | sed 's/.*airlock-check: edit-broken-out //')
if [ "$rc" = 1 ]; then
    ok "airlockctl edit refuses a broken policy (exit 1)"
else
    not_ok "airlockctl edit refuses a broken policy (exit $rc)"
fi
pos=$(printf '%s\n' "$out" \
    | grep -m1 '^/etc/airlock/policy\.yaml\.edit:[0-9][0-9]*:[0-9][0-9]*: ')
if [ -n "$pos" ]; then
    ok "with file:line:column: $pos"
else
    not_ok "with file:line:column:"
    printf '%s\n' "$out" | sed 's/^/# /'
fi
if [ "$(check policy-unchanged)" = yes ]; then
    ok "the installed policy is unchanged"
else
    not_ok "the installed policy is unchanged"
fi
code=$(get /airlock-check/status $token)
if [ "$code" = 200 ]; then
    ok "the running policy keeps serving the route"
else
    not_ok "the running policy keeps serving the route (got $code)"
fi
code=$(get /airlock-check/unknown $token)
if [ "$code" = 403 ]; then
    ok "and keeps denying an unknown route"
else
    not_ok "and keeps denying an unknown route (got $code)"
fi

# the sandbox job, through Redis, run by the worker unit under gVisor
kernel=$(check worker | sed -n 's/.* kernel //p')
res=$(check job-result)
case "$res" in
*'"status":"ok"'*) ok "the worker's job ended ok: $(printf '%s' "$res" | head -c 400)" ;;
*) not_ok "the worker's job ended ok: $res" ;;
esac
case "$res" in
*'"backend":"gvisor"'*) ok "in the gVisor sandbox" ;;
*) not_ok "in the gVisor sandbox" ;;
esac
sandbox_kernel=$(printf '%s' "$res" \
    | sed -n 's/.*"stdout":"hello from the sandbox 42 \([^"\\]*\)\\n".*/\1/p')
if [ -n "$sandbox_kernel" ]; then
    ok "its output came back through Redis"
else
    not_ok "its output came back through Redis"
fi
if [ -n "$sandbox_kernel" ] && [ "$sandbox_kernel" != "$kernel" ]; then
    ok "the script saw gVisor's kernel ($sandbox_kernel), not the guest's ($kernel)"
else
    not_ok "the script saw gVisor's kernel ($sandbox_kernel), not the guest's ($kernel)"
fi

res=$(check timeout-result)
case "$res" in
*'"status":"timeout"'*'"code":"wall_time"'*)
    ok "a job past its wall time is killed: timeout, wall_time" ;;
*) not_ok "a job past its wall time is killed: $res" ;;
esac
left=$(check left)
case "$left" in
"jobs= cgroups= runsc=0")
    ok "nothing of the jobs is left (directories, cgroups, runsc)" ;;
*) not_ok "nothing of the jobs is left: $left" ;;
esac
procs=$(check worker-procs)
wuid=$(printf '%s' "$procs" | sed -n 's/^main=\([0-9]*\):.*/\1/p')
case "$procs" in
main=0:*|main=:*) not_ok "the worker's main process is not root: $procs" ;;
"main=$wuid:0000000000000000 launchers=0:"*)
    ok "the worker's main process is uid $wuid with no capability; its launcher is root ($procs)" ;;
*) not_ok "the worker's main process has no capability, its launcher is root: $procs" ;;
esac
reach=$(check worker-reach)
case "$reach" in
"agent=000 proxy="[1-5]*)
    ok "the worker's main process reaches the proxy's socket, not the agent's ($reach)" ;;
*) not_ok "the worker's main process reaches the proxy's socket, not the agent's: $reach" ;;
esac
# what a local user of the appliance gets: nginx's access log 0640; the
# nginx master's bounding set is its drop-in's (CAP_CHOWN 0,
# CAP_DAC_OVERRIDE 1, CAP_FOWNER 3, CAP_KILL 5, CAP_SETGID 6, CAP_SETUID
# 7, CAP_NET_BIND_SERVICE 10); no device node in the sandboxes' root;
# the worker does not see the agent's socket directory
lu=$(check local-users)
case "$lu" in
*"nginx-log=640 "*) ok "nginx's access log is 0640 ($lu)" ;;
*) not_ok "nginx's access log is 0640: $lu" ;;
esac
case "$lu" in
*"nginx-capbnd=00000000000004eb "*)
    ok "nginx's bounding set is the seven capabilities of its drop-in" ;;
*) not_ok "nginx's bounding set is the seven capabilities of its drop-in: $lu" ;;
esac
case "$lu" in
*"sandbox-devs=0 "*) ok "no device node in the sandboxes' root" ;;
*) not_ok "no device node in the sandboxes' root: $lu" ;;
esac
case "$lu" in
*"worker-agent-dir=0:root"*)
    ok "the worker's unit hides the agent's socket directory" ;;
*) not_ok "the worker's unit hides the agent's socket directory: $lu" ;;
esac
check end > /dev/null
logs=$(tr -d '\r' < "$console" | grep -a 'airlock-check: worker-log' \
    | sed 's/.*airlock-check: worker-log //')
if [ -z "$logs" ]; then
    ok "the worker logged no warning or error"
else
    not_ok "the worker logged no warning or error"
    printf '%s\n' "$logs" | sed 's/^/# /'
fi

# alertd's sinks off the appliance: the egress rule lets its user out to
# them alone, the ones alertd sends to: the policy's at each reload of
# alertd, again at once after a restart of nftables, and kept while an
# edit that removed them is not reloaded
eg=$(check alertd-egress)
case "$eg" in
none) ok "# SKIP alertd's way out: no receiver port in the guest" ;;
*" before=000 code=200 "*" after=000 timer=active")
    ok "alertd's user reaches a receiver off the appliance while it is a sink, not before or after ($eg)" ;;
*) not_ok "alertd's user reaches a receiver off the appliance while it is a sink, not before or after ($eg)" ;;
esac
case "$eg" in
none) ok "# SKIP alertd's way out after a restart of nftables: no receiver port" ;;
*" nftrestart=200 "*)
    ok "and at once after a restart of nftables ($eg)" ;;
*) not_ok "and at once after a restart of nftables ($eg)" ;;
esac
case "$eg" in
none) ok "# SKIP alertd's way out after an edit not reloaded: no receiver port" ;;
*" edit=200 "*)
    ok "and after an edit that removed it, until alertd is reloaded ($eg)" ;;
*) not_ok "and after an edit that removed it, until alertd is reloaded ($eg)" ;;
esac
tr -d '\r' < "$console" | grep -a 'airlock-check: alertd-reload-log' \
    | sed 's/.*airlock-check: alertd-reload-log /# alertd reload failed: /'
case "$eg" in
none) ok "# SKIP alertd's user and the appliance's own listeners: no receiver port" ;;
*) loc=$(check alertd-local)
   case "$loc" in
   "api=000 status=000")
       ok "alertd's user does not reach the agent's /api/ or the status ($loc)" ;;
   *) not_ok "alertd's user does not reach the agent's /api/ or the status: $loc" ;;
   esac ;;
esac

# systemd-resolved's doors and the status listener, for a local user who
# is not root: closed; for root: open
rs=$(check resolver-stub)
if [ "$rs" = "www-data=ok systemd-timesync=ok airlock-alertd=ok nobody=no redis=no" ]
then
    ok "resolved's stub answers nginx, timesyncd and alertd, not nobody or redis ($rs)"
else
    not_ok "resolved's stub answers nginx, timesyncd and alertd, not nobody or redis: $rs"
fi
rd=$(check resolver-doors)
case "$rd" in
"varlink=600 varlink-nobody=- dbus-nobody=denied dbus-root=ok status-nobody=000 status-root=200")
    ok "resolved's varlink and D-Bus, and the status, are root's ($rd)" ;;
*) not_ok "resolved's varlink and D-Bus, and the status, are root's: $rd" ;;
esac

# resolved's directory: open again once its varlink socket is root's
rdir=$(check resolver-dir)
if [ "$rdir" = "dir=755 resolv-nobody=yes" ]; then
    ok "resolved's directory is 0755 again once started, resolv.conf read by all ($rdir)"
else
    not_ok "resolved's directory is 0755 again once started, resolv.conf read by all: $rdir"
fi

# DHCP off the box: networkd's alone
dh=$(check dhcp4-out)
if [ "$dh" = "systemd-network=sent nobody=eperm" ]; then
    ok "DHCP to a server's port 67 is networkd's alone ($dh)"
else
    not_ok "DHCP to a server's port 67 is networkd's alone: $dh"
fi

# the clients' listener and /api/ on loopback: root's, no daemon's
pl=$(check people-listeners)
case "$pl" in
"nobody-proxy=000 nobody-api=000 redis-proxy=000 www-data-proxy=000 root-proxy="[1-5]??" root-api="[1-5]??)
    ok "3128 and 8080 on loopback answer root, not nobody, redis or nginx's user ($pl)" ;;
*) not_ok "3128 and 8080 on loopback answer root, not nobody, redis or nginx's user: $pl" ;;
esac

# the boot's order: the egress rule before the units that use the network
no=$(check nft-order)
case "$no" in
"systemd-timesyncd=ok systemd-resolved=ok systemd-networkd=ok nginx=ok")
    ok "the egress rule loaded before timesyncd, resolved, networkd and nginx started ($no)" ;;
*) not_ok "the egress rule loaded before timesyncd, resolved, networkd and nginx started: $no" ;;
esac

# the egress rule failing to load: the fail-safe rule, then the rule back
nf=$(check nft-failsafe)
case "$nf" in
"broken=table_inet_airlock-failsafe_ state=failed restored=table_inet_airlock_ restored-state=active")
    ok "a ruleset that fails to load leaves the fail-safe rule ($nf)" ;;
*) not_ok "a ruleset that fails to load leaves the fail-safe rule: $nf" ;;
esac

# Redis has no network (the image's drop-in): loopback of its own only
rn=$(check redis-net)
if [ "$rn" = "if=lo, own=yes" ]; then
    ok "Redis has a network namespace of its own, loopback only ($rn)"
else
    not_ok "Redis has a network namespace of its own, loopback only: $rn"
fi

# Redis's memory: a quarter of the machine's, noeviction (the image's
# drop-in airlock-maxmemory.conf, /usr/lib/airlock/redis-maxmemory)
rm=$(check redis-memory)
total=$(printf '%s\n' "$rm" | sed -n 's/.* total=\([0-9][0-9]*\) .*/\1/p')
if [ -n "$total" ] \
    && [ "$rm" = "max=$((total * 25 / 100)) policy=noeviction total=$total redis=active" ]
then
    ok "Redis's maxmemory is a quarter of the machine's memory, noeviction ($rm)"
else
    not_ok "Redis's maxmemory is a quarter of the machine's memory, noeviction: $rm"
fi

# Redis restarted: systemd makes /run/redis anew, the worker's /run must
# still show the new socket
sock=$(check redis-restart-sock)
if [ "$sock" = w ]; then
    ok "after Redis restarts, its socket is in the worker's /run/redis"
else
    not_ok "after Redis restarts, its socket is in the worker's /run/redis"
fi
res=$(check redis-restart-result)
case "$res" in
*'"status":"ok"'*) ok "and a job queued after the restart runs" ;;
*) not_ok "and a job queued after the restart runs: $(printf '%s' "$res" | head -c 300)" ;;
esac

# who may use the agent: its socket is root's and airlock-api's (nginx's
# www-data a member), not every daemon's; /api/ wants a user and password
as=$(check agent-sock)
case "$as" in
"agent=active "*) ok "airlock-agent starts in the image ($as)" ;;
*) not_ok "airlock-agent starts in the image: $as" ;;
esac
case "$as" in
*" sock=660:airlock-agent:airlock-api "*)
    ok "the agent's socket is 0660, group airlock-api" ;;
*) not_ok "the agent's socket is 0660, group airlock-api: $as" ;;
esac
case "$as" in
*" dir=2750:airlock-agent:airlock-api "*)
    ok "its directory is set-group-ID airlock-api, closed to others" ;;
*) not_ok "its directory is set-group-ID airlock-api, closed to others: $as" ;;
esac
case "$as" in
*" www-data="*airlock-api*) ok "nginx's www-data is in airlock-api" ;;
*) not_ok "nginx's www-data is in airlock-api: $as" ;;
esac
so=$(check agent-socket)
case "$so" in
"systemd-resolve=000 redis=000 "*)
    ok "daemons outside airlock-api cannot connect to the agent's socket ($so)" ;;
*) not_ok "daemons outside airlock-api cannot connect to the agent's socket: $so" ;;
esac
case "$so" in
*" www-data=403 "*)
    ok "www-data connects (the agent's 403: no X-Airlock-User)" ;;
*) not_ok "www-data connects (the agent's 403: no X-Airlock-User): $so" ;;
esac
case "$so" in
*" root=404 root-body="*'"error":"no_session"'*)
    ok "root connects: the agent's 404 for a session no one has" ;;
*) not_ok "root connects: the agent's 404 for a session no one has: $so" ;;
esac
ap=$(check agent-api)
case "$ap" in
"none=401/403 "*)
    ok "without /etc/airlock/api.htpasswd /api/ lets no one in (401, then 403)" ;;
*) not_ok "without /etc/airlock/api.htpasswd /api/ lets no one in: $ap" ;;
esac
case "$ap" in
*" hash=\$6\$"*) ok "openssl passwd -6, as docs/agent.md says, makes its hash" ;;
*) not_ok "openssl passwd -6, as docs/agent.md says, makes its hash: $ap" ;;
esac
case "$ap" in
*" wrong=401 "*) ok "a wrong password gets 401" ;;
*) not_ok "a wrong password gets 401: $ap" ;;
esac
case "$ap" in
*" right=404 body="*'"error":"no_session"'*)
    ok "the right one reaches the agent: its 404 no_session JSON" ;;
*) not_ok "the right one reaches the agent: its 404 no_session JSON: $ap" ;;
esac

up=$(check upgrade)
case "$up" in
none) ok "# SKIP the package upgrade: no airlock .deb beside the image" ;;
"0 alertd=active worker=active")
    ok "the airlock package installed over itself: alertd and the worker still run" ;;
*)
    not_ok "the airlock package installed over itself: alertd and the worker still run ($up)"
    tr -d '\r' < "$console" | grep -a 'airlock-check: upgrade-out ' \
        | sed 's/.*airlock-check: upgrade-out /# /' | tail -20
    ;;
esac

if end=$(check end); then
    ok "the guest's check script ran to its end"
else
    not_ok "the guest's check script ran to its end"
fi
case "$end" in
*alertd=active*) ok "airlock-alertd is still active after the denials" ;;
*) not_ok "airlock-alertd is still active after the denials: $end" ;;
esac
echo "# $(($(date +%s) - start)) s from qemu's start"

echo "1..$n"
[ $failed = 0 ]
