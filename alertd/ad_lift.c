/*
 * Quarantines lifted with nginx's deny zone.
 *
 * nginx keeps each client's quarantine in its deny zone (airlock_zone,
 * shared memory).  When the zone is made anew (nginx restarted, or a
 * reload that renamed or resized it) every quarantine is lifted at once,
 * and nginx writes one journal line of type "zone", state "new", at the
 * time the first worker of the new zone started.  An Alertmanager
 * quarantine alert would go on firing until its quarantine_until: each
 * one sent that ends after the zone line's time is sent again, ended
 * then (the same labels, so the same alert in Alertmanager).
 *
 * The list holds the latest quarantine sent per label set, at most
 * AD_LIFT_MAX (the one that ends first goes), each kept until
 * AD_LIFT_KEEP after its quarantine_until.  It is saved as STATE/lifts,
 * written whole, before the journal position (ad_persist()): a crash
 * reads the lines again and finds each quarantine in the list, or adds
 * it again.  Webhooks are not told: their events are alerts raised,
 * and a lift is none (docs/alerts.md).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alertd.h"


#define AD_LIFT_FILE  "lifts"
#define AD_LIFT_SUFFIX  "lifted"


static int ad_lift_same(const ad_alert_t *a, const ad_alert_t *b);
static int64_t ad_lift_until(const ad_alert_t *a);
static void ad_lift_remove(ad_lifts_t *ls, size_t i);


int
ad_lift_load(ad_lifts_t *ls, int dirfd)
{
    char          *buf, why[256];
    size_t         len, i;
    json_t        *o, *v;
    json_error_t   jerr;

    ls->a = NULL;
    ls->n = 0;
    ls->dirty = 0;
    memset(&ls->save_fail, 0, sizeof(ad_fail_t));

    ls->a = calloc(AD_LIFT_MAX, sizeof(ad_alert_t));
    if (ls->a == NULL) {
        ad_log(AD_LOG_ERR, "cannot keep quarantines: %s", strerror(errno));
        return -1;
    }

    if (ad_file_read(dirfd, AD_LIFT_FILE, AD_STATE_FILE_MAX, &buf, &len)
        != 0)
    {
        if (errno != ENOENT) {
            ad_log(AD_LOG_WARN, "cannot read the state's %s: %s; the "
                   "quarantines sent before are not resolved when the "
                   "deny zone is made anew", AD_LIFT_FILE,
                   ad_file_strerror(errno));
        }
        return 0;
    }

    o = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    free(buf);

    if (!json_is_array(o)) {
        ad_log(AD_LOG_WARN, "the state's %s is not a JSON array; the "
               "quarantines sent before are not resolved when the deny "
               "zone is made anew", AD_LIFT_FILE);
        json_decref(o);
        ls->dirty = 1;
        return 0;
    }

    json_array_foreach(o, i, v) {
        if (ls->n == AD_LIFT_MAX) {
            break;
        }

        (void) snprintf(why, sizeof(why), "not a quarantine with a "
                        "quarantine_until");

        if (ad_alert_from_json(v, &ls->a[ls->n], why, sizeof(why)) != 0
            || ls->a[ls->n].kind != AD_KIND_QUARANTINE
            || ad_lift_until(&ls->a[ls->n]) < 0)
        {
            ad_log(AD_LOG_WARN, "the state's %s: skipped entry %zu: %s",
                   AD_LIFT_FILE, i, why);
            ls->dirty = 1;
            continue;
        }

        ls->n++;
    }

    json_decref(o);

    return 0;
}


/* a quarantine queued for Alertmanager */

void
ad_lift_add(ad_lifts_t *ls, const ad_alert_t *a, int64_t now_ms)
{
    size_t   i, first;
    int64_t  until;

    if (ls->a == NULL || a->kind != AD_KIND_QUARANTINE || a->lifted) {
        return;
    }

    until = ad_lift_until(a);
    if (until < 0) {
        return;
    }

    i = 0;

    while (i < ls->n) {
        if (ad_lift_until(&ls->a[i]) + AD_LIFT_KEEP < now_ms) {
            ad_lift_remove(ls, i);
            continue;
        }

        if (ad_lift_same(&ls->a[i], a)) {
            if (ad_lift_until(&ls->a[i]) > until) {
                return;
            }
            ad_lift_remove(ls, i);
            continue;
        }

        i++;
    }

    if (ls->n == AD_LIFT_MAX) {
        first = 0;

        for (i = 1; i < ls->n; i++) {
            if (ad_lift_until(&ls->a[i]) < ad_lift_until(&ls->a[first])) {
                first = i;
            }
        }

        ad_log(AD_LOG_WARN, "%d quarantines kept to resolve when the deny "
               "zone is made anew: alert %s, the one that ends first, is "
               "let go", AD_LIFT_MAX, ls->a[first].id);

        ad_lift_remove(ls, first);
    }

    ls->a[ls->n++] = *a;
    ls->dirty = 1;
}


/*
 * A zone line: each quarantine that ends after its time is sent again,
 * ended then, and let go.  Returns 0, or -1 when emit failed (the line
 * is read again, and the ones left are sent then).
 */

int
ad_lift_zone(ad_lifts_t *ls, const ad_alert_t *zone, ad_emit_pt emit,
    void *data)
{
    size_t      i;
    ad_alert_t  a;

    if (ls->a == NULL) {
        return 0;
    }

    i = 0;

    while (i < ls->n) {
        if (ad_lift_until(&ls->a[i]) <= zone->time_ms) {
            i++;
            continue;
        }

        a = ls->a[i];

        /*
         * An id of its own, so that it is queued after the quarantine
         * it ends, even while that waits in the outbox.  nginx's ids are
         * 32 hex digits: the prefix kept is never another's.
         */

        (void) snprintf(a.id, sizeof(a.id), "%.*s%c%s",
                        (int) (AD_FID_MAX - sizeof(AD_LIFT_SUFFIX)),
                        ls->a[i].id, AD_FID_SEP, AD_LIFT_SUFFIX);

        a.folded = 0;
        a.lifted = 1;
        a.lifted_ms = zone->time_ms;

        /* its end is the zone's time, on the clock the zone was read by */
        a.clock_off = zone->clock_off;
        a.clock_known = zone->clock_known;
        (void) snprintf(a.lifted_time, sizeof(a.lifted_time), "%s",
                        zone->time);

        if (emit(data, &a) != 0) {
            return -1;
        }

        ad_lift_remove(ls, i);
    }

    return 0;
}


int
ad_lift_save(ad_lifts_t *ls, int dirfd)
{
    int      rc;
    char    *text;
    size_t   i;
    json_t  *arr, *o;

    if (ls->a == NULL || !ls->dirty) {
        return 0;
    }

    arr = json_array();
    if (arr == NULL) {
        return -1;
    }

    for (i = 0; i < ls->n; i++) {
        o = ad_alert_to_json(&ls->a[i]);

        if (o == NULL || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return -1;
        }
    }

    text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);

    if (text == NULL) {
        errno = ENOMEM;
        return -1;
    }

    rc = ad_file_replace(dirfd, AD_LIFT_FILE, text, strlen(text));
    free(text);

    /* the rename is durable before the position that follows it */

    if (rc != 0 || ad_fsync_dir(dirfd) != 0) {
        return -1;
    }

    ls->dirty = 0;

    return 0;
}


void
ad_lift_free(ad_lifts_t *ls)
{
    free(ls->a);
    ls->a = NULL;
    ls->n = 0;
}


/* one alert in Alertmanager: the labels ad_alert_to_alertmanager() sets */

static int
ad_lift_same(const ad_alert_t *a, const ad_alert_t *b)
{
    return a->critical == b->critical
           && a->has_peer == b->has_peer
           && ad_field_eq(a->client, a->has_client ? a->client_len : 0,
                          b->client, b->has_client ? b->client_len : 0)
           && ad_field_eq(a->route, a->has_route ? a->route_len : 0,
                          b->route, b->has_route ? b->route_len : 0)
           && ad_field_eq(a->reason, a->reason_len, b->reason,
                          b->reason_len)
           && ad_field_eq(a->peer, a->has_peer ? a->peer_len : 0,
                          b->peer, b->has_peer ? b->peer_len : 0);
}


/* its quarantine_until, ms; -1: none */

static int64_t
ad_lift_until(const ad_alert_t *a)
{
    int64_t  ms;

    if (!a->has_until || ad_time_parse(a->until, &ms) != 0) {
        return -1;
    }

    return ms;
}


static void
ad_lift_remove(ad_lifts_t *ls, size_t i)
{
    memmove(&ls->a[i], &ls->a[i + 1], (ls->n - i - 1) * sizeof(ad_alert_t));
    ls->n--;
    ls->dirty = 1;
}
