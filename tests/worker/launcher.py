#!/usr/bin/python3
# Speaks the launcher's protocol (worker/aw.h: aw_launch_req_t and
# aw_launch_rep_t) on a running worker's own socket, taken from it with
# pidfd_getfd (root), while the worker waits on Redis: one request that
# is right, then malformed and out-of-range ones.  One JSON line a case.
#
#   launcher.py WORKER_PID MAXIMA_JSON

import array
import ctypes
import json
import os
import socket
import struct
import sys

MAGIC = 0x31574c41
REQ = '<IIqqqq'
REP = '<IIiiiiiiqqqqqq64s256s'
SYS_PIDFD_GETFD = 438

pid = int(sys.argv[1])
mx = json.loads(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)


def launcher_socket():
    pidfd = os.pidfd_open(pid)
    for name in sorted(os.listdir('/proc/%d/fd' % pid), key=int):
        try:
            link = os.readlink('/proc/%d/fd/%s' % (pid, name))
        except OSError:
            continue
        if not link.startswith('socket:'):
            continue
        fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(name), 0)
        if fd < 0:
            continue
        s = socket.socket(fileno=fd)
        if s.family == socket.AF_UNIX and s.type == socket.SOCK_SEQPACKET:
            return s
        s.close()
    sys.exit('no SOCK_SEQPACKET socket in worker %d' % pid)


sock = launcher_socket()
sock.settimeout(120)


def memfd(data):
    fd = os.memfd_create('probe')
    os.write(fd, data)
    return fd


def good(script=b"print('probe')\n"):
    """the five descriptors a job needs, and the read ends kept here"""
    pipes = [os.pipe() for _ in range(3)]
    return ([memfd(script), memfd(b'{}')] + [w for r, w in pipes],
            [r for r, w in pipes])


def req(magic=MAGIC, seq=7, wall=2000, cpu=1000, mem=64, pids=16):
    return struct.pack(REQ, magic, seq, wall, cpu, mem, pids)


def ask(case, payload, fds, keep=()):
    anc = []
    if fds:
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', fds))]
    sock.sendmsg([payload], anc)
    for fd in fds:
        os.close(fd)
    r = sock.recv(4096)
    out = {'case': case, 'len': len(r)}
    if len(r) == struct.calcsize(REP):
        v = struct.unpack(REP, r)
        out.update(magic=v[0], seq=v[1], result=v[2], status=v[4],
                   text=v[15].split(b'\0')[0].decode('utf-8', 'replace'))
    if keep:
        out['stdout'] = os.read(keep[0], 4096).decode('utf-8', 'replace')
    for fd in keep:
        os.close(fd)
    print(json.dumps(out), flush=True)


# the right request: it runs
fds, keep = good()
ask('good', req(seq=11), fds, keep)

# each limit above worker.conf's maximum, below its floor, negative
for name, kw in [
        ('wall over', {'wall': mx['max_wall_ms'] + 1}),
        ('cpu over', {'cpu': mx['max_cpu_ms'] + 1}),
        ('memory over', {'mem': mx['max_memory_mb'] + 1}),
        ('pids over', {'pids': mx['max_pids'] + 1}),
        ('wall under', {'wall': 99}),
        ('cpu under', {'cpu': 999}),
        ('memory under', {'mem': 15}),
        ('pids under', {'pids': 7}),
        ('pids negative', {'pids': -1}),
        ('memory huge', {'mem': 2 ** 62}),
        ('bad magic', {'magic': 0x41414141})]:
    fds, keep = good()
    ask(name, req(seq=12, **kw), fds, keep)

# sizes
fds, keep = good()
ask('short', req(seq=13)[:20], fds, keep)
fds, keep = good()
ask('long', req(seq=13) + b'\0' * 8, fds, keep)

fds, keep = good()
ask('empty', b'', fds, keep)

# descriptor counts
ask('no descriptors', req(seq=14), [])
fds, keep = good()
ask('four descriptors', req(seq=14), fds[:4], keep)
os.close(fds[4])
fds, keep = good()
ask('six descriptors', req(seq=14), fds + [os.dup(fds[0])], keep)

# descriptor kinds
fds, keep = good()
r, w = os.pipe()
os.close(fds[0])
fds[0] = r
ask('script is a pipe', req(seq=15), fds, keep + [w])

fds, keep = good()
os.close(fds[1])
fds[1] = os.open('/', os.O_RDONLY | os.O_DIRECTORY)
ask('data is a directory', req(seq=15), fds, keep)

fds, keep = good()
os.close(fds[0])
fds[0] = memfd(b'#' * (mx['max_script_bytes'] + 1))
ask('script too large', req(seq=15), fds, keep)

fds, keep = good()
os.close(fds[2])
fds[2] = os.dup(keep[0])
ask('stdout is a read end', req(seq=15), fds, keep)

fds, keep = good()
os.close(fds[3])
fds[3] = memfd(b'')
ask('stderr is a file', req(seq=15), fds, keep)

# still serving: the right request again
fds, keep = good(b"print('again')\n")
ask('good again', req(seq=16), fds, keep)
