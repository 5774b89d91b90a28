/*
 * Grouping: repeats of one (kind, client, reason, route, severity) are
 * folded; for an alert without a client the peer takes the client's
 * place.  The key is what Alertmanager's labels hold: a fold carries its
 * latest alert's fields, and with a route or severity other than its
 * first alert's it would be another Alertmanager alert, the first one
 * left to resolve while the storm goes on.
 *
 * The first alert of a group is sent at once and opens a window of one
 * repeat interval.  Alerts of the same group inside the window are only
 * counted.  When the window ends with a count, ONE folded alert is sent
 * (id "<first id>~<n>", count = alerts folded; a journal id has no '~',
 * so none is ever the id of another alert) and the next window
 * opens; a window that ends empty closes the group, so the next repeat
 * is sent at once again.  A storm thus gives one alert at its start and
 * one per interval while it lasts.
 *
 * Windows are measured in alert time (the journal's "time"), so a
 * backlog read after a restart folds exactly as it would have live.
 * That is the wall clock, which NTP may step (a VM that booted with no
 * clock): alertd tells a step from the boot clock and moves every open
 * window with it (ad_group_shift()), after a step while it was stopped
 * too if it starts again in the same boot (ad_state.c), so that a
 * window lasts its interval of elapsed time, neither ended at once by a
 * step forward nor held by one back, and the alerts stamped after the
 * step, by the same stepped clock, fall in the window they would have.
 * The kind is part of the key: a quarantine is news even right after a
 * deny alert for the same client and reason.  So is the peer when there
 * is no client: folded into the first peer's group, a second peer probing
 * would never be named.
 *
 * Every change to a group is made only after the alert it implies was
 * emitted, so a failed emit (disk full) leaves the table as it was and
 * the same journal line can be applied again.  The table is saved with
 * the journal offset (ad_state.c): a line is never folded twice.  A
 * save writes only what changed since the last one: the groups marked
 * dirty and the keys of the groups closed (ad_group_delta_to_json()).
 *
 * At most AD_GROUPS_MAX groups are open.  An alert that would open one
 * more is sent, but not grouped.  A flood of new peers makes thousands
 * of those, so the log says it once, when the cap is reached, then
 * counts: at most every AD_GROUPS_TELL ms while it goes on, when fewer
 * than AD_GROUPS_LOW groups are open again, and at a stop.  The cap is
 * over only well below it: a table that stays full sheds a group and
 * takes a new one all the time, and would otherwise start and end an
 * episode, two lines, for each.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alertd.h"


#define AD_CLOSED_MIN    64     /* keys of closed groups always kept for
                                   the next save's change */


static ssize_t ad_group_find(const ad_groups_t *gs, const ad_alert_t *a);
static int ad_group_close(ad_groups_t *gs, size_t i, ad_emit_pt emit,
    void *data, int *removed);
static void ad_group_remove(ad_groups_t *gs, size_t i);
static void ad_group_ungrouped(ad_groups_t *gs, const ad_alert_t *a);
static void ad_group_tell(ad_groups_t *gs, const char *what);
static int ad_group_append(ad_groups_t *gs, const ad_alert_t *a,
    int64_t t);
static json_t *ad_group_one_to_json(const ad_group_t *g);
static int ad_group_parse(const json_t *o, size_t i, ad_group_t *g,
    char *why, size_t whysize);


static ssize_t
ad_group_find(const ad_groups_t *gs, const ad_alert_t *a)
{
    size_t             i;
    const ad_alert_t  *b;

    for (i = 0; i < gs->n; i++) {
        b = &gs->g[i].last;

        /* by length: "a\u0000b" and "a" are two clients */
        if (b->kind != a->kind || b->critical != a->critical
            || b->has_client != a->has_client
            || !ad_field_eq(b->client, b->client_len, a->client,
                            a->client_len)
            || !ad_field_eq(b->reason, b->reason_len, a->reason,
                            a->reason_len)
            || b->has_route != a->has_route
            || !ad_field_eq(b->route, b->route_len, a->route,
                            a->route_len))
        {
            continue;
        }

        if (!a->has_client
            && (b->has_peer != a->has_peer
                || !ad_field_eq(b->peer, b->peer_len, a->peer,
                                a->peer_len)))
        {
            continue;
        }

        return (ssize_t) i;
    }

    return -1;
}


/*
 * by: how far the clock of now_ms (and of the windows) is ahead of the
 * one a was stamped by, 0 but for a line written before a step of the
 * wall clock and read after it (alertd.c, ad_stamped()): its time is
 * taken on the windows' clock.
 */

int
ad_group_add(ad_groups_t *gs, const ad_alert_t *a, int64_t now_ms,
    int64_t by, ad_emit_pt emit, void *data)
{
    int       removed;
    int64_t   t;
    ssize_t   i;

    t = a->time_ms + by;
    if (t > now_ms + AD_CLOCK_SLACK) {
        t = now_ms;
    }

    i = ad_group_find(gs, a);

    while (i >= 0 && t >= gs->g[i].end_ms) {
        if (ad_group_close(gs, (size_t) i, emit, data, &removed) != 0) {
            return -1;
        }

        if (removed) {
            i = -1;
        }
    }

    if (i >= 0) {
        gs->g[i].count++;
        gs->g[i].last = *a;
        gs->g[i].dirty = 1;
        return 0;
    }

    if (emit(data, a) != 0) {
        return -1;
    }

    if (gs->n >= AD_GROUPS_MAX) {
        ad_group_ungrouped(gs, a);
        return 0;
    }

    if (ad_group_append(gs, a, t) != 0) {
        ad_log(AD_LOG_WARN, "out of memory for %zu alert groups: alert %s "
               "is not grouped, its repeats will be sent one by one",
               gs->n + 1, a->id);
    }

    return 0;
}


/* a sent alert that the cap kept out of the table */

static void
ad_group_ungrouped(ad_groups_t *gs, const ad_alert_t *a)
{
    ad_ungrouped_t  *u;

    u = &gs->ungrouped;

    if (u->count == 0) {
        u->count = 1;
        u->untold = 0;
        u->since_ms = ad_now_ms();
        u->told_ms = ad_mono_ms();

        ad_log(AD_LOG_WARN, "%d alert groups open, the most alertd keeps: "
               "alert %s (%s) is sent but not grouped, as is every alert "
               "that would open a new group until fewer than %d are open "
               "(their repeats are sent one by one, not folded); they are "
               "counted, the count said at most every %d s", AD_GROUPS_MAX,
               a->id, a->time, AD_GROUPS_LOW, AD_GROUPS_TELL / 1000);
        return;
    }

    u->count++;

    if (u->untold++ == 0) {
        (void) snprintf(u->first_id, sizeof(u->first_id), "%s", a->id);
        (void) snprintf(u->first_time, sizeof(u->first_time), "%s",
                        a->time);
    }

    (void) snprintf(u->last_id, sizeof(u->last_id), "%s", a->id);
    (void) snprintf(u->last_time, sizeof(u->last_time), "%s", a->time);

    if (ad_mono_ms() - u->told_ms >= AD_GROUPS_TELL) {
        ad_group_tell(gs, "the most alertd keeps");
    }
}


/*
 * One line: the alerts not grouped since the last line, the first and
 * the last of them, and how many since the cap was reached.
 */

static void
ad_group_tell(ad_groups_t *gs, const char *what)
{
    ad_ungrouped_t  *u;
    char             since[AD_TIME_MAX];

    u = &gs->ungrouped;
    ad_time_format(since, sizeof(since), u->since_ms);

    if (u->untold == 0) {
        ad_log(AD_LOG_WARN, "%zu alert groups open, %s: 0 alert(s) not "
               "grouped since the last count; %lld since the cap was "
               "reached at %s", gs->n, what, (long long) u->count, since);

    } else {
        ad_log(AD_LOG_WARN, "%zu alert groups open, %s: %lld alert(s) not "
               "grouped since the last count, from %s (alert %s) to %s "
               "(alert %s); %lld since the cap was reached at %s", gs->n,
               what, (long long) u->untold, u->first_time, u->first_id,
               u->last_time, u->last_id, (long long) u->count, since);
    }

    u->untold = 0;
    u->told_ms = ad_mono_ms();
}


/* alertd stops: what was not said yet */

void
ad_group_stop(ad_groups_t *gs)
{
    if (gs->ungrouped.count > 0) {
        ad_group_tell(gs, "alertd stops");
    }
}


static int
ad_group_append(ad_groups_t *gs, const ad_alert_t *a, int64_t t)
{
    size_t       cap;
    ad_group_t  *g;

    if (gs->n == gs->cap) {
        if (gs->cap >= AD_GROUPS_MAX) {
            return -1;
        }

        cap = (gs->cap == 0) ? 16 : gs->cap * 2;
        g = realloc(gs->g, cap * sizeof(ad_group_t));
        if (g == NULL) {
            return -1;
        }

        gs->g = g;
        gs->cap = cap;
    }

    g = &gs->g[gs->n++];
    memset(g, 0, sizeof(ad_group_t));

    g->last = *a;
    memcpy(g->first_id, a->id, sizeof(g->first_id));
    g->start_ms = t;
    g->end_ms = t + gs->interval_ms;
    g->dirty = 1;

    return 0;
}


/* ends the window of group i */

static int
ad_group_close(ad_groups_t *gs, size_t i, ad_emit_pt emit, void *data,
    int *removed)
{
    ad_alert_t   f;
    ad_group_t  *g;
    char         client[AD_SHOW_MAX], peer[AD_SHOW_MAX];
    char         reason[AD_SHOW_MAX];

    g = &gs->g[i];

    if (g->count == 0) {
        ad_log(AD_LOG_DEBUG, "closed the group of alert %s: %s, client %s%s%s, "
               "reason %s: its window ended with no repeat", g->first_id,
               ad_alert_kind_name(g->last.kind),
               g->last.has_client
               ? ad_field_show(client, sizeof(client), g->last.client,
                               g->last.client_len)
               : "(none)",
               g->last.has_peer ? ", peer " : "",
               ad_field_show(peer, sizeof(peer), g->last.peer,
                             g->last.has_peer ? g->last.peer_len : 0),
               ad_field_show(reason, sizeof(reason), g->last.reason,
                             g->last.reason_len));
        ad_group_remove(gs, i);
        *removed = 1;
        return 0;
    }

    f = g->last;
    (void) snprintf(f.id, sizeof(f.id), "%.*s%c%u", AD_ID_MAX, g->first_id,
                    AD_FID_SEP, g->seq + 1);
    f.count = g->count;
    f.window = (gs->interval_ms + 999) / 1000;
    f.folded = 1;

    if (emit(data, &f) != 0) {
        return -1;
    }

    g->seq++;
    g->count = 0;
    g->start_ms = g->end_ms;
    g->end_ms += gs->interval_ms;
    g->dirty = 1;
    *removed = 0;

    return 0;
}


/*
 * The next save says that the group is closed: its key, the latest
 * alert, goes to the closed list.  Without memory for it the next save
 * writes the whole table.
 *
 * So it does once the list holds more keys than there are groups open
 * (and AD_CLOSED_MIN): the table is then no bigger than the change, and
 * says the same.  The keys are let go.  Saves that fail for hours (a
 * full disk) while peers keep opening and closing groups would
 * otherwise grow the list by a key per group, without bound; it never
 * holds more than AD_GROUPS_MAX.
 */

static void
ad_group_remove(ad_groups_t *gs, size_t i)
{
    size_t   held, open;
    json_t  *key;

    if (!gs->whole) {
        if (gs->closed == NULL) {
            gs->closed = json_array();
        }

        held = json_array_size(gs->closed) + 1;
        open = (gs->n - 1 > AD_CLOSED_MIN) ? gs->n - 1 : AD_CLOSED_MIN;
        key = NULL;

        if (held > open) {
            ad_log(AD_LOG_INFO, "%zu alert groups closed since the last "
                   "save, more than the %zu left open: the next save "
                   "writes the whole state (offset), not a change "
                   "(offset.log), and their keys are let go", held,
                   gs->n - 1);

        } else {
            key = ad_alert_to_json(&gs->g[i].last);
        }

        if (gs->closed == NULL || key == NULL
            || json_array_append_new(gs->closed, key) != 0)
        {
            json_decref(gs->closed);
            gs->closed = NULL;
            gs->whole = 1;
        }
    }

    gs->n--;

    if (i != gs->n) {
        gs->g[i] = gs->g[gs->n];
    }
}


/*
 * Ends the windows that ended by now_ms.  At most max of them make a
 * folded alert (each a file written and synced per sink): returns 1
 * when more are left for the next round of the loop, 0 when none is.
 */

int
ad_group_expire(ad_groups_t *gs, int64_t now_ms, size_t max,
    ad_emit_pt emit, void *data)
{
    int      removed;
    size_t   i, back, emitted;
    int64_t  most;
    char     what[64];

    /*
     * A window opened (or saved) while the clock was ahead starts in the
     * future once the clock is stepped back, and would end only when it
     * is there again: an hour or a day of a storm's repeats held.  It is
     * taken to start now.
     */

    back = 0;
    most = 0;

    for (i = 0; i < gs->n; i++) {
        if (gs->g[i].start_ms <= now_ms + AD_CLOCK_SLACK) {
            continue;
        }

        if (gs->g[i].start_ms - now_ms > most) {
            most = gs->g[i].start_ms - now_ms;
        }

        gs->g[i].end_ms = now_ms + (gs->g[i].end_ms - gs->g[i].start_ms);
        gs->g[i].start_ms = now_ms;
        gs->g[i].dirty = 1;
        back++;
    }

    if (back > 0) {
        ad_log(AD_LOG_WARN, "the clock went back (up to %lld s): the "
               "window of %zu alert group(s) started later than now, and "
               "starts now", (long long) ((most + 999) / 1000), back);
    }

    i = 0;
    emitted = 0;

    while (i < gs->n) {
        if (now_ms < gs->g[i].end_ms) {
            i++;
            continue;
        }

        if (gs->g[i].count > 0) {
            if (emitted == max) {
                return 1;
            }

            emitted++;
        }

        if (ad_group_close(gs, i, emit, data, &removed) != 0) {
            return -1;
        }

        if (!removed) {
            i++;
        }
    }

    if (gs->ungrouped.count == 0) {
        return 0;
    }

    if (gs->n < AD_GROUPS_LOW) {
        (void) snprintf(what, sizeof(what), "fewer than %d, the cap is "
                        "over", AD_GROUPS_LOW);
        ad_group_tell(gs, what);
        gs->ungrouped.count = 0;

    } else if (gs->ungrouped.untold > 0
               && ad_mono_ms() - gs->ungrouped.told_ms >= AD_GROUPS_TELL)
    {
        ad_group_tell(gs, "the most alertd keeps");
    }

    return 0;
}


/*
 * The wall clock stepped by "by" ms: every open window moves with it.
 * Returns how many did.
 */

size_t
ad_group_shift(ad_groups_t *gs, int64_t by)
{
    size_t  i;

    for (i = 0; i < gs->n; i++) {
        gs->g[i].start_ms += by;
        gs->g[i].end_ms += by;
        gs->g[i].dirty = 1;
    }

    return gs->n;
}


int64_t
ad_group_next(const ad_groups_t *gs)
{
    size_t   i;
    int64_t  next;

    next = -1;

    for (i = 0; i < gs->n; i++) {
        if (next == -1 || gs->g[i].end_ms < next) {
            next = gs->g[i].end_ms;
        }
    }

    return next;
}


json_t *
ad_group_to_json(const ad_groups_t *gs)
{
    size_t   i;
    json_t  *arr, *o;

    arr = json_array();
    if (arr == NULL) {
        return NULL;
    }

    for (i = 0; i < gs->n; i++) {
        o = ad_group_one_to_json(&gs->g[i]);

        if (o == NULL || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }

    return arr;
}


/*
 * "clock": the wall - boot clock when the latest alert was read, which
 * a fold sent to Alertmanager needs (ad_am_stepped()); it is of the
 * boot the state file says (ad_state.c).
 */

static json_t *
ad_group_one_to_json(const ad_group_t *g)
{
    json_t  *last, *o;

    last = ad_alert_to_json(&g->last);
    if (last == NULL) {
        return NULL;
    }

    o = json_pack("{s:s, s:i, s:I, s:I, s:I, s:o}",
                  "first_id", g->first_id, "seq", (int) g->seq,
                  "start", (json_int_t) g->start_ms,
                  "end", (json_int_t) g->end_ms,
                  "count", (json_int_t) g->count, "last", last);

    if (o != NULL && g->last.clock_known
        && json_object_set_new(o, "clock",
                               json_integer(g->last.clock_off)) != 0)
    {
        json_decref(o);
        return NULL;
    }

    return o;
}


static int
ad_group_parse(const json_t *o, size_t i, ad_group_t *g, char *why,
    size_t whysize)
{
    int          seq;
    json_t      *last, *clock;
    json_int_t   start, end, count;
    const char  *first;
    char         w[256];

    clock = NULL;

    /* "clock" came later: a group without it is still good */

    if (json_unpack((json_t *) o, "{s:s, s:i, s:I, s:I, s:I, s:o, s?o}",
                    "first_id", &first, "seq", &seq, "start", &start,
                    "end", &end, "count", &count, "last", &last,
                    "clock", &clock) != 0
        || seq < 0 || count < 0 || strlen(first) > AD_ID_MAX
        || (clock != NULL && !json_is_integer(clock)))
    {
        (void) snprintf(why, whysize, "group %zu is malformed", i);
        return -1;
    }

    memset(g, 0, sizeof(ad_group_t));

    if (ad_alert_from_json(last, &g->last, w, sizeof(w)) != 0) {
        (void) snprintf(why, whysize, "group %zu: %s", i, w);
        return -1;
    }

    if (clock != NULL) {
        g->last.clock_off = json_integer_value(clock);
        g->last.clock_known = 1;
    }

    (void) snprintf(g->first_id, sizeof(g->first_id), "%s", first);
    g->seq = (unsigned) seq;
    g->start_ms = start;
    g->end_ms = end;
    g->count = count;

    return 0;
}


int
ad_group_from_json(ad_groups_t *gs, const json_t *a, char *why,
    size_t whysize)
{
    gs->n = 0;

    return ad_group_apply_json(gs, a, NULL, why, whysize);
}


/*
 * A saved change: the groups in closed are removed, then those in a are
 * added, or replace the open group of the same key.
 */

int
ad_group_apply_json(ad_groups_t *gs, const json_t *a, const json_t *closed,
    char *why, size_t whysize)
{
    size_t       i;
    json_t      *o;
    ssize_t      k;
    ad_group_t   g;
    ad_alert_t   key;
    char         w[256];

    if (!json_is_array(a)
        || (closed != NULL && !json_is_array(closed)))
    {
        (void) snprintf(why, whysize, "\"groups\" or \"closed\" is not an "
                        "array");
        return -1;
    }

    json_array_foreach(closed, i, o) {
        if (ad_alert_from_json(o, &key, w, sizeof(w)) != 0) {
            (void) snprintf(why, whysize, "closed group %zu: %s", i, w);
            return -1;
        }

        k = ad_group_find(gs, &key);
        if (k >= 0) {
            gs->n--;
            if ((size_t) k != gs->n) {
                gs->g[k] = gs->g[gs->n];
            }
        }
    }

    json_array_foreach(a, i, o) {
        if (ad_group_parse(o, i, &g, why, whysize) != 0) {
            return -1;
        }

        k = ad_group_find(gs, &g.last);

        if (k < 0) {
            if (ad_group_append(gs, &g.last, 0) != 0) {
                (void) snprintf(why, whysize, "too many groups");
                return -1;
            }
            k = (ssize_t) gs->n - 1;
        }

        gs->g[k] = g;
    }

    return 0;
}


/* the groups changed since ad_group_saved(), and those closed */

int
ad_group_delta_to_json(const ad_groups_t *gs, json_t **groups,
    json_t **closed)
{
    size_t             i;
    json_t            *o;
    const ad_group_t  *g;

    *groups = json_array();
    *closed = (gs->closed != NULL) ? json_copy(gs->closed) : json_array();

    if (*groups == NULL || *closed == NULL) {
        goto failed;
    }

    for (i = 0; i < gs->n; i++) {
        g = &gs->g[i];

        if (!g->dirty) {
            continue;
        }

        o = ad_group_one_to_json(g);
        if (o == NULL || json_array_append_new(*groups, o) != 0) {
            goto failed;
        }
    }

    return 0;

failed:

    json_decref(*groups);
    json_decref(*closed);

    return -1;
}


/* what the next save is to write: groups changed, keys of those closed */

void
ad_group_held(const ad_groups_t *gs, size_t *dirty, size_t *closed)
{
    size_t  i;

    *dirty = 0;

    for (i = 0; i < gs->n; i++) {
        if (gs->g[i].dirty) {
            (*dirty)++;
        }
    }

    *closed = json_array_size(gs->closed);
}


/* a save took every change so far */

void
ad_group_saved(ad_groups_t *gs)
{
    size_t  i;

    for (i = 0; i < gs->n; i++) {
        gs->g[i].dirty = 0;
    }

    json_decref(gs->closed);
    gs->closed = NULL;
    gs->whole = 0;
}


void
ad_group_free(ad_groups_t *gs)
{
    json_decref(gs->closed);
    gs->closed = NULL;
    free(gs->g);
    gs->g = NULL;
    gs->n = 0;
    gs->cap = 0;
}
