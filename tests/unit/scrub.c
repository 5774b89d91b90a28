/*
 * Scrub lists and the scrub matcher: the forms built when the policy loads
 * (raw, after the scheme, base64 in both alphabets with and without
 * padding and inside a longer text, the Basic credential decoded and its
 * password alone), and the forms al_scrub_match() decodes as it compares
 * (URL-encoding in every hex case, JSON escapes, HTML references, line
 * ends), whole and fed a few bytes at a time.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"
#include "tap.h"


#define REDACTED  "[REDACTED]"

/* base64 "czNjcjN0Lz4/fms=": a "/", one "=" */
#define SECRET    "s3cr3t/>?~k"
#define UKEY      "sk_test_4eC39HqLyjWDarjtT1zdp7dc"

#define HEAD                                                                 \
    "version: 1\n"                                                           \
    "clients:\n"                                                             \
    "  agent: { unix_uid: 0 }\n"

#define ALERTS                                                               \
    "alerts:\n"                                                              \
    "  deny: { threshold: 3, window: 60s }\n"


static int has(const al_scrub_t *s, const char *str);
static size_t scrub_whole(const al_scrub_t *s, const char *in, size_t len,
    char *out);
static size_t scrub_pieces(const al_scrub_t *s, const char *in, size_t len,
    size_t piece, char *out);
static int redacted(const al_scrub_t *s, const char *in, const char *name);
static void test_forms(al_keyring_t *kr, const char *pub);
static void test_wrapped(al_keyring_t *kr, const char *pub);
static void test_many(al_keyring_t *kr, const char *pub);
static void test_inner(al_keyring_t *kr, const char *pub);
static void test_breaks(const al_scrub_t *s);
static al_policy_t *bearer_policy(al_keyring_t *kr, const char *pub,
    const char *secret, size_t len, const char *label);
static int inner_redacted(const al_scrub_t *s, const char *text,
    size_t least, const char *name);
static clock_t many_cpu(const al_scrub_t *s, char *body, char *out);
static void test_policy_list(const al_policy_t *p);
static void test_url(const al_scrub_t *s);
static void test_json(const al_scrub_t *s);
static void test_html(const al_scrub_t *s);
static void test_twice(const al_scrub_t *s);
static void test_utf16(const al_scrub_t *s);
static void test_base64(const al_scrub_t *s);
static void test_hex(const al_scrub_t *s);
static void test_qp(const al_scrub_t *s);
static void test_partial(const al_scrub_t *s);
static void test_negative(const al_scrub_t *s);
static void test_pairs(const al_scrub_t *s, const char *name);
static void test_utf8(void);
static void test_starts(void);
static void test_prefix(void);
static void test_decode(void);
static void test_html_names(void);
static void test_html_legacy(void);
static void test_halves(al_keyring_t *kr, const char *pub);


static int
has(const al_scrub_t *s, const char *str)
{
    size_t  i;

    for (i = 0; i < s->n; i++) {
        if (s->str[i].len == strlen(str)
            && memcmp(s->str[i].data, str, s->str[i].len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* what the module does to a header value or a held body */

static size_t
scrub_whole(const al_scrub_t *s, const char *in, size_t len, char *out)
{
    size_t  i, o, n;

    o = 0;

    for (i = 0; i < len; /* void */) {
        if (s->first[(unsigned char) in[i]]
            && al_scrub_match(s, (const unsigned char *) in + i, len - i, 1,
                              &n)
               == AL_SCRUB_FULL)
        {
            memcpy(out + o, REDACTED, sizeof(REDACTED) - 1);
            o += sizeof(REDACTED) - 1;
            i += n;
            continue;
        }

        out[o++] = in[i++];
    }

    out[o] = '\0';

    return o;
}


/*
 * What the module does to a stream: bytes arrive piece bytes at a time,
 * and a byte is decided only with what has arrived so far; a PARTIAL match
 * waits for the next piece.
 */

static size_t
scrub_pieces(const al_scrub_t *s, const char *in, size_t len, size_t piece,
    char *out)
{
    int     m, final;
    size_t  have, i, o, n;

    i = 0;
    o = 0;

    for (have = 0; have < len; /* void */) {
        have = (have + piece < len) ? have + piece : len;
        final = (have == len);

        while (i < have) {
            if (!s->first[(unsigned char) in[i]]) {
                out[o++] = in[i++];
                continue;
            }

            m = al_scrub_match(s, (const unsigned char *) in + i, have - i,
                               final, &n);

            if (m == AL_SCRUB_PARTIAL) {
                if (n != 0 || have - i >= s->maxspan) {
                    return (size_t) -1;     /* the carry would overflow */
                }
                break;
            }

            if (m == AL_SCRUB_FULL) {
                memcpy(out + o, REDACTED, sizeof(REDACTED) - 1);
                o += sizeof(REDACTED) - 1;
                i += n;
                continue;
            }

            out[o++] = in[i++];
        }
    }

    out[o] = '\0';

    return o;
}


/* "x<in>y" becomes "x[REDACTED]y", whole and in pieces of 1 to 7 bytes */

static int
redacted(const al_scrub_t *s, const char *in, const char *name)
{
    int     ok;
    char    text[1024], out[2048];
    size_t  piece;

    snprintf(text, sizeof(text), "x%sy", in);

    scrub_whole(s, text, strlen(text), out);
    ok = (strcmp(out, "x" REDACTED "y") == 0);

    for (piece = 1; ok && piece <= 7; piece++) {
        ok = scrub_pieces(s, text, strlen(text), piece, out) != (size_t) -1
             && strcmp(out, "x" REDACTED "y") == 0;
    }

    if (!tap_ok(ok, name)) {
        tap_diag("input: ", text);
        tap_diag("got:   ", out);
    }

    return ok;
}


static void
test_forms(al_keyring_t *kr, const char *pub)
{
    char          *basic, *bearer, *pre, *ukey;
    char           yaml[8192];
    al_error_t     err;
    al_scrub_t    *s;
    al_policy_t   *p;
    const char    *why;

    basic = bearer = pre = ukey = NULL;

    /* "alice:hunter2-xyz", encoded by the operator */

    if (!tap_ok(al_seal(pub, (const unsigned char *) "user:pw-Secret9", 15,
                        &basic, &err) == 0
                && al_seal(pub, (const unsigned char *) SECRET,
                           sizeof(SECRET) - 1, &bearer, &err) == 0
                && al_seal(pub, (const unsigned char *)
                           "YWxpY2U6aHVudGVyMi14eXo=", 24, &pre, &err) == 0
                && al_seal(pub, (const unsigned char *) UKEY ":",
                           sizeof(UKEY), &ukey, &err) == 0,
                "seal the secrets"))
    {
        tap_diag("error: ", err.msg);
        goto done;
    }

    snprintf(yaml, sizeof(yaml),
             HEAD
             "secrets:\n"
             "  basic: { sealed: \"%s\" }\n"
             "  tok: { sealed: \"%s\" }\n"
             "  pre: { sealed: \"%s\" }\n"
             "  ukey: { sealed: \"%s\" }\n"
             "upstreams:\n"
             "  up: { url: \"http://127.0.0.1:9090\" }\n"
             "routes:\n"
             "  - name: basic\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /basic }\n"
             "    upstream: up\n"
             "    to: /a\n"
             "    inject: { Authorization: \"Basic {basic|base64}\" }\n"
             "  - name: bearer\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /bearer }\n"
             "    upstream: up\n"
             "    to: /b\n"
             "    inject: { Authorization: \"Bearer {tok}\" }\n"
             "  - name: pre\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /pre }\n"
             "    upstream: up\n"
             "    to: /c\n"
             "    inject: { Authorization: \"basic {pre}\" }\n"
             "  - name: all\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /all }\n"
             "    upstream: up\n"
             "    to: /e\n"
             "    inject: { Authorization: \"Bearer {tok}\",\n"
             "              X-Basic: \"Basic {basic|base64}\",\n"
             "              X-Pre: \"basic {pre}\" }\n"
             "  - name: ukey\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /ukey }\n"
             "    upstream: up\n"
             "    to: /f\n"
             "    inject: { Authorization: \"Basic {ukey|base64}\" }\n"
             "  - name: fixed\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /fixed }\n"
             "    upstream: up\n"
             "    to: /d\n"
             "    inject: { Accept: \"application/json\" }\n"
             "  - name: quiet\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /quiet }\n"
             "    upstream: up\n"
             "    to: /q\n"
             "    scrub: false\n"
             ALERTS, basic, bearer, pre, ukey);

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    if (!tap_ok(p != NULL && p->secrets_open, "policy opens with keys")) {
        tap_diag("error: ", err.msg);
        goto done;
    }

    /* Bearer */

    s = al_scrub_collect(p, al_policy_route(p, "bearer", 6), &why);
    if (tap_ok(s != NULL, "bearer: scrub list built")) {
        tap_ok(has(s, "Bearer " SECRET), "bearer: the rendered value");
        tap_ok(has(s, SECRET), "bearer: the secret");
        tap_ok(has(s, "czNjcjN0Lz4/fms="), "bearer: base64");
        tap_ok(has(s, "czNjcjN0Lz4/fms"), "bearer: base64 without padding");
        tap_ok(has(s, "czNjcjN0Lz4_fms="), "bearer: base64url");
        tap_ok(has(s, "czNjcjN0Lz4_fms"),
               "bearer: base64url without padding");
        tap_ok(has(s, "QmVhcmVyIHMzY3IzdC8+P35r"),
               "bearer: the rendered value in base64");
        tap_ok(has(s, "QmVhcmVyIHMzY3IzdC8-P35r"),
               "bearer: the rendered value in base64url");
        tap_is_int((long) s->n, 14,
                   "bearer: fourteen strings (eight, and six hex forms of "
                   "the secret), no duplicates");
        tap_is_int((long) s->maxlen, 3 * (sizeof(SECRET) - 1) - 1,
                   "bearer: maxlen is the longest string, the secret's "
                   "spaced hex");
        tap_is_int((long) s->maxspan, 10 * (long) s->maxlen,
                   "bearer: a match spans at most 10 bytes a byte, an "
                   "HTML reference's");
        tap_ok(s->first['B'] && s->first['s'] && s->first['c']
               && s->first['%'] && s->first['\\'] && !s->first['x']
               && !s->first['+'],
               "bearer: first bytes: each string's, and the escapes");

        test_url(s);
        test_json(s);
        test_html(s);
        test_twice(s);
        test_utf16(s);
        test_base64(s);
        test_hex(s);
        test_qp(s);
        test_partial(s);
        test_negative(s);
        test_pairs(s, "bearer");

        al_scrub_free(s);
    }

    /* Basic with {secret|base64}: the password alone too */

    s = al_scrub_collect(p, al_policy_route(p, "basic", 5), &why);
    if (tap_ok(s != NULL, "basic: scrub list built")) {
        tap_ok(has(s, "Basic dXNlcjpwdy1TZWNyZXQ5"),
               "basic: the rendered value");
        tap_ok(has(s, "dXNlcjpwdy1TZWNyZXQ5"), "basic: the credential");
        tap_ok(has(s, "user:pw-Secret9"), "basic: user:password");
        tap_ok(has(s, "pw-Secret9"), "basic: the password alone");
        tap_ok(!has(s, "user"), "basic: not the user name alone");
        tap_ok(has(s, "QmFzaWMgZFhObGNqcHdkeTFUWldOeVpYUTU="),
               "basic: the rendered value in base64");
        redacted(s, "QmFzaWMgZFhObGNqcHdkeTFUWldOeVpYUTU",
                 "basic: the rendered value in base64, unpadded");
        redacted(s, "pw-Secret9", "basic: the password echoed");
        redacted(s, "pw%2dSecret%39", "basic: the password URL-encoded");
        redacted(s, "user%3Apw-Secret9", "basic: user%3Apassword");
        redacted(s, "70772d53656372657439", "basic: the password in hex");
        redacted(s, "70 77 2D 53 65 63 72 65 74 39",
                 "basic: the password in hex, spaced, upper case");
        redacted(s, "75 73 65 72 3a 70 77 2d 53 65 63 72 65 74 39",
                 "basic: user:password (the secret) in hex, spaced");
        test_pairs(s, "basic");
        al_scrub_free(s);
    }

    /* three secrets on one route: more pairs than have a bit each */

    s = al_scrub_collect(p, al_policy_route(p, "all", 3), &why);
    if (tap_ok(s != NULL, "all: scrub list built")) {
        tap_ok(s->npairs > 16,
               "all: more than 16 pairs, listed for the block walks");
        redacted(s, "Bearer " SECRET, "all: the bearer token");
        redacted(s, "pw-Secret9", "all: the password");
        test_pairs(s, "all");
        al_scrub_free(s);
    }

    /* a secret that is the encoded credential already, scheme lower case */

    s = al_scrub_collect(p, al_policy_route(p, "pre", 3), &why);
    if (tap_ok(s != NULL, "pre-encoded basic: scrub list built")) {
        tap_ok(has(s, "alice:hunter2-xyz"),
               "pre-encoded basic: the credential decoded");
        tap_ok(has(s, "hunter2-xyz"), "pre-encoded basic: the password");
        tap_ok(has(s, "YWxpY2U6aHVudGVyMi14eXo"),
               "pre-encoded basic: the secret without its padding");
        al_scrub_free(s);
    }

    /* an API key sent as the user name, the password empty ("sk:") */

    s = al_scrub_collect(p, al_policy_route(p, "ukey", 4), &why);
    if (tap_ok(s != NULL, "key as user name: scrub list built")) {
        tap_ok(has(s, UKEY ":"), "key as user name: user:password");
        tap_ok(has(s, UKEY), "key as user name: the user name alone");
        redacted(s, UKEY, "key as user name: the key echoed");
        redacted(s, "sk%5Ftest_4eC39HqLyjWDarjtT1zdp7dc",
                 "key as user name: the key URL-encoded");
        al_scrub_free(s);
    }

    s = al_scrub_collect(p, al_policy_route(p, "fixed", 5), &why);
    tap_ok(s != NULL && s->n == 0 && s->maxspan == 0,
           "a constant header: nothing to scrub");
    al_scrub_free(s);

    test_policy_list(p);

    al_policy_free(p);

done:

    free(basic);
    free(bearer);
    free(ukey);
    free(pre);
}


/*
 * The policy's list, what every scrubbed response is searched for: each
 * route's strings, once, and no other; "bearer"'s response is searched
 * for the Basic route's credential too.  A route with only a constant
 * header is scrubbed as well (its upstream may hold another route's
 * credential); one of "scrub: false" is not.
 */

static void
test_policy_list(const al_policy_t *p)
{
    int          ok, cmp;
    size_t       i, j, n, len;
    const char  *why;
    al_scrub_t  *all, *s;
    const char  *names[] = { "basic", "bearer", "pre", "all", "ukey" };

    all = al_scrub_collect_all(p, &why);
    if (!tap_ok(all != NULL, "policy list: built")) {
        return;
    }

    ok = 1;
    n = 0;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        s = al_scrub_collect(p, al_policy_route(p, names[i],
                                                strlen(names[i])), &why);
        if (s == NULL) {
            ok = 0;
            continue;
        }

        for (j = 0; j < s->n; j++) {
            if (!has(all, s->str[j].data)) {
                tap_diag("not in the policy list: ", names[i]);
                ok = 0;
            }
        }

        n += s->n;
        al_scrub_free(s);
    }

    tap_ok(ok, "policy list: every route's strings");

    for (i = 0; i < all->n; i++) {
        for (j = 0; j < i; j++) {
            if (all->str[j].len == all->str[i].len
                && memcmp(all->str[j].data, all->str[i].data,
                          all->str[i].len) == 0)
            {
                ok = 0;
            }
        }

        if (!ok) {
            break;
        }
    }

    tap_ok(ok, "policy list: each string once");
    tap_ok(all->n < n, "policy list: the routes' shared strings once");

    for (i = 0; i < all->n; i++) {
        ok = 0;

        for (j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
            s = al_scrub_collect(p, al_policy_route(p, names[j],
                                                    strlen(names[j])), &why);
            if (s != NULL && has(s, all->str[i].data)) {
                ok = 1;
            }

            al_scrub_free(s);
        }

        if (!ok) {
            tap_diag("in no route's list: ", all->str[i].data);
            break;
        }
    }

    tap_ok(ok, "policy list: no string of its own");

    for (i = 1; i < all->n; i++) {
        if (all->str[i - 1].len < all->str[i].len) {
            break;
        }
    }

    for (i = 1; i < all->n; i++) {
        len = all->str[i - 1].len < all->str[i].len ? all->str[i - 1].len
                                                    : all->str[i].len;
        cmp = memcmp(all->str[i - 1].data, all->str[i].data, len);

        if (cmp > 0 || (cmp == 0 && all->str[i - 1].len >= all->str[i].len)) {
            break;
        }
    }

    tap_ok(i >= all->n, "policy list: in byte order");

    tap_ok(al_scrub_route_scrubbed(p, al_policy_route(p, "bearer", 6))
           && al_scrub_route_scrubbed(p, al_policy_route(p, "fixed", 5))
           && !al_scrub_route_scrubbed(p, al_policy_route(p, "quiet", 5)),
           "policy list: every route is scrubbed, with or without a "
           "secret, but one of scrub: false");

    (void) redacted(all, "user:pw-Secret9",
                    "policy list: the Basic route's credential");

    test_starts();
    test_prefix();

    al_scrub_free(all);
}


/* every case of every hex digit: the secret with each byte as %XX */

static void
test_url(const al_scrub_t *s)
{
    int         ok;
    char        in[256], out[512], tmp[64];
    size_t      i, o, bit, ncase;
    const char  *v;
    unsigned    mask, all;

    v = SECRET;

    /* the letters among the hex digits of SECRET fully encoded */

    ncase = 0;
    for (i = 0; v[i]; i++) {
        snprintf(tmp, sizeof(tmp), "%02X", (unsigned char) v[i]);
        ncase += (tmp[0] >= 'A') + (tmp[1] >= 'A');
    }

    all = 1u << ncase;
    ok = 1;

    for (mask = 0; ok && mask < all; mask++) {
        o = 0;
        bit = 0;

        for (i = 0; v[i]; i++) {
            snprintf(tmp, sizeof(tmp), "%%%02X", (unsigned char) v[i]);

            if (tmp[1] >= 'A' && (mask >> bit++ & 1)) {
                tmp[1] |= 0x20;
            }
            if (tmp[2] >= 'A' && (mask >> bit++ & 1)) {
                tmp[2] |= 0x20;
            }

            memcpy(in + o, tmp, 3);
            o += 3;
        }

        in[o] = '\0';

        scrub_whole(s, in, o, out);
        ok = (strcmp(out, REDACTED) == 0);
    }

    if (!tap_ok(ok && ncase > 0, "url: every byte as %XX, all hex cases")) {
        tap_diag("input: ", in);
        tap_diag("got:   ", out);
    }

    redacted(s, "s3cr3t%2F%3E%3F%7Ek", "url: encodeURIComponent");
    redacted(s, "s3cr3t%2f%3e%3f%7ek", "url: lower-case hex");
    redacted(s, "%73%33%63%72%33%74%2f%3E%3f%7e%6B",
             "url: every byte, mixed case");
    redacted(s, "Bearer+s3cr3t%2F%3E%3F~k", "url: form-encoded, + for space");
    redacted(s, "Bearer%20s3cr3t/>?~k", "url: the space only");
    redacted(s, "czNjcjN0Lz4%2Ffms%3D", "url: base64 URL-encoded");
}


static void
test_json(const al_scrub_t *s)
{
    redacted(s, "s3cr3t\\/>?~k", "json: \\/");
    redacted(s, "s3cr3t\\u002f\\u003E?~k", "json: \\u002f \\u003E");
    redacted(s, "\\u0073\\u0033\\u0063\\u0072\\u0033\\u0074\\u002F\\u003e"
             "\\u003F\\u007E\\u006b", "json: every byte as \\uXXXX");
    redacted(s, "\\u0073\\u0033\\u0063\\u0072\\u0033\\u0074\\u002f\\u003E"
             "\\u003f\\u007e\\u006B", "json: every byte, other cases");
    redacted(s, "Bearer\\u0020s3cr3t\\/>?~k", "json: the rendered value");
    redacted(s, "czNjcjN0Lz4\\/fms=", "json: base64 with \\/");
}


/*
 * HTML and XML: the ASCII characters HTML5 names, by name (in any case:
 * the five of XML, "&sol;", "&quest;" as PHP's htmlentities() with
 * ENT_HTML5 writes them, and their other names), and any character as
 * &#N; or &#xN; (the x and the hex digits in either case, leading zeros
 * while the reference is at most 10 bytes a byte).
 */

static void
test_html(const al_scrub_t *s)
{
    int          m;
    size_t       n;

    redacted(s, "s3cr3t/&gt;?~k", "html: &gt;");
    redacted(s, "s3cr3t/&GT;?~k", "html: &GT;");
    redacted(s, "s3cr3t/&#62;?~k", "html: &#62;");
    redacted(s, "s3cr3t/&#062;?~k", "html: &#062;");
    redacted(s, "s3cr3t/&#0000062;?~k", "html: &#0000062;, 10 bytes");
    redacted(s, "s3cr3t&sol;&gt;&quest;~k", "html: &sol; and &quest;");
    redacted(s, "s3cr3t&SOL;&Gt;&QuEsT;~k", "html: names in any case");
    redacted(s, "Bearer s3cr3t&sol;>?~k", "html: a name in the rendered "
             "value");
    redacted(s, "s3cr3t/&#x3e;?~k", "html: &#x3e;");
    redacted(s, "s3cr3t/&#X3E;?~k", "html: &#X3E;");
    redacted(s, "&#115;&#51;&#99;&#114;&#51;&#116;&#47;&#62;&#63;&#126;"
             "&#107;", "html: every byte as &#N;");
    redacted(s, "&#x73;&#X33;&#x63;&#x72;&#x33;&#x74;&#x2F;&#x3e;&#x3F;"
             "&#X7e;&#x6B;", "html: every byte as &#xN;, mixed case");
    redacted(s, "Bearer&#32;s3cr3t/&gt;?~k", "html: the rendered value");
    redacted(s, "Bearer s3cr3t&#x2f;>?~k", "html: raw and escaped mixed");
    redacted(s, "s3cr3t/&gt?~k", "html: &gt without its ;");
    redacted(s, "s3cr3t/&GT?~k", "html: &GT without its ;");
    redacted(s, "s3cr3t/&#62?~k", "html: &#62 without its ;");
    redacted(s, "s3cr3t/&#x3e?~k", "html: &#x3e without its ;");
    redacted(s, "s3cr3t/&#X3E?~k", "html: &#X3E without its ;");
    redacted(s, "s3cr3t/&#0000062?~k", "html: &#0000062, 9 bytes");
    redacted(s, "&#115&#51&#99&#114&#51&#116&#47&#62&#63&#126&#107",
             "html: every byte as &#N without ;");
    redacted(s, "&#x73&#X33&#x63&#x72&#x33&#x74&#x2F&#x3e&#x3F&#X7e&#x6B",
             "html: every byte as &#xN without ;");
    redacted(s, "s3cr3t&#47&gt;&#x3f;~&#107", "html: with and without ; "
             "mixed");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t/&#x3", 11, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "html: partial inside &#xN;");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t/&g", 9, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "html: partial inside &gt;");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t&so", 9, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "html: partial inside &sol;");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t&sx", 9, 0, &n);
    tap_ok(m == AL_SCRUB_NONE, "html: no name begins &sx");

    /* without ";", the byte after a reference ends it: at the end of
       what has come it may be a digit, at the end of the response it
       ends the reference */

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t/>?~&#107", 15, 0,
                       &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "html: &#N at the end waits for more");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t/>?~&#107", 15, 1,
                       &n);
    tap_ok(m == AL_SCRUB_FULL && n == 15,
           "html: &#N at the end of the response is read");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t/>?~&#x6b", 15, 1,
                       &n);
    tap_ok(m == AL_SCRUB_FULL && n == 15,
           "html: &#xN at the end of the response is read");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t/&gt", 10, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "html: &gt at the end waits for its ;");
}


/*
 * Escaped twice, as a text escaped once is when it is escaped again
 * whole (a URL in a query parameter, a JSON document in a JSON string, an
 * escaped value through an HTML escaper): "%252F"; "\\u002f", "\\/",
 * "\\\/"; "&amp;gt;", "&amp;#47;", "&#38;gt;"; mixed with the characters
 * escaped once.
 */

static void
test_twice(const al_scrub_t *s)
{
    int          m;
    size_t       n;
    al_str_t     str[1];
    al_scrub_t   one;

    redacted(s, "s3cr3t%252F>?~k", "twice: %252F");
    redacted(s, "s3cr3t%252f%253E%253f%257e%256B", "twice: %25XX, mixed "
             "case");
    redacted(s, "%2573%2533%2563%2572%2533%2574%252F%253E%253F%257E%256B",
             "twice: every byte as %25XX");
    redacted(s, "s3cr3t%2F%253E?~k", "twice: %XX and %25XX mixed");
    redacted(s, "Bearer%2520s3cr3t%252F%253E%253F~k", "twice: the rendered "
             "value");
    redacted(s, "s3cr3t\\\\/>?~k", "twice: JSON \\\\/");
    redacted(s, "s3cr3t\\\\\\/>?~k", "twice: JSON \\\\\\/");
    redacted(s, "s3cr3t\\\\u002f\\\\u003E?~k", "twice: JSON \\\\uXXXX");
    redacted(s, "\\\\u0073\\\\u0033\\\\u0063\\\\u0072\\\\u0033\\\\u0074"
             "\\\\u002F\\\\u003e\\\\u003F\\\\u007E\\\\u006b",
             "twice: JSON, every byte as \\\\uXXXX");
    redacted(s, "s3cr3t\\/\\\\u003e?~k", "twice: JSON \\/ and \\\\uXXXX "
             "mixed");
    redacted(s, "Bearer\\\\u0020s3cr3t\\\\/>?~k", "twice: JSON, the "
             "rendered value");
    redacted(s, "s3cr3t/&amp;gt;?~k", "twice: &amp;gt;");
    redacted(s, "s3cr3t/&AMP;GT;?~k", "twice: &AMP;GT;");
    redacted(s, "s3cr3t&amp;#47;&amp;#62;?~k", "twice: &amp;#N;");
    redacted(s, "s3cr3t&amp;#x2f;&#38;gt;?~k", "twice: &amp;#xN; and "
             "&#38;gt;");
    redacted(s, "s3cr3t&amp;sol;&gt;?~k", "twice: &amp;sol;, 9 bytes");
    redacted(s, "s3cr3t/&amp;gt?~k", "twice: &amp;gt without its ;");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t%25", 9, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "twice: partial inside %25XX");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t\\\\u00", 11, 0,
                       &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "twice: partial inside \\\\uXXXX");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t&amp;", 11, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "twice: partial after &amp;");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t/>?~%256B", 15, 1,
                       &n);
    tap_ok(m == AL_SCRUB_FULL && n == 15,
           "twice: %25XX at the end of the response");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t\\\\/>?~\\u006b",
                       18, 1, &n);
    tap_ok(m == AL_SCRUB_FULL && n == 18,
           "twice: JSON, \\uXXXX at the end of the response");

    /* "x/" as "\\u0078\/": a two-byte escape last */

    str[0].data = "x/";
    str[0].len = 2;
    memset(&one, 0, sizeof(one));
    one.str = str;
    one.n = 1;
    al_scrub_index(&one);

    m = al_scrub_match(&one, (const unsigned char *) "\\\\u0078\\/", 9, 1,
                       &n);
    tap_ok(m == AL_SCRUB_FULL && n == 9,
           "twice: JSON, \\/ at the end of the response");
}


/*
 * UTF-16 and UTF-32, little- and big-endian: "x<form>y" becomes
 * "x[REDACTED]y" (UTF-32BE: the NULs before the first character's byte
 * stay, "x\0\0[REDACTED]y"), whole and in pieces of 1 to 7 bytes; the
 * form cut short is left alone.
 */

static void
test_utf16(const al_scrub_t *s)
{
    int          ok, be, m;
    char         in[256], out[512], want[64], name[64];
    size_t       i, k, n, w, piece, wlen;
    al_str_t     one_str;
    al_scrub_t   one;
    const char  *v;

    v = "Bearer " SECRET;

    for (w = 2; w <= 4; w += 2) {
        for (be = 0; be <= 1; be++) {
            n = 0;
            in[n++] = 'x';

            for (i = 0; v[i] != '\0'; i++) {
                for (k = 0; k < w; k++) {
                    in[n++] = (k == (be ? w - 1 : 0)) ? v[i] : '\0';
                }
            }

            in[n++] = 'y';

            wlen = 0;
            want[wlen++] = 'x';

            if (w == 4 && be) {
                want[wlen++] = '\0';
                want[wlen++] = '\0';
            }

            memcpy(want + wlen, REDACTED "y", sizeof(REDACTED));
            wlen += sizeof(REDACTED);

            scrub_whole(s, in, n, out);
            ok = (memcmp(out, want, wlen) == 0);

            for (piece = 1; ok && piece <= 7; piece++) {
                ok = scrub_pieces(s, in, n, piece, out) != (size_t) -1
                     && memcmp(out, want, wlen) == 0;
            }

            snprintf(name, sizeof(name), "utf%d: %s-endian", (int) w * 8,
                     be ? "big" : "little");
            tap_ok(ok, name);

            /* the last character missing: nothing to redact */

            in[n - 1 - w] = 'y';
            scrub_whole(s, in, n - w, out);

            snprintf(name, sizeof(name), "utf%d: %s-endian, one short, kept",
                     (int) w * 8, be ? "big" : "little");
            tap_ok(memcmp(out, in, n - w) == 0, name);
        }
    }

    /* a string of one byte: its big-endian form passes the pair filter */

    one_str.data = "q";
    one_str.len = 1;

    memset(&one, 0, sizeof(one));
    one.str = &one_str;
    one.n = 1;
    al_scrub_index(&one);

    m = al_scrub_match(&one, (const unsigned char *) "\0q", 2, 1, &n);
    tap_ok(m == AL_SCRUB_FULL && n == 2, "utf16: one byte, big-endian");

    /* a byte besides the NULs is no UTF-32 */

    m = al_scrub_match(s, (const unsigned char *) "B\0\0\1e\0\0\0a\0\0\0", 12,
                       1, &n);
    tap_ok(m == AL_SCRUB_NONE, "utf32: not a NUL, no match");
}


static void
test_base64(const al_scrub_t *s)
{
    char  out[256];

    redacted(s, "czNjcjN0Lz4/fms=", "base64: padded");
    redacted(s, "czNjcjN0Lz4/fms", "base64: unpadded");
    redacted(s, "czNjcjN0Lz4_fms=", "base64url: padded");
    redacted(s, "czNjcjN0Lz4_fms", "base64url: unpadded");

    /* the padding goes with the encoding, not left behind */
    scrub_whole(s, "czNjcjN0Lz4_fms=,", 17, out);
    tap_is_str(out, REDACTED ",", "base64url: the padding is redacted too");
}


/*
 * Hex, as an upstream that shows the bytes it got writes them: side by
 * side, a space or a ":" between bytes, lower or upper case; the whole
 * rendered value too.
 */

static void
test_hex(const al_scrub_t *s)
{
    char  out[256];

    tap_ok(has(s, "7333637233742f3e3f7e6b")
           && !has(s, "426561726572207333637233742f3e3f7e6b"),
           "hex: listed, lower case, the secret's, not the value's");
    redacted(s, "7333637233742f3e3f7e6b", "hex: lower case");
    redacted(s, "7333637233742F3E3F7E6B", "hex: upper case");
    redacted(s, "73 33 63 72 33 74 2f 3e 3f 7e 6b", "hex: spaced");
    redacted(s, "73 33 63 72 33 74 2F 3E 3F 7E 6B", "hex: spaced, upper");
    redacted(s, "73:33:63:72:33:74:2f:3e:3f:7e:6b", "hex: colons");

    /* the rendered value: its secret's part */

    scrub_whole(s, "42:65:61:72:65:72:20:73:33:63:72:33:74:2F:3E:3F:7E:6B",
                53, out);
    tap_is_str(out, "42:65:61:72:65:72:20:" REDACTED,
               "hex: the rendered value, colons, upper: the secret redacted");

    /* one byte short is left alone */
    scrub_whole(s, "7333637233742f3e3f7e", 20, out);
    tap_is_str(out, "7333637233742f3e3f7e", "hex: one byte short, kept");
}


/*
 * Quoted-printable: "=XX" for any byte but the first (either case), and a
 * soft line break (CRLF or LF) between any two bytes, one at a time.
 */

static void
test_qp(const al_scrub_t *s)
{
    int          ok, m;
    char         in[256], out[512];
    size_t       i, n, at, piece;
    const char  *v;

    redacted(s, "s3cr3t/>?~=\r\nk", "qp: a soft line break, CRLF");
    redacted(s, "s=\n3cr3t/>?~k", "qp: a soft line break after the first");
    redacted(s, "s3cr3t=2F=3E=3F=7Ek", "qp: =XX");
    redacted(s, "s3cr3t=2f=\r\n=3e?~k", "qp: lower case, a break between");
    redacted(s, "Bearer s3cr=\r\n3t/>?~k", "qp: the rendered value");
    redacted(s, "czNjcjN0Lz4/fms=3D", "qp: base64, its padding as =3D");
    redacted(s, "czNjcjN0Lz4/f=\r\nms=3D", "qp: base64, broken");

    /* a break at every place, "x" before and "y" after */

    v = "Bearer " SECRET;
    ok = 1;

    for (at = 1; ok && at < strlen(v); at++) {
        n = 0;
        in[n++] = 'x';

        for (i = 0; v[i] != '\0'; i++) {
            if (i == at) {
                memcpy(in + n, "=\r\n", 3);
                n += 3;
            }

            in[n++] = v[i];
        }

        in[n++] = 'y';
        in[n] = '\0';

        scrub_whole(s, in, n, out);
        ok = (strcmp(out, "x" REDACTED "y") == 0);

        for (piece = 1; ok && piece <= 7; piece++) {
            ok = scrub_pieces(s, in, n, piece, out) != (size_t) -1
                 && strcmp(out, "x" REDACTED "y") == 0;
        }
    }

    if (!tap_ok(ok, "qp: a soft line break at every place, whole and in "
                "pieces"))
    {
        tap_diag("input: ", in);
        tap_diag("got:   ", out);
    }

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t/>=\r", 10, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "qp: partial inside a soft line break");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t/>=3", 10, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "qp: partial inside =XX");

    scrub_whole(s, "s3cr3t/>=\r\n=\r\n?~k", 18, out);
    tap_is_str(out, "s3cr3t/>=\r\n=\r\n?~k", "qp: two breaks in a row, kept");

    scrub_whole(s, "=73" "3cr3t/>?~k", 13, out);
    tap_is_str(out, "=733cr3t/>?~k", "qp: the first byte is itself");
}


/* a prefix of any form is PARTIAL, then NONE at the end of the stream */

static void
test_partial(const al_scrub_t *s)
{
    int          ok, m;
    size_t       i, k, n;
    const char  *forms[] = {
        "Bearer " SECRET,
        "s3cr3t%2f%3E%3f%7Ek",
        "\\u0073\\u0033c\\u0072\\u0033t\\/\\u003e?~k",
        "czNjcjN0Lz4_fms=",
        "&#115;3cr3t&#x2F;&gt;?~k",
        "73 33 63 72 33 74 2f 3e 3f 7e 6b",
        NULL
    };

    ok = 1;

    for (i = 0; forms[i] != NULL; i++) {
        for (k = 1; k < strlen(forms[i]); k++) {
            m = al_scrub_match(s, (const unsigned char *) forms[i], k, 0, &n);
            if (m != AL_SCRUB_PARTIAL && m != AL_SCRUB_FULL) {
                ok = 0;
                tap_diag("not partial: ", forms[i]);
                break;
            }
        }

        m = al_scrub_match(s, (const unsigned char *) forms[i],
                           strlen(forms[i]), 1, &n);
        if (m != AL_SCRUB_FULL || n != strlen(forms[i])) {
            ok = 0;
            tap_diag("not full: ", forms[i]);
        }
    }

    tap_ok(ok, "partial: every prefix of every form waits for more");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t%2", 8, 1, &n);
    tap_ok(m == AL_SCRUB_NONE, "partial: at the end of the stream, none");

    m = al_scrub_match(s, (const unsigned char *) "s3cr3t\\u00", 10, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "partial: inside \\uXXXX");
}


static void
test_negative(const al_scrub_t *s)
{
    char         out[256];
    const char  *keep[] = {
        "s3cr3t/>?~K",                  /* case matters outside escapes */
        "s3cr3t%2F%3E%3F%7E",           /* one byte short */
        "s3cr3t%2G>?~k",                /* not hex */
        "s3cr3t\\x2f>?~k",              /* not a JSON escape */
        "s3cr3t\\u002>?~k",             /* three hex digits */
        "s3cr3t%25252F>?~k",            /* encoded three times */
        "s3cr3t%252G>?~k",              /* not hex */
        "s3cr3t\\\\x2f>?~k",              /* no JSON escape twice */
        "s3cr3t\\\\u002>?~k",             /* three hex digits */
        "s3cr3t/>&amp;quest;~k",        /* 11 bytes for one */
        "s3cr3t/&amp;&lt;?~k",          /* another character */
        "s3cr3t/&amp;amp;gt;?~k",       /* escaped three times */
        "s3cr3t%2F\\u003e?~k",          /* two encodings in one match */
        "czNjcjN0Lz4+fms",              /* not an encoding of the secret */
        "s3cr3t/&#621?~k",              /* another character */
        "s3cr3t/&#x3eb?~k",             /* another character */
        "s3cr3t/&#00000062?~k",         /* 10 bytes without ";" */
        "s3cr3t/&#x000003e?~k",         /* 10 bytes without ";" */
        "s3cr3t/&#00000062;?~k",        /* 11 bytes for one */
        "s3cr3t&sol;&gt;&quest;&tilde;k",   /* ~ has no ASCII name */
        "s3cr3t&sol;&gt;&quest;~&kay;",  /* no such name */
        "s3cr3t&sol;&gt;&quest~k",      /* no ";" */
        "s3cr3t&VerticalLine;>?~k",     /* a name too long to read */
        "s3cr3t/&#62 ;?~k",             /* not a reference */
        "s3cr3t/&#x;?~k",               /* no digits */
        "s3cr3t/&lt;?~k",               /* another character */
        "s3cr3t%2F&gt;?~k",             /* two encodings in one match */
        "& &# &#x &amp plain text",
        "% \\ %% \\\\ plain text",
        NULL
    };
    size_t       i;
    int          ok;

    ok = 1;

    for (i = 0; keep[i] != NULL; i++) {
        scrub_whole(s, keep[i], strlen(keep[i]), out);
        if (strcmp(out, keep[i]) != 0) {
            ok = 0;
            tap_diag("changed: ", keep[i]);
        }
    }

    tap_ok(ok, "near misses are left alone");
}


/* \uXXXX of non-ASCII characters compares with their UTF-8 bytes */

/*
 * The pair filter turns a candidate away on its first two bytes: it must
 * never turn away one that matches.  Every string, its second byte in
 * each form (raw, %XX in both cases, &#xXX;, \\u00XX, "=XX" and after a
 * quoted-printable soft line break, "+" for a space), and
 * every pair of bytes followed by the rest of the string: the answer is
 * the same with the filter as without it.
 */

static void
test_pairs(const al_scrub_t *s, const char *name)
{
    int            m0, m1, final;
    char           msg[128];
    size_t         i, k, n0, n1, len, marked, wrong, missed;
    unsigned       a, b;
    al_scrub_t     asked;
    unsigned char  in[256];
    const al_str_t  *str;

    static const char  hex[] = "0123456789ABCDEF0123456789abcdef";

    asked = *s;
    memset(asked.no_pair, 0, sizeof(asked.no_pair));

    marked = 0;
    for (i = 0; i < 2048; i++) {
        marked += (s->no_pair[i >> 3] >> (i & 7)) & 1;
    }

    snprintf(msg, sizeof(msg), "%s: the filter marks most pairs", name);
    tap_ok(marked > 1800, msg);

    missed = 0;
    wrong = 0;

    for (i = 0; i < s->n; i++) {
        str = &s->str[i];

        if (str->len < 2 || str->len + 8 > sizeof(in)) {
            continue;
        }

        for (k = 0; k < 7; k++) {
            in[0] = (unsigned char) str->data[0];
            b = (unsigned char) str->data[1];

            switch (k) {
            case 0:
                in[1] = (unsigned char) b;
                len = 2;
                break;
            case 1:
            case 2:
                in[1] = '%';
                in[2] = (unsigned char) hex[(k - 1) * 16 + (b >> 4)];
                in[3] = (unsigned char) hex[(k - 1) * 16 + (b & 15)];
                len = 4;
                break;
            case 3:
                if (b >= 0x80) {
                    continue;
                }
                memcpy(in + 1, "&#x", 3);
                in[4] = (unsigned char) hex[b >> 4];
                in[5] = (unsigned char) hex[b & 15];
                in[6] = ';';
                len = 7;
                break;
            case 5:
                in[1] = '=';
                in[2] = (unsigned char) hex[b >> 4];
                in[3] = (unsigned char) hex[b & 15];
                len = 4;
                break;
            case 6:
                memcpy(in + 1, "=\r\n", 3);
                in[4] = (unsigned char) b;
                len = 5;
                break;
            default:
                if (b >= 0x80) {
                    continue;
                }
                memcpy(in + 1, "\\u00", 4);
                in[5] = (unsigned char) hex[b >> 4];
                in[6] = (unsigned char) hex[b & 15];
                len = 7;
                break;
            }

            memcpy(in + len, str->data + 2, str->len - 2);
            len += str->len - 2;

            if (al_scrub_match(s, in, len, 1, &n0) != AL_SCRUB_FULL) {
                missed++;
            }
        }

        if (str->data[1] == ' ') {
            in[0] = (unsigned char) str->data[0];
            in[1] = '+';
            memcpy(in + 2, str->data + 2, str->len - 2);

            if (al_scrub_match(s, in, str->len, 1, &n0) != AL_SCRUB_FULL) {
                missed++;
            }
        }

        for (a = 0; a < 256; a++) {
            for (b = 0; b < 256; b++) {
                in[0] = (unsigned char) a;
                in[1] = (unsigned char) b;
                memcpy(in + 2, str->data + 2, str->len - 2);

                for (final = 0; final <= 1; final++) {
                    m0 = al_scrub_match(s, in, str->len, final, &n0);
                    m1 = al_scrub_match(&asked, in, str->len, final, &n1);

                    if (m0 != m1 || n0 != n1) {
                        wrong++;
                    }
                }
            }
        }
    }

    for (i = 0, k = 0; i < s->n; i++) {
        for (n0 = 0; n0 < s->npairs; n0++) {
            if (s->pair[n0][0] == (unsigned char) s->str[i].data[0]
                && s->pair[n0][1] == (unsigned char) s->str[i].data[1])
            {
                break;
            }
        }

        k += (n0 == s->npairs);
    }

    snprintf(msg, sizeof(msg), "%s: every string's first two bytes are "
             "among the %zu pairs (none: more than %d)", name, s->npairs,
             AL_SCRUB_PAIRS);
    tap_ok(s->npairs <= AL_SCRUB_PAIRS && (s->npairs == 0 || k == 0), msg);

    snprintf(msg, sizeof(msg), "%s: a second byte in any form matches",
             name);
    tap_is_int((long) missed, 0, msg);
    snprintf(msg, sizeof(msg), "%s: every pair: the same answer as "
             "without the filter", name);
    tap_is_int((long) wrong, 0, msg);
}


/*
 * A list of twelve two-byte starts (three secrets, each raw, in base64
 * and in hex, have about that many) keeps them listed, for the walk that
 * takes a block at a time, in two groups of eight; seventeen (the walk's
 * groups then shared) and sixty-four too (AL_SCRUB_PAIRS: a policy of six
 * secrets has about thirty-five); more, none.
 */

static void
test_starts(void)
{
    size_t       i;
    char         data[70][8];
    al_str_t     str[70];
    al_scrub_t   s;

    for (i = 0; i < 70; i++) {
        snprintf(data[i], sizeof(data[i]), "%c%c-key", 'A' + (int) (i / 8),
                 'a' + (int) (i % 8));
        str[i].data = data[i];
        str[i].len = strlen(data[i]);
    }

    memset(&s, 0, sizeof(s));
    s.str = str;
    s.n = 12;
    al_scrub_index(&s);

    tap_is_int((long) s.npairs, 12, "starts: twelve listed");
    test_pairs(&s, "starts");

    memset(&s, 0, sizeof(s));
    s.str = str;
    s.n = 17;
    al_scrub_index(&s);

    tap_is_int((long) s.npairs, 17, "starts: seventeen listed");
    test_pairs(&s, "starts 17");

    memset(&s, 0, sizeof(s));
    s.str = str;
    s.n = 64;
    al_scrub_index(&s);

    tap_is_int((long) s.npairs, 64, "starts: sixty-four listed");
    test_pairs(&s, "starts 64");

    memset(&s, 0, sizeof(s));
    s.str = str;
    s.n = 65;
    al_scrub_index(&s);

    tap_is_int((long) s.npairs, 0, "starts: sixty-five, none listed");
}


/*
 * The strings' first bytes, hashed (plen of them: the shortest string's,
 * at most 8), turn a place away when none of them is an escape and no
 * string starts with them; a place with an escape there, or too short to
 * tell, is read in each form as before.
 */

static void
test_prefix(void)
{
    int          m;
    size_t       n;
    al_str_t     str[2];
    al_scrub_t   s;

    static const char  *text[] = {
        "prompt_tokens\":12", "prometheus:pw-123!", "pro%6Detheus:pw-123",
        "pro\\u006detheus:pw-123", "prom&#101;theus:pw-123", "promethe",
        "promethX:pw-123"
    };

    str[0].data = "prometheus:pw-123";
    str[0].len = strlen(str[0].data);
    str[1].data = "pw-123-and-more";
    str[1].len = strlen(str[1].data);

    memset(&s, 0, sizeof(s));
    s.str = str;
    s.n = 2;
    al_scrub_index(&s);

    tap_is_int((long) s.plen, 8, "prefix: the shortest string's 8 bytes");

    m = al_scrub_match(&s, (const u_char *) text[0], strlen(text[0]), 1, &n);
    tap_ok(m == AL_SCRUB_NONE, "prefix: a place no string starts with");

    m = al_scrub_match(&s, (const u_char *) text[1], strlen(text[1]), 1, &n);
    tap_ok(m == AL_SCRUB_FULL && n == 17, "prefix: a string, raw");

    m = al_scrub_match(&s, (const u_char *) text[2], strlen(text[2]), 1, &n);
    tap_ok(m == AL_SCRUB_FULL && n == 19,
           "prefix: an escape among the first bytes: read as URL");

    m = al_scrub_match(&s, (const u_char *) text[3], strlen(text[3]), 1, &n);
    tap_ok(m == AL_SCRUB_FULL && n == 22,
           "prefix: an escape among the first bytes: read as JSON");

    m = al_scrub_match(&s, (const u_char *) text[4], strlen(text[4]), 1, &n);
    tap_ok(m == AL_SCRUB_FULL && n == 22,
           "prefix: an escape among the first bytes: read as HTML");

    m = al_scrub_match(&s, (const u_char *) text[5], strlen(text[5]), 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL,
           "prefix: the first 8 bytes of a string, more to come");

    m = al_scrub_match(&s, (const u_char *) text[6], strlen(text[6]), 1, &n);
    tap_ok(m == AL_SCRUB_NONE, "prefix: a string's start but its 8th byte");

    str[1].data = "pw";
    str[1].len = 2;
    memset(&s, 0, sizeof(s));
    s.str = str;
    s.n = 2;
    al_scrub_index(&s);

    tap_is_int((long) s.plen, 0, "prefix: none with a string of 2 bytes");
}


static void
test_utf8(void)
{
    int          m;
    char         out[256];
    size_t       n;
    al_str_t     str[1];
    al_scrub_t   s;
    const char  *in;

    /* "pä€😀x" */
    str[0].data = "p\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80x";
    str[0].len = 11;

    memset(&s, 0, sizeof(s));
    s.str = str;
    s.n = 1;
    al_scrub_index(&s);

    in = "p\\u00E4\\u20ac\\uD83D\\ude00x";
    scrub_whole(&s, in, strlen(in), out);
    tap_is_str(out, REDACTED, "utf8: \\uXXXX, surrogate pair");

    in = "\\u0070\xc3\xa4\\u20AC\xf0\x9f\x98\x80\\u0078";
    scrub_whole(&s, in, strlen(in), out);
    tap_is_str(out, REDACTED, "utf8: escaped and raw mixed");

    in = "p%C3%a4%E2%82%AC%f0%9F%98%80x";
    scrub_whole(&s, in, strlen(in), out);
    tap_is_str(out, REDACTED, "utf8: URL-encoded bytes");

    m = al_scrub_match(&s, (const unsigned char *) "p\\u00E4\\u20ac\\uD83D",
                       19, 0, &n);
    tap_ok(m == AL_SCRUB_PARTIAL, "utf8: a high surrogate waits");

    m = al_scrub_match(&s, (const unsigned char *) "p\\u00E4\\u20ac\\uD83Dx",
                       20, 1, &n);
    tap_ok(m == AL_SCRUB_NONE, "utf8: a lone high surrogate is no match");

    /* a pair stands for 4 bytes: with fewer to come it cannot match, and
       waiting for it would hold more than maxspan bytes */

    str[0].data = "ab";
    str[0].len = 2;
    s.maxlen = 2;
    s.minlen = 2;
    s.maxspan = 12;

    m = al_scrub_match(&s, (const unsigned char *) "a\\uD83D\\u", 9, 0, &n);
    tap_ok(m == AL_SCRUB_NONE, "utf8: no wait for a pair that cannot fit");
}


static void
test_decode(void)
{
    unsigned char  out[64];
    ssize_t        n;

    n = al_base64_decode(out, "dXNlcjpwdw==", 12);
    tap_ok(n == 7 && memcmp(out, "user:pw", 7) == 0, "decode: padded");

    n = al_base64_decode(out, "dXNlcjpwdw", 10);
    tap_ok(n == 7 && memcmp(out, "user:pw", 7) == 0, "decode: unpadded");

    tap_ok(al_base64_decode(out, "dXNlc", 5) == -1, "decode: bad length");
    tap_ok(al_base64_decode(out, "dXN-", 4) == -1, "decode: not the alphabet");
    tap_ok(al_base64_decode(out, "dXNlcjpwdx==", 12) == -1,
           "decode: bits left over");
}


/*
 * Base64 as the line-wrapping encoders write it: "Bearer <63 bytes>" is
 * 96 characters, wrapped after 60, 64 or 76, with LF or CRLF; the
 * secret alone is 84.
 */

#define WRAP_SECRET                                                          \
    "ghp_Wr4pPed-Base64-Token-0123456789abcdefghijklmnopqrstuvwxyzAB"
#define WRAP_B64                                                             \
    "QmVhcmVyIGdocF9XcjRwUGVkLUJhc2U2NC1Ub2tlbi0wMTIzNDU2Nzg5YWJj"

static void
test_wrapped(al_keyring_t *kr, const char *pub)
{
    al_scrub_t    *s;
    al_policy_t   *p;
    const char    *why;

    p = bearer_policy(kr, pub, WRAP_SECRET, sizeof(WRAP_SECRET) - 1,
                      "wrapped");
    if (p == NULL) {
        return;
    }

    s = al_scrub_collect(p, al_policy_route(p, "bearer", 6), &why);
    if (tap_ok(s != NULL, "wrapped: scrub list built")) {
        redacted(s, WRAP_B64 "ZGVmZ2hpamtsbW5v\ncHFyc3R1dnd4eXpBQg==",
                 "wrapped: the value, 76 a line, LF (encodebytes)");
        redacted(s, WRAP_B64 "ZGVmZ2hpamtsbW5v\r\ncHFyc3R1dnd4eXpBQg==",
                 "wrapped: the value, 76 a line, CRLF (MIME)");
        redacted(s, WRAP_B64 "\nZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXpBQg==",
                 "wrapped: the value, 60 a line, LF (Ruby)");
        redacted(s, WRAP_B64 "ZGVm\r\nZ2hpamtsbW5vcHFyc3R1dnd4eXpBQg==",
                 "wrapped: the value, 64 a line, CRLF");
        redacted(s, WRAP_B64 "ZGVmZ2hpamtsbW5v\\ncHFyc3R1dnd4eXpBQg==",
                 "wrapped: the value, 76 a line, in a JSON string");
        redacted(s, "Z2hwX1dyNHBQZWQtQmFzZTY0LVRva2VuLTAxMjM0NTY3ODlhYmNkZWZ"
                 "naGlqa2xt\nbm9wcXJzdHV2d3h5ekFC",
                 "wrapped: the secret, 64 a line, LF (PEM)");
        redacted(s, WRAP_B64 "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXpBQg==",
                 "wrapped: the value unwrapped");

        al_scrub_free(s);
    }

    al_policy_free(p);
}


/*
 * A credential inside a longer base64 text: 0 to 5 bytes before it (each
 * place modulo 3, twice), 0 to 3 after it, in both alphabets, padded or
 * not.  At least its base64 but for its first 2 bytes' worth is
 * redacted, whole and in pieces of 1 to 7 bytes.
 */

#define INNER_SECRET  "FAKE-inner-key/0123456789?>~abcdefghi"

static void
test_inner(al_keyring_t *kr, const char *pub)
{
    int            ok;
    char          *t;
    char           text[256], name[128];
    size_t         pre, post, len, n, k, fails;
    al_scrub_t    *s;
    al_policy_t   *p;
    const char    *why;
    unsigned char  blob[64];

    len = sizeof(INNER_SECRET) - 1;

    p = bearer_policy(kr, pub, INNER_SECRET, len, "inner");
    if (p == NULL) {
        return;
    }

    s = al_scrub_collect_all(p, &why);
    if (!tap_ok(s != NULL, "inner: scrub list built")) {
        goto policy;
    }

    for (pre = 0; pre < 6; pre++) {
        for (post = 0; post < 4; post++) {
            memcpy(blob, "{\"a\":\"", pre);
            memcpy(blob + pre, INNER_SECRET, len);
            memcpy(blob + pre + len, "\"}\n", post);

            fails = 0;

            for (k = 0; k < 4; k++) {
                n = al_base64_encode(text, sizeof(text), blob,
                                     pre + len + post);

                for (t = text; (k & 1) && *t != '\0'; t++) {
                    *t = (*t == '+') ? '-' : (*t == '/') ? '_' : *t;
                }

                while ((k & 2) && n > 0 && text[n - 1] == '=') {
                    text[--n] = '\0';
                }

                snprintf(name, sizeof(name),
                         "inner: %zu bytes before, %zu after, %s%s", pre,
                         post, (k & 1) ? "base64url" : "base64",
                         (k & 2) ? ", unpadded" : "");

                ok = inner_redacted(s, text, 4 * (len - 2) / 3, name);
                fails += !ok;
            }

            snprintf(name, sizeof(name),
                     "inner: %zu bytes before, %zu after: every form", pre,
                     post);
            tap_ok(fails == 0, name);
        }
    }

    test_breaks(s);

    al_scrub_free(s);

policy:

    al_policy_free(p);
}


/*
 * A policy whose one route, "bearer", injects "Bearer <secret>", the
 * secret sealed with pub; NULL, said, when it does not open.
 */

static al_policy_t *
bearer_policy(al_keyring_t *kr, const char *pub, const char *secret,
    size_t len, const char *label)
{
    char         *sealed;
    char          yaml[4096], name[128];
    al_error_t    err;
    al_policy_t  *p;

    sealed = NULL;
    memset(&err, 0, sizeof(err));

    snprintf(name, sizeof(name), "%s: seal the secret", label);
    if (!tap_ok(al_seal(pub, (const unsigned char *) secret, len, &sealed,
                        &err) == 0, name))
    {
        tap_diag("error: ", err.msg);
        return NULL;
    }

    snprintf(yaml, sizeof(yaml),
             HEAD
             "secrets:\n"
             "  tok: { sealed: \"%s\" }\n"
             "upstreams:\n"
             "  up: { url: \"http://127.0.0.1:9090\" }\n"
             "routes:\n"
             "  - name: bearer\n"
             "    clients: [agent]\n"
             "    match: { method: GET, path: /bearer }\n"
             "    upstream: up\n"
             "    to: /b\n"
             "    inject: { Authorization: \"Bearer {tok}\" }\n"
             ALERTS, sealed);

    free(sealed);

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);

    snprintf(name, sizeof(name), "%s: policy opens", label);
    if (!tap_ok(p != NULL && p->secrets_open, name)) {
        tap_diag("error: ", err.msg);
        al_policy_free(p);
        return NULL;
    }

    return p;
}


/*
 * Line ends in the base64 text: one (LF, CRLF, and each as a JSON string
 * has it) at every place in the credential's base64, the credential 0 to
 * 2 bytes past a multiple of 3; and a longer text with the credential 0
 * to 47 bytes in, wrapped as PEM (64 a line, LF) and MIME (76, CRLF)
 * write it.  Two line ends in a row end the text.
 */

static void
test_breaks(const al_scrub_t *s)
{
    char           text[512], b64[256], name[128], out[1024];
    size_t         pre, len, n, at, k, w, o, fails;
    unsigned char  blob[128];

    static const char  *ends[] = { "\n", "\r\n", "\\n", "\\r\\n" };

    len = sizeof(INNER_SECRET) - 1;

    for (k = 0; k < 4; k++) {
        fails = 0;

        for (pre = 0; pre < 3; pre++) {
            memcpy(blob, "xyz", pre);
            memcpy(blob + pre, INNER_SECRET, len);
            n = al_base64_encode(b64, sizeof(b64), blob, pre + len);

            for (at = 1; at < n; at++) {
                snprintf(text, sizeof(text), "%.*s%s%s", (int) at, b64,
                         ends[k], b64 + at);
                snprintf(name, sizeof(name), "breaks: after %zu", at);
                fails += !inner_redacted(s, text, 4 * (len - 2) / 3, name);
            }
        }

        snprintf(name, sizeof(name),
                 "breaks: a line end (%s) at every place",
                 k == 0 ? "LF" : k == 1 ? "CRLF" : k == 2 ? "JSON LF"
                                                          : "JSON CRLF");
        tap_ok(fails == 0, name);
    }

    for (w = 0; w < 2; w++) {
        fails = 0;

        for (pre = 0; pre < 48; pre++) {
            memset(blob, 'a', pre);
            memcpy(blob + pre, INNER_SECRET, len);
            memcpy(blob + pre + len, "\n}", 2);
            n = al_base64_encode(b64, sizeof(b64), blob, pre + len + 2);

            for (o = 0, at = 0; at < n; at++) {
                if (at > 0 && at % (w ? 76 : 64) == 0) {
                    o += (size_t) snprintf(text + o, sizeof(text) - o, "%s",
                                           w ? "\r\n" : "\n");
                }

                text[o++] = b64[at];
            }

            text[o] = '\0';

            snprintf(name, sizeof(name), "breaks: %s, %zu bytes in",
                     w ? "MIME" : "PEM", pre);
            fails += !inner_redacted(s, text, 4 * (len - 2) / 3, name);
        }

        tap_ok(fails == 0, w ? "breaks: wrapped as MIME, 76 a line, CRLF"
                             : "breaks: wrapped as PEM, 64 a line, LF");
    }

    /* two in a row end the text: nothing is redacted */

    n = al_base64_encode(b64, sizeof(b64),
                         (const unsigned char *) INNER_SECRET, len);
    snprintf(text, sizeof(text), "%.20s\n\n%s", b64, b64 + 20);
    scrub_whole(s, text, strlen(text), out);
    tap_is_str(out, text, "breaks: two line ends in a row are no break");
}


/*
 * "x<text>y": one "[REDACTED]" that covers at least least bytes of text,
 * whole and in pieces of 1 to 7 bytes
 */

static int
inner_redacted(const al_scrub_t *s, const char *text, size_t least,
    const char *name)
{
    int      ok;
    char     in[1024], out[2048];
    size_t   piece, len, olen;

    snprintf(in, sizeof(in), "x%sy", text);
    len = strlen(in);
    ok = 1;

    for (piece = 0; ok && piece <= 7; piece++) {
        olen = (piece == 0) ? scrub_whole(s, in, len, out)
                            : scrub_pieces(s, in, len, piece, out);

        ok = olen != (size_t) -1
             && strstr(out, REDACTED) != NULL
             && strstr(strstr(out, REDACTED) + 1, REDACTED) == NULL
             && len + sizeof(REDACTED) - 1 >= olen + least;
    }

    if (!ok) {
        tap_diag(name, "");
        tap_diag("input: ", in);
        tap_diag("got:   ", out);
    }

    return ok;
}


int
main(void)
{
    char           dir[] = "/tmp/airlock-scrub-XXXXXX";
    char           key[128], pub[128];
    al_error_t     err;
    al_keyring_t  *kr;

    if (mkdtemp(dir) == NULL) {
        tap_ok(0, "mkdtemp");
        return tap_done();
    }

    snprintf(key, sizeof(key), "%s/airlock.key", dir);
    snprintf(pub, sizeof(pub), "%s/airlock.key.pub", dir);

    kr = NULL;

    if (tap_ok(al_keygen(key, &err) == 0
               && (kr = al_keyring_load(key, &err)) != NULL, "keygen, load"))
    {
        test_forms(kr, pub);
        test_wrapped(kr, pub);
        test_inner(kr, pub);
        test_many(kr, pub);
        test_halves(kr, pub);

    } else {
        tap_diag("error: ", err.msg);
    }

    test_utf8();
    test_decode();
    test_html_names();
    test_html_legacy();

    al_keyring_free(kr);
    unlink(key);
    unlink(pub);
    rmdir(dir);

    return tap_done();
}


/*
 * A policy of many routes, each with its own secret: the policy's list
 * holds thousands of strings, and a response is searched for all of them.
 * Each form at a place is narrowed to the strings that start with what it
 * reads there, so a body of escapes (each a place where any form may
 * start), or of the start the routes' values share, costs about what it
 * costs with one route's list; tried on every string, 64 KiB of them took
 * seconds of a worker's CPU (CPU time is measured, with a bound far from
 * both).  And each form of a string is still found: one from the
 * middle of the list, one that starts past ASCII.
 */

#define MANY  400

static void
test_many(al_keyring_t *kr, const char *pub)
{
    int           ok;
    char         *sealed, *yaml, *body, *out, one[64];
    size_t        i, len, n, size;
    clock_t       base, cost;
    al_error_t    err;
    al_scrub_t   *all, *one_list;
    al_policy_t  *p;
    const char   *why;

    size = 1024 + MANY * 512;

    yaml = malloc(size);
    body = malloc(65536 + 1);
    out = malloc(65536 * 11 + 1);
    all = NULL;
    one_list = NULL;
    p = NULL;

    if (yaml == NULL || body == NULL || out == NULL) {
        tap_ok(0, "many: memory");
        goto done;
    }

    len = (size_t) snprintf(yaml, size, HEAD "secrets:\n");
    ok = 1;

    for (i = 0; ok && i < MANY; i++) {
        if (i == 7) {
            /* an llm-style key or a body token may be any UTF-8 */
            n = (size_t) snprintf(one, sizeof(one),
                                  "\xc3\xa9t\xc3\xa9-many-%03zu", i);
        } else {
            n = (size_t) snprintf(one, sizeof(one), "many-%03zu-tail", i);
        }

        ok = (al_seal(pub, (const unsigned char *) one, n, &sealed, &err)
              == 0);

        if (ok) {
            len += (size_t) snprintf(yaml + len, size - len,
                                     "  s%zu: { sealed: \"%s\" }\n", i,
                                     sealed);
            free(sealed);
        }
    }

    if (!tap_ok(ok, "many: seal the secrets")) {
        tap_diag("error: ", err.msg);
        goto done;
    }

    len += (size_t) snprintf(yaml + len, size - len,
                             "upstreams:\n"
                             "  up: { url: \"http://127.0.0.1:9090\" }\n"
                             "routes:\n");

    for (i = 0; i < MANY; i++) {
        len += (size_t) snprintf(yaml + len, size - len,
                                 "  - { name: r%zu, clients: [agent], "
                                 "match: { method: GET, path: /r%zu }, "
                                 "upstream: up, to: /a, inject: "
                                 "{ Authorization: \"%s {s%zu%s}\" } }\n",
                                 i, i, i == 7 ? "Basic" : "Bearer", i,
                                 i == 7 ? "|base64" : "");
    }

    snprintf(yaml + len, size - len, ALERTS);

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    if (!tap_ok(p != NULL && p->secrets_open, "many: policy opens")) {
        tap_diag("error: ", err.msg);
        goto done;
    }

    all = al_scrub_collect_all(p, &why);
    if (!tap_ok(all != NULL && all->n > 5 * MANY, "many: the policy list")) {
        goto done;
    }

    /*
     * Against one route's list, in the same run (so neither the machine's
     * speed nor a sanitizer moves the figure): the policy's list, 80 times
     * longer, may cost a few times more, not its length times more.
     */

    one_list = al_scrub_collect(p, al_policy_route(p, "r200", 4), &why);
    if (!tap_ok(one_list != NULL, "many: one route's list")) {
        goto done;
    }

    base = 0;
    cost = 0;

    for (i = 0; i < 3; i++) {
        base += many_cpu(one_list, body, out);
        cost += many_cpu(all, body, out);
    }

    if (!tap_ok(cost < 20 * base + CLOCKS_PER_SEC / 100,
                "many: 256 KiB of escapes and shared starts cost about what "
                "they cost with one route's list"))
    {
        snprintf(one, sizeof(one), "%.3f s against %.3f s",
                 (double) cost / CLOCKS_PER_SEC,
                 (double) base / CLOCKS_PER_SEC);
        tap_diag("CPU time: ", one);
    }

    (void) redacted(all, "many-200-tail", "many: a secret, raw");
    (void) redacted(all, "%6Dany-200-tail", "many: a secret, URL-encoded");
    (void) redacted(all, "\\u006dany-200-tail",
                    "many: a secret, JSON-escaped");
    (void) redacted(all, "&#109;any-200-tail", "many: a secret, HTML-escaped");
    (void) redacted(all, "\xc3\xa9t\xc3\xa9-many-007",
                    "many: a secret past ASCII, raw");
    (void) redacted(all, "\\u00e9t\\u00e9-many-007",
                    "many: past ASCII, JSON-escaped");
    (void) redacted(all, "&#xe9;t&#233;-many-007",
                    "many: past ASCII, HTML-escaped");
    (void) redacted(all, "%C3%A9t%C3%A9-many-007",
                    "many: past ASCII, URL-encoded");

done:

    al_scrub_free(one_list);
    al_scrub_free(all);
    al_policy_free(p);
    free(yaml);
    free(body);
    free(out);
}


/*
 * The CPU time of scrubbing 256 KiB with s: "\n" escapes, escapes of
 * every kind (some of characters past ASCII), and the start the routes'
 * values share, as sent and in base64 ("Bearer many-"), over and over.
 */

static clock_t
many_cpu(const al_scrub_t *s, char *body, char *out)
{
    size_t   i;
    clock_t  t0;

    t0 = clock();

    for (i = 0; i < 65536; i += 2) {
        body[i] = '\\';
        body[i + 1] = 'n';
    }

    scrub_whole(s, body, 65536, out);

    for (i = 0; i + 26 <= 65536; i += 26) {
        memcpy(body + i, "\\u0041\\u00e9%41&#65;&#xe9;", 26);
    }

    scrub_whole(s, body, i, out);

    for (i = 0; i + 12 <= 65536; i += 12) {
        memcpy(body + i, "Bearer many-", 12);
    }

    scrub_whole(s, body, i, out);

    for (i = 0; i + 16 <= 65536; i += 16) {
        memcpy(body + i, "QmVhcmVyIG1hbnkt", 16);
    }

    scrub_whole(s, body, i, out);

    return clock() - t0;
}


/*
 * An llm key cut short or split in two: its first and last halves are
 * listed (AL_SCRUB_HALF), so the key less its last characters, or either
 * part of a split of at least half the key, is redacted, raw and in the
 * forms decoded as they are compared; a part shorter than half passes.
 * A route's secret of that length is listed by halves too (a token a log
 * viewer cut at its column); a short key or secret has none.
 */

#define HKEY   "sk-proj-FAKE0123456789abcdefghijklmnopqrstuv"   /* 44 */
#define HSHORT "sk-FAKE-0123456789abcdefghijk"                  /* 29 */
#define HGH    "ghp_FAKEabcdefghijklmnopqrstuvwxyz012345"       /* 40 */
#define HPASS  "FAKE-password-0123456789"                       /* 24 */

static void
test_halves(al_keyring_t *kr, const char *pub)
{
    char          *sk, *ss, *sg, *sp, yaml[4096], text[512], out[4096];
    al_error_t     err;
    al_scrub_t    *s;
    al_policy_t   *p;
    const char    *why;

    sk = ss = sg = sp = NULL;
    p = NULL;
    s = NULL;

    if (!tap_ok(al_seal(pub, (const unsigned char *) HKEY, sizeof(HKEY) - 1,
                        &sk, &err) == 0
                && al_seal(pub, (const unsigned char *) HSHORT,
                           sizeof(HSHORT) - 1, &ss, &err) == 0
                && al_seal(pub, (const unsigned char *) HGH,
                           sizeof(HGH) - 1, &sg, &err) == 0
                && al_seal(pub, (const unsigned char *) HPASS,
                           sizeof(HPASS) - 1, &sp, &err) == 0,
                "halves: seal the keys"))
    {
        tap_diag("error: ", err.msg);
        goto done;
    }

    snprintf(yaml, sizeof(yaml),
             HEAD
             "secrets:\n"
             "  key: { sealed: \"%s\" }\n"
             "  short: { sealed: \"%s\" }\n"
             "  gh: { sealed: \"%s\" }\n"
             "  pass: { sealed: \"%s\" }\n"
             "llm:\n"
             "  - name: openai\n"
             "    prefix: /v1/proxy/openai\n"
             "    provider: openai\n"
             "    upstream: https://api.openai.com/v1\n"
             "    secret: key\n"
             "    models: [gpt-4o-mini]\n"
             "    clients:\n"
             "      agent: {}\n"
             "  - name: other\n"
             "    prefix: /v1/proxy/other\n"
             "    provider: anthropic\n"
             "    upstream: https://api.anthropic.com/v1\n"
             "    secret: short\n"
             "    models: [claude-3-5-haiku]\n"
             "    clients:\n"
             "      agent: {}\n"
             ALERTS, sk, ss, sg, sp);

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    if (!tap_ok(p != NULL && p->secrets_open, "halves: policy opens")) {
        tap_diag("error: ", err.msg);
        goto done;
    }

    s = al_scrub_collect_all(p, &why);
    if (!tap_ok(s != NULL, "halves: the policy list")) {
        goto done;
    }

    tap_ok(has(s, "sk-proj-FAKE0123456789")
           && has(s, "abcdefghijklmnopqrstuv"),
           "halves: the key's first and last 22 bytes are listed");
    tap_ok(!has(s, "sk-FAKE-0123456"),
           "halves: a key under 2 * AL_SCRUB_HALF bytes has none");

    tap_ok(has(s, "ghp_FAKEabcdefghijkl") && has(s, "mnopqrstuvwxyz012345"),
           "halves: a secret's first and last 20 bytes are listed");
    tap_ok(!has(s, "FAKE-password-"),
           "halves: a secret under 2 * AL_SCRUB_HALF bytes has none");

    snprintf(text, sizeof(text), "token=%.32s...", HGH);
    scrub_whole(s, text, strlen(text), out);
    tap_is_str(out, "token=" REDACTED "mnopqrstuvwx...",
               "halves: a secret cut short loses its first half");

    (void) redacted(s, HKEY, "halves: the whole key, one match");
    (void) redacted(s, "sk-proj-FAKE0123456789", "halves: the first half");
    (void) redacted(s, "abcdefghijklmnopqrstuv", "halves: the last half");
    (void) redacted(s, "ab\\u0063defghijklmnopqrstuv",
                    "halves: the last half, JSON-escaped");
    (void) redacted(s, "sk-proj-FAKE01234%35%36789",
                    "halves: the first half, URL-encoded");

    /* the key less its last four characters: its first half goes */

    scrub_whole(s, "\"sk-proj-FAKE0123456789abcdefghijklmnopqr\"", 42, out);
    tap_is_str(out, "\"" REDACTED "abcdefghijklmnopqr\"",
               "halves: the key cut short loses its first half");

    /* split anywhere with something between: one part holds a half */

    snprintf(text, sizeof(text), "%.*s ... %s", 10, HKEY, HKEY + 10);
    scrub_whole(s, text, strlen(text), out);
    tap_ok(strstr(out, "sk-proj-FA ... ") == out
           && strstr(out, "abcdefghijklmnopqrstuv") == NULL,
           "halves: split early, the second part loses the last half");

    snprintf(text, sizeof(text), "%.*s | %s", 30, HKEY, HKEY + 30);
    scrub_whole(s, text, strlen(text), out);
    tap_ok(strncmp(out, REDACTED, sizeof(REDACTED) - 1) == 0
           && strstr(out, "sk-proj-FAKE0123456789") == NULL,
           "halves: split late, the first part loses the first half");

    /* shorter than half: a provider's "sk-proj-FAKE...stuv" passes */

    scrub_whole(s, "sk-proj-FAKE...stuv", 19, out);
    tap_is_str(out, "sk-proj-FAKE...stuv", "halves: a short prefix passes");

done:

    al_scrub_free(s);
    al_policy_free(p);
    free(sk);
    free(ss);
    free(sg);
    free(sp);
}


/*
 * Every name HTML5 gives an ASCII character (Python's html.entities.html5,
 * which html.unescape() reads), as written and in upper case, stands for
 * it inside a string; those longer than AL_SCRUB_HTML_MAX bytes are not
 * read.
 */

static void
test_html_names(void)
{
    int          m;
    char         in[32], want[4];
    size_t       i, j, k, n, len, bad;
    al_str_t     str[1];
    al_scrub_t   s;

    static const struct {
        const char  *name;
        char         c;
    }  names[] = {
        { "AMP", '&' }, { "amp", '&' }, { "apos", '\'' }, { "ast", '*' },
        { "bsol", '\\' }, { "colon", ':' }, { "comma", ',' },
        { "commat", '@' }, { "dollar", '$' }, { "equals", '=' },
        { "excl", '!' }, { "grave", '`' }, { "GT", '>' }, { "gt", '>' },
        { "Hat", '^' }, { "lbrace", '{' }, { "lbrack", '[' }, { "lcub", '{' },
        { "lowbar", '_' }, { "lpar", '(' }, { "lsqb", '[' }, { "LT", '<' },
        { "lt", '<' }, { "midast", '*' }, { "NewLine", '\n' }, { "num", '#' },
        { "percnt", '%' }, { "period", '.' }, { "plus", '+' },
        { "quest", '?' }, { "QUOT", '"' }, { "quot", '"' }, { "rbrace", '}' },
        { "rbrack", ']' }, { "rcub", '}' }, { "rpar", ')' }, { "rsqb", ']' },
        { "semi", ';' }, { "sol", '/' }, { "Tab", '\t' }, { "UnderBar", '_' },
        { "verbar", '|' }, { "vert", '|' }
    };

    static const struct {
        const char  *name;
        const char  *want;
    }  too_long[] = {
        { "VerticalLine", "x|y" }, { "DiacriticalGrave", "x`y" }
    };

    bad = 0;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {

        /* the string "x", the character, "y" */

        want[0] = 'x';
        want[1] = names[i].c;
        want[2] = 'y';
        want[3] = '\0';

        str[0].data = want;
        str[0].len = 3;

        memset(&s, 0, sizeof(s));
        s.str = str;
        s.n = 1;
        al_scrub_index(&s);

        for (k = 0; k < 2; k++) {
            len = (size_t) snprintf(in, sizeof(in), "x&%s;y", names[i].name);

            for (j = 2; k == 1 && j < len - 2; j++) {
                if (in[j] >= 'a' && in[j] <= 'z') {
                    in[j] = (char) (in[j] - 'a' + 'A');
                }
            }

            m = al_scrub_match(&s, (const unsigned char *) in, len, 1, &n);

            if (m != AL_SCRUB_FULL || n != len) {
                tap_diag("not read: ", in);
                bad++;
            }
        }
    }

    tap_ok(bad == 0, "html names: every ASCII character's, in any case");

    bad = 0;

    for (i = 0; i < sizeof(too_long) / sizeof(too_long[0]); i++) {
        str[0].data = too_long[i].want;
        str[0].len = 3;

        memset(&s, 0, sizeof(s));
        s.str = str;
        s.n = 1;
        al_scrub_index(&s);

        len = (size_t) snprintf(in, sizeof(in), "x&%s;y", too_long[i].name);

        m = al_scrub_match(&s, (const unsigned char *) in, len, 1, &n);

        if (m != AL_SCRUB_NONE) {
            tap_diag("read: ", in);
            bad++;
        }
    }

    tap_ok(bad == 0, "html names: the two over 10 bytes are not read");
}


/*
 * HTML5 reads a few names without their ";" (its legacy ones), before
 * anything, letters too: of ASCII characters "&amp", "&lt", "&gt",
 * "&quot", each in lower and upper case ("x&lty" is "x<y").  Inside a
 * string and at the end of the response they stand for their
 * character; no other name does without its ";".
 */

static void
test_html_legacy(void)
{
    int          m;
    char         in[32], want[4];
    size_t       i, n, len, bad;
    al_str_t     str[1];
    al_scrub_t   s;

    static const struct {
        const char  *name;
        char         c;
        int          legacy;
    }  names[] = {
        { "amp", '&', 1 }, { "AMP", '&', 1 }, { "lt", '<', 1 },
        { "LT", '<', 1 }, { "gt", '>', 1 }, { "GT", '>', 1 },
        { "quot", '"', 1 }, { "QUOT", '"', 1 }, { "apos", '\'', 0 },
        { "lowbar", '_', 0 }, { "period", '.', 0 }, { "sol", '/', 0 },
        { "equals", '=', 0 }, { "plus", '+', 0 }, { "colon", ':', 0 }
    };

    bad = 0;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        want[0] = 'x';
        want[1] = names[i].c;
        want[2] = 'y';
        want[3] = '\0';

        str[0].data = want;
        str[0].len = 3;

        memset(&s, 0, sizeof(s));
        s.str = str;
        s.n = 1;
        al_scrub_index(&s);

        len = (size_t) snprintf(in, sizeof(in), "x&%sy", names[i].name);
        m = al_scrub_match(&s, (const unsigned char *) in, len, 0, &n);

        if (names[i].legacy ? (m != AL_SCRUB_FULL || n != len)
                            : (m != AL_SCRUB_NONE))
        {
            tap_diag(names[i].legacy ? "not read: " : "read: ", in);
            bad++;
        }

        /* "x" and the character, at the end of the response */

        str[0].len = 2;
        al_scrub_index(&s);

        len = (size_t) snprintf(in, sizeof(in), "x&%s", names[i].name);
        m = al_scrub_match(&s, (const unsigned char *) in, len, 1, &n);

        if (names[i].legacy ? (m != AL_SCRUB_FULL || n != len)
                            : (m != AL_SCRUB_NONE))
        {
            tap_diag(names[i].legacy ? "not read at the end: "
                                     : "read at the end: ", in);
            bad++;
        }
    }

    tap_ok(bad == 0, "html names: the legacy ones are read without ;, "
           "no other");
}
