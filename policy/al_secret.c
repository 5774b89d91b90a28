/*
 * Sealed secrets: libsodium sealed boxes to the appliance's X25519 key.
 *
 * The operator seals a credential to the public key (al_seal, from
 * "path.pub"); only the proxy, holding the private key, can open it
 * (al_unseal).  Key files are one text line, "airlock-secret-key-v1
 * <base64>" or "airlock-public-key-v1 <base64>".  The private key is
 * refused when other users can reach it (mode bits, or an owner neither
 * root nor the reader) or when it is a symbolic link, and once loaded it
 * lives in guarded, read-only sodium memory.  The public key is refused
 * when another user can write it (others' write bit, or such an owner):
 * whoever chooses the key opens what is sealed to it.  Opened
 * secrets live in guarded memory too (al_secure_alloc), wiped on free.
 */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "airlock.h"


#define AL_KEY_SECRET_HEADER   "airlock-secret-key-v1"
#define AL_KEY_PUBLIC_HEADER   "airlock-public-key-v1"
#define AL_KEY_FILE_MAX        256
#define AL_SEAL_MAX            (64 * 1024)
#define AL_B64_VARIANT         sodium_base64_VARIANT_ORIGINAL


struct al_keyring_s {
    unsigned char   *sk;            /* sodium_malloc'ed, read-only */
    unsigned char    pk[crypto_box_PUBLICKEYBYTES];
};


static int al_sodium_init(al_error_t *err, const char *path);
static int al_key_write(const char *path, mode_t mode, const char *data,
    size_t len, al_error_t *err);
static void al_fsync_dir(const char *path);
static void al_keygen_exists(const char *path, al_error_t *err);
static int al_keygen_lock(const char *lock, const char *path,
    al_error_t *err);
static int al_group_others(gid_t gid, uid_t owner, uid_t *other);
static int al_key_read(const char *path, int secret, unsigned char *key,
    al_error_t *err);
static int al_secret_file_checks(const char *path, int fd,
    const struct stat *st, size_t max, char *why, size_t whylen);
static int al_key_is_public(int fd);
static int al_key_parse(const char *path, int secret, const char *buf,
    size_t n, unsigned char *key, al_error_t *err);


/*
 * A secret or private key with another name (a hard link) may not be
 * the file its path was meant to hold: with fs.protected_hardlinks=0 any
 * user may link a file of root's (another secret, a key) under a name
 * they could make, and the owner and mode checks pass; its other names
 * are in directories no one checked.  A secret has one name.
 */
static const char  al_secret_links_why[] =
    "another name of it may be in a directory another user may write, "
    "or it may be another file of root's linked there (the owner and mode "
    "checks pass a link to it where fs.protected_hardlinks is 0); copy it "
    "to a file of its own";

static const char  al_b64_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";


static int
al_sodium_init(al_error_t *err, const char *path)
{
    if (sodium_init() < 0) {
        al_error_set(err, path, 0, 0, "libsodium failed to initialize");
        return -1;
    }

    return 0;
}


/*
 * The pair is written as PATH.tmp and PATH.pub.tmp, the public key renamed
 * to PATH.pub, and the private key linked to PATH last (never replacing
 * one): PATH appears whole, and only with its .pub beside it.  A run cut
 * short (a kill, a power loss) leaves no PATH, so the next run, or the
 * first-boot unit that runs while there is none, starts again, replacing
 * the .tmp files and the .pub such a run left.
 *
 * All of it is done holding PATH.lock (flock): the .pub is renamed into
 * place by the last run to get there and PATH linked by the first, so two
 * runs at once would leave the key of one beside the .pub of the other,
 * and each takes the other's .tmp files for those of a run cut short.  A
 * second run while one holds the lock is refused at once.
 */

int
al_keygen(const char *path, al_error_t *err)
{
    int            rc, lockfd;
    char          *pubpath, *tmp, *pubtmp, *lock;
    size_t         plen;
    al_error_t     terr;
    struct stat    st;
    unsigned char  pk[crypto_box_PUBLICKEYBYTES];
    unsigned char  sk[crypto_box_SECRETKEYBYTES];
    char           b64[sodium_base64_ENCODED_LEN(crypto_box_SECRETKEYBYTES,
                                                 AL_B64_VARIANT)];
    char           line[sizeof(AL_KEY_SECRET_HEADER) + sizeof(b64) + 2];

    if (al_sodium_init(err, path) != 0) {
        return -1;
    }

    plen = strlen(path);
    pubpath = malloc(4 * plen + sizeof(".pub") + sizeof(".tmp")
                     + sizeof(".pub.tmp") + sizeof(".lock"));
    if (pubpath == NULL) {
        al_error_set(err, path, 0, 0, "out of memory");
        return -1;
    }

    tmp = pubpath + plen + sizeof(".pub");
    pubtmp = tmp + plen + sizeof(".tmp");
    lock = pubtmp + plen + sizeof(".pub.tmp");

    memcpy(pubpath, path, plen);
    memcpy(pubpath + plen, ".pub", sizeof(".pub"));
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", sizeof(".tmp"));
    memcpy(pubtmp, path, plen);
    memcpy(pubtmp + plen, ".pub.tmp", sizeof(".pub.tmp"));
    memcpy(lock, path, plen);
    memcpy(lock + plen, ".lock", sizeof(".lock"));

    if (lstat(path, &st) == 0) {
        al_keygen_exists(path, err);
        free(pubpath);
        return -1;
    }

    if (errno != ENOENT) {
        al_error_set(err, path, 0, 0, "cannot create key file: %s",
                     strerror(errno));
        free(pubpath);
        return -1;
    }

    lockfd = al_keygen_lock(lock, path, err);
    if (lockfd == -1) {
        free(pubpath);
        return -1;
    }

    /* a run that held the lock before this one may have written PATH */

    if (lstat(path, &st) == 0) {
        al_keygen_exists(path, err);
        goto unlock;
    }

    /*
     * A directory another user can change is one where the pair can be
     * swapped for theirs between its writes and its renames, and where
     * nginx, check --key and seal refuse it (al_key_read()): said now,
     * not once the pair is in use.  The lock is in PATH's directory,
     * and must be ours: the walk takes its owner for the pair's.
     */

    if (fstat(lockfd, &st) == -1 || st.st_uid != geteuid()) {
        al_error_set(err, path, 0, 0, "the lock file %s is not yours "
                     "(another user made it there); remove it", lock);
        goto unlock;
    }

    if (al_path_trusted(lock, lockfd, "private key", &terr) != 0) {
        al_error_set(err, path, 0, 0, "%s", terr.msg);
        goto unlock;
    }

    /*
     * A .pub is replaced only when a run cut short left it: PATH.tmp is
     * removed only after PATH is linked, so it is there beside such a
     * .pub.  Any other .pub is someone's, and refused.
     */

    if (lstat(pubpath, &st) == 0 && lstat(tmp, &st) == -1) {
        al_keygen_exists(pubpath, err);
        goto unlock;
    }

    (void) unlink(tmp);
    (void) unlink(pubtmp);

    crypto_box_keypair(pk, sk);

    sodium_bin2base64(b64, sizeof(b64), sk, sizeof(sk), AL_B64_VARIANT);
    rc = snprintf(line, sizeof(line), "%s %s\n", AL_KEY_SECRET_HEADER, b64);

    rc = al_key_write(tmp, 0600, line, (size_t) rc, err);

    sodium_memzero(sk, sizeof(sk));
    sodium_memzero(b64, sizeof(b64));
    sodium_memzero(line, sizeof(line));

    if (rc != 0) {
        goto failed;
    }

    sodium_bin2base64(b64, sizeof(b64), pk, sizeof(pk), AL_B64_VARIANT);
    rc = snprintf(line, sizeof(line), "%s %s\n", AL_KEY_PUBLIC_HEADER, b64);

    if (al_key_write(pubtmp, 0644, line, (size_t) rc, err) != 0) {
        goto failed;
    }

    if (rename(pubtmp, pubpath) == -1) {
        al_error_set(err, path, 0, 0, "cannot rename %s to %s: %s", pubtmp,
                     pubpath, strerror(errno));
        goto failed;
    }

    if (link(tmp, path) == -1) {
        if (errno == EEXIST) {
            al_keygen_exists(path, err);

        } else {
            al_error_set(err, path, 0, 0, "cannot link %s to %s: %s", tmp,
                         path, strerror(errno));

            /*
             * the .pub just put in place is of no key now: left without
             * PATH.tmp beside it, every later keygen (the first-boot
             * unit's too) would refuse it as someone's
             */

            (void) unlink(pubpath);
        }

        goto failed;
    }

    (void) unlink(tmp);
    al_fsync_dir(path);

    (void) unlink(lock);
    (void) close(lockfd);
    free(pubpath);

    return 0;

failed:

    (void) unlink(tmp);
    (void) unlink(pubtmp);

unlock:

    /* removed while it is held: a run that opened it then tries again */

    (void) unlink(lock);
    (void) close(lockfd);
    free(pubpath);

    return -1;
}


static void
al_keygen_exists(const char *path, al_error_t *err)
{
    al_error_set(err, path, 0, 0, "refusing to overwrite existing %s; "
                 "move it away or choose another path", path);
}


/*
 * Takes PATH.lock for one keygen of PATH; returns its descriptor, or -1
 * when another run holds it.  The file is removed by the run that holds
 * it, before it lets it go: one opened before that removal is locked
 * then, but no longer the file at PATH.lock, and is opened again.
 */

static int
al_keygen_lock(const char *lock, const char *path, al_error_t *err)
{
    int          fd, tries;
    struct stat  fst, lst;

    for (tries = 0; tries < 100; tries++) {
        /* O_NONBLOCK: a FIFO put in its place must not hang keygen */

        fd = open(lock, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK
                        | O_CLOEXEC, 0600);
        if (fd == -1) {
            al_error_set(err, path, 0, 0, "cannot create lock file %s: %s",
                         lock, strerror(errno));
            return -1;
        }

        if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
            if (errno == EWOULDBLOCK) {
                al_error_set(err, path, 0, 0, "another airlockctl keygen is "
                             "writing %s (it holds %s); try again when it "
                             "has finished", path, lock);

            } else {
                al_error_set(err, path, 0, 0, "cannot lock %s: %s", lock,
                             strerror(errno));
            }

            (void) close(fd);
            return -1;
        }

        if (fstat(fd, &fst) == 0 && lstat(lock, &lst) == 0
            && fst.st_dev == lst.st_dev && fst.st_ino == lst.st_ino)
        {
            return fd;
        }

        (void) close(fd);
    }

    al_error_set(err, path, 0, 0, "cannot lock %s: it keeps being replaced",
                 lock);

    return -1;
}


/*
 * Creates path (never replacing anything already there), writes data,
 * fsyncs and closes it; on any failure the half-written file is removed.
 */

static int
al_key_write(const char *path, mode_t mode, const char *data, size_t len,
    al_error_t *err)
{
    int          fd;
    ssize_t      n;
    size_t       done;
    const char  *what;

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              mode);
    if (fd == -1) {
        if (errno == EEXIST) {
            al_error_set(err, path, 0, 0, "refusing to overwrite existing "
                         "%s; move it away or choose another path", path);

        } else {
            al_error_set(err, path, 0, 0, "cannot create key file: %s",
                         strerror(errno));
        }

        return -1;
    }

    /* the umask may have taken bits away; the mode must be exact */

    what = "set the mode of";
    if (fchmod(fd, mode) == -1) {
        goto failed;
    }

    what = "write";
    for (done = 0; done < len; done += (size_t) n) {
        n = write(fd, data + done, len - done);
        if (n == -1) {
            if (errno == EINTR) {
                n = 0;
                continue;
            }

            goto failed;
        }
    }

    what = "fsync";
    if (fsync(fd) == -1) {
        goto failed;
    }

    what = "close";
    if (close(fd) == -1) {
        fd = -1;
        goto failed;
    }

    return 0;

failed:

    al_error_set(err, path, 0, 0, "cannot %s key file: %s", what,
                 strerror(errno));

    if (fd != -1) {
        (void) close(fd);
    }

    (void) unlink(path);

    return -1;
}


/* makes the new directory entries durable; best effort */

static void
al_fsync_dir(const char *path)
{
    int          fd;
    char        *dir;
    const char  *slash;

    slash = strrchr(path, '/');
    if (slash == NULL) {
        dir = strdup(".");

    } else if (slash == path) {
        dir = strdup("/");

    } else {
        dir = strndup(path, (size_t) (slash - path));
    }

    if (dir == NULL) {
        return;
    }

    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd != -1) {
        (void) fsync(fd);
        (void) close(fd);
    }

    free(dir);
}


al_keyring_t *
al_keyring_load(const char *path, al_error_t *err)
{
    al_keyring_t  *kr;

    if (al_sodium_init(err, path) != 0) {
        return NULL;
    }

    kr = calloc(1, sizeof(al_keyring_t));
    if (kr == NULL) {
        al_error_set(err, path, 0, 0, "out of memory");
        return NULL;
    }

    kr->sk = sodium_malloc(crypto_box_SECRETKEYBYTES);
    if (kr->sk == NULL) {
        al_error_set(err, path, 0, 0, "cannot allocate guarded memory for "
                     "the key: %s", strerror(errno));
        free(kr);
        return NULL;
    }

    if (al_key_read(path, 1, kr->sk, err) != 0) {
        sodium_free(kr->sk);
        free(kr);
        return NULL;
    }

    if (crypto_scalarmult_base(kr->pk, kr->sk) != 0
        || sodium_mprotect_readonly(kr->sk) != 0)
    {
        al_error_set(err, path, 0, 0, "cannot set up the key");
        sodium_free(kr->sk);
        free(kr);
        return NULL;
    }

    return kr;
}


void
al_keyring_free(al_keyring_t *kr)
{
    if (kr == NULL) {
        return;
    }

    sodium_free(kr->sk);
    sodium_memzero(kr, sizeof(al_keyring_t));
    free(kr);
}


/*
 * 0 when no user but owner is in group gid: none has it as primary
 * group, and its member list names no one else.  Else -1, *other the
 * first such uid, or (uid_t) -1 when the databases cannot be read.
 */

static int
al_group_others(gid_t gid, uid_t owner, uid_t *other)
{
    int             rc;
    char            gbuf[16384], buf[16384];
    char          **m;
    struct group    gr, *grp;
    struct passwd   pw, *pwp;

    *other = (uid_t) -1;

    rc = getgrgid_r(gid, &gr, gbuf, sizeof(gbuf), &grp);
    if (rc != 0) {
        return -1;
    }

    for (m = (grp != NULL) ? grp->gr_mem : NULL; m != NULL && *m != NULL;
         m++)
    {
        rc = getpwnam_r(*m, &pw, buf, sizeof(buf), &pwp);
        if (rc != 0 || pwp == NULL) {
            return -1;
        }

        if (pwp->pw_uid != owner) {
            *other = pwp->pw_uid;
            return -1;
        }
    }

    setpwent();

    for ( ;; ) {
        rc = getpwent_r(&pw, buf, sizeof(buf), &pwp);

        if (rc == ENOENT) {
            break;
        }

        if (rc != 0) {
            endpwent();
            return -1;
        }

        if (pwp->pw_gid == gid && pwp->pw_uid != owner) {
            *other = pwp->pw_uid;
            endpwent();
            return -1;
        }
    }

    endpwent();

    return 0;
}


/*
 * Reads a key file into key (32 bytes).  The private key file must be a
 * regular file, not a symbolic link, reachable by its owner only, and
 * owned by root or by the user reading it: any other owner (nginx's
 * workers' www-data) could read it, chmod it and write another key in.
 */

static int
al_key_read(const char *path, int secret, unsigned char *key,
    al_error_t *err)
{
    int          fd, flags, rc;
    uid_t        other;
    char         buf[AL_KEY_FILE_MAX];
    size_t       n;
    ssize_t      r;
    struct stat  st;

    /* O_NONBLOCK: a FIFO put in place of the key must not hang us */

    flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
    if (secret) {
        flags |= O_NOFOLLOW;
    }

    fd = open(path, flags);
    if (fd == -1) {
        if (errno == ELOOP && secret) {
            al_error_set(err, path, 0, 0, "private key file is a symbolic "
                         "link; refusing to follow it, use the real path");

        } else {
            al_error_set(err, path, 0, 0, "cannot open key file: %s",
                         strerror(errno));
        }

        return -1;
    }

    if (fstat(fd, &st) == -1) {
        al_error_set(err, path, 0, 0, "cannot stat key file: %s",
                     strerror(errno));
        (void) close(fd);
        return -1;
    }

    if (!S_ISREG(st.st_mode)) {
        al_error_set(err, path, 0, 0, "key file is not a regular file");
        (void) close(fd);
        return -1;
    }

    /*
     * What is sealed to a public key another user can replace is theirs
     * to open, and lands in a policy anyone may read.  Group write is
     * taken: with a group for each user, every file a user makes has it.
     */

    if (!secret && (st.st_mode & 002)) {
        al_error_set(err, path, 0, 0, "public key file can be written by "
                     "others (mode %04o): whoever replaces it can open "
                     "what is sealed to it; chmod o-w it",
                     (unsigned) (st.st_mode & 07777));
        (void) close(fd);
        return -1;
    }

    /*
     * Group write is taken for a group of the owner's alone (a group
     * per user): one with another member, or one that cannot be told,
     * lets that member put a key of their own in the file.
     */

    if (!secret && (st.st_mode & 020)
        && al_group_others(st.st_gid, st.st_uid, &other) != 0)
    {
        if (other == (uid_t) -1) {
            al_error_set(err, path, 0, 0, "public key file can be written "
                         "by its group %lu (mode %04o), whose members "
                         "cannot be told: whoever is in it can replace "
                         "it and open what is sealed to it; chmod g-w it",
                         (unsigned long) st.st_gid,
                         (unsigned) (st.st_mode & 07777));

        } else {
            al_error_set(err, path, 0, 0, "public key file can be written "
                         "by its group %lu (mode %04o), which uid %lu is "
                         "in: whoever is in it can replace it and open "
                         "what is sealed to it; chmod g-w it",
                         (unsigned long) st.st_gid,
                         (unsigned) (st.st_mode & 07777),
                         (unsigned long) other);
        }

        (void) close(fd);
        return -1;
    }

    if (!secret && st.st_uid != 0 && st.st_uid != geteuid()) {
        al_error_set(err, path, 0, 0, "public key file is owned by uid %lu, "
                     "neither root nor the user sealing (uid %lu): its owner "
                     "can put a key of their own in it and open what is "
                     "sealed to it; use the appliance's own "
                     "(/etc/airlock/airlock.key.pub), or a copy of yours",
                     (unsigned long) st.st_uid, (unsigned long) geteuid());
        (void) close(fd);
        return -1;
    }

    if (secret && (st.st_mode & 077)) {

        /*
         * a public key (0644 as keygen writes it) given for the private
         * one: "chmod 600 it" would send the operator the wrong way
         */

        if (al_key_is_public(fd)) {
            al_error_set(err, path, 0, 0, "this is the public key; give "
                         "the private key file instead");

        } else {
            al_error_set(err, path, 0, 0, "private key file is readable "
                         "by others (mode %04o); chmod 600 it",
                         (unsigned) (st.st_mode & 07777));
        }

        (void) close(fd);
        return -1;
    }

    if (secret && st.st_uid != 0 && st.st_uid != geteuid()) {
        al_error_set(err, path, 0, 0, "private key file is owned by uid %lu, "
                     "neither root nor the user reading it (uid %lu): its "
                     "owner can read and replace it; chown root it",
                     (unsigned long) st.st_uid, (unsigned long) geteuid());
        (void) close(fd);
        return -1;
    }

    if (secret && st.st_nlink > 1) {
        al_error_set(err, path, 0, 0, "private key file has %lu hard "
                     "links: %s", (unsigned long) st.st_nlink,
                     al_secret_links_why);
        (void) close(fd);
        return -1;
    }

    /* whoever may change its path may put another key under its name */

    if (al_path_trusted(path, fd, secret ? "private key" : "public key",
                        err)
        != 0)
    {
        (void) close(fd);
        return -1;
    }

    n = 0;

    while (n < sizeof(buf)) {
        r = read(fd, buf + n, sizeof(buf) - n);
        if (r == 0) {
            break;
        }

        if (r == -1) {
            if (errno == EINTR) {
                continue;
            }

            al_error_set(err, path, 0, 0, "cannot read key file: %s",
                         strerror(errno));
            sodium_memzero(buf, sizeof(buf));
            (void) close(fd);
            return -1;
        }

        n += (size_t) r;
    }

    (void) close(fd);

    if (n == sizeof(buf)) {
        al_error_set(err, path, 0, 0, "file is too large to be an Airlock "
                     "key file");
        sodium_memzero(buf, sizeof(buf));
        return -1;
    }

    rc = al_key_parse(path, secret, buf, n, key, err);

    sodium_memzero(buf, sizeof(buf));

    return rc;
}


/* "header <base64 of 32 bytes>", one optional trailing LF */

/* the file at fd starts as a public key file does */

static int
al_key_is_public(int fd)
{
    char  head[sizeof(AL_KEY_PUBLIC_HEADER)];

    return pread(fd, head, sizeof(head), 0) == (ssize_t) sizeof(head)
           && memcmp(head, AL_KEY_PUBLIC_HEADER " ", sizeof(head)) == 0;
}


static int
al_key_parse(const char *path, int secret, const char *buf, size_t n,
    unsigned char *key, al_error_t *err)
{
    size_t         hlen, binlen;
    const char    *header, *other, *kind;
    unsigned char  bin[AL_KEY_FILE_MAX];

    header = secret ? AL_KEY_SECRET_HEADER : AL_KEY_PUBLIC_HEADER;
    other = secret ? AL_KEY_PUBLIC_HEADER : AL_KEY_SECRET_HEADER;
    kind = secret ? "private" : "public";
    hlen = strlen(header);

    if (n <= hlen || memcmp(buf, header, hlen) != 0 || buf[hlen] != ' ') {
        if (n > hlen && memcmp(buf, other, hlen) == 0) {
            al_error_set(err, path, 0, 0, "this is the %s key; give the "
                         "%s key file instead",
                         secret ? "public" : "private", kind);

        } else {
            al_error_set(err, path, 0, 0, "not an Airlock %s key file "
                         "(expected a line starting \"%s \")", kind,
                         header);
        }

        return -1;
    }

    buf += hlen + 1;
    n -= hlen + 1;

    if (n > 0 && buf[n - 1] == '\n') {
        n--;
    }

    if (sodium_base642bin(bin, sizeof(bin), buf, n, NULL, &binlen, NULL,
                          AL_B64_VARIANT)
        != 0)
    {
        al_error_set(err, path, 0, 0, "%s key is not valid base64 "
                     "(damaged file?)", kind);
        sodium_memzero(bin, sizeof(bin));
        return -1;
    }

    if (binlen != crypto_box_SECRETKEYBYTES) {
        al_error_set(err, path, 0, 0, "%s key is %zu bytes, expected %d "
                     "(truncated or damaged file?)", kind, binlen,
                     (int) crypto_box_SECRETKEYBYTES);
        sodium_memzero(bin, sizeof(bin));
        return -1;
    }

    memcpy(key, bin, crypto_box_SECRETKEYBYTES);
    sodium_memzero(bin, sizeof(bin));

    return 0;
}


int
al_seal(const char *pubpath, const unsigned char *msg, size_t len,
    char **out, al_error_t *err)
{
    char           *b64;
    size_t          clen, blen;
    unsigned char  *c;
    unsigned char   pk[crypto_box_PUBLICKEYBYTES];

    *out = NULL;

    if (len > AL_SEAL_MAX) {
        /* the limit, not the length: a secret's is not printed */

        al_error_set(err, pubpath, 0, 0, "secret is over %d bytes, which "
                     "is as much as can be sealed", AL_SEAL_MAX);
        return -1;
    }

    if (al_sodium_init(err, pubpath) != 0) {
        return -1;
    }

    if (al_key_read(pubpath, 0, pk, err) != 0) {
        return -1;
    }

    clen = len + crypto_box_SEALBYTES;
    blen = sodium_base64_ENCODED_LEN(clen, AL_B64_VARIANT);

    c = malloc(clen);
    b64 = malloc(blen);

    if (c == NULL || b64 == NULL) {
        al_error_set(err, pubpath, 0, 0, "out of memory");
        free(c);
        free(b64);
        return -1;
    }

    /* crypto_box_seal() reads no bytes of msg when len is 0 */

    if (crypto_box_seal(c, len ? msg : (const unsigned char *) "", len, pk)
        != 0)
    {
        al_error_set(err, pubpath, 0, 0, "cannot seal to this public key");
        free(c);
        free(b64);
        return -1;
    }

    sodium_bin2base64(b64, blen, c, clen, AL_B64_VARIANT);
    free(c);

    *out = b64;

    return 0;
}


int
al_unseal(const al_keyring_t *kr, const char *b64, size_t b64len,
    unsigned char **out, size_t *outlen, const char **why)
{
    size_t          binmax, binlen, mlen;
    unsigned char  *bin, *m;

    *out = NULL;
    *outlen = 0;

    if (b64len > sodium_base64_ENCODED_LEN(AL_SEAL_MAX + crypto_box_SEALBYTES,
                                           AL_B64_VARIANT))
    {
        *why = "too long to be a sealed secret";
        return -1;
    }

    binmax = b64len / 4 * 3 + 3;

    bin = malloc(binmax);
    if (bin == NULL) {
        *why = "out of memory";
        return -1;
    }

    /* no ignore set: whitespace and line breaks are not base64 */

    if (sodium_base642bin(bin, binmax, b64, b64len, NULL, &binlen, NULL,
                          AL_B64_VARIANT)
        != 0)
    {
        *why = "not valid base64";
        free(bin);
        return -1;
    }

    if (binlen < crypto_box_SEALBYTES) {
        *why = "too short to be a sealed box";
        sodium_memzero(bin, binmax);
        free(bin);
        return -1;
    }

    mlen = binlen - crypto_box_SEALBYTES;

    m = al_secure_alloc(mlen + 1);
    if (m == NULL) {
        *why = "cannot allocate guarded memory";
        sodium_memzero(bin, binmax);
        free(bin);
        return -1;
    }

    if (crypto_box_seal_open(m, bin, binlen, kr->pk, kr->sk) != 0) {
        *why = "cannot be opened with this key (tampered, or sealed to "
               "another key)";
        al_secure_free(m);
        sodium_memzero(bin, binmax);
        free(bin);
        return -1;
    }

    m[mlen] = '\0';

    sodium_memzero(bin, binmax);
    free(bin);

    *out = m;
    *outlen = mlen;

    return 0;
}


/*
 * What al_secret_read_file() asks of the file open on fd (st its fstat())
 * before a byte is read; al_secret_check_file() asks the same of a file
 * it does not read.  One copy, so that check and nginx agree.
 */

static int
al_secret_file_checks(const char *path, int fd, const struct stat *st,
    size_t max, char *why, size_t whylen)
{
    al_error_t  err;

    if (!S_ISREG(st->st_mode)) {
        snprintf(why, whylen, "%s is not a regular file (%s)", path,
                 S_ISFIFO(st->st_mode) ? "a FIFO"
                 : S_ISDIR(st->st_mode) ? "a directory"
                 : S_ISSOCK(st->st_mode) ? "a socket"
                 : S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device"
                 : "not a file");
        return -1;
    }

    if (st->st_mode & 077) {
        snprintf(why, whylen, "%s can be reached by group or others (mode "
                 "%04o); chmod 600 it (or 400)", path,
                 (unsigned) (st->st_mode & 07777));
        return -1;
    }

    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        snprintf(why, whylen, "%s is owned by uid %lu, neither root nor the "
                 "user reading it (uid %lu): its owner can read and replace "
                 "it; chown root it", path, (unsigned long) st->st_uid,
                 (unsigned long) geteuid());
        return -1;
    }

    if (st->st_nlink > 1) {
        snprintf(why, whylen, "%s has %lu hard links: %s", path,
                 (unsigned long) st->st_nlink, al_secret_links_why);
        return -1;
    }

    /*
     * whoever may change its path may put another file under its name
     * between airlockctl check and the reload (al_path_trusted())
     */

    if (al_path_trusted(path, fd, "secret file", &err) != 0) {
        (void) al_error_format(&err, why, whylen);
        return -1;
    }

    if ((uintmax_t) st->st_size > max) {
        snprintf(why, whylen, "%s is larger than %zu bytes", path, max);
        return -1;
    }

    return 0;
}


/*
 * airlockctl check without the key: a file: secret's file is held to
 * every check al_secret_read_file() makes but the reading (it is opened
 * O_PATH, which needs no read permission and reads nothing).  1 with why
 * set when the file cannot be reached from here (no such file, or a
 * directory this user may not search): nginx, on its own host and as
 * root, may see it.
 */

int
al_secret_check_file(const char *path, size_t max, char *why,
    size_t whylen)
{
    int          fd, rc, e;
    struct stat  st;

    fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
    if (fd == -1) {
        e = errno;
        snprintf(why, whylen, "cannot open %s: %s", path, strerror(e));

        return (e == ENOENT || e == ENOTDIR || e == EACCES) ? 1 : -1;
    }

    if (fstat(fd, &st) == -1) {
        snprintf(why, whylen, "cannot stat %s: %s", path, strerror(errno));
        (void) close(fd);
        return -1;
    }

    if (S_ISLNK(st.st_mode)) {
        snprintf(why, whylen, "%s is a symbolic link; refusing to follow "
                 "it, use the real path", path);
        (void) close(fd);
        return -1;
    }

    rc = al_secret_file_checks(path, fd, &st, max, why, whylen);

    (void) close(fd);

    return rc;
}


/*
 * A file: secret gets the private key's checks (one name, a path no
 * other user may change, as the policy's: al_path_trusted()).
 * O_NONBLOCK: a FIFO or a device put in place of the file must not hang
 * the load (nginx -t, a reload); fstat() then refuses anything but a
 * regular file before a byte is read.  A file other users can reach is
 * refused, as a key is: one with group or other mode bits, and one owned
 * by neither root nor the reader.  The reader's own is what systemd
 * makes of a credential for a unit with User= (airlock-alertd's) on a
 * file system without ACLs.
 */

int
al_secret_read_file(const char *path, size_t max, unsigned char **out,
    size_t *outlen, char *why, size_t whylen)
{
    int             fd;
    size_t          len;
    ssize_t         n;
    struct stat     st;
    unsigned char  *buf;

    *out = NULL;
    *outlen = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd == -1) {
        if (errno == ELOOP) {
            snprintf(why, whylen, "%s is a symbolic link; refusing to "
                     "follow it, use the real path", path);

        } else {
            snprintf(why, whylen, "cannot open %s: %s", path,
                     strerror(errno));
        }

        return -1;
    }

    if (fstat(fd, &st) == -1) {
        snprintf(why, whylen, "cannot stat %s: %s", path, strerror(errno));
        (void) close(fd);
        return -1;
    }

    if (al_secret_file_checks(path, fd, &st, max, why, whylen) != 0) {
        (void) close(fd);
        return -1;
    }

    buf = al_secure_alloc(max + 1);
    if (buf == NULL) {
        snprintf(why, whylen, "out of memory reading %s", path);
        (void) close(fd);
        return -1;
    }

    /* bounded even if the file grows while it is read */

    len = 0;

    while (len <= max) {
        n = read(fd, buf + len, max + 1 - len);

        if (n == 0) {
            break;
        }

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }

            snprintf(why, whylen, "cannot read %s: %s", path,
                     strerror(errno));
            al_secure_free(buf);
            (void) close(fd);
            return -1;
        }

        len += (size_t) n;
    }

    (void) close(fd);

    if (len > max) {
        snprintf(why, whylen, "%s is larger than %zu bytes", path, max);
        al_secure_free(buf);
        return -1;
    }

    /* the one trailing newline an editor or echo adds */

    if (len > 0 && buf[len - 1] == '\n') {
        len--;
        if (len > 0 && buf[len - 1] == '\r') {
            len--;
        }
    }

    buf[len] = '\0';

    *out = buf;
    *outlen = len;

    return 0;
}


/*
 * The private key's file is one line, which passes every check a file:
 * secret gets when it is root's and 0600: named as a secret, the key that
 * opens every sealed secret would be sent upstream as a credential.
 */

int
al_key_is_private(const unsigned char *value, size_t len)
{
    size_t  hlen;

    hlen = sizeof(AL_KEY_SECRET_HEADER) - 1;

    return len >= hlen && memcmp(value, AL_KEY_SECRET_HEADER, hlen) == 0;
}


void *
al_secure_alloc(size_t size)
{
    if (sodium_init() < 0) {
        return NULL;
    }

    return sodium_malloc(size);
}


void
al_secure_free(void *p)
{
    /* sodium_free() wipes, and accepts NULL */

    sodium_free(p);
}


/*
 * Writes the encoding, then a NUL if there is room for one: a result
 * below cap means out holds all of it, NUL-terminated.
 */

size_t
al_base64_encode(char *out, size_t cap, const unsigned char *in, size_t len)
{
    char      q[4];
    size_t    i, k, need, o;
    uint32_t  v;

    need = (len / 3 + (len % 3 != 0)) * 4;
    o = 0;

    for (i = 0; i < len && o < cap; i += 3) {
        v = (uint32_t) in[i] << 16;
        if (i + 1 < len) {
            v |= (uint32_t) in[i + 1] << 8;
        }
        if (i + 2 < len) {
            v |= in[i + 2];
        }

        q[0] = al_b64_chars[(v >> 18) & 0x3f];
        q[1] = al_b64_chars[(v >> 12) & 0x3f];
        q[2] = (i + 1 < len) ? al_b64_chars[(v >> 6) & 0x3f] : '=';
        q[3] = (i + 2 < len) ? al_b64_chars[v & 0x3f] : '=';

        for (k = 0; k < 4 && o < cap; k++) {
            out[o++] = q[k];
        }
    }

    if (need < cap) {
        out[need] = '\0';
    }

    return need;
}


ssize_t
al_base64_decode(unsigned char *out, const char *in, size_t len)
{
    int       c, pad;
    size_t    i, n;
    uint32_t  v, bits;

    while (len > 0 && in[len - 1] == '=') {
        len--;
    }

    pad = len % 4;

    if (pad == 1) {
        return -1;
    }

    n = 0;
    v = 0;
    bits = 0;

    for (i = 0; i < len; i++) {
        c = (unsigned char) in[i];

        if (c >= 'A' && c <= 'Z') {
            c -= 'A';

        } else if (c >= 'a' && c <= 'z') {
            c = c - 'a' + 26;

        } else if (c >= '0' && c <= '9') {
            c = c - '0' + 52;

        } else if (c == '+') {
            c = 62;

        } else if (c == '/') {
            c = 63;

        } else {
            return -1;
        }

        v = (v << 6) | (uint32_t) c;
        bits += 6;

        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char) (v >> bits);
            v &= (1u << bits) - 1;
        }
    }

    /* the last character's unused bits are zero in a canonical encoding */

    if (v != 0) {
        return -1;
    }

    return (ssize_t) n;
}
