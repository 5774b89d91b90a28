/*
 * libFuzzer target: airlock-alertd's journal lines (alertd/ad_alert.c)
 * and what follows from them: grouping (alertd/ad_group.c), the webhook
 * body, which is also the alert as the outbox and the state keep it, and
 * the Alertmanager body.  The nginx module writes the lines, but clients
 * choose most of their bytes (client names, paths, samples).
 *
 * The input is split into lines as the journal is; each goes through
 * ad_alert_parse_line(), and one that is not JSON through
 * ad_alert_resync(), as alertd does: the object it finds is the line.
 * Invariants, beyond no crash and no sanitizer report:
 *  - an alert taken from a line, and each alert grouping emits (folded
 *    ones included), has a webhook body and an Alertmanager body (NULL
 *    would be an alert never sent), both of which json_dumps() writes
 *    and jansson reads back;
 *  - the webhook body read back with ad_alert_from_json(), as the outbox
 *    and the state do, is the same alert, a NUL (\u0000) in its text
 *    included: the fields are compared by their lengths;
 *  - its Alertmanager timestamps are RFC 3339 times alertd itself reads;
 *  - the group table written as the state writes it and read back holds
 *    the same groups.
 * Each line that is a JSON object is also read as alertd reads back what
 * it wrote, a file cut or damaged being another input: as an alert of
 * the outbox (ad_alert_from_json(), which takes alertd's own ids and
 * kind) and as a save of the state ("groups" and "closed",
 * ad_group_apply_json()); what either takes must hold the same.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../alertd/ad_log.c"
#include "../../alertd/ad_alert.c"
#include "../../alertd/ad_group.c"


#define FZ_NOW_MS      INT64_C(1764460800000)  /* 2025-11-30 */
#define FZ_REPEAT_MS   INT64_C(300000)


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void fz_check_alert(const ad_alert_t *a);
static void fz_same_alert(const ad_alert_t *a, const ad_alert_t *b);
static void fz_check_time(const json_t *v);
static json_t *fz_reload(const json_t *o);
static int fz_emit(void *data, const ad_alert_t *a);
static void fz_check_groups(const ad_groups_t *gs);
static void fz_read_back(const char *line, size_t len);


static void
fz_same_alert(const ad_alert_t *a, const ad_alert_t *b)
{
    if (strcmp(a->id, b->id) != 0
        || strcmp(a->time, b->time) != 0
        || a->time_ms != b->time_ms
        || a->kind != b->kind
        || a->critical != b->critical
        || a->has_client != b->has_client
        || a->has_route != b->has_route
        || a->has_until != b->has_until
        || a->has_peer != b->has_peer
        || a->folded != b->folded
        || !ad_field_eq(a->client, a->client_len, b->client, b->client_len)
        || !ad_field_eq(a->peer, a->peer_len, b->peer, b->peer_len)
        || !ad_field_eq(a->reason, a->reason_len, b->reason, b->reason_len)
        || !ad_field_eq(a->route, a->route_len, b->route, b->route_len)
        || a->count != b->count
        || a->window != b->window
        || !ad_field_eq(a->sample, a->sample_len, b->sample, b->sample_len)
        || strcmp(a->until, b->until) != 0
        || (a->kind == AD_KIND_DROPPED
            && (a->dropped.critical != b->dropped.critical
                || strcmp(a->dropped.since, b->dropped.since) != 0
                || strcmp(a->dropped.first_id, b->dropped.first_id) != 0
                || strcmp(a->dropped.first_time, b->dropped.first_time)
                   != 0
                || strcmp(a->dropped.last_id, b->dropped.last_id) != 0
                || strcmp(a->dropped.last_time, b->dropped.last_time)
                   != 0)))
    {
        abort();
    }
}


/* dumped compact as alertd sends and keeps it, and read back */

static json_t *
fz_reload(const json_t *o)
{
    char          *s;
    json_t        *r;
    json_error_t   jerr;

    s = json_dumps(o, JSON_COMPACT);
    if (s == NULL) {
        abort();
    }

    r = json_loads(s, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    free(s);

    if (r == NULL) {
        abort();
    }

    return r;
}


static void
fz_check_time(const json_t *v)
{
    int64_t  ms;

    if (!json_is_string(v) || ad_time_parse(json_string_value(v), &ms) != 0)
    {
        abort();
    }
}


static void
fz_check_alert(const ad_alert_t *a)
{
    char         why[256];
    json_t      *o, *r, *am, *x;
    ad_alert_t   b;

    o = ad_alert_to_json(a);
    if (o == NULL) {
        abort();
    }

    r = fz_reload(o);
    json_decref(o);

    if (ad_alert_from_json(r, &b, why, sizeof(why)) != 0) {
        abort();
    }

    json_decref(r);
    fz_same_alert(a, &b);

    am = ad_alert_to_alertmanager(a, FZ_REPEAT_MS);
    if (am == NULL) {
        abort();
    }

    r = fz_reload(am);
    json_decref(am);

    x = json_array_get(r, 0);
    fz_check_time(json_object_get(x, "startsAt"));
    fz_check_time(json_object_get(x, "endsAt"));

    json_decref(r);
}


static int
fz_emit(void *data, const ad_alert_t *a)
{
    (void) data;

    fz_check_alert(a);

    return 0;
}


static void
fz_check_groups(const ad_groups_t *gs)
{
    size_t        i;
    char          why[256];
    json_t       *o, *r;
    ad_groups_t   back;

    o = ad_group_to_json(gs);
    if (o == NULL) {
        abort();
    }

    r = fz_reload(o);
    json_decref(o);

    memset(&back, 0, sizeof(ad_groups_t));
    back.interval_ms = gs->interval_ms;

    if (ad_group_from_json(&back, r, why, sizeof(why)) != 0
        || back.n != gs->n)
    {
        abort();
    }

    json_decref(r);

    for (i = 0; i < gs->n; i++) {
        if (strcmp(back.g[i].first_id, gs->g[i].first_id) != 0
            || back.g[i].seq != gs->g[i].seq
            || back.g[i].start_ms != gs->g[i].start_ms
            || back.g[i].end_ms != gs->g[i].end_ms
            || back.g[i].count != gs->g[i].count)
        {
            abort();
        }

        fz_same_alert(&back.g[i].last, &gs->g[i].last);
    }

    ad_group_free(&back);
}


static void
fz_read_back(const char *line, size_t len)
{
    char          why[256];
    json_t       *o;
    ad_alert_t    a;
    ad_groups_t   gs;

    o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return;
    }

    if (ad_alert_from_json(o, &a, why, sizeof(why)) == 0) {
        fz_check_alert(&a);
    }

    memset(&gs, 0, sizeof(ad_groups_t));
    gs.interval_ms = FZ_REPEAT_MS;

    if (ad_group_apply_json(&gs, json_object_get(o, "groups"),
                            json_object_get(o, "closed"), why, sizeof(why))
        == 0)
    {
        fz_check_groups(&gs);
    }

    ad_group_free(&gs);
    json_decref(o);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char          why[256];
    size_t        skip;
    const char   *p, *end, *nl;
    ad_line_t     rc;
    ad_alert_t    a;
    ad_groups_t   gs;

    memset(&gs, 0, sizeof(ad_groups_t));
    gs.interval_ms = FZ_REPEAT_MS;

    p = (const char *) data;
    end = p + size;

    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            nl = end;
        }

        why[0] = '\0';
        rc = ad_alert_parse_line(p, (size_t) (nl - p), &a, why, sizeof(why));

        /* as alertd does: a line cut short, a whole one glued to it */
        skip = (rc == AD_LINE_BAD) ? ad_alert_resync(p, (size_t) (nl - p))
                                   : 0;

        if (skip > 0) {
            if (skip >= (size_t) (nl - p) || p[skip] != '{') {
                abort();
            }

            rc = ad_alert_parse_line(p + skip, (size_t) (nl - p) - skip, &a,
                                     why, sizeof(why));
        }

        if (rc == AD_LINE_ALERT) {
            if (a.kind == AD_KIND_DROPPED || strlen(a.id) > AD_ID_MAX
                || strchr(a.id, AD_FID_SEP) != NULL)
            {
                abort();
            }

            fz_check_alert(&a);

            (void) ad_group_add(&gs, &a, FZ_NOW_MS, 0, fz_emit, NULL);
        }

        fz_read_back(p, (size_t) (nl - p));

        p = nl + 1;
    }

    fz_check_groups(&gs);

    /* every window ends: the folded alerts are emitted */
    while (ad_group_expire(&gs, INT64_MAX / 4, 64, fz_emit, NULL) == 1) {
        /* more */
    }

    fz_check_groups(&gs);

    ad_group_free(&gs);

    return 0;
}
