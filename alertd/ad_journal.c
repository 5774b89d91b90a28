/*
 * Following the journal.
 *
 * nginx appends one JSON object per line with O_APPEND.  We read complete
 * lines only: a last line without its '\n' stays unread, and our offset
 * stays at its start, until the rest arrives.  A line longer than
 * AD_READ_MAX bytes, its newline not counted, is skipped as malformed:
 * each read takes AD_READ_MAX + 1 bytes, room for the longest line and
 * its newline.  Its end goes to the handler all the same, marked cut
 * (at most AD_READ_MAX bytes, at least the AD_PRINT_MAX of the tail and
 * what follows: a line nginx writes is no longer): a line cut short (a
 * power cut's zeros) may have a whole one glued to its end.
 *
 * inotify tells us when to look: the file itself (IN_MODIFY, IN_MOVE_SELF,
 * IN_DELETE_SELF, IN_ATTRIB for an unlink) and its directory (IN_CREATE
 * and IN_MOVED_TO, for a new file under the name).  Every wake-up of the
 * loop reads what was appended, so a line is read when its write's
 * IN_MODIFY arrives.  Any event, and a poll every --poll-interval (1 s)
 * in case one was missed, makes us stat the name:
 *
 *   - the name points to a new inode (rename + new file, logrotate's
 *     default): the old inode is read to its end first, then we switch.
 *     The old file is read a little longer (--rotate-grace, 5 s) for
 *     the lines a worker writes before it reopens its log.
 *
 * An inode and an offset do not tell that a file is the one we read: a
 * copytruncate keeps the inode, and the file may have grown back past
 * our offset before we look; a deleted file's inode is given to the next
 * new file.  So each file keeps the last AD_PRINT_MAX bytes before its
 * offset, its tail, and every read starts that many bytes early and
 * compares them.  When they differ, or the file is shorter than the
 * offset, the file was truncated (or rewritten): a copy that holds our
 * tail at our offset (copytruncate's journal.1) is looked for beside it
 * and finished first, then the file is read from 0.
 *
 * The saved position is (inode, offset, SHA-256 of the tail), for the
 * current file and, during its grace, for the rotated one.  At startup
 * the file under the name is used if its bytes before the offset match;
 * otherwise the file that does (journal.1 after a rename or a
 * copytruncate while we were stopped) is looked for in the same
 * directory and finished, and the file under the name is then read from
 * its start.  A state file without a fingerprint is trusted on the
 * inode, as before.  A file there that cannot be read (an I/O error)
 * or opened may be the one: the journal waits for it, tried again at
 * every wake-up and poll, for --rotate-grace at most (j->seek; j->seek_old
 * for the rotated file, which the journal does not wait for).  So it
 * does for a copytruncate's copy seen while running (j->seek_copy), and
 * for one taken whose lines then fail to read (j->old_waits).
 *
 * --once waits for nothing: what the daemon would try again for a while
 * (a journal that cannot be opened, a position whose file cannot be
 * read, a rotated file or a copy whose lines fail to read) stays in the
 * saved position for its next run, which tries it again, and --once
 * exits 1 (ad_journal_unread()).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "alertd.h"


#define AD_FILE_EVENTS  (IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF \
                         | IN_ATTRIB)
#define AD_DIR_EVENTS   (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)


static void ad_jfile_init(ad_jfile_t *f);
static int ad_jfile_open(ad_journal_t *j, ad_jfile_t *f, const char *path);
static void ad_jfile_close(ad_journal_t *j, ad_jfile_t *f);
static int ad_jfile_read(ad_journal_t *j, ad_jfile_t *f,
    ad_line_pt handler, void *data);
static int ad_jfile_resume(ad_journal_t *j, ad_jfile_t *f,
    const ad_fpos_t *fp);
static int ad_jfile_take(ad_journal_t *j, ad_jfile_t *f, const char *path,
    const ad_fpos_t *fp);
static void ad_jfile_keep(ad_jfile_t *f, const char *buf, int64_t start);
static int ad_jfile_replaced(ad_journal_t *j, ad_jfile_t *f,
    ad_line_pt handler, void *data, int64_t size);
static void ad_jfile_fpos(const ad_jfile_t *f, ad_fpos_t *fp);
static ssize_t ad_pread_all(int fd, char *buf, size_t len, int64_t off);
static int ad_print_at(ad_journal_t *j, int fd, const ad_fpos_t *fp);
static int ad_journal_check(ad_journal_t *j, ad_line_pt handler,
    void *data);
static int ad_journal_find(ad_journal_t *j, const ad_fpos_t *fp,
    uint64_t skip, char *path, size_t size);
static int ad_journal_resume_old(ad_journal_t *j, const ad_fpos_t *fp,
    int last);
static int ad_journal_elsewhere(ad_journal_t *j, const ad_fpos_t *fp,
    int last);
static int ad_journal_copy(ad_journal_t *j, const ad_fpos_t *fp,
    const char *what, int last, ad_line_pt handler, void *data);
static int ad_journal_wait(ad_journal_t *j, ad_jwait_t *w,
    const ad_fpos_t *fp, const char *found, int last, const char *who,
    int holds);
static void ad_journal_watch(ad_journal_t *j);
static void ad_journal_drop_old(ad_journal_t *j, const char *why);
static void ad_journal_copy_wait(ad_journal_t *j);
static void ad_journal_old_left(ad_journal_t *j);
static void ad_journal_open_failed(ad_journal_t *j);
static const char *ad_jfile_name(const ad_journal_t *j, const ad_jfile_t *f,
    char *buf, size_t size);


static void
ad_jfile_init(ad_jfile_t *f)
{
    memset(f, 0, sizeof(ad_jfile_t));
    f->fd = -1;
    f->wd = -1;
}


/*
 * O_NONBLOCK: a FIFO under the name (or a device) must not hold the loop
 * in open() until a writer comes, every signal waiting on the signalfd
 * meanwhile.  Only a regular file is a journal; anything else fails as
 * EINVAL, which ad_file_strerror() says as "not a regular file".
 */

static int
ad_jfile_open(ad_journal_t *j, ad_jfile_t *f, const char *path)
{
    int          err;
    struct stat  st;

    ad_jfile_init(f);

    f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f->fd == -1) {
        return -1;
    }

    err = 0;

    if (fstat(f->fd, &st) != 0) {
        err = errno;

    } else if (!S_ISREG(st.st_mode)) {
        err = EINVAL;
    }

    if (err != 0) {
        (void) close(f->fd);
        f->fd = -1;
        errno = err;
        return -1;
    }

    f->dev = (uint64_t) st.st_dev;
    f->ino = (uint64_t) st.st_ino;
    (void) snprintf(f->path, sizeof(f->path), "%s", path);

    /*
     * The name may already point elsewhere; the poll notices that, and
     * a watch on the wrong inode only wakes us up for nothing.
     */

    if (j->ifd != -1) {
        f->wd = inotify_add_watch(j->ifd, path, AD_FILE_EVENTS);
        if (f->wd == -1) {
            ad_log(AD_LOG_WARN, "cannot watch %s: %s; polling it every "
                   "%lld ms instead (--poll-interval)", path,
                   strerror(errno), (long long) j->poll_ms);
        }
    }

    return 0;
}


static void
ad_jfile_close(ad_journal_t *j, ad_jfile_t *f)
{
    /*
     * One inode has one watch: a second open of the file the current or
     * the old one reads shares its wd, which must then stay.  The watch
     * may also be gone with its inode already: EINVAL is fine.
     */

    if (f->wd != -1 && j->ifd != -1
        && (f == &j->cur || f->wd != j->cur.wd)
        && (f == &j->old || f->wd != j->old.wd))
    {
        (void) inotify_rm_watch(j->ifd, f->wd);
    }

    if (f->fd != -1) {
        (void) close(f->fd);
    }

    ad_jfile_init(f);
}


/*
 * The file f as the log names it: "journal PATH" while it is the one
 * under the journal's name; else which file it is, its inode and its
 * path, or the path it had before a rotation took it away.
 */

static const char *
ad_jfile_name(const ad_journal_t *j, const ad_jfile_t *f, char *buf,
    size_t size)
{
    if (f == &j->cur && !f->moved && !f->copy
        && strcmp(f->path, j->path) == 0)
    {
        (void) snprintf(buf, size, "journal %s", j->path);
        return buf;
    }

    (void) snprintf(buf, size, "%s (inode %llu, %s%s)",
                    (f->copy || (f == &j->old && j->old_copy))
                    ? "the copy a copytruncate kept of the journal"
                    : "the rotated journal",
                    (unsigned long long) f->ino, f->moved ? "was " : "",
                    f->path);

    return buf;
}


int
ad_journal_open(ad_journal_t *j, const char *path, int watch,
    int64_t poll_ms, int64_t grace_ms, const ad_pos_t *saved, char *err,
    size_t errsize)
{
    int           rc;
    char         *slash;
    struct stat   st;

    j->ifd = -1;
    j->dwd = -1;
    j->errnum = 0;
    j->check = 0;
    j->watch = (watch != 0);
    memset(&j->open_fail, 0, sizeof(ad_fail_t));
    memset(&j->watch_fail, 0, sizeof(ad_fail_t));
    memset(&j->read_fail, 0, sizeof(ad_fail_t));
    memset(&j->pending, 0, sizeof(ad_fpos_t));
    memset(&j->seek, 0, sizeof(ad_jwait_t));
    memset(&j->seek_old, 0, sizeof(ad_jwait_t));
    j->seek_copy = 0;
    j->old_copy = 0;
    j->old_waits = 0;
    j->lost = 0;
    j->old_left = 0;
    j->poll_ms = poll_ms;
    j->grace_ms = grace_ms;
    j->old_until = 0;
    ad_jfile_init(&j->cur);
    ad_jfile_init(&j->old);

    if ((size_t) snprintf(j->path, sizeof(j->path), "%s", path)
        >= sizeof(j->path))
    {
        (void) snprintf(err, errsize, "the journal path is too long");
        return -1;
    }

    slash = strrchr(j->path, '/');
    if (slash == NULL || slash[1] == '\0'
        || strlen(slash + 1) >= sizeof(j->base))
    {
        (void) snprintf(err, errsize, "the journal path %s does not name a "
                        "file", path);
        return -1;
    }

    (void) snprintf(j->base, sizeof(j->base), "%s", slash + 1);
    (void) snprintf(j->dir, sizeof(j->dir), "%.*s",
                    (int) (slash - j->path), j->path);
    if (j->dir[0] == '\0') {
        (void) snprintf(j->dir, sizeof(j->dir), "/");
    }

    if (stat(j->dir, &st) != 0) {
        /* an I/O error is no configuration error (alertd.c) */
        j->errnum = errno;
        (void) snprintf(err, errsize, "cannot use the journal directory "
                        "%s: %s", j->dir, strerror(errno));
        return -1;
    }

    if (!S_ISDIR(st.st_mode)) {
        (void) snprintf(err, errsize, "the journal directory %s is not a "
                        "directory", j->dir);
        return -1;
    }

    /*
     * What can go away by itself is not a reason to stop: the outbox is
     * still delivered, and the journal is polled and tried again.
     * --once, which does not wait, keeps the position for its next run
     * and exits 1 (ad_journal_unread()), as for a read that fails.
     */

    if (watch) {
        ad_journal_watch(j);
    }

    if (ad_jfile_open(j, &j->cur, j->path) != 0 && errno != ENOENT) {
        ad_journal_open_failed(j);
    }

    /*
     * A file beside the name that cannot be read (an I/O error) may be
     * the one a saved position is in: that is told once it can be read,
     * at a wake-up or poll (ad_journal_read()), or after --rotate-grace
     * taken for not ours; --once leaves it to its next run.
     */

    if (saved->old.valid && saved->old.ino != 0) {
        (void) ad_journal_resume_old(j, &saved->old, 0);
    }

    if (!saved->cur.valid || saved->cur.ino == 0) {
        return 0;
    }

    rc = (j->cur.fd != -1) ? ad_jfile_resume(j, &j->cur, &saved->cur) : -1;

    if (rc == 0) {
        return 0;
    }

    if (rc == -2 && j->cur.ino == saved->cur.ino) {
        /*
         * An I/O error is no proof the file was rewritten: reading it
         * from the start would send every alert in it again.  Go on
         * where we were once its bytes can be read (ad_journal_read()).
         */

        ad_fail(&j->read_fail, AD_LOG_ERR, "reading journal %s at offset "
                "%lld: %s", j->path, (long long) saved->cur.off,
                strerror(errno));
        j->pending = saved->cur;
        return 0;
    }

    (void) ad_journal_elsewhere(j, &saved->cur, 0);

    return 0;
}


/*
 * The journal cannot be opened (errno says why): tried again at every
 * poll; --once leaves its lines to its next run.
 */

static void
ad_journal_open_failed(ad_journal_t *j)
{
    if (!j->watch) {
        ad_fail(&j->open_fail, AD_LOG_ERR, "cannot open the journal %s: "
                "%s; its lines are left for the next run", j->path,
                ad_file_strerror(errno));
        return;
    }

    ad_fail(&j->open_fail, AD_LOG_ERR, "cannot open the journal %s: %s; "
            "trying again every %lld ms (--poll-interval)", j->path,
            ad_file_strerror(errno), (long long) j->poll_ms);
}


/*
 * The file under the name does not hold the bytes before the saved
 * position fp (at start, or once they could be read): another file
 * beside it may, or it was rewritten, or fp's file is gone.  -2 (errno
 * set): a file beside it that may be fp's cannot be read; fp is kept in
 * j->seek, and the journal waits, until it can be or, last, after
 * --rotate-grace: then it is not ours.
 */

static int
ad_journal_elsewhere(ad_journal_t *j, const ad_fpos_t *fp, int last)
{
    int   rc, err;
    char  found[sizeof(j->dir) + sizeof(j->base) + 1];

    /*
     * With a fingerprint, the file under the name was just ruled out and
     * any other file holding our bytes at our offset is ours: the rotated
     * file, or a copytruncate's copy.  Without one, only the inode tells.
     */

    rc = ad_journal_find(j, fp, fp->plen > 0 ? j->cur.ino : 0, found,
                         sizeof(found));

    if (rc == 0) {
        ad_jfile_close(j, &j->cur);

        rc = ad_jfile_take(j, &j->cur, found, fp);

        if (rc == 0) {
            j->cur.copy = (j->cur.ino != fp->ino);
            ad_fail_over(&j->seek.fail, "reading %s", found);
            ad_log(AD_LOG_INFO, "the journal was %s while alertd was "
                   "stopped: finishing %s from offset %lld first",
                   j->cur.ino == fp->ino ? "rotated"
                   : "truncated and this copy of it kept", found,
                   (long long) fp->off);

            j->check = 1;
            return 0;
        }

        err = errno;
        (void) ad_jfile_open(j, &j->cur, j->path);
        errno = err;
    }

    if (rc == -2
        && ad_journal_wait(j, &j->seek, fp, found, last, "journal file "
                           "alertd was reading", 1) == -2)
    {
        j->seek_copy = 0;
        return -2;
    }

    if (j->cur.fd == -1 && j->open_fail.count != 0) {
        /* it may be the file we read: go on where we were once it opens */
        j->pending = *fp;
        ad_log(AD_LOG_INFO, "journal %s: reading goes on from offset %lld "
               "once it can be opened, if it is the file alertd was "
               "reading (inode %llu)", j->path, (long long) fp->off,
               (unsigned long long) fp->ino);
        return 0;
    }

    j->lost = 1;

    if (j->cur.fd != -1 && j->cur.ino == fp->ino) {
        ad_log(AD_LOG_WARN, "journal %s was truncated or rewritten while "
               "alertd was stopped (its bytes before offset %lld are not "
               "the ones read) and no copy of it was found in %s: reading "
               "it from the start; lines written to the old contents "
               "after offset %lld were not read", j->path,
               (long long) fp->off, j->dir, (long long) fp->off);
        return 0;
    }

    ad_log(AD_LOG_WARN, "the journal file alertd was reading (inode %llu) "
           "is gone from %s; lines written to it after offset %lld were "
           "not read", (unsigned long long) fp->ino, j->dir,
           (long long) fp->off);

    return 0;
}


/*
 * inotify, and the watch on the journal's directory, may be refused for
 * a while (fs.inotify.max_user_instances or max_user_watches reached by
 * other processes of the user): the journal is then polled every
 * --poll-interval, and the watch tried again at each poll.  Said as
 * ad_fail() says a failure that repeats, and when it works again.
 */

static void
ad_journal_watch(ad_journal_t *j)
{
    int          err;
    const char  *what, *hint;

    if (j->ifd == -1) {
        j->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    }

    if (j->ifd != -1 && j->dwd == -1) {
        j->dwd = inotify_add_watch(j->ifd, j->dir, AD_DIR_EVENTS);
    }

    if (j->ifd == -1 || j->dwd == -1) {
        err = errno;
        what = (j->ifd == -1) ? "cannot use inotify"
                              : "cannot watch the journal directory";
        hint = (err == EMFILE && j->ifd == -1)
               ? " (sysctl fs.inotify.max_user_instances)"
               : (err == ENOSPC) ? " (sysctl fs.inotify.max_user_watches)"
               : "";

        ad_fail(&j->watch_fail, AD_LOG_ERR, "%s %s: %s%s; polling the "
                "journal every %lld ms instead (--poll-interval) and "
                "trying again", what, j->dir, strerror(err), hint,
                (long long) j->poll_ms);

        return;
    }

    ad_fail_over(&j->watch_fail, "watching the journal directory %s",
                 j->dir);

    if (j->cur.fd != -1 && j->cur.wd == -1) {
        /* as in ad_jfile_open(): the poll notices a name moved on */
        j->cur.wd = inotify_add_watch(j->ifd, j->path, AD_FILE_EVENTS);
    }
}


/*
 * Stops reading the rotated file (why: its grace is over, or another
 * file is read next).  A read of it that failed last (an I/O error,
 * said as it repeated) left the lines after its offset unread: they are
 * said lost, not dropped without a word.
 */

static void
ad_journal_drop_old(ad_journal_t *j, const char *why)
{
    if (j->old.failing) {
        j->lost = 1;
        ad_log(AD_LOG_WARN, "the rotated journal (inode %llu) could not be "
               "read at offset %lld and is no longer read (%s): lines "
               "written to it after the offset were not read",
               (unsigned long long) j->old.ino, (long long) j->old.off, why);
    }

    ad_jfile_close(j, &j->old);
    j->old_copy = 0;
    j->old_waits = 0;
    j->old_left = 0;
}


/*
 * A rotated file was still read for late lines when alertd stopped: it
 * gets its grace again, from where it was left.
 */

static int
ad_journal_resume_old(ad_journal_t *j, const ad_fpos_t *fp, int last)
{
    int   rc;
    char  found[sizeof(j->dir) + sizeof(j->base) + 1];

    rc = ad_journal_find(j, fp, 0, found, sizeof(found));

    if (rc == 0) {
        rc = ad_jfile_take(j, &j->old, found, fp);

        if (rc == 0) {
            ad_fail_over(&j->seek_old.fail, "reading %s", found);
            ad_log(AD_LOG_INFO, "reading the rotated journal %s from "
                   "offset %lld for late lines again", found,
                   (long long) fp->off);
            j->old_until = ad_mono_ms() + j->grace_ms;
            return 0;
        }
    }

    /* as in ad_journal_elsewhere(), but the journal does not wait */

    if (rc == -2
        && ad_journal_wait(j, &j->seek_old, fp, found, last, "rotated "
                           "journal file alertd was still reading", 0)
           == -2)
    {
        return -2;
    }

    j->lost = 1;
    ad_log(AD_LOG_WARN, "the rotated journal file alertd was still reading "
           "(inode %llu) is gone from %s or was changed; lines written to "
           "it after offset %lld were not read",
           (unsigned long long) fp->ino, j->dir, (long long) fp->off);

    return -1;
}


/*
 * found, beside the journal, may be the file fp is in (who: "journal
 * file alertd was reading", ...) but cannot be read or opened (errno
 * says why).  Unless last, fp waits in w, tried again at every wake-up
 * and poll, and -2 is returned (errno kept); the failure is said as one
 * that repeats (holds: the journal waits meanwhile).  --once, which
 * waits for nothing, is never last: fp stays in the saved position for
 * its next run.  last, after --rotate-grace: found is given up, taken
 * for not fp's file, and 0 is returned; the caller says fp's lines
 * lost.
 */

static int
ad_journal_wait(ad_journal_t *j, ad_jwait_t *w, const ad_fpos_t *fp,
    const char *found, int last, const char *who, int holds)
{
    int  err;

    err = errno;

    if (!last) {
        if (!w->fp.valid) {
            w->fp = *fp;
            w->until = ad_mono_ms() + j->grace_ms;
        }

        errno = err;

        if (!j->watch) {
            ad_fail(&w->fail, AD_LOG_ERR, "reading %s at offset %lld: %s; "
                    "it may be the %s (inode %llu): it stays in the saved "
                    "position, the next run tries it again%s", found,
                    (long long) fp->off, strerror(err), who,
                    (unsigned long long) fp->ino,
                    holds ? "; the journal is not read before it" : "");

        } else {
            ad_fail(&w->fail, AD_LOG_ERR, "reading %s at offset %lld: %s; "
                    "it may be the %s (inode %llu): %stried again at every "
                    "poll for up to %lld ms (--rotate-grace)", found,
                    (long long) fp->off, strerror(err), who,
                    (unsigned long long) fp->ino,
                    holds ? "the journal waits for it, " : "",
                    (long long) j->grace_ms);
        }

        errno = err;
        return -2;
    }

    ad_log(AD_LOG_WARN, "%s could not be read for %lld ms (--rotate-grace): "
           "%s; it is taken for not the %s (inode %llu)", found,
           (long long) j->grace_ms, strerror(err), who,
           (unsigned long long) fp->ino);

    /* not said as over: the file that fails is left */
    memset(&w->fail, 0, sizeof(ad_fail_t));

    return 0;
}


/*
 * Takes up f at the saved position fp if f holds the bytes fp was left
 * after; a position without a fingerprint (an older state file) is
 * trusted on the inode.  The tail is read back either way.  -1: f is
 * not that file; -2 (errno set): the bytes could not be read, which
 * tells neither way.
 */

static int
ad_jfile_resume(ad_journal_t *j, ad_jfile_t *f, const ad_fpos_t *fp)
{
    size_t         tlen;
    ssize_t        n;
    unsigned char  h[AD_PRINT_HASH];

    if (fp->plen == 0 && f->ino != fp->ino) {
        return -1;
    }

    tlen = fp->off < AD_PRINT_MAX ? (size_t) fp->off : AD_PRINT_MAX;
    if (tlen < fp->plen) {
        tlen = fp->plen;
    }

    n = ad_pread_all(f->fd, j->buf, tlen, fp->off - (int64_t) tlen);

    if (n == -1) {
        return -2;
    }

    if (fp->plen > 0) {
        if (n != (ssize_t) tlen) {
            return -1;
        }

        (void) crypto_hash_sha256(h, (unsigned char *) j->buf + tlen
                                     - fp->plen, fp->plen);

        if (sodium_memcmp(h, fp->print, AD_PRINT_HASH) != 0) {
            return -1;
        }
    }

    f->off = fp->off;
    f->skipping = 0;
    f->tlen = 0;

    if (n == (ssize_t) tlen) {
        ad_jfile_keep(f, j->buf, fp->off - (int64_t) tlen);
    }

    /* else: an old position in a shorter file; the read says truncated */

    return 0;
}


/*
 * Opens path, a file ad_journal_find() found, in f and takes it up at
 * fp.  -1: it is not fp's file (gone since, or changed); -2 (errno set):
 * it cannot be opened or read, which tells neither way.  f is closed on
 * failure.
 */

static int
ad_jfile_take(ad_journal_t *j, ad_jfile_t *f, const char *path,
    const ad_fpos_t *fp)
{
    int  rc, err;

    if (ad_jfile_open(j, f, path) != 0) {
        return (errno == ENOENT || errno == EINVAL) ? -1 : -2;
    }

    rc = ad_jfile_resume(j, f, fp);

    if (rc != 0) {
        err = errno;
        ad_jfile_close(j, f);
        errno = err;
    }

    return rc;
}


/*
 * Looks beside the journal for a regular file that holds fp's bytes at
 * fp's offset, or without a fingerprint for fp's inode.  The inode wins
 * a tie (a rotated file before a copy of it), then the longest file.
 * -2 (errno set, path the file's): a file that cannot be read or opened
 * may be the one, as none found is, or as fp's inode when only a copy
 * is.
 */

static int
ad_journal_find(ad_journal_t *j, const ad_fpos_t *fp, uint64_t skip,
    char *path, size_t size)
{
    int             fd, rc, ino, best_ino, err, bad_ino;
    DIR            *d;
    char            bad[sizeof(j->base)];
    off_t           best;
    struct stat     st;
    struct dirent  *de;

    d = opendir(j->dir);
    if (d == NULL) {
        return -1;
    }

    best = -1;
    best_ino = 0;
    err = 0;
    bad_ino = 0;
    bad[0] = '\0';

    for ( ;; ) {
        de = readdir(d);
        if (de == NULL) {
            break;
        }

        /* d_ino is not st_ino on every file system: stat them all */

        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0
            || !S_ISREG(st.st_mode) || (uint64_t) st.st_ino == skip
            || st.st_size < fp->off)
        {
            continue;
        }

        ino = ((uint64_t) st.st_ino == fp->ino);

        if (fp->plen == 0) {
            if (!ino) {
                continue;
            }

        } else {
            if (best_ino && !ino) {
                continue;
            }

            /*
             * A file that cannot be opened (EACCES) is not known yet;
             * but the one under the name is waited for as the journal
             * (j->pending, j->open_fail), not as a file beside it.
             */

            fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC
                                              | O_NOFOLLOW | O_NONBLOCK);

            rc = (fd != -1) ? ad_print_at(j, fd, fp)
                 : (errno == ENOENT || strcmp(de->d_name, j->base) == 0)
                   ? -1 : -2;

            if (rc == -2 && (err == 0 || (ino && !bad_ino))) {
                err = errno;
                bad_ino = ino;
                (void) snprintf(bad, sizeof(bad), "%s", de->d_name);
            }

            if (fd != -1) {
                (void) close(fd);
            }

            if (rc != 0) {
                continue;
            }
        }

        if ((ino && !best_ino) || st.st_size > best) {
            if ((size_t) snprintf(path, size, "%s/%s",
                                  strcmp(j->dir, "/") == 0 ? "" : j->dir,
                                  de->d_name) < size)
            {
                best = st.st_size;
                best_ino = ino;
            }
        }
    }

    (void) closedir(d);

    if (err != 0 && (best == -1 || (bad_ino && !best_ino))) {
        (void) snprintf(path, size, "%s/%s",
                        strcmp(j->dir, "/") == 0 ? "" : j->dir, bad);
        errno = err;
        return -2;
    }

    return best == -1 ? -1 : 0;
}


/*
 * returns 0 if fd holds fp's fingerprinted bytes before fp's offset;
 * -2 (errno set) if they cannot be read
 */

static int
ad_print_at(ad_journal_t *j, int fd, const ad_fpos_t *fp)
{
    ssize_t        n;
    unsigned char  h[AD_PRINT_HASH];

    n = ad_pread_all(fd, j->buf, fp->plen, fp->off - (int64_t) fp->plen);

    if (n == -1) {
        return -2;
    }

    if (n != (ssize_t) fp->plen) {
        return -1;
    }

    (void) crypto_hash_sha256(h, (unsigned char *) j->buf, fp->plen);

    return sodium_memcmp(h, fp->print, AD_PRINT_HASH) == 0 ? 0 : -1;
}


static ssize_t
ad_pread_all(int fd, char *buf, size_t len, int64_t off)
{
    size_t   got;
    ssize_t  n;

    got = 0;

    while (got < len) {
        n = pread(fd, buf + got, len - got, (off_t) (off + (int64_t) got));

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }

        if (n == 0) {
            break;
        }

        got += (size_t) n;
    }

    return (ssize_t) got;
}


void
ad_journal_close(ad_journal_t *j)
{
    ad_jfile_close(j, &j->cur);
    ad_jfile_close(j, &j->old);

    if (j->ifd != -1) {
        (void) close(j->ifd);
        j->ifd = -1;
    }
}


/*
 * Drains the inotify queue.  Which event it was does not matter: every
 * one of them means "look again", and looking is one stat().
 */

void
ad_journal_events(ad_journal_t *j)
{
    char     buf[4096]
             __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t  n;

    if (j->ifd == -1) {
        return;
    }

    for ( ;; ) {
        n = read(j->ifd, buf, sizeof(buf));

        if (n > 0) {
            j->check = 1;
            continue;
        }

        if (n == -1 && errno == EINTR) {
            continue;
        }

        break;
    }
}


/*
 * Returns 0 once everything there is was read; else what the handler
 * returned: -1, or 1 (this round of the loop is over, not the reading).
 */

int
ad_journal_read(ad_journal_t *j, ad_line_pt handler, void *data)
{
    int          rc, last;
    ad_fpos_t    fp;
    struct stat  st;

    rc = 0;

    if (j->cur.fd != -1 && j->pending.valid) {
        rc = ad_jfile_resume(j, &j->cur, &j->pending);

        if (rc == -2) {
            /* tried again at every wake-up and poll, as a read is */
            ad_fail(&j->read_fail, AD_LOG_ERR, "reading journal %s at "
                    "offset %lld: %s", j->path, (long long) j->pending.off,
                    strerror(errno));
            return 0;
        }

        fp = j->pending;
        memset(&j->pending, 0, sizeof(ad_fpos_t));

        if (rc != 0) {
            rc = ad_journal_elsewhere(j, &fp, 0);
        }
    }

    /*
     * A saved position whose file could not be read at start, or a
     * truncated journal's copy that could not be: looked for again,
     * until --rotate-grace is over.  Its lines come before the
     * journal's: the name is not read, nor looked at, meanwhile.
     */

    if (j->seek.fp.valid && rc != -2) {
        fp = j->seek.fp;
        last = (j->watch && ad_mono_ms() >= j->seek.until);

        if (j->seek_copy) {
            /* it clears j->seek once told, before reading the copy */
            rc = ad_journal_copy(j, &fp, NULL, last, handler, data);

            if (rc != 0 && rc != -2) {
                return rc;
            }

        } else if (ad_journal_elsewhere(j, &fp, last) != -2) {
            memset(&j->seek.fp, 0, sizeof(ad_fpos_t));
            j->check = 1;
        }
    }

    if (j->seek_old.fp.valid && j->old.fd == -1) {
        fp = j->seek_old.fp;

        if (ad_journal_resume_old(j, &fp, j->watch
                                          && ad_mono_ms()
                                             >= j->seek_old.until)
            != -2)
        {
            memset(&j->seek_old.fp, 0, sizeof(ad_fpos_t));
        }
    }

    if (!j->seek.fp.valid && !j->seek_old.fp.valid
        && (j->ifd == -1 || j->check))
    {
        j->check = 0;
        rc = ad_journal_check(j, handler, data);
        if (rc != 0) {
            j->check = 1;
            return rc;
        }
    }

    if (j->old.fd != -1) {
        rc = ad_jfile_read(j, &j->old, handler, data);
        if (rc != 0) {
            return rc;
        }

        if (j->old_copy && j->old.failing && j->watch) {
            ad_journal_copy_wait(j);

        } else if (j->old.failing && !j->watch) {
            ad_journal_old_left(j);

        } else if (j->old.fd != -1
                   && (!j->watch || j->old_copy
                       || ad_mono_ms() >= j->old_until))
        {
            if (!j->old.failing && fstat(j->old.fd, &st) == 0
                && st.st_size > j->old.off)
            {
                ad_log(AD_LOG_WARN, "the rotated journal (inode %llu) "
                       "ends with an incomplete line of %lld bytes; "
                       "skipped", (unsigned long long) j->old.ino,
                       (long long) (st.st_size - j->old.off));
            }

            if (j->watch) {
                ad_log(AD_LOG_INFO, "stopped reading the rotated journal "
                       "(inode %llu) at offset %lld: its grace of %lld ms "
                       "is over", (unsigned long long) j->old.ino,
                       (long long) j->old.off, (long long) j->grace_ms);
            }

            ad_journal_drop_old(j, "its grace is over");
        }
    }

    /* a truncated journal's copy that failed: the journal waits for it */

    if (j->cur.fd != -1 && !j->seek.fp.valid && !j->old_waits) {
        return ad_jfile_read(j, &j->cur, handler, data);
    }

    return 0;
}


/*
 * A truncated journal's copy is read to its end first, then closed: it
 * is not written to.  A read of it that failed (an I/O error) tells
 * nothing of the lines after its offset: as a file beside the journal
 * that cannot be read yet (ad_journal_wait()), it is tried again at
 * every wake-up and poll, the journal waiting, its lines being later,
 * for --rotate-grace from the first failure; then given up, its lines
 * said lost.
 */

static void
ad_journal_copy_wait(ad_journal_t *j)
{
    int64_t  now;
    char     why[96];

    now = ad_mono_ms();

    if (!j->old_waits) {
        j->old_waits = 1;
        j->old_until = now + j->grace_ms;

        ad_log(AD_LOG_WARN, "the copy a copytruncate kept of the journal "
               "(inode %llu) could not be read at offset %lld: tried "
               "again at every poll for up to %lld ms (--rotate-grace), "
               "the journal waits for it", (unsigned long long) j->old.ino,
               (long long) j->old.off, (long long) j->grace_ms);
        return;
    }

    if (now < j->old_until) {
        return;
    }

    (void) snprintf(why, sizeof(why), "it could not be read for %lld ms, "
                    "--rotate-grace", (long long) j->grace_ms);

    ad_journal_drop_old(j, why);
}


/*
 * --once: the rotated file, or a truncated journal's copy, could not be
 * read (an I/O error).  --once waits for neither: the file stays open,
 * so that the saved position keeps it (as "rotated"), and the next run,
 * or the daemon, reads it from there; the journal is read meanwhile.
 */

static void
ad_journal_old_left(ad_journal_t *j)
{
    if (j->old_left) {
        return;
    }

    j->old_left = 1;

    ad_log(AD_LOG_WARN, "the %s (inode %llu) could not be read at offset "
           "%lld: it stays in the saved position and the next run reads "
           "it from there; the journal is read meanwhile",
           j->old_copy ? "copy a copytruncate kept of the journal"
                       : "rotated journal",
           (unsigned long long) j->old.ino, (long long) j->old.off);
}


static int
ad_journal_check(ad_journal_t *j, ad_line_pt handler, void *data)
{
    int          rc;
    ad_jfile_t   f;
    struct stat  st;

    if (j->watch && (j->ifd == -1 || j->dwd == -1
                     || (j->cur.fd != -1 && j->cur.wd == -1)))
    {
        ad_journal_watch(j);
    }

    if (stat(j->path, &st) != 0) {
        /* gone: keep reading what we have until a new file appears */
        return 0;
    }

    if (j->cur.fd != -1 && (uint64_t) st.st_ino == j->cur.ino
        && (uint64_t) st.st_dev == j->cur.dev)
    {
        return 0;
    }

    if (ad_jfile_open(j, &f, j->path) != 0) {
        if (errno == ENOENT) {
            /* gone since the stat(): as above */
            return 0;
        }

        /* tried again at every poll */
        ad_journal_open_failed(j);
        return 0;
    }

    ad_fail_over(&j->open_fail, "opening the journal %s", j->path);

    if (j->cur.fd != -1 && f.ino == j->cur.ino && f.dev == j->cur.dev) {
        ad_jfile_close(j, &f);
        return 0;
    }

    if (j->cur.fd != -1) {
        /*
         * Finish the old inodes before anything in the new one: the one
         * still in its grace if this is a second rotation within it
         * (its late lines are older), then the one we were reading.
         */

        if (j->old.fd != -1) {
            rc = ad_jfile_read(j, &j->old, handler, data);
            if (rc != 0) {
                ad_jfile_close(j, &f);
                return rc;
            }

            ad_journal_drop_old(j, "the journal was rotated again");
        }

        /* the name is another file's now: say this one as rotated */

        if (strcmp(j->cur.path, j->path) == 0) {
            j->cur.moved = 1;
        }

        rc = ad_jfile_read(j, &j->cur, handler, data);
        if (rc != 0) {
            ad_jfile_close(j, &f);
            return rc;
        }

        if (j->cur.failing) {
            ad_log(AD_LOG_WARN, "journal %s was rotated: the old file "
                   "(inode %llu, %s%s) could not be read to its end, only "
                   "to offset %lld (said above); now reading inode %llu",
                   j->path, (unsigned long long) j->cur.ino,
                   j->cur.moved ? "was " : "", j->cur.path,
                   (long long) j->cur.off, (unsigned long long) f.ino);

        } else {
            ad_log(AD_LOG_INFO, "journal %s was rotated: read the old file "
                   "(inode %llu) to offset %lld, now reading inode %llu",
                   j->path, (unsigned long long) j->cur.ino,
                   (long long) j->cur.off, (unsigned long long) f.ino);
        }

        j->old = j->cur;
        j->old_until = ad_mono_ms() + j->grace_ms;

    } else if (j->pending.valid) {
        if (ad_jfile_resume(j, &f, &j->pending) == 0) {
            ad_log(AD_LOG_INFO, "reading journal %s (inode %llu) from "
                   "offset %lld, where alertd was", j->path,
                   (unsigned long long) f.ino, (long long) f.off);

        } else {
            j->lost = 1;
            ad_log(AD_LOG_WARN, "journal %s (inode %llu) is not the file "
                   "alertd was reading (inode %llu, its bytes before "
                   "offset %lld): reading it from the start; lines written "
                   "to that file after the offset were not read", j->path,
                   (unsigned long long) f.ino,
                   (unsigned long long) j->pending.ino,
                   (long long) j->pending.off);
        }

        memset(&j->pending, 0, sizeof(ad_fpos_t));

    } else {
        ad_log(AD_LOG_INFO, "reading journal %s (inode %llu)", j->path,
               (unsigned long long) f.ino);
    }

    j->cur = f;

    return 0;
}


/*
 * Each pread() starts at the tail, the bytes before our offset, and the
 * same read tells whether they are still there: one system call, so a
 * truncation cannot fall between the check and the read.
 */

static int
ad_jfile_read(ad_journal_t *j, ad_jfile_t *f, ad_line_pt handler,
    void *data)
{
    int           rc, err;
    size_t        len, tlen;
    ssize_t       n;
    int64_t       start, size;
    const char   *p, *data_start, *end, *nl, *seg;
    struct stat   st;
    char          name[sizeof(f->path) + 96];

    for ( ;; ) {
        tlen = f->tlen;
        start = f->off - (int64_t) tlen;

        n = ad_pread_all(f->fd, j->buf, tlen + AD_READ_MAX + 1, start);

        if (n == -1) {
            err = errno;
            (void) ad_jfile_name(j, f, name, sizeof(name));
            errno = err;
            ad_fail(&f->read_fail, AD_LOG_ERR, "reading %s at offset "
                    "%lld: %s", name, (long long) f->off, strerror(err));
            f->failing = 1;
            return 0;
        }

        /* each file's failure its own: another's read tells nothing */

        if (f->read_fail.count != 0
            || (f == &j->cur && j->read_fail.count != 0))
        {
            (void) ad_jfile_name(j, f, name, sizeof(name));
            ad_fail_over(&f->read_fail, "reading %s", name);

            if (f == &j->cur) {
                /* its saved position, read at start or once it opened */
                ad_fail_over(&j->read_fail, "reading %s", name);
            }
        }

        f->failing = 0;

        /*
         * Without a tail (a position from an older state file) only a
         * file shorter than the offset tells.
         */

        size = -1;

        if ((size_t) n < tlen) {
            size = start + n;

        } else if (tlen == 0 && n == 0 && f->off > 0
                   && fstat(f->fd, &st) == 0 && st.st_size < f->off)
        {
            size = st.st_size;
        }

        if (size != -1 || memcmp(j->buf, f->tail, tlen) != 0) {
            rc = ad_jfile_replaced(j, f, handler, data, size);
            if (rc != 0) {
                return rc;
            }

            if (f->fd == -1
                || (f == &j->cur && (j->seek.fp.valid || j->old_waits)))
            {
                /* closed, or waiting for its copy */
                return 0;
            }

            continue;
        }

        data_start = j->buf + tlen;
        p = data_start;
        end = j->buf + n;

        for ( ;; ) {
            nl = memchr(p, '\n', (size_t) (end - p));
            if (nl == NULL) {
                break;
            }

            len = (size_t) (nl - p);

            if (f->skipping) {

                /*
                 * A line cut short (a power cut's zeros) may have a
                 * whole one glued to its end: in the bytes read before
                 * the line end, the tail's included, which are the
                 * skipped line's.  On a failure the end is read again.
                 */

                seg = (nl - j->buf > AD_READ_MAX) ? nl - AD_READ_MAX
                                                  : j->buf;
                rc = handler(data, seg, (size_t) (nl - seg),
                             start + (int64_t) (seg - j->buf), 1);
                if (rc != 0) {
                    ad_jfile_keep(f, j->buf, start);
                    return rc;
                }

                f->skipping = 0;
                ad_log(AD_LOG_WARN, "journal %s: skipped a line longer "
                       "than %d bytes ending at offset %lld", j->path,
                       AD_READ_MAX, (long long) (f->off + (int64_t) len));

            } else {
                rc = handler(data, p, len, f->off, 0);
                if (rc != 0) {
                    ad_jfile_keep(f, j->buf, start);
                    return rc;
                }
            }

            f->off += (int64_t) len + 1;
            p = nl + 1;
        }

        if (p == data_start && end - data_start == AD_READ_MAX + 1) {
            /* no line end in a full buffer: too long to be a line */
            f->skipping = 1;
            f->off += AD_READ_MAX + 1;
            ad_jfile_keep(f, j->buf, start);
            continue;
        }

        ad_jfile_keep(f, j->buf, start);

        if (end - data_start < AD_READ_MAX + 1) {
            /* at the end; what is left is an incomplete line */
            return 0;
        }
    }
}


/* the tail after a read: buf holds the file from offset start on */

static void
ad_jfile_keep(ad_jfile_t *f, const char *buf, int64_t start)
{
    size_t  have;

    have = (size_t) (f->off - start);
    f->tlen = have < AD_PRINT_MAX ? have : AD_PRINT_MAX;

    memcpy(f->tail, buf + have - f->tlen, f->tlen);
}


/*
 * The bytes before our offset are gone: the file was truncated, and may
 * have grown again since (size -1: it did, or was rewritten).  Lines
 * between our offset and the truncation are only in a copy, if anyone
 * made one (copytruncate): a file beside it with our tail at our offset
 * is read to its end first.  Lines written between the copy and the
 * truncation are in neither file; that is copytruncate's own gap.
 */

static int
ad_jfile_replaced(ad_journal_t *j, ad_jfile_t *f, ad_line_pt handler,
    void *data, int64_t size)
{
    int        rc;
    char       what[64];
    ad_fpos_t  fp;

    if (size >= 0) {
        (void) snprintf(what, sizeof(what), "%lld bytes",
                        (long long) size);
    } else {
        (void) snprintf(what, sizeof(what), "then rewritten");
    }

    if (f != &j->cur) {
        /*
         * A rotated file is not written from the start again; what is
         * in it now is not the journal (logrotate copied over it).
         */

        ad_log(AD_LOG_WARN, "the rotated journal (inode %llu) was "
               "truncated (%s, we were at %lld): no longer read",
               (unsigned long long) f->ino, what, (long long) f->off);

        ad_journal_drop_old(j, "it was truncated");

        return 0;
    }

    ad_jfile_fpos(f, &fp);

    rc = ad_journal_copy(j, &fp, what, 0, handler, data);

    return (rc == -2) ? 0 : rc;
}


/*
 * The journal, cur, was truncated while alertd read it at fp: a copy
 * beside it that holds fp's bytes at fp's offset (copytruncate's) is
 * read to its end first, as the rotated file (no grace: a copy is not
 * written to; but a read of it that fails is tried again, the journal
 * waiting, see ad_journal_copy_wait()), then the journal from its
 * start.  A file there that cannot be read or opened may be the copy:
 * fp waits in j->seek, and the journal with it, tried again at every
 * wake-up and poll (-2); last,
 * after --rotate-grace, the file is given up.  what: how the journal
 * was found truncated, NULL when tried again.  Else 0, or what the
 * handler returned: a copy is read on in the next round.
 */

static int
ad_journal_copy(ad_journal_t *j, const ad_fpos_t *fp, const char *what,
    int last, ad_line_pt handler, void *data)
{
    int          rc, copy;
    char         found[sizeof(j->dir) + sizeof(j->base) + 1];
    const char  *sep;

    rc = (fp->plen > 0)
         ? ad_journal_find(j, fp, j->cur.ino, found, sizeof(found)) : -1;

    if (rc == 0 && j->old.fd != -1) {
        /* the copy's lines are later than the rotated file's */

        rc = ad_jfile_read(j, &j->old, handler, data);
        if (rc != 0) {
            return rc;
        }

        ad_journal_drop_old(j, "the truncated journal's copy is read "
                            "next");
    }

    /* read from its start after the copy, if one holds our lines */

    j->cur.off = 0;
    j->cur.tlen = 0;
    j->cur.skipping = 0;

    copy = (rc == 0);

    if (copy) {
        rc = ad_jfile_take(j, &j->old, found, fp);
    }

    if (rc == -2
        && ad_journal_wait(j, &j->seek, fp, found, last, "copy a "
                           "copytruncate kept of the journal file alertd "
                           "was reading", 1) == -2)
    {
        j->seek_copy = 1;
        return -2;
    }

    /* told, or given up: the journal waits no longer */

    memset(&j->seek.fp, 0, sizeof(ad_fpos_t));
    j->seek_copy = 0;

    sep = (what != NULL) ? ", " : "";
    what = (what != NULL) ? what : "";

    if (rc == 0) {
        ad_fail_over(&j->seek.fail, "reading %s", found);
        ad_log(AD_LOG_WARN, "journal %s was truncated (%s%swe were at "
               "%lld): finishing its copy %s from offset %lld, then "
               "reading it from the start", j->path, what, sep,
               (long long) fp->off, found, (long long) fp->off);

        j->old_until = ad_mono_ms();
        j->old_copy = 1;
        j->old.copy = 1;

        rc = ad_jfile_read(j, &j->old, handler, data);

        if (rc == 0 && j->old.failing) {
            if (j->watch) {
                ad_journal_copy_wait(j);

            } else {
                ad_journal_old_left(j);
            }
        }

        return rc;
    }

    j->lost = 1;

    if (copy && rc == -1) {
        ad_log(AD_LOG_WARN, "journal %s: the copy %s changed before it "
               "could be read; lines after offset %lld were not read",
               j->path, found, (long long) fp->off);
        return 0;
    }

    ad_log(AD_LOG_WARN, "journal %s was truncated (%s%swe were at %lld): "
           "reading it from the start; lines written after offset %lld "
           "before the truncation were not read, no copy holds them",
           j->path, what, sep, (long long) fp->off, (long long) fp->off);

    return 0;
}


static void
ad_jfile_fpos(const ad_jfile_t *f, ad_fpos_t *fp)
{
    memset(fp, 0, sizeof(ad_fpos_t));

    if (f->fd == -1) {
        return;
    }

    fp->dev = f->dev;
    fp->ino = f->ino;
    fp->off = f->off;
    fp->plen = f->tlen;
    fp->valid = 1;

    if (f->tlen > 0) {
        (void) crypto_hash_sha256(fp->print, (const unsigned char *) f->tail,
                                  f->tlen);
    }
}


void
ad_journal_pos(const ad_journal_t *j, ad_pos_t *pos)
{
    ad_jfile_fpos(&j->cur, &pos->cur);

    if (j->pending.valid) {
        pos->cur = j->pending;
    }

    if (j->seek.fp.valid) {
        pos->cur = j->seek.fp;
    }

    ad_jfile_fpos(&j->old, &pos->old);

    if (j->seek_old.fp.valid) {
        pos->old = j->seek_old.fp;
    }
}


/*
 * Whether every line of the journal was read, for --once, which must
 * not exit as done when one was not: AD_JOURNAL_LOST if lines were said
 * lost since ad_journal_open(); AD_JOURNAL_LEFT if some are left where
 * the position is, for the next run: the last read of a file failed, a
 * file that may hold them is waited for, or the file under the
 * journal's name could not be opened.
 */

int
ad_journal_unread(const ad_journal_t *j)
{
    int  u;

    u = j->lost ? AD_JOURNAL_LOST : 0;

    if (j->seek.fp.valid || j->seek_old.fp.valid || j->pending.valid
        || j->old_waits || (j->cur.fd != -1 && j->cur.failing)
        || (j->old.fd != -1 && j->old.failing)
        || j->open_fail.count != 0)
    {
        u |= AD_JOURNAL_LEFT;
    }

    return u;
}


/* the next deadline: a rotated file's grace, or the wait for one */

int64_t
ad_journal_next(const ad_journal_t *j)
{
    int64_t  t;

    if (!j->watch) {
        /* --once waits for none of them */
        return -1;
    }

    t = (j->old.fd != -1) ? j->old_until : -1;

    if (j->seek.fp.valid && (t == -1 || j->seek.until < t)) {
        t = j->seek.until;
    }

    if (j->seek_old.fp.valid && (t == -1 || j->seek_old.until < t)) {
        t = j->seek_old.until;
    }

    return t;
}
