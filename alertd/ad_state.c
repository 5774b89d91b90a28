/*
 * The state directory.
 *
 *   STATE/lock      flock()ed while a daemon runs: one alertd per state
 *   STATE/offset    the journal position (device, inode, offset and a
 *                   fingerprint of the bytes before it; the same for a
 *                   rotated file still read), the open groups, the
 *                   counts of alerts a full outbox dropped and the
 *                   clock the windows were measured by (the boot id,
 *                   wall - boot clock), one JSON object: the snapshot
 *   STATE/offset.log  what changed since the snapshot, one JSON object
 *                   per save and line: the position and the drop counts
 *                   again, the groups that changed and the keys of those
 *                   closed
 *   STATE/outbox/   one file per pending (alert, sink), see ad_outbox.c
 *   STATE/lifts     the quarantines sent to Alertmanager, resolved if
 *                   nginx makes its deny zone anew, see ad_lift.c
 *
 * Files are replaced atomically: written to ".tmp-NAME", fsync()ed,
 * renamed over NAME, and the directory fsync()ed by the caller once per
 * batch.  A crash leaves the old file or the new one, never a mix.  The
 * position, the groups and the drop counts are saved together, in one
 * write, so that a journal line is never folded or counted twice, or
 * lost between two writes.
 *
 * A save appends one line to offset.log and fsync()s it: its size is
 * what changed, not the open groups (thousands of peers, each a group,
 * made a whole file per alert line).  A line cut short by a crash is
 * not a save: loading stops before it.  When the log would outgrow the
 * snapshot (or AD_STATE_LOG_MIN), a new snapshot is written instead,
 * with the next generation number, and the log emptied; a log line of
 * another generation is older than the snapshot and is skipped.  The
 * first save after a start and every save after a failed append write a
 * snapshot, so the log never holds a broken line before a good one.
 *
 * A snapshot found cut short all the same (a file system that does not
 * keep the order of write, fsync and rename) is set aside as offset.bad,
 * said, and the journal read from its start: alertd runs, and what the
 * outbox does not hold is queued again (sent at least once).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "alertd.h"


#define AD_STATE_VERSION  1


static int ad_file_open(int dirfd, const char *name, int flags,
    mode_t mode);
static int ad_write_all(int fd, const char *data, size_t len);
static json_t *ad_print_to_json(const ad_fpos_t *fp);
static int ad_print_from_json(const json_t *o, ad_fpos_t *fp);
static int ad_rotated_from_json(const json_t *o, ad_fpos_t *fp);
static int ad_state_check(const json_t *o, char *why, size_t whysize);
static int ad_state_cut(const char *buf, size_t len,
    const json_error_t *jerr);
static int ad_state_set_aside(ad_state_t *st, size_t len,
    const json_error_t *jerr, char *err, size_t errsize);
static int ad_state_replay(ad_state_t *st, ad_groups_t *gs, json_t **last,
    char *why, size_t whysize);
static json_t *ad_state_to_json(const ad_state_t *st, const char *journal,
    const ad_pos_t *pos, const ad_outbox_t *ob);
static json_t *ad_steps_to_json(const ad_state_t *st);
static int ad_steps_from_json(ad_state_t *st, const json_t *a);
static int ad_state_clock(ad_state_t *st, const json_t *o, ad_groups_t *gs,
    char *why, size_t whysize);
static int ad_state_snapshot(ad_state_t *st, json_t *o,
    const ad_groups_t *gs);
static int ad_state_append(ad_state_t *st, json_t *o,
    const ad_groups_t *gs);


int
ad_state_open(ad_state_t *st, const char *path, char *err, size_t errsize)
{
    st->path = path;
    st->lock = -1;
    st->log = -1;
    st->gen = 0;
    st->snap_size = 0;
    st->log_size = 0;
    st->snapshot = 1;
    st->clock = 0;
    st->saved_clock = 0;
    st->saved_at = 0;
    st->nsteps = 0;
    st->errnum = 0;
    memset(&st->append_fail, 0, sizeof(ad_fail_t));
    memset(&st->empty_fail, 0, sizeof(ad_fail_t));

    st->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (st->fd == -1 && errno == ENOENT) {
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            st->errnum = errno;
            (void) snprintf(err, errsize, "cannot create the state "
                            "directory %s: %s", path, strerror(errno));
            return -1;
        }

        st->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }

    if (st->fd == -1) {
        st->errnum = errno;
        (void) snprintf(err, errsize, "cannot open the state directory "
                        "%s: %s", path, strerror(errno));
        return -1;
    }

    st->lock = ad_file_open(st->fd, "lock", O_RDWR | O_CREAT, 0600);
    if (st->lock == -1) {
        st->errnum = errno;
        (void) snprintf(err, errsize, "cannot write in the state directory "
                        "%s: %s/lock: %s", path, path,
                        ad_file_strerror(errno));
        ad_state_close(st);
        return -1;
    }

    if (flock(st->lock, LOCK_EX | LOCK_NB) != 0) {
        (void) snprintf(err, errsize, "another airlock-alertd is using the "
                        "state directory %s", path);
        ad_state_close(st);
        return -1;
    }

    if (mkdirat(st->fd, "outbox", 0700) != 0 && errno != EEXIST) {
        st->errnum = errno;
        (void) snprintf(err, errsize, "cannot create %s/outbox: %s", path,
                        strerror(errno));
        ad_state_close(st);
        return -1;
    }

    st->log = ad_file_open(st->fd, "offset.log", O_RDWR | O_APPEND
                                                 | O_CREAT, 0600);
    if (st->log == -1 || ad_fsync_dir(st->fd) != 0) {
        st->errnum = errno;
        (void) snprintf(err, errsize, "cannot open %s/offset.log: %s",
                        path, ad_file_strerror(errno));
        ad_state_close(st);
        return -1;
    }

    return 0;
}


void
ad_state_close(ad_state_t *st)
{
    if (st->log != -1) {
        (void) close(st->log);
        st->log = -1;
    }

    if (st->lock != -1) {
        (void) close(st->lock);
        st->lock = -1;
    }

    if (st->fd != -1) {
        (void) close(st->fd);
        st->fd = -1;
    }
}


/*
 * Opens a file of the state directory: never through a symbolic link,
 * and never waiting on a FIFO or a device put under its name (open()
 * of a FIFO waits for a writer, a read of it for data: alertd would
 * hang at start, every signal held on the signalfd).  O_NONBLOCK does
 * nothing to a regular file, and only a regular file is a state file:
 * anything else fails as EINVAL, said as "not a regular file".
 */

static int
ad_file_open(int dirfd, const char *name, int flags, mode_t mode)
{
    int          fd, err;
    struct stat  st;

    fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
                mode);
    if (fd == -1) {
        return -1;
    }

    if (fstat(fd, &st) != 0) {
        err = errno;

    } else if (!S_ISREG(st.st_mode)) {
        err = EINVAL;

    } else {
        return fd;
    }

    (void) close(fd);
    errno = err;

    return -1;
}


/* why a file could not be opened, as the log says it */

const char *
ad_file_strerror(int err)
{
    return (err == EINVAL) ? "not a regular file" : strerror(err);
}


static int
ad_write_all(int fd, const char *data, size_t len)
{
    ssize_t  n;

    while (len > 0) {
        n = write(fd, data, len);

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }

        data += n;
        len -= (size_t) n;
    }

    return 0;
}


int
ad_file_replace(int dirfd, const char *name, const char *data, size_t len)
{
    int   fd, saved;
    char  tmp[AD_NAME_MAX + 8];

    if ((size_t) snprintf(tmp, sizeof(tmp), ".tmp-%s", name) >= sizeof(tmp))
    {
        errno = ENAMETOOLONG;
        return -1;
    }

    /*
     * The name is ours alone: whatever is there (a file a crash left, a
     * FIFO that a write would wait on) goes, and a new file is made.
     */

    (void) unlinkat(dirfd, tmp, 0);

    fd = ad_file_open(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd == -1) {
        return -1;
    }

    if (ad_write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        saved = errno;
        (void) close(fd);
        (void) unlinkat(dirfd, tmp, 0);
        errno = saved;
        return -1;
    }

    if (close(fd) != 0 || renameat(dirfd, tmp, dirfd, name) != 0) {
        saved = errno;
        (void) unlinkat(dirfd, tmp, 0);
        errno = saved;
        return -1;
    }

    return 0;
}


int
ad_file_read(int dirfd, const char *name, size_t max, char **buf,
    size_t *len)
{
    int       fd, saved;
    char     *b;
    size_t    n;
    ssize_t   r;

    fd = ad_file_open(dirfd, name, O_RDONLY, 0);
    if (fd == -1) {
        return -1;
    }

    b = malloc(max + 1);
    if (b == NULL) {
        (void) close(fd);
        errno = ENOMEM;
        return -1;
    }

    n = 0;

    while (n <= max) {
        r = read(fd, b + n, max + 1 - n);

        if (r == -1) {
            if (errno == EINTR) {
                continue;
            }
            saved = errno;
            free(b);
            (void) close(fd);
            errno = saved;
            return -1;
        }

        if (r == 0) {
            break;
        }

        n += (size_t) r;
    }

    (void) close(fd);

    if (n > max) {
        free(b);
        errno = EFBIG;
        return -1;
    }

    b[n] = '\0';
    *buf = b;
    *len = n;

    return 0;
}


int
ad_fsync_dir(int dirfd)
{
    return fsync(dirfd);
}


/*
 * Whether a snapshot that is no JSON was cut short: empty, or the start
 * of an object whose text ends where it went wrong (jansson's position
 * is at its end), not a whole value with bytes after it.  Its
 * write, fsync and rename keep it whole on a file system that keeps
 * their order; one that does not (or a copy taken while alertd ran)
 * may leave it cut at any byte after a power cut.
 */

static int
ad_state_cut(const char *buf, size_t len, const json_error_t *jerr)
{
    if (len == 0) {
        return 1;
    }

    if (buf[0] != '{'
        || json_error_code(jerr) == json_error_end_of_input_expected)
    {
        return 0;
    }

    return json_error_code(jerr) == json_error_premature_end_of_input
           || (jerr->position >= 0 && (size_t) jerr->position >= len);
}


/*
 * A snapshot cut short holds no position to trust, and the log's lines
 * are changes to it: both are set aside (offset.bad, offset.log
 * emptied) and the journal is read from its start, which queues again
 * what the outbox does not hold (alerts sent before are sent again,
 * with their ids: at least once).  The first save writes a snapshot.
 */

static int
ad_state_set_aside(ad_state_t *st, size_t len, const json_error_t *jerr,
    char *err, size_t errsize)
{
    const char  *kept;

    kept = "set aside as offset.bad";

    if (renameat(st->fd, "offset", st->fd, "offset.bad") != 0) {
        kept = "left in place (cannot rename it to offset.bad), the first "
               "save replaces it";
        ad_log(AD_LOG_ERR, "cannot rename %s/offset to offset.bad: %s",
               st->path, strerror(errno));

    } else if (ad_fsync_dir(st->fd) != 0) {
        ad_log(AD_LOG_WARN, "cannot sync %s after renaming offset: %s",
               st->path, strerror(errno));
    }

    ad_log(AD_LOG_ERR, "%s/offset is cut short (%zu bytes: %s), by a crash "
           "or a power cut during its write: %s; the journal is read from "
           "its start, and alerts sent before are sent again, with their "
           "ids", st->path, len, len == 0 ? "empty" : jerr->text, kept);

    if (ftruncate(st->log, 0) != 0) {
        st->errnum = errno;
        (void) snprintf(err, errsize, "cannot empty %s/offset.log: %s",
                        st->path, strerror(errno));
        return -1;
    }

    st->snap_size = 0;
    st->log_size = 0;

    return 0;
}


int
ad_state_load(ad_state_t *st, const char *journal, ad_pos_t *pos,
    ad_groups_t *gs, ad_outbox_t *ob, char *err, size_t errsize)
{
    int            cut;
    char          *buf;
    size_t         len;
    json_t        *o, *last, *print, *rotated, *dropped;
    json_int_t     dev, ino, off, gen;
    const char    *path;
    json_error_t   jerr;
    char           why[256];

    memset(pos, 0, sizeof(ad_pos_t));
    gs->n = 0;
    last = NULL;

    /* the first save writes a snapshot; without one the log is emptied */

    st->snapshot = 1;

    if (ad_file_read(st->fd, "offset", AD_STATE_FILE_MAX, &buf, &len) != 0)
    {
        if (errno == ENOENT) {
            if (ftruncate(st->log, 0) == 0) {
                return 0;
            }

            st->errnum = errno;
            (void) snprintf(err, errsize, "cannot empty %s/offset.log: "
                            "%s", st->path, strerror(errno));
            return -1;
        }

        st->errnum = errno;
        (void) snprintf(err, errsize, "cannot read %s/offset: %s",
                        st->path, ad_file_strerror(errno));
        return -1;
    }

    st->snap_size = len;

    o = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    cut = (o == NULL && ad_state_cut(buf, len, &jerr));
    free(buf);

    if (o == NULL) {
        if (cut) {
            return ad_state_set_aside(st, len, &jerr, err, errsize);
        }

        (void) snprintf(why, sizeof(why), "%s", jerr.text);
        goto bad;
    }

    if (ad_state_check(o, why, sizeof(why)) != 0) {
        goto bad;
    }

    gen = 0;
    if (json_unpack(o, "{s?I}", "gen", &gen) != 0 || gen < 0) {
        (void) snprintf(why, sizeof(why), "\"gen\" is not a number");
        goto bad;
    }

    st->gen = gen;

    if (ad_group_from_json(gs, json_object_get(o, "groups"), why,
                           sizeof(why)) != 0)
    {
        goto bad;
    }

    /* the saves after the snapshot; the last one has the position */

    if (ad_state_replay(st, gs, &last, why, sizeof(why)) != 0) {
        goto bad_log;
    }

    if (last != NULL) {
        json_decref(o);
        o = last;
    }

    (void) json_unpack(o, "{s:s, s:I, s:I, s:I}", "journal", &path,
                       "dev", &dev, "ino", &ino, "offset", &off);

    /*
     * "print", "rotated" and "dropped" came later: a state file without
     * them is still good, its position is then trusted on the inode
     * alone, and nothing was dropped.
     */

    dropped = json_object_get(o, "dropped");
    if (dropped != NULL
        && ad_outbox_drops_from_json(ob, dropped, why, sizeof(why)) != 0)
    {
        goto last_bad;
    }

    pos->cur.off = off;

    print = json_object_get(o, "print");
    if (print != NULL && ad_print_from_json(print, &pos->cur) != 0) {
        (void) snprintf(why, sizeof(why), "\"print\" is not a journal "
                        "fingerprint for offset %lld", (long long) off);
        goto last_bad;
    }

    rotated = json_object_get(o, "rotated");
    if (rotated != NULL && ad_rotated_from_json(rotated, &pos->old) != 0) {
        (void) snprintf(why, sizeof(why), "\"rotated\" is not a journal "
                        "position");
        goto last_bad;
    }

    if (ad_state_clock(st, o, gs, why, sizeof(why)) != 0) {
        goto last_bad;
    }

    if (strcmp(path, journal) != 0) {
        ad_log(AD_LOG_WARN, "the saved position is for the journal %s, "
               "not %s: reading %s from its start", path, journal,
               journal);
        memset(pos, 0, sizeof(ad_pos_t));

    } else {
        pos->cur.dev = (uint64_t) dev;
        pos->cur.ino = (uint64_t) ino;
        pos->cur.valid = 1;
    }

    json_decref(o);

    return 0;

last_bad:

    if (last == NULL) {
        goto bad;
    }

bad_log:

    json_decref(o);
    gs->n = 0;
    memset(pos, 0, sizeof(ad_pos_t));
    (void) snprintf(err, errsize, "%s/offset.log is not a valid state file "
                    "(%s); move it away to go on from the snapshot in "
                    "offset: alerts read since are sent again, with their "
                    "ids", st->path, why);

    return -1;

bad:

    json_decref(o);
    gs->n = 0;
    memset(pos, 0, sizeof(ad_pos_t));
    (void) snprintf(err, errsize, "%s/offset is not a valid state file "
                    "(%s); move it away to start over: the journal is then "
                    "read from its start and alerts sent before are sent "
                    "again, with their ids", st->path, why);

    return -1;
}


/* the members a snapshot and a log line both have */

static int
ad_state_check(const json_t *o, char *why, size_t whysize)
{
    int          version;
    json_t      *groups;
    json_int_t   dev, ino, off;
    const char  *path;

    if (json_unpack((json_t *) o, "{s:i, s:s, s:I, s:I, s:I, s:o}",
                    "version", &version, "journal", &path, "dev", &dev,
                    "ino", &ino, "offset", &off, "groups", &groups) != 0
        || off < 0)
    {
        (void) snprintf(why, whysize, "a member is missing or has the "
                        "wrong type");
        return -1;
    }

    if (version != AD_STATE_VERSION) {
        (void) snprintf(why, whysize, "version %d, expected %d", version,
                        AD_STATE_VERSION);
        return -1;
    }

    return 0;
}


/*
 * Applies the log's lines of the snapshot's generation in order; *last
 * is the last one applied, or NULL.  A line cut short (no newline, not
 * JSON) ends the log: a crash during its append.
 */

static int
ad_state_replay(ad_state_t *st, ad_groups_t *gs, json_t **last, char *why,
    size_t whysize)
{
    char          *buf, *p, *nl, *end;
    size_t         len, n;
    json_t        *o;
    json_int_t     gen;
    json_error_t   jerr;

    if (ad_file_read(st->fd, "offset.log", AD_STATE_FILE_MAX, &buf, &len)
        != 0)
    {
        if (errno == ENOENT) {
            return 0;
        }

        st->errnum = errno;
        (void) snprintf(why, whysize, "%s", ad_file_strerror(errno));
        return -1;
    }

    st->log_size = len;
    n = 0;
    p = buf;
    end = buf + len;

    for ( ;; ) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            break;
        }

        o = json_loadb(p, (size_t) (nl - p),
                       JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (o == NULL) {
            break;
        }

        gen = -1;
        (void) json_unpack(o, "{s?I}", "gen", &gen);

        if (gen != st->gen) {
            json_decref(o);
            p = nl + 1;
            continue;
        }

        if (ad_state_check(o, why, whysize) != 0
            || ad_group_apply_json(gs, json_object_get(o, "groups"),
                                   json_object_get(o, "closed"), why,
                                   whysize) != 0)
        {
            json_decref(o);
            json_decref(*last);
            *last = NULL;
            free(buf);
            return -1;
        }

        json_decref(*last);
        *last = o;
        n++;
        p = nl + 1;
    }

    if (p != end) {
        ad_log(AD_LOG_WARN, "%s/offset.log: the last %zu bytes are not a "
               "whole save (cut short by a crash); the %zu before are used",
               st->path, (size_t) (end - p), n);
    }

    free(buf);

    return 0;
}


/*
 * Appends what changed to the log, or writes a snapshot when the log
 * would grow past the snapshot's size or AD_STATE_LOG_MIN, the first
 * time, and after a failed append.  Either is one write and one
 * fsync(): the position, the drop counts and the groups together.
 */

int
ad_state_save(ad_state_t *st, const char *journal, const ad_pos_t *pos,
    ad_groups_t *gs, const ad_outbox_t *ob)
{
    int      rc;
    json_t  *o;

    o = ad_state_to_json(st, journal, pos, ob);
    if (o == NULL) {
        errno = ENOMEM;
        return -1;
    }

    rc = 1;

    if (!st->snapshot && !gs->whole) {
        rc = ad_state_append(st, o, gs);
    }

    if (rc > 0) {
        rc = ad_state_snapshot(st, o, gs);
    }

    json_decref(o);

    if (rc != 0) {
        return -1;
    }

    ad_group_saved(gs);

    return 0;
}


/*
 * The clock of the last save: {"boot":"<boot id>","off":<wall - boot
 * ms>,"at":<boot ms>}.  Of this boot, it says how far the wall clock
 * stepped while alertd was stopped (alertd.c moves the windows with
 * it), and the groups' "clock" holds; "at", when off was read, tells a
 * line stamped before that step from one stamped after it (alertd.c,
 * ad_stamped()).  Of another boot, or missing (an older alertd, no boot
 * id), nothing can be told: the windows are taken as they are, on the
 * wall clock, and their alerts' clocks let go.
 */

static int
ad_state_clock(ad_state_t *st, const json_t *o, ad_groups_t *gs, char *why,
    size_t whysize)
{
    int          rc;
    size_t       i;
    json_t      *at, *steps;
    json_int_t   off;

    st->saved_clock = 0;
    st->saved_at = 0;
    st->nsteps = 0;

    rc = ad_clock_read(o, &off, why, whysize);

    if (rc < 0) {
        return -1;
    }

    if (rc == 1) {
        st->saved_off = off;
        st->saved_clock = 1;

        /* "at" came later: without it, a step is told, not when */

        at = json_object_get(json_object_get(o, "clock"), "at");
        if (json_is_integer(at)) {
            st->saved_boot = json_integer_value(at);
            st->saved_at = 1;
        }

        steps = json_object_get(json_object_get(o, "clock"), "steps");
        if (steps != NULL && ad_steps_from_json(st, steps) != 0) {
            (void) snprintf(why, whysize, "\"clock\": \"steps\" is not "
                            "an array of [off, at, seen] numbers");
            return -1;
        }

        return 0;
    }

    for (i = 0; i < gs->n; i++) {
        gs->g[i].last.clock_known = 0;
    }

    return 0;
}


/*
 * The last steps of the wall clock, [[off, at, seen], ...] in "clock"
 * (ad_step_t, the latest last): of this boot, they tell the clock of a
 * line stamped before one, still unread when alertd stopped.
 */

static json_t *
ad_steps_to_json(const ad_state_t *st)
{
    size_t   i;
    json_t  *a, *s;

    a = json_array();

    for (i = 0; a != NULL && i < st->nsteps; i++) {
        s = json_pack("[I, I, I]", (json_int_t) st->steps[i].off,
                      (json_int_t) st->steps[i].boot,
                      (json_int_t) st->steps[i].seen);

        if (s == NULL || json_array_append_new(a, s) != 0) {
            json_decref(a);
            a = NULL;
        }
    }

    return a;
}


/* more than AD_CLOCK_STEPS (saved by another build): the latest kept */

static int
ad_steps_from_json(ad_state_t *st, const json_t *a)
{
    size_t      i, n, skip;
    json_int_t  off, boot, seen;

    if (!json_is_array(a)) {
        return -1;
    }

    n = json_array_size(a);
    skip = (n > AD_CLOCK_STEPS) ? n - AD_CLOCK_STEPS : 0;

    for (i = skip; i < n; i++) {
        if (json_unpack(json_array_get(a, i), "[I, I, I]", &off, &boot,
                        &seen)
            != 0)
        {
            st->nsteps = 0;
            return -1;
        }

        st->steps[i - skip].off = off;
        st->steps[i - skip].boot = boot;
        st->steps[i - skip].seen = seen;
    }

    st->nsteps = n - skip;

    return 0;
}


/* the position, the drop counts and the clock */

static json_t *
ad_state_to_json(const ad_state_t *st, const char *journal,
    const ad_pos_t *pos, const ad_outbox_t *ob)
{
    json_t  *o, *r, *dropped, *clock;

    o = json_pack("{s:i, s:s, s:I, s:I, s:I}",
                  "version", AD_STATE_VERSION, "journal", journal,
                  "dev", (json_int_t) pos->cur.dev,
                  "ino", (json_int_t) pos->cur.ino,
                  "offset", (json_int_t) pos->cur.off);
    if (o == NULL) {
        return NULL;
    }

    if (pos->cur.plen > 0
        && json_object_set_new(o, "print", ad_print_to_json(&pos->cur))
           != 0)
    {
        json_decref(o);
        return NULL;
    }

    if (pos->old.valid) {
        r = json_pack("{s:I, s:I, s:I}",
                      "dev", (json_int_t) pos->old.dev,
                      "ino", (json_int_t) pos->old.ino,
                      "offset", (json_int_t) pos->old.off);

        if (r == NULL
            || (pos->old.plen > 0
                && json_object_set_new(r, "print",
                                       ad_print_to_json(&pos->old)) != 0)
            || json_object_set_new(o, "rotated", r) != 0)
        {
            json_decref(o);
            return NULL;
        }
    }

    dropped = ad_outbox_drops_to_json(ob);

    if (dropped == NULL
        || (json_array_size(dropped) > 0
            && json_object_set(o, "dropped", dropped) != 0))
    {
        json_decref(dropped);
        json_decref(o);
        return NULL;
    }

    json_decref(dropped);

    if (st->clock && ad_boot_id()[0] != '\0') {
        clock = json_pack("{s:s, s:I, s:I}", "boot", ad_boot_id(),
                          "off", (json_int_t) st->clock_off,
                          "at", (json_int_t) st->clock_boot);

        if (clock == NULL || json_object_set_new(o, "clock", clock) != 0
            || (st->nsteps > 0
                && json_object_set_new(clock, "steps",
                                       ad_steps_to_json(st)) != 0))
        {
            json_decref(o);
            return NULL;
        }
    }

    return o;
}


/* returns 0, -1 on an error, 1 when a snapshot is to be written */

static int
ad_state_append(ad_state_t *st, json_t *o, const ad_groups_t *gs)
{
    int      rc;
    char    *s, *line;
    size_t   len, room;
    json_t  *groups, *closed;

    if (ad_group_delta_to_json(gs, &groups, &closed) != 0) {
        errno = ENOMEM;
        return -1;
    }

    if (json_object_set_new(o, "groups", groups) != 0
        || json_object_set_new(o, "closed", closed) != 0
        || json_object_set_new(o, "gen", json_integer(st->gen)) != 0)
    {
        errno = ENOMEM;
        return -1;
    }

    s = json_dumps(o, JSON_COMPACT);
    if (s == NULL) {
        errno = ENOMEM;
        return -1;
    }

    len = strlen(s) + 1;
    room = (st->snap_size > AD_STATE_LOG_MIN) ? st->snap_size
                                              : AD_STATE_LOG_MIN;

    if (st->log_size + len > room) {
        free(s);
        return 1;
    }

    /* the line and its end in one write */

    line = malloc(len);
    if (line == NULL) {
        free(s);
        errno = ENOMEM;
        return -1;
    }

    memcpy(line, s, len - 1);
    line[len - 1] = '\n';
    free(s);

    rc = ad_write_all(st->log, line, len);
    free(line);

    if (rc != 0 || fsync(st->log) != 0) {
        ad_fail(&st->append_fail, AD_LOG_WARN, "cannot append to "
                "%s/offset.log: %s; writing a snapshot instead", st->path,
                strerror(errno));
        st->snapshot = 1;
        return 1;
    }

    ad_fail_over(&st->append_fail, "appending to %s/offset.log", st->path);
    st->log_size += len;

    return 0;
}


/*
 * The whole state as "offset", one generation on; then the log, whose
 * lines it holds, is emptied.  Until that works every save is a
 * snapshot: nothing is appended after a line that may be broken.
 */

static int
ad_state_snapshot(ad_state_t *st, json_t *o, const ad_groups_t *gs)
{
    int      rc;
    char    *s;
    size_t   len;
    json_t  *groups;

    groups = ad_group_to_json(gs);

    (void) json_object_del(o, "closed");

    if (groups == NULL
        || json_object_set_new(o, "groups", groups) != 0
        || json_object_set_new(o, "gen", json_integer(st->gen + 1)) != 0)
    {
        errno = ENOMEM;
        return -1;
    }

    s = json_dumps(o, JSON_COMPACT);
    if (s == NULL) {
        errno = ENOMEM;
        return -1;
    }

    len = strlen(s);
    rc = ad_file_replace(st->fd, "offset", s, len);
    free(s);

    if (rc != 0 || ad_fsync_dir(st->fd) != 0) {
        return -1;
    }

    st->gen++;
    st->snap_size = len;
    st->snapshot = 1;

    if (ftruncate(st->log, 0) == 0 && fsync(st->log) == 0) {
        ad_fail_over(&st->empty_fail, "emptying %s/offset.log", st->path);
        st->log_size = 0;
        st->snapshot = 0;

    } else {
        ad_fail(&st->empty_fail, AD_LOG_WARN, "cannot empty "
                "%s/offset.log: %s; the next save writes a snapshot again",
                st->path, strerror(errno));
    }

    return 0;
}


/* {"len":4096,"sha256":"<64 hex digits>"} */

static json_t *
ad_print_to_json(const ad_fpos_t *fp)
{
    char  hex[AD_PRINT_HASH * 2 + 1];

    (void) sodium_bin2hex(hex, sizeof(hex), fp->print, AD_PRINT_HASH);

    return json_pack("{s:I, s:s}", "len", (json_int_t) fp->plen,
                     "sha256", hex);
}


static int
ad_print_from_json(const json_t *o, ad_fpos_t *fp)
{
    size_t       n;
    json_int_t   len;
    const char  *hex;

    if (json_unpack((json_t *) o, "{s:I, s:s}", "len", &len,
                    "sha256", &hex) != 0
        || len < 1 || len > AD_PRINT_MAX || len > fp->off
        || strlen(hex) != AD_PRINT_HASH * 2
        || sodium_hex2bin(fp->print, AD_PRINT_HASH, hex, AD_PRINT_HASH * 2,
                          NULL, &n, NULL) != 0
        || n != AD_PRINT_HASH)
    {
        return -1;
    }

    fp->plen = (size_t) len;

    return 0;
}


static int
ad_rotated_from_json(const json_t *o, ad_fpos_t *fp)
{
    json_t      *print;
    json_int_t   dev, ino, off;

    if (json_unpack((json_t *) o, "{s:I, s:I, s:I}", "dev", &dev,
                    "ino", &ino, "offset", &off) != 0
        || off < 0)
    {
        return -1;
    }

    fp->dev = (uint64_t) dev;
    fp->ino = (uint64_t) ino;
    fp->off = off;

    print = json_object_get(o, "print");
    if (print != NULL && ad_print_from_json(print, fp) != 0) {
        return -1;
    }

    fp->valid = 1;

    return 0;
}
