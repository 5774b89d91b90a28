#!/bin/sh
# make image-test, the guest's half: tests/image/boot.sh hands this script
# to the booted appliance through qemu's firmware configuration
# (-fw_cfg name=opt/airlock/check); the image's airlock-selftest.service
# runs it as root and its lines reach the serial console.  It is not part
# of the image.
#
# Every line starts with "airlock-check: ".  The host answers some of them
# with requests through the forwarded port; the guest sees those requests
# in its own logs and goes on:
#
#   ready-for-deny     host: GET /airlock-check/unknown  -> 403
#   deny-line LINE     the deny log's line for it
#   edit-ok RC         airlockctl edit with an EDITOR that adds the route
#                      airlock-check-status (the status endpoint, client
#                      tools); host: GET /airlock-check/status -> 200
#   edit-broken RC     airlockctl edit with an EDITOR that misspells a key:
#                      refused (its output as edit-broken-out), policy unchanged
#                      (policy-unchanged yes); host: the route still answers
#   job-result JSON    a Python job run by airlock-worker under gVisor,
#                      its result read back from Redis
#   timeout-result JSON a job looping past its wall time
#   left ...           job directories, cgroups, runsc processes left
#   worker-log LINE    the worker's warnings and errors, if any
#   worker-procs main=UID:CAPEFF launchers=UID:CAPEFF ...
#                      the worker unit's main process and its root
#                      children (uids and effective capabilities)
#   worker-reach agent=CODE proxy=CODE
#                      an HTTP request from the worker's main process's
#                      mount namespace, as its uid, to the agent's socket
#                      and to the proxy's: the status, 000 if it could not
#                      connect
#   local-users nginx-log=MODE nginx-capbnd=HEX sandbox-devs=N
#                      worker-agent-dir=MODE:OWNER
#                      the access log's mode, nginx's bounding set, device
#                      nodes in the sandboxes' root, /run/airlock/agent in
#                      the worker's namespace
#   alertd-local api=C status=C  the same user's requests to the agent's
#                      /api/ and to the status listener on loopback: 000
#                      when the egress rule refused them
#   alertd-egress user=U before=C code=C nftrestart=C edit=C after=C
#                      timer=STATE
#                      an HTTP request to the host's webhook receiver
#                      (-fw_cfg name=opt/airlock/hookport) made as
#                      alertd's user: C is the receiver's status, 000 if
#                      the egress rule dropped it; before it is one of
#                      the policy's sinks, once it is (an Alertmanager
#                      added, systemctl reload airlock-alertd), once
#                      nftables is restarted, once it is taken out of
#                      the policy on disk and the timer's unit has run
#                      (alertd not reloaded), after alertd's reload; and
#                      airlock-alertd-egress.timer's state
#   resolver-stub www-data=R systemd-timesync=R airlock-alertd=R nobody=R
#                      redis=R
#                      getent hosts _outbound (resolved's own answer, through
#                      its stub on 127.0.0.53) as each user: ok or no
#   resolver-doors varlink=MODE varlink-nobody=W dbus-nobody=R dbus-root=R
#                      status-nobody=C status-root=C
#                      systemd-resolved's varlink socket and D-Bus
#                      ResolveHostname as nobody and root, and the status
#                      listener as each (section 5b)
#   resolver-dir dir=MODE resolv-nobody=yes|no
#                      /run/systemd/resolve's mode once resolved has
#                      started (0700 until its varlink socket is 0600),
#                      and whether nobody reads /etc/resolv.conf in it
#   dhcp4-out systemd-network=R nobody=R
#                      a datagram from port 68 to the DHCP server's 67
#                      (10.0.2.2 on qemu's user network) as each user,
#                      given the right to bind port 68: sent, or eperm
#                      when the egress rule dropped it
#   people-listeners nobody-proxy=C nobody-api=C redis-proxy=C
#                      www-data-proxy=C root-proxy=C root-api=C
#                      the clients' listener (127.0.0.1:3128) and /api/
#                      (127.0.0.1:8080) as each user: the HTTP status,
#                      000 when the egress rule refused (section 5b)
#   redis-net if=IFS own=yes|no
#                      the interfaces of Redis's network namespace, and
#                      whether it is not the host's (section 5c)
#   redis-memory max=B policy=P total=B redis=STATE
#                      the bound redis-maxmemory wrote before Redis
#                      started (/run/redis/airlock-maxmemory.conf, which
#                      redis.conf includes last), the machine's MemTotal
#                      in bytes, and redis-server's state (section 5d)
#   redis-restart-sock W  after `systemctl restart redis-server`, whether
#                      Redis's socket is in the worker's /run/redis (w/-)
#   redis-restart-result JSON  a job queued after that restart
#   agent-sock agent=STATE sock=MODE:OWNER:GROUP dir=MODE:OWNER:GROUP
#                      www-data=GROUPS
#                      the agent started (disabled in the image): its
#                      socket, its directory, nginx's user's groups
#   agent-socket systemd-resolve=C redis=C www-data=C root=C root-body=B
#                      a request on the agent's socket as each of these
#                      users: the status, 000 when it could not connect
#   agent-api none=C/C wrong=C right=C body=B hash=H
#                      /api/ without /etc/airlock/api.htpasswd (no user,
#                      a user), then with one made as docs/agent.md says
#                      (openssl passwd -6): a wrong password, the right
#                      one (the agent's answer for a session no one has)
#   upgrade RC alertd=STATE worker=STATE
#                      dpkg -i of the airlock package the host passed in
#                      (-fw_cfg name=opt/airlock/deb), as an upgrade over
#                      the installed one: the running daemons still run
#   nft-order systemd-timesyncd=O systemd-resolved=O systemd-networkd=O
#                      nginx=O
#                      whether each unit's main process started after the
#                      egress rule loaded at boot (ok) or before it
#                      (early), from their monotonic timestamps
#   nft-failsafe broken=TABLES state=STATE restored=TABLES
#                      restored-state=STATE
#                      nftables restarted with a ruleset nft cannot load
#                      (the fail-safe's table alone, the unit failed),
#                      then with the image's again (section 9)
#   end alertd=STATE   airlock-alertd after the denials it has read
#                      (before the upgrade above)

set -u

# printf, not echo: dash's echo would turn the JSON's \n into newlines
say() {
    printf 'airlock-check: %s\n' "$*"
}

# wait_for FILE PATTERN SECONDS: prints the first line of FILE matching
# PATTERN (grep -F), waiting for it at most SECONDS
wait_for() {
    i=0
    while [ "$i" -lt "$3" ]; do
        if line=$(grep -a -F -m1 -- "$2" "$1" 2>/dev/null); then
            printf '%s\n' "$line"
            return 0
        fi
        sleep 1
        i=$((i + 1))
    done
    return 1
}

# run_job ID SCRIPT WALL_MS [WAIT]: queues a sandbox job for the worker and
# prints its result from Redis ("none" after WAIT seconds, default 15
# minutes, without one); SCRIPT is JSON string text
run_job() {
    $redis XADD airlock:jobs '*' job "{\"job_id\":\"$1\",\
\"session_id\":\"airlock-check\",\"script\":\"$2\",\
\"blueprint\":{\"inputs\":[]},\
\"limits\":{\"wall_ms\":$3,\"cpu_ms\":30000}}" > /dev/null
    i=0
    while [ "$i" -lt "${4:-900}" ]; do
        res=$($redis GET "result:$1")
        if [ -n "$res" ]; then
            printf '%s\n' "$res"
            return 0
        fi
        sleep 2
        i=$((i + 2))
    done
    printf 'none\n'
}

policy=/etc/airlock/policy.yaml
tmp=$(mktemp -d)
# as the agent queues jobs and reads results: Redis user airlock-agent,
# its password from its file (airlock-redis-users.service), in the
# environment, not the arguments; the default user is off
REDISCLI_AUTH=$(cat /etc/airlock/redis-agent.pass)
export REDISCLI_AUTH
redis="redis-cli -s /run/redis/redis.sock --user airlock-agent"

# the units the ready line names, when one is not running: why
for u in nginx airlock-alertd airlock-worker; do
    systemctl is-active -q "$u" && continue
    journalctl -u "$u" --no-pager -o cat -n 15 \
        | sed "s/^/airlock-check: ${u#airlock-}-log /"
done
say "alertd-log-end"

# 0. the boot's order: the egress rule loaded before the units that use
#    the network started (before the fail-safe check, section 9,
#    restarts nftables)
nft_at=$(systemctl show -p ActiveEnterTimestampMonotonic --value nftables)
order=""
for u in systemd-timesyncd systemd-resolved systemd-networkd nginx; do
    at=$(systemctl show -p ExecMainStartTimestampMonotonic --value "$u")
    if [ "${nft_at:-0}" -gt 0 ] && [ "${at:-0}" -ge "$nft_at" ]; then
        order="$order $u=ok"
    else
        order="$order $u=early"
    fi
done
say "nft-order$order"

# 1. an unknown route, asked by the host: the deny log's line
say "ready-for-deny"
if line=$(wait_for /var/log/airlock/deny.log /airlock-check/unknown 900); then
    say "deny-line $line"
else
    say "deny-line none"
fi

# 2. the edit cycle, with an EDITOR that gives the tools client a token
#    (sha256("test"), in place of the shipped hash of a token no one has)
#    and adds an upstream (the appliance's own status endpoint) and a
#    route the tools client may call
cat > "$tmp/add-route" <<'EOT'
#!/bin/sh
awk '{ sub(/token_sha256: "[0-9a-f]*"/, "token_sha256: \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\""); print }
/^upstreams:$/ {
    print "  airlock-status: { url: \"http://127.0.0.1:9901\" }"
}
/^routes:$/ {
    print "  - name: airlock-check-status"
    print "    description: the status endpoint, added by make image-test"
    print "    clients: [tools]"
    print "    match: { method: GET, path: /airlock-check/status }"
    print "    upstream: airlock-status"
    print "    to: /airlock/status"
}' "$1" > "$1.new" && cat "$1.new" > "$1" && rm -f "$1.new"
EOT
cat > "$tmp/break-key" <<'EOT'
#!/bin/sh
sed -i 's/^    upstream: airlock-status$/    upstrem: airlock-status/' "$1"
EOT
chmod 755 "$tmp/add-route" "$tmp/break-key"

EDITOR=$tmp/add-route airlockctl edit < /dev/null > "$tmp/out" 2>&1
rc=$?
sed 's/^/airlock-check: edit-ok-out /' "$tmp/out"
say "edit-ok $rc"

if wait_for /var/log/nginx/airlock.log /airlock-check/status 900 \
    > /dev/null
then
    say "route-used yes"
else
    say "route-used no"
fi

cp "$policy" "$tmp/before"
EDITOR=$tmp/break-key airlockctl edit < /dev/null > "$tmp/out" 2>&1
rc=$?
sed 's/^/airlock-check: edit-broken-out /' "$tmp/out"
say "edit-broken $rc"
if cmp -s "$policy" "$tmp/before"; then
    say "policy-unchanged yes"
else
    say "policy-unchanged no"
fi
# the refused copy is kept for the next edit; this one is done with it
rm -f "$policy.edit"

# 3. a sandbox job: Python under gVisor, by the worker unit as it runs
say "worker $(systemctl is-active airlock-worker) kernel $(uname -r)"
script='import platform\nprint(\"hello from the sandbox\", 6 * 7,'
script="$script"' platform.release())\n'
say "job-result $(run_job airlock-check-1 "$script" 60000)"

# 4. a job past its wall time: killed, and nothing of either job is left
#    (job directories, cgroups, runsc processes)
say "timeout-result $(run_job airlock-check-2 'while True:\n    pass\n' 15000)"
sleep 2
say "left jobs=$(ls /var/lib/airlock-worker/jobs 2>/dev/null | tr '\n' ' ')" \
    "cgroups=$(cd /sys/fs/cgroup/airlock-worker 2>/dev/null && ls -d aw-* 2>/dev/null | tr '\n' ' ')" \
    "runsc=$(pgrep -c -f runsc)"
# the worker's privilege split as systemd starts it (docs/jobs.md): the
# unit's main process, which parses jobs, is airlock-worker with no
# capability; its launcher child alone stays root
status() {
    awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null
}
main=$(systemctl show -p MainPID --value airlock-worker)
roots=""
for c in $(pgrep -P "$main"); do
    if [ "$(status "$c" Uid)" = 0 ]; then
        roots="$roots 0:$(status "$c" CapEff)"
    fi
done
say "worker-procs main=$(status "$main" Uid):$(status "$main" CapEff)" \
    "launchers=${roots# }"
# what the worker's main process may connect to, in its own mount
# namespace and as its own uid: the proxy's socket (its job inputs), not
# the agent's (0666, every session in it); HTTP status, 000 for no
# connection
reach() {
    nsenter -t "$main" -m -S "$(status "$main" Uid | cut -f1)" \
        -G "$(status "$main" Gid | cut -f1)" \
        curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
        --unix-socket "$1" "http://airlock-check/$2" 2>/dev/null
}
say "worker-reach agent=$(reach /run/airlock/agent/agent.sock v1/sessions/x)" \
    "proxy=$(reach /run/airlock/airlock.sock airlock-check/unknown)"
# what the appliance leaves a local user: nginx's access log (created
# under its drop-in's umask), the nginx master's bounding set, device
# nodes in the sandboxes' root, and the agent's socket directory as the
# worker's mount namespace shows it (hidden: an empty, mode-0 directory)
ngx=$(cat /run/nginx.pid 2>/dev/null)
say "local-users nginx-log=$(stat -c %a /var/log/nginx/airlock.log 2>&1)" \
    "nginx-capbnd=$(status "$ngx" CapBnd)" \
    "sandbox-devs=$(find /usr/lib/airlock/sandbox-rootfs -xdev \
        \( -type b -o -type c \) | wc -l)" \
    "worker-agent-dir=$(stat -c %a:%U "/proc/$main/root/run/airlock/agent" 2>&1)"
journalctl -u airlock-worker --no-pager -o cat \
    | grep -E ' (alert|emerg|error|warn): ' \
    | sed 's/^/airlock-check: worker-log /'
alertd=$(systemctl is-active airlock-alertd)

# 5. alertd's way out: a webhook off the appliance (the host's receiver,
#    10.0.2.2 on qemu's user network), asked as alertd's user, whose
#    sockets the egress rule sees: only while it is one of the policy's
#    sinks (airlock-alertd-egress puts their addresses and ports in the
#    rule's sets, at each reload of alertd)
hp=/sys/firmware/qemu_fw_cfg/by_name/opt/airlock/hookport/raw
if [ -r "$hp" ]; then
    pid=$(systemctl show -p MainPID --value airlock-alertd)
    uid=$(ps -o uid= -p "$pid" | tr -d ' ')
    hook="http://10.0.2.2:$(cat "$hp")"
    as_alertd() {
        setpriv --reuid="$uid" --regid="$uid" --clear-groups \
            curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"
    }
    # a reload that fails says why (alertd-reload-log: its journal)
    reload_alertd() {
        systemctl reload airlock-alertd && return 0
        journalctl -u airlock-alertd --no-pager -o cat -n 8 \
            | sed 's/^/airlock-check: alertd-reload-log /'
    }
    before=$(as_alertd "$hook/airlock")
    cp "$policy" "$tmp/policy-sinks"
    sed "/^  sinks:\$/a\\    - alertmanager: { url: \"$hook\" }" \
        "$tmp/policy-sinks" > "$policy"
    reload_alertd
    code=$(as_alertd "$hook/airlock")
    # nftables restarted (its sets emptied): filled again at once, not
    # at the timer's next run (a bounded wait for the refill's job)
    systemctl restart nftables
    elem="10.0.2.2 . $(cat "$hp")"
    i=0
    while [ $i -lt 20 ] && ! nft list set inet airlock alertd_sinks4 \
        2>/dev/null | grep -qF "$elem"; do
        sleep 0.5
        i=$((i + 1))
    done
    nftrestart=$(as_alertd "$hook/airlock")
    # the sink taken out of the policy on disk, alertd not reloaded:
    # the timer's run keeps the sink alertd still sends to
    cat "$tmp/policy-sinks" > "$policy"
    systemctl start airlock-alertd-egress-refill.service
    edit=$(as_alertd "$hook/airlock")
    reload_alertd
    after=$(as_alertd "$hook/airlock")
    user=$(id -un "$uid" 2>/dev/null || echo "$uid")
    say "alertd-egress user=$user before=$before code=$code" \
        "nftrestart=$nftrestart edit=$edit after=$after" \
        "timer=$(systemctl is-active airlock-alertd-egress.timer)"
    # and not the appliance's own listeners on loopback: the agent's
    # /api/ (8080) and the status (9901); 000 when the rule refused
    api=$(setpriv --reuid="$uid" --regid="$uid" --clear-groups \
        curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
        "http://127.0.0.1:8080/api/v1/sessions/airlock-check")
    st=$(setpriv --reuid="$uid" --regid="$uid" --clear-groups \
        curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
        "http://127.0.0.1:9901/")
    say "alertd-local api=$api status=$st"
else
    say "alertd-egress none"
fi

# 5b. what a local user who is not root gets of systemd-resolved, which
#    sends any name it is asked for to the network's DNS servers: its
#    varlink socket (its mode, and whether nobody may connect: w/-) and
#    its D-Bus ResolveHostname (nobody's answer and root's: ok, denied,
#    or the error); and the status listener (9901) as nobody and root
#    (the HTTP status, 000 when the egress rule refused)
vl=/run/systemd/resolve/io.systemd.Resolve
as_nobody() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
resolve_dbus() {
    out=$("$@" busctl call org.freedesktop.resolve1 /org/freedesktop/resolve1 \
        org.freedesktop.resolve1.Manager ResolveHostname isit 0 localhost \
        0 0 2>&1)
    case $?:$out in
    0:*) echo ok ;;
    *[Aa]ccess\ denied*) echo denied ;;
    *) printf '%s' "$out" | head -1 | tr -c 'A-Za-z0-9.:-' _ ;;
    esac
}
# resolved's stub on 127.0.0.53, through glibc as each user: "_outbound",
# a name resolved answers itself (no network needed; not in /etc/hosts,
# and not one nss-myhostname answers)
stub_as() {
    if setpriv --reuid="$1" --regid="$(id -g "$1")" --clear-groups \
        getent hosts _outbound > /dev/null 2>&1
    then
        echo ok
    else
        echo no
    fi
}
say "resolver-stub www-data=$(stub_as www-data)" \
    "systemd-timesync=$(stub_as systemd-timesync)" \
    "airlock-alertd=$(stub_as airlock-alertd) nobody=$(stub_as nobody)" \
    "redis=$(stub_as redis)"
say "resolver-doors varlink=$(stat -c %a "$vl" 2>&1 | tr ' ' _)" \
    "varlink-nobody=$(as_nobody sh -c "[ -w $vl ] && echo w || echo -")" \
    "dbus-nobody=$(resolve_dbus as_nobody) dbus-root=$(resolve_dbus)" \
    "status-nobody=$(as_nobody curl -s -o /dev/null -w '%{http_code}' \
        --max-time 5 http://127.0.0.1:9901/airlock/status)" \
    "status-root=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
        http://127.0.0.1:9901/airlock/status)"

say "resolver-dir dir=$(stat -c %a /run/systemd/resolve 2>&1 | tr ' ' _)" \
    "resolv-nobody=$(as_nobody sh -c \
        'cat /etc/resolv.conf > /dev/null 2>&1 && echo yes || echo no')"

# DHCP off the box (renewals, from networkd's UDP socket on port 68):
# networkd's alone.  Each user is given the right to bind port 68
# (ambient CAP_NET_BIND_SERVICE), so that the rule is what is tried;
# networkd's own socket there has SO_REUSEADDR, as this one
dhcp_as() {
    setpriv --reuid="$1" --regid="$(id -g "$1")" --clear-groups \
        --inh-caps=+net_bind_service --ambient-caps=+net_bind_service \
        perl -MIO::Socket::INET -e '
            my $s = IO::Socket::INET->new(Proto => "udp", LocalPort => 68,
                ReuseAddr => 1, PeerAddr => "10.0.2.2", PeerPort => 67)
                or do { print "socket-", $! + 0; exit };
            print defined $s->send("airlock-check") ? "sent"
                : $!{EPERM} ? "eperm" : "send-" . ($! + 0)' 2>&1 \
        | tr -c 'a-z0-9-' _
}
# (nobody first: networkd's user's datagram, unanswered, leaves a
# conntrack entry that is still new, never established, but the order
# keeps that out of the question)
nobody_dh=$(dhcp_as nobody)
say "dhcp4-out systemd-network=$(dhcp_as systemd-network) nobody=$nobody_dh"

# the listeners for people on loopback, the clients' 3128 and /api/'s
# 8080: the operators' (root, the people's accounts), no daemon's
code_as() {
    u=$1
    shift
    if [ "$u" = root ]; then
        curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"
    else
        setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups \
            curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"
    fi
}
say "people-listeners" \
    "nobody-proxy=$(code_as nobody http://127.0.0.1:3128/)" \
    "nobody-api=$(code_as nobody http://127.0.0.1:8080/api/)" \
    "redis-proxy=$(code_as redis http://127.0.0.1:3128/)" \
    "www-data-proxy=$(code_as www-data http://127.0.0.1:3128/)" \
    "root-proxy=$(code_as root http://127.0.0.1:3128/)" \
    "root-api=$(code_as root http://127.0.0.1:8080/api/)"

# 5c. Redis's network (its image drop-in): the interfaces of its
#    namespace, and whether that namespace is its own
rp=$(systemctl show -p MainPID --value redis-server)
say "redis-net if=$(tail -n +3 "/proc/$rp/net/dev" 2>/dev/null \
        | cut -d: -f1 | tr -d ' ' | tr '\n' ',')" \
    "own=$([ "$(readlink "/proc/$rp/ns/net")" != "$(readlink /proc/1/ns/net)" ] \
        && echo yes || echo no)"

# 5d. Redis's memory (its image drop-in airlock-maxmemory.conf): the
#    bound written before it started; Redis does not start without the
#    file its redis.conf includes
mm=/run/redis/airlock-maxmemory.conf
say "redis-memory max=$(sed -n 's/^maxmemory //p' "$mm" 2>/dev/null)" \
    "policy=$(sed -n 's/^maxmemory-policy //p' "$mm" 2>/dev/null)" \
    "total=$(($(sed -n 's/^MemTotal: *\([0-9]*\) kB$/\1/p' /proc/meminfo) \
              * 1024))" \
    "redis=$(systemctl is-active redis-server)"

# 6. Redis restarted (a crash, an upgrade of redis-server): its socket
#    directory is made anew, and the worker's unit binds /run/redis into
#    its own /run; the worker must still reach Redis
systemctl restart redis-server
sleep 2
pid=$(systemctl show -p MainPID --value airlock-worker)
if [ "${pid:-0}" -gt 0 ] \
    && nsenter -t "$pid" -m test -S /run/redis/redis.sock 2>/dev/null
then
    say "redis-restart-sock w"
else
    say "redis-restart-sock -"
fi
script='print(\"after the restart\", 6 * 7)\n'
say "redis-restart-result $(run_job airlock-check-3 "$script" 60000 240)"

# 7. who may use the agent: its socket (0660, group airlock-api, in a
#    set-group-ID directory of that group) and nginx's /api/ (a user and
#    password from /etc/airlock/api.htpasswd, made as docs/agent.md
#    tells operators to).  The agent is disabled in the image (it needs
#    the operator's model key to answer, not to start): started for this
#    and stopped again
systemctl start airlock-agent
sock=/run/airlock/agent/agent.sock
i=0
while [ "$i" -lt 60 ] && ! [ -S "$sock" ]; do
    sleep 1
    i=$((i + 1))
done
id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
say "agent-sock agent=$(systemctl is-active airlock-agent)" \
    "sock=$(stat -c %a:%U:%G "$sock" 2>&1)" \
    "dir=$(stat -c %a:%U:%G /run/airlock/agent 2>&1)" \
    "www-data=$(id -nG www-data | tr ' ' ',')"
# a user's request on the socket (as root, or by setpriv as USER with
# its own groups): the status, 000 when it could not connect; root's
# answer in $tmp/sock-root
on_sock() {
    out=/dev/null
    if [ "$1" = root ]; then
        out=$tmp/sock-root
        set --
    else
        set -- setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups
    fi
    "$@" curl -s -o "$out" -w '%{http_code}' --max-time 10 \
        --unix-socket "$sock" "http://agent/v1/sessions/$id" 2>/dev/null
}
say "agent-socket systemd-resolve=$(on_sock systemd-resolve)" \
    "redis=$(on_sock redis) www-data=$(on_sock www-data)" \
    "root=$(on_sock root) root-body=$(head -c 80 "$tmp/sock-root" \
        2>/dev/null | tr -d '\n')"
# /api/ with no user file (the image ships none), with a wrong password
# and with the right one: the agent's own 404 for a session no one has
api() {
    curl -s -o "$tmp/api" -w '%{http_code}' --max-time 10 "$@" \
        "http://127.0.0.1:8080/api/v1/sessions/$id" 2>/dev/null
}
f=/etc/airlock/api.htpasswd
pw=check-FAKE-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
none=$(api)/$(api -u "check:$pw")
if [ -e "$f" ]; then
    none="$none(a user file was there)"
fi
[ -e "$f" ] || install -m 0640 -o root -g www-data /dev/null "$f"
printf '%s:%s\n' check "$(printf '%s\n' "$pw" | openssl passwd -6 -stdin)" \
    >> "$f"
wrong=$(api -u "check:not-$pw")
right=$(api -u "check:$pw")
say "agent-api none=$none wrong=$wrong right=$right" \
    "body=$(head -c 120 "$tmp/api" 2>/dev/null | tr -d '\n')" \
    "hash=$(cut -d: -f2 "$f" | cut -c1-3)"
rm -f "$f"
systemctl stop airlock-agent

# 8. the airlock package installed again over itself, as an upgrade is:
#    what runs keeps running (the edited policy is kept)
deb=/sys/firmware/qemu_fw_cfg/by_name/opt/airlock/deb/raw
if [ -r "$deb" ]; then
    cp "$deb" /run/airlock-upgrade.deb
    dpkg --force-confdef --force-confold -i /run/airlock-upgrade.deb \
        > "$tmp/out" 2>&1
    rc=$?
    sed 's/^/airlock-check: upgrade-out /' "$tmp/out"
    rm -f /run/airlock-upgrade.deb
    sleep 3
    say "upgrade $rc alertd=$(systemctl is-active airlock-alertd)" \
        "worker=$(systemctl is-active airlock-worker)"
else
    say "upgrade none"
fi

# 9. the egress rule failing to load (a user name nft cannot resolve):
#    the fail-safe rule (nftables.service's drop-in), then the rule
#    restored
cp /etc/nftables.conf "$tmp/nftables.conf"
printf 'table inet airlock-check { chain c { meta skuid "%s" accept; } }\n' \
    airlock-no-such-user >> /etc/nftables.conf
systemctl restart nftables 2>/dev/null
broken=$(nft list tables | tr '\n' ' ')
state=$(systemctl is-active nftables)
cat "$tmp/nftables.conf" > /etc/nftables.conf
systemctl restart nftables
say "nft-failsafe broken=$(printf '%s' "$broken" | tr ' ' _) state=$state" \
    "restored=$(nft list tables | tr '\n' ' ' | tr ' ' _)" \
    "restored-state=$(systemctl is-active nftables)"

rm -rf "$tmp"
say "end alertd=$alertd"
