/*
 * Scrub lists: what a response must not carry back to the client.  The
 * nginx module replaces each of these strings with "[REDACTED]" in the
 * response headers and body of routes that inject credentials, and of
 * every LLM prefix, so an upstream that echoes its request cannot hand a
 * secret to the agent.
 */

#include <string.h>

#include "airlock.h"


typedef struct {
    al_scrub_t      *scrub;                 /* NULL while counting */
    char            *next;                  /* string bytes, while filling */
    size_t           n;
    size_t           bytes;
} al_scrub_ctx_t;


static void al_scrub_add(al_scrub_ctx_t *sc, const char *s, size_t len);
static void al_scrub_add_base64(al_scrub_ctx_t *sc, const unsigned char *s,
    size_t len);
static al_scrub_t *al_scrub_build(const al_policy_t *p,
    const al_route_t *route, const al_llm_t *llm, const char **why);
static void al_scrub_inject(al_scrub_ctx_t *sc, const al_policy_t *p,
    const al_inject_t *inj);
static void al_scrub_llm(al_scrub_ctx_t *sc, const al_llm_t *llm);
static const al_secret_t *al_scrub_secret(const al_policy_t *p,
    const char *name, size_t len);
static void al_scrub_finish(al_scrub_t *s);


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
    size_t           i, size;
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

    size = sizeof(al_scrub_t) + sc.n * sizeof(al_str_t) + sc.bytes + sc.n;

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

    sc.scrub = s;
    sc.next = (char *) (s->str + sc.n);

    for (i = 0; route != NULL && i < route->ninject; i++) {
        al_scrub_inject(&sc, p, &route->inject[i]);
    }

    if (llm != NULL) {
        al_scrub_llm(&sc, llm);
    }

    al_scrub_finish(s);

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
    const char         *t, *close, *v;
    const al_secret_t  *sec;

    t = inj->tmpl.data;

    if (memchr(t, '{', inj->tmpl.len) == NULL || inj->value == NULL) {
        return;                     /* a constant, not a credential */
    }

    al_scrub_add(sc, (const char *) inj->value, inj->len);

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
        while (i < inj->len && v[i] == ' ') {
            i++;
        }
        al_scrub_add(sc, v + i, inj->len - i);
    }

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
        if (sec != NULL && sec->value != NULL) {
            al_scrub_add(sc, (const char *) sec->value, sec->len);
            al_scrub_add_base64(sc, sec->value, sec->len);
        }

        i = (size_t) (close - t);
    }
}


/*
 * The provider key as it is sent ("Bearer k" to OpenAI-style providers,
 * "k" in x-api-key to Anthropic), raw and in base64.
 */

static void
al_scrub_llm(al_scrub_ctx_t *sc, const al_llm_t *llm)
{
    size_t              len;
    const al_secret_t  *sec;

    sec = llm->secret;

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
            al_scrub_add(sc, sc->next, len);
        }
    }

    al_scrub_add(sc, (const char *) sec->value, sec->len);
    al_scrub_add_base64(sc, sec->value, sec->len);
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


static void
al_scrub_add(al_scrub_ctx_t *sc, const char *s, size_t len)
{
    size_t       i;
    al_scrub_t  *scrub;

    if (len == 0) {
        return;
    }

    scrub = sc->scrub;

    if (scrub == NULL) {
        sc->n++;
        sc->bytes += len;
        return;
    }

    for (i = 0; i < scrub->n; i++) {
        if (scrub->str[i].len == len
            && memcmp(scrub->str[i].data, s, len) == 0)
        {
            return;
        }
    }

    memmove(sc->next, s, len);             /* s may be sc->next */
    sc->next[len] = '\0';

    scrub->str[scrub->n].data = sc->next;
    scrub->str[scrub->n].len = len;
    scrub->n++;

    sc->next += len + 1;
}


static void
al_scrub_add_base64(al_scrub_ctx_t *sc, const unsigned char *s, size_t len)
{
    size_t  n;

    n = (len + 2) / 3 * 4;

    if (sc->scrub == NULL) {
        sc->n++;
        sc->bytes += n;
        return;
    }

    /* encode in place at the end of the block, then add (or drop) it */
    al_base64_encode(sc->next, n, s, len);
    al_scrub_add(sc, sc->next, n);
}


/* longest first, so that a match at one place takes the longest string */

static void
al_scrub_finish(al_scrub_t *s)
{
    size_t    i, j;
    al_str_t  tmp;

    s->maxlen = 0;

    for (i = 1; i < s->n; i++) {
        tmp = s->str[i];

        for (j = i; j > 0 && s->str[j - 1].len < tmp.len; j--) {
            s->str[j] = s->str[j - 1];
        }

        s->str[j] = tmp;
    }

    for (i = 0; i < s->n; i++) {
        if (s->str[i].len > s->maxlen) {
            s->maxlen = s->str[i].len;
        }
    }
}
