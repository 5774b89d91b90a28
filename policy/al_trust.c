/*
 * Who can replace a policy file.  The policy decides where every
 * secret is sent, and only its file's mode and its path guard it: a
 * file in a directory another user may write (or through a symbolic
 * link another user may replace) is theirs to swap between airlockctl
 * check and the reload, whatever the file's own mode.
 *
 * The policy's writers are root, the file's owner and, when the file
 * gives its group write, that group.  Every directory a name of the
 * path is looked up in, from / down and through every symbolic link,
 * must be one only they may change: owned by root or the file's owner,
 * no write for others, group write only for the file's writing group.
 * A sticky directory (/tmp) may be written by anyone, as its entries can
 * be removed or renamed only by their owner, the directory's and root:
 * the entry looked up there must then be owned by root or the file's
 * owner.  The walk ends on the file that was opened (device and inode),
 * or the policy is refused as changed while it was checked.
 *
 * A file: secret and the keys are held to the same walk
 * (al_path_trusted(), from al_secret.c): whoever could put another file
 * under their name chooses the credential sent, or the key sealed to.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "al_internal.h"


/* as Linux follows at most 40 links in one lookup */
#define AL_TRUST_LINKS  40


typedef struct {
    const char    *path;        /* as given, for the messages */
    const char    *what;        /* "policy", "secret file", ... */
    uid_t          owner;
    gid_t          group;
    int            group_writes;
    al_error_t    *err;
} al_trust_t;


static int al_trust_dir(al_trust_t *t, const char *dir,
    const struct stat *st, int *sticky);
static int al_trust_entry(al_trust_t *t, const char *dir,
    const char *name, const struct stat *st);


int
al_policy_trusted(const char *path, int fd, al_error_t *err)
{
    struct stat  st;

    if (fstat(fd, &st) == -1) {
        al_error_set(err, path, 0, 0, "cannot stat: %s", strerror(errno));
        return -1;
    }

    if (al_policy_writable(path, (unsigned) st.st_mode, err) != 0) {
        return -1;
    }

    return al_path_trusted(path, fd, "policy", err);
}


/*
 * The walk, for any file whose writers are root, its owner and, when it
 * gives its group write, that group: the policy, a secret file, a key.
 * what names the file in the messages.
 */

int
al_path_trusted(const char *path, int fd, const char *what, al_error_t *err)
{
    int          sticky, links;
    char         done[PATH_MAX], todo[PATH_MAX], link[PATH_MAX];
    char         next[PATH_MAX], *name, *rest;
    size_t       dlen, nlen;
    ssize_t      n;
    const char  *dir;
    al_trust_t   t;
    struct stat  fst, st;

    if (fstat(fd, &fst) == -1) {
        al_error_set(err, path, 0, 0, "cannot stat: %s", strerror(errno));
        return -1;
    }

    t.path = path;
    t.what = what;
    t.owner = fst.st_uid;
    t.group = fst.st_gid;
    t.group_writes = (fst.st_mode & S_IWGRP) != 0;
    t.err = err;

    /* a relative path is looked up from the working directory */

    if (path[0] == '/') {
        n = snprintf(todo, sizeof(todo), "%s", path);

    } else {
        if (getcwd(done, sizeof(done)) == NULL) {
            al_error_set(err, path, 0, 0, "cannot get the working "
                         "directory to check the %s's path: %s", what,
                         strerror(errno));
            return -1;
        }

        n = snprintf(todo, sizeof(todo), "%s/%s", done, path);
    }

    if (n < 0 || (size_t) n >= sizeof(todo)) {
        al_error_set(err, path, 0, 0, "path too long to check");
        return -1;
    }

    /* done: the directory reached, resolved ("" for /) */

    done[0] = '\0';
    dlen = 0;
    links = 0;
    rest = todo;

    for ( ;; ) {

        while (*rest == '/') {
            rest++;
        }

        if (*rest == '\0') {
            /* the path ended on a directory: not the file opened */
            break;
        }

        name = rest;
        rest = strchr(name, '/');

        if (rest == NULL) {
            rest = name + strlen(name);

        } else {
            *rest++ = '\0';
        }

        if (strcmp(name, ".") == 0) {
            continue;
        }

        if (strcmp(name, "..") == 0) {
            while (dlen > 0 && done[dlen - 1] != '/') {
                dlen--;
            }
            if (dlen > 0) {
                dlen--;
            }
            done[dlen] = '\0';
            continue;
        }

        /* the directory the name is looked up in */

        dir = dlen ? done : "/";

        if (lstat(dir, &st) == -1) {
            al_error_set(err, path, 0, 0, "cannot stat %s: %s", dir,
                         strerror(errno));
            return -1;
        }

        if (al_trust_dir(&t, dir, &st, &sticky) != 0) {
            return -1;
        }

        nlen = strlen(name);

        if (dlen + 1 + nlen + 1 > sizeof(next)) {
            al_error_set(err, path, 0, 0, "path too long to check");
            return -1;
        }

        memcpy(next, done, dlen);
        next[dlen] = '/';
        memcpy(next + dlen + 1, name, nlen + 1);

        if (lstat(next, &st) == -1) {
            al_error_set(err, path, 0, 0, "cannot stat %s: %s", next,
                         strerror(errno));
            return -1;
        }

        if (sticky && al_trust_entry(&t, dir, next, &st) != 0) {
            return -1;
        }

        if (S_ISLNK(st.st_mode)) {
            if (++links > AL_TRUST_LINKS) {
                al_error_set(err, path, 0, 0, "too many symbolic links "
                             "in its path");
                return -1;
            }

            n = readlink(next, link, sizeof(link));
            if (n == -1 || (size_t) n >= sizeof(link)) {
                al_error_set(err, path, 0, 0, "cannot read the symbolic "
                             "link %s: %s", next,
                             n == -1 ? strerror(errno) : "too long");
                return -1;
            }

            link[n] = '\0';

            /* the link's text, then what is left of the path */

            n = snprintf(next, sizeof(next), "%s/%s", link, rest);
            if (n < 0 || (size_t) n >= sizeof(next)) {
                al_error_set(err, path, 0, 0, "path too long to check");
                return -1;
            }

            memcpy(todo, next, (size_t) n + 1);
            rest = todo;

            if (link[0] == '/') {
                done[0] = '\0';
                dlen = 0;
            }

            continue;
        }

        if (*rest == '\0' && !S_ISDIR(st.st_mode)) {

            /* the last name: it must be the file that was opened */

            if (st.st_dev != fst.st_dev || st.st_ino != fst.st_ino) {
                break;
            }

            return 0;
        }

        if (!S_ISDIR(st.st_mode)) {
            al_error_set(err, path, 0, 0, "%s is not a directory", next);
            return -1;
        }

        memcpy(done, next, dlen + 1 + nlen + 1);
        dlen += 1 + nlen;
    }

    al_error_set(err, path, 0, 0, "the file changed while its path was "
                 "checked; try again");

    return -1;
}


/*
 * A directory a name of the file's path is looked up in: whoever may
 * write it may put another file under that name.
 */

static int
al_trust_dir(al_trust_t *t, const char *dir, const struct stat *st,
    int *sticky)
{
    unsigned  mode;

    mode = (unsigned) (st->st_mode & 07777);
    *sticky = 0;

    if (st->st_uid != 0 && st->st_uid != t->owner) {
        al_error_set(t->err, t->path, 0, 0, "the directory %s is owned by "
                     "uid %lu, neither root nor the %s's owner (uid "
                     "%lu): its owner can replace the %s there; "
                     "chown root it", dir, (unsigned long) st->st_uid,
                     t->what, (unsigned long) t->owner, t->what);
        return -1;
    }

    if (mode & S_ISVTX) {
        /* its entries are checked one by one (al_trust_entry()) */
        *sticky = (mode & (S_IWGRP | S_IWOTH)) != 0;
        return 0;
    }

    if (mode & S_IWOTH) {
        al_error_set(t->err, t->path, 0, 0, "any user can write the "
                     "directory %s (mode %04o), and replace the %s "
                     "there; chmod o-w it", dir, mode, t->what);
        return -1;
    }

    if ((mode & S_IWGRP) && !(t->group_writes && st->st_gid == t->group)) {
        al_error_set(t->err, t->path, 0, 0, "group %lu can write the "
                     "directory %s (mode %04o), and replace the %s, "
                     "which it may not write; chmod g-w it",
                     (unsigned long) st->st_gid, dir, mode, t->what);
        return -1;
    }

    return 0;
}


/*
 * A name in a sticky directory others may write (/tmp): only its owner,
 * the directory's and root can remove or rename it.
 */

static int
al_trust_entry(al_trust_t *t, const char *dir, const char *name,
    const struct stat *st)
{
    if (st->st_uid == 0 || st->st_uid == t->owner) {
        return 0;
    }

    al_error_set(t->err, t->path, 0, 0, "%s, in the sticky directory %s "
                 "others may write, is owned by uid %lu, neither root nor "
                 "the %s's owner (uid %lu): its owner can replace it",
                 name, dir, (unsigned long) st->st_uid, t->what,
                 (unsigned long) t->owner);

    return -1;
}
