#!/bin/sh
# The appliance's configuration, applied by build.sh (an mmdebstrap
# customize hook) to the unpacked root:
#
#   configure-root.sh ROOT OVERLAY CONFDIR
#
# OVERLAY (appliance-image/root) is copied over ROOT, root-owned, 0644
# and 0755 whatever the checkout's umask made of it; CONFDIR
# (conf/) gives the nftables ruleset and Redis's users.  Then: host
# name, fstab, network by DHCP (systemd-networkd), Redis on a unix socket
# with AOF, no admin commands for its clients and a bound on its memory
# (maxmemory, noeviction), nginx without
# Debian's default site, the services the appliance runs enabled and the
# others left off.

set -eu

root=$1
overlay=$2
conf=$3

[ -d "$root/etc" ] || { echo "configure-root.sh: $root is no root" >&2; exit 1; }

rm -rf "$root/tmp/airlock-debs"

# The overlay's modes are the checkout's, which its umask made: each file
# is given 0644 (0755 for a program) and each directory 0755, and the
# directories the root already has (/, /etc, /usr, ...) keep their own.
# From a git checkout only the files git tracks, and their directories,
# are copied: an editor's copy, a unit or a credential put there to try
# an image out is no part of the image (each is named).
# (a checkout of another user's too: this runs as root)
# A checkout git cannot list (git not installed, or failing) is refused,
# not copied whole as a tree outside git is.
git_overlay() {
    git -c safe.directory='*' -C "$overlay" "$@"
}
in_checkout() {
    d=$(cd "$overlay" && pwd -P)
    while :; do
        [ -e "$d/.git" ] && return 0
        [ "$d" = / ] && return 1
        d=$(dirname "$d")
    done
}
# A checkout whose git tracks none of the overlay's files (a copy of
# Airlock unpacked inside some other repository, whose top is above it)
# is refused too: the image would get no overlay at all.
# The list is NUL-separated and read verbatim (--null): a name git would
# quote (a tab, a quote, a byte above 127) or tar would take for an
# option (a leading '-') is copied as it is, not skipped.
tracked=0
if git_overlay rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    tracked=1
elif in_checkout; then
    echo "configure-root.sh: $overlay is in a git checkout, but git" \
         "cannot list the files it tracks (is git installed?)" >&2
    exit 1
fi
if [ $tracked = 1 ] && [ -z "$(git_overlay ls-files -c . | head -c 1)" ]
then
    echo "configure-root.sh: $overlay is in the git repository" \
         "$(git_overlay rev-parse --show-toplevel), which tracks none of" \
         "its files (a copy of Airlock inside another repository?):" \
         "build from Airlock's own checkout" >&2
    exit 1
fi
if [ $tracked = 1 ]; then
    git_overlay ls-files -o --exclude-standard . \
        | sed 's/^/configure-root.sh: not copied, git does not track it: /' >&2
    { git_overlay ls-files -c -z . \
          | sed -z -n 's|/[^/]*$||; T; :a; p; s|/[^/]*$||; ta' | sort -zu
      git_overlay ls-files -c -z .; } \
        | (cd "$overlay" && tar -c --null --no-recursion --ignore-failed-read \
               --owner=0 --group=0 --mode=u=rwX,go=rX -T - -f -)
else
    (cd "$overlay" && tar -c --owner=0 --group=0 --mode=u=rwX,go=rX -f - .)
fi | tar -x --no-overwrite-dir -C "$root" -f -
install -m 0755 "$conf/nftables-airlock.conf" "$root/etc/nftables.conf"

echo airlock > "$root/etc/hostname"
printf '127.0.1.1\tairlock\n' >> "$root/etc/hosts"
printf 'LABEL=airlock-root / ext4 defaults,errors=remount-ro 0 1\n' \
    > "$root/etc/fstab"

# Redis: a unix socket the agent and worker reach (group redis), no TCP
# port, streams kept across restarts and power loss (AOF, written to disk
# before each reply: a job the agent was told is queued, or a result the
# worker acknowledged, is on disk; jobs are sandboxes, never so many a
# second that this costs), and its users from an ACL file,
# /etc/redis/airlock-users.acl: the default user off, airlock-agent and
# airlock-worker each with only what it uses and no admin command
# (conf/redis-acl.conf: CONFIG, FLUSHALL, SHUTDOWN, REPLICAOF would lose
# the jobs and results; the agent may not DEL or XTRIM the job stream).
# airlock-redis-users.service writes that file before Redis starts, with
# the passwords it makes on the first boot: none is in the image.
# Each setting is checked once written: a redis.conf whose line the edit
# missed would leave Redis as Debian ships it, on 127.0.0.1:6379 without
# a password (every local user could queue jobs and read sessions), or
# its socket root's alone; so would a second line of the directive
rc=$root/etc/redis/redis.conf
aclfile='aclfile /etc/redis/airlock-users.acl'
sed -i -e 's|^# *unixsocket[ \t].*|unixsocket /run/redis/redis.sock|' \
       -e 's|^# *unixsocketperm[ \t].*|unixsocketperm 770|' \
       -e 's|^port[ \t].*|port 0|' \
       -e 's|^appendonly[ \t].*|appendonly yes|' \
       -e 's|^appendfsync[ \t].*|appendfsync always|' \
       -e "s|^# *aclfile[ \t].*|$aclfile|" "$rc"
grep -qxF "$aclfile" "$rc" || printf '%s\n' "$aclfile" >> "$rc"
# the template's three users, and no placeholder but the two hashes
for u in default airlock-agent airlock-worker; do
    grep -q "^user $u " "$conf/redis-acl.conf" \
        || { echo "configure-root.sh: $conf/redis-acl.conf has no" \
                  "\"user $u\" line" >&2
             exit 1; }
done
# Redis refuses to start with users in redis.conf and an aclfile both
if grep -qi '^[[:space:]]*user[[:space:]]' "$rc"; then
    echo "configure-root.sh: redis.conf has a user line" >&2
    exit 1
fi
for want in 'unixsocket /run/redis/redis.sock' 'unixsocketperm 770' \
    'port 0' 'appendonly yes' 'appendfsync always' "$aclfile"
do
    key=${want%% *}
    grep -qxF "$want" "$rc" \
        || { echo "configure-root.sh: redis.conf has no \"$want\" line" >&2
             exit 1; }
    # Redis takes the last of a directive's lines, whatever their case
    # and leading blanks
    if grep -i "^[[:space:]]*$key[[:space:]]" "$rc" | grep -qvxF "$want"
    then
        echo "configure-root.sh: redis.conf sets $key otherwise than" \
             "\"$want\"" >&2
        exit 1
    fi
done

# Redis's memory: maxmemory, a quarter of the machine's (or the
# operator's AIRLOCK_REDIS_MAXMEMORY), and maxmemory-policy noeviction,
# which /usr/lib/airlock/redis-maxmemory writes into
# /run/redis/airlock-maxmemory.conf before each start (the drop-in
# redis-server.service.d/airlock-maxmemory.conf).  redis.conf includes
# it last, Redis taking the last line of a directive: no line of its own
# sets either, which the include would hide.  Without a bound Redis grew
# until the kernel's OOM killer ended nginx, or Redis and every job.
include='include /run/redis/airlock-maxmemory.conf'
grep -qxF "$include" "$rc" || printf '%s\n' "$include" >> "$rc"
if grep -qi '^[[:space:]]*maxmemory\(-policy\)\{0,1\}[[:space:]]' "$rc"
then
    echo "configure-root.sh: redis.conf sets maxmemory or" \
         "maxmemory-policy itself; $include sets both" >&2
    exit 1
fi
if [ "$(grep -v '^[[:space:]]*\(#\|$\)' "$rc" | tail -n 1)" != "$include" ]
then
    echo "configure-root.sh: redis.conf's last line is not" \
         "\"$include\"" >&2
    exit 1
fi

# nginx: Airlock's servers only (conf.d/airlock.conf)
rm -f "$root/etc/nginx/sites-enabled/default"

chroot "$root" systemctl enable systemd-networkd systemd-resolved \
    nftables nginx redis-server airlock-redis-users airlock-firstboot \
    airlock-credentials \
    airlock-alertd airlock-alertd-egress.timer airlock-worker airlock-ready \
    airlock-selftest
# the agent needs the operator's model key first; the worker needs only
# Redis, the proxy's socket and the sandbox root file system, all here
chroot "$root" systemctl disable airlock-agent >/dev/null 2>&1 || true

# systemd-resolved's stub for nginx's resolver
ln -sf /run/systemd/resolve/stub-resolv.conf "$root/etc/resolv.conf"

# no root password: the console is for reading the key and the log; log
# in as an operator account added by the site's own provisioning
chroot "$root" passwd -l root >/dev/null

# what mmdebstrap leaves of the build host.  An empty machine-id makes
# systemd write a new one on the first boot: each appliance's own, which
# airlock-worker's default consumer name is made from (docs/jobs.md)
rm -f "$root/etc/machine-id" "$root/var/lib/dbus/machine-id"
: > "$root/etc/machine-id"
