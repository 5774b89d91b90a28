/*
 * A Redis client's own user: its password read from a file of its own
 * and sent with AUTH <user> <password> on each new connection.  Redis's
 * ACL (conf/redis-acl.conf) gives each of airlock-agent and
 * airlock-worker only the commands and keys it uses; the default user is
 * off.  Built into airlock-agent and airlock-worker.
 */

#ifndef AR_AUTH_H
#define AR_AUTH_H

#include <stddef.h>

#include <hiredis.h>


#define AR_USER_MAX   128           /* a Redis user's name, bytes */
#define AR_PASS_MAX   256           /* a password, bytes */


int ar_user_check(const char *user, char *err, size_t size);
int ar_password_read(const char *path, char *pass, size_t size, char *err,
    size_t errsize);
int ar_auth(redisContext *c, const char *user, const char *pass, char *err,
    size_t size);
int ar_auth_file(redisContext *c, const char *user, const char *path,
    char *err, size_t size);

#endif /* AR_AUTH_H */
