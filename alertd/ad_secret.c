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
 * The unit gives each such credential a default, SetCredential=ID:\n (an
 * empty line), which systemd hands over when the file LoadCredential=
 * names cannot be read: without it a missing file fails the whole unit,
 * also when no sink names the secret (an appliance with Alertmanager
 * only, or no sink).  systemd refuses an empty SetCredential= value; an
 * empty line is the nearest, and it reads as an empty secret, which is
 * never a key (the policy library refuses it in nginx as well): a webhook
 * that names it stops alertd with what to do.  Any other bytes are a
 * secret, "missing", the default of older units, included: a word as a
 * default could not be told from an operator's secret of that word.
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alertd.h"


#define AD_CREDENTIALS_ROOT    "/run/credentials/"
#define AD_CREDENTIAL_OLD      "missing"    /* older units' default */


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
                            "and no keyring was given: a webhook's sealed "
                            "hmac_secret needs --keyring FILE (the "
                            "appliance key; the airlock-alertd unit gives "
                            "it with the drop-in "
                            "airlock-alertd-keyring.conf, see alerts.md), "
                            "or make it a file: secret",
                            p->file.data, sec->line, sec->name.data);
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

    /*
     * The library's reader, so that a file: secret is held to the same
     * checks here as in nginx and airlockctl check: a regular file, no
     * symbolic link, no FIFO to hang on, reachable by its owner only
     * (systemd's credentials are 0400), bounded, one trailing newline
     * dropped.
     */

    if (al_secret_read_file(path, AD_SECRET_MAX, out, outlen, why,
                            sizeof(why))
        != 0)
    {
        (void) snprintf(err, errsize, "%s:%u: secret \"%s\": %s",
                        p->file.data, sec->line, sec->name.data, why);
        return -1;
    }

    if (*outlen == 0) {
        if (id != NULL) {
            (void) snprintf(err, errsize, "%s:%u: secret \"%s\": the "
                            "credential %s is empty: systemd found no file "
                            "for it and gave the unit its default (an empty "
                            "line), or the file is empty; write the secret "
                            "to the file the unit's LoadCredential=%s: line "
                            "names and restart airlock-alertd, or remove "
                            "the webhook from alerts.sinks", p->file.data,
                            sec->line, sec->name.data, id, id);

        } else {
            (void) snprintf(err, errsize, "%s:%u: secret \"%s\": %s is "
                            "empty", p->file.data, sec->line,
                            sec->name.data, path);
        }

        al_secure_free(*out);
        *out = NULL;
        return -1;
    }

    if (id != NULL && *outlen == sizeof(AD_CREDENTIAL_OLD) - 1
        && memcmp(*out, AD_CREDENTIAL_OLD, *outlen) == 0)
    {
        ad_log(AD_LOG_WARN, "%s:%u: secret \"%s\": the credential %s is "
               "\"%s\", which older airlock-alertd units gave when its file "
               "was missing: it is used as the key; if the file is missing, "
               "the unit's default is to be an empty line "
               "(SetCredential=%s:\\n)", p->file.data, sec->line,
               sec->name.data, id, AD_CREDENTIAL_OLD, id);
    }

    return 0;
}
