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
 *    "seq":<n>, "alert":{ the webhook body },
 *    "clock":{"boot":"<boot id>","off":<ms>}}
 *
 * "clock" is the wall - boot clock when alertd read the alert: a step
 * of the wall clock since, in this boot, moves the times Alertmanager
 * is sent (ad_am_stepped()).
 *
 * Entries are kept in memory in queue order (seq), those marked
 * "first":true ahead of the rest.  An entry whose sink is no longer in
 * the policy stays on disk and in memory, and is sent if its sink comes
 * back.
 *
 * A sink holds at most ob->max entries (--outbox-max): a sink that is
 * down for days while new groups keep coming must not fill the disk that
 * the appliance's other logs share, nor our memory.  When it is full, the
 * alerts it has are kept and new ones are not queued for it: the first
 * alerts of an attack say how it began, which later ones rarely add to.
 * What is given up is never silent:
 *
 *   - a folded alert (a group's repeats) whose group has a folded alert
 *     waiting, queued by this process and never sent, is folded into
 *     that one: counts and windows add up, so the fact that a known
 *     storm goes on is kept;
 *   - any other alert is dropped and counted per sink (ad_sinkq_t: how
 *     many, how many critical, the first and the last), logged when
 *     dropping begins, and saved with the journal offset (ad_state.c), so
 *     a count is neither lost nor doubled by a restart or a crash;
 *   - once the sink has room again (it took an alert), ad_outbox_report()
 *     queues an "alerts_dropped" alert for it, ahead of its queue, and
 *     logs the summary: the sink's operator learns of the loss first.
 *
 * An unidentified peer's alert (no client) is queued only while the
 * sink holds fewer than ad_outbox_room() alerts, half of ob->max rounded
 * up: the rest is kept for the alerts of the policy's clients.  Anyone
 * who reaches the proxy's port can raise a peer alert, from as many
 * addresses as it has (cheap with IPv6), each a group of its own; that
 * must not crowd out a client's quarantine while the sink is down.  A
 * client's alerts are few (a group per kind and reason, repeats folded),
 * and only a client is ever quarantined, so every critical alert that
 * nginx writes has the reserve.  Beyond the share a peer's alert is
 * folded or dropped and counted as at the bound.
 *
 * Only entries queued by this process and not yet sent are folded into:
 * one loaded from disk may have been delivered just before a crash, and
 * one an attempt has sent may have reached the sink though the attempt
 * failed (the connection closed, or the time ran out, before the
 * answer); a sink that saw its id already would drop the counts added.
 *
 * A fold rewrites the entry's file at once, and the group's window that
 * made the folded alert is saved with the journal offset only after it:
 * a crash in between makes the same folded alert again after the
 * restart.  So the file says the latest alert folded into it
 * ("merged"), and a folded alert of the same group not later than that
 * one is taken as folded already, neither counted as dropped nor
 * queued on its own.  That takes the file: an entry folded into is not
 * sent (ad_deliver.c) until the state is saved after the fold.  Were it
 * sent and removed while the save fails (a full disk), then alertd
 * stopped or crashed, the alerts folded into it would be made again,
 * and sent again under other ids, or counted as dropped.
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
static int ad_outbox_bad(ad_outbox_t *ob, const char *name,
    const char *why);
static ssize_t ad_outbox_damaged(const ad_outbox_t *ob, const char *name);
static void ad_outbox_undamaged(ad_outbox_t *ob, size_t i);
static int ad_outbox_write(ad_outbox_t *ob, const ad_entry_t *e);
static void ad_outbox_link(ad_outbox_t *ob, ad_entry_t *e);
static void ad_outbox_unlink(ad_outbox_t *ob, ad_entry_t *e);
static int ad_outbox_in_the_way(ad_outbox_t *ob, size_t i,
    const char *id, const ad_sinkq_t *q);
static size_t ad_outbox_room(const ad_outbox_t *ob, const ad_alert_t *a);
static size_t ad_outbox_share(const ad_outbox_t *ob);
static int ad_outbox_full(ad_outbox_t *ob, ad_sinkq_t *q,
    const ad_alert_t *a);
static int ad_outbox_fold(ad_outbox_t *ob, ad_sinkq_t *q,
    const ad_alert_t *a);
static int ad_same_group(const ad_alert_t *a, const ad_alert_t *b);
static const char *ad_fid_sep(const char *id);
static int ad_outbox_queued(ad_outbox_t *ob, const char *name);
static int ad_folded_seq(const char *id, unsigned long *seq);
static ad_entry_t *ad_outbox_folded_in(ad_outbox_t *ob, const char *key,
    const ad_alert_t *a);
static ad_sinkq_t *ad_sinkq_get(ad_outbox_t *ob, const char *key,
    al_sink_kind_t kind, const char *url, int create);
static int ad_entry_cmp(const void *a, const void *b);
static void ad_entry_free(ad_entry_t *e);


int
ad_outbox_open(ad_outbox_t *ob, int statefd, size_t max, char *err,
    size_t errsize)
{
    int             fd, rc;
    DIR            *d;
    size_t          i, n, cap, len;
    ad_entry_t     *e, **v, **nv;
    struct dirent  *de;
    char            why[256];

    memset(ob, 0, sizeof(ad_outbox_t));
    ob->seq = 1;
    ob->max = max;

    ob->fd = openat(statefd, "outbox", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ob->fd == -1) {
        ob->errnum = errno;
        (void) snprintf(err, errsize, "cannot open the outbox: %s",
                        strerror(errno));
        return -1;
    }

    fd = dup(ob->fd);
    d = (fd == -1) ? NULL : fdopendir(fd);
    if (d == NULL) {
        ob->errnum = errno;
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

        rc = ad_outbox_load(ob, de->d_name, &e, why, sizeof(why));

        if (rc == -2) {
            ob->errnum = errno;
            (void) snprintf(err, errsize, "cannot read the outbox: "
                            "outbox/%s: %s", de->d_name, why);
            break;
        }

        if (rc != 0) {
            if (ad_outbox_bad(ob, de->d_name, why) != 0) {
                ob->errnum = ENOMEM;
                (void) snprintf(err, errsize, "cannot load the outbox: "
                                "out of memory");
                break;
            }
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
        if (ob->errnum == 0) {
            ob->errnum = (errno != 0) ? errno : ENOMEM;
            (void) snprintf(err, errsize, "cannot read the outbox: %s",
                            strerror(ob->errnum));
        }

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
        if (ad_sinkq_get(ob, v[i]->key, v[i]->kind, v[i]->url, 1) == NULL) {
            ob->errnum = ENOMEM;
            (void) snprintf(err, errsize, "cannot load the outbox: out of "
                            "memory");
            for ( /* void */ ; i < n; i++) {
                ad_entry_free(v[i]);
            }
            free(v);
            ad_outbox_close(ob);
            return -1;
        }

        ad_outbox_link(ob, v[i]);
        if (v[i]->seq >= ob->seq) {
            ob->seq = v[i]->seq + 1;
        }
    }

    free(v);

    return 0;
}


/*
 * Returns 0; -1 when the file is no outbox entry (the caller renames it
 * *.bad); -2 when it could not be read for a reason of the moment, errno
 * set (the caller stops: the file stays queued for the next start).
 */

static int
ad_outbox_load(ad_outbox_t *ob, const char *name, ad_entry_t **ep,
    char *why, size_t whysize)
{
    int            version, err, clock;
    char          *buf;
    size_t         len;
    json_t        *o, *alert, *first, *merged;
    json_int_t     queued, seq, off;
    ad_entry_t    *e;
    const char    *kind, *url;
    json_error_t   jerr;

    *ep = NULL;

    if (strlen(name) >= AD_NAME_MAX) {
        (void) snprintf(why, whysize, "name too long");
        return -1;
    }

    if (ad_file_read(ob->fd, name, AD_ENTRY_FILE_MAX, &buf, &len) != 0) {
        err = errno;
        (void) snprintf(why, whysize, "%s", ad_file_strerror(err));
        errno = err;

        /*
         * Out of descriptors or memory, an I/O error: nothing says the
         * file is bad, and renamed *.bad its alert would never be sent.
         */

        switch (err) {
        case EMFILE:
        case ENFILE:
        case ENOMEM:
        case EIO:
        case EAGAIN:
        case EINTR:
            return -2;
        default:
            return -1;
        }
    }

    o = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
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

    /* "first" came with --outbox-max: an older file has none */
    first = json_object_get(o, "first");
    if (first != NULL && !json_is_boolean(first)) {
        (void) snprintf(why, whysize, "\"first\" is not a boolean");
        json_decref(o);
        return -1;
    }

    /* "merged" came later too: the latest alert folded into this one */
    merged = json_object_get(o, "merged");
    if (merged != NULL
        && (!json_is_string(merged)
            || json_string_length(merged) > AD_FID_MAX))
    {
        (void) snprintf(why, whysize, "\"merged\" is not an alert id");
        json_decref(o);
        return -1;
    }

    /* "clock" came later still; of another boot it says nothing */
    clock = ad_clock_read(o, &off, why, whysize);
    if (clock < 0) {
        json_decref(o);
        return -1;
    }

    e = calloc(1, sizeof(ad_entry_t));
    if (e == NULL) {
        (void) snprintf(why, whysize, "out of memory");
        json_decref(o);
        return -1;
    }

    e->first = json_is_true(first);

    if (merged != NULL) {
        (void) snprintf(e->merged, sizeof(e->merged), "%s",
                        json_string_value(merged));
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

    if (clock == 1) {
        e->alert.clock_off = off;
        e->alert.clock_known = 1;
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


/*
 * A file that is no outbox entry is renamed *.bad and said.  Where that
 * fails (a directory or a file in the way of the new name, a file
 * system gone read-only) it stays, said once with the reason, and its
 * name is kept: the file is not sent and, unlike an entry's, does not
 * mean that its alert is queued.  That alert, read again from the
 * journal, is queued in its place (ad_outbox_add()), or said not to be.
 * Returns -1 only when the name cannot be kept (no memory).
 */

static int
ad_outbox_bad(ad_outbox_t *ob, const char *name, const char *why)
{
    int     err;
    char  **v, *copy;
    char    bad[AD_NAME_MAX + 8];

    (void) snprintf(bad, sizeof(bad), "%.*s.bad", (int) (sizeof(bad) - 5),
                    name);

    if (renameat(ob->fd, name, ob->fd, bad) == 0) {
        ad_log(AD_LOG_ERR, "%s is not an outbox entry (%s): renamed to %s, "
               "it is not sent", name, why, bad);
        return 0;
    }

    err = errno;

    ad_log(AD_LOG_ERR, "%s is not an outbox entry (%s) and cannot be "
           "renamed to %s: %s; it is not sent and stays in the outbox, "
           "where it holds no alert: move it away", name, why, bad,
           strerror(err));

    copy = strdup(name);
    v = (copy == NULL) ? NULL
                       : realloc(ob->damaged,
                                 (ob->ndamaged + 1) * sizeof(char *));
    if (v == NULL) {
        free(copy);
        return -1;
    }

    ob->damaged = v;
    ob->damaged[ob->ndamaged++] = copy;

    return 0;
}


/* the index of name among the damaged files, or -1 */

static ssize_t
ad_outbox_damaged(const ad_outbox_t *ob, const char *name)
{
    size_t  i;

    for (i = 0; i < ob->ndamaged; i++) {
        if (strcmp(ob->damaged[i], name) == 0) {
            return (ssize_t) i;
        }
    }

    return -1;
}


static void
ad_outbox_undamaged(ad_outbox_t *ob, size_t i)
{
    free(ob->damaged[i]);
    ob->damaged[i] = ob->damaged[--ob->ndamaged];
}


static int
ad_entry_cmp(const void *a, const void *b)
{
    const ad_entry_t  *x, *y;

    x = *(const ad_entry_t *const *) a;
    y = *(const ad_entry_t *const *) b;

    if (x->first != y->first) {
        return x->first ? -1 : 1;
    }

    /*
     * The sequence number, not the wall clock: an alert queued before a
     * step back of the clock has a later "queued" time than those after.
     * A restart takes it up after the largest one queued, so it grows
     * with the queue.
     */

    if (x->seq != y->seq) {
        return (x->seq < y->seq) ? -1 : 1;
    }

    if (x->queued_ms != y->queued_ms) {
        return (x->queued_ms < y->queued_ms) ? -1 : 1;
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

    free(ob->q);
    ob->q = NULL;
    ob->nq = 0;

    while (ob->ndamaged > 0) {
        free(ob->damaged[--ob->ndamaged]);
    }

    free(ob->damaged);
    ob->damaged = NULL;

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


/*
 * At the tail; a "first" entry after the other first ones, before the
 * rest.  Its sinkq exists.
 */

static void
ad_outbox_link(ad_outbox_t *ob, ad_entry_t *e)
{
    ad_entry_t  *p;
    ad_sinkq_t  *q;

    p = NULL;

    if (e->first) {
        for (p = ob->head; p != NULL && p->first; p = p->next) {
            /* void */
        }
    }

    if (p != NULL) {
        /* before p */
        e->next = p;
        e->prev = p->prev;

        if (p->prev != NULL) {
            p->prev->next = e;
        } else {
            ob->head = e;
        }

        p->prev = e;

    } else {
        e->next = NULL;
        e->prev = ob->tail;

        if (ob->tail != NULL) {
            ob->tail->next = e;
        } else {
            ob->head = e;
        }

        ob->tail = e;
    }

    ob->n++;

    q = ad_sinkq_get(ob, e->key, e->kind, NULL, 0);
    if (q != NULL) {
        q->n++;
    }
}


static void
ad_outbox_unlink(ad_outbox_t *ob, ad_entry_t *e)
{
    ad_sinkq_t  *q;

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

    if (e->unsaved) {
        e->unsaved = 0;
        ob->unsaved--;
    }

    q = ad_sinkq_get(ob, e->key, e->kind, NULL, 0);
    if (q != NULL && q->n > 0) {
        q->n--;
    }
}


/*
 * Returns AD_OUTBOX_QUEUED (or it was queued already), AD_OUTBOX_FOLDED,
 * AD_OUTBOX_DROPPED, or -1 when it could not be queued: the caller tries
 * the same alert again later, and none of these counts it twice.  A drop
 * is only marked: the caller counts it with ad_outbox_count() once every
 * sink has the alert, or forgets it when one failed and the alert is to
 * be tried again (after other alerts, maybe, that a count would then
 * fall between).
 */

int
ad_outbox_add(ad_outbox_t *ob, const ad_alert_t *a, al_sink_kind_t kind,
    const char *key, const char *url)
{
    ssize_t       d;
    ad_entry_t   *e;
    ad_sinkq_t   *q;
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
     * A damaged file that could not be renamed *.bad holds no alert: it
     * is written over.
     */

    if (ad_outbox_queued(ob, name)) {
        ad_log(AD_LOG_DEBUG, "alert %s is queued already", a->id);
        return AD_OUTBOX_QUEUED;
    }

    /*
     * Its counts may be in a queued alert already: folded into it before
     * a crash that lost the save of its group, or by another sink's turn
     * of this emit, which failed.
     */

    if (a->folded) {
        e = ad_outbox_folded_in(ob, key, a);
        if (e != NULL) {
            ad_log(AD_LOG_INFO, "folded alert %s is counted in %s "
                   "already (outbox/%s)", a->id, e->alert.id, e->name);
            return AD_OUTBOX_FOLDED;
        }
    }

    q = ad_sinkq_get(ob, key, kind, url, 1);

    if (q == NULL) {
        ad_fail(&ob->queue_fail, AD_LOG_ERR, "cannot queue alert %s: out "
                "of memory", a->id);
        return -1;
    }

    if (q->n >= ad_outbox_room(ob, a)) {
        return ad_outbox_full(ob, q, a);
    }

    d = ad_outbox_damaged(ob, name);
    if (d >= 0 && ad_outbox_in_the_way(ob, (size_t) d, a->id, q)) {
        return AD_OUTBOX_BLOCKED;
    }

    /* the entry first: once the file exists, it must be in memory too */

    e = calloc(1, sizeof(ad_entry_t));
    if (e != NULL) {
        e->url = strdup(url);
    }

    if (e == NULL || e->url == NULL) {
        ad_entry_free(e);
        ad_fail(&ob->queue_fail, AD_LOG_ERR, "cannot queue alert %s: out "
                "of memory", a->id);
        return -1;
    }

    (void) snprintf(e->name, sizeof(e->name), "%s", name);
    (void) snprintf(e->key, sizeof(e->key), "%s", key);
    e->kind = kind;
    e->alert = *a;
    e->queued_ms = ad_now_ms();
    e->seq = ob->seq;
    e->fresh = 1;

    if (ad_outbox_write(ob, e) != 0) {
        ad_entry_free(e);
        return -1;
    }

    ob->seq++;
    ad_outbox_link(ob, e);

    if (d >= 0) {
        ad_log(AD_LOG_WARN, "outbox/%s, which was no outbox entry, is "
               "replaced by alert %s queued again", name, a->id);
        ad_outbox_undamaged(ob, (size_t) d);
    }

    return AD_OUTBOX_QUEUED;
}


/*
 * Whether the damaged file i holds its name so that no entry can be
 * written there: a directory, which a file cannot be renamed over.  The
 * alert is then not queued for the sink q, said once, and the other
 * alerts go on.  The name is no longer kept as damaged: should the
 * alert be read again, the directory is taken for it, as an entry's
 * file would be.  Anything else is replaced by the new file.
 */

static int
ad_outbox_in_the_way(ad_outbox_t *ob, size_t i, const char *id,
    const ad_sinkq_t *q)
{
    struct stat  st;

    if (fstatat(ob->fd, ob->damaged[i], &st, AT_SYMLINK_NOFOLLOW) != 0
        || !S_ISDIR(st.st_mode))
    {
        return 0;
    }

    ad_log(AD_LOG_ERR, "alert %s is not queued for %s %s: outbox/%s, "
           "which is no outbox entry, holds its name and cannot be "
           "replaced (a directory); move it away", id,
           ad_sink_kind_name(q->kind), q->label, ob->damaged[i]);

    ad_outbox_undamaged(ob, i);

    return 1;
}


/* writes e's file; logs why not */

static int
ad_outbox_write(ad_outbox_t *ob, const ad_entry_t *e)
{
    int      rc;
    char    *s;
    json_t  *o, *alert;

    alert = ad_alert_to_json(&e->alert);
    o = (alert == NULL)
        ? NULL
        : json_pack("{s:i, s:{s:s, s:s}, s:I, s:I, s:o}",
                    "v", AD_OUTBOX_VERSION, "sink",
                    "kind", ad_sink_kind_name(e->kind), "url", e->url,
                    "queued", (json_int_t) e->queued_ms,
                    "seq", (json_int_t) e->seq, "alert", alert);

    if (o != NULL && e->first
        && json_object_set_new(o, "first", json_true()) != 0)
    {
        json_decref(o);
        o = NULL;
    }

    if (o != NULL && e->merged[0] != '\0'
        && json_object_set_new(o, "merged", json_string(e->merged)) != 0)
    {
        json_decref(o);
        o = NULL;
    }

    if (o != NULL && e->alert.clock_known && ad_boot_id()[0] != '\0'
        && json_object_set_new(o, "clock",
                               json_pack("{s:s, s:I}", "boot", ad_boot_id(),
                                         "off",
                                         (json_int_t) e->alert.clock_off))
           != 0)
    {
        json_decref(o);
        o = NULL;
    }

    s = (o == NULL) ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);

    if (s == NULL) {
        ad_fail(&ob->queue_fail, AD_LOG_ERR, "cannot queue alert %s: out "
                "of memory", e->alert.id);
        errno = ENOMEM;
        return -1;
    }

    rc = ad_file_replace(ob->fd, e->name, s, strlen(s));
    free(s);

    if (rc != 0) {
        if (ob->once) {
            /* --once reads no further: what holds the alert stays */
            ad_fail(&ob->queue_fail, AD_LOG_ERR, "cannot queue alert %s in "
                    "the outbox: %s; this run stops reading here, the next "
                    "run tries it again", e->alert.id, strerror(errno));
            return -1;
        }

        ad_fail(&ob->queue_fail, AD_LOG_ERR, "cannot queue alert %s in the "
                "outbox: %s; trying again in %d ms", e->alert.id,
                strerror(errno), AD_BLOCKED_WAIT);
        return -1;
    }

    ad_fail_over(&ob->queue_fail, "queueing alerts in the outbox");
    ob->dirty = 1;

    return 0;
}


/*
 * How many alerts a sink may hold for a to be queued: ob->max, or for an
 * unidentified peer's alert half of it, rounded up (3 of 5, 5000 of
 * 10000), so that the other half is kept for the clients' alerts.
 */

static size_t
ad_outbox_room(const ad_outbox_t *ob, const ad_alert_t *a)
{
    if (a->has_client || a->kind == AD_KIND_DROPPED) {
        return ob->max;
    }

    return ad_outbox_share(ob);
}


static size_t
ad_outbox_share(const ad_outbox_t *ob)
{
    return ob->max - ob->max / 2;
}


/*
 * the sink q has as many alerts queued as a may find there
 * (ad_outbox_room()): fold a into one, or drop it
 */

static int
ad_outbox_full(ad_outbox_t *ob, ad_sinkq_t *q, const ad_alert_t *a)
{
    if (a->folded) {
        switch (ad_outbox_fold(ob, q, a)) {
        case 0:
            return AD_OUTBOX_FOLDED;
        case -1:
            return -1;
        default:
            break;
        }
    }

    q->pending = 1;
    q->pending_peer = (q->n < ob->max);

    return AD_OUTBOX_DROPPED;
}


/*
 * The alert a, marked dropped by ad_outbox_add() for some sinks, is
 * counted for them if every sink took it (taken), else forgotten: the
 * same alert comes again.
 */

void
ad_outbox_count(ad_outbox_t *ob, const ad_alert_t *a, int taken)
{
    size_t       i;
    int64_t      now;
    unsigned     share;
    ad_sinkq_t  *q;
    char         since[AD_TIME_MAX];

    for (i = 0; i < ob->nq; i++) {
        q = &ob->q[i];

        if (!q->pending) {
            continue;
        }

        share = q->pending_peer;
        q->pending = 0;
        q->pending_peer = 0;

        if (!taken) {
            continue;
        }

        if (q->dropped == 0) {
            now = ad_now_ms();
            ad_time_format(since, sizeof(since), now);

            memset(&q->d, 0, sizeof(ad_dropped_t));
            q->since_ms = now;
            (void) snprintf(q->d.since, sizeof(q->d.since), "%s", since);
            (void) snprintf(q->d.first_id, sizeof(q->d.first_id), "%s",
                            a->id);
            (void) snprintf(q->d.first_time, sizeof(q->d.first_time), "%s",
                            a->time);

            if (share) {
                ad_log(AD_LOG_WARN, "%s %s: %zu alert(s) queued, the most "
                       "an unidentified peer's alert may find (half of "
                       "--outbox-max %zu; the rest is kept for the "
                       "clients' alerts): alert %s and the new alerts "
                       "after it that do not fit are not queued for it "
                       "but counted (repeats of a queued group are folded "
                       "into it), until it takes one; the journal keeps "
                       "them", ad_sink_kind_name(q->kind), q->label, q->n,
                       ob->max, a->id);

            } else {
                ad_log(AD_LOG_WARN, "%s %s: %zu alert(s) queued, the most "
                       "--outbox-max allows: alert %s and the new alerts "
                       "after it are not queued for it but counted "
                       "(repeats of a queued group are folded into it), "
                       "until it takes one; the journal keeps them",
                       ad_sink_kind_name(q->kind), q->label, q->n, a->id);
            }
        }

        q->dropped++;
        if (a->critical) {
            q->d.critical++;
        }

        if (!a->has_client) {
            q->peers++;
        }

        (void) snprintf(q->d.last_id, sizeof(q->d.last_id), "%s", a->id);
        (void) snprintf(q->d.last_time, sizeof(q->d.last_time), "%s",
                        a->time);

        ad_log(AD_LOG_DEBUG, "alert %s not queued for %s %s: its outbox is "
               "full (%lld dropped since %s)", a->id,
               ad_sink_kind_name(q->kind), q->label, (long long) q->dropped,
               q->d.since);
    }
}


/*
 * Whether the outbox has the file name, or, for an id alertd makes
 * (AD_FID_SEP), the file of the same alert that an alertd older than
 * that separator named with '-' ("<key>-A-2.json" for "<key>-A~2.json"):
 * left queued by it and made again after a crash that lost its save,
 * such an alert would otherwise be queued a second time under the new
 * id.  That file must hold an alert alertd made (folded, or a report of
 * drops): a journal alert's id may be "A-2" too, and is another alert.
 * Every file is in memory (ad_outbox_open()), under its name, but a
 * damaged one that could not be renamed *.bad (ob->damaged).
 */

static int
ad_outbox_queued(ad_outbox_t *ob, const char *name)
{
    char         old[AD_NAME_MAX], *p;
    ad_entry_t  *e;
    struct stat  st;

    if (fstatat(ob->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        return ad_outbox_damaged(ob, name) < 0;
    }

    if (strchr(name, AD_FID_SEP) == NULL) {
        return 0;
    }

    (void) snprintf(old, sizeof(old), "%s", name);

    for (p = strchr(old, AD_FID_SEP); p != NULL; p = strchr(p, AD_FID_SEP)) {
        *p = '-';
    }

    for (e = ob->head; e != NULL; e = e->next) {
        if (strcmp(e->name, old) == 0
            && (e->alert.folded || e->alert.kind == AD_KIND_DROPPED))
        {
            return 1;
        }
    }

    return 0;
}


/*
 * Folds the folded alert a into the latest folded alert of its group
 * queued for the sink q by this process and never sent (tried: an
 * attempt, in flight or failed, sent it).  Returns 0, 1 when there is
 * none, -1 when its file could not be written (it is then as it was).
 */

static int
ad_outbox_fold(ad_outbox_t *ob, ad_sinkq_t *q, const ad_alert_t *a)
{
    ad_entry_t  *e;
    ad_alert_t   old;
    char         merged[AD_FID_MAX + 1];

    for (e = ob->tail; e != NULL; e = e->prev) {
        if (e->fresh && !e->tried && e->alert.folded
            && strcmp(e->key, q->key) == 0 && ad_same_group(&e->alert, a))
        {
            break;
        }
    }

    if (e == NULL) {
        return 1;
    }

    /* the rest is the latest alert's, as in a folded alert */

    old = e->alert;
    memcpy(merged, e->merged, sizeof(merged));

    e->alert = *a;
    memcpy(e->alert.id, old.id, sizeof(old.id));
    e->alert.count = old.count + a->count;
    e->alert.window = old.window + a->window;
    (void) snprintf(e->merged, sizeof(e->merged), "%s", a->id);

    /* the counts and what they hold in one file */

    if (ad_outbox_write(ob, e) != 0) {
        e->alert = old;
        memcpy(e->merged, merged, sizeof(merged));
        return -1;
    }

    if (!e->unsaved) {
        e->unsaved = 1;
        ob->unsaved++;
    }

    ad_log(AD_LOG_INFO, "folded alert %s into %s, queued for %s %s: its "
           "outbox is full%s (count %lld in %lld s)", a->id, e->alert.id,
           ad_sink_kind_name(q->kind), q->label,
           (q->n < ob->max) ? " for an unidentified peer's alert" : "",
           (long long) e->alert.count, (long long) e->alert.window);

    return 0;
}


/*
 * Folded alerts of one group have ids "<first id>~<n>" (ad_group.c):
 * the same first id is the same group.
 */

static int
ad_same_group(const ad_alert_t *a, const ad_alert_t *b)
{
    const char  *x, *y;

    x = ad_fid_sep(a->id);
    y = ad_fid_sep(b->id);

    return x != NULL && y != NULL && x - a->id == y - b->id
           && memcmp(a->id, b->id, (size_t) (x - a->id)) == 0
           && a->kind == b->kind;
}


/*
 * The '~' before n in a folded alert's id; an alertd older than it
 * wrote '-', which a first id may hold too: the last one is n's.
 */

static const char *
ad_fid_sep(const char *id)
{
    const char  *p;

    p = strrchr(id, AD_FID_SEP);

    return (p != NULL) ? p : strrchr(id, '-');
}


/* n of a folded alert's id "<first id>~<n>"; returns 0 or -1 */

static int
ad_folded_seq(const char *id, unsigned long *seq)
{
    char        *end;
    const char  *p;

    p = ad_fid_sep(id);
    if (p == NULL || p[1] < '0' || p[1] > '9') {
        return -1;
    }

    errno = 0;
    *seq = strtoul(p + 1, &end, 10);

    return (errno != 0 || *end != '\0') ? -1 : 0;
}


/*
 * The entry for the sink key whose counts hold the folded alert a: one
 * of its group into which a, or a later alert of the group, was folded.
 * A group's folded alerts are made in order, each holding the repeats
 * of its own window, so a later one folded in means a is in too.
 */

static ad_entry_t *
ad_outbox_folded_in(ad_outbox_t *ob, const char *key, const ad_alert_t *a)
{
    ad_entry_t     *e;
    unsigned long   n, m;

    if (ad_folded_seq(a->id, &n) != 0) {
        return NULL;
    }

    for (e = ob->head; e != NULL; e = e->next) {
        if (e->merged[0] != '\0' && strcmp(e->key, key) == 0
            && ad_same_group(&e->alert, a)
            && ad_folded_seq(e->merged, &m) == 0 && m >= n)
        {
            return e;
        }
    }

    return NULL;
}


/*
 * Once the sink has room again, queues the report of what was dropped
 * for it, ahead of the alerts it has queued.  Its id is a function of
 * the sink and of when dropping began: after a crash between this file
 * and the state file that resets the count, the report is found queued
 * already and not made twice.  It is looked for first, whether the
 * sink has room or not (the report itself takes a place): until the
 * count is reset, alerts dropped after the restart would be added to a
 * count that the report holds already, and told in a second report
 * under the same id.  Returns 1 when the count was reset (the state
 * must be saved), 0 when there is nothing to do, -1 on failure.
 */

int
ad_outbox_report(ad_outbox_t *ob, al_sink_kind_t kind, const char *key,
    const char *url)
{
    ssize_t      d;
    int64_t      first, last;
    ad_entry_t  *e;
    ad_sinkq_t  *q;
    char         name[AD_NAME_MAX];

    q = ad_sinkq_get(ob, key, kind, url, 0);

    if (q == NULL || q->dropped == 0) {
        return 0;
    }

    (void) snprintf(name, sizeof(name), "%s-dropped%c%s-%lld.json", key,
                    AD_FID_SEP, key, (long long) q->since_ms);

    if (ad_outbox_queued(ob, name)) {
        ad_log(AD_LOG_INFO, "the report %s of %lld alert(s) dropped for "
               "%s %s is queued already", name, (long long) q->dropped,
               ad_sink_kind_name(q->kind), q->label);
        goto reset;
    }

    /*
     * A count of unidentified peers' alerts only is told once the sink
     * is below their share again, not in the place kept for the
     * clients: else a flood could fill that place with reports.
     */

    if (q->n >= ((q->peers == q->dropped) ? ad_outbox_share(ob) : ob->max))
    {
        return 0;
    }

    d = ad_outbox_damaged(ob, name);
    if (d >= 0
        && ad_outbox_in_the_way(ob, (size_t) d, "of dropped alerts", q))
    {
        ad_log(AD_LOG_ERR, "%s %s: %lld alert(s) (%lld critical) were not "
               "queued for it while its outbox was full, from %s (alert "
               "%s) to %s (alert %s); no report tells it so",
               ad_sink_kind_name(q->kind), q->label, (long long) q->dropped,
               (long long) q->d.critical, q->d.first_time, q->d.first_id,
               q->d.last_time, q->d.last_id);
        goto reset;
    }

    e = calloc(1, sizeof(ad_entry_t));
    if (e != NULL) {
        e->url = strdup(url);
    }

    if (e == NULL || e->url == NULL) {
        ad_entry_free(e);
        ad_fail(&ob->queue_fail, AD_LOG_ERR, "cannot queue the report of "
                "dropped alerts: out of memory");
        return -1;
    }

    (void) snprintf(e->alert.id, sizeof(e->alert.id), "dropped%c%s-%lld",
                    AD_FID_SEP, key, (long long) q->since_ms);
    (void) snprintf(e->name, sizeof(e->name), "%s", name);
    (void) snprintf(e->key, sizeof(e->key), "%s", key);
    e->kind = kind;
    e->queued_ms = ad_now_ms();
    e->seq = ob->seq;
    e->first = 1;
    e->fresh = 1;

    e->alert.time_ms = e->queued_ms;
    ad_time_format(e->alert.time, sizeof(e->alert.time), e->queued_ms);
    e->alert.clock_off = e->queued_ms - ad_boot_ms();
    e->alert.clock_known = 1;
    e->alert.kind = AD_KIND_DROPPED;
    e->alert.critical = (q->d.critical > 0);
    e->alert.reason_len = (size_t) snprintf(e->alert.reason,
                                            sizeof(e->alert.reason),
                                            "outbox_full");
    e->alert.count = q->dropped;
    e->alert.dropped = q->d;

    if (ad_time_parse(q->d.first_time, &first) == 0
        && ad_time_parse(q->d.last_time, &last) == 0 && last > first)
    {
        e->alert.window = (last - first + 999) / 1000;
    }

    if (ad_outbox_write(ob, e) != 0) {
        ad_entry_free(e);
        return -1;
    }

    ob->seq++;
    ad_outbox_link(ob, e);

    if (d >= 0) {
        ad_outbox_undamaged(ob, (size_t) d);
    }

    ad_log(AD_LOG_WARN, "%s %s: %lld alert(s) (%lld critical) were not "
           "queued for it while its outbox was full, from %s (alert %s) "
           "to %s (alert %s); it has room again, alert %s tells it so",
           ad_sink_kind_name(q->kind), q->label, (long long) q->dropped,
           (long long) q->d.critical, q->d.first_time, q->d.first_id,
           q->d.last_time, q->d.last_id, e->alert.id);

reset:

    q->dropped = 0;
    q->peers = 0;
    q->since_ms = 0;
    memset(&q->d, 0, sizeof(ad_dropped_t));

    return 1;
}


/* at start: what is dropped and not told yet, and sinks over the cap */

void
ad_outbox_pending(const ad_outbox_t *ob)
{
    size_t             i;
    const ad_sinkq_t  *q;

    for (i = 0; i < ob->nq; i++) {
        q = &ob->q[i];

        if (q->dropped > 0) {
            ad_log(AD_LOG_WARN, "%s %s: %lld alert(s) (%lld critical) "
                   "not queued since %s while its outbox was full; it is "
                   "told once it has room", ad_sink_kind_name(q->kind),
                   q->label, (long long) q->dropped,
                   (long long) q->d.critical, q->d.since);
        }

        if (q->n > ob->max) {
            ad_log(AD_LOG_WARN, "%s %s: %zu alert(s) queued, more than "
                   "--outbox-max %zu: all are kept, new ones are not "
                   "queued until it is below", ad_sink_kind_name(q->kind),
                   q->label, q->n, ob->max);
        }
    }
}


/*
 * [{"sink":KEY,"kind":"webhook","label":URL,"count":N,"since":MS,
 *   "dropped":{ as in the report }}]: only sinks with a count
 */

json_t *
ad_outbox_drops_to_json(const ad_outbox_t *ob)
{
    size_t             i;
    json_t            *arr, *o;
    const ad_sinkq_t  *q;

    arr = json_array();
    if (arr == NULL) {
        return NULL;
    }

    for (i = 0; i < ob->nq; i++) {
        q = &ob->q[i];

        if (q->dropped == 0) {
            continue;
        }

        o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:{s:I, s:s, s:s, s:s, "
                      "s:s, s:s}}",
                      "sink", q->key, "kind", ad_sink_kind_name(q->kind),
                      "label", q->label, "count", (json_int_t) q->dropped,
                      "since", (json_int_t) q->since_ms,
                      "dropped",
                      "critical", (json_int_t) q->d.critical,
                      "since", q->d.since,
                      "first_id", q->d.first_id,
                      "first_time", q->d.first_time,
                      "last_id", q->d.last_id,
                      "last_time", q->d.last_time);

        if (o != NULL && q->peers > 0
            && json_object_set_new(o, "peers", json_integer(q->peers)) != 0)
        {
            json_decref(o);
            o = NULL;
        }

        if (o == NULL || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }

    return arr;
}


int
ad_outbox_drops_from_json(ad_outbox_t *ob, const json_t *a, char *why,
    size_t whysize)
{
    size_t          i;
    json_t         *o, *p;
    json_int_t      count, since, critical, peers;
    ad_sinkq_t     *q;
    const char     *key, *kind, *label, *s[5];
    al_sink_kind_t  k;

    if (!json_is_array(a)) {
        (void) snprintf(why, whysize, "\"dropped\" is not an array");
        return -1;
    }

    json_array_foreach(a, i, o) {
        if (json_unpack(o, "{s:s, s:s, s:s, s:I, s:I, s:{s:I, s:s, s:s, "
                        "s:s, s:s, s:s}}",
                        "sink", &key, "kind", &kind, "label", &label,
                        "count", &count, "since", &since,
                        "dropped", "critical", &critical, "since", &s[0],
                        "first_id", &s[1], "first_time", &s[2],
                        "last_id", &s[3], "last_time", &s[4]) != 0
            || strlen(key) != AD_KEY_HEX
            || strspn(key, "0123456789abcdef") != AD_KEY_HEX
            || (strcmp(kind, "webhook") != 0
                && strcmp(kind, "alertmanager") != 0)
            || strlen(label) >= AD_LABEL_MAX
            || count < 1 || since < 0 || critical < 0 || critical > count
            || strlen(s[0]) >= AD_TIME_MAX || strlen(s[1]) > AD_FID_MAX
            || strlen(s[2]) >= AD_TIME_MAX || strlen(s[3]) > AD_FID_MAX
            || strlen(s[4]) >= AD_TIME_MAX)
        {
            (void) snprintf(why, whysize, "dropped alerts record %zu is "
                            "malformed", i);
            return -1;
        }

        /* of count, unidentified peers' alerts; absent in older files */

        p = json_object_get(o, "peers");
        peers = json_is_integer(p) ? json_integer_value(p) : 0;

        if ((p != NULL && !json_is_integer(p)) || peers < 0
            || peers > count)
        {
            (void) snprintf(why, whysize, "dropped alerts record %zu is "
                            "malformed", i);
            return -1;
        }

        k = (strcmp(kind, "webhook") == 0) ? AL_SINK_WEBHOOK
                                           : AL_SINK_ALERTMANAGER;

        q = ad_sinkq_get(ob, key, k, NULL, 1);
        if (q == NULL) {
            (void) snprintf(why, whysize, "out of memory");
            return -1;
        }

        if (q->label[0] == '\0') {
            (void) snprintf(q->label, sizeof(q->label), "%s", label);
        }

        q->dropped = count;
        q->peers = peers;
        q->since_ms = since;
        q->d.critical = critical;
        (void) snprintf(q->d.since, sizeof(q->d.since), "%s", s[0]);
        (void) snprintf(q->d.first_id, sizeof(q->d.first_id), "%s", s[1]);
        (void) snprintf(q->d.first_time, sizeof(q->d.first_time), "%s",
                        s[2]);
        (void) snprintf(q->d.last_id, sizeof(q->d.last_id), "%s", s[3]);
        (void) snprintf(q->d.last_time, sizeof(q->d.last_time), "%s", s[4]);
    }

    return 0;
}


/* the sink's record; with create, a new one if there is none (or NULL) */

static ad_sinkq_t *
ad_sinkq_get(ad_outbox_t *ob, const char *key, al_sink_kind_t kind,
    const char *url, int create)
{
    size_t       i;
    ad_sinkq_t  *q;

    for (i = 0; i < ob->nq; i++) {
        if (strcmp(ob->q[i].key, key) == 0) {
            q = &ob->q[i];

            if (q->label[0] == '\0' && url != NULL) {
                ad_url_label(q->label, sizeof(q->label), url);
            }

            return q;
        }
    }

    if (!create) {
        return NULL;
    }

    /* one per sink key: a handful, so one at a time */

    q = realloc(ob->q, (ob->nq + 1) * sizeof(ad_sinkq_t));
    if (q == NULL) {
        return NULL;
    }

    ob->q = q;
    q = &ob->q[ob->nq++];
    memset(q, 0, sizeof(ad_sinkq_t));

    (void) snprintf(q->key, sizeof(q->key), "%s", key);
    q->kind = kind;

    if (url != NULL) {
        ad_url_label(q->label, sizeof(q->label), url);
    }

    return q;
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


/* the state is saved: what was folded into an entry is on record */

void
ad_outbox_saved(ad_outbox_t *ob)
{
    ad_entry_t  *e;

    for (e = ob->head; e != NULL && ob->unsaved > 0; e = e->next) {
        if (e->unsaved) {
            e->unsaved = 0;
            ob->unsaved--;
        }
    }
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
