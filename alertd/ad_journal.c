/*
 * Following the journal.
 *
 * nginx appends one JSON object per line with O_APPEND.  We read complete
 * lines only: a last line without its '\n' stays unread, and our offset
 * stays at its start, until the rest arrives.  A line longer than
 * AD_READ_MAX is skipped as malformed.
 *
 * inotify tells us when to look: the file itself (IN_MODIFY, IN_MOVE_SELF,
 * IN_DELETE_SELF, IN_ATTRIB for an unlink) and its directory (IN_CREATE
 * and IN_MOVED_TO, for a new file under the name).  Any event, and a tick
 * every AD_TICK ms in case one was missed, makes us stat the name:
 *
 *   - the name points to a new inode (rename + new file, logrotate's
 *     default): the old inode is read to its end first, then we switch.
 *     The old file is read a little longer (AD_ROTATE_GRACE) for the
 *     lines a worker writes before it reopens its log.
 *   - the file is shorter than our offset (copytruncate): read from 0.
 *
 * The saved position is (inode, offset).  If the name holds another inode
 * at startup, the journal was rotated while we were stopped: the old inode
 * is looked for in the same directory (journal.1), finished, and then the
 * new file is read from its start.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alertd.h"


#define AD_FILE_EVENTS  (IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF \
                         | IN_ATTRIB)
#define AD_DIR_EVENTS   (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)


static void ad_jfile_init(ad_jfile_t *f);
static int ad_jfile_open(ad_journal_t *j, ad_jfile_t *f, const char *path);
static void ad_jfile_close(ad_journal_t *j, ad_jfile_t *f);
static int ad_jfile_read(ad_journal_t *j, ad_jfile_t *f,
    ad_line_pt handler, void *data);
static int ad_journal_check(ad_journal_t *j, ad_line_pt handler,
    void *data);
static int ad_journal_find(ad_journal_t *j, uint64_t ino, char *path,
    size_t size);


static void
ad_jfile_init(ad_jfile_t *f)
{
    memset(f, 0, sizeof(ad_jfile_t));
    f->fd = -1;
    f->wd = -1;
}


static int
ad_jfile_open(ad_journal_t *j, ad_jfile_t *f, const char *path)
{
    struct stat  st;

    ad_jfile_init(f);

    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd == -1) {
        return -1;
    }

    if (fstat(f->fd, &st) != 0) {
        (void) close(f->fd);
        f->fd = -1;
        return -1;
    }

    f->dev = (uint64_t) st.st_dev;
    f->ino = (uint64_t) st.st_ino;

    /*
     * The name may already point elsewhere; the tick notices that, and
     * a watch on the wrong inode only wakes us up for nothing.
     */

    if (j->ifd != -1) {
        f->wd = inotify_add_watch(j->ifd, path, AD_FILE_EVENTS);
        if (f->wd == -1) {
            ad_log(AD_LOG_WARN, "cannot watch %s: %s; polling it every "
                   "%d ms instead", path, strerror(errno), AD_TICK);
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


int
ad_journal_open(ad_journal_t *j, const char *path, int watch,
    const ad_pos_t *saved, char *err, size_t errsize)
{
    char         *slash;
    char          found[sizeof(j->dir) + sizeof(j->base) + 1];
    struct stat   st;

    j->ifd = -1;
    j->dwd = -1;
    j->check = 0;
    j->open_errno = 0;
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
        (void) snprintf(err, errsize, "cannot use the journal directory "
                        "%s: %s", j->dir, strerror(errno));
        return -1;
    }

    if (!S_ISDIR(st.st_mode)) {
        (void) snprintf(err, errsize, "the journal directory %s is not a "
                        "directory", j->dir);
        return -1;
    }

    if (watch) {
        j->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (j->ifd == -1) {
            (void) snprintf(err, errsize, "inotify: %s", strerror(errno));
            return -1;
        }

        j->dwd = inotify_add_watch(j->ifd, j->dir, AD_DIR_EVENTS);
        if (j->dwd == -1) {
            (void) snprintf(err, errsize, "cannot watch the journal "
                            "directory %s: %s%s", j->dir, strerror(errno),
                            errno == ENOSPC ? " (raise sysctl "
                            "fs.inotify.max_user_watches)" : "");
            ad_journal_close(j);
            return -1;
        }
    }

    if (ad_jfile_open(j, &j->cur, j->path) != 0 && errno != ENOENT) {
        (void) snprintf(err, errsize, "cannot read the journal %s: %s",
                        j->path, strerror(errno));
        ad_journal_close(j);
        return -1;
    }

    if (!saved->valid || saved->ino == 0) {
        return 0;
    }

    if (j->cur.fd != -1 && j->cur.ino == saved->ino) {
        j->cur.off = saved->off;
        return 0;
    }

    if (ad_journal_find(j, saved->ino, found, sizeof(found)) == 0) {
        ad_log(AD_LOG_INFO, "the journal was rotated while alertd was "
               "stopped: finishing %s from offset %lld first", found,
               (long long) saved->off);

        ad_jfile_close(j, &j->cur);

        if (ad_jfile_open(j, &j->cur, found) == 0) {
            j->cur.off = saved->off;
            j->check = 1;
            return 0;
        }

        (void) ad_jfile_open(j, &j->cur, j->path);
    }

    ad_log(AD_LOG_WARN, "the journal file alertd was reading (inode %llu) "
           "is gone from %s; lines written to it after offset %lld were "
           "not read", (unsigned long long) saved->ino, j->dir,
           (long long) saved->off);

    return 0;
}


/* looks for a regular file with the inode ino beside the journal */

static int
ad_journal_find(ad_journal_t *j, uint64_t ino, char *path, size_t size)
{
    DIR            *d;
    struct stat     st;
    struct dirent  *de;

    d = opendir(j->dir);
    if (d == NULL) {
        return -1;
    }

    for ( ;; ) {
        de = readdir(d);
        if (de == NULL) {
            break;
        }

        /* d_ino is not st_ino on every file system: stat them all */

        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0
            && S_ISREG(st.st_mode) && (uint64_t) st.st_ino == ino
            && (size_t) snprintf(path, size, "%s/%s",
                                 strcmp(j->dir, "/") == 0 ? "" : j->dir,
                                 de->d_name) < size)
        {
            (void) closedir(d);
            return 0;
        }
    }

    (void) closedir(d);

    return -1;
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


int
ad_journal_read(ad_journal_t *j, ad_line_pt handler, void *data)
{
    struct stat  st;

    if (j->ifd == -1 || j->check) {
        j->check = 0;
        if (ad_journal_check(j, handler, data) != 0) {
            j->check = 1;
            return -1;
        }
    }

    if (j->old.fd != -1) {
        if (ad_jfile_read(j, &j->old, handler, data) != 0) {
            return -1;
        }

        if (j->ifd == -1 || ad_mono_ms() >= j->old_until) {
            if (fstat(j->old.fd, &st) == 0 && st.st_size > j->old.off) {
                ad_log(AD_LOG_WARN, "the rotated journal (inode %llu) "
                       "ends with an incomplete line of %lld bytes; "
                       "skipped", (unsigned long long) j->old.ino,
                       (long long) (st.st_size - j->old.off));
            }

            ad_jfile_close(j, &j->old);
        }
    }

    if (j->cur.fd != -1) {
        return ad_jfile_read(j, &j->cur, handler, data);
    }

    return 0;
}


static int
ad_journal_check(ad_journal_t *j, ad_line_pt handler, void *data)
{
    ad_jfile_t   f;
    struct stat  st;

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
        /* said once per cause, then tried again every tick */
        if (errno != j->open_errno) {
            j->open_errno = errno;
            ad_log(errno == ENOENT ? AD_LOG_DEBUG : AD_LOG_ERR,
                   "cannot open the journal %s: %s; trying again", j->path,
                   strerror(errno));
        }
        return 0;
    }

    j->open_errno = 0;

    if (j->cur.fd != -1 && f.ino == j->cur.ino && f.dev == j->cur.dev) {
        ad_jfile_close(j, &f);
        return 0;
    }

    if (j->cur.fd != -1) {
        /* finish the old inode before anything in the new one */

        if (ad_jfile_read(j, &j->cur, handler, data) != 0) {
            ad_jfile_close(j, &f);
            return -1;
        }

        if (j->old.fd != -1) {
            ad_jfile_close(j, &j->old);
        }

        ad_log(AD_LOG_INFO, "journal %s was rotated: read the old file "
               "(inode %llu) to offset %lld, now reading inode %llu",
               j->path, (unsigned long long) j->cur.ino,
               (long long) j->cur.off, (unsigned long long) f.ino);

        j->old = j->cur;
        j->old_until = ad_mono_ms() + AD_ROTATE_GRACE;

    } else {
        ad_log(AD_LOG_INFO, "reading journal %s (inode %llu)", j->path,
               (unsigned long long) f.ino);
    }

    j->cur = f;

    return 0;
}


static int
ad_jfile_read(ad_journal_t *j, ad_jfile_t *f, ad_line_pt handler,
    void *data)
{
    size_t        len;
    ssize_t       n;
    const char   *p, *end, *nl;
    struct stat   st;

    if (fstat(f->fd, &st) == 0 && st.st_size < f->off) {
        ad_log(AD_LOG_WARN, "journal %s was truncated (%lld bytes, we were "
               "at %lld): reading it from the start", j->path,
               (long long) st.st_size, (long long) f->off);
        f->off = 0;
        f->skipping = 0;
    }

    for ( ;; ) {
        n = pread(f->fd, j->buf, sizeof(j->buf), f->off);

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }

            ad_log(AD_LOG_ERR, "reading journal %s at offset %lld: %s",
                   j->path, (long long) f->off, strerror(errno));
            return 0;
        }

        if (n == 0) {
            return 0;
        }

        p = j->buf;
        end = j->buf + n;

        for ( ;; ) {
            nl = memchr(p, '\n', (size_t) (end - p));
            if (nl == NULL) {
                break;
            }

            len = (size_t) (nl - p);

            if (f->skipping) {
                f->skipping = 0;
                ad_log(AD_LOG_WARN, "journal %s: skipped a line longer "
                       "than %d bytes ending at offset %lld", j->path,
                       AD_READ_MAX, (long long) (f->off + (int64_t) len));

            } else if (handler(data, p, len, f->off) != 0) {
                return -1;
            }

            f->off += (int64_t) len + 1;
            p = nl + 1;
        }

        if (p == j->buf && (size_t) n == sizeof(j->buf)) {
            /* no line end in a full buffer: too long to be a line */
            f->skipping = 1;
            f->off += n;
            continue;
        }

        if ((size_t) n < sizeof(j->buf)) {
            /* at the end; what is left is an incomplete line */
            return 0;
        }
    }
}


void
ad_journal_pos(const ad_journal_t *j, ad_pos_t *pos)
{
    memset(pos, 0, sizeof(ad_pos_t));

    if (j->cur.fd != -1) {
        pos->dev = j->cur.dev;
        pos->ino = j->cur.ino;
        pos->off = j->cur.off;
        pos->valid = 1;
    }
}


int64_t
ad_journal_next(const ad_journal_t *j)
{
    return (j->old.fd != -1) ? j->old_until : -1;
}
