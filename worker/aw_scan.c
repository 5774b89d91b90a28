/*
 * The ids of a job envelope too large to parse (aw_job_parse() refuses it
 * unread), so that its refusal still reaches the client waiting on
 * result:<job_id>.  No allocation and no library: the fuzz target
 * (tests/fuzz/fuzz_envelope_ids.c) builds this file on its own.
 */

#include <ctype.h>
#include <string.h>

#include "aw.h"


/* jansson's own nesting limit (JSON_PARSER_MAX_DEPTH) */
#define AW_SCAN_DEPTH  2048


static size_t aw_scan_string(const char *p, size_t len, size_t i,
    int *escaped);
static size_t aw_scan_value(const char *p, size_t len, size_t i);
static int aw_scan_name_is(const char *p, size_t i, size_t end,
    const char *name);


/*
 * These read the top level of the JSON in one pass that builds nothing: a
 * position, and the open brackets as one bit each up to jansson's depth.
 * A string or a value that is not well-formed as far as the scan goes
 * stops it.
 *
 * aw_scan_string(): the position after the string opening at i, or 0;
 * *escaped when it holds a backslash escape.
 */

static size_t
aw_scan_string(const char *p, size_t len, size_t i, int *escaped)
{
    *escaped = 0;

    for (i++; i < len; i++) {
        if (p[i] == '"') {
            return i + 1;
        }

        if ((unsigned char) p[i] < 0x20) {
            return 0;
        }

        if (p[i] == '\\') {
            *escaped = 1;
            i++;
        }
    }

    return 0;
}


/* The position after the value starting at i, or 0. */

static size_t
aw_scan_value(const char *p, size_t len, size_t i)
{
    int            escaped;
    size_t         depth, start;
    unsigned char  open[AW_SCAN_DEPTH / 8];

    if (i >= len) {
        return 0;
    }

    if (p[i] == '"') {
        return aw_scan_string(p, len, i, &escaped);
    }

    if (p[i] != '{' && p[i] != '[') {
        /* a number, true, false or null */
        for (start = i; i < len; i++) {
            if (!isalnum((unsigned char) p[i]) && p[i] != '.'
                && p[i] != '+' && p[i] != '-')
            {
                break;
            }
        }

        return i > start ? i : 0;
    }

    /* an object or an array: brackets matched, strings skipped */

    depth = 0;

    while (i < len) {
        switch (p[i]) {

        case '"':
            i = aw_scan_string(p, len, i, &escaped);
            if (i == 0) {
                return 0;
            }
            continue;

        case '{':
        case '[':
            if (depth == AW_SCAN_DEPTH) {
                return 0;
            }

            if (p[i] == '{') {
                open[depth / 8] |= (unsigned char) (1 << (depth % 8));

            } else {
                open[depth / 8] &= (unsigned char) ~(1 << (depth % 8));
            }

            depth++;
            break;

        case '}':
        case ']':
            if (depth == 0
                || ((open[(depth - 1) / 8] >> ((depth - 1) % 8)) & 1)
                   != (p[i] == '}'))
            {
                return 0;
            }

            if (--depth == 0) {
                return i + 1;
            }
            break;

        default:
            break;
        }

        i++;
    }

    return 0;
}


/*
 * Whether the contents of a well-formed string, p[i] to p[end - 1]
 * (between its quotes), escapes and all, read as jansson reads them, are
 * name (plain ASCII): "job\u005fid" is "job_id".
 */

static int
aw_scan_name_is(const char *p, size_t i, size_t end, const char *name)
{
    int       c, k, d;
    unsigned  cp;

    for ( ; i < end; i++, name++) {
        c = (unsigned char) p[i];

        if (c == '\\') {
            if (++i >= end) {
                return 0;
            }

            switch (p[i]) {

            case 'b':
                c = '\b';
                break;

            case 'f':
                c = '\f';
                break;

            case 'n':
                c = '\n';
                break;

            case 'r':
                c = '\r';
                break;

            case 't':
                c = '\t';
                break;

            case 'u':
                cp = 0;
                for (k = 0; k < 4; k++) {
                    if (++i >= end || !isxdigit((unsigned char) p[i])) {
                        return 0;
                    }
                    d = (unsigned char) p[i];
                    cp = cp * 16 + (unsigned) (isdigit(d) ? d - '0'
                                               : tolower(d) - 'a' + 10);
                }
                /* no ASCII name has a character beyond */
                if (cp == 0 || cp > 0x7f) {
                    return 0;
                }
                c = (int) cp;
                break;

            default:
                c = (unsigned char) p[i];
                break;
            }
        }

        if (*name == '\0' || c != (unsigned char) *name) {
            return 0;
        }
    }

    return *name == '\0';
}


/*
 * The job_id and session_id of an envelope too large to parse, into
 * jid and sid (AW_ID_MAX + 1 bytes each), "" when not found: each taken
 * only when the envelope is one object whose top level names it exactly
 * once (a name written with escapes counted as what it reads), that name
 * without escapes, with a plain string of at most AW_ID_MAX bytes as its
 * value (an id has no character that needs an escape; the caller checks
 * it is one).  aw_job_parse() takes the ids of an envelope refused for a
 * duplicate key by the same rule.  A "job_id" inside the script or an
 * input is inside a string or a nested value, never read as one.
 */

void
aw_envelope_ids(const char *raw, size_t len, char *jid, char *sid)
{
    int      escaped, vesc, njob, nsess;
    char     jbuf[AW_ID_MAX + 1], sbuf[AW_ID_MAX + 1], *dst;
    size_t   i, k, ks, v, ve;

    njob = 0;
    nsess = 0;
    jbuf[0] = '\0';
    sbuf[0] = '\0';
    jid[0] = '\0';
    sid[0] = '\0';

    i = 0;
    while (i < len && isspace((unsigned char) raw[i])) {
        i++;
    }

    if (i >= len || raw[i] != '{') {
        return;
    }

    i++;

    for ( ;; ) {
        while (i < len && isspace((unsigned char) raw[i])) {
            i++;
        }

        if (i >= len || raw[i] != '"') {
            return;
        }

        ks = i + 1;
        k = aw_scan_string(raw, len, i, &escaped);
        if (k == 0) {
            return;
        }

        i = k;
        while (i < len && isspace((unsigned char) raw[i])) {
            i++;
        }

        if (i >= len || raw[i] != ':') {
            return;
        }

        i++;
        while (i < len && isspace((unsigned char) raw[i])) {
            i++;
        }

        v = i;
        ve = aw_scan_value(raw, len, i);
        if (ve == 0) {
            return;
        }

        dst = NULL;

        /*
         * a name written with escapes counts as jansson reads it (a
         * second "job_id" is a duplicate however it is written), but
         * its value is not taken
         */

        if (aw_scan_name_is(raw, ks, k - 1, "job_id")) {
            njob++;
            dst = jbuf;

        } else if (aw_scan_name_is(raw, ks, k - 1, "session_id")) {
            nsess++;
            dst = sbuf;
        }

        if (dst != NULL) {
            dst[0] = '\0';

            if (!escaped && raw[v] == '"') {
                (void) aw_scan_string(raw, len, v, &vesc);

                if (!vesc && ve - v - 2 <= AW_ID_MAX) {
                    memcpy(dst, raw + v + 1, ve - v - 2);
                    dst[ve - v - 2] = '\0';
                }
            }
        }

        i = ve;
        while (i < len && isspace((unsigned char) raw[i])) {
            i++;
        }

        if (i < len && raw[i] == ',') {
            i++;
            continue;
        }

        if (i < len && raw[i] == '}') {
            break;
        }

        return;
    }

    /* the rest: white space only */

    for (i++; i < len; i++) {
        if (!isspace((unsigned char) raw[i])) {
            return;
        }
    }

    if (njob == 1) {
        memcpy(jid, jbuf, sizeof(jbuf));
    }

    if (nsess == 1) {
        memcpy(sid, sbuf, sizeof(sbuf));
    }
}
