#!/bin/sh
# Builds the Airlock appliance image: a Debian 12 root made by mmdebstrap
# (nginx, redis-server, runsc, nftables, our packages and their
# configuration, the sandboxes' root file system, a kernel and its
# initrd), written into an ext4 file system by `mkfs.ext4 -d` and
# converted to qcow2.  No loop device, no mount of the image, no
# container runtime.
#
#   appliance-image/build.sh --debs DIR --rootfs DIR [--out DIR]
#                            [--mirror URL] [--security-mirror URL]
#                            [--free MB] [--keep-root] [--root-only]
#
#   --debs DIR     where make deb left libnginx-mod-http-airlock_*.deb and
#                  airlock_*.deb (required)
#   --rootfs DIR   the worker's sandbox root file system, as make
#                  worker-rootfs builds it (required); installed as
#                  /usr/lib/airlock/sandbox-rootfs
#   --out DIR      output directory (default build/image): airlock.qcow2,
#                  vmlinuz, initrd.img, cmdline (the kernel command line);
#                  the root is unpacked in OUT/root, which must not exist
#                  unless an earlier run made it
#   --mirror URL   Debian mirror, for bookworm and bookworm-updates
#                  (default http://deb.debian.org/debian)
#   --security-mirror URL
#                  Debian's security archive, for bookworm-security
#                  (default http://deb.debian.org/debian-security)
#   --free MB      free space left in the root file system (default 1024)
#   --keep-root    keep the unpacked root (OUT/root) for inspection
#   --root-only    only the root, in OUT/root: no disk, kernel or initrd
#                  (tests/image/10-root.t checks it without booting)
#
# The root is installed from bookworm, bookworm-updates and
# bookworm-security, so the image has Debian's security updates as of its
# build, and its /etc/apt/sources.list names the same three.
#
# Boot it with the kernel and initrd beside it (tests/image/boot.sh does):
#   qemu-system-x86_64 -m 1024 -kernel vmlinuz -initrd initrd.img \
#       -append "$(cat cmdline)" -drive file=airlock.qcow2,if=virtio ...

set -eu

usage() {
    sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'
}

die() {
    echo "build.sh: $*" >&2
    exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=$top/build/image
debs=""
rootfs=""
mirror=http://deb.debian.org/debian
security_mirror=http://deb.debian.org/debian-security
free=1024
keep=0
root_only=0

while [ $# -gt 0 ]; do
    case "$1" in
    --debs) [ $# -ge 2 ] || { usage >&2; exit 2; }; debs=$2; shift ;;
    --rootfs) [ $# -ge 2 ] || { usage >&2; exit 2; }; rootfs=$2; shift ;;
    --out) [ $# -ge 2 ] || { usage >&2; exit 2; }; out=$2; shift ;;
    --mirror) [ $# -ge 2 ] || { usage >&2; exit 2; }; mirror=$2; shift ;;
    --security-mirror)
        [ $# -ge 2 ] || { usage >&2; exit 2; }; security_mirror=$2; shift ;;
    --free) [ $# -ge 2 ] || { usage >&2; exit 2; }; free=$2; shift ;;
    --keep-root) keep=1 ;;
    --root-only) root_only=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown option \"$1\"" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

[ -n "$debs" ] || { echo "build.sh: --debs DIR is required" >&2; exit 2; }
[ -n "$rootfs" ] || { echo "build.sh: --rootfs DIR is required" >&2; exit 2; }
case "$free" in *[!0-9]*|'') die "--free wants a number of MB" ;; esac
# each becomes one line of the root's sources.list: a space or a newline
# in one would make another field or line of it
for m in "$mirror" "$security_mirror"; do
    case "$m" in
    ''|*[[:space:]]*) die "\"$m\" is no mirror URL" ;;
    esac
done

tools="mmdebstrap mkfs.ext4 qemu-img"
[ $root_only = 1 ] && tools=mmdebstrap
for t in $tools; do
    command -v $t >/dev/null 2>&1 || die "$t is missing (auto/deps image)"
done

# one of each, of one version: of several, the last by name was taken,
# and 0.9 sorts after 0.10 (an older image, without a word), or a module
# of another version than the package (dpkg -i failing in the root)
set -- "$debs"/libnginx-mod-http-airlock_*.deb
mod=$1
[ $# = 1 ] || die "$# libnginx-mod-http-airlock packages in $debs: leave one"
set -- "$debs"/airlock_*.deb
pkg=$1
[ $# = 1 ] || die "$# airlock packages in $debs: leave one"
[ -f "$mod" ] && [ -f "$pkg" ] || die "no Airlock packages in $debs (make deb)"
v=$(dpkg-deb -f "$pkg" Version) || die "$pkg: no package"
[ "$(dpkg-deb -f "$mod" Version)" = "$v" ] \
    || die "$mod is not of $pkg's version ($v)"
[ -x "$rootfs/usr/bin/python3" ] \
    || die "$rootfs is no sandbox root file system (make worker-rootfs)"
rootfs=$(cd "$rootfs" && pwd)

mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$out/root

# OUT/root is removed before and after only when OUT/.root-by-build.sh
# says this script unpacked it: "--out /" or "--out ~" named /root or a
# home's root/, and rm -rf took it with everything in it.  A failed
# mmdebstrap takes its root and the mark with it, so that a root/ made
# there later is not taken for one this script unpacked.
mark=$out/.root-by-build.sh
if { [ -e "$root" ] || [ -L "$root" ]; } && [ ! -f "$mark" ]; then
    die "$root exists and is not a root this script unpacked (no $mark):" \
        "move it away, or choose another --out"
fi
rm -rf "$root" "$out/airlock.raw"
: > "$mark"

# Our packages' dependencies (first alternatives, without versions; not
# the virtual nginx-abi, which nginx provides, nor each other) are
# installed by mmdebstrap with the rest: the customize hook then installs
# our two files with dpkg, with no network inside the root.
deps=$(for d in "$mod" "$pkg"; do dpkg-deb -f "$d" Depends; done \
    | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/ //g' \
    | grep -v -e '^$' -e '^nginx-abi-' -e '^libnginx-mod-http-airlock$' \
    | sort -u | tr '\n' ',')

start=$(date +%s)
log=$out/mmdebstrap.log

# The hooks are shell text that mmdebstrap runs with "sh -c": the paths
# reach them in the environment, quoted where they are used, so that a
# path with a space, a quote or a "$(...)" in it is a path (written into
# the hook's text, a space split it and the rest ran as shell)
AIRLOCK_IMAGE_MOD=$mod
AIRLOCK_IMAGE_PKG=$pkg
AIRLOCK_IMAGE_ROOTFS=$rootfs
AIRLOCK_IMAGE_DIR=$here
AIRLOCK_IMAGE_CONF=$top/conf
export AIRLOCK_IMAGE_MOD AIRLOCK_IMAGE_PKG AIRLOCK_IMAGE_ROOTFS \
       AIRLOCK_IMAGE_DIR AIRLOCK_IMAGE_CONF

# The sandboxes' root file system lies on the appliance's own root, where
# every local user reaches it: it is copied without its device nodes
# (mmdebstrap makes /dev/console there 0666, the system console for any
# user to read and write; runsc and bwrap give each sandbox a /dev of
# its own), FIFOs or sockets, set-user-ID or set-group-ID bits, and
# with nothing but its owner's to write (its /tmp was 1777: a place any
# user could leave files in; each sandbox has a /tmp of its own).

echo "build.sh: mmdebstrap bookworm into $root (log: $log)"
mmdebstrap --variant=minbase --format=directory \
    --include=systemd,systemd-sysv,udev,dbus,kmod,linux-image-amd64,\
initramfs-tools,ca-certificates,iproute2,nftables,nginx,redis-server,runsc,\
logrotate,procps,systemd-timesyncd,systemd-resolved,curl,openssl,${deps%,} \
    --customize-hook='set -e
        mkdir -p "$1/tmp/airlock-debs"
        cp "$AIRLOCK_IMAGE_MOD" \
           "$1/tmp/airlock-debs/libnginx-mod-http-airlock.deb"
        cp "$AIRLOCK_IMAGE_PKG" "$1/tmp/airlock-debs/airlock.deb"' \
    --customize-hook='chroot "$1" dpkg -i \
        /tmp/airlock-debs/libnginx-mod-http-airlock.deb \
        /tmp/airlock-debs/airlock.deb' \
    --customize-hook='set -e
        s=$1/usr/lib/airlock/sandbox-rootfs
        mkdir -p "$s"
        cp -a "$AIRLOCK_IMAGE_ROOTFS/." "$s/"
        rm -f "$s/.built"
        find "$s" -xdev \( -type b -o -type c -o -type p -o -type s \) \
            -exec rm -f {} +
        find "$s" -xdev ! -type l -perm /6022 -exec chmod ug-s,go-w {} +' \
    --customize-hook='"$AIRLOCK_IMAGE_DIR/configure-root.sh" "$1" \
        "$AIRLOCK_IMAGE_DIR/root" "$AIRLOCK_IMAGE_CONF"' \
    bookworm "$root" "deb $mirror bookworm main" \
    "deb $mirror bookworm-updates main" \
    "deb $security_mirror bookworm-security main" > "$log" 2>&1 \
    || { tail -30 "$log"; rm -rf "$root"; rm -f "$mark";
         die "mmdebstrap failed"; }

if [ $root_only = 1 ]; then
    echo "build.sh: root in $root, built in $(($(date +%s) - start)) s"
    exit 0
fi

# the kernel and initrd boot it from outside
vmlinuz=$(ls "$root"/boot/vmlinuz-* | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | tail -1)
cp "$vmlinuz" "$out/vmlinuz"
cp "$initrd" "$out/initrd.img"
echo "root=LABEL=airlock-root rw console=ttyS0,115200 net.ifnames=0" \
    > "$out/cmdline"

# the file system: the root's size plus the free space asked for
used=$(du -sm "$root" | cut -f1)
size=$((used + used / 10 + free))
echo "build.sh: ext4 of ${size} MB (root ${used} MB)"
rm -f "$out/airlock.raw"
mkfs.ext4 -q -F -L airlock-root -d "$root" "$out/airlock.raw" "${size}M" \
    || die "mkfs.ext4 -d failed"
qemu-img convert -f raw -O qcow2 "$out/airlock.raw" "$out/airlock.qcow2" \
    || die "qemu-img convert failed"
rm -f "$out/airlock.raw"
[ $keep = 1 ] || { rm -rf "$root" && rm -f "$mark"; }

end=$(date +%s)
echo "build.sh: $out/airlock.qcow2 $(du -m "$out/airlock.qcow2" | cut -f1) MB" \
     "on disk ($(qemu-img info "$out/airlock.qcow2" | sed -n 's/^virtual size: \([^(]*\).*/\1/p'| tr -d ' ') virtual)," \
     "built in $((end - start)) s"
