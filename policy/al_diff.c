/*
 * Semantic policy diff.  Lines start with '+' for a change that grants
 * something the old policy did not (a new route, client, method, a looser
 * constraint, a weaker alert), '-' for one that takes something away and
 * '~' for one that does neither.  The return value counts the '+' lines so
 * CI can gate a policy change against a known-good baseline.
 *
 * Patterns are compared as text: a changed pattern is reported as a grant
 * because whether it widens cannot be decided in general.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"


typedef struct {
    void       (*out)(void *data, const char *line);
    void        *data;
    int          grants;
} al_diff_t;


static void al_diff_emit(al_diff_t *df, char kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int al_str_eq(const al_str_t *a, const al_str_t *b);
static void al_diff_identities(al_diff_t *df, const char *name,
    const al_client_t *from, const al_client_t *to, char kind,
    unsigned rivals);
static unsigned al_diff_rivals(const size_t *counts, const al_client_t *c);
static void al_diff_clients(al_diff_t *df, const al_policy_t *o,
    const al_policy_t *n);
static void al_diff_secrets(al_diff_t *df, const al_policy_t *o,
    const al_policy_t *n);
static const al_secret_t *al_diff_copied(const al_policy_t *o,
    const al_policy_t *n, const al_secret_t *s);
static void al_diff_route(al_diff_t *df, const al_policy_t *o,
    const al_route_t *a, const al_policy_t *n, const al_route_t *b);
static void al_diff_json(al_diff_t *df, const char *route, const char *path,
    const al_json_rule_t *a, const al_json_rule_t *b);
static void al_diff_llm(al_diff_t *df, const al_llm_t *a,
    const al_llm_t *b);
static void al_diff_alerts(al_diff_t *df, const al_policy_t *o,
    const al_policy_t *n);
static char *al_diff_path(const char *path, const al_str_t *name);
static int al_diff_str_cmp(const void *a, const void *b);
static int al_diff_client_cmp(const void *a, const void *b);
static const al_str_t **al_diff_sorted(const al_str_t *strs, size_t n);
static int al_diff_has(const al_str_t **sorted, const al_str_t *strs,
    size_t n, const al_str_t *s);
static const al_llm_client_t **al_diff_sorted_clients(const al_llm_t *l);
static const al_llm_client_t *al_llm_client(const al_llm_t *l,
    const al_llm_client_t **sorted, const al_str_t *name);
static const al_llm_client_t *al_llm_client_linear(const al_llm_t *l,
    const al_str_t *name);
static const char *al_diff_kind(al_llm_kind_t kind);
static void al_diff_llm_provider(al_diff_t *df, const al_llm_t *a,
    const al_llm_t *b);
static void al_diff_llm_limits(al_diff_t *df, const char *name,
    const al_llm_client_t *ac, const al_llm_client_t *bc);
static void al_diff_llm_long(al_diff_t *df, const al_llm_t *b,
    const al_llm_price_t *pa, const al_llm_price_t *pb);
static void al_diff_llm_prices(al_diff_t *df, const al_llm_t *a,
    const al_llm_t *b);
static void al_diff_usd(al_diff_t *df, const char *name,
    const char *client, const char *field, uint64_t old, uint64_t new);


/*
 * A request that names two clients is refused as ambiguous: a unix peer
 * whose uid is one client's and whose gid another's, a token of one
 * client from a peer (uid, gid or address) of another.  An identity
 * removed from a client ends that refusal wherever another client has an
 * identity the same request can show beside it: such a request is then
 * the other client's, a grant.  The bits: which kinds of removed identity
 * have such a rival.
 */

#define AL_DIFF_RIVAL_UID   0x01    /* another client has a gid or token */
#define AL_DIFF_RIVAL_GID   0x02    /* another client has a uid or token */
#define AL_DIFF_RIVAL_CIDR  0x04    /* another client has a token */

/* a line that could not be shown whole */
#define AL_DIFF_CUT  " ... (cut: out of memory)"

#define AL_DIFF_AMBIGUOUS                                                    \
    ": a request that also named another client, refused as ambiguous, "     \
    "is now that client's"


int
al_policy_diff(const al_policy_t *o, const al_policy_t *n,
    void (*out)(void *data, const char *line), void *data)
{
    size_t            i, j;
    char              m[64];
    al_diff_t         df;
    const al_route_t  *a, *b;

    df.out = out;
    df.data = data;
    df.grants = 0;

    al_diff_clients(&df, o, n);

    for (i = 0; i < n->nupstreams; i++) {
        for (j = 0; j < o->nupstreams; j++) {
            if (al_str_eq(&n->upstreams[i].name, &o->upstreams[j].name)) {
                break;
            }
        }
        /*
         * allow_insecure_http: a secret a route sends there may cross the
         * network in clear; a new upstream with it is one a route may
         * take in place of another of the same url
         */

        if (j == o->nupstreams) {
            al_diff_emit(&df, n->upstreams[i].insecure_http ? '+' : '~',
                         "upstream %s added (%s%s)",
                         n->upstreams[i].name.data, n->upstreams[i].url.data,
                         n->upstreams[i].insecure_http
                             ? ", allow_insecure_http: true" : "");
            continue;
        }

        if (!al_str_eq(&n->upstreams[i].url, &o->upstreams[j].url)) {
            al_diff_emit(&df, '+', "upstream %s: url %s -> %s",
                         n->upstreams[i].name.data, o->upstreams[j].url.data,
                         n->upstreams[i].url.data);
        }

        if (n->upstreams[i].insecure_http != o->upstreams[j].insecure_http) {
            al_diff_emit(&df, n->upstreams[i].insecure_http ? '+' : '-',
                         "upstream %s: allow_insecure_http %s -> %s",
                         n->upstreams[i].name.data,
                         o->upstreams[j].insecure_http ? "true" : "false",
                         n->upstreams[i].insecure_http ? "true" : "false");
        }
    }

    for (j = 0; j < o->nupstreams; j++) {
        for (i = 0; i < n->nupstreams; i++) {
            if (al_str_eq(&n->upstreams[i].name, &o->upstreams[j].name)) {
                break;
            }
        }
        if (i == n->nupstreams) {
            al_diff_emit(&df, '~', "upstream %s removed",
                         o->upstreams[j].name.data);
        }
    }

    al_diff_secrets(&df, o, n);

    for (i = 0; i < o->nroutes; i++) {
        a = &o->routes[i];
        if (al_policy_route(n, a->name.data, a->name.len) == NULL) {
            al_methods_format(m, sizeof(m), a->methods);
            al_diff_emit(&df, '-', "route %s removed (%s %s)", a->name.data,
                         m, a->path.data);
        }
    }

    for (i = 0; i < n->nroutes; i++) {
        b = &n->routes[i];
        a = al_policy_route(o, b->name.data, b->name.len);
        al_diff_route(&df, o, a, n, b);
    }

    for (i = 0; i < o->nllm; i++) {
        for (j = 0; j < n->nllm; j++) {
            if (al_str_eq(&o->llm[i].name, &n->llm[j].name)) {
                break;
            }
        }
        if (j == n->nllm) {
            al_diff_emit(&df, '-', "llm %s removed", o->llm[i].name.data);
        }
    }

    for (i = 0; i < n->nllm; i++) {
        for (j = 0; j < o->nllm; j++) {
            if (al_str_eq(&o->llm[j].name, &n->llm[i].name)) {
                break;
            }
        }
        al_diff_llm(&df, j < o->nllm ? &o->llm[j] : NULL, &n->llm[i]);
    }

    al_diff_alerts(&df, o, n);

    return df.grants;
}


static void
al_diff_emit(al_diff_t *df, char kind, const char *fmt, ...)
{
    int      n;
    char     small[1024], *line, *shown;
    char     oom[] = "? (a change not shown: out of memory)";
    size_t   len;
    va_list  ap;

    /*
     * A line is never cut: a long pattern (or model, field, URL) would
     * lose the rest of the line, the new value of a grant with it
     */

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);

    if (n < 0) {
        n = 0;
        small[0] = '\0';
    }

    len = (size_t) n;
    line = small;

    if (len >= sizeof(small)) {
        line = malloc(len + 1);

        if (line == NULL) {
            line = small;
            len = sizeof(small) - 1;

        } else {
            va_start(ap, fmt);
            (void) vsnprintf(line, len + 1, fmt, ap);
            va_end(ap);
        }
    }

    /*
     * Patterns, models, query and field names are the text of the policy
     * under review, which may be anyone's: a byte a terminal acts on (CR,
     * ESC, a C1 control, a bidirectional override in UTF-8) could erase
     * or rewrite the line it is on, a grant shown as something else.
     * Everything outside printable ASCII is shown as \xHH, and a
     * backslash as \\: a pattern's "\x01" is not shown as a byte.
     */

    shown = malloc(2 + 4 * len + sizeof(AL_DIFF_CUT));

    if (kind == '+') {
        df->grants++;
    }

    if (shown == NULL) {
        oom[0] = kind;
        df->out(df->data, oom);

    } else {
        shown[0] = kind;
        shown[1] = ' ';
        len = al_shown(shown + 2, 4 * len + 1, line, len);

        if (line == small && (size_t) n >= sizeof(small)) {
            memcpy(shown + 2 + len, AL_DIFF_CUT, sizeof(AL_DIFF_CUT));
        }

        df->out(df->data, shown);
        free(shown);
    }

    if (line != small) {
        free(line);
    }
}


static int
al_str_eq(const al_str_t *a, const al_str_t *b)
{
    return a->len == b->len && (a->len == 0
                                || memcmp(a->data, b->data, a->len) == 0);
}


/*
 * A secret's new source is compared as text, never opened.  A sealed
 * value is random: one that another secret has (in either policy) is
 * that secret's credential, copied, and now sent wherever this one is
 * (as naming the other secret in a template would be, a '+').  A file
 * path names whatever file is there, root's 0600 files included: what
 * the new file holds goes upstream, a '+' showing both paths.  A new
 * sealed value of its own is a rotation, '~'.
 */

static void
al_diff_secrets(al_diff_t *df, const al_policy_t *o, const al_policy_t *n)
{
    size_t              i, j;
    const al_secret_t  *a, *b, *c;

    for (i = 0; i < n->nsecrets; i++) {
        b = &n->secrets[i];
        a = NULL;

        for (j = 0; j < o->nsecrets; j++) {
            if (al_str_eq(&b->name, &o->secrets[j].name)) {
                a = &o->secrets[j];
                break;
            }
        }

        if (a != NULL && a->sealed == b->sealed
            && al_str_eq(&a->source, &b->source))
        {
            continue;
        }

        c = al_diff_copied(o, n, b);

        if (a == NULL) {
            if (c != NULL) {
                al_diff_emit(df, '~', "secret %s added (the %s of secret "
                             "%s)", b->name.data,
                             b->sealed ? "sealed value" : "file",
                             c->name.data);
            } else {
                al_diff_emit(df, '~', "secret %s added", b->name.data);
            }

        } else if (!b->sealed) {
            al_diff_emit(df, '+', "secret %s: %s%s -> file %s%s%s%s: what "
                         "that file holds is now sent as %s", b->name.data,
                         a->sealed ? "sealed" : "file ",
                         a->sealed ? "" : (const char *) a->source.data,
                         b->source.data, c ? " (the file of secret " : "",
                         c ? (const char *) c->name.data : "",
                         c ? ")" : "", b->name.data);

        } else if (c != NULL) {
            al_diff_emit(df, '+', "secret %s: now the sealed value of "
                         "secret %s: its credential is now sent as %s",
                         b->name.data, c->name.data, b->name.data);

        } else if (!a->sealed) {
            al_diff_emit(df, '~', "secret %s: now sealed (was file %s)",
                         b->name.data, a->source.data);

        } else {
            al_diff_emit(df, '~', "secret %s changed (rotated)",
                         b->name.data);
        }
    }

    for (j = 0; j < o->nsecrets; j++) {
        for (i = 0; i < n->nsecrets; i++) {
            if (al_str_eq(&n->secrets[i].name, &o->secrets[j].name)) {
                break;
            }
        }
        if (i == n->nsecrets) {
            al_diff_emit(df, '~', "secret %s removed",
                         o->secrets[j].name.data);
        }
    }
}


/* another secret, of o or of n, with the same sealed value or file */

static const al_secret_t *
al_diff_copied(const al_policy_t *o, const al_policy_t *n,
    const al_secret_t *s)
{
    size_t              i, k;
    const al_secret_t  *c;
    const al_policy_t  *p;

    for (k = 0; k < 2; k++) {
        p = (k == 0) ? n : o;

        for (i = 0; i < p->nsecrets; i++) {
            c = &p->secrets[i];

            if (c->sealed == s->sealed && !al_str_eq(&c->name, &s->name)
                && al_str_eq(&c->source, &s->source))
            {
                return c;
            }
        }
    }

    return NULL;
}


static void
al_diff_clients(al_diff_t *df, const al_policy_t *o, const al_policy_t *n)
{
    size_t              i, counts[3];
    unsigned            rivals;
    const al_client_t  *a, *b, *c;

    /* the clients of n that could be named beside a uid, a gid, a cidr */

    counts[0] = counts[1] = counts[2] = 0;

    for (i = 0; i < n->nclients; i++) {
        c = &n->clients[i];
        counts[0] += (c->ngids || c->ntokens);
        counts[1] += (c->nuids || c->ntokens);
        counts[2] += (c->ntokens != 0);
    }

    for (i = 0; i < o->nclients; i++) {
        a = &o->clients[i];
        if (al_policy_client(n, a->name.data, a->name.len) != NULL) {
            continue;
        }

        rivals = al_diff_rivals(counts, NULL);

        if (((rivals & AL_DIFF_RIVAL_UID) && a->nuids)
            || ((rivals & AL_DIFF_RIVAL_GID) && a->ngids)
            || ((rivals & AL_DIFF_RIVAL_CIDR) && a->ncidrs))
        {
            al_diff_emit(df, '+', "client %s removed" AL_DIFF_AMBIGUOUS,
                         a->name.data);

        } else {
            al_diff_emit(df, '-', "client %s removed", a->name.data);
        }
    }

    for (i = 0; i < n->nclients; i++) {
        b = &n->clients[i];
        a = al_policy_client(o, b->name.data, b->name.len);

        if (a == NULL) {
            al_diff_emit(df, '~', "client %s added", b->name.data);
            continue;
        }

        /* identities the client did not have: more peers act as it */
        al_diff_identities(df, b->name.data, a, b, '+', 0);

        /* and those it no longer has: a replaced one is both */
        al_diff_identities(df, b->name.data, b, a, '-',
                           al_diff_rivals(counts, b));
    }
}


/* AL_DIFF_RIVAL_* of clients other than c (NULL: of them all) */

static unsigned
al_diff_rivals(const size_t *counts, const al_client_t *c)
{
    unsigned  rivals;

    rivals = 0;

    if (counts[0] > (c != NULL && (c->ngids || c->ntokens))) {
        rivals |= AL_DIFF_RIVAL_UID;
    }

    if (counts[1] > (c != NULL && (c->nuids || c->ntokens))) {
        rivals |= AL_DIFF_RIVAL_GID;
    }

    if (counts[2] > (c != NULL && c->ntokens)) {
        rivals |= AL_DIFF_RIVAL_CIDR;
    }

    return rivals;
}


/*
 * The identities of client "to" that "from" does not have, a line each:
 * '+' new ones, '-' removed ones, '+' too for a removed one that has a
 * rival (AL_DIFF_RIVAL_*).  A token is named by neither its value nor
 * its hash.
 */

static void
al_diff_identities(al_diff_t *df, const char *name, const al_client_t *from,
    const al_client_t *to, char kind, unsigned rivals)
{
    char         uk, gk, ck;
    size_t       k, l;
    const char  *pre, *post, *up, *gp, *cp;

    pre = (kind == '+') ? "new " : "";
    post = (kind == '+') ? "" : " removed";

    uk = (rivals & AL_DIFF_RIVAL_UID) ? '+' : kind;
    gk = (rivals & AL_DIFF_RIVAL_GID) ? '+' : kind;
    ck = (rivals & AL_DIFF_RIVAL_CIDR) ? '+' : kind;

    up = (uk != kind) ? AL_DIFF_AMBIGUOUS : "";
    gp = (gk != kind) ? AL_DIFF_AMBIGUOUS : "";
    cp = (ck != kind) ? AL_DIFF_AMBIGUOUS : "";

    for (k = 0; k < to->nuids; k++) {
        for (l = 0; l < from->nuids && from->uids[l] != to->uids[k]; l++) {
            /* void */
        }
        if (l == from->nuids) {
            al_diff_emit(df, uk, "client %s: %sunix_uid %u%s%s", name, pre,
                         (unsigned) to->uids[k], post, up);
        }
    }

    for (k = 0; k < to->ngids; k++) {
        for (l = 0; l < from->ngids && from->gids[l] != to->gids[k]; l++) {
            /* void */
        }
        if (l == from->ngids) {
            al_diff_emit(df, gk, "client %s: %sunix_gid %u%s%s", name, pre,
                         (unsigned) to->gids[k], post, gp);
        }
    }

    for (k = 0; k < to->ncidrs; k++) {
        for (l = 0; l < from->ncidrs; l++) {
            if (from->cidrs[l].prefix == to->cidrs[k].prefix
                && memcmp(from->cidrs[l].addr, to->cidrs[k].addr, 16) == 0)
            {
                break;
            }
        }
        if (l == from->ncidrs) {
            al_diff_emit(df, ck, "client %s: %scidr%s%s", name, pre, post,
                         cp);
        }
    }

    for (k = 0; k < to->ntokens; k++) {
        for (l = 0; l < from->ntokens; l++) {
            if (memcmp(from->tokens[l], to->tokens[k], 32) == 0) {
                break;
            }
        }
        if (l == from->ntokens) {
            al_diff_emit(df, kind, "client %s: %stoken%s", name, pre, post);
        }
    }
}


static void
al_diff_route(al_diff_t *df, const al_policy_t *o, const al_route_t *a,
    const al_policy_t *n, const al_route_t *b)
{
    char                ma[64], mb[64], path[64];
    size_t              i, k;
    const char         *name;
    const al_client_t  *c, *oc;

    name = b->name.data;

    if (a == NULL) {
        al_methods_format(mb, sizeof(mb), b->methods);
        al_diff_emit(df, '+', "route %s added (%s %s -> %s%s)", name, mb,
                     b->path.data, b->upstream->url.data, b->to.data);
        return;
    }

    if (a->methods != b->methods) {
        al_methods_format(ma, sizeof(ma), a->methods);
        al_methods_format(mb, sizeof(mb), b->methods);
        al_diff_emit(df, (b->methods & ~a->methods) ? '+' : '-',
                     "route %s: methods %s -> %s", name, ma, mb);
    }

    if (!al_str_eq(&a->path, &b->path)) {
        al_diff_emit(df, '+', "route %s: path %s -> %s", name, a->path.data,
                     b->path.data);
    }

    for (i = 0; i < n->nclients; i++) {
        c = &n->clients[i];
        oc = al_policy_client(o, c->name.data, c->name.len);

        if (b->client_ok[i] && (oc == NULL || !a->client_ok[oc->index])) {
            al_diff_emit(df, '+', "route %s: client %s added", name,
                         c->name.data);
        }
    }

    for (i = 0; i < o->nclients; i++) {
        oc = &o->clients[i];
        c = al_policy_client(n, oc->name.data, oc->name.len);

        if (a->client_ok[i] && (c == NULL || !b->client_ok[c->index])) {
            al_diff_emit(df, '-', "route %s: client %s removed", name,
                         oc->name.data);
        }
    }

    if (!al_str_eq(&a->upstream->url, &b->upstream->url)) {
        al_diff_emit(df, '+', "route %s: upstream %s -> %s", name,
                     a->upstream->url.data, b->upstream->url.data);
    }

    /* another upstream entry of the same url, but for the word on http */
    if (a->upstream->insecure_http != b->upstream->insecure_http) {
        al_diff_emit(df, b->upstream->insecure_http ? '+' : '-',
                     "route %s: upstream %s allow_insecure_http %s -> %s",
                     name, b->upstream->name.data,
                     a->upstream->insecure_http ? "true" : "false",
                     b->upstream->insecure_http ? "true" : "false");
    }

    if (!al_str_eq(&a->to, &b->to)) {
        al_diff_emit(df, '+', "route %s: to %s -> %s", name, a->to.data,
                     b->to.data);
    }

    for (i = 0; i < b->nparams; i++) {
        for (k = 0; k < a->nparams; k++) {
            if (al_str_eq(&a->params[k].name, &b->params[i].name)) {
                break;
            }
        }
        if (k < a->nparams
            && !al_str_eq(&a->params[k].pattern, &b->params[i].pattern))
        {
            al_diff_emit(df, '+', "route %s: param %s pattern %s -> %s",
                         name, b->params[i].name.data,
                         a->params[k].pattern.data,
                         b->params[i].pattern.data);
        }

        /* a param that takes a drive ("A:B") grants what was refused */

        if (k < a->nparams ? a->params[k].drive != b->params[i].drive
                           : b->params[i].drive)
        {
            al_diff_emit(df, b->params[i].drive ? '+' : '-',
                         "route %s: param %s drive %s -> %s", name,
                         b->params[i].name.data,
                         (k < a->nparams && a->params[k].drive)
                             ? "true" : "false",
                         b->params[i].drive ? "true" : "false");
        }
    }

    /* query */
    for (i = 0; i < b->nquery_allow; i++) {
        for (k = 0; k < a->nquery_allow; k++) {
            if (al_str_eq(&a->query_allow[k], &b->query_allow[i])) {
                break;
            }
        }

        if (k == a->nquery_allow) {
            al_diff_emit(df, '+', "route %s: query parameter %s allowed",
                         name, b->query_allow[i].data);
            continue;
        }

        if (a->query_required[k] && !b->query_required[i]) {
            al_diff_emit(df, '+', "route %s: query parameter %s no longer "
                         "required", name, b->query_allow[i].data);

        } else if (!a->query_required[k] && b->query_required[i]) {
            al_diff_emit(df, '-', "route %s: query parameter %s now "
                         "required", name, b->query_allow[i].data);
        }

        if (!al_str_eq(&a->query_patterns[k].pattern,
                       &b->query_patterns[i].pattern))
        {
            al_diff_emit(df, b->query_patterns[i].re == NULL
                                 || a->query_patterns[k].re != NULL
                             ? '+' : '-',
                         "route %s: query parameter %s pattern \"%s\" -> "
                         "\"%s\"", name, b->query_allow[i].data,
                         a->query_patterns[k].pattern.len
                             ? a->query_patterns[k].pattern.data : "",
                         b->query_patterns[i].pattern.len
                             ? b->query_patterns[i].pattern.data : "");
        }
    }

    for (k = 0; k < a->nquery_allow; k++) {
        for (i = 0; i < b->nquery_allow; i++) {
            if (al_str_eq(&a->query_allow[k], &b->query_allow[i])) {
                break;
            }
        }
        if (i == b->nquery_allow) {
            al_diff_emit(df, '-', "route %s: query parameter %s no longer "
                         "allowed", name, a->query_allow[k].data);
        }
    }

    /* body */
    if (!a->has_body && b->has_body) {
        al_diff_emit(df, '+', "route %s: request body allowed (max_bytes "
                     "%zu)", name, b->body_max);

    } else if (a->has_body && !b->has_body) {
        al_diff_emit(df, '-', "route %s: request body no longer allowed",
                     name);

    } else if (a->body_max != b->body_max) {
        al_diff_emit(df, b->body_max > a->body_max ? '+' : '-',
                     "route %s: body max_bytes %zu -> %zu", name,
                     a->body_max, b->body_max);
    }

    /* "" is any media type: setting one where there was none narrows */
    if (!al_str_eq(&a->content_type, &b->content_type)) {
        al_diff_emit(df, a->content_type.len == 0 ? '-' : '+',
                     "route %s: body content_type \"%s\" -> \"%s\"",
                     name, a->content_type.len ? a->content_type.data : "",
                     b->content_type.len ? b->content_type.data : "");
    }

    snprintf(path, sizeof(path), "body");
    al_diff_json(df, name, path, a->json, b->json);

    /* credentials sent */
    for (i = 0; i < b->ninject; i++) {
        for (k = 0; k < a->ninject; k++) {
            if (al_str_eq(&a->inject[k].name, &b->inject[i].name)) {
                break;
            }
        }
        if (k == a->ninject) {
            al_diff_emit(df, '+', "route %s: injects %s: %s", name,
                         b->inject[i].name.data, b->inject[i].tmpl.data);

        } else if (!al_str_eq(&a->inject[k].tmpl, &b->inject[i].tmpl)) {
            al_diff_emit(df, '+', "route %s: injects %s: %s -> %s", name,
                         b->inject[i].name.data, a->inject[k].tmpl.data,
                         b->inject[i].tmpl.data);
        }
    }

    for (k = 0; k < a->ninject; k++) {
        for (i = 0; i < b->ninject; i++) {
            if (al_str_eq(&a->inject[k].name, &b->inject[i].name)) {
                break;
            }
        }
        if (i == b->ninject) {
            al_diff_emit(df, '-', "route %s: no longer injects %s", name,
                         a->inject[k].name.data);
        }
    }

    if (a->allow_cookies != b->allow_cookies) {
        al_diff_emit(df, b->allow_cookies ? '+' : '-', "route %s: cookies "
                     "%s", name, b->allow_cookies ? "allowed" : "stripped");
    }

    /* an answer not scrubbed may carry what a scrubbed one could not */
    if (a->no_scrub != b->no_scrub) {
        al_diff_emit(df, b->no_scrub ? '+' : '-', "route %s: answers %s",
                     name, b->no_scrub ? "not scrubbed (scrub: false)"
                                       : "scrubbed");
    }
}


static void
al_diff_json(al_diff_t *df, const char *route, const char *path,
    const al_json_rule_t *a, const al_json_rule_t *b)
{
    char                  *sub;
    size_t                 i, k;
    const al_json_rule_t  *am, *bm;

    if (a == NULL && b == NULL) {
        return;
    }

    if (a != NULL && b == NULL) {
        al_diff_emit(df, '+', "route %s: %s no longer checked", route, path);
        return;
    }

    if (a == NULL) {
        al_diff_emit(df, '-', "route %s: %s now checked", route, path);
        return;
    }

    /*
     * A new type accepts values the old one refused, unless it is a
     * subset of it: anything is a subset of any, integer of number.
     */
    if (a->type != b->type) {
        al_diff_emit(df, a->type == AL_JSON_ANY
                         || (a->type == AL_JSON_NUMBER
                             && b->type == AL_JSON_INTEGER) ? '-' : '+',
                     "route %s: %s type changed", route, path);
        if (b->type == AL_JSON_ANY) {
            return;
        }
    }

    if (a->required && !b->required) {
        al_diff_emit(df, '+', "route %s: %s no longer required", route,
                     path);

    } else if (!a->required && b->required) {
        al_diff_emit(df, '-', "route %s: %s now required", route, path);
    }

    if (!al_str_eq(&a->pattern, &b->pattern)) {
        al_diff_emit(df, b->re == NULL || a->re != NULL ? '+' : '-',
                     "route %s: %s pattern \"%s\" -> \"%s\"", route, path,
                     a->pattern.len ? a->pattern.data : "",
                     b->pattern.len ? b->pattern.data : "");
    }

    if (!a->additional && b->additional) {
        al_diff_emit(df, '+', "route %s: %s accepts unlisted fields", route,
                     path);

    } else if (a->additional && !b->additional) {
        al_diff_emit(df, '-', "route %s: %s refuses unlisted fields", route,
                     path);
    }

    /* members only mean something when both sides are objects */
    if (a->type != AL_JSON_OBJECT || b->type != AL_JSON_OBJECT) {
        return;
    }

    for (i = 0; i < b->nmembers; i++) {
        bm = &b->members[i];
        am = NULL;

        for (k = 0; k < a->nmembers; k++) {
            if (al_str_eq(&a->members[k].name, &bm->name)) {
                am = &a->members[k];
                break;
            }
        }

        sub = al_diff_path(path, &bm->name);

        /* a field an open object already took with any value narrows;
           one a closed object refused is now accepted */
        if (am == NULL) {
            al_diff_emit(df, a->additional ? '-' : '+',
                         "route %s: %s field added", route,
                         sub ? sub : path);

        } else if (sub == NULL) {
            al_diff_emit(df, '+', "route %s: %s fields not compared: out of "
                         "memory", route, path);

        } else {
            al_diff_json(df, route, sub, am, bm);
        }

        free(sub);
    }

    for (k = 0; k < a->nmembers; k++) {
        for (i = 0; i < b->nmembers; i++) {
            if (al_str_eq(&a->members[k].name, &b->members[i].name)) {
                break;
            }
        }
        /* an open object now takes it with any value; a closed one
           refuses it, which widens only if it was required */
        if (i == b->nmembers) {
            sub = al_diff_path(path, &a->members[k].name);
            al_diff_emit(df, b->additional || a->members[k].required
                             ? '+' : '-',
                         "route %s: %s no longer checked", route,
                         sub ? sub : path);
            free(sub);
        }
    }
}


/* "PATH.NAME", whole however long (malloc()ed); NULL out of memory */

static char *
al_diff_path(const char *path, const al_str_t *name)
{
    char    *sub;
    size_t   len;

    len = strlen(path);

    sub = malloc(len + 1 + name->len + 1);
    if (sub == NULL) {
        return NULL;
    }

    memcpy(sub, path, len);
    sub[len] = '.';
    memcpy(sub + len + 1, name->data, name->len);
    sub[len + 1 + name->len] = '\0';

    return sub;
}


/*
 * Names looked up in sorted copies: the lists of an llm entry (its models,
 * its clients and each client's models) were searched from the start for
 * each name, and a policy of 50000 clients of one entry took 20 s to diff
 * against itself, a 16 MiB one half an hour (edit shows the diff too).
 * Out of memory, a list is searched as before.
 */

static int
al_diff_str_cmp(const void *a, const void *b)
{
    int              rc;
    const al_str_t  *x, *y;

    x = *(const al_str_t * const *) a;
    y = *(const al_str_t * const *) b;

    rc = memcmp(x->data, y->data, x->len < y->len ? x->len : y->len);

    return rc != 0 ? rc : (x->len > y->len) - (x->len < y->len);
}


static int
al_diff_client_cmp(const void *a, const void *b)
{
    const al_str_t  *x, *y;

    x = &(*(const al_llm_client_t * const *) a)->client->name;
    y = &(*(const al_llm_client_t * const *) b)->client->name;

    return al_diff_str_cmp(&x, &y);
}


/* pointers to strs[0 .. n - 1], sorted; NULL when n is 0 or no memory */

static const al_str_t **
al_diff_sorted(const al_str_t *strs, size_t n)
{
    size_t            i;
    const al_str_t  **v;

    if (n == 0 || (v = malloc(n * sizeof(al_str_t *))) == NULL) {
        return NULL;
    }

    for (i = 0; i < n; i++) {
        v[i] = &strs[i];
    }

    qsort(v, n, sizeof(al_str_t *), al_diff_str_cmp);

    return v;
}


/* s is one of strs[0 .. n - 1] (sorted: al_diff_sorted() of them) */

static int
al_diff_has(const al_str_t **sorted, const al_str_t *strs, size_t n,
    const al_str_t *s)
{
    size_t  i;

    if (sorted != NULL) {
        return bsearch(&s, sorted, n, sizeof(al_str_t *), al_diff_str_cmp)
               != NULL;
    }

    for (i = 0; i < n; i++) {
        if (al_str_eq(&strs[i], s)) {
            return 1;
        }
    }

    return 0;
}


static const al_llm_client_t **
al_diff_sorted_clients(const al_llm_t *l)
{
    size_t                   i;
    const al_llm_client_t  **v;

    if (l->nclients == 0
        || (v = malloc(l->nclients * sizeof(al_llm_client_t *))) == NULL)
    {
        return NULL;
    }

    for (i = 0; i < l->nclients; i++) {
        v[i] = &l->clients[i];
    }

    qsort(v, l->nclients, sizeof(al_llm_client_t *), al_diff_client_cmp);

    return v;
}


static const al_llm_client_t *
al_llm_client(const al_llm_t *l, const al_llm_client_t **sorted,
    const al_str_t *name)
{
    al_client_t               key;
    al_llm_client_t           kc;
    const al_llm_client_t    *k, **found;

    if (sorted == NULL) {
        return al_llm_client_linear(l, name);
    }

    key.name = *name;
    kc.client = &key;
    k = &kc;

    found = bsearch(&k, sorted, l->nclients, sizeof(al_llm_client_t *),
                    al_diff_client_cmp);

    return found != NULL ? *found : NULL;
}


static const al_llm_client_t *
al_llm_client_linear(const al_llm_t *l, const al_str_t *name)
{
    size_t  i;

    for (i = 0; i < l->nclients; i++) {
        if (al_str_eq(&l->clients[i].client->name, name)) {
            return &l->clients[i];
        }
    }

    return NULL;
}


/* a limit of 0 is "unlimited", the widest of all */

static int
al_limit_wider(uint64_t old, uint64_t new)
{
    if (old == new) {
        return 0;
    }

    return new == 0 || (old != 0 && new > old) ? 1 : -1;
}


static void
al_diff_llm(al_diff_t *df, const al_llm_t *a, const al_llm_t *b)
{
    int                     w;
    size_t                  i, k;
    const char             *name;
    const al_str_t        **sa, **sb;
    const al_llm_client_t  *ac, *bc, **ca, **cb;

    name = b->name.data;

    if (a == NULL) {
        al_diff_emit(df, '+', "llm %s added (%s -> %s)", name,
                     b->prefix.data, b->upstream.url.data);
        return;
    }

    if (!al_str_eq(&a->prefix, &b->prefix)) {
        al_diff_emit(df, '+', "llm %s: prefix %s -> %s", name, a->prefix.data,
                     b->prefix.data);
    }

    if (!al_str_eq(&a->upstream.url, &b->upstream.url)) {
        al_diff_emit(df, '+', "llm %s: upstream %s -> %s", name,
                     a->upstream.url.data, b->upstream.url.data);
    }

    /* its own, or its named upstream's: the key may cross in clear */
    if (a->upstream.insecure_http != b->upstream.insecure_http) {
        al_diff_emit(df, b->upstream.insecure_http ? '+' : '-',
                     "llm %s: allow_insecure_http %s -> %s", name,
                     a->upstream.insecure_http ? "true" : "false",
                     b->upstream.insecure_http ? "true" : "false");
    }

    /* another API: other endpoints and body rules apply */
    if (a->kind != b->kind) {
        al_diff_emit(df, '+', "llm %s: provider %s -> %s", name,
                     al_diff_kind(a->kind), al_diff_kind(b->kind));
    }

    /* another key is sent: the provider sees another account */
    if (!al_str_eq(&a->secret->name, &b->secret->name)) {
        al_diff_emit(df, '+', "llm %s: secret %s -> %s", name,
                     a->secret->name.data, b->secret->name.data);
    }

    if (a->include_usage != b->include_usage) {
        al_diff_emit(df, '~', "llm %s: include_usage %s -> %s", name,
                     a->include_usage ? "true" : "false",
                     b->include_usage ? "true" : "false");
    }

    if (b->body_max != a->body_max) {
        al_diff_emit(df, b->body_max > a->body_max ? '+' : '-',
                     "llm %s: max_body_bytes %zu -> %zu", name,
                     a->body_max, b->body_max);
    }

    al_diff_llm_provider(df, a, b);

    /* a provider tool allowed lets the provider reach out: a grant */

    for (i = 0; i < AL_LLM_PT_NAMED; i++) {
        if ((b->provider_tools & ~a->provider_tools) & (UINT32_C(1) << i)) {
            al_diff_emit(df, '+', "llm %s: provider tool %s allowed", name,
                         al_llm_tool_names[i]);

        } else if ((a->provider_tools & ~b->provider_tools)
                   & (UINT32_C(1) << i))
        {
            al_diff_emit(df, '-', "llm %s: provider tool %s no longer "
                         "allowed", name, al_llm_tool_names[i]);
        }
    }

    /* a member allowed reaches what routers read from it: a grant */

    for (i = 0; i < b->nallow_members; i++) {
        for (k = 0; k < a->nallow_members; k++) {
            if (al_str_eq(&a->allow_members[k], &b->allow_members[i])) {
                break;
            }
        }
        if (k == a->nallow_members) {
            al_diff_emit(df, '+', "llm %s: request member %s allowed", name,
                         b->allow_members[i].data);
        }
    }

    for (i = 0; i < a->nallow_members; i++) {
        for (k = 0; k < b->nallow_members; k++) {
            if (al_str_eq(&b->allow_members[k], &a->allow_members[i])) {
                break;
            }
        }
        if (k == b->nallow_members) {
            al_diff_emit(df, '-', "llm %s: request member %s no longer "
                         "allowed", name, a->allow_members[i].data);
        }
    }

    sa = al_diff_sorted(a->models, a->nmodels);
    sb = al_diff_sorted(b->models, b->nmodels);

    for (i = 0; i < b->nmodels; i++) {
        if (!al_diff_has(sa, a->models, a->nmodels, &b->models[i])) {
            al_diff_emit(df, '+', "llm %s: model %s added", name,
                         b->models[i].data);
        }
    }

    for (k = 0; k < a->nmodels; k++) {
        if (!al_diff_has(sb, b->models, b->nmodels, &a->models[k])) {
            al_diff_emit(df, '-', "llm %s: model %s removed", name,
                         a->models[k].data);
        }
    }

    free(sa);
    free(sb);

    al_diff_llm_prices(df, a, b);

    ca = al_diff_sorted_clients(a);
    cb = al_diff_sorted_clients(b);

    for (i = 0; i < b->nclients; i++) {
        bc = &b->clients[i];
        ac = al_llm_client(a, ca, &bc->client->name);

        if (ac == NULL) {
            al_diff_emit(df, '+', "llm %s: client %s added", name,
                         bc->client->name.data);
            continue;
        }

        w = al_limit_wider(ac->tokens_per_minute, bc->tokens_per_minute);
        if (w) {
            al_diff_emit(df, w > 0 ? '+' : '-', "llm %s: client %s "
                         "tokens_per_minute %llu -> %llu (0 = unlimited)",
                         name, bc->client->name.data,
                         (unsigned long long) ac->tokens_per_minute,
                         (unsigned long long) bc->tokens_per_minute);
        }

        w = al_limit_wider(ac->tokens_per_day, bc->tokens_per_day);
        if (w) {
            al_diff_emit(df, w > 0 ? '+' : '-', "llm %s: client %s "
                         "tokens_per_day %llu -> %llu (0 = unlimited)",
                         name, bc->client->name.data,
                         (unsigned long long) ac->tokens_per_day,
                         (unsigned long long) bc->tokens_per_day);
        }

        w = al_limit_wider(ac->max_tokens, bc->max_tokens);
        if (w) {
            al_diff_emit(df, w > 0 ? '+' : '-', "llm %s: client %s "
                         "max_tokens %llu -> %llu (0 = no cap)", name,
                         bc->client->name.data,
                         (unsigned long long) ac->max_tokens,
                         (unsigned long long) bc->max_tokens);
        }

        /*
         * the cap the gateway writes into a request that names none:
         * unset, it is max_tokens, or 4096 with a budget
         */

        w = al_limit_wider(al_llm_default_max_tokens(ac),
                           al_llm_default_max_tokens(bc));
        if (w) {
            al_diff_emit(df, w > 0 ? '+' : '-', "llm %s: client %s "
                         "default_max_tokens %llu -> %llu (as applied; "
                         "0 = none)", name, bc->client->name.data,
                         (unsigned long long) al_llm_default_max_tokens(ac),
                         (unsigned long long) al_llm_default_max_tokens(bc));
        }

        al_diff_llm_limits(df, name, ac, bc);

        /* clamp lets through what reject refused */
        if (ac->clamp != bc->clamp) {
            al_diff_emit(df, bc->clamp ? '+' : '-', "llm %s: client %s "
                         "over_max_tokens %s -> %s", name,
                         bc->client->name.data,
                         ac->clamp ? "clamp" : "reject",
                         bc->clamp ? "clamp" : "reject");
        }

        if (ac->nmodels && bc->nmodels == 0) {
            al_diff_emit(df, '+', "llm %s: client %s may use every provider "
                         "model", name, bc->client->name.data);

        } else if (ac->nmodels == 0 && bc->nmodels) {
            al_diff_emit(df, '-', "llm %s: client %s limited to %zu of the "
                         "provider's models", name, bc->client->name.data,
                         bc->nmodels);
        }

        sa = ac->nmodels ? al_diff_sorted(ac->models, ac->nmodels) : NULL;
        sb = ac->nmodels ? al_diff_sorted(bc->models, bc->nmodels) : NULL;

        for (k = 0; ac->nmodels && k < ac->nmodels; k++) {
            if (bc->nmodels
                && !al_diff_has(sb, bc->models, bc->nmodels,
                                &ac->models[k]))
            {
                al_diff_emit(df, '-', "llm %s: client %s model %s removed",
                             name, bc->client->name.data,
                             ac->models[k].data);
            }
        }

        for (k = 0; ac->nmodels && k < bc->nmodels; k++) {
            if (!al_diff_has(sa, ac->models, ac->nmodels, &bc->models[k])) {
                al_diff_emit(df, '+', "llm %s: client %s model %s added",
                             name, bc->client->name.data,
                             bc->models[k].data);
            }
        }

        free(sa);
        free(sb);
    }

    for (i = 0; i < a->nclients; i++) {
        if (al_llm_client(b, cb, &a->clients[i].client->name) == NULL) {
            al_diff_emit(df, '-', "llm %s: client %s removed", name,
                         a->clients[i].client->name.data);
        }
    }

    free(ca);
    free(cb);
}


static void
al_diff_alerts(al_diff_t *df, const al_policy_t *o, const al_policy_t *n)
{
    size_t  i, k;

    if (n->deny.threshold > o->deny.threshold
        || n->deny.window < o->deny.window)
    {
        al_diff_emit(df, '+', "alerts.deny weakened: %u in %us -> %u in %us",
                     o->deny.threshold, o->deny.window, n->deny.threshold,
                     n->deny.window);

    } else if (n->deny.threshold != o->deny.threshold
               || n->deny.window != o->deny.window)
    {
        al_diff_emit(df, '-', "alerts.deny tightened: %u in %us -> %u in "
                     "%us", o->deny.threshold, o->deny.window,
                     n->deny.threshold, n->deny.window);
    }

    if (o->quarantine.threshold && n->quarantine.threshold == 0) {
        al_diff_emit(df, '+', "alerts.quarantine removed");

    } else if (o->quarantine.threshold == 0 && n->quarantine.threshold) {
        al_diff_emit(df, '-', "alerts.quarantine added");

    } else if (n->quarantine.threshold > o->quarantine.threshold
               || n->quarantine.window < o->quarantine.window
               || n->quarantine.duration < o->quarantine.duration)
    {
        al_diff_emit(df, '+', "alerts.quarantine weakened: %u in %us for "
                     "%us -> %u in %us for %us", o->quarantine.threshold,
                     o->quarantine.window, o->quarantine.duration,
                     n->quarantine.threshold, n->quarantine.window,
                     n->quarantine.duration);

    } else if (memcmp(&n->quarantine, &o->quarantine,
                      sizeof(al_threshold_t)) != 0)
    {
        al_diff_emit(df, '-', "alerts.quarantine tightened: %u in %us for "
                     "%us -> %u in %us for %us", o->quarantine.threshold,
                     o->quarantine.window, o->quarantine.duration,
                     n->quarantine.threshold, n->quarantine.window,
                     n->quarantine.duration);
    }

    for (i = 0; i < o->nsinks; i++) {
        for (k = 0; k < n->nsinks; k++) {
            if (o->sinks[i].kind == n->sinks[k].kind
                && al_str_eq(&o->sinks[i].url, &n->sinks[k].url))
            {
                break;
            }
        }
        if (k == n->nsinks) {
            al_diff_emit(df, '+', "alert sink %s removed: alerts no longer "
                         "reach it", o->sinks[i].url.data);
        }
    }

    for (k = 0; k < n->nsinks; k++) {
        for (i = 0; i < o->nsinks; i++) {
            if (o->sinks[i].kind == n->sinks[k].kind
                && al_str_eq(&o->sinks[i].url, &n->sinks[k].url))
            {
                break;
            }
        }
        if (i == o->nsinks) {
            al_diff_emit(df, '-', "alert sink %s added",
                         n->sinks[k].url.data);
            continue;
        }

        /* another key signs the alerts: whoever holds it can forge them */
        if ((o->sinks[i].hmac == NULL) != (n->sinks[k].hmac == NULL)
            || (o->sinks[i].hmac != NULL
                && !al_str_eq(&o->sinks[i].hmac->name,
                              &n->sinks[k].hmac->name)))
        {
            al_diff_emit(df, '+', "alert sink %s: hmac_secret %s -> %s",
                         n->sinks[k].url.data,
                         o->sinks[i].hmac ? o->sinks[i].hmac->name.data : "-",
                         n->sinks[k].hmac ? n->sinks[k].hmac->name.data
                                          : "-");
        }

        /*
         * A second key that signs them (a change of secret): added or
         * another one, whoever holds it can forge alerts; taken away,
         * no longer.
         */
        if ((o->sinks[i].hmac_also == NULL)
            != (n->sinks[k].hmac_also == NULL)
            || (o->sinks[i].hmac_also != NULL
                && !al_str_eq(&o->sinks[i].hmac_also->name,
                              &n->sinks[k].hmac_also->name)))
        {
            al_diff_emit(df, n->sinks[k].hmac_also != NULL ? '+' : '-',
                         "alert sink %s: hmac_secret_also %s -> %s",
                         n->sinks[k].url.data,
                         o->sinks[i].hmac_also
                             ? o->sinks[i].hmac_also->name.data : "-",
                         n->sinks[k].hmac_also
                             ? n->sinks[k].hmac_also->name.data : "-");
        }

        /* http:// past this host: the alerts may cross a network in clear */
        if (o->sinks[i].insecure_http != n->sinks[k].insecure_http) {
            al_diff_emit(df, n->sinks[k].insecure_http ? '+' : '-',
                         "alert sink %s: allow_insecure_http %s -> %s",
                         n->sinks[k].url.data,
                         o->sinks[i].insecure_http ? "true" : "false",
                         n->sinks[k].insecure_http ? "true" : "false");
        }
    }
}


/*
 * What the provider is sent: the fallback (another provider may get the
 * calls: '+'; none: '-'), the api-version (another API surface: '+'),
 * aliases (a name that reaches a model it did not reach before: '+').
 */

static void
al_diff_llm_provider(al_diff_t *df, const al_llm_t *a, const al_llm_t *b)
{
    size_t       i, k;
    const char  *name;

    name = b->name.data;

    /* calls may go to another provider, or no longer do */
    if (!al_str_eq(&a->fallback_name, &b->fallback_name)) {
        al_diff_emit(df, b->fallback_name.len ? '+' : '-',
                     "llm %s: fallback %s -> %s", name,
                     a->fallback_name.len ? a->fallback_name.data : "-",
                     b->fallback_name.len ? b->fallback_name.data : "-");
    }

    if (!al_str_eq(&a->api_version, &b->api_version)) {
        al_diff_emit(df, '+', "llm %s: api_version %s -> %s", name,
                     a->api_version.len ? a->api_version.data : "-",
                     b->api_version.len ? b->api_version.data : "-");
    }

    for (i = 0; i < b->naliases; i++) {
        for (k = 0; k < a->naliases; k++) {
            if (al_str_eq(&a->aliases[k].name, &b->aliases[i].name)) {
                break;
            }
        }

        if (k == a->naliases) {
            al_diff_emit(df, '+', "llm %s: alias %s added (-> %s)", name,
                         b->aliases[i].name.data, b->aliases[i].model.data);

        } else if (!al_str_eq(&a->aliases[k].model, &b->aliases[i].model)) {
            al_diff_emit(df, '+', "llm %s: alias %s %s -> %s", name,
                         b->aliases[i].name.data, a->aliases[k].model.data,
                         b->aliases[i].model.data);
        }
    }

    for (k = 0; k < a->naliases; k++) {
        for (i = 0; i < b->naliases; i++) {
            if (al_str_eq(&a->aliases[k].name, &b->aliases[i].name)) {
                break;
            }
        }

        if (i == b->naliases) {
            al_diff_emit(df, '-', "llm %s: alias %s removed", name,
                         a->aliases[k].name.data);
        }
    }
}


/* requests per minute, requests in flight, dollars: more grants */

static void
al_diff_llm_limits(al_diff_t *df, const char *name,
    const al_llm_client_t *ac, const al_llm_client_t *bc)
{
    int  w;

    w = al_limit_wider(ac->requests_per_minute, bc->requests_per_minute);
    if (w) {
        al_diff_emit(df, w > 0 ? '+' : '-', "llm %s: client %s "
                     "requests_per_minute %llu -> %llu (0 = unlimited)",
                     name, bc->client->name.data,
                     (unsigned long long) ac->requests_per_minute,
                     (unsigned long long) bc->requests_per_minute);
    }

    w = al_limit_wider(ac->max_concurrent, bc->max_concurrent);
    if (w) {
        al_diff_emit(df, w > 0 ? '+' : '-', "llm %s: client %s "
                     "max_concurrent_requests %llu -> %llu (0 = unlimited)",
                     name, bc->client->name.data,
                     (unsigned long long) ac->max_concurrent,
                     (unsigned long long) bc->max_concurrent);
    }

    al_diff_usd(df, name, bc->client->name.data, "usd_per_day",
                ac->cost_per_day, bc->cost_per_day);
    al_diff_usd(df, name, bc->client->name.data, "usd_per_month",
                ac->cost_per_month, bc->cost_per_month);
}


static void
al_diff_usd(al_diff_t *df, const char *name, const char *client,
    const char *field, uint64_t old, uint64_t new)
{
    int   w;
    char  a[AL_LLM_USD_MAX], b[AL_LLM_USD_MAX];

    w = al_limit_wider(old, new);
    if (w == 0) {
        return;
    }

    (void) al_llm_usd_format(old, a, sizeof(a));
    (void) al_llm_usd_format(new, b, sizeof(b));

    al_diff_emit(df, w > 0 ? '+' : '-', "llm %s: client %s %s %s -> %s "
                 "(0 = unlimited)", name, client, field, a, b);
}


/*
 * A lower price lets a dollar budget buy more ('+'), a higher one less;
 * a price added or removed only changes what is logged ('~': a client
 * with a dollar budget needs prices for all its models).
 */

static void
al_diff_llm_prices(al_diff_t *df, const al_llm_t *a, const al_llm_t *b)
{
    size_t                 i, k;
    const char            *f;
    uint64_t               x, y;
    const al_llm_price_t  *pa, *pb;
    char                   sa[AL_LLM_USD_MAX], sb[AL_LLM_USD_MAX];

    for (i = 0; i < b->nprices; i++) {
        pb = &b->prices[i];
        pa = al_llm_price(a, pb->model.data, pb->model.len);

        if (pa == NULL) {
            al_diff_emit(df, '~', "llm %s: price of model %s added",
                         b->name.data, pb->model.data);
            continue;
        }

        for (k = 0; k < 5; k++) {
            f = (k == 0) ? "input" : (k == 1) ? "cached_input"
                : (k == 2) ? "output" : (k == 3) ? "cache_write"
                : "cache_write_1h";
            x = (k == 0) ? pa->input : (k == 1) ? pa->cached_input
                : (k == 2) ? pa->output : (k == 3) ? pa->cache_write
                : pa->cache_write_1h;
            y = (k == 0) ? pb->input : (k == 1) ? pb->cached_input
                : (k == 2) ? pb->output : (k == 3) ? pb->cache_write
                : pb->cache_write_1h;
            if (x == y) {
                continue;
            }

            /* microdollars per million tokens, shown as dollars */
            (void) al_llm_usd_format(x * 1000000, sa, sizeof(sa));
            (void) al_llm_usd_format(y * 1000000, sb, sizeof(sb));

            al_diff_emit(df, y < x ? '+' : '-', "llm %s: model %s %s price "
                         "%s -> %s USD per million tokens", b->name.data,
                         pb->model.data, f, sa, sb);
        }

        al_diff_llm_long(df, b, pa, pb);
    }

    for (i = 0; i < a->nprices; i++) {
        pa = &a->prices[i];

        if (al_llm_price(b, pa->model.data, pa->model.len) == NULL) {
            al_diff_emit(df, '~', "llm %s: price of model %s removed",
                         b->name.data, pa->model.data);
        }
    }
}


/*
 * A model's long_context prices: added or removed, their threshold, and
 * each price, as al_diff_llm_prices() shows the model's own ('-': calls
 * charged more).
 */

static void
al_diff_llm_long(al_diff_t *df, const al_llm_t *b, const al_llm_price_t *pa,
    const al_llm_price_t *pb)
{
    size_t                 k;
    uint64_t               x, y;
    const char            *f;
    const al_llm_price_t  *la, *lb;
    char                   sa[AL_LLM_USD_MAX], sb[AL_LLM_USD_MAX];

    la = pa->long_context;
    lb = pb->long_context;

    if (la == NULL && lb == NULL) {
        return;
    }

    if (la == NULL || lb == NULL) {
        al_diff_emit(df, (la == NULL) ? '-' : '+', "llm %s: model %s "
                     "long_context prices (above %llu input tokens) %s",
                     b->name.data, pb->model.data,
                     (unsigned long long) (la == NULL
                                           ? pb->above_input_tokens
                                           : pa->above_input_tokens),
                     (la == NULL) ? "added" : "removed");
        return;
    }

    if (pa->above_input_tokens != pb->above_input_tokens) {
        al_diff_emit(df, pb->above_input_tokens > pa->above_input_tokens
                         ? '+' : '-',
                     "llm %s: model %s long_context above_input_tokens "
                     "%llu -> %llu", b->name.data, pb->model.data,
                     (unsigned long long) pa->above_input_tokens,
                     (unsigned long long) pb->above_input_tokens);
    }

    for (k = 0; k < 5; k++) {
        f = (k == 0) ? "input" : (k == 1) ? "cached_input"
            : (k == 2) ? "output" : (k == 3) ? "cache_write"
            : "cache_write_1h";
        x = (k == 0) ? la->input : (k == 1) ? la->cached_input
            : (k == 2) ? la->output : (k == 3) ? la->cache_write
            : la->cache_write_1h;
        y = (k == 0) ? lb->input : (k == 1) ? lb->cached_input
            : (k == 2) ? lb->output : (k == 3) ? lb->cache_write
            : lb->cache_write_1h;
        if (x == y) {
            continue;
        }

        (void) al_llm_usd_format(x * 1000000, sa, sizeof(sa));
        (void) al_llm_usd_format(y * 1000000, sb, sizeof(sb));

        al_diff_emit(df, y < x ? '+' : '-', "llm %s: model %s long_context "
                     "%s price %s -> %s USD per million tokens",
                     b->name.data, pb->model.data, f, sa, sb);
    }
}


static const char *
al_diff_kind(al_llm_kind_t kind)
{
    switch (kind) {
    case AL_LLM_OPENAI:
        return "openai";
    case AL_LLM_ANTHROPIC:
        return "anthropic";
    case AL_LLM_AZURE:
        return "azure";
    default:
        return "openai-compatible";
    }
}
