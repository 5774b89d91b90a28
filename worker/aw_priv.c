/*
 * Privilege separation.  Once the configuration is read and checked,
 * the worker splits in three (aw_priv_split()):
 *
 *   the launcher   a child that stays root with the unit's capabilities
 *                  and does only what needs them: for each request it
 *                  makes the job's directory and cgroup, starts the
 *                  runtime through the keeper, kills what is left and
 *                  wipes the directory (aw_sandbox_launch()).  Its only
 *                  input is a fixed-layout aw_launch_req_t and five
 *                  descriptors on a socketpair (aw_priv_serve()); every
 *                  number is checked again against worker.conf's maxima,
 *                  every descriptor for its type.  It never reads JSON,
 *                  a Redis reply or what a sandbox writes.
 *
 *   the fetch spawner
 *                  a second child, the worker's user with no
 *                  supplementary group, that clones each job's fetch
 *                  (aw_fetch_split(), aw_fetch.c)
 *
 *   the worker     the process systemd started, which drops to the
 *                  worker's user (setgroups, setgid, setuid: no
 *                  capability left, setuid(0) refused, no new
 *                  privileges, not dumpable) and does everything else:
 *                  Redis, the envelope's parse, the fetches, the
 *                  sandbox's output, the result.
 *
 * Either ends with the other: the worker stops and exits 1 when the
 * launcher (or the spawner) is gone (found dead between entries,
 * aw_priv_watch(), or by the socket's end during a job, which the job's
 * result (lost) carries back to the main loop), leaving the entry in
 * hand pending for its next delivery; the launcher kills the job it
 * runs and exits when the worker's end of the socket closes, the
 * spawner when it does or the worker dies.
 */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <unistd.h>

#include "aw.h"


#define AW_GROUPS_MAX  64


static int aw_priv_hangup(int sock);
static int aw_priv_check(const aw_conf_t *conf, const aw_launch_req_t *req,
    const int fds[AW_LAUNCH_NFDS], char *why, size_t n);
static void aw_priv_refuse(int sock, uint32_t seq, const char *why);
static void aw_priv_answer(int sock, aw_launch_rep_t *rep);


static int    aw_priv_sock = -1;
static pid_t  aw_priv_launcher = -1;


int
aw_priv_split(aw_conf_t *conf, char *err, size_t n)
{
    int    sock;
    pid_t  pid;

    /* the jobs are named after this process, the one that stays */
    aw_sandbox_owner();

    pid = aw_priv_fork(&sock, err, n);
    if (pid < 0) {
        return -1;
    }

    if (pid == 0) {
        aw_priv_serve(conf, sock);
    }

    aw_priv_sock = sock;
    aw_priv_launcher = pid;

    /* the fetches' spawner, which drops every supplementary group */
    if ((getuid() == 0 || geteuid() == 0)
        && aw_fetch_split(conf, err, n) != 0)
    {
        return -1;
    }

    if (aw_priv_drop(conf, 1, err, n) != 0) {
        return -1;
    }

    aw_log("notice", "launcher %d runs the sandboxes; this worker runs as "
           "uid %d gid %d", (int) pid, (int) getuid(), (int) getgid());

    return 0;
}


/*
 * A child on a socketpair of its own, as the launcher and the fetch
 * spawner are started: fork()'s answer, with *sock this side's end of a
 * new SOCK_SEQPACKET pair (the child's end in the child, the parent's in
 * the parent; the other end closed on each side), or -1 with err and
 * nothing left open.
 */

pid_t
aw_priv_fork(int *sock, char *err, size_t n)
{
    int    sv[2];
    pid_t  pid;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(err, n, "socketpair: %s", strerror(errno));
        return -1;
    }

    pid = fork();
    if (pid < 0) {
        snprintf(err, n, "fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }

    close(pid == 0 ? sv[0] : sv[1]);
    *sock = pid == 0 ? sv[1] : sv[0];

    return pid;
}


/*
 * The worker's user for good.  With keep, the supplementary groups the
 * process was started with stay (the unit's SupplementaryGroups=redis:
 * Redis's socket), except root's; without, none does (the fetch
 * spawner, aw_fetch.c).  Started as another user (no root to drop), it
 * stays that user.
 */

int
aw_priv_drop(const aw_conf_t *conf, int keep, char *err, size_t n)
{
    int                               i, k, ng;
    gid_t                             groups[AW_GROUPS_MAX];
    struct __user_cap_header_struct   hdr;
    struct __user_cap_data_struct     data[2];

    if (getuid() == 0 || geteuid() == 0) {
        ng = getgroups(AW_GROUPS_MAX, groups);
        if (ng < 0) {
            snprintf(err, n, "getgroups: %s", strerror(errno));
            return -1;
        }

        for (i = 0, k = 0; i < ng && keep; i++) {
            if (groups[i] != 0) {
                groups[k++] = groups[i];
            }
        }

        if (setgroups((size_t) k, groups) != 0
            || setresgid(conf->gid, conf->gid, conf->gid) != 0
            || setresuid(conf->uid, conf->uid, conf->uid) != 0)
        {
            snprintf(err, n, "cannot switch to user %s: %s", conf->user,
                     strerror(errno));
            return -1;
        }
    }

    if (setuid(0) == 0 || seteuid(0) == 0 || getuid() == 0
        || getgid() == 0 || getegid() == 0)
    {
        snprintf(err, n, "still root after the switch to user %s",
                 conf->user);
        return -1;
    }

    if (!keep && getgroups(0, NULL) != 0) {
        snprintf(err, n, "supplementary groups left after the switch to "
                 "user %s", conf->user);
        return -1;
    }

    memset(&hdr, 0, sizeof(hdr));
    memset(data, 0, sizeof(data));
    hdr.version = _LINUX_CAPABILITY_VERSION_3;

    if (syscall(SYS_capget, &hdr, data) != 0
        || data[0].effective != 0 || data[0].permitted != 0
        || data[1].effective != 0 || data[1].permitted != 0)
    {
        snprintf(err, n, "capabilities left after the switch to user %s",
                 conf->user);
        return -1;
    }

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
        || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    {
        snprintf(err, n, "prctl: %s", strerror(errno));
        return -1;
    }

    return 0;
}


int
aw_priv_fd(void)
{
    return aw_priv_sock;
}


/*
 * The worker's, between entries: -1 when the launcher or the fetch
 * spawner died, which ends the worker (exit 1, from its main loop) for
 * systemd to start them all again.  No SIGCHLD handler: its signal
 * would break the worker's other waits (hiredis's connect polls are not
 * restarted).  During a job the socket's end tells it.
 */

int
aw_priv_watch(void)
{
    int  st;

    if (aw_priv_launcher > 0
        && waitpid(aw_priv_launcher, &st, WNOHANG) == aw_priv_launcher)
    {
        aw_priv_launcher = -1;
        aw_log("alert", "the launcher is gone (wait status %d)", st);
        return -1;
    }

    if (aw_fetch_gone(&st)) {
        aw_log("alert", "the fetch spawner is gone (wait status %d)", st);
        return -1;
    }

    return 0;
}


/* The worker's: a request to the launcher; -1 with it gone. */

int
aw_priv_send(const aw_launch_req_t *req, const int fds[AW_LAUNCH_NFDS])
{
    ssize_t          r;
    struct iovec     iov;
    struct msghdr    msg;
    struct cmsghdr  *cm;
    union {
        char             buf[CMSG_SPACE(sizeof(int) * AW_LAUNCH_NFDS)];
        struct cmsghdr   align;
    } u;

    memset(&msg, 0, sizeof(msg));
    memset(&u, 0, sizeof(u));
    iov.iov_base = (void *) req;
    iov.iov_len = sizeof(*req);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof(u.buf);

    cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * AW_LAUNCH_NFDS);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * AW_LAUNCH_NFDS);

    do {
        r = sendmsg(aw_priv_sock, &msg, MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);

    if (r != (ssize_t) sizeof(*req)) {
        aw_log("alert", "the launcher is gone (%s)",
               r < 0 ? strerror(errno) : "short write");
        return -1;
    }

    return 0;
}


/*
 * The worker's: the launcher's answer to request seq.  A launcher gone,
 * or one answering out of turn: -1, which ends the worker (exit 1) with
 * the entry in hand pending, delivered again to the next start.
 */

int
aw_priv_recv(uint32_t seq, aw_launch_rep_t *rep)
{
    ssize_t  r;

    do {
        r = recv(aw_priv_sock, rep, sizeof(*rep), 0);
    } while (r < 0 && errno == EINTR);

    if (r != (ssize_t) sizeof(*rep) || rep->magic != AW_LAUNCH_MAGIC
        || rep->seq != seq)
    {
        aw_log("alert", "the launcher is gone or answered out of turn "
               "(%zd bytes)", r);
        return -1;
    }

    rep->slot[sizeof(rep->slot) - 1] = '\0';
    rep->text[sizeof(rep->text) - 1] = '\0';

    return 0;
}


/*
 * The launcher: one request at a time until the worker's end closes.
 * What it receives is checked whole before anything is done with it
 * (aw_priv_check()); what does not pass is refused, its descriptors
 * closed, and the launcher waits for the next.
 */

void
aw_priv_serve(const aw_conf_t *conf, int sock)
{
    int              i, nfd, fds[AW_LAUNCH_NFDS + 16];
    char             why[256];
    ssize_t          r;
    uint32_t         seq;
    aw_limits_t      lim;
    struct iovec     iov;
    struct msghdr    msg;
    aw_launch_req_t  req[2];
    aw_launch_rep_t  rep;
    union {
        char             buf[CMSG_SPACE(sizeof(int)
                                        * (AW_LAUNCH_NFDS + 16))];
        struct cmsghdr   align;
    } u;

    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGHUP, SIG_IGN);

    /* nothing of the worker's but the socket, stdio and the uid lease */
    aw_priv_close_others(sock, conf->host_uid_fd);

    for ( ;; ) {
        memset(&msg, 0, sizeof(msg));
        memset(req, 0, sizeof(req));
        iov.iov_base = req;
        iov.iov_len = sizeof(req);      /* room to see one too long */
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = u.buf;
        msg.msg_controllen = sizeof(u.buf);

        r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

        if (r < 0 && errno == EINTR) {
            continue;
        }

        if (r < 0 || (r == 0 && aw_priv_hangup(sock))) {
            /* the worker is gone: so is its launcher */
            _exit(r == 0 ? 0 : 1);
        }

        /* every descriptor received, whatever else is wrong */
        nfd = aw_priv_take_fds(&msg, fds, sizeof(fds) / sizeof(fds[0]));

        seq = r >= (ssize_t) sizeof(uint32_t) * 2 ? req[0].seq : 0;

        if (r != (ssize_t) sizeof(req[0])
            || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0)
        {
            snprintf(why, sizeof(why), "a request of %zd bytes, %d "
                     "descriptors%s: %zu bytes expected", r, nfd,
                     msg.msg_flags & MSG_CTRUNC ? " (truncated)" : "",
                     sizeof(req[0]));
            goto refuse;
        }

        if (nfd != AW_LAUNCH_NFDS) {
            snprintf(why, sizeof(why), "%d descriptors, %d expected", nfd,
                     AW_LAUNCH_NFDS);
            goto refuse;
        }

        if (aw_priv_check(conf, &req[0], fds, why, sizeof(why)) != 0) {
            goto refuse;
        }

        lim.wall_ms = (long) req[0].wall_ms;
        lim.cpu_ms = (long) req[0].cpu_ms;
        lim.memory_mb = (long) req[0].memory_mb;
        lim.pids = (long) req[0].pids;
        lim.stdout_bytes = 0;
        lim.stderr_bytes = 0;

        memset(&rep, 0, sizeof(rep));
        rep.magic = AW_LAUNCH_MAGIC;
        rep.seq = seq;

        aw_sandbox_launch(conf, &lim, fds, sock, &rep);

        for (i = 0; i < nfd; i++) {
            if (fds[i] >= 0) {
                close(fds[i]);
            }
        }

        aw_priv_answer(sock, &rep);
        continue;

    refuse:

        for (i = 0; i < nfd; i++) {
            close(fds[i]);
        }

        aw_log("alert", "launcher: request refused: %s", why);
        aw_priv_refuse(sock, seq, why);
    }
}


/*
 * Whether the worker's end is closed: recvmsg() returns 0 for that and
 * for an empty message alike, which is only refused
 */

static int
aw_priv_hangup(int sock)
{
    struct pollfd  pfd;

    pfd.fd = sock;
    pfd.events = 0;
    pfd.revents = 0;

    return poll(&pfd, 1, 0) != 0 && (pfd.revents & (POLLHUP | POLLERR)) != 0;
}


/*
 * The descriptors a message carried, every one of them whatever else is
 * wrong with it: the first max go to fds, the rest are closed.  Returns
 * how many went to fds.
 */

int
aw_priv_take_fds(struct msghdr *msg, int *fds, size_t max)
{
    int             *p;
    size_t           k, n;
    struct cmsghdr  *cm;

    n = 0;

    for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS
            || cm->cmsg_len < CMSG_LEN(0))
        {
            continue;
        }

        p = (int *) (void *) CMSG_DATA(cm);

        for (k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
            if (n < max) {
                fds[n++] = p[k];

            } else {
                close(p[k]);
            }
        }
    }

    return (int) n;
}


/* Closes every descriptor from 3 up but a and b (-1: none). */

void
aw_priv_close_others(int a, int b)
{
    int  lo, hi, from;

    lo = a < b ? a : b;
    hi = a < b ? b : a;
    from = 3;

    if (lo >= from) {
        if (lo > from) {
            (void) close_range((unsigned) from, (unsigned) lo - 1, 0);
        }
        from = lo + 1;
    }

    if (hi >= from) {
        if (hi > from) {
            (void) close_range((unsigned) from, (unsigned) hi - 1, 0);
        }
        from = hi + 1;
    }

    (void) close_range((unsigned) from, ~0U, 0);
}


/*
 * The launcher's checks of a request: its magic, each limit between
 * its floor and worker.conf's maximum, the script and data regular files
 * no larger than a job can have them, the three pipes pipes open for
 * writing.
 */

static int
aw_priv_check(const aw_conf_t *conf, const aw_launch_req_t *req,
    const int fds[AW_LAUNCH_NFDS], char *why, size_t n)
{
    int          i, fl;
    struct stat  st;

    if (req->magic != AW_LAUNCH_MAGIC) {
        snprintf(why, n, "bad magic 0x%08x", (unsigned) req->magic);
        return -1;
    }

    if (req->wall_ms < AW_MIN_WALL_MS || req->wall_ms > conf->maxima.wall_ms
        || req->cpu_ms < AW_MIN_CPU_MS || req->cpu_ms > conf->maxima.cpu_ms
        || req->memory_mb < AW_MIN_MEMORY_MB
        || req->memory_mb > conf->maxima.memory_mb
        || req->pids < AW_MIN_PIDS || req->pids > conf->maxima.pids)
    {
        snprintf(why, n, "limits out of range: wall_ms %lld, cpu_ms %lld, "
                 "memory_mb %lld, pids %lld",
                 (long long) req->wall_ms, (long long) req->cpu_ms,
                 (long long) req->memory_mb, (long long) req->pids);
        return -1;
    }

    for (i = 0; i < AW_LAUNCH_NFDS; i++) {
        if (fstat(fds[i], &st) != 0) {
            snprintf(why, n, "descriptor %d: %s", i, strerror(errno));
            return -1;
        }

        if (i < 2) {
            if (!S_ISREG(st.st_mode)
                || st.st_size > (off_t) (i == 0 ? (size_t)
                                                  conf->max_script_bytes
                                                : AW_DATA_MAX(conf)))
            {
                snprintf(why, n, "descriptor %d: not a regular file of "
                         "at most the job's size", i);
                return -1;
            }

            continue;
        }

        fl = fcntl(fds[i], F_GETFL);

        if (!S_ISFIFO(st.st_mode) || fl < 0 || (fl & O_ACCMODE) != O_WRONLY)
        {
            snprintf(why, n, "descriptor %d: not a pipe's write end", i);
            return -1;
        }
    }

    return 0;
}


static void
aw_priv_refuse(int sock, uint32_t seq, const char *why)
{
    aw_launch_rep_t  rep;

    memset(&rep, 0, sizeof(rep));
    rep.magic = AW_LAUNCH_MAGIC;
    rep.seq = seq;
    rep.result = AW_LAUNCH_REFUSED;
    snprintf(rep.text, sizeof(rep.text), "%s", why);

    aw_priv_answer(sock, &rep);
}


static void
aw_priv_answer(int sock, aw_launch_rep_t *rep)
{
    ssize_t  r;

    do {
        r = send(sock, rep, sizeof(*rep), MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);

    if (r != (ssize_t) sizeof(*rep)) {
        _exit(r < 0 && errno == EPIPE ? 0 : 1);
    }
}
