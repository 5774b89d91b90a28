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
 *
 * A quarantine_until is on the wall clock alertd read its alert by
 * (clock_off, saved with it as "clock", as in the outbox): it is
 * compared with a zone line's time, or with now, moved onto their
 * clock, so that a step of the wall clock between the two, while
 * alertd runs or while it is stopped (in one boot), neither resolves a
 * quarantine that ended before the zone was made anew nor leaves one
 * that it lifted firing.
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
static int64_t ad_lift_until_by(const ad_alert_t *a, int known,
    int64_t off);
static void ad_lift_remove(ad_lifts_t *ls, size_t i);


int
ad_lift_load(ad_lifts_t *ls, int dirfd)
{
    char          *buf, why[256];
    int            rc;
    size_t         len, i;
    json_t        *o, *v;
    json_int_t     off;
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

        /* of another boot, or from an alertd without it: as it is */

        rc = ad_clock_read(v, &off, why, sizeof(why));
        ls->a[ls->n].clock_known = (rc == 1);
        ls->a[ls->n].clock_off = (rc == 1) ? (int64_t) off : 0;

        ls->n++;
    }

    json_decref(o);

    return 0;
}


/* a quarantine queued for Alertmanager; now_ms is on the clock now_off */

void
ad_lift_add(ad_lifts_t *ls, const ad_alert_t *a, int64_t now_ms,
    int64_t now_off)
{
    size_t   i, first;
    int64_t  until;

    if (ls->a == NULL || a->kind != AD_KIND_QUARANTINE || a->lifted) {
        return;
    }

    if (ad_lift_until(a) < 0) {
        return;
    }

    until = ad_lift_until_by(a, 1, now_off);
    i = 0;

    while (i < ls->n) {
        if (ad_lift_until_by(&ls->a[i], 1, now_off) + AD_LIFT_KEEP < now_ms)
        {
            ad_lift_remove(ls, i);
            continue;
        }

        if (ad_lift_same(&ls->a[i], a)) {
            if (ad_lift_until_by(&ls->a[i], 1, now_off) > until) {
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
            if (ad_lift_until_by(&ls->a[i], 1, now_off)
                < ad_lift_until_by(&ls->a[first], 1, now_off))
            {
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
    int64_t     by;
    ad_alert_t  a;

    if (ls->a == NULL) {
        return 0;
    }

    i = 0;

    while (i < ls->n) {
        if (ad_lift_until_by(&ls->a[i], zone->clock_known, zone->clock_off)
            <= zone->time_ms)
        {
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

        /*
         * Its end is the zone's time, on the clock the zone was read by.
         * Its start, on the clock the quarantine was read by, is taken
         * onto that one: an alert keeps one clock.  The annotations keep
         * quarantine_until as nginx wrote it.
         */

        by = ad_lift_until_by(&ls->a[i], zone->clock_known,
                              zone->clock_off)
             - ad_lift_until(&ls->a[i]);

        if (by != 0) {
            a.time_ms += by;
            ad_time_format(a.time, sizeof(a.time), a.time_ms);
        }

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

        /* the clock its quarantine_until is on, as an outbox file's */

        if (o != NULL && ls->a[i].clock_known && ad_boot_id()[0] != '\0'
            && json_object_set_new(o, "clock",
                   json_pack("{s:s, s:I}", "boot", ad_boot_id(), "off",
                             (json_int_t) ls->a[i].clock_off))
               != 0)
        {
            json_decref(o);
            o = NULL;
        }

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


/*
 * Its quarantine_until on the wall clock off (wall - boot), when known;
 * as it is when either clock is not of this boot, or the two are less
 * than AD_CLOCK_STEP apart (read a moment apart, as ad_am_stepped()
 * takes them).  The length of the quarantine is nginx's, on its
 * monotonic clock: a step since moves its end with it.
 */

static int64_t
ad_lift_until_by(const ad_alert_t *a, int known, int64_t off)
{
    int64_t  until, by;

    until = ad_lift_until(a);

    if (until < 0 || !known || !a->clock_known) {
        return until;
    }

    by = off - a->clock_off;

    return (by > -AD_CLOCK_STEP && by < AD_CLOCK_STEP) ? until : until + by;
}


static void
ad_lift_remove(ad_lifts_t *ls, size_t i)
{
    memmove(&ls->a[i], &ls->a[i + 1], (ls->n - i - 1) * sizeof(ad_alert_t));
    ls->n--;
    ls->dirty = 1;
}
