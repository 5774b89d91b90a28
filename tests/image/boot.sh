#!/bin/sh
# make image-test: boots the appliance image under qemu with software
# emulation (TCG: KVM is not assumed), waits for the ready line on the
# serial console, and checks from the host, through a forwarded port, that
# the first boot printed the appliance's public key and that a request for
# an unknown route gets Airlock's 403.  TAP output.
#
#   tests/image/boot.sh IMAGE_DIR     (airlock.qcow2, vmlinuz, initrd.img,
#                                      cmdline, as build.sh writes them)
#
# The disk is opened with -snapshot: the image is never changed.
# AIRLOCK_BOOT_TIMEOUT (default 1800 s) is only a safety net.

set -u

dir=${1:?usage: tests/image/boot.sh IMAGE_DIR}
timeout=${AIRLOCK_BOOT_TIMEOUT:-1800}
n=0
failed=0

ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}

not_ok() {
    n=$((n + 1))
    failed=$((failed + 1))
    echo "not ok $n - $1"
}

for f in airlock.qcow2 vmlinuz initrd.img cmdline; do
    [ -f "$dir/$f" ] || { echo "Bail out! $dir/$f is missing (make image)"; exit 1; }
done
command -v qemu-system-x86_64 >/dev/null 2>&1 \
    || { echo "Bail out! qemu-system-x86_64 is missing (auto/deps image)"; exit 1; }

tmp=$(mktemp -d)
console=$tmp/console.log
: > "$console"

# a free port on the host's loopback for the clients' listener (3128)
port=$(perl -MIO::Socket::INET -e \
    'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1",
                                 LocalPort => 0)->sockport')

start=$(date +%s)
qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 2 -m 1024 \
    -display none -monitor none -no-reboot \
    -serial "file:$console" \
    -kernel "$dir/vmlinuz" -initrd "$dir/initrd.img" \
    -append "$(cat "$dir/cmdline") airlock.selftest" \
    -drive "file=$dir/airlock.qcow2,if=virtio,format=qcow2" -snapshot \
    -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:3128" \
    -device virtio-net-pci,netdev=n0 &
qemu=$!

cleanup() {
    kill "$qemu" 2>/dev/null
    wait "$qemu" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

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
*) not_ok "airlock-alertd is active" ;;
esac

case "$ready" in
*nftables=active*) ok "the nftables ruleset is loaded" ;;
*) not_ok "the nftables ruleset is loaded" ;;
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

# an unknown route, from the host through the forwarded port
body=$tmp/body
code=$(curl -s -o "$body" -w '%{http_code}' --max-time 120 \
    "http://127.0.0.1:$port/no/such/route")
if [ "$code" = 403 ]; then
    ok "an unknown route gets 403"
else
    not_ok "an unknown route gets 403 (got $code)"
fi
if grep -q '"error":"forbidden"' "$body" 2>/dev/null; then
    ok "the 403 is Airlock's JSON deny body: $(head -c 200 "$body")"
else
    not_ok "the 403 is Airlock's JSON deny body: $(head -c 200 "$body" 2>/dev/null)"
fi

echo "1..$n"
[ $failed = 0 ]
