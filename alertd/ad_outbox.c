/*
 * The outbox: one file per pending (alert, sink) in STATE/outbox.
 *
 * The name is "<sink key>-<alert id>.json", a function of what it holds,
 * so the same alert queued again for the same sink (a journal line read
 * twice after a crash) finds its file there and is not queued twice.  A
 * file is written atomically (ad_file_replace) and the directory fsync()ed
 * (ad_outbox_sync) before the journal offset that covers its line is
 * saved; it is unlinked once the sink answered 2xx.  An unlink a crash
 * undoes costs a second delivery with the same webhook-id, nothing else.
 *
 *   {"v":1, "sink":{"kind":"webhook","url":"..."}, "queued":<unix ms>,
 *    "seq":<n>, "alert":{ the webhook body }}
 *
 * Entries are kept in memory in queue order (queued, seq).  An entry
 * whose sink is no longer in the policy stays on disk and in memory,
 * and is sent if its sink comes back.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alertd.h"


#define AD_OUTBOX_VERSION  1


static int ad_outbox_load(ad_outbox_t *ob, const char *name,
    ad_entry_t **ep, char *why, size_t whysize);
static void ad_outbox_link(ad_outbox_t *ob, ad_entry_t *e);
static void ad_outbox_unlink(ad_outbox_t *ob, ad_entry_t *e);
static int ad_entry_cmp(const void *a, const void *b);
static void ad_entry_free(ad_entry_t *e);


int
ad_outbox_open(ad_outbox_t *ob, int statefd, char *err, size_t errsize)
{
    int             fd;
    DIR            *d;
    size_t          i, n, cap, len;
    ad_entry_t     *e, **v, **nv;
    struct dirent  *de;
    char            why[256], bad[AD_NAME_MAX + 8];

    memset(ob, 0, sizeof(ad_outbox_t));
    ob->seq = 1;

    ob->fd = openat(statefd, "outbox", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ob->fd == -1) {
        (void) snprintf(err, errsize, "cannot open the outbox: %s",
                        strerror(errno));
        return -1;
    }

    fd = dup(ob->fd);
    d = (fd == -1) ? NULL : fdopendir(fd);
    if (d == NULL) {
        (void) snprintf(err, errsize, "cannot list the outbox: %s",
                        strerror(errno));
        if (fd != -1) {
            (void) close(fd);
        }
        ad_outbox_close(ob);
        return -1;
    }

    v = NULL;
    n = 0;
    cap = 0;

    for ( ;; ) {
        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            break;
        }

        if (de->d_name[0] == '.') {
            /* a crash between write and rename leaves a .tmp- file */
            if (strncmp(de->d_name, ".tmp-", 5) == 0) {
                (void) unlinkat(ob->fd, de->d_name, 0);
            }
            continue;
        }

        len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 5, ".json") != 0
            || len >= AD_NAME_MAX)
        {
            /* not a name the outbox writes */
            continue;
        }

        if (ad_outbox_load(ob, de->d_name, &e, why, sizeof(why)) != 0) {
            (void) snprintf(bad, sizeof(bad), "%.*s.bad",
                            (int) (sizeof(bad) - 5), de->d_name);
            ad_log(AD_LOG_ERR, "%s is not an outbox entry (%s): renamed "
                   "to %s, it is not sent", de->d_name, why, bad);
            (void) renameat(ob->fd, de->d_name, ob->fd, bad);
            continue;
        }

        if (n == cap) {
            cap = (cap == 0) ? 64 : cap * 2;
            nv = realloc(v, cap * sizeof(ad_entry_t *));
            if (nv == NULL) {
                ad_entry_free(e);
                break;
            }
            v = nv;
        }

        v[n++] = e;
    }

    (void) closedir(d);

    if (de != NULL || errno != 0) {
        (void) snprintf(err, errsize, "cannot read the outbox: %s",
                        strerror(errno != 0 ? errno : ENOMEM));
        for (i = 0; i < n; i++) {
            ad_entry_free(v[i]);
        }
        free(v);
        ad_outbox_close(ob);
        return -1;
    }

    if (n > 0) {
        qsort(v, n, sizeof(ad_entry_t *), ad_entry_cmp);
    }

    for (i = 0; i < n; i++) {
        ad_outbox_link(ob, v[i]);
        if (v[i]->seq >= ob->seq) {
            ob->seq = v[i]->seq + 1;
        }
    }

    free(v);

    return 0;
}


static int
ad_outbox_load(ad_outbox_t *ob, const char *name, ad_entry_t **ep,
    char *why, size_t whysize)
{
    int            version;
    char          *buf;
    size_t         len;
    json_t        *o, *alert;
    json_int_t     queued, seq;
    ad_entry_t    *e;
    const char    *kind, *url;
    json_error_t   jerr;

    *ep = NULL;

    if (strlen(name) >= AD_NAME_MAX) {
        (void) snprintf(why, whysize, "name too long");
        return -1;
    }

    if (ad_file_read(ob->fd, name, AD_ENTRY_FILE_MAX, &buf, &len) != 0) {
        (void) snprintf(why, whysize, "%s", strerror(errno));
        return -1;
    }

    o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    free(buf);

    if (o == NULL) {
        (void) snprintf(why, whysize, "%s", jerr.text);
        return -1;
    }

    if (json_unpack(o, "{s:i, s:{s:s, s:s}, s:I, s:I, s:o}",
                    "v", &version, "sink", "kind", &kind, "url", &url,
                    "queued", &queued, "seq", &seq, "alert", &alert) != 0
        || version != AD_OUTBOX_VERSION || seq < 0)
    {
        (void) snprintf(why, whysize, "a member is missing or has the "
                        "wrong type");
        json_decref(o);
        return -1;
    }

    e = calloc(1, sizeof(ad_entry_t));
    if (e == NULL) {
        (void) snprintf(why, whysize, "out of memory");
        json_decref(o);
        return -1;
    }

    if (strcmp(kind, "webhook") == 0) {
        e->kind = AL_SINK_WEBHOOK;
    } else if (strcmp(kind, "alertmanager") == 0) {
        e->kind = AL_SINK_ALERTMANAGER;
    } else {
        (void) snprintf(why, whysize, "unknown sink kind");
        goto failed;
    }

    if (ad_alert_from_json(alert, &e->alert, why, whysize) != 0) {
        goto failed;
    }

    e->url = strdup(url);
    if (e->url == NULL) {
        (void) snprintf(why, whysize, "out of memory");
        goto failed;
    }

    (void) snprintf(e->name, sizeof(e->name), "%.*s",
                    (int) (sizeof(e->name) - 1), name);
    ad_sink_key(e->kind, e->url, e->key);
    e->queued_ms = queued;
    e->seq = (uint64_t) seq;

    json_decref(o);
    *ep = e;

    return 0;

failed:

    json_decref(o);
    ad_entry_free(e);

    return -1;
}


static int
ad_entry_cmp(const void *a, const void *b)
{
    const ad_entry_t  *x, *y;

    x = *(const ad_entry_t *const *) a;
    y = *(const ad_entry_t *const *) b;

    if (x->queued_ms != y->queued_ms) {
        return (x->queued_ms < y->queued_ms) ? -1 : 1;
    }

    if (x->seq != y->seq) {
        return (x->seq < y->seq) ? -1 : 1;
    }

    return 0;
}


void
ad_outbox_close(ad_outbox_t *ob)
{
    ad_entry_t  *e, *next;

    for (e = ob->head; e != NULL; e = next) {
        next = e->next;
        ad_entry_free(e);
    }

    ob->head = NULL;
    ob->tail = NULL;
    ob->n = 0;

    if (ob->fd != -1) {
        (void) close(ob->fd);
        ob->fd = -1;
    }
}


static void
ad_entry_free(ad_entry_t *e)
{
    if (e != NULL) {
        free(e->url);
        free(e);
    }
}


static void
ad_outbox_link(ad_outbox_t *ob, ad_entry_t *e)
{
    e->next = NULL;
    e->prev = ob->tail;

    if (ob->tail != NULL) {
        ob->tail->next = e;
    } else {
        ob->head = e;
    }

    ob->tail = e;
    ob->n++;
}


static void
ad_outbox_unlink(ad_outbox_t *ob, ad_entry_t *e)
{
    if (e->prev != NULL) {
        e->prev->next = e->next;
    } else {
        ob->head = e->next;
    }

    if (e->next != NULL) {
        e->next->prev = e->prev;
    } else {
        ob->tail = e->prev;
    }

    ob->n--;
}


int
ad_outbox_add(ad_outbox_t *ob, const ad_alert_t *a, al_sink_kind_t kind,
    const char *key, const char *url)
{
    int           rc;
    char         *s;
    json_t       *o, *alert;
    int64_t       now;
    ad_entry_t   *e;
    struct stat   st;
    char          name[AD_NAME_MAX];

    if ((size_t) snprintf(name, sizeof(name), "%s-%s.json", key, a->id)
        >= sizeof(name))
    {
        ad_log(AD_LOG_ERR, "alert id %s is too long to queue", a->id);
        errno = ENAMETOOLONG;
        return -1;
    }

    /*
     * A file for it means it is queued already: in memory too, since
     * every file is loaded at startup and a file goes when its entry does.
     * This is how a journal line read twice after a crash is recognized.
     */

    if (fstatat(ob->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        ad_log(AD_LOG_DEBUG, "alert %s is queued already", a->id);
        return 0;
    }

    /* the entry first: once the file exists, it must be in memory too */

    e = calloc(1, sizeof(ad_entry_t));
    if (e != NULL) {
        e->url = strdup(url);
    }

    alert = ad_alert_to_json(a);

    if (e == NULL || e->url == NULL || alert == NULL) {
        ad_entry_free(e);
        json_decref(alert);
        ad_log(AD_LOG_ERR, "cannot queue alert %s: out of memory", a->id);
        return -1;
    }

    now = ad_now_ms();

    o = json_pack("{s:i, s:{s:s, s:s}, s:I, s:I, s:o}",
                  "v", AD_OUTBOX_VERSION, "sink",
                  "kind", kind == AL_SINK_WEBHOOK ? "webhook"
                                                  : "alertmanager",
                  "url", url, "queued", (json_int_t) now,
                  "seq", (json_int_t) ob->seq, "alert", alert);
    s = (o == NULL) ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);

    if (s == NULL) {
        ad_entry_free(e);
        ad_log(AD_LOG_ERR, "cannot queue alert %s: out of memory", a->id);
        return -1;
    }

    rc = ad_file_replace(ob->fd, name, s, strlen(s));
    free(s);

    if (rc != 0) {
        ad_log(AD_LOG_ERR, "cannot queue alert %s in the outbox: %s; "
               "trying again in %d ms", a->id, strerror(errno), AD_TICK);
        ad_entry_free(e);
        return -1;
    }

    ob->dirty = 1;

    (void) snprintf(e->name, sizeof(e->name), "%.*s",
                    (int) (sizeof(e->name) - 1), name);
    (void) snprintf(e->key, sizeof(e->key), "%s", key);
    e->kind = kind;
    e->alert = *a;
    e->queued_ms = now;
    e->seq = ob->seq++;

    ad_outbox_link(ob, e);

    return 0;
}


int
ad_outbox_sync(ad_outbox_t *ob)
{
    if (!ob->dirty) {
        return 0;
    }

    if (ad_fsync_dir(ob->fd) != 0) {
        return -1;
    }

    ob->dirty = 0;

    return 0;
}


void
ad_outbox_done(ad_outbox_t *ob, ad_entry_t *e)
{
    if (unlinkat(ob->fd, e->name, 0) != 0 && errno != ENOENT) {
        ad_log(AD_LOG_ERR, "cannot remove outbox/%s: %s; it will be sent "
               "again after a restart", e->name, strerror(errno));
    }

    ad_outbox_unlink(ob, e);
    ad_entry_free(e);
}
