/*
 * Whether an input's body is JSON, found without building its tree.
 * jansson's tree costs up to about 80 times the text ([{},{},...]: an
 * object of about 230 bytes for 3), so the fetch checks a body here and
 * copies its text into data.json as it came.  The rules are those of
 * json_loadb() with JSON_REJECT_DUPLICATES | JSON_DECODE_ANY |
 * JSON_ALLOW_NUL, which decided before: one value, RFC 8259 grammar,
 * valid UTF-8 with no surrogates, \u escapes paired, no NUL in a key,
 * keys unique in an object as decoded, integers within 64 bits, reals
 * that do not overflow a double, at most 2048 levels of values.  A body
 * that fails any of them reaches the script as a string, as before.
 *
 * What it keeps: the open containers, and the decoded keys of the open
 * objects with an 8-byte entry each (a key is at least 6 bytes of text:
 * "a":0,), so at most about 2.5 times the text, and the text itself
 * stays the caller's.
 */

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aw.h"


/* jansson's JSON_PARSER_MAX_DEPTH */
#define AW_JSON_DEPTH  2048


typedef struct {
    uint32_t         off;               /* in the key arena */
    uint32_t         len;
} aw_json_key_t;


typedef struct {
    const unsigned char  *p;
    size_t                len;
    size_t                i;

    char                 *arena;        /* the open objects' keys */
    size_t                alen;
    size_t                acap;
    aw_json_key_t        *keys;
    size_t                nkeys;
    size_t                kcap;
    char                 *num;          /* a real's text for strtod() */
    size_t                ncap;
} aw_json_scan_t;


static void aw_json_ws(aw_json_scan_t *s);
static int aw_json_put(aw_json_scan_t *s, const unsigned char *b, size_t n);
static int aw_json_hex(aw_json_scan_t *s, unsigned *cp);
static int aw_json_string(aw_json_scan_t *s, int key);
static int aw_json_number(aw_json_scan_t *s);
static int aw_json_word(aw_json_scan_t *s, const char *w);
static int aw_json_key_cmp(const void *a, const void *b, void *arg);
static int aw_json_unique(aw_json_scan_t *s, size_t first);


static void
aw_json_ws(aw_json_scan_t *s)
{
    while (s->i < s->len
           && (s->p[s->i] == ' ' || s->p[s->i] == '\t'
               || s->p[s->i] == '\n' || s->p[s->i] == '\r'))
    {
        s->i++;
    }
}


static int
aw_json_put(aw_json_scan_t *s, const unsigned char *b, size_t n)
{
    char    *na;
    size_t   cap;

    if (s->alen + n > s->acap) {
        cap = s->acap ? s->acap : 256;
        while (cap < s->alen + n) {
            cap *= 2;
        }

        na = realloc(s->arena, cap);
        if (na == NULL) {
            return -1;
        }

        s->arena = na;
        s->acap = cap;
    }

    memcpy(s->arena + s->alen, b, n);
    s->alen += n;

    return 0;
}


/* the 4 hex digits after \u, s->i on the first */

static int
aw_json_hex(aw_json_scan_t *s, unsigned *cp)
{
    size_t    k;
    unsigned  c, v;

    if (s->len - s->i < 4) {
        return -1;
    }

    v = 0;

    for (k = 0; k < 4; k++) {
        c = s->p[s->i + k];

        if (c >= '0' && c <= '9') {
            c -= '0';

        } else if (c >= 'a' && c <= 'f') {
            c -= 'a' - 10;

        } else if (c >= 'A' && c <= 'F') {
            c -= 'A' - 10;

        } else {
            return -1;
        }

        v = v * 16 + c;
    }

    s->i += 4;
    *cp = v;

    return 0;
}


/*
 * A string, s->i on its opening quote; a key's decoded bytes go to the
 * arena and its entry to the keys.
 */

static int
aw_json_string(aw_json_scan_t *s, int key)
{
    size_t          start, need, k;
    unsigned        c, cp, lo, hi;
    unsigned char   u[4];
    aw_json_key_t  *nk;

    s->i++;
    start = s->alen;

    for ( ;; ) {
        if (s->i >= s->len) {
            return -1;
        }

        c = s->p[s->i];

        if (c == '"') {
            s->i++;
            break;
        }

        if (c < 0x20) {
            return -1;
        }

        if (c == '\\') {
            if (s->i + 1 >= s->len) {
                return -1;
            }

            c = s->p[s->i + 1];
            s->i += 2;

            switch (c) {
            case '"': case '\\': case '/':
                break;
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
                if (aw_json_hex(s, &cp) != 0) {
                    return -1;
                }

                if (cp >= 0xdc00 && cp <= 0xdfff) {
                    return -1;
                }

                if (cp >= 0xd800 && cp <= 0xdbff) {
                    if (s->len - s->i < 2 || s->p[s->i] != '\\'
                        || s->p[s->i + 1] != 'u')
                    {
                        return -1;
                    }

                    s->i += 2;

                    if (aw_json_hex(s, &lo) != 0
                        || lo < 0xdc00 || lo > 0xdfff)
                    {
                        return -1;
                    }

                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                }

                if (!key) {
                    continue;
                }

                if (cp == 0) {
                    /* jansson: "NUL byte in object key not supported" */
                    return -1;
                }

                if (cp < 0x80) {
                    u[0] = (unsigned char) cp;
                    need = 1;

                } else if (cp < 0x800) {
                    u[0] = (unsigned char) (0xc0 | (cp >> 6));
                    u[1] = (unsigned char) (0x80 | (cp & 0x3f));
                    need = 2;

                } else if (cp < 0x10000) {
                    u[0] = (unsigned char) (0xe0 | (cp >> 12));
                    u[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
                    u[2] = (unsigned char) (0x80 | (cp & 0x3f));
                    need = 3;

                } else {
                    u[0] = (unsigned char) (0xf0 | (cp >> 18));
                    u[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
                    u[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
                    u[3] = (unsigned char) (0x80 | (cp & 0x3f));
                    need = 4;
                }

                if (aw_json_put(s, u, need) != 0) {
                    return -1;
                }

                continue;

            default:
                return -1;
            }

            u[0] = (unsigned char) c;
            if (key && aw_json_put(s, u, 1) != 0) {
                return -1;
            }

            continue;
        }

        if (c < 0x80) {
            need = 0;

        } else {
            /* UTF-8: no overlong form, no surrogate, nothing past U+10FFFF */
            if (c >= 0xc2 && c <= 0xdf) {
                need = 1;
                lo = 0x80;
                hi = 0xbf;

            } else if (c >= 0xe0 && c <= 0xef) {
                need = 2;
                lo = c == 0xe0 ? 0xa0 : 0x80;
                hi = c == 0xed ? 0x9f : 0xbf;

            } else if (c >= 0xf0 && c <= 0xf4) {
                need = 3;
                lo = c == 0xf0 ? 0x90 : 0x80;
                hi = c == 0xf4 ? 0x8f : 0xbf;

            } else {
                return -1;
            }

            if (s->len - s->i <= need
                || s->p[s->i + 1] < lo || s->p[s->i + 1] > hi)
            {
                return -1;
            }

            for (k = 2; k <= need; k++) {
                if ((s->p[s->i + k] & 0xc0) != 0x80) {
                    return -1;
                }
            }
        }

        if (key && aw_json_put(s, s->p + s->i, need + 1) != 0) {
            return -1;
        }

        s->i += need + 1;
    }

    if (!key) {
        return 0;
    }

    if (s->nkeys == s->kcap) {
        k = s->kcap ? s->kcap * 2 : 64;
        nk = realloc(s->keys, k * sizeof(aw_json_key_t));
        if (nk == NULL) {
            return -1;
        }

        s->keys = nk;
        s->kcap = k;
    }

    s->keys[s->nkeys].off = (uint32_t) start;
    s->keys[s->nkeys].len = (uint32_t) (s->alen - start);
    s->nkeys++;

    return 0;
}


/*
 * -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; an integer within
 * json_int_t (long long), a real strtod() does not overflow
 */

static int
aw_json_number(aw_json_scan_t *s)
{
    int           real, neg;
    char         *nn;
    size_t        start, digits, n;
    double        d;
    const char   *max;

    start = s->i;
    real = 0;
    neg = s->p[s->i] == '-';

    if (neg) {
        s->i++;
    }

    if (s->i >= s->len || s->p[s->i] < '0' || s->p[s->i] > '9') {
        return -1;
    }

    digits = s->i;

    if (s->p[s->i] == '0') {
        s->i++;
        if (s->i < s->len && s->p[s->i] >= '0' && s->p[s->i] <= '9') {
            return -1;
        }

    } else {
        while (s->i < s->len && s->p[s->i] >= '0' && s->p[s->i] <= '9') {
            s->i++;
        }
    }

    digits = s->i - digits;

    if (s->i < s->len && s->p[s->i] == '.') {
        s->i++;
        real = 1;

        if (s->i >= s->len || s->p[s->i] < '0' || s->p[s->i] > '9') {
            return -1;
        }

        while (s->i < s->len && s->p[s->i] >= '0' && s->p[s->i] <= '9') {
            s->i++;
        }
    }

    if (s->i < s->len && (s->p[s->i] == 'e' || s->p[s->i] == 'E')) {
        s->i++;
        real = 1;

        if (s->i < s->len && (s->p[s->i] == '+' || s->p[s->i] == '-')) {
            s->i++;
        }

        if (s->i >= s->len || s->p[s->i] < '0' || s->p[s->i] > '9') {
            return -1;
        }

        while (s->i < s->len && s->p[s->i] >= '0' && s->p[s->i] <= '9') {
            s->i++;
        }
    }

    if (!real) {
        /* no leading zero: the longer is the larger */
        max = neg ? "9223372036854775808" : "9223372036854775807";

        if (digits > 19) {
            return -1;
        }

        if (digits == 19
            && memcmp(s->p + s->i - 19, max, 19) > 0)
        {
            return -1;
        }

        return 0;
    }

    n = s->i - start;

    if (n + 1 > s->ncap) {
        nn = realloc(s->num, n + 1);
        if (nn == NULL) {
            return -1;
        }

        s->num = nn;
        s->ncap = n + 1;
    }

    memcpy(s->num, s->p + start, n);
    s->num[n] = '\0';

    errno = 0;
    d = strtod(s->num, NULL);

    if ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE) {
        return -1;
    }

    return 0;
}


static int
aw_json_word(aw_json_scan_t *s, const char *w)
{
    size_t  n;

    n = strlen(w);

    if (s->len - s->i < n || memcmp(s->p + s->i, w, n) != 0) {
        return -1;
    }

    s->i += n;

    return 0;
}


static int
aw_json_key_cmp(const void *a, const void *b, void *arg)
{
    int                   rc;
    size_t                n;
    const char           *arena;
    const aw_json_key_t  *x, *y;

    x = a;
    y = b;
    arena = arg;
    n = x->len < y->len ? x->len : y->len;

    /* an arena with only "" keys is NULL */
    rc = n ? memcmp(arena + x->off, arena + y->off, n) : 0;
    if (rc != 0) {
        return rc;
    }

    return x->len < y->len ? -1 : x->len > y->len;
}


/* an object closes: its keys, from first on, are unique, and go */

static int
aw_json_unique(aw_json_scan_t *s, size_t first)
{
    size_t  k, n;

    n = s->nkeys - first;

    if (n > 1) {
        qsort_r(s->keys + first, n, sizeof(aw_json_key_t), aw_json_key_cmp,
                s->arena);

        for (k = first + 1; k < s->nkeys; k++) {
            if (aw_json_key_cmp(&s->keys[k - 1], &s->keys[k], s->arena)
                == 0)
            {
                return -1;
            }
        }
    }

    if (n > 0) {
        s->alen = s->keys[first].off;
        for (k = first; k < s->nkeys; k++) {
            if (s->keys[k].off < s->alen) {
                s->alen = s->keys[k].off;
            }
        }
    }

    s->nkeys = first;

    return 0;
}


int
aw_json_valid(const char *text, size_t len)
{
    int              rc, expect;
    char             open[AW_JSON_DEPTH];
    size_t           first[AW_JSON_DEPTH], depth;
    aw_json_scan_t   s;

    /* the key entries' offsets are 32-bit */
    if (len > UINT32_MAX) {
        return 0;
    }

    memset(&s, 0, sizeof(s));
    s.p = (const unsigned char *) text;
    s.len = len;

    depth = 0;
    rc = -1;

    /* 1: a value; 0: what follows one */
    expect = 1;

    for ( ;; ) {
        aw_json_ws(&s);

        if (expect) {
            if (s.i >= s.len || depth >= AW_JSON_DEPTH) {
                goto done;
            }

            switch (s.p[s.i]) {

            case '{':
            case '[':
                open[depth] = (char) s.p[s.i];
                first[depth] = s.nkeys;
                depth++;
                s.i++;
                aw_json_ws(&s);

                if (s.i < s.len && s.p[s.i] == (open[depth - 1] == '{'
                                                ? '}' : ']'))
                {
                    s.i++;
                    depth--;
                    expect = 0;
                    continue;
                }

                if (open[depth - 1] == '[') {
                    continue;
                }

                goto key;

            case '"':
                if (aw_json_string(&s, 0) != 0) {
                    goto done;
                }
                break;

            case 't':
                if (aw_json_word(&s, "true") != 0) {
                    goto done;
                }
                break;

            case 'f':
                if (aw_json_word(&s, "false") != 0) {
                    goto done;
                }
                break;

            case 'n':
                if (aw_json_word(&s, "null") != 0) {
                    goto done;
                }
                break;

            default:
                if (s.p[s.i] != '-'
                    && (s.p[s.i] < '0' || s.p[s.i] > '9'))
                {
                    goto done;
                }

                if (aw_json_number(&s) != 0) {
                    goto done;
                }
            }

            expect = 0;
            continue;
        }

        if (depth == 0) {
            rc = s.i == s.len ? 0 : -1;
            goto done;
        }

        if (s.i >= s.len) {
            goto done;
        }

        if (s.p[s.i] == (open[depth - 1] == '{' ? '}' : ']')) {
            s.i++;
            depth--;

            if (open[depth] == '{' && aw_json_unique(&s, first[depth]) != 0)
            {
                goto done;
            }

            continue;
        }

        if (s.p[s.i] != ',') {
            goto done;
        }

        s.i++;
        expect = 1;

        if (open[depth - 1] == '[') {
            continue;
        }

        aw_json_ws(&s);

    key:

        if (s.i >= s.len || s.p[s.i] != '"' || aw_json_string(&s, 1) != 0) {
            goto done;
        }

        aw_json_ws(&s);

        if (s.i >= s.len || s.p[s.i] != ':') {
            goto done;
        }

        s.i++;
        expect = 1;
    }

done:

    free(s.arena);
    free(s.keys);
    free(s.num);

    return rc == 0;
}
