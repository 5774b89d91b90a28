/*
 * AUTH as a client's own Redis user, its password from a file checked
 * whole (the agent reads it at each connect, ar_auth_file(); the worker
 * once at start, before it drops root, and keeps it).  It is one line of 1
 * to 256 bytes with no control character or space (what Redis's ACL
 * ">password" takes, and what airlock-redis-users writes: 64 hex
 * digits), a final newline allowed, in a regular file that its owner
 * alone may read: a password others may read is no longer the client's.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ar_auth.h"


/* A user's name: 1 to 128 bytes, no control character or space. */

int
ar_user_check(const char *user, char *err, size_t size)
{
    size_t  i, len;

    len = strlen(user);

    if (len == 0 || len > AR_USER_MAX) {
        snprintf(err, size, "a Redis user's name of 1 to %d bytes",
                 AR_USER_MAX);
        return -1;
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) user[i] <= 0x20 || user[i] == 0x7f) {
            snprintf(err, size, "a Redis user's name: no control "
                     "character or space");
            return -1;
        }
    }

    return 0;
}


/*
 * The password in path, into pass (size at least AR_PASS_MAX + 1).  0, or
 * -1 with err set (the file's name and what is wrong, never its bytes).
 */

int
ar_password_read(const char *path, char *pass, size_t size, char *err,
    size_t errsize)
{
    int          fd;
    char         buf[AR_PASS_MAX + 2];
    size_t       len, i;
    ssize_t      n;
    struct stat  st;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd == -1) {
        snprintf(err, errsize, "redis password file %s: %s", path,
                 strerror(errno));
        return -1;
    }

    if (fstat(fd, &st) != 0) {
        snprintf(err, errsize, "redis password file %s: %s", path,
                 strerror(errno));
        close(fd);
        return -1;
    }

    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errsize, "redis password file %s: not a regular file",
                 path);
        close(fd);
        return -1;
    }

    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        snprintf(err, errsize, "redis password file %s: group or others "
                 "may read or write it (mode %04o): its owner's alone, "
                 "chmod 0400", path, (unsigned) (st.st_mode & 07777));
        close(fd);
        return -1;
    }

    len = 0;

    while (len < sizeof(buf)) {
        n = read(fd, buf + len, sizeof(buf) - len);
        if (n == -1 && errno == EINTR) {
            continue;
        }

        if (n == -1) {
            snprintf(err, errsize, "redis password file %s: %s", path,
                     strerror(errno));
            close(fd);
            explicit_bzero(buf, sizeof(buf));
            return -1;
        }

        if (n == 0) {
            break;
        }

        len += (size_t) n;
    }

    close(fd);

    if (len > 0 && buf[len - 1] == '\n') {
        len--;
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) buf[i] <= 0x20 || buf[i] == 0x7f) {
            break;
        }
    }

    if (len == 0 || len > AR_PASS_MAX || i != len || len >= size) {
        snprintf(err, errsize, "redis password file %s: want one line of "
                 "1 to %d bytes, no control character or space", path,
                 AR_PASS_MAX);
        explicit_bzero(buf, sizeof(buf));
        return -1;
    }

    memcpy(pass, buf, len);
    pass[len] = '\0';
    explicit_bzero(buf, sizeof(buf));

    return 0;
}


/*
 * AUTH user pass on a new connection.  0, or -1 with err set: Redis's
 * refusal as it gives it ("WRONGPASS invalid username-password pair or
 * user is disabled."), or the connection's error.
 */

int
ar_auth(redisContext *c, const char *user, const char *pass, char *err,
    size_t size)
{
    int          rc;
    redisReply  *r;

    r = redisCommand(c, "AUTH %s %s", user, pass);

    if (r == NULL) {
        snprintf(err, size, "redis AUTH as %s: %s", user, c->errstr);
        return -1;
    }

    rc = 0;

    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, size, "redis AUTH as %s refused: %.*s (check its "
                 "password file against Redis's ACL file, docs/jobs.md)",
                 user, (int) r->len, r->str);
        rc = -1;

    } else if (r->type != REDIS_REPLY_STATUS) {
        snprintf(err, size, "redis AUTH as %s: an unexpected reply", user);
        rc = -1;
    }

    freeReplyObject(r);

    return rc;
}


/* The same, with the password read from path now, and wiped after. */

int
ar_auth_file(redisContext *c, const char *user, const char *path,
    char *err, size_t size)
{
    int   rc;
    char  pass[AR_PASS_MAX + 1];

    if (ar_password_read(path, pass, sizeof(pass), err, size) != 0) {
        return -1;
    }

    rc = ar_auth(c, user, pass, err, size);
    explicit_bzero(pass, sizeof(pass));

    return rc;
}
