/*
 * Alerts: journal lines in, webhook and Alertmanager bodies out.
 *
 * The nginx module writes one JSON object per journal line.  Lines of
 * type "alert" become an ad_alert_t; "deny" lines, objects of other types
 * or of none are skipped quietly; lines that are not JSON objects, and
 * alert lines we cannot use, are malformed.
 * Only what an alert needs is required (id, time, kind, reason); count,
 * window, severity and sample have defaults, so an alert is not dropped
 * over a field it could do without.  Every string is bounded.
 * A JSON string may hold a NUL (\u0000), which a client chooses as any
 * other byte: the free text (client, peer, reason, route, sample) is
 * kept with its length and written back with the NUL in it; the fields
 * that must have a form (id, time, kind, severity, quarantine_until) are
 * refused with one.
 *
 * A line of type "zone" with "state":"new" says that nginx made its deny
 * zone (airlock_zone) anew at its "time": every quarantine was lifted
 * then (ad_lift.c).
 *
 * The kind "alerts_dropped" is alertd's own (ad_outbox_report): it is
 * read back from the outbox, never taken from the journal, where it would
 * be a line telling the operator of a loss that did not happen.
 */

#include <stdio.h>
#include <string.h>

#include "alertd.h"


#define AD_RESYNC_TRIES  16     /* starts of an object looked at in a
                                   line that is not JSON */


static int ad_json_string(const json_t *o, const char *name, int required,
    int nullable, char *buf, size_t size, size_t *lenp, int *present,
    char *why, size_t whysize);
static int ad_json_uint(const json_t *o, const char *name, int64_t *v,
    char *why, size_t whysize);
static ad_line_t ad_zone_parse(const json_t *o, ad_alert_t *a, char *why,
    size_t whysize);
static int ad_id_valid(const char *id);
static size_t ad_utf8_cut(const char *s, size_t len, size_t max);
static int ad_set(json_t *o, const char *name, json_t *v);
static int ad_dropped_from_json(const json_t *o, ad_dropped_t *d,
    char *why, size_t whysize);
static json_t *ad_dropped_to_json(const ad_dropped_t *d);
static json_t *ad_am_alert(const ad_alert_t *a, int64_t repeat_ms,
    json_t *labels, json_t *ann, int rc);
static int64_t ad_am_stepped(const ad_alert_t *a, int64_t now);
static json_t *ad_dropped_to_alertmanager(const ad_alert_t *a,
    int64_t repeat_ms);


ad_line_t
ad_alert_parse_line(const char *line, size_t len, ad_alert_t *a, char *why,
    size_t whysize)
{
    json_t        *o, *t;
    ad_line_t      rc;
    const char    *type;
    json_error_t   jerr;

    o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                   &jerr);
    if (o == NULL) {
        (void) snprintf(why, whysize, "not JSON: %s at column %d",
                        jerr.text, jerr.column);
        return AD_LINE_BAD;
    }

    if (!json_is_object(o)) {
        (void) snprintf(why, whysize, "not a JSON object");
        json_decref(o);
        return AD_LINE_BAD;
    }

    t = json_object_get(o, "type");
    type = json_string_value(t);

    if (type == NULL) {
        /* a deny line from a module that does not tag its lines */
        (void) snprintf(why, whysize, "no type");
        rc = AD_LINE_OTHER;

    } else if (strcmp(type, "alert") == 0) {
        rc = AD_LINE_ALERT;
        t = json_object_get(o, "kind");

        if (json_is_string(t)
            && strcmp(json_string_value(t),
                      ad_alert_kind_name(AD_KIND_DROPPED)) == 0)
        {
            (void) snprintf(why, whysize, "unknown \"kind\" \"%s\"",
                            ad_alert_kind_name(AD_KIND_DROPPED));
            rc = AD_LINE_BAD;

        } else if (ad_alert_from_json(o, a, why, whysize) != 0) {
            rc = AD_LINE_BAD;

        } else if (strlen(a->id) > AD_ID_MAX) {
            (void) snprintf(why, whysize, "\"id\" is longer than %d bytes",
                            AD_ID_MAX);
            rc = AD_LINE_BAD;

        } else if (strchr(a->id, AD_FID_SEP) != NULL) {
            /* the ids alertd makes have it: none may be taken */
            (void) snprintf(why, whysize, "\"id\" may hold letters, "
                            "digits, '_', '-' and '.' only");
            rc = AD_LINE_BAD;
        }

        /* alertd's own mark, never the journal's */
        a->lifted = 0;

    } else if (strcmp(type, "zone") == 0) {
        rc = ad_zone_parse(o, a, why, whysize);

    } else if (strcmp(type, "deny") == 0) {
        rc = AD_LINE_DENY;

    } else {
        (void) snprintf(why, whysize, "type \"%.32s\"", type);
        rc = AD_LINE_OTHER;
    }

    json_decref(o);

    return rc;
}


/*
 * A line that is not JSON may be a line cut short with a whole one glued
 * to it, the newline between them lost: a write a crash or a full disk
 * stopped half-way, or the zeros a power cut leaves at a file's end,
 * then nginx's next line.  Skipped whole, the line would take the alert
 * glued to it along.  Returns where in line the JSON object that runs to
 * the line's end starts ('{' then '"', after bytes that do not parse), or
 * 0: none, or line is JSON.  The starts are tried from the end, at most
 * AD_RESYNC_TRIES: a line the module writes is flat, and a '{"' in it
 * other than its start ends a string, at most one a field; the bytes
 * cut short before it may hold any number.  The nginx module escapes
 * every '"' of a string, so a client's bytes cannot make such a start.
 */

/* a zone line: AD_LINE_ZONE, with a->time, when it was made anew */

static ad_line_t
ad_zone_parse(const json_t *o, ad_alert_t *a, char *why, size_t whysize)
{
    int          present;
    const char  *state;

    memset(a, 0, sizeof(ad_alert_t));

    state = json_string_value(json_object_get(o, "state"));

    if (state == NULL || strcmp(state, "new") != 0) {
        (void) snprintf(why, whysize, "type \"zone\" of state \"%.32s\"",
                        state != NULL ? state : "");
        return AD_LINE_OTHER;
    }

    if (ad_json_string(o, "time", 1, 0, a->time, sizeof(a->time), NULL,
                       &present, why, whysize) != 0)
    {
        return AD_LINE_BAD;
    }

    if (ad_time_parse(a->time, &a->time_ms) != 0) {
        (void) snprintf(why, whysize, "\"time\" is not an RFC 3339 time");
        return AD_LINE_BAD;
    }

    /* its name, to log; a long one is cut */
    (void) ad_json_string(o, "zone", 0, 1, a->reason, sizeof(a->reason),
                          &a->reason_len, &present, why, whysize);

    return AD_LINE_ZONE;
}


size_t
ad_alert_resync(const char *line, size_t len)
{
    size_t         p, n, tries;
    json_t        *o;
    const char    *s;
    json_error_t   jerr;

    o = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
    if (o != NULL) {
        json_decref(o);
        return 0;
    }

    if (len < 3) {
        return 0;
    }

    /* from the end: the bytes cut short before it may hold any number */

    tries = 0;
    n = len - 2;                        /* starts looked at: 1 to n */

    while (n > 0 && tries < AD_RESYNC_TRIES) {
        s = memrchr(line + 1, '{', n);
        if (s == NULL) {
            break;
        }

        p = (size_t) (s - line);

        if (line[p + 1] == '"') {
            tries++;
            o = json_loadb(line + p, len - p,
                           JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
            if (o != NULL) {
                /* what starts with '{' and parses is an object */
                json_decref(o);
                return p;
            }
        }

        n = p - 1;
    }

    return 0;
}


int
ad_alert_from_json(const json_t *o, ad_alert_t *a, char *why,
    size_t whysize)
{
    int          present;
    char         buf[32];
    size_t       n;
    const char  *s;
    json_t      *v;

    memset(a, 0, sizeof(ad_alert_t));

    if (ad_json_string(o, "id", 1, 0, a->id, sizeof(a->id), NULL,
                       &present, why, whysize) != 0)
    {
        return -1;
    }

    if (!ad_id_valid(a->id)) {
        (void) snprintf(why, whysize, "\"id\" may hold letters, digits, "
                        "'_', '-' and '.' only");
        return -1;
    }

    if (ad_json_string(o, "time", 1, 0, a->time, sizeof(a->time), NULL,
                       &present, why, whysize) != 0)
    {
        return -1;
    }

    if (ad_time_parse(a->time, &a->time_ms) != 0) {
        (void) snprintf(why, whysize, "\"time\" is not an RFC 3339 time");
        return -1;
    }

    if (ad_json_string(o, "kind", 1, 0, buf, sizeof(buf), NULL, &present,
                       why, whysize) != 0)
    {
        return -1;
    }

    if (strcmp(buf, "deny_threshold") == 0) {
        a->kind = AD_KIND_DENY_THRESHOLD;
    } else if (strcmp(buf, "quarantine") == 0) {
        a->kind = AD_KIND_QUARANTINE;
    } else if (strcmp(buf, "alerts_dropped") == 0) {
        a->kind = AD_KIND_DROPPED;
    } else {
        (void) snprintf(why, whysize, "unknown \"kind\" \"%s\"", buf);
        return -1;
    }

    if (ad_json_string(o, "severity", 0, 0, buf, sizeof(buf), NULL,
                       &present, why, whysize) != 0)
    {
        return -1;
    }

    if (!present) {
        a->critical = (a->kind == AD_KIND_QUARANTINE);
    } else if (strcmp(buf, "critical") == 0) {
        a->critical = 1;
    } else if (strcmp(buf, "warning") != 0) {
        (void) snprintf(why, whysize, "\"severity\" is neither warning "
                        "nor critical");
        return -1;
    }

    if (ad_json_string(o, "client", 0, 1, a->client, sizeof(a->client),
                       &a->client_len, &present, why, whysize) != 0)
    {
        return -1;
    }
    a->has_client = present;

    /* an unidentified client's address; an empty one names no one */
    if (ad_json_string(o, "peer", 0, 1, a->peer, sizeof(a->peer),
                       &a->peer_len, &present, why, whysize) != 0)
    {
        return -1;
    }
    a->has_peer = (present && a->peer_len != 0);

    if (ad_json_string(o, "reason", 1, 0, a->reason, sizeof(a->reason),
                       &a->reason_len, &present, why, whysize) != 0)
    {
        return -1;
    }

    if (ad_json_string(o, "route", 0, 1, a->route, sizeof(a->route),
                       &a->route_len, &present, why, whysize) != 0)
    {
        return -1;
    }
    a->has_route = present;

    if (ad_json_uint(o, "count", &a->count, why, whysize) != 0
        || ad_json_uint(o, "window", &a->window, why, whysize) != 0)
    {
        return -1;
    }

    /* a long sample is cut, not refused: the alert matters more */
    v = json_object_get(o, "sample");
    if (v != NULL && !json_is_null(v)) {
        s = json_string_value(v);
        if (s == NULL) {
            (void) snprintf(why, whysize, "\"sample\" is not a string");
            return -1;
        }
        n = ad_utf8_cut(s, json_string_length(v), AD_SAMPLE_MAX);
        memcpy(a->sample, s, n);
        a->sample[n] = '\0';
        a->sample_len = n;
    }

    if (ad_json_string(o, "quarantine_until", 0, 1, a->until,
                       sizeof(a->until), NULL, &present, why, whysize) != 0)
    {
        return -1;
    }
    a->has_until = present;

    v = json_object_get(o, "folded");
    if (v != NULL && !json_is_boolean(v)) {
        (void) snprintf(why, whysize, "\"folded\" is not a boolean");
        return -1;
    }
    a->folded = json_is_true(v);

    if (ad_json_string(o, "lifted", 0, 1, a->lifted_time,
                       sizeof(a->lifted_time), NULL, &present, why, whysize)
        != 0)
    {
        return -1;
    }

    if (present) {
        if (a->kind != AD_KIND_QUARANTINE
            || ad_time_parse(a->lifted_time, &a->lifted_ms) != 0)
        {
            (void) snprintf(why, whysize, "\"lifted\" is not an RFC 3339 "
                            "time of a quarantine");
            return -1;
        }

        a->lifted = 1;
    }

    if (a->kind == AD_KIND_DROPPED) {
        v = json_object_get(o, "dropped");
        if (v == NULL
            || ad_dropped_from_json(v, &a->dropped, why, whysize) != 0)
        {
            if (v == NULL) {
                (void) snprintf(why, whysize, "no \"dropped\"");
            }
            return -1;
        }
    }

    return 0;
}


static int
ad_dropped_from_json(const json_t *o, ad_dropped_t *d, char *why,
    size_t whysize)
{
    int  present;

    if (!json_is_object(o)) {
        (void) snprintf(why, whysize, "\"dropped\" is not an object");
        return -1;
    }

    if (ad_json_uint(o, "critical", &d->critical, why, whysize) != 0
        || ad_json_string(o, "since", 1, 0, d->since, sizeof(d->since),
                          NULL, &present, why, whysize) != 0
        || ad_json_string(o, "first_id", 1, 0, d->first_id,
                          sizeof(d->first_id), NULL, &present, why,
                          whysize) != 0
        || ad_json_string(o, "first_time", 1, 0, d->first_time,
                          sizeof(d->first_time), NULL, &present, why,
                          whysize) != 0
        || ad_json_string(o, "last_id", 1, 0, d->last_id,
                          sizeof(d->last_id), NULL, &present, why,
                          whysize) != 0
        || ad_json_string(o, "last_time", 1, 0, d->last_time,
                          sizeof(d->last_time), NULL, &present, why,
                          whysize) != 0)
    {
        return -1;
    }

    return 0;
}


static json_t *
ad_dropped_to_json(const ad_dropped_t *d)
{
    return json_pack("{s:I, s:s, s:s, s:s, s:s, s:s}",
                     "critical", (json_int_t) d->critical,
                     "since", d->since,
                     "first_id", d->first_id, "first_time", d->first_time,
                     "last_id", d->last_id, "last_time", d->last_time);
}


/*
 * A string member: absent (unless required), null (when nullable, which
 * counts as absent) or a string that fits buf with a NUL after it.  With
 * lenp its length goes there and it may hold a NUL; without, one is
 * refused.
 */

static int
ad_json_string(const json_t *o, const char *name, int required,
    int nullable, char *buf, size_t size, size_t *lenp, int *present,
    char *why, size_t whysize)
{
    size_t   len;
    json_t  *v;

    *present = 0;
    buf[0] = '\0';

    if (lenp != NULL) {
        *lenp = 0;
    }

    v = json_object_get(o, name);

    if (v == NULL || (nullable && json_is_null(v))) {
        if (required) {
            (void) snprintf(why, whysize, "no \"%s\"", name);
            return -1;
        }
        return 0;
    }

    if (!json_is_string(v)) {
        (void) snprintf(why, whysize, "\"%s\" is not a string", name);
        return -1;
    }

    len = json_string_length(v);

    if (len >= size) {
        (void) snprintf(why, whysize, "\"%s\" is longer than %zu bytes",
                        name, size - 1);
        return -1;
    }

    if (len == 0 && required) {
        (void) snprintf(why, whysize, "\"%s\" is empty", name);
        return -1;
    }

    if (lenp == NULL && memchr(json_string_value(v), '\0', len) != NULL) {
        (void) snprintf(why, whysize, "\"%s\" holds a NUL (\\u0000)",
                        name);
        return -1;
    }

    memcpy(buf, json_string_value(v), len);
    buf[len] = '\0';
    *present = 1;

    if (lenp != NULL) {
        *lenp = len;
    }

    return 0;
}


static int
ad_json_uint(const json_t *o, const char *name, int64_t *v, char *why,
    size_t whysize)
{
    json_t  *j;

    *v = 0;

    j = json_object_get(o, name);
    if (j == NULL || json_is_null(j)) {
        return 0;
    }

    if (!json_is_integer(j) || json_integer_value(j) < 0) {
        (void) snprintf(why, whysize, "\"%s\" is not a whole number",
                        name);
        return -1;
    }

    *v = (int64_t) json_integer_value(j);

    return 0;
}


/*
 * ids become file names: [A-Za-z0-9][A-Za-z0-9_.~-]*; '~' only in the
 * ids alertd makes (AD_FID_SEP), see ad_alert_parse_line()
 */

static int
ad_id_valid(const char *id)
{
    size_t  i;
    char    c;

    for (i = 0; id[i] != '\0'; i++) {
        c = id[i];

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9'))
        {
            continue;
        }

        if (i > 0 && (c == '_' || c == '-' || c == '.' || c == AD_FID_SEP))
        {
            continue;
        }

        return 0;
    }

    return i > 0;
}


/* how much of s fits max bytes without splitting a UTF-8 sequence */

static size_t
ad_utf8_cut(const char *s, size_t len, size_t max)
{
    size_t  n;

    if (len <= max) {
        return len;
    }

    n = max;
    while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80) {
        n--;
    }

    return n;
}


/*
 * A field as text for a line or a summary: a NUL is written "\u0000"
 * (a client's "abc\u0000evil" is not shown as "abc"); cut to fit size.
 */

const char *
ad_field_show(char *buf, size_t size, const char *s, size_t len)
{
    size_t  i, n;

    n = 0;

    for (i = 0; i < len; i++) {
        if (s[i] != '\0') {
            if (n + 1 >= size) {
                break;
            }
            buf[n++] = s[i];
            continue;
        }

        if (n + 6 >= size) {
            break;
        }

        memcpy(buf + n, "\\u0000", 6);
        n += 6;
    }

    if (size > 0) {
        buf[n] = '\0';
    }

    return buf;
}


int
ad_field_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && memcmp(a, b, alen) == 0;
}


const char *
ad_alert_kind_name(ad_kind_t kind)
{
    switch (kind) {
    case AD_KIND_QUARANTINE:
        return "quarantine";
    case AD_KIND_DROPPED:
        return "alerts_dropped";
    default:
        return "deny_threshold";
    }
}


static int
ad_set(json_t *o, const char *name, json_t *v)
{
    /* json_object_set_new() takes v even when it fails */
    return (v == NULL) ? -1 : json_object_set_new(o, name, v);
}


json_t *
ad_alert_to_json(const ad_alert_t *a)
{
    int      rc;
    json_t  *o;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }

    rc = ad_set(o, "id", json_string(a->id))
         | ad_set(o, "time", json_string(a->time))
         | ad_set(o, "kind", json_string(ad_alert_kind_name(a->kind)))
         | ad_set(o, "severity",
                  json_string(a->critical ? "critical" : "warning"))
         | ad_set(o, "client",
                  a->has_client ? json_stringn(a->client, a->client_len)
                                : json_null())
         | ad_set(o, "reason", json_stringn(a->reason, a->reason_len))
         | ad_set(o, "route",
                  a->has_route ? json_stringn(a->route, a->route_len)
                               : json_null())
         | ad_set(o, "count", json_integer(a->count))
         | ad_set(o, "window", json_integer(a->window))
         | ad_set(o, "sample", json_stringn(a->sample, a->sample_len));

    if (a->has_peer) {
        rc |= ad_set(o, "peer", json_stringn(a->peer, a->peer_len));
    }

    if (a->has_until) {
        rc |= ad_set(o, "quarantine_until", json_string(a->until));
    }

    if (a->folded) {
        rc |= ad_set(o, "folded", json_true());
    }

    if (a->lifted) {
        rc |= ad_set(o, "lifted", json_string(a->lifted_time));
    }

    if (a->kind == AD_KIND_DROPPED) {
        rc |= ad_set(o, "dropped", ad_dropped_to_json(&a->dropped));
    }

    rc |= ad_set(o, "source", json_string("airlock"));

    if (rc != 0) {
        json_decref(o);
        return NULL;
    }

    return o;
}


/*
 * Alertmanager API v2: POST /api/v2/alerts takes an array of alerts.  The
 * labels name the alert (Alertmanager deduplicates on them), so a folded
 * repeat updates the alert its first one opened.  endsAt is two repeat
 * intervals after the alert is sent (after its time, if that is later):
 * the next fold of its group is sent at most one interval after it, so a
 * storm that goes on renews the alert an interval before it would end,
 * and one that stops resolves by itself.  Two intervals after the
 * alert's own time would not do: a fold's time is its window's last
 * repeat, which may be the window's first moment, and its endsAt would
 * then be the very moment the next fold is sent, the alert resolved
 * and fired again by any delay.  And an alert sent late (the sink was
 * down, alertd stopped) must not have an endsAt in the past: Alertmanager
 * would take it as resolved already and notify no one.  A quarantine
 * fires at least until its quarantine_until, when the client is let in
 * again.
 */

json_t *
ad_alert_to_alertmanager(const ad_alert_t *a, int64_t repeat_ms)
{
    int          rc;
    char         who[AD_SHOW_MAX + 32];
    char         reason[AD_SHOW_MAX], show[AD_SHOW_MAX];
    char         summary[AD_SHOW_MAX * 2 + AD_TIME_MAX + 128];
    json_t      *labels, *ann;

    if (a->kind == AD_KIND_DROPPED) {
        return ad_dropped_to_alertmanager(a, repeat_ms);
    }

    /* the summary is text to read: a NUL in it is shown, not cut at */
    (void) ad_field_show(reason, sizeof(reason), a->reason, a->reason_len);

    if (a->has_client) {
        (void) snprintf(who, sizeof(who), "client %s",
                        ad_field_show(show, sizeof(show), a->client,
                                      a->client_len));
    } else if (a->has_peer) {
        (void) snprintf(who, sizeof(who), "an unidentified client (peer %s)",
                        ad_field_show(show, sizeof(show), a->peer,
                                      a->peer_len));
    } else {
        (void) snprintf(who, sizeof(who), "an unidentified client");
    }

    if (a->lifted) {
        (void) snprintf(summary, sizeof(summary),
                        "%s let in again at %s: nginx made its deny zone "
                        "anew, which lifts every quarantine (%s)",
                        who, a->lifted_time, reason);

    } else if (a->folded) {
        (void) snprintf(summary, sizeof(summary),
                        "%s: %lld more %s alerts in %llds (%s)", who,
                        (long long) a->count,
                        a->kind == AD_KIND_QUARANTINE ? "quarantine"
                                                      : "deny",
                        (long long) a->window, reason);

    } else if (a->kind == AD_KIND_QUARANTINE) {
        (void) snprintf(summary, sizeof(summary),
                        "%s quarantined%s%s after %lld denials in %llds "
                        "(%s)", who, a->has_until ? " until " : "",
                        a->has_until ? a->until : "", (long long) a->count,
                        (long long) a->window, reason);

    } else {
        (void) snprintf(summary, sizeof(summary),
                        "%s denied %lld times in %llds (%s)", who,
                        (long long) a->count, (long long) a->window,
                        reason);
    }

    labels = json_object();
    ann = json_object();

    if (labels == NULL || ann == NULL) {
        json_decref(labels);
        json_decref(ann);
        return NULL;
    }

    rc = ad_set(labels, "alertname",
                json_string(a->kind == AD_KIND_QUARANTINE
                            ? "AirlockQuarantine" : "AirlockDenied"))
         | ad_set(labels, "client",
                  json_stringn(a->client, a->has_client ? a->client_len : 0))
         | ad_set(labels, "route",
                  json_stringn(a->route, a->has_route ? a->route_len : 0))
         | ad_set(labels, "reason", json_stringn(a->reason, a->reason_len))
         | ad_set(labels, "severity",
                  json_string(a->critical ? "critical" : "warning"))
         | ad_set(labels, "source", json_string("airlock"));

    /* only when there is one: the labels of other alerts stay as they were */
    if (a->has_peer) {
        rc |= ad_set(labels, "peer", json_stringn(a->peer, a->peer_len));
    }

    rc |= ad_set(ann, "summary", json_string(summary))
          | ad_set(ann, "sample", json_stringn(a->sample, a->sample_len))
          | ad_set(ann, "id", json_string(a->id));

    if (a->has_until) {
        rc |= ad_set(ann, "quarantine_until", json_string(a->until));
    }

    if (a->lifted) {
        rc |= ad_set(ann, "lifted", json_string(a->lifted_time));
    }

    return ad_am_alert(a, repeat_ms, labels, ann, rc);
}


/*
 * The array Alertmanager's API takes, of one alert: labels and ann (taken
 * either way), active from a's time (now, if that is more than
 * AD_CLOCK_SLACK ahead) to two repeat intervals after now (or after its
 * start, if later), a quarantine at least to its end, which moves with
 * its start.  a's times are on the wall clock of when alertd read it: a
 * step of the clock since moves them with it (see ad_am_stepped()).
 * NULL when rc, the result of filling them, says that failed.
 */

static json_t *
ad_am_alert(const ad_alert_t *a, int64_t repeat_ms, json_t *labels,
    json_t *ann, int rc)
{
    char     starts[AD_TIME_MAX], ends[AD_TIME_MAX];
    json_t  *arr, *alert;
    int64_t  start, end, now, until, stepped;

    arr = json_array();
    alert = json_object();

    if (rc != 0 || arr == NULL || alert == NULL) {
        json_decref(arr);
        json_decref(alert);
        json_decref(labels);
        json_decref(ann);
        return NULL;
    }

    now = ad_now_ms();
    stepped = ad_am_stepped(a, now);
    start = a->time_ms + stepped;

    /*
     * Stamped ahead of our clock (nginx's clock, since set right): taken
     * now, as grouping takes it, or Alertmanager would show it firing
     * until that time is past, a day for a clock a day ahead.
     */

    if (start > now + AD_CLOCK_SLACK) {
        start = now;
    }

    end = ((start > now) ? start : now) + 2 * repeat_ms;

    /*
     * nginx times a quarantine on its monotonic clock: it lasts
     * quarantine_until - time from the alert, whatever the wall clock
     * does.  Its end moves with its start: back with a start stamped by
     * a clock that was ahead, or it would fire as long after the
     * quarantine as the clock was ahead, a day for a day; forward with
     * a step forward since it was read, or it would be resolved while
     * the client is still kept out.
     */

    if (a->kind == AD_KIND_QUARANTINE && a->has_until
        && ad_time_parse(a->until, &until) == 0)
    {
        until -= a->time_ms - start;

        if (until > end) {
            end = until;
        }
    }

    /*
     * Lifted when nginx made its deny zone anew: resolved then, or now
     * if that time is ahead of our clock; never before its start, which
     * Alertmanager would refuse.
     */

    if (a->lifted) {
        end = a->lifted_ms + stepped;

        if (end > now + AD_CLOCK_SLACK) {
            end = now;
        }

        if (end < start) {
            end = start;
        }
    }

    ad_time_format(starts, sizeof(starts), start);
    ad_time_format(ends, sizeof(ends), end);

    rc = ad_set(alert, "labels", labels)
         | ad_set(alert, "annotations", ann)
         | ad_set(alert, "startsAt", json_string(starts))
         | ad_set(alert, "endsAt", json_string(ends));

    /* the array takes alert even when it fails, as ad_set() does */
    rc |= json_array_append_new(arr, alert);

    if (rc != 0) {
        json_decref(arr);
        return NULL;
    }

    return arr;
}


/*
 * How far the wall clock stepped since alertd read a (or made it), in
 * ms: the clock's distance from the boot clock now, less then.  A step
 * forward while a quarantine waited in the outbox (its sink down, the
 * alerts before it) would otherwise end it on the clock before the
 * step, as much too early; the quarantine lasts its length from when
 * nginx wrote it, on nginx's monotonic clock.  0 for less than
 * AD_CLOCK_STEP, the two clocks read a moment apart, and for an alert
 * read before the last boot, or by an alertd that did not save when.
 */

static int64_t
ad_am_stepped(const ad_alert_t *a, int64_t now)
{
    int64_t  by;

    if (!a->clock_known) {
        return 0;
    }

    by = (now - ad_boot_ms()) - a->clock_off;

    return (by > -AD_CLOCK_STEP && by < AD_CLOCK_STEP) ? 0 : by;
}


/*
 * The report of alerts a full outbox did not take, as its own alert
 * name: a silence or a route made for the denials must not hide it.
 */

static json_t *
ad_dropped_to_alertmanager(const ad_alert_t *a, int64_t repeat_ms)
{
    int          rc;
    char         summary[AD_TIME_MAX * 3 + 256];
    json_t      *labels, *ann;

    (void) snprintf(summary, sizeof(summary),
                    "%lld alerts (%lld critical) were not sent here: "
                    "airlock-alertd's outbox for this sink was full from "
                    "%s to %s; they are in the Airlock journal",
                    (long long) a->count, (long long) a->dropped.critical,
                    a->dropped.first_time, a->dropped.last_time);

    labels = json_object();
    ann = json_object();

    if (labels == NULL || ann == NULL) {
        json_decref(labels);
        json_decref(ann);
        return NULL;
    }

    rc = ad_set(labels, "alertname", json_string("AirlockAlertsDropped"))
         | ad_set(labels, "reason", json_stringn(a->reason, a->reason_len))
         | ad_set(labels, "severity",
                  json_string(a->critical ? "critical" : "warning"))
         | ad_set(labels, "source", json_string("airlock"));

    rc |= ad_set(ann, "summary", json_string(summary))
          | ad_set(ann, "id", json_string(a->id))
          | ad_set(ann, "count", json_sprintf("%lld", (long long) a->count))
          | ad_set(ann, "critical",
                   json_sprintf("%lld", (long long) a->dropped.critical))
          | ad_set(ann, "since", json_string(a->dropped.since))
          | ad_set(ann, "first_id", json_string(a->dropped.first_id))
          | ad_set(ann, "first_time", json_string(a->dropped.first_time))
          | ad_set(ann, "last_id", json_string(a->dropped.last_id))
          | ad_set(ann, "last_time", json_string(a->dropped.last_time));

    return ad_am_alert(a, repeat_ms, labels, ann, rc);
}
