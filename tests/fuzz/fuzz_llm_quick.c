/*
 * libFuzzer target: the quick paths of the LLM gateway's usage reading and
 * usage line against the code they stand in for, on every input.
 *
 * Input: byte 0 picks a scanner spec (those the usage and stream readers
 * use) and, for the usage read, the provider and endpoint; byte 1 where
 * the rest splits into a captured "model" and a captured "usage"; the rest
 * is the JSON (and, as text, the strings and numbers of the writers).
 * Checked besides the sanitizers:
 *
 *   - al_llm_json_quick() accepts only what al_llm_json_scan() accepts
 *     and records the same: every member's type, span, integer, string
 *     length and escape flag, the model bytes, the root and nested
 *     counters; al_llm_json_read() answers as al_llm_json_scan();
 *   - al_llm_resp_usage() gives the usage, the result and the model the
 *     strict scanner and jansson give (the reference below is the code
 *     before the quick paths), and for a usage the strict scanner
 *     refuses, what a JSON reader of RFC 8259 reads (llm_quick_ref.h);
 *   - al_llm_out_json() writes what the byte-by-byte writer wrote, and
 *     al_llm_out_u64() what printf writes, into buffers of every size;
 *   - al_json_escape() writes al_json_escape_len() bytes, of valid UTF-8
 *     and no control, from which the input's bytes read back (\u00XX as
 *     byte XX; but for a C1 control, its one escape for two bytes;
 *     \u20XX for a line separator or bidi control, its three); the
 *     string cut by al_utf8_cut() at every length is escaped as the
 *     start of the whole, and never splits a valid sequence.
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "airlock.h"
#include "al_llm.h"
#include "al_llm_internal.h"
#include "../unit/llm_quick_ref.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void fuzz_quick(const al_llm_scan_spec_t *spec, const uint8_t *p,
    size_t len);
static void fuzz_field(const al_llm_jfield_t *a, const al_llm_jfield_t *b);
static void fuzz_usage(unsigned pick, const uint8_t *p, size_t len,
    size_t cut);
static int ref_resp_usage(const al_llm_resp_t *r, al_llm_usage_t *u,
    char *model, size_t model_size);
static uint64_t ref_u64(const al_llm_jfield_t *f);
static void fuzz_out(const uint8_t *p, size_t len);
static void fuzz_out_json(const uint8_t *p, size_t len, char *e, char *y,
    size_t size);
static void ref_out_json(al_llm_out_t *o, const char *s, size_t n);
static int ref_utf8_len(const unsigned char *p, size_t n);
static int ref_format_char(const unsigned char *p);
static void fuzz_escape(const uint8_t *p, size_t len);


/* the specs of al_llm_usage.c and al_llm_sse.c, and two more shapes */

static const char *const  fz_details[] = { "cached_tokens", NULL };
static const char *const  fz_none[] = { NULL };
static const char *const  fz_oai[] = {
    "prompt_tokens", "completion_tokens", "total_tokens",
    "prompt_tokens_details", NULL
};
static const char *const  fz_resp[] = {
    "input_tokens", "output_tokens", "total_tokens", "input_tokens_details",
    NULL
};
static const char *const  fz_chat[] = {
    "model", "error", "usage", "choices", NULL
};
static const char *const  fz_response[] = { "response", NULL };
static const char *const  fz_message[] = { "message", NULL };
static const char *const  fz_model_usage[] = { "model", "usage", NULL };
static const char *const  fz_usage[] = { "usage", NULL };
static const char *const  fz_type_model[] = {
    "type", "id", "model", "usage", "a", NULL
};

static const char *const  fz_ant_cc[] = {
    "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", NULL
};

/* fz_chat and fz_oai with their lengths, for the lookup by length */
static const al_str_t  fz_chat_keys[] = {
    { "model", 5 }, { "error", 5 }, { "usage", 5 }, { "choices", 7 },
    { NULL, 0 }
};
static const al_str_t  fz_oai_keys[] = {
    { "prompt_tokens", 13 }, { "completion_tokens", 17 },
    { "total_tokens", 12 }, { "prompt_tokens_details", 21 }, { NULL, 0 }
};

static const al_llm_scan_spec_t  fz_specs[] = {
    { fz_oai, -1, 3, fz_details, 4, 0, NULL, NULL },
    { fz_resp, -1, 3, fz_details, 4, 0, NULL, NULL },
    { al_llm_usage_ant_names, -1, 4, fz_ant_cc, 5, 0, NULL, NULL },
    { fz_none, -1, -1, NULL, 0, 0, NULL, NULL },
    { fz_chat, 0, 2, fz_oai, 4, 0, NULL, NULL },
    { fz_details, -1, -1, NULL, 0, 0, NULL, NULL },
    { fz_response, -1, 0, fz_model_usage, 1, 0, NULL, NULL },
    { fz_message, -1, 0, fz_model_usage, 1, 0, NULL, NULL },
    { fz_usage, -1, 0, al_llm_usage_ant_names, 1, 0, NULL, NULL },
    { fz_type_model, 2, 3, fz_details, 5, 0, NULL, NULL },
    { fz_type_model, 2, -1, NULL, 0, 1, NULL, NULL },   /* never quick */
    { fz_chat, 0, 2, fz_oai, 4, 0, fz_chat_keys, fz_oai_keys }
};

#define FZ_NSPECS  (sizeof(fz_specs) / sizeof(fz_specs[0]))

static const al_llm_kind_t  fz_kinds[] = {
    AL_LLM_OPENAI, AL_LLM_OPENAI_COMPATIBLE, AL_LLM_ANTHROPIC
};

static const al_llm_endpoint_t  fz_eps[] = {
    AL_LLM_EP_CHAT, AL_LLM_EP_COMPLETIONS, AL_LLM_EP_RESPONSES,
    AL_LLM_EP_EMBEDDINGS
};


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t  k;

    if (size < 2) {
        return 0;
    }

    for (k = 0; k < FZ_NSPECS; k++) {
        fuzz_quick(&fz_specs[k], data + 2, size - 2);
    }

    fuzz_usage(data[0], data + 2, size - 2, data[1]);
    fuzz_out(data + 2, size - 2);
    fuzz_escape(data + 2, size - 2);

    return 0;
}


static void
fuzz_quick(const al_llm_scan_spec_t *spec, const uint8_t *p, size_t len)
{
    int             rq, rs, rr;
    size_t          i, n;
    al_llm_body_t   q, s, r;
    char            detail[AL_DETAIL_MAX], rdetail[AL_DETAIL_MAX];

    rq = al_llm_json_quick(spec, p, len, &q);
    rs = al_llm_json_scan(spec, p, len, &s, detail, sizeof(detail));
    rr = al_llm_json_read(spec, p, len, &r, rdetail, sizeof(rdetail));

    if ((rq != 0 && rq != 1) || (rr != 0) != (rs != 0)
        || (rs != 0 && strcmp(detail, rdetail) != 0)
        || (rq == 0 && rs != 0))
    {
        abort();
    }

    if (rq != 0) {
        return;
    }

    for (i = 0; i < 2; i++) {
        const al_llm_body_t  *x = (i == 0) ? &q : &r;

        fuzz_field(&x->root, &s.root);

        for (n = 0; n < AL_LLM_F_MAX; n++) {
            fuzz_field(&x->f[n], &s.f[n]);
        }

        if (x->root_last != s.root_last
            || x->root_members != s.root_members
            || x->so_last != s.so_last || x->so_members != s.so_members
            || x->jansson != s.jansson || x->text_bytes != s.text_bytes
            || x->extra != s.extra)
        {
            abort();
        }

        if (spec->model >= 0
            && s.f[spec->model].type == AL_LLM_JT_STRING)
        {
            n = (size_t) s.f[spec->model].num;
            n = n < sizeof(s.model) ? n : sizeof(s.model);

            if (memcmp(x->model, s.model, n) != 0) {
                abort();
            }

        } else if (x->model[0] != s.model[0]) {
            abort();
        }
    }
}


/* esc is set for strings only; the strict scanner leaves it for others */

static void
fuzz_field(const al_llm_jfield_t *a, const al_llm_jfield_t *b)
{
    if (a->type != b->type) {
        abort();
    }

    if (a->type == AL_LLM_JT_NONE) {
        return;
    }

    if (a->at != b->at || a->len != b->len || a->num != b->num
        || (a->type == AL_LLM_JT_STRING && a->esc != b->esc))
    {
        abort();
    }
}


static void
fuzz_usage(unsigned pick, const uint8_t *p, size_t len, size_t cut)
{
    int              ra, rb;
    al_llm_resp_t    r;
    al_llm_usage_t   a, b;
    char             ma[AL_LLM_MODEL_MAX], mb[AL_LLM_MODEL_MAX];
    size_t           msize;

    cut = len ? cut % (len + 1) : 0;

    al_llm_resp_init(&r, fz_kinds[(pick & 0x03) % 3],
                     fz_eps[(pick >> 2) & 0x03]);

    r.model_len = cut < sizeof(r.model) ? cut : sizeof(r.model);
    memcpy(r.model, p, r.model_len);
    r.usage_len = len - cut < sizeof(r.usage_in) ? len - cut
                                                 : sizeof(r.usage_in);
    memcpy(r.usage, p + cut, r.usage_len);

    /* small model buffers too: a name that does not fit is no name */
    msize = (pick & 0x10) ? 1 + ((pick >> 5) & 0x07) : sizeof(ma);

    memset(&a, 0x5a, sizeof(a));
    memset(&b, 0xa5, sizeof(b));

    ra = al_llm_resp_usage(&r, &a, ma, msize);
    rb = ref_resp_usage(&r, &b, mb, msize);

    if (ra != rb || memcmp(&a, &b, sizeof(a)) != 0 || strcmp(ma, mb) != 0) {
        abort();
    }
}


/* al_llm_resp_usage() before the quick paths: the strict scanner, jansson */

static int
ref_resp_usage(const al_llm_resp_t *r, al_llm_usage_t *u, char *model,
    size_t model_size)
{
    size_t                     k;
    json_t                    *v;
    unsigned                   any;
    uint64_t                   x[AL_LLM_USAGE_V];
    al_llm_body_t              b;
    json_error_t               err;
    const al_llm_scan_spec_t  *spec;
    char                       detail[AL_DETAIL_MAX];

    memset(u, 0, sizeof(*u));
    any = 0;

    if (model != NULL && model_size > 0) {
        model[0] = '\0';

        if (r->model_len > 0) {
            v = json_loadb(r->model, r->model_len, JSON_DECODE_ANY, &err);
            if (v != NULL) {
                (void) al_llm_copy_str(v, model, model_size);
                json_decref(v);
            }
        }
    }

    if (r->usage_len == 0) {
        return -1;
    }

    spec = (r->kind == AL_LLM_ANTHROPIC) ? &fz_specs[2]
           : (r->endpoint == AL_LLM_EP_RESPONSES) ? &fz_specs[1]
           : &fz_specs[0];

    if (al_llm_json_scan(spec, (const unsigned char *) r->usage,
                         r->usage_len, &b, detail, sizeof(detail))
        != 0)
    {
        return ref_loose(r, u);
    }

    if (b.root.type != AL_LLM_JT_OBJECT) {
        return -1;
    }

    for (k = 0; k < AL_LLM_USAGE_V; k++) {
        x[k] = ref_u64(&b.f[k]);
        any |= (k != 4 && x[k] != 0);
    }

    /* some count an integer: the others decimals or strings, read */

    for (k = 0; any && k < AL_LLM_USAGE_V; k++) {
        if (k != 4) {
            x[k] = ref_lax(r, &b.f[k], x[k]);
        }
    }

    if (r->kind == AL_LLM_ANTHROPIC) {
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


static uint64_t
ref_u64(const al_llm_jfield_t *f)
{
    if (f->type != AL_LLM_JT_INT || f->num < 0) {
        return 0;
    }

    return (uint64_t) f->num > (UINT64_C(1) << 48) ? (UINT64_C(1) << 48)
                                                  : (uint64_t) f->num;
}


/*
 * The writers: the input as a string, and 8-byte pieces of it as numbers
 * (small ones too), into buffers of every size up to the whole and none.
 * The writer under test gets the last size bytes of its allocation, so a
 * byte written past the buffer is one the address sanitizer sees.
 */

static void
fuzz_out(const uint8_t *p, size_t len)
{
    size_t         size, i, cap;
    uint64_t       v;
    al_llm_out_t   a;
    char          *x, *y, *e;
    char           num[64];

    cap = 2 * len + 64 + 6 * len;
    x = malloc(cap);
    y = malloc(cap);
    if (x == NULL || y == NULL) {
        abort();
    }

    /* sizes by steps, and each one at the edge of a plain string */

    for (size = 0; size <= 6 * len + 3; size += 1 + size / 8) {
        fuzz_out_json(p, len, x + cap - size, y, size);
    }

    for (size = len + 1; size <= len + 4; size++) {
        fuzz_out_json(p, len, x + cap - size, y, size);
    }

    for (i = 0; i + 8 <= len || i == 0; i += 8) {
        v = 0;
        if (len >= 8) {
            memcpy(&v, p + i, 8);
        }

        for (size = 0; size < 26; size++) {
            e = x + cap - size;
            al_llm_out_init(&a, size ? e : NULL, size);
            al_llm_out_lit(&a, "n:");
            al_llm_out_u64(&a, v);
            al_llm_out_u64(&a, v >> 40);
            al_llm_out_u64(&a, v & 0xff);

            (void) snprintf(num, sizeof(num), "n:%" PRIu64 "%" PRIu64
                            "%" PRIu64, v, v >> 40, v & 0xff);

            if (a.len != strlen(num)
                || (size > 0 && strncmp(e, num, size - 1) != 0)
                || (size > 0 && e[a.len < size ? a.len : size - 1] != '\0'))
            {
                abort();
            }
        }
    }

    free(x);
    free(y);
}


/* the string p into a buffer of size bytes at e, as ref_out_json() */

static void
fuzz_out_json(const uint8_t *p, size_t len, char *e, char *y, size_t size)
{
    al_llm_out_t  a, b;

    al_llm_out_init(&a, size ? e : NULL, size);
    al_llm_out_init(&b, size ? y : NULL, size);

    al_llm_out_json(&a, (const char *) p, len);
    ref_out_json(&b, (const char *) p, len);

    if (a.len != b.len || (size > 0 && strcmp(e, y) != 0)) {
        abort();
    }
}


/* al_llm_out_json() as it was, byte by byte */

static void
ref_out_json(al_llm_out_t *o, const char *s, size_t n)
{
    int                   k;
    size_t                i;
    unsigned char         c;
    const unsigned char  *p;
    char                  esc[8];

    static const char  hex[] = "0123456789abcdef";

    p = (const unsigned char *) s;

    al_llm_out_raw(o, "\"", 1);

    for (i = 0; s != NULL && i < n; i++) {
        c = p[i];

        if (c >= 0x80) {
            k = ref_utf8_len(p + i, n - i);

            if (k == 0 || (k == 2 && c == 0xc2 && p[i + 1] < 0xa0)) {
                /* an invalid byte, a C1 control: \u00XX */
                c = (k == 0) ? c : p[i + 1];
                i += (k == 0) ? 0 : 1;
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 0xf];
                al_llm_out_raw(o, esc, 6);

            } else if (k == 3 && ref_format_char(p + i)) {
                /* a line break or bidi control: \u20XX */
                c = (unsigned char) (((p[i + 1] & 0x3f) << 6)
                                     | (p[i + 2] & 0x3f));
                memcpy(esc, "\\u20", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 0xf];
                al_llm_out_raw(o, esc, 6);
                i += 2;

            } else {
                al_llm_out_raw(o, s + i, (size_t) k);
                i += (size_t) k - 1;
            }

            continue;
        }

        switch (c) {
        case '"': al_llm_out_raw(o, "\\\"", 2); break;
        case '\\': al_llm_out_raw(o, "\\\\", 2); break;
        case '\n': al_llm_out_raw(o, "\\n", 2); break;
        case '\r': al_llm_out_raw(o, "\\r", 2); break;
        case '\t': al_llm_out_raw(o, "\\t", 2); break;
        case '\0': al_llm_out_raw(o, "\\ufffd", 6); break;
        default:
            if (c < 0x20 || c == 0x7f) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 0xf];
                al_llm_out_raw(o, esc, 6);

            } else {
                al_llm_out_raw(o, s + i, 1);
            }
            break;
        }
    }

    al_llm_out_raw(o, "\"", 1);
}


/* U+200E, U+200F, U+2028..U+202E, U+2066..U+2069 at p (valid, 3 bytes) */

static int
ref_format_char(const unsigned char *p)
{
    uint32_t  cp;

    if (p[0] != 0xe2) {
        return 0;
    }

    cp = 0x2000 | ((uint32_t) (p[1] & 0x3f) << 6) | (p[2] & 0x3f);

    return (cp == 0x200e || cp == 0x200f
            || (cp >= 0x2028 && cp <= 0x202e)
            || (cp >= 0x2066 && cp <= 0x2069));
}


static int
ref_utf8_len(const unsigned char *p, size_t n)
{
    int       k, i;
    uint32_t  cp, min;

    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        k = 2; cp = p[0] & 0x1f; min = 0x80;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        k = 3; cp = p[0] & 0x0f; min = 0x800;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        k = 4; cp = p[0] & 0x07; min = 0x10000;
    } else {
        return 0;
    }

    if ((size_t) k > n) {
        return 0;
    }

    for (i = 1; i < k; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (p[i] & 0x3f);
    }

    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }

    return k;
}


static void
fuzz_escape(const uint8_t *p, size_t len)
{
    int             k;
    size_t   n, i, max, c, o;
    char    *e, *f;

    n = al_json_escape_len((const char *) p, len);
    e = malloc(n + 1);
    f = malloc(n + 1);

    if (e == NULL || f == NULL) {
        abort();
    }

    if ((size_t) (al_json_escape(e, (const char *) p, len) - e) != n) {
        abort();
    }

    /* valid UTF-8, no control; the bytes read back */

    o = 0;

    for (i = 0; i < n; /* void */) {
        c = (unsigned char) e[i];

        if (c < 0x20 || c == 0x7f) {
            abort();
        }

        if (c >= 0x80) {
            k = ref_utf8_len((const unsigned char *) e + i, n - i);

            if (k == 0 || o + (size_t) k > len
                || memcmp(e + i, p + o, (size_t) k) != 0)
            {
                abort();
            }

            i += (size_t) k;
            o += (size_t) k;
            continue;
        }

        if (c == '\\' && e[i + 1] == 'u' && e[i + 2] == '2') {
            c = (size_t) strtoul((char []) { e[i + 4], e[i + 5], '\0' },
                                 NULL, 16);
            i += 6;

            /* U+20XX: the three bytes, one of the format characters */

            if (o + 3 > len || p[o] != 0xe2
                || p[o + 1] != (unsigned char) (0x80 | (c >> 6))
                || p[o + 2] != (unsigned char) (0x80 | (c & 0x3f))
                || !ref_format_char(p + o))
            {
                abort();
            }

            o += 3;
            continue;
        }

        if (c == '\\' && e[i + 1] == 'u') {
            c = (size_t) strtoul((char []) { e[i + 4], e[i + 5], '\0' },
                                 NULL, 16);
            i += 6;

            if (c >= 0x80 && c < 0xa0 && p[o] == 0xc2
                && ref_utf8_len(p + o, len - o) == 2)
            {
                o += 2;         /* a C1 control */
                continue;
            }

        } else if (c == '\\') {
            c = (unsigned char) e[i + 1];
            i += 2;

        } else {
            i++;
        }

        if (o >= len || p[o] != c) {
            abort();
        }

        o++;
    }

    if (o != len) {
        abort();
    }

    /* a cut at every length: a prefix of the whole, no sequence split */

    for (max = 0; max <= len && max < 64; max++) {
        i = al_utf8_cut((const char *) p, len, max);

        if (i > max || (max >= len && i != len)) {
            abort();
        }

        if (i < max && (p[i] < 0xc2
                        || i + (size_t) ref_utf8_len(p + i, len - i) <= max))
        {
            abort();
        }

        c = (size_t) (al_json_escape(f, (const char *) p, i) - f);

        if (c > n || memcmp(e, f, c) != 0) {
            abort();
        }
    }

    free(e);
    free(f);
}
