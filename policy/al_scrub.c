/*
 * Scrub lists: what a response must not carry back to the client.  The
 * nginx module replaces each string of the policy's list
 * (al_scrub_collect_all(), every route's and llm entry's strings) with
 * "[REDACTED]" in the response headers and body of every route (but
 * those that say "scrub: false") and of every LLM prefix, once the policy
 * holds a secret, so an upstream that echoes its request, or has another
 * route's credential (the same upstream behind a route that injects
 * nothing, a log it serves), cannot hand a secret to the agent.
 *
 * The list holds the forms that need work to build (base64 in both
 * alphabets, with and without padding, and inside a longer base64 text;
 * hex; the Basic credential decoded).  The forms a client decodes byte
 * by byte (URL-encoding, JSON escapes, HTML and XML character references,
 * quoted-printable, in any mix of hex case, the first three escaped
 * twice, and UTF-16 and UTF-32) and
 * the line ends a wrapping encoder puts anywhere are not listed, 2^n
 * strings each: al_scrub_match() decodes them as it compares, so one
 * string stands for all of them.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "airlock.h"
#include "al_internal.h"


#define AL_SCRUB_HTML_MAX  10           /* bytes of an HTML reference:
                                           "&#1114111;", "&UnderBar;" */
#define AL_SCRUB_NAME_MAX  8            /* letters of a reference's name */

/* the most bytes a form writes one byte of a string in: an HTML reference
   ("&period;"; a JSON \u escape has 6) */
#define AL_SCRUB_SPAN   AL_SCRUB_HTML_MAX

#define AL_SCRUB_RAW    0
#define AL_SCRUB_URL    1
#define AL_SCRUB_JSON   2
#define AL_SCRUB_HTML   3
#define AL_SCRUB_QP     4
#define AL_SCRUB_URL2   5               /* URL-encoded, JSON-escaped, */
#define AL_SCRUB_JSON2  6               /* HTML-escaped twice: each */
#define AL_SCRUB_HTML2  7               /* AL_SCRUB_TWICE after its own */
#define AL_SCRUB_U16LE  8               /* the wide forms last: each has */
#define AL_SCRUB_U16BE  9               /* a NUL in its first two bytes */
#define AL_SCRUB_U32LE  10
#define AL_SCRUB_U32BE  11

#define AL_SCRUB_TWICE  (AL_SCRUB_URL2 - AL_SCRUB_URL)


typedef struct {
    al_scrub_t      *scrub;                 /* NULL while counting */
    char            *next;                  /* string bytes, while filling */
    size_t           n;
    size_t           bytes;
    uint32_t        *slot;                  /* the policy's list, while
                                               filling: index + 1 of each
                                               listed string, by its hash */
    size_t           mask;
} al_scrub_ctx_t;


static const char *al_scrub_add(al_scrub_ctx_t *sc, const char *s,
    size_t len);
static void al_scrub_add_base64(al_scrub_ctx_t *sc, const unsigned char *s,
    size_t len);
static void al_scrub_add_inner(al_scrub_ctx_t *sc, const unsigned char *s,
    size_t len);
static void al_scrub_add_hex(al_scrub_ctx_t *sc, const unsigned char *s,
    size_t len);
static void al_scrub_add_halves(al_scrub_ctx_t *sc, const unsigned char *s,
    size_t len);
static void al_scrub_basic(al_scrub_ctx_t *sc, const char *v, size_t len);
static al_scrub_t *al_scrub_build(const al_policy_t *p,
    const al_route_t *route, const al_llm_t *llm, const char **why);
static void al_scrub_all(al_scrub_ctx_t *sc, const al_policy_t *p,
    const void **seen, size_t mask);
static al_scrub_t *al_scrub_alloc(al_scrub_ctx_t *sc, const char **why);
static void al_scrub_inject(al_scrub_ctx_t *sc, const al_policy_t *p,
    const al_inject_t *inj);
static void al_scrub_value(al_scrub_ctx_t *sc, const al_inject_t *inj);
static void al_scrub_add_secret(al_scrub_ctx_t *sc, const al_secret_t *sec);
static int al_scrub_order(const void *a, const void *b);
static void al_scrub_llm(al_scrub_ctx_t *sc, const al_llm_t *llm);
static const al_secret_t *al_scrub_secret(const al_policy_t *p,
    const char *name, size_t len);
static void al_scrub_pair_clear(al_scrub_t *s, unsigned a, unsigned b);
static int al_scrub_match_str(const al_str_t *str, const unsigned char *p,
    size_t avail, int mode, int final, size_t *len, unsigned *seen);
static void al_scrub_try(const al_str_t *str, const unsigned char *p,
    size_t avail, int mode, int final, size_t *len, int *partial,
    unsigned *seen);
static size_t al_scrub_next(const unsigned char *p, size_t avail, int mode,
    size_t *i, unsigned char *u);
static void al_scrub_narrow(const al_scrub_t *s, size_t k, unsigned char c,
    size_t *lo, size_t *hi);
static int al_scrub_html(const unsigned char *p, size_t avail, int final,
    uint32_t *cp, size_t *len);
static int al_scrub_html_legacy(const unsigned char *name, size_t n);
static int al_scrub_html_name(const unsigned char *name, size_t n,
    int whole);
static int al_scrub_match_wide(const al_str_t *str, const unsigned char *p,
    size_t avail, int mode, size_t *len);
static int al_scrub_match_qp(const al_str_t *str, const unsigned char *p,
    size_t avail, int final, size_t *len);
static int al_scrub_break(const unsigned char *p, size_t avail, int mode,
    int final, size_t i, size_t k, size_t *j);
static size_t al_scrub_twice(const unsigned char *p, size_t avail,
    int mode, int final, unsigned char *u, size_t *len);
static size_t al_scrub_json_escape(const unsigned char *p, size_t avail,
    unsigned char *u, size_t *len);
static int al_scrub_again(const unsigned char *p, size_t avail, int mode,
    size_t j);
static int al_scrub_hex(int c);
static size_t al_scrub_utf8(unsigned char *out, uint32_t cp);


al_scrub_t *
al_scrub_collect(const al_policy_t *p, const al_route_t *route,
    const char **why)
{
    return al_scrub_build(p, route, NULL, why);
}


al_scrub_t *
al_scrub_collect_llm(const al_policy_t *p, const al_llm_t *llm,
    const char **why)
{
    return al_scrub_build(p, NULL, llm, why);
}


static al_scrub_t *
al_scrub_build(const al_policy_t *p, const al_route_t *route,
    const al_llm_t *llm, const char **why)
{
    size_t           i;
    al_scrub_t      *s;
    al_scrub_ctx_t   sc;

    if (!p->secrets_open) {
        *why = "secrets are not open";
        return NULL;
    }

    /* count, then fill one guarded block */

    memset(&sc, 0, sizeof(sc));

    for (i = 0; route != NULL && i < route->ninject; i++) {
        al_scrub_inject(&sc, p, &route->inject[i]);
    }

    if (llm != NULL) {
        al_scrub_llm(&sc, llm);
    }

    s = al_scrub_alloc(&sc, why);
    if (s == NULL) {
        return NULL;
    }

    for (i = 0; route != NULL && i < route->ninject; i++) {
        al_scrub_inject(&sc, p, &route->inject[i]);
    }

    if (llm != NULL) {
        al_scrub_llm(&sc, llm);
    }

    al_scrub_index(s);

    return s;
}


/*
 * The policy's list: every secret, every rendered header value that uses
 * one, and every llm key, in the forms the route and llm lists have.
 * Rendered values are shared by the routes that render the same one, so
 * each is taken once (seen: a set of their pointers); strings are kept
 * once by a hash of them, so the work grows with the list, not its square.
 */

al_scrub_t *
al_scrub_collect_all(const al_policy_t *p, const char **why)
{
    size_t           i, k, n, size;
    uint32_t        *slot;
    al_scrub_t      *s;
    const void     **seen;
    al_scrub_ctx_t   sc;

    if (!p->secrets_open) {
        *why = "secrets are not open";
        return NULL;
    }

    n = 0;

    for (i = 0; i < p->nroutes; i++) {
        n += p->routes[i].ninject;
    }

    for (size = 16; size < 2 * n; size *= 2) { /* void */ }

    seen = calloc(size, sizeof(void *));
    if (seen == NULL) {
        *why = "out of memory";
        return NULL;
    }

    memset(&sc, 0, sizeof(sc));

    al_scrub_all(&sc, p, seen, size - 1);

    for (k = 16; k < 2 * sc.n; k *= 2) { /* void */ }

    slot = calloc(k, sizeof(uint32_t));
    if (slot == NULL) {
        free(seen);
        *why = "out of memory";
        return NULL;
    }

    s = al_scrub_alloc(&sc, why);
    if (s == NULL) {
        free(slot);
        free(seen);
        return NULL;
    }

    sc.slot = slot;
    sc.mask = k - 1;

    memset(seen, 0, size * sizeof(void *));
    al_scrub_all(&sc, p, seen, size - 1);

    free(slot);
    free(seen);

    al_scrub_index(s);

    return s;
}


/*
 * Every string of the policy's list is made from a secret (an llm entry's
 * key is one too): a policy without secrets leaves every answer as it
 * comes.
 */

int
al_scrub_route_scrubbed(const al_policy_t *p, const al_route_t *route)
{
    return !route->no_scrub && p->nsecrets > 0;
}


static void
al_scrub_all(al_scrub_ctx_t *sc, const al_policy_t *p, const void **seen,
    size_t mask)
{
    size_t              i, j, k;
    uintptr_t           h;
    const al_inject_t  *inj;

    for (i = 0; i < p->nsecrets; i++) {
        al_scrub_add_secret(sc, &p->secrets[i]);
    }

    for (i = 0; i < p->nroutes; i++) {
        for (j = 0; j < p->routes[i].ninject; j++) {
            inj = &p->routes[i].inject[j];

            if (inj->value == NULL
                || memchr(inj->tmpl.data, '{', inj->tmpl.len) == NULL)
            {
                continue;
            }

            h = (uintptr_t) inj->value;
            h ^= h >> 17;
            h *= 31;

            for (k = h & mask; seen[k] != NULL; k = (k + 1) & mask) {
                if (seen[k] == inj->value) {
                    break;
                }
            }

            if (seen[k] == NULL) {
                seen[k] = inj->value;
                al_scrub_value(sc, inj);
            }
        }
    }

    for (i = 0; i < p->nllm; i++) {
        al_scrub_llm(sc, &p->llm[i]);
    }
}


/* after a count: one guarded block with room for what was counted */

static al_scrub_t *
al_scrub_alloc(al_scrub_ctx_t *sc, const char **why)
{
    size_t       size;
    al_scrub_t  *s;

    size = sizeof(al_scrub_t) + sc->n * sizeof(al_str_t) + sc->bytes
           + sc->n;

    /* guarded memory ends at a page end: a size that is a multiple of 16
       keeps the block aligned */
    size = (size + 15) & ~(size_t) 15;

    s = al_secure_alloc(size);
    if (s == NULL) {
        *why = "out of memory";
        return NULL;
    }

    memset(s, 0, size);
    s->str = (al_str_t *) (s + 1);

    sc->scrub = s;
    sc->next = (char *) (s->str + sc->n);

    return s;
}


void
al_scrub_free(al_scrub_t *s)
{
    if (s != NULL) {
        al_secure_free(s);
    }
}


static void
al_scrub_inject(al_scrub_ctx_t *sc, const al_policy_t *p,
    const al_inject_t *inj)
{
    size_t              i, nlen;
    const char         *t, *close;
    const al_secret_t  *sec;

    t = inj->tmpl.data;

    if (memchr(t, '{', inj->tmpl.len) == NULL || inj->value == NULL) {
        return;                     /* a constant, not a credential */
    }

    al_scrub_value(sc, inj);

    for (i = 0; i < inj->tmpl.len; i++) {
        if (t[i] != '{') {
            continue;
        }

        close = memchr(t + i, '}', inj->tmpl.len - i);
        if (close == NULL) {
            break;
        }

        nlen = (size_t) (close - (t + i + 1));
        if (nlen > 7 && memcmp(close - 7, "|base64", 7) == 0) {
            nlen -= 7;
        }

        sec = al_scrub_secret(p, t + i + 1, nlen);
        if (sec != NULL) {
            al_scrub_add_secret(sc, sec);
        }

        i = (size_t) (close - t);
    }
}


/*
 * A rendered value as sent, raw and, as an upstream may echo a header, in
 * base64 (the secret's own base64 is not found inside it), and what
 * follows its auth scheme.
 */

static void
al_scrub_value(al_scrub_ctx_t *sc, const al_inject_t *inj)
{
    size_t       i, nlen;
    const char  *v;

    al_scrub_add(sc, (const char *) inj->value, inj->len);
    al_scrub_add_base64(sc, inj->value, inj->len);

    /* "Bearer x", "Basic x", "token x": x alone */

    v = (const char *) inj->value;

    for (i = 0; i < inj->len && v[i] != ' '; i++) {
        if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z')
              || (v[i] >= '0' && v[i] <= '9') || v[i] == '-'))
        {
            break;
        }
    }

    if (i > 0 && i < inj->len && v[i] == ' ') {
        nlen = i;

        while (i < inj->len && v[i] == ' ') {
            i++;
        }
        al_scrub_add(sc, v + i, inj->len - i);
        al_scrub_add_hex(sc, (const unsigned char *) v + i, inj->len - i);

        if (nlen == sizeof("Basic") - 1
            && strncasecmp(v, "Basic", sizeof("Basic") - 1) == 0)
        {
            al_scrub_basic(sc, v + i, inj->len - i);
        }
    }
}


static void
al_scrub_add_secret(al_scrub_ctx_t *sc, const al_secret_t *sec)
{
    if (sec->value != NULL) {
        al_scrub_add(sc, (const char *) sec->value, sec->len);
        al_scrub_add_base64(sc, sec->value, sec->len);
        al_scrub_add_inner(sc, sec->value, sec->len);
        al_scrub_add_hex(sc, sec->value, sec->len);
        al_scrub_add_halves(sc, sec->value, sec->len);
    }
}


/*
 * The provider key as it is sent ("Bearer k" to OpenAI-style providers,
 * "k" in x-api-key to Anthropic), raw and in base64, and "Bearer k" in
 * base64; and its halves (al_scrub_add_halves()).
 */

static void
al_scrub_llm(al_scrub_ctx_t *sc, const al_llm_t *llm)
{
    size_t              len;
    const char         *bearer;
    const al_secret_t  *sec;

    sec = llm->secret;
    bearer = NULL;

    if (sec == NULL || sec->value == NULL || sec->len == 0) {
        return;
    }

    if (llm->kind != AL_LLM_ANTHROPIC) {
        len = sizeof("Bearer ") - 1 + sec->len;

        if (sc->scrub == NULL) {
            sc->n++;
            sc->bytes += len;

        } else {
            /* built in place at the end of the block, as base64 is */
            memcpy(sc->next, "Bearer ", sizeof("Bearer ") - 1);
            memcpy(sc->next + sizeof("Bearer ") - 1, sec->value, sec->len);
            bearer = al_scrub_add(sc, sc->next, len);
        }

        al_scrub_add_base64(sc, (const unsigned char *) bearer, len);
    }

    al_scrub_add(sc, (const char *) sec->value, sec->len);
    al_scrub_add_base64(sc, sec->value, sec->len);
    al_scrub_add_inner(sc, sec->value, sec->len);
    al_scrub_add_hex(sc, sec->value, sec->len);
    al_scrub_add_halves(sc, sec->value, sec->len);
}


/*
 * A credential cut short (an echo cut at a length, "all but the last few
 * characters") holds its first half; a key split in two with something
 * between (a line of a log, a quote) holds one of its halves whole,
 * wherever it is split: the part of at least half its length.  So its
 * first and last halves, each (len + 1) / 2 bytes, are listed, raw (and
 * in the forms al_scrub_match() reads as it compares): what is left of
 * the key beside a redacted half lacks that half, half the key's
 * characters, which no one guesses.  A prefix or a part shorter than half
 * passes (a "sk-proj-abc...wxyz" a provider writes to name a key): it is
 * less than half the key.  For every secret and llm key of
 * 2 * AL_SCRUB_HALF bytes or more, as a half of a shorter one may be met
 * by chance.  What it costs: the last half's start is one more two-byte
 * start for the walks
 * (AL_SCRUB_PAIRS; the first half's is the key's own), and a half may be
 * the list's shortest string (minlen), below which a header value is
 * passed over unsearched.
 */

static void
al_scrub_add_halves(al_scrub_ctx_t *sc, const unsigned char *s, size_t len)
{
    size_t  n;

    if (len < 2 * AL_SCRUB_HALF) {
        return;
    }

    n = (len + 1) / 2;

    al_scrub_add(sc, (const char *) s, n);
    al_scrub_add(sc, (const char *) s + len - n, n);
}


static const al_secret_t *
al_scrub_secret(const al_policy_t *p, const char *name, size_t len)
{
    size_t  i;

    for (i = 0; i < p->nsecrets; i++) {
        if (p->secrets[i].name.len == len
            && memcmp(p->secrets[i].name.data, name, len) == 0)
        {
            return &p->secrets[i];
        }
    }

    return NULL;
}


/* adds a string unless it is listed already; returns the listed copy */

static const char *
al_scrub_add(al_scrub_ctx_t *sc, const char *s, size_t len)
{
    char        *d;
    size_t       i, k;
    al_scrub_t  *scrub;

    if (len == 0) {
        return NULL;
    }

    scrub = sc->scrub;

    if (scrub == NULL) {
        sc->n++;
        sc->bytes += len;
        return NULL;
    }

    if (sc->slot != NULL) {
        for (k = al_fnv1a(s, len) & sc->mask; sc->slot[k] != 0;
             k = (k + 1) & sc->mask)
        {
            i = sc->slot[k] - 1;

            if (scrub->str[i].len == len
                && memcmp(scrub->str[i].data, s, len) == 0)
            {
                return scrub->str[i].data;
            }
        }

        sc->slot[k] = (uint32_t) scrub->n + 1;

    } else {
        for (i = 0; i < scrub->n; i++) {
            if (scrub->str[i].len == len
                && memcmp(scrub->str[i].data, s, len) == 0)
            {
                return scrub->str[i].data;
            }
        }
    }

    d = sc->next;

    memmove(d, s, len);                     /* s may be sc->next */
    d[len] = '\0';

    scrub->str[scrub->n].data = d;
    scrub->str[scrub->n].len = len;
    scrub->n++;

    sc->next += len + 1;

    return d;
}


/*
 * Base64 of a value on its own, as an encoder given only the value writes
 * it: the standard and the URL-safe alphabets ("-_" for "+/"), each with
 * and without its padding.  (Inside a longer encoded text a credential is
 * looked for by what only its own bits make, al_scrub_add_inner().)  The
 * line ends a wrapping encoder puts in, wherever they fall, are skipped
 * as the string is compared (al_scrub_break()).
 */

/*
 * The bytes some form reads other than as themselves: the escapes' first
 * bytes (URL, JSON, HTML, quoted-printable), '+' (a space in a URL) and
 * NUL (UTF-16, UTF-32)
 */

static const unsigned char  al_scrub_escapes[256] = {
    [0] = 1, ['%'] = 1, ['\\'] = 1, ['&'] = 1, ['='] = 1, ['+'] = 1,
    ['\r'] = 1, ['\n'] = 1
};

/* the bytes a line end starts with, in some form (al_scrub_break()) */

static const unsigned char  al_scrub_breaks[256] = {
    [0] = 1, ['%'] = 1, ['\\'] = 1, ['&'] = 1, ['='] = 1, ['\r'] = 1,
    ['\n'] = 1
};

/*
 * The names HTML5 gives the ASCII characters (html.unescape() reads them
 * all, and PHP's htmlentities() with ENT_HTML5 writes "_" as "&lowbar;",
 * "." as "&period;", "=" as "&equals;"), in lower case and in byte
 * order.  The two over AL_SCRUB_HTML_MAX bytes with "&" and ";"
 * ("&VerticalLine;", "&DiacriticalGrave;") are left out: their
 * characters have shorter names, which encoders write.
 */

typedef struct {
    char            name[AL_SCRUB_NAME_MAX + 1];
    unsigned char   len;
    unsigned char   c;
} al_scrub_ref_t;

#define al_scrub_ref(name, c)  { name, sizeof(name) - 1, c }

static const al_scrub_ref_t  al_scrub_refs[] = {
    al_scrub_ref("amp", '&'), al_scrub_ref("apos", '\''),
    al_scrub_ref("ast", '*'), al_scrub_ref("bsol", '\\'),
    al_scrub_ref("colon", ':'), al_scrub_ref("comma", ','),
    al_scrub_ref("commat", '@'), al_scrub_ref("dollar", '$'),
    al_scrub_ref("equals", '='), al_scrub_ref("excl", '!'),
    al_scrub_ref("grave", '`'), al_scrub_ref("gt", '>'),
    al_scrub_ref("hat", '^'), al_scrub_ref("lbrace", '{'),
    al_scrub_ref("lbrack", '['), al_scrub_ref("lcub", '{'),
    al_scrub_ref("lowbar", '_'), al_scrub_ref("lpar", '('),
    al_scrub_ref("lsqb", '['), al_scrub_ref("lt", '<'),
    al_scrub_ref("midast", '*'), al_scrub_ref("newline", '\n'),
    al_scrub_ref("num", '#'), al_scrub_ref("percnt", '%'),
    al_scrub_ref("period", '.'), al_scrub_ref("plus", '+'),
    al_scrub_ref("quest", '?'), al_scrub_ref("quot", '"'),
    al_scrub_ref("rbrace", '}'), al_scrub_ref("rbrack", ']'),
    al_scrub_ref("rcub", '}'), al_scrub_ref("rpar", ')'),
    al_scrub_ref("rsqb", ']'), al_scrub_ref("semi", ';'),
    al_scrub_ref("sol", '/'), al_scrub_ref("tab", '\t'),
    al_scrub_ref("underbar", '_'), al_scrub_ref("verbar", '|'),
    al_scrub_ref("vert", '|')
};

#define AL_SCRUB_NREFS  (sizeof(al_scrub_refs) / sizeof(al_scrub_refs[0]))

/* the first name of al_scrub_refs[] that starts with 'a' + i or a later
   letter (i = 26: AL_SCRUB_NREFS); tests/unit/scrub.c reads every name */

static const unsigned char  al_scrub_ref_at[27] = {
    0, 3, 4, 7, 8, 10, 10, 12, 13, 13, 13, 13, 20, 21, 23, 23, 26, 28, 33,
    35, 36, 37, 39, 39, 39, 39, 39
};


static void
al_scrub_add_base64(al_scrub_ctx_t *sc, const unsigned char *s, size_t len)
{
    size_t  i, n, k, pad;

    n = (len + 2) / 3 * 4;

    if (sc->scrub == NULL) {
        sc->n += 4;
        sc->bytes += 4 * n;
        return;
    }

    pad = (3 - len % 3) % 3;

    /* encode in place at the end of the block, then add (or drop) it */

    for (k = 0; k < 4; k++) {
        al_base64_encode(sc->next, n, s, len);

        if (k & 1) {
            for (i = 0; i < n; i++) {
                if (sc->next[i] == '+') {
                    sc->next[i] = '-';

                } else if (sc->next[i] == '/') {
                    sc->next[i] = '_';
                }
            }
        }

        al_scrub_add(sc, sc->next, (k & 2) ? n - pad : n);
    }
}


/*
 * A credential inside a longer base64 text (a JWT's payload, a Kubernetes
 * Secret, a JSON document or a mail encoded whole): three bytes make four
 * characters, so where the credential starts, 0, 1 or 2 bytes past a
 * multiple of 3, decides how it is encoded, and its first and last
 * characters share bits with the bytes around it.  What only its own
 * bits make is the same in every such text: the characters from bit 0, 4
 * or 2 of the credential (the first whose six bits are all its own) to
 * the last whose bits are all its own, in both alphabets.  That covers
 * the whole credential but for at most its first 4 and last 5 bits.  Only
 * for a credential of AL_SCRUB_INNER bytes or more: the shortest such
 * string is then 15 characters, 90 bits, which no other text meets by
 * chance.  (From bit 0 with a length that is a multiple of 3, the string
 * is the credential's own base64 without padding, listed already.)
 */

static void
al_scrub_add_inner(al_scrub_ctx_t *sc, const unsigned char *s, size_t len)
{
    size_t  f;

    if (len < AL_SCRUB_INNER) {
        return;
    }

    if (sc->scrub == NULL) {
        sc->n += 6;
        sc->bytes += 6 * (8 * len / 6);
        return;
    }

    for (f = 0; f < 6; f++) {
        if (f / 2 != 0 || len % 3 != 0) {
            al_scrub_add(sc, sc->next,
                         al_scrub_inner(sc->next, s, len, f / 2, f & 1));
        }
    }
}


size_t
al_scrub_inner(char *out, const unsigned char *s, size_t len,
    unsigned place, int url)
{
    size_t    b, k, at;
    unsigned  v;

    static const char    std[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const size_t  from[] = { 0, 4, 2 };

    k = 0;

    for (b = from[place % 3]; b + 6 <= 8 * len; b += 6) {
        at = b / 8;
        v = (unsigned) s[at] << 8 | (at + 1 < len ? s[at + 1] : 0);
        v = (v >> (10 - b % 8)) & 0x3f;

        out[k++] = (url && v >= 62) ? "-_"[v - 62] : std[v];
    }

    return k;
}


/*
 * A credential's bytes in hex, as an upstream that shows what it got as
 * bytes writes them: each byte as two hex digits, all lower or all upper
 * case, side by side ("736b2d", Go's %x, Python's bytes.hex()), or a
 * space ("73 6b 2d", Go's "% x", the hex dumps of AWS's signature
 * errors) or a ":" between bytes (bytes.hex(":")); bytes.fromhex() and
 * the like read each back with one call.  Six strings, fewer when no
 * digit is a letter.  Only for the credentials themselves (a secret, the
 * part after a scheme, a key, a password): a rendered value holds its
 * secret, so its hex holds the secret's, which is redacted there, and
 * each more string start costs the walk (AL_SCRUB_PAIRS).
 */

static void
al_scrub_add_hex(al_scrub_ctx_t *sc, const unsigned char *s, size_t len)
{
    char          *d;
    size_t         i, k, f;
    const char    *digits;

    static const char  lower[] = "0123456789abcdef";
    static const char  upper[] = "0123456789ABCDEF";
    static const char  sep[] = { '\0', ' ', ':' };

    if (len == 0) {
        return;
    }

    if (sc->scrub == NULL) {
        sc->n += 6;
        sc->bytes += 2 * 2 * len + 4 * (3 * len - 1);
        return;
    }

    /* encoded in place at the end of the block, then added (or dropped) */

    for (f = 0; f < 6; f++) {
        digits = (f & 1) ? upper : lower;
        d = sc->next;
        k = 0;

        for (i = 0; i < len; i++) {
            if (i > 0 && sep[f / 2] != '\0') {
                d[k++] = sep[f / 2];
            }

            d[k++] = digits[s[i] >> 4];
            d[k++] = digits[s[i] & 15];
        }

        al_scrub_add(sc, d, k);
    }
}


/*
 * "Basic t": t decoded is "user:password", which an upstream may echo
 * decoded or encode again, and the password alone is the credential; with
 * an empty password ("sk_live_x:", an API key sent as the user name) the
 * user name is, and an upstream that names the user it authenticated
 * echoes it.  (With a template "Basic {s|base64}", "user:password" is the
 * secret s, listed already.)  Two strings at most besides the base64.
 */

static void
al_scrub_basic(al_scrub_ctx_t *sc, const char *v, size_t len)
{
    char        *colon;
    size_t       n, poff;
    ssize_t      d;
    const char  *cred;

    n = len / 4 * 3 + 2;

    if (sc->scrub == NULL) {
        sc->n += 2;
        sc->bytes += 2 * n;
        al_scrub_add_base64(sc, NULL, n);
        al_scrub_add_inner(sc, NULL, n);
        al_scrub_add_hex(sc, NULL, n);
        return;
    }

    d = al_base64_decode((unsigned char *) sc->next, v, len);
    if (d <= 0) {
        return;
    }

    colon = memchr(sc->next, ':', (size_t) d);
    if (colon == NULL) {
        return;
    }

    poff = (size_t) (colon + 1 - sc->next);

    /* the listed copy: the one just added, or the same string added
       before; sc->next is past it either way */

    cred = al_scrub_add(sc, sc->next, (size_t) d);

    if (poff < (size_t) d) {
        al_scrub_add(sc, cred + poff, (size_t) d - poff);
        al_scrub_add_hex(sc, (const unsigned char *) cred + poff,
                         (size_t) d - poff);

    } else {
        al_scrub_add(sc, cred, poff - 1);
        al_scrub_add_hex(sc, (const unsigned char *) cred, poff - 1);
    }

    al_scrub_add_base64(sc, (const unsigned char *) cred, (size_t) d);
    al_scrub_add_inner(sc, (const unsigned char *) cred, (size_t) d);
}


/* byte order, a string before those it starts */

static int
al_scrub_order(const void *a, const void *b)
{
    int              c;
    const al_str_t  *x, *y;

    x = a;
    y = b;

    c = memcmp(x->data, y->data, x->len < y->len ? x->len : y->len);
    if (c != 0) {
        return c;
    }

    return (x->len < y->len) ? -1 : (x->len > y->len);
}


/*
 * In byte order, so that al_scrub_match() narrows the strings a form at a
 * place can be to those that start with what it reads there; the first
 * bytes a match can start with: a string's own, or the
 * start of an escape.
 */

void
al_scrub_index(al_scrub_t *s)
{
    size_t         i, j;
    unsigned       many;
    unsigned char  c;

    s->maxlen = 0;
    s->minlen = 0;
    s->maxspan = 0;

    if (s->n > 1) {
        qsort(s->str, s->n, sizeof(al_str_t), al_scrub_order);
    }

    if (s->n == 0) {
        return;
    }

    s->minlen = s->str[0].len;

    for (i = 0; i < s->n; i++) {
        if (s->str[i].len > s->maxlen) {
            s->maxlen = s->str[i].len;
        }

        if (s->str[i].len < s->minlen) {
            s->minlen = s->str[i].len;
        }
    }

    s->maxspan = AL_SCRUB_SPAN * s->maxlen;

    /*
     * The strings' first plen bytes, hashed: at a place whose first plen
     * bytes hold no escape, every form reads those bytes as they are, so
     * a place whose bytes no string starts with holds no match
     * (al_scrub_match()); "prompt_tokens" is turned away there instead of
     * being read in each form against "prometheus:...".
     */

    s->plen = (s->minlen < 3) ? 0 : (s->minlen < 8) ? s->minlen : 8;
    memset(s->prefix, 0, sizeof(s->prefix));

    for (i = 0; s->plen != 0 && i < s->n; i++) {
        j = al_fnv1a(s->str[i].data, s->plen) & 4095;
        s->prefix[j >> 3] |= (unsigned char) (1 << (j & 7));
    }

    s->first['%'] = 1;
    s->first['\\'] = 1;
    s->first['&'] = 1;
    s->first['\0'] = 1;                     /* UTF-16BE, UTF-32BE */

    for (i = 0; i < s->n; i++) {
        s->first[(unsigned char) s->str[i].data[0]] = 1;

        if (s->str[i].data[0] == ' ') {
            s->first['+'] = 1;
        }
    }

    /*
     * The pairs a match can start with, when its first byte is raw: the
     * second byte raw, or the start of an escape.  Every other pair is
     * marked: al_scrub_match() turns it away after two loads.
     */

    memset(s->no_pair, 0xff, sizeof(s->no_pair));
    s->npairs = 0;
    s->plus = s->first['+'];
    many = 0;

    for (i = 0; i < s->n; i++) {
        c = (unsigned char) s->str[i].data[0];

        al_scrub_pair_clear(s, '\0', c);    /* UTF-16BE, UTF-32BE */

        if (s->str[i].len == 1) {
            for (j = 0; j < 256; j++) {
                al_scrub_pair_clear(s, c, j);
            }

            many = 1;
            continue;
        }

        /* the distinct pairs, for a search that compares them all at once */

        for (j = 0; j < s->npairs; j++) {
            if (s->pair[j][0] == c
                && s->pair[j][1] == (unsigned char) s->str[i].data[1])
            {
                break;
            }
        }

        if (j == s->npairs) {
            if (s->npairs == AL_SCRUB_PAIRS) {
                many = 1;

            } else {
                s->pair[s->npairs][0] = c;
                s->pair[s->npairs][1] = (unsigned char) s->str[i].data[1];
                s->npairs++;
            }
        }

        al_scrub_pair_clear(s, c, (unsigned char) s->str[i].data[1]);
        al_scrub_pair_clear(s, c, '%');
        al_scrub_pair_clear(s, c, '\\');
        al_scrub_pair_clear(s, c, '&');
        al_scrub_pair_clear(s, c, '=');     /* quoted-printable */
        al_scrub_pair_clear(s, c, '\0');    /* UTF-16LE, UTF-32LE */
        al_scrub_pair_clear(s, c, '\r');    /* a line end */
        al_scrub_pair_clear(s, c, '\n');

        if (s->str[i].data[1] == ' ') {
            al_scrub_pair_clear(s, c, '+');
        }
    }

    if (many) {
        s->npairs = 0;
    }
}


static void
al_scrub_pair_clear(al_scrub_t *s, unsigned a, unsigned b)
{
    unsigned  bit;

    bit = AL_SCRUB_PAIR(a, b);
    s->no_pair[bit >> 3] &= (unsigned char) ~(1u << (bit & 7));
}


int
al_scrub_match(const al_scrub_t *s, const unsigned char *p, size_t avail,
    int final, size_t *len)
{
    int            mode, partial;
    size_t         i, k, lo, hi, nu, iu, la, ha, at, at2;
    unsigned       twice, seen, e;
    unsigned char  u[4];

    /* the escape characters of the forms read twice too, by mode */

    static const unsigned short  esc[AL_SCRUB_U32BE + 1] = {
        256, '%', '\\', '&', 256, 256, 256, 256, 256, 256, 256, 256
    };

    *len = 0;
    partial = 0;

    /* no form is shorter than its string: the end of a response that
       cannot hold the shortest holds none */

    if (avail == 0 || (final && avail < s->minlen)) {
        return AL_SCRUB_NONE;
    }

    /* most candidates end here: a first byte that is not an escape,
       followed by a byte no string has there */

    if (avail >= 2 && al_scrub_pair_out(s, p)) {
        return AL_SCRUB_NONE;
    }

    /* the first plen bytes, when no form reads them other than raw */

    if (s->plen != 0 && avail >= s->plen) {
        for (i = 0; i < s->plen && !al_scrub_escapes[p[i]]; i++) {
            /* void */
        }

        if (i == s->plen) {
            k = al_fnv1a(p, s->plen) & 4095;

            if (!((s->prefix[k >> 3] >> (k & 7)) & 1)) {
                return AL_SCRUB_NONE;
            }
        }
    }

    /*
     * The policy's list may hold thousands of strings, many with a long
     * start in common ("Bearer ", its base64 "QmVhcmVy"): each form is
     * read at p a character at a time, and the strings (in byte order)
     * narrowed to those that start with what was read, by halving.  The
     * strings left, and those read whole on the way, are then compared
     * one by one (al_scrub_match_str() decides).  What cannot be read for
     * certain (an escape cut short by the end of what is there, "+" in a
     * URL, a surrogate pair, a quoted-printable soft line break) stops
     * the narrowing there.
     */

    twice = 0;

    for (mode = AL_SCRUB_RAW; mode <= AL_SCRUB_U32BE;
         mode = (mode == AL_SCRUB_QP && twice == 0) ? AL_SCRUB_U16LE
                                                    : mode + 1)
    {
        /*
         * A form escaped twice reads as the form escaped once up to the
         * first escape of its own escape character ("%25", "\\",
         * "&amp;"): where the once-escaped reading left no string before
         * one, the twice-escaped one leaves none either.
         */

        if (twice != 0 && mode > AL_SCRUB_QP && mode < AL_SCRUB_U16LE
            && !((twice >> (mode - AL_SCRUB_TWICE)) & 1))
        {
            continue;
        }

        /* UTF-16 and UTF-32 start with a NUL or have one second */

        if (mode == AL_SCRUB_U16LE && avail >= 2 && p[0] != '\0'
            && p[1] != '\0')
        {
            break;
        }

        lo = 0;
        hi = s->n;
        i = 0;
        k = 0;
        nu = 0;
        iu = 0;
        at = 0;
        seen = 0;
        e = esc[mode];

        for ( ;; ) {
            while (lo < hi && s->str[lo].len == k) {
                al_scrub_try(&s->str[lo], p, avail, mode, final, len,
                             &partial, &seen);
                lo++;
            }

            if (hi - lo <= 4) {
                break;
            }

            if (iu == nu) {
                at2 = i;
                nu = al_scrub_next(p, avail, mode, &i, u);
                iu = 0;

                if (nu == 0) {
                    hi = lo;                /* no string goes on */
                    break;
                }

                if (nu == (size_t) -1) {
                    break;                  /* unsure: compare the rest */
                }

                if (u[0] == e && nu == 1 && i - at2 > 1
                    && al_scrub_again(p, avail, mode, i))
                {
                    seen = 1;
                }

                /*
                 * a line end no string has here is skipped as
                 * al_scrub_match_str() skips it: not two in a row, and
                 * within AL_SCRUB_SPAN bytes a byte
                 */

                if (k > 0 && nu == 1 && (u[0] == '\r' || u[0] == '\n')
                    && at != i)
                {
                    la = lo;
                    ha = hi;
                    al_scrub_narrow(s, k, u[0], &la, &ha);

                    if (la < ha) {
                        break;              /* some have it: compare */
                    }

                    if (u[0] == '\r') {
                        nu = al_scrub_next(p, avail, mode, &i, u);

                        if (nu == (size_t) -1) {
                            break;
                        }

                        if (nu != 1 || u[0] != '\n') {
                            hi = lo;
                            break;
                        }
                    }

                    if (i > AL_SCRUB_SPAN * k) {
                        hi = lo;
                        break;
                    }

                    at = i;
                    nu = 0;
                    continue;
                }
            }

            al_scrub_narrow(s, k, u[iu++], &lo, &hi);
            k++;
        }

        for ( /* void */ ; lo < hi; lo++) {
            al_scrub_try(&s->str[lo], p, avail, mode, final, len, &partial,
                         &seen);
        }

        twice |= seen << mode;              /* URL, JSON, HTML */
    }

    if (partial) {
        *len = 0;
        return AL_SCRUB_PARTIAL;
    }

    return *len ? AL_SCRUB_FULL : AL_SCRUB_NONE;
}


static void
al_scrub_try(const al_str_t *str, const unsigned char *p, size_t avail,
    int mode, int final, size_t *len, int *partial, unsigned *seen)
{
    int     m;
    size_t  n;

    m = al_scrub_match_str(str, p, avail, mode, final, &n, seen);

    if (m == AL_SCRUB_FULL && n > *len) {
        *len = n;

    } else if (m == AL_SCRUB_PARTIAL && !final) {
        *partial = 1;
    }
}


/*
 * The next character of one form at p + *i, as the bytes of the string
 * it stands for (UTF-8, at most 4, in u): their number, *i moved past
 * it; 0 when no string goes on here (al_scrub_match_str() would refuse
 * whatever came next); -1 when it cannot be told for certain.
 */

static size_t
al_scrub_next(const unsigned char *p, size_t avail, int mode, size_t *i,
    unsigned char *u)
{
    int       d, h, m;
    size_t    e, j, m2;
    uint32_t  cp;

    j = *i;

    if (j >= avail) {
        return (size_t) -1;                 /* more may follow */
    }

    switch (mode) {

    case AL_SCRUB_U16LE:
    case AL_SCRUB_U16BE:
        if (j + 1 >= avail) {
            return (size_t) -1;
        }

        u[0] = p[j + (mode == AL_SCRUB_U16BE)];

        if (p[j + (mode == AL_SCRUB_U16LE)] != '\0' || u[0] >= 0x80) {
            return 0;
        }

        *i = j + 2;
        return 1;

    case AL_SCRUB_U32LE:
    case AL_SCRUB_U32BE:
        if (mode == AL_SCRUB_U32BE && j == 0) {

            /* from the last NUL of the first character: "\0c" */

            if (j + 1 >= avail) {
                return (size_t) -1;
            }

            if (p[0] != '\0' || p[1] >= 0x80) {
                return 0;
            }

            u[0] = p[1];
            *i = 2;
            return 1;
        }

        if (j + 3 >= avail) {
            return (size_t) -1;
        }

        if (mode == AL_SCRUB_U32BE) {
            u[0] = p[j + 3];
            m = p[j] | p[j + 1] | p[j + 2];

        } else {
            u[0] = p[j];
            m = p[j + 1] | p[j + 2] | p[j + 3];
        }

        if (m != 0 || u[0] >= 0x80) {
            return 0;
        }

        *i = j + 4;
        return 1;

    case AL_SCRUB_URL:
        if (p[j] == '+') {
            return (size_t) -1;             /* ' ' or '+' */
        }

        if (p[j] == '%') {
            if (j + 1 >= avail) {
                return (size_t) -1;
            }

            d = al_scrub_hex(p[j + 1]);

            if (d >= 0) {
                if (j + 2 >= avail) {
                    return (size_t) -1;
                }

                h = al_scrub_hex(p[j + 2]);
                if (h < 0) {
                    return 0;
                }

                u[0] = (unsigned char) (d << 4 | h);
                *i = j + 3;
                return 1;
            }
        }

        break;

    case AL_SCRUB_JSON:
        if (p[j] != '\\') {
            break;
        }

        if (j + 1 >= avail) {
            return (size_t) -1;
        }

        switch (p[j + 1]) {
        case '"': case '\\': case '/':
            u[0] = p[j + 1];
            break;
        case 'b':
            u[0] = '\b';
            break;
        case 'f':
            u[0] = '\f';
            break;
        case 'n':
            u[0] = '\n';
            break;
        case 'r':
            u[0] = '\r';
            break;
        case 't':
            u[0] = '\t';
            break;
        case 'u':
            if (j + 6 > avail) {
                return (size_t) -1;
            }

            cp = 0;

            for (e = 2; e < 6; e++) {
                d = al_scrub_hex(p[j + e]);
                if (d < 0) {
                    return 0;
                }

                cp = cp << 4 | (uint32_t) d;
            }

            if (cp >= 0xd800 && cp <= 0xdfff) {
                return (size_t) -1;         /* a pair, or none */
            }

            *i = j + 6;
            return al_scrub_utf8(u, cp);
        default:
            return 0;
        }

        *i = j + 2;
        return 1;

    case AL_SCRUB_QP:
        if (p[j] != '=' || j == 0) {
            break;
        }

        if (j + 2 >= avail || p[j + 1] == '\r' || p[j + 1] == '\n') {
            return (size_t) -1;             /* "=X", a soft line break */
        }

        d = al_scrub_hex(p[j + 1]);
        h = al_scrub_hex(p[j + 2]);

        if (d >= 0 && h >= 0) {
            u[0] = (unsigned char) (d << 4 | h);
            *i = j + 3;
            return 1;
        }

        break;                              /* a "=" that stands for itself */

    case AL_SCRUB_URL2:
    case AL_SCRUB_JSON2:
    case AL_SCRUB_HTML2:
        if (mode == AL_SCRUB_URL2 && p[j] == '+') {
            return (size_t) -1;             /* ' ' or '+' */
        }

        e = al_scrub_twice(p + j, avail - j, mode, 0, u, &m2);

        if (e != 0 && e != (size_t) -1) {
            *i = j + m2;
        }

        return e;

    case AL_SCRUB_HTML:
        if (p[j] != '&') {
            break;
        }

        m = al_scrub_html(p + j, avail - j, 0, &cp, &e);

        if (m == AL_SCRUB_PARTIAL) {
            return (size_t) -1;
        }

        if (m == AL_SCRUB_FULL) {
            *i = j + e;
            return al_scrub_utf8(u, cp);
        }

        break;

    default:                                /* raw */
        break;
    }

    u[0] = p[j];
    *i = j + 1;

    return 1;
}


/*
 * [*lo, *hi): strings that share their first k bytes, each longer than
 * k, in byte order; narrowed to those whose next byte is c.
 */

static void
al_scrub_narrow(const al_scrub_t *s, size_t k, unsigned char c, size_t *lo,
    size_t *hi)
{
    size_t  a, b, m;

    a = *lo;
    b = *hi;

    while (a < b) {
        m = a + (b - a) / 2;

        if ((unsigned char) s->str[m].data[k] < c) {
            a = m + 1;

        } else {
            b = m;
        }
    }

    *lo = a;
    b = *hi;

    while (a < b) {
        m = a + (b - a) / 2;

        if ((unsigned char) s->str[m].data[k] <= c) {
            a = m + 1;

        } else {
            b = m;
        }
    }

    *hi = a;
}


/*
 * One string in one form: raw, URL-encoded, JSON-escaped, HTML-escaped,
 * quoted-printable, UTF-16 or UTF-32 (the last three in functions of
 * their own; final: the end of the response, for quoted-printable).  Each
 * form is read one way only: in URL-encoding "%" followed by two hex
 * digits is an escape (an encoder writes a "%" of the value as "%25"), in
 * JSON "\" is always one, in HTML "&" begins a reference when one follows
 * (al_scrub_html()) and is itself otherwise, as a browser reads it.
 */

static int
al_scrub_match_str(const al_str_t *str, const unsigned char *p, size_t avail,
    int mode, int final, size_t *len, unsigned *seen)
{
    int                   h[4], m;
    size_t                i, k, e, n, x, need, brk;
    uint32_t              cp, lo;
    unsigned char         u[4];
    const unsigned char  *v;

    v = (const unsigned char *) str->data;

    if (mode >= AL_SCRUB_U16LE) {
        return al_scrub_match_wide(str, p, avail, mode, len);
    }

    if (mode == AL_SCRUB_QP) {
        return al_scrub_match_qp(str, p, avail, final, len);
    }

    if (mode == AL_SCRUB_RAW) {
        n = (str->len < avail) ? str->len : avail;

        if (memcmp(p, v, n) == 0) {
            if (n == str->len) {
                *len = n;
                return AL_SCRUB_FULL;
            }

            return AL_SCRUB_PARTIAL;
        }

        /* read on only where a line end is in the way */

        for (i = 0; p[i] == v[i]; i++) { /* void */ }

        if (i == 0 || (p[i] != '\r' && p[i] != '\n')) {
            return AL_SCRUB_NONE;
        }
    }

    i = 0;
    k = 0;
    brk = 0;

    while (k < str->len) {

        if (i == avail) {
            return AL_SCRUB_PARTIAL;
        }

        /* a line end between two characters (al_scrub_break()) */

        if (k > 0 && al_scrub_breaks[p[i]] && i != brk && v[k] != '\r'
            && v[k] != '\n')
        {
            m = al_scrub_break(p, avail, mode, final, i, k, &e);

            if (m == AL_SCRUB_PARTIAL) {
                return AL_SCRUB_PARTIAL;
            }

            if (m == AL_SCRUB_FULL) {
                i = e;
                brk = e;
                continue;
            }
        }

        if (mode == AL_SCRUB_RAW) {
            if (p[i] != v[k]) {
                return AL_SCRUB_NONE;
            }

            i++;
            k++;
            continue;
        }

        if (mode >= AL_SCRUB_URL2) {
            n = al_scrub_twice(p + i, avail - i, mode, final, u, &e);

            if (n == (size_t) -1) {
                return AL_SCRUB_PARTIAL;    /* within AL_SCRUB_SPAN a byte */
            }

            if (mode == AL_SCRUB_URL2 && p[i] == '+' && v[k] == ' ') {
                u[0] = ' ';
            }

            if (n == 0 || e > AL_SCRUB_SPAN * n || n > str->len - k
                || memcmp(u, v + k, n) != 0)
            {
                return AL_SCRUB_NONE;
            }

            i += e;
            k += n;
            continue;
        }

        if (mode == AL_SCRUB_URL) {

            if (p[i] == '%' && (i + 1 == avail || al_scrub_hex(p[i + 1]) >= 0))
            {
                if (i + 2 >= avail) {
                    return AL_SCRUB_PARTIAL;
                }

                h[0] = al_scrub_hex(p[i + 1]);
                h[1] = al_scrub_hex(p[i + 2]);

                if ((h[0] << 4 | h[1]) == '%'
                    && al_scrub_again(p, avail, mode, i + 3))
                {
                    *seen = 1;
                }

                if (h[1] < 0 || (unsigned) (h[0] << 4 | h[1]) != v[k]) {
                    return AL_SCRUB_NONE;
                }

                i += 3;
                k++;
                continue;
            }

            if (p[i] == v[k] || (p[i] == '+' && v[k] == ' ')) {
                i++;
                k++;
                continue;
            }

            return AL_SCRUB_NONE;
        }

        if (mode == AL_SCRUB_HTML) {

            if (p[i] == '&') {
                m = al_scrub_html(p + i, avail - i, final, &cp,
                                  &e);

                /* a reference stands for at most what is left of the
                   string, AL_SCRUB_SPAN bytes a byte: no wait past the
                   carry */

                if (m == AL_SCRUB_PARTIAL) {
                    if (avail - i < AL_SCRUB_SPAN * (str->len - k)) {
                        return AL_SCRUB_PARTIAL;
                    }

                    m = AL_SCRUB_NONE;
                }

                if (m == AL_SCRUB_FULL) {
                    n = al_scrub_utf8(u, cp);

                    if (cp == '&' && al_scrub_again(p, avail, mode, i + e)) {
                        *seen = 1;
                    }

                    /* at most AL_SCRUB_SPAN bytes a byte, as the carry
                       is sized */

                    if (e > AL_SCRUB_SPAN * n || n > str->len - k
                        || memcmp(u, v + k, n) != 0)
                    {
                        return AL_SCRUB_NONE;
                    }

                    i += e;
                    k += n;
                    continue;
                }
            }

            if (p[i] != v[k]) {
                return AL_SCRUB_NONE;
            }

            i++;
            k++;
            continue;
        }

        /* JSON */

        if (p[i] != '\\') {
            if (p[i] != v[k]) {
                return AL_SCRUB_NONE;
            }

            i++;
            k++;
            continue;
        }

        if (i + 1 == avail) {
            return AL_SCRUB_PARTIAL;
        }

        if (p[i + 1] == '\\' && al_scrub_again(p, avail, mode, i + 2)) {
            *seen = 1;
        }

        if (p[i + 1] != 'u') {
            switch (p[i + 1]) {
            case '"': case '\\': case '/':
                cp = p[i + 1];
                break;
            case 'b':
                cp = '\b';
                break;
            case 'f':
                cp = '\f';
                break;
            case 'n':
                cp = '\n';
                break;
            case 'r':
                cp = '\r';
                break;
            case 't':
                cp = '\t';
                break;
            default:
                return AL_SCRUB_NONE;
            }

            if (cp != v[k]) {
                return AL_SCRUB_NONE;
            }

            i += 2;
            k++;
            continue;
        }

        /* \uXXXX, and a second one after a high surrogate */

        cp = 0;
        need = 6;

        for (e = 0; e < need; e++) {
            if (i + e == avail) {
                return AL_SCRUB_PARTIAL;
            }

            if (e == 6 && p[i + e] != '\\') {
                return AL_SCRUB_NONE;
            }

            if (e == 7 && p[i + e] != 'u') {
                return AL_SCRUB_NONE;
            }

            if ((e >= 2 && e < 6) || e >= 8) {
                x = (e < 6) ? e - 2 : e - 8;

                h[x] = al_scrub_hex(p[i + e]);
                if (h[x] < 0) {
                    return AL_SCRUB_NONE;
                }
            }

            if (e == 5 || e == 11) {
                lo = (uint32_t) (h[0] << 12 | h[1] << 8 | h[2] << 4 | h[3]);

                if (e == 5) {
                    cp = lo;

                    if (cp >= 0xd800 && cp <= 0xdbff) {

                        /* a pair is 12 bytes for 4: only with 4 to come,
                           so that no match spans more than AL_SCRUB_SPAN
                           a byte */

                        if (str->len - k < 4) {
                            return AL_SCRUB_NONE;
                        }

                        need = 12;

                    } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                        return AL_SCRUB_NONE;
                    }

                } else {
                    if (lo < 0xdc00 || lo > 0xdfff) {
                        return AL_SCRUB_NONE;
                    }

                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                }
            }
        }

        n = al_scrub_utf8(u, cp);

        if (n > str->len - k || memcmp(u, v + k, n) != 0) {
            return AL_SCRUB_NONE;
        }

        i += need;
        k += n;
    }

    *len = i;

    return AL_SCRUB_FULL;
}


/*
 * A string of ASCII bytes in UTF-16 or UTF-32, little- or big-endian: each
 * byte and one or three NULs, after or before it, as a body in that
 * charset carries it and a client's library decodes it (a JSON body is
 * taken for UTF-16 or UTF-32 by its NULs alone; Jackson writes UTF-32
 * when a client's Accept asks for it).  A UTF-32BE match starts at the
 * last NUL of its first character (the pair filter looks at a NUL and
 * the byte after it): the NULs before it are not the credential.  A
 * string with a byte past ASCII is not looked for.
 */

static int
al_scrub_match_wide(const al_str_t *str, const unsigned char *p,
    size_t avail, int mode, size_t *len)
{
    int                   m;
    size_t                i, k, w, at, n, e, brk;
    unsigned char         c;
    const unsigned char  *v;

    v = (const unsigned char *) str->data;
    w = (mode >= AL_SCRUB_U32LE) ? 4 : 2;
    at = 0;
    brk = 0;

    for (k = 0; k < str->len; k++) {
        if (v[k] >= 0x80) {
            return AL_SCRUB_NONE;
        }

        if (k > 0 && at < avail && al_scrub_breaks[p[at]] && at != brk
            && v[k] != '\r' && v[k] != '\n')
        {
            m = al_scrub_break(p, avail, mode, 0, at, k, &e);

            if (m == AL_SCRUB_PARTIAL) {
                return AL_SCRUB_PARTIAL;
            }

            if (m == AL_SCRUB_FULL) {
                at = e;
                brk = e;
            }
        }

        /* the character's bytes, its own last when big-endian */

        n = (mode == AL_SCRUB_U32BE && k == 0) ? 2 : w;

        for (i = 0; i < n; i++) {
            if (at + i == avail) {
                return AL_SCRUB_PARTIAL;
            }

            if (mode == AL_SCRUB_U16LE || mode == AL_SCRUB_U32LE) {
                c = (i == 0) ? v[k] : '\0';

            } else {
                c = (i == n - 1) ? v[k] : '\0';
            }

            if (p[at + i] != c) {
                return AL_SCRUB_NONE;
            }
        }

        at += n;
    }

    *len = at;

    return AL_SCRUB_FULL;
}


/*
 * Quoted-printable (RFC 2045), as a MIME part or a mail an upstream serves
 * carries a text: any byte but the first as "=XX" (the hex digits in
 * either case, as quopri and the email package read them), and a soft
 * line break ("=" and CRLF or LF, which the decoder drops) between any
 * two bytes, as an encoder cuts every line longer than 76 characters, so
 * inside any value longer than that.  Not two breaks in a row: a match
 * spans at most 6 bytes a byte ("=\r\n=3D").  A "=" that begins neither
 * stands for itself, as the decoders keep it, and so does one the end of
 * the response cuts short (final).
 */

static int
al_scrub_match_qp(const al_str_t *str, const unsigned char *p, size_t avail,
    int final, size_t *len)
{
    int                   d, h, m;
    size_t                i, k, e;
    unsigned              soft;
    const unsigned char  *v;

    v = (const unsigned char *) str->data;

    i = 0;
    k = 0;
    soft = 0;

    while (k < str->len) {

        if (i == avail) {
            return AL_SCRUB_PARTIAL;
        }

        /* a hard line break, as a soft one: not two in a row */

        if (k > 0 && !soft && al_scrub_breaks[p[i]] && v[k] != '\r'
            && v[k] != '\n')
        {
            m = al_scrub_break(p, avail, AL_SCRUB_QP, final, i, k, &e);

            if (m == AL_SCRUB_PARTIAL) {
                return AL_SCRUB_PARTIAL;
            }

            if (m == AL_SCRUB_FULL) {
                i = e;
                soft = 1;
                continue;
            }
        }

        if (p[i] == '=' && i > 0 && (i + 1 < avail || !final)) {
            if (i + 1 == avail) {
                return AL_SCRUB_PARTIAL;
            }

            if (p[i + 1] == '\r' || p[i + 1] == '\n') {
                if (soft) {
                    return AL_SCRUB_NONE;
                }

                if (p[i + 1] == '\r') {
                    if (i + 2 == avail) {
                        return final ? AL_SCRUB_NONE : AL_SCRUB_PARTIAL;
                    }

                    if (p[i + 2] != '\n') {
                        return AL_SCRUB_NONE;
                    }

                    i++;
                }

                i += 2;
                soft = 1;
                continue;
            }

            d = al_scrub_hex(p[i + 1]);

            if (d >= 0 && (i + 2 < avail || !final)) {
                if (i + 2 == avail) {
                    return AL_SCRUB_PARTIAL;
                }

                h = al_scrub_hex(p[i + 2]);

                if (h >= 0) {
                    if ((unsigned) (d << 4 | h) != v[k]) {
                        return AL_SCRUB_NONE;
                    }

                    i += 3;
                    k++;
                    soft = 0;
                    continue;
                }
            }
        }

        if (p[i] != v[k]) {
            return AL_SCRUB_NONE;
        }

        i++;
        k++;
        soft = 0;
    }

    *len = i;

    return AL_SCRUB_FULL;
}


/*
 * A line end at p + i, in one form, after k bytes of a string were read
 * there: CRLF or LF as that form writes them ("\\n" in JSON, "%0A" in a
 * URL, "&#10;", "=0D=0A", a wide LF), as an encoder that wraps its lines
 * (base64 after 64 characters in PEM, 76 in MIME) puts one anywhere in a
 * credential's encoding, and a decoder skips it.  FULL with *j past it,
 * NONE, or PARTIAL when more bytes may make one.  Only within
 * AL_SCRUB_SPAN bytes a byte of the string read so far: a match with its
 * line ends still spans at most what the carry holds.
 */

static int
al_scrub_break(const unsigned char *p, size_t avail, int mode, int final,
    size_t i, size_t k, size_t *j)
{
    size_t         lim, nu;
    unsigned char  u[4];

    lim = AL_SCRUB_SPAN * k;

    if (lim >= avail) {
        lim = avail;

    } else {
        final = 1;                          /* more would be too long */
    }

    *j = i;

    nu = al_scrub_next(p, lim, mode, j, u);

    if (nu == 1 && u[0] == '\r') {
        nu = al_scrub_next(p, lim, mode, j, u);

        if (nu == 1 && u[0] == '\n') {
            return AL_SCRUB_FULL;
        }

    } else if (nu == 1 && u[0] == '\n') {
        return AL_SCRUB_FULL;
    }

    /* unsure: an escape or a CR cut short by the end of what is there */

    if (nu == (size_t) -1 && !final && lim - i < 2 * AL_SCRUB_HTML_MAX) {
        return AL_SCRUB_PARTIAL;
    }

    return AL_SCRUB_NONE;
}


/*
 * An HTML or XML character reference at p (an "&"): a name of
 * al_scrub_refs[] ("&amp;", "&lt;", "&period;", "&lowbar;"; the name in
 * any case), "&#N;" or "&#xN;" ("x" and the hex digits in either case),
 * as html.unescape() and XML parsers read them.  As HTML5 reads them
 * without their ";" too: "&#N" and "&#xN" end at the first byte that is
 * not a digit of theirs, and the four legacy names of ASCII characters
 * ("&amp", "&lt", "&gt", "&quot") stand before anything.  FULL with the
 * character and the reference's length, NONE when no reference is there
 * (the "&" is then itself), PARTIAL when the bytes so far may begin one
 * or go on (never when final: the end of the response ends it).  A
 * reference has at most 10 bytes ("&#1114111;"), one without its ";" 9,
 * so that the byte that ends it is within the 10.
 */

static int
al_scrub_html(const unsigned char *p, size_t avail, int final, uint32_t *cp,
    size_t *len)
{
    int            d;
    size_t         i, k, base;
    unsigned char  c, name[AL_SCRUB_NAME_MAX + 1];

    if (avail < 2) {
        return final ? AL_SCRUB_NONE : AL_SCRUB_PARTIAL;
    }

    if (p[1] != '#') {

        /* letters, lowered, then ";" */

        for (i = 1; i < avail && i <= AL_SCRUB_NAME_MAX + 1; i++) {
            c = p[i] | 0x20;

            if (c < 'a' || c > 'z') {
                break;
            }

            name[i - 1] = c;
        }

        if (i == avail && !final
            && al_scrub_html_name(name, i - 1, 0) >= 0)
        {
            return AL_SCRUB_PARTIAL;        /* a name, or its ";", next */
        }

        d = -1;

        if (i < avail && p[i] == ';') {
            d = al_scrub_html_name(name, i - 1, 1);
        }

        if (d >= 0) {
            *len = i + 1;

        } else {
            d = al_scrub_html_legacy(name, i - 1);

            if (d < 0) {
                return AL_SCRUB_NONE;
            }

            *len = 1 + al_scrub_refs[d].len;
        }

        *cp = al_scrub_refs[d].c;

        return AL_SCRUB_FULL;
    }

    i = 2;
    base = 10;

    if (i == avail) {
        return final ? AL_SCRUB_NONE : AL_SCRUB_PARTIAL;
    }

    if ((p[i] | 0x20) == 'x') {
        base = 16;
        i++;
    }

    *cp = 0;

    for (k = i; /* void */; k++) {
        if (k == avail) {
            if (!final) {
                return AL_SCRUB_PARTIAL;
            }

            break;
        }

        if (p[k] == ';') {
            break;
        }

        d = al_scrub_hex(p[k]);

        if (d < 0 || (size_t) d >= base) {
            break;                          /* no ";": HTML5 reads it */
        }

        if (k + 1 >= AL_SCRUB_HTML_MAX) {
            return AL_SCRUB_NONE;
        }

        *cp = *cp * (uint32_t) base + (uint32_t) d;
    }

    if (k == i || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff)) {
        return AL_SCRUB_NONE;
    }

    *len = (k < avail && p[k] == ';') ? k + 1 : k;

    return AL_SCRUB_FULL;
}


/*
 * The legacy name of HTML5 (read without its ";") that the n lower-case
 * letters start with, as its index in al_scrub_refs[]; -1: none.  HTML5
 * has more (the Latin-1 letters, "&copy", "&nbsp"), none for an ASCII
 * character.
 */

static int
al_scrub_html_legacy(const unsigned char *name, size_t n)
{
    size_t       l;
    const char  *legacy;

    if (n < 2) {
        return -1;
    }

    switch (name[0]) {
    case 'a':
        legacy = "amp";
        break;
    case 'g':
        legacy = "gt";
        break;
    case 'l':
        legacy = "lt";
        break;
    case 'q':
        legacy = "quot";
        break;
    default:
        return -1;
    }

    l = strlen(legacy);

    if (n < l || memcmp(name, legacy, l) != 0) {
        return -1;
    }

    return al_scrub_html_name(name, l, 1);
}


/*
 * The index in al_scrub_refs[] of the name (n lower-case letters), with
 * whole; without, of any name that begins with them; -1: none.  Only the
 * few names of its first letter are compared.
 */

static int
al_scrub_html_name(const unsigned char *name, size_t n, int whole)
{
    size_t                 i, k, last;
    const al_scrub_ref_t  *r;

    if (n == 0 || n > AL_SCRUB_NAME_MAX) {
        return -1;
    }

    k = name[0] - 'a';
    last = al_scrub_ref_at[k + 1];

    for (k = al_scrub_ref_at[k]; k < last; k++) {
        r = &al_scrub_refs[k];

        if (r->len < n || (whole && r->len != n)) {
            continue;
        }

        for (i = 1; i < n && (unsigned char) r->name[i] == name[i]; i++) {
            /* void */
        }

        if (i == n) {
            return (int) k;
        }
    }

    return -1;
}


/*
 * One character of a form escaped twice, at p: a text escaped once and
 * then escaped again whole, as a JSON string holding a JSON document, a
 * URL in a query parameter, an escaped value put through an escaper
 * again.  URL-encoding: "%25XX" (the "%" of "%XX" encoded), "%XX"
 * and a byte as itself; JSON: "\\" followed by an escape of the inner
 * text, its own characters escaped again ("\\u005f", "\\\"", "\\\\",
 * "\\/" and "\\\/"), "\X" and "\uXXXX" of the outer escaping (not a
 * surrogate pair), a byte as itself; HTML: a reference to "&" followed
 * by a reference ("&amp;#95;", "&amp;lt;", "&#38;quot;"), both in at
 * most AL_SCRUB_HTML_MAX bytes, any other reference, a byte as itself.
 * The bytes of the character in u: their number, *len the bytes read; 0
 * when no string goes on here (an escape no encoder writes); -1 when
 * the bytes end inside an escape and more may follow (never when final).
 */

static size_t
al_scrub_twice(const unsigned char *p, size_t avail, int mode, int final,
    unsigned char *u, size_t *len)
{
    int            d, h, m;
    size_t         n, e, e2;
    uint32_t       cp;
    unsigned char  ref[AL_SCRUB_HTML_MAX + 1];

    u[0] = p[0];
    *len = 1;

    switch (mode) {

    case AL_SCRUB_URL2:
        if (p[0] != '%') {
            return 1;
        }

        if (avail < 2) {
            return final ? 1 : (size_t) -1;
        }

        d = al_scrub_hex(p[1]);

        if (d < 0) {
            return 1;                       /* a "%" that is itself */
        }

        if (avail < 3) {
            return final ? 0 : (size_t) -1;
        }

        h = al_scrub_hex(p[2]);

        if (h < 0) {
            return 0;
        }

        u[0] = (unsigned char) (d << 4 | h);
        *len = 3;

        if (u[0] != '%') {
            return 1;
        }

        if (avail < 5) {
            if (!final && (avail == 3 || al_scrub_hex(p[3]) >= 0)) {
                return (size_t) -1;
            }

            return 1;
        }

        d = al_scrub_hex(p[3]);
        h = al_scrub_hex(p[4]);

        if (d >= 0 && h >= 0) {
            u[0] = (unsigned char) (d << 4 | h);
            *len = 5;
        }

        return 1;

    case AL_SCRUB_JSON2:
        if (p[0] != '\\') {
            return 1;
        }

        if (avail < 2) {
            return final ? 0 : (size_t) -1;
        }

        if (p[1] != '\\') {
            n = al_scrub_json_escape(p, avail, u, len);
            return (n == (size_t) -1 && final) ? 0 : n;
        }

        if (avail < 3) {
            return final ? 0 : (size_t) -1;
        }

        switch (p[2]) {
        case '\\':
            if (avail < 4) {
                return final ? 0 : (size_t) -1;
            }

            if (p[3] != '"' && p[3] != '\\' && p[3] != '/') {
                return 0;
            }

            u[0] = p[3];
            *len = 4;
            return 1;

        case '"':
            return 0;                       /* no JSON text has it raw */

        default:
            n = al_scrub_json_escape(p + 1, avail - 1, u, &e);

            if (n == (size_t) -1) {
                return final ? 0 : n;
            }

            *len = e + 1;
            return n;
        }

    default:                                /* HTML */
        if (p[0] != '&') {
            return 1;
        }

        m = al_scrub_html(p, avail, final, &cp, &e);

        if (m == AL_SCRUB_PARTIAL) {
            return (size_t) -1;
        }

        if (m == AL_SCRUB_NONE) {
            return 1;                       /* an "&" that is itself */
        }

        *len = e;

        if (cp != '&') {
            return al_scrub_utf8(u, cp);
        }

        /* "&amp;gt;": the "&" and the bytes after it, a reference */

        if (e == avail) {
            return (final || avail >= AL_SCRUB_HTML_MAX) ? 1 : (size_t) -1;
        }

        n = avail - e;
        if (n > AL_SCRUB_HTML_MAX) {
            n = AL_SCRUB_HTML_MAX;
        }

        ref[0] = '&';
        memcpy(ref + 1, p + e, n);

        m = al_scrub_html(ref, n + 1, final && n == avail - e, &cp, &e2);

        if (m == AL_SCRUB_PARTIAL) {
            return (avail < AL_SCRUB_HTML_MAX) ? (size_t) -1 : 1;
        }

        e2--;                               /* the "&" is not there */

        if (m == AL_SCRUB_FULL
            && e + e2 + (p[e + e2 - 1] != ';') <= AL_SCRUB_HTML_MAX)
        {
            *len = e + e2;
            return al_scrub_utf8(u, cp);
        }

        return 1;                           /* "&" */
    }
}


/*
 * A JSON escape at p (a "\"): \" \\ \/ \b \f \n \r \t, or \uXXXX of a
 * character that is not a surrogate; as al_scrub_twice() answers.
 */

static size_t
al_scrub_json_escape(const unsigned char *p, size_t avail, unsigned char *u,
    size_t *len)
{
    int       d;
    size_t    e;
    uint32_t  cp;

    if (avail < 2) {
        return (size_t) -1;
    }

    *len = 2;

    switch (p[1]) {
    case '"': case '\\': case '/':
        u[0] = p[1];
        return 1;
    case 'b':
        u[0] = '\b';
        return 1;
    case 'f':
        u[0] = '\f';
        return 1;
    case 'n':
        u[0] = '\n';
        return 1;
    case 'r':
        u[0] = '\r';
        return 1;
    case 't':
        u[0] = '\t';
        return 1;
    case 'u':
        break;
    default:
        return 0;
    }

    cp = 0;

    for (e = 2; e < 6; e++) {
        if (e == avail) {
            return (size_t) -1;
        }

        d = al_scrub_hex(p[e]);
        if (d < 0) {
            return 0;
        }

        cp = cp << 4 | (uint32_t) d;
    }

    if (cp >= 0xd800 && cp <= 0xdfff) {
        return 0;
    }

    *len = 6;

    return al_scrub_utf8(u, cp);
}


/*
 * Whether the escape of the form's own escape character ("%25", "\\",
 * "&amp;") that ends at p + j may begin a character escaped twice (the
 * form read twice, AL_SCRUB_TWICE after it, reads it otherwise): a hex
 * digit after "%25", an escape's letter after "\\", a letter or "#"
 * after "&amp;", or the end of what is there.
 */

static int
al_scrub_again(const unsigned char *p, size_t avail, int mode, size_t j)
{
    unsigned char  c;

    if (j >= avail) {
        return 1;
    }

    c = p[j];

    switch (mode) {
    case AL_SCRUB_URL:
        return al_scrub_hex(c) >= 0;
    case AL_SCRUB_JSON:
        return c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n'
               || c == 'r' || c == 't' || c == 'u';
    default:
        c |= 0x20;
        return (c >= 'a' && c <= 'z') || p[j] == '#';
    }
}


static int
al_scrub_hex(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }

    c |= 0x20;

    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }

    return -1;
}


static size_t
al_scrub_utf8(unsigned char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (unsigned char) cp;
        return 1;
    }

    if (cp < 0x800) {
        out[0] = (unsigned char) (0xc0 | cp >> 6);
        out[1] = (unsigned char) (0x80 | (cp & 0x3f));
        return 2;
    }

    if (cp < 0x10000) {
        out[0] = (unsigned char) (0xe0 | cp >> 12);
        out[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
        out[2] = (unsigned char) (0x80 | (cp & 0x3f));
        return 3;
    }

    out[0] = (unsigned char) (0xf0 | cp >> 18);
    out[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
    out[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
    out[3] = (unsigned char) (0x80 | (cp & 0x3f));
    return 4;
}
