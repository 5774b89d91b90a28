/*
 * The secrets alertd opens: only those its sinks name (a webhook's
 * hmac_secret), never the rest of the policy's.
 *
 * The policy is loaded without the keyring, so the library opens nothing;
 * each sink's secret is opened here on its own: a sealed one with the
 * appliance key, a file: one from its path.  Under systemd a file: secret
 * usually names another unit's credential, nginx's
 * /run/credentials/nginx.service/ID, which no other unit can read; when
 * $CREDENTIALS_DIRECTORY is set (LoadCredential= in alertd's own unit),
 * a path under /run/credentials/ is read from alertd's own copy,
 * $CREDENTIALS_DIRECTORY/ID.
 *
 * The unit gives each such credential a default, SetCredential=ID:missing,
 * which systemd hands over when the file LoadCredential= names cannot be
 * read: without it a missing file fails the whole unit, also when no sink
 * names the secret (an appliance with Alertmanager only, or no sink).
 * That default is a missing secret, never a key: a webhook that names it
 * stops alertd with what to do.
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alertd.h"


#define AD_CREDENTIALS_ROOT    "/run/credentials/"
#define AD_CREDENTIAL_MISSING  "missing"    /* the unit's SetCredential= */


static int ad_secret_read(const char *path, unsigned char **out,
    size_t *outlen, char *err, size_t errsize);


int
ad_secret_open(const al_policy_t *p, const al_secret_t *sec,
    const al_keyring_t *kr, unsigned char **out, size_t *outlen, char *err,
    size_t errsize)
{
    int          n;
    char         path[PATH_MAX], why[PATH_MAX + 128];
    const char  *dir, *id, *reason;

    *out = NULL;
    *outlen = 0;

    if (sec->sealed) {
        if (kr == NULL) {
            (void) snprintf(err, errsize, "%s:%u: secret \"%s\" is sealed "
                            "and no keyring was given", p->file.data,
                            sec->line, sec->name.data);
            return -1;
        }

        if (al_unseal(kr, sec->source.data, sec->source.len, out, outlen,
                      &reason)
            != 0)
        {
            (void) snprintf(err, errsize, "%s:%u: secret \"%s\" %s",
                            p->file.data, sec->line, sec->name.data, reason);
            return -1;
        }

        return 0;
    }

    n = snprintf(path, sizeof(path), "%s", sec->source.data);

    dir = getenv("CREDENTIALS_DIRECTORY");
    id = NULL;

    if (dir != NULL && dir[0] == '/'
        && strncmp(sec->source.data, AD_CREDENTIALS_ROOT,
                   sizeof(AD_CREDENTIALS_ROOT) - 1) == 0)
    {
        id = strrchr(sec->source.data, '/') + 1;
        n = snprintf(path, sizeof(path), "%s/%s", dir, id);
    }

    if (n < 0 || (size_t) n >= sizeof(path)) {
        (void) snprintf(err, errsize, "%s:%u: secret \"%s\": its path is "
                        "too long", p->file.data, sec->line, sec->name.data);
        return -1;
    }

    if (ad_secret_read(path, out, outlen, why, sizeof(why)) != 0) {
        (void) snprintf(err, errsize, "%s:%u: secret \"%s\": %s",
                        p->file.data, sec->line, sec->name.data, why);
        return -1;
    }

    if (id != NULL && *outlen == sizeof(AD_CREDENTIAL_MISSING) - 1
        && memcmp(*out, AD_CREDENTIAL_MISSING, *outlen) == 0)
    {
        (void) snprintf(err, errsize, "%s:%u: secret \"%s\": the "
                        "credential %s is missing: systemd found no file "
                        "for it and gave the unit its default (\"%s\"); "
                        "write the secret to the file the unit's "
                        "LoadCredential=%s: line names and restart "
                        "airlock-alertd, or remove the webhook from "
                        "alerts.sinks", p->file.data, sec->line,
                        sec->name.data, id, AD_CREDENTIAL_MISSING, id);
        al_secure_free(*out);
        *out = NULL;
        *outlen = 0;
        return -1;
    }

    return 0;
}


/*
 * The library's reader, so that a file: secret is held to the same checks
 * here as in nginx and airlockctl check: a regular file, no symbolic link,
 * no FIFO to hang on, reachable by its owner only (systemd's credentials
 * are 0400), bounded, one trailing newline dropped.
 */

static int
ad_secret_read(const char *path, unsigned char **out, size_t *outlen,
    char *err, size_t errsize)
{
    if (al_secret_read_file(path, AD_SECRET_MAX, out, outlen, err, errsize)
        != 0)
    {
        return -1;
    }

    if (*outlen == 0) {
        (void) snprintf(err, errsize, "%s is empty", path);
        al_secure_free(*out);
        *out = NULL;
        return -1;
    }

    return 0;
}
