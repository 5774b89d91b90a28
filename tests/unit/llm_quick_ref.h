/*
 * The reference reading of a usage the quick reader is checked against,
 * where it leaves the strict scan: counts written as decimals or strings
 * (read through jansson and strtod, rounded up), and a usage the strict
 * scanner refuses (read by a JSON reader of its own, as JSON.parse reads
 * it, the last key).  Shared by tests/unit/llm_quick.c and
 * tests/fuzz/fuzz_llm_quick.c.
 */

#ifndef LLM_QUICK_REF_H
#define LLM_QUICK_REF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "airlock.h"
#include "al_llm.h"
#include "al_llm_internal.h"


/* a decimal, or a string of a number, through jansson and strtod */

static uint64_t
ref_lax(const al_llm_resp_t *r, const al_llm_jfield_t *f, uint64_t v)
{
    char          *end;
    double         d;
    json_t        *j;
    uint64_t       x;
    json_error_t   err;

    if (f->type != AL_LLM_JT_REAL && f->type != AL_LLM_JT_STRING) {
        return v;
    }

    j = json_loadb(r->usage + f->at, f->len, JSON_DECODE_ANY, &err);
    if (j == NULL) {
        return v;
    }

    d = 0;

    if (json_is_real(j)) {
        d = json_real_value(j);

    } else if (json_is_string(j)
               && json_string_length(j) > 0
               && strspn(json_string_value(j), "0123456789.eE+-")
                  == json_string_length(j))
    {
        d = strtod(json_string_value(j), &end);

        if (*end != '\0') {
            d = 0;
        }
    }

    json_decref(j);

    if (!(d > 0)) {
        return v;
    }

    x = (d >= 281474976710656.0) ? (UINT64_C(1) << 48) : (uint64_t) d;
    x += (d < 281474976710656.0 && (double) x < d);

    return (x > v) ? x : v;
}


/*
 * A usage the strict scanner refuses, read as JSON.parse reads it, by a
 * reader of RFC 8259 of its own (no jansson, which refuses some valid
 * JSON: "\u0000", lone surrogates, integers past 64 bits, numbers past a
 * double): the last member of a name, names decoded; an integer count
 * past 2^48 is 2^48, a negative one none; a decimal or a string of a
 * number beside an integer count its number rounded up, at most 2^48
 * (Infinity too).  Invalid JSON, invalid UTF-8 included, is no usage.
 */

#define REF_DEPTH  2048                 /* jansson's */

typedef struct {
    size_t    at;                       /* a member's value: where */
    size_t    end;
    unsigned  set;
} ref_span_t;

static int ref_value(const unsigned char *p, size_t n, size_t *i,
    unsigned depth);


static void
ref_ws(const unsigned char *p, size_t n, size_t *i)
{
    while (*i < n && (p[*i] == ' ' || p[*i] == '\t' || p[*i] == '\n'
                      || p[*i] == '\r'))
    {
        (*i)++;
    }
}


/* a UTF-8 sequence of RFC 3629 at p[i]: its length, 0 if none */

static size_t
ref_utf8(const unsigned char *p, size_t n, size_t i)
{
    size_t    k, len;
    uint32_t  cp, min;

    if (p[i] < 0x80) {
        return 1;
    }

    if (p[i] >= 0xc0 && p[i] < 0xe0) {
        len = 2;
        cp = p[i] & 0x1f;
        min = 0x80;

    } else if (p[i] >= 0xe0 && p[i] < 0xf0) {
        len = 3;
        cp = p[i] & 0x0f;
        min = 0x800;

    } else if (p[i] >= 0xf0 && p[i] < 0xf8) {
        len = 4;
        cp = p[i] & 0x07;
        min = 0x10000;

    } else {
        return 0;
    }

    if (n - i < len) {
        return 0;
    }

    for (k = 1; k < len; k++) {
        if ((p[i + k] & 0xc0) != 0x80) {
            return 0;
        }

        cp = cp << 6 | (p[i + k] & 0x3f);
    }

    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }

    return len;
}


static int
ref_hex(const unsigned char *p, size_t n, size_t i, uint32_t *v)
{
    size_t  k;

    *v = 0;

    if (n - i < 4) {
        return -1;
    }

    for (k = 0; k < 4; k++) {
        *v <<= 4;

        if (p[i + k] >= '0' && p[i + k] <= '9') {
            *v |= p[i + k] - '0';

        } else if ((p[i + k] | 0x20) >= 'a' && (p[i + k] | 0x20) <= 'f') {
            *v |= (p[i + k] | 0x20) - 'a' + 10;

        } else {
            return -1;
        }
    }

    return 0;
}


/*
 * The string whose '"' is at p[*i], decoded into out (up to cap bytes;
 * *olen its whole length; a lone surrogate as the three bytes of its
 * code point); -1 if invalid.
 */

static int
ref_string(const unsigned char *p, size_t n, size_t *i, unsigned char *out,
    size_t cap, size_t *olen)
{
    size_t         k, len, o;
    uint32_t       cp, lo;
    unsigned char  b[4];

    o = 0;
    (*i)++;

    for ( ;; ) {
        if (*i >= n || p[*i] < 0x20) {
            return -1;
        }

        if (p[*i] == '"') {
            (*i)++;
            *olen = o;
            return 0;
        }

        if (p[*i] != '\\') {
            len = ref_utf8(p, n, *i);

            if (len == 0) {
                return -1;
            }

            for (k = 0; k < len; k++, o++) {
                if (o < cap) {
                    out[o] = p[*i + k];
                }
            }

            *i += len;
            continue;
        }

        if (++(*i) == n) {
            return -1;
        }

        len = 1;

        switch (p[*i]) {
        case '"': b[0] = '"'; break;
        case '\\': b[0] = '\\'; break;
        case '/': b[0] = '/'; break;
        case 'b': b[0] = '\b'; break;
        case 'f': b[0] = '\f'; break;
        case 'n': b[0] = '\n'; break;
        case 'r': b[0] = '\r'; break;
        case 't': b[0] = '\t'; break;

        case 'u':
            if (ref_hex(p, n, *i + 1, &cp) != 0) {
                return -1;
            }

            *i += 4;

            if (cp >= 0xd800 && cp <= 0xdbff && n - *i >= 7
                && p[*i + 1] == '\\' && p[*i + 2] == 'u'
                && ref_hex(p, n, *i + 3, &lo) == 0
                && lo >= 0xdc00 && lo <= 0xdfff)
            {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                *i += 6;
            }

            if (cp < 0x80) {
                b[0] = (unsigned char) cp;

            } else if (cp < 0x800) {
                b[0] = (unsigned char) (0xc0 | cp >> 6);
                b[1] = (unsigned char) (0x80 | (cp & 0x3f));
                len = 2;

            } else if (cp < 0x10000) {
                b[0] = (unsigned char) (0xe0 | cp >> 12);
                b[1] = (unsigned char) (0x80 | (cp >> 6 & 0x3f));
                b[2] = (unsigned char) (0x80 | (cp & 0x3f));
                len = 3;

            } else {
                b[0] = (unsigned char) (0xf0 | cp >> 18);
                b[1] = (unsigned char) (0x80 | (cp >> 12 & 0x3f));
                b[2] = (unsigned char) (0x80 | (cp >> 6 & 0x3f));
                b[3] = (unsigned char) (0x80 | (cp & 0x3f));
                len = 4;
            }

            break;

        default:
            return -1;
        }

        (*i)++;

        for (k = 0; k < len; k++, o++) {
            if (o < cap) {
                out[o] = b[k];
            }
        }
    }
}


/* a number at p[*i]: 1 an integer, 2 a decimal, -1 no number */

static int
ref_number(const unsigned char *p, size_t n, size_t *i)
{
    int  kind;

    kind = 1;

    if (*i < n && p[*i] == '-') {
        (*i)++;
    }

    if (*i == n || p[*i] < '0' || p[*i] > '9') {
        return -1;
    }

    if (p[(*i)++] != '0') {
        while (*i < n && p[*i] >= '0' && p[*i] <= '9') {
            (*i)++;
        }
    }

    if (*i < n && p[*i] == '.') {
        (*i)++;
        kind = 2;

        if (*i == n || p[*i] < '0' || p[*i] > '9') {
            return -1;
        }

        while (*i < n && p[*i] >= '0' && p[*i] <= '9') {
            (*i)++;
        }
    }

    if (*i < n && (p[*i] == 'e' || p[*i] == 'E')) {
        (*i)++;
        kind = 2;

        if (*i < n && (p[*i] == '+' || p[*i] == '-')) {
            (*i)++;
        }

        if (*i == n || p[*i] < '0' || p[*i] > '9') {
            return -1;
        }

        while (*i < n && p[*i] >= '0' && p[*i] <= '9') {
            (*i)++;
        }
    }

    return kind;
}


/*
 * The object at p[*i] ('{'); the value of the last member named
 * names[k] (NULL: none) recorded in spans[k].
 */

static int
ref_object(const unsigned char *p, size_t n, size_t *i, unsigned depth,
    const char *const *names, ref_span_t *spans)
{
    size_t         k, at, len;
    unsigned char  key[64];

    if (depth > REF_DEPTH) {
        return -1;
    }

    (*i)++;
    ref_ws(p, n, i);

    if (*i < n && p[*i] == '}') {
        (*i)++;
        return 0;
    }

    for ( ;; ) {
        if (*i == n || p[*i] != '"'
            || ref_string(p, n, i, key, sizeof(key), &len) != 0)
        {
            return -1;
        }

        ref_ws(p, n, i);

        if (*i == n || p[(*i)++] != ':') {
            return -1;
        }

        ref_ws(p, n, i);
        at = *i;

        if (ref_value(p, n, i, depth) != 0) {
            return -1;
        }

        for (k = 0; names != NULL && names[k] != NULL; k++) {
            if (len == strlen(names[k]) && len <= sizeof(key)
                && memcmp(key, names[k], len) == 0)
            {
                spans[k].at = at;
                spans[k].end = *i;
                spans[k].set = 1;
            }
        }

        ref_ws(p, n, i);

        if (*i == n) {
            return -1;
        }

        if (p[*i] == '}') {
            (*i)++;
            return 0;
        }

        if (p[(*i)++] != ',') {
            return -1;
        }

        ref_ws(p, n, i);
    }
}


static int
ref_value(const unsigned char *p, size_t n, size_t *i, unsigned depth)
{
    size_t  len;

    if (*i == n) {
        return -1;
    }

    switch (p[*i]) {

    case '{':
        return ref_object(p, n, i, depth + 1, NULL, NULL);

    case '[':
        if (depth + 1 > REF_DEPTH) {
            return -1;
        }

        (*i)++;
        ref_ws(p, n, i);

        if (*i < n && p[*i] == ']') {
            (*i)++;
            return 0;
        }

        for ( ;; ) {
            if (ref_value(p, n, i, depth + 1) != 0) {
                return -1;
            }

            ref_ws(p, n, i);

            if (*i == n) {
                return -1;
            }

            if (p[*i] == ']') {
                (*i)++;
                return 0;
            }

            if (p[(*i)++] != ',') {
                return -1;
            }

            ref_ws(p, n, i);
        }

    case '"':
        return ref_string(p, n, i, NULL, 0, &len);

    case 't':
    case 'n':
        if (n - *i >= 4 && (memcmp(p + *i, "true", 4) == 0
                            || memcmp(p + *i, "null", 4) == 0))
        {
            *i += 4;
            return 0;
        }

        return -1;

    case 'f':
        if (n - *i >= 5 && memcmp(p + *i, "false", 5) == 0) {
            *i += 5;
            return 0;
        }

        return -1;

    default:
        return (ref_number(p, n, i) > 0) ? 0 : -1;
    }
}


/*
 * A count's value at span s: *x a non-negative integer (at most 2^48),
 * else *d the number of a decimal or of a string of one (Infinity past a
 * double), else 0 for both.
 */

static void
ref_count(const unsigned char *p, const ref_span_t *s, uint64_t *x,
    double *d)
{
    int            kind;
    char          *end, buf[4100];
    size_t         i, k, len;
    unsigned char  str[4100];

    *x = 0;
    *d = 0;

    if (!s->set) {
        return;
    }

    i = s->at;

    if (p[i] == '"') {
        if (ref_string(p, s->end, &i, str, sizeof(str) - 1, &len) != 0
            || len == 0 || len >= sizeof(str))
        {
            return;
        }

        for (k = 0; k < len; k++) {
            if (strchr("0123456789.eE+-", str[k]) == NULL || str[k] == 0) {
                return;
            }
        }

        str[len] = '\0';
        *d = strtod((const char *) str, &end);

        if (*end != '\0') {
            *d = 0;
        }

        return;
    }

    kind = ref_number(p, s->end, &i);

    if (kind < 0 || i != s->end || s->end - s->at >= sizeof(buf)) {
        return;
    }

    if (kind == 2) {
        memcpy(buf, p + s->at, s->end - s->at);
        buf[s->end - s->at] = '\0';
        *d = strtod(buf, NULL);
        return;
    }

    if (p[s->at] == '-') {
        return;
    }

    for (i = s->at; i < s->end; i++) {
        *x = *x * 10 + (uint64_t) (p[i] - '0');

        if (*x > (UINT64_C(1) << 48)) {
            *x = UINT64_C(1) << 48;     /* and stays past it */
        }
    }
}


static int
ref_loose(const al_llm_resp_t *r, al_llm_usage_t *u)
{
    int                   ant;
    size_t                i, k, obj;
    double                d[AL_LLM_USAGE_V];
    unsigned              any;
    uint64_t              x[AL_LLM_USAGE_V];
    ref_span_t            top[5], sub[2], s[AL_LLM_USAGE_V];
    const char *const    *names, *const *subs;
    const unsigned char  *p;

    static const char *const  oai[] = {
        "prompt_tokens", "completion_tokens", "total_tokens",
        "prompt_tokens_details", NULL
    };
    static const char *const  resp[] = {
        "input_tokens", "output_tokens", "total_tokens",
        "input_tokens_details", NULL
    };
    static const char *const  ant_names[] = {
        "input_tokens", "cache_read_input_tokens",
        "cache_creation_input_tokens", "output_tokens", "cache_creation",
        NULL
    };
    static const char *const  details[] = { "cached_tokens", NULL };
    static const char *const  ant_cc[] = {
        "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", NULL
    };

    p = (const unsigned char *) r->usage;
    ant = (r->kind == AL_LLM_ANTHROPIC);
    names = ant ? ant_names : (r->endpoint == AL_LLM_EP_RESPONSES) ? resp
                                                                 : oai;
    subs = ant ? ant_cc : details;
    obj = ant ? 4 : 3;

    memset(top, 0, sizeof(top));
    memset(sub, 0, sizeof(sub));
    memset(s, 0, sizeof(s));

    i = 0;
    ref_ws(p, r->usage_len, &i);

    if (i == r->usage_len || p[i] != '{'
        || ref_object(p, r->usage_len, &i, 1, names, top) != 0)
    {
        return -1;
    }

    ref_ws(p, r->usage_len, &i);

    if (i != r->usage_len) {
        return -1;
    }

    /* the object whose members are counts too: the last of its name */

    if (top[obj].set && p[top[obj].at] == '{') {
        i = top[obj].at;
        (void) ref_object(p, top[obj].end, &i, 2, subs, sub);
    }

    for (k = 0; k < obj; k++) {
        s[k] = top[k];
    }

    if (ant) {
        s[5] = sub[0];
        s[6] = sub[1];

    } else {
        s[4] = sub[0];
    }

    any = 0;

    for (k = 0; k < AL_LLM_USAGE_V; k++) {
        ref_count(p, &s[k], &x[k], &d[k]);
        any |= (k != 4 && x[k] != 0);
    }

    for (k = 0; any && k < AL_LLM_USAGE_V; k++) {
        if (k == 4 || !(d[k] > 0)) {
            continue;
        }

        if (d[k] >= 281474976710656.0) {
            x[k] = UINT64_C(1) << 48;

        } else if ((double) x[k] < d[k]) {
            x[k] = (uint64_t) d[k] + ((double) (uint64_t) d[k] < d[k]);
        }
    }

    if (ant) {
        al_llm_usage_anthropic(x[0], x[1], x[2], x[5], x[6], x[3], u);
        return 0;
    }

    u->prompt_tokens = x[0];
    u->completion_tokens = x[1];
    u->total_tokens = x[2];
    u->cached_tokens = x[4];

    al_llm_usage_total(u);

    return 0;
}

#endif /* LLM_QUICK_REF_H */
