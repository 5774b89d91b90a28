/*
 * The semantic diff: each change that lets through something the old
 * policy refused is counted and printed as a "+ " line; changes that only
 * take something away print "- " lines and count nothing.
 *
 * Every case is the base policy with one substring replaced.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "tap.h"


#define LINES_MAX  32

/* sha256("test") and sha256("other") */
#define TOK1  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define TOK2  "d9298a10d1b0735837dc4bd85dac641b0f3cef27a47e5d53a54f2f3f5b2fcffa"


typedef struct {
    size_t   n;
    char     line[LINES_MAX][1024];
} lines_t;


static const char  base[] =
    "version: 1\n"
    "clients:\n"
    "  agent: { unix_uid: 0 }\n"
    "  worker: { unix_uid: 1001 }\n"
    "  tools: { token_sha256: [\"" TOK1 "\", \"" TOK2 "\"] }\n"
    "  ci: { cidr: 10.20.0.0/16 }\n"
    "secrets:\n"
    "  gh: { sealed: AAAA }\n"
    "  key: { sealed: BBBB }\n"
    "  hmac: { sealed: CCCC }\n"
    "upstreams:\n"
    "  prom: { url: \"http://127.0.0.1:9090\" }\n"
    "routes:\n"
    "  - name: logs\n"
    "    clients: [agent]\n"
    "    match: { method: GET, path: \"/logs/{service}\" }\n"
    "    params: { service: '^[a-z]+$' }\n"
    "    upstream: prom\n"
    "    to: \"/svc/{service}\"\n"
    "    query: { allow: [since, limit], require: [since] }\n"
    "  - name: pr\n"
    "    clients: [agent, worker]\n"
    "    match: { method: POST, path: /pr }\n"
    "    upstream: prom\n"
    "    to: /pulls\n"
    "    body:\n"
    "      max_bytes: 1000\n"
    "      json:\n"
    "        head: '^remediation/.+$'\n"
    "        n: { type: number, required: false }\n"
    "        user: { type: object, fields: { login: { type: string, "
    "required: false } } }\n"
    "        meta: { type: object, additional: true, fields: { id: "
    "{ type: integer } } }\n"
    "    inject: { Authorization: \"Bearer {gh}\" }\n"
    "  - name: upload\n"
    "    clients: [agent]\n"
    "    match: { method: PUT, path: /upload }\n"
    "    upstream: prom\n"
    "    to: /upload\n"
    "    body: { max_bytes: 100 }\n"
    "llm:\n"
    "  - name: openai\n"
    "    prefix: /v1/proxy/openai\n"
    "    provider: openai\n"
    "    upstream: https://api.openai.com/v1\n"
    "    secret: key\n"
    "    models: [gpt-4o-mini]\n"
    "    clients:\n"
    "      agent: { tokens_per_minute: 1000, tokens_per_day: 100000, "
    "max_tokens: 512, over_max_tokens: reject }\n"
    "alerts:\n"
    "  deny: { threshold: 3, window: 60s }\n"
    "  quarantine: { threshold: 20, window: 60s, for: 10m }\n"
    "  sinks:\n"
    "    - webhook: { url: \"http://127.0.0.1:9099/hook\", "
    "hmac_secret: hmac }\n"
    "    - alertmanager: { url: \"http://127.0.0.1:9093\" }\n";


static al_policy_t *parse(const char *name, const char *yaml);
static char *subst(const char *from, const char *to);
static void collect(void *data, const char *line);
static int diff(const char *from, const char *to, lines_t *out);
static int has_line(const lines_t *l, char kind, const char *text);
static int all_kind(const lines_t *l, char kind);
static void grant(const char *name, const char *from, const char *to,
    int grants, const char *text);
static void narrow(const char *name, const char *from, const char *to,
    const char *text);
static void replace(const char *name, const char *from, const char *to,
    const char *added, char rkind, const char *removed);


static al_policy_t  *old;


int
main(void)
{
    lines_t       l;
    al_policy_t  *same;

    old = parse("old", base);
    if (old == NULL) {
        printf("Bail out! the base policy does not load\n");
        return 1;
    }

    /* identical */
    same = parse("same", base);
    l.n = 0;
    tap_is_int(same ? al_policy_diff(old, same, collect, &l) : -1, 0,
               "identical policies: 0 grants");
    tap_is_int(l.n, 0, "identical policies: no lines");
    al_policy_free(same);

    l.n = 0;
    tap_is_int(al_policy_diff(old, old, collect, &l), 0,
               "a policy against itself: 0 grants");

    /* grants: one "+ " line each */
    grant("added route",
          "llm:\n",
          "  - name: deploys\n"
          "    clients: [worker]\n"
          "    match: { method: GET, path: /deploys }\n"
          "    upstream: prom\n"
          "    to: /api/deploys\n"
          "llm:\n",
          1, "route deploys added (GET /deploys -> "
             "http://127.0.0.1:9090/api/deploys)");
    grant("added client to a route",
          "clients: [agent]\n    match: { method: GET",
          "clients: [agent, worker]\n    match: { method: GET",
          1, "route logs: client worker added");
    grant("added method",
          "method: GET, path: \"/logs",
          "method: [GET, HEAD], path: \"/logs",
          1, "route logs: methods GET -> GET,HEAD");
    grant("widened body max",
          "max_bytes: 1000", "max_bytes: 2000",
          1, "route pr: body max_bytes 1000 -> 2000");
    grant("removed required query",
          ", require: [since] }", " }",
          1, "route logs: query parameter since no longer required");
    grant("new query parameter allowed",
          "allow: [since, limit]", "allow: [since, limit, q]",
          1, "route logs: query parameter q allowed");
    grant("removed json field constraint (required field)",
          "        head: '^remediation/.+$'\n", "",
          1, "route pr: body.head no longer checked");
    grant("removed json field pattern",
          "head: '^remediation/.+$'", "head: { type: string }",
          1, "route pr: body.head pattern \"^remediation/.+$\" -> \"\"");
    grant("changed json field pattern",
          "head: '^remediation/.+$'", "head: '^.+$'",
          1, "route pr: body.head pattern");
    grant("json field type changed",
          "n: { type: number", "n: { type: string",
          1, "route pr: body.n type changed");
    grant("json field type any",
          "n: { type: number", "n: { type: any",
          1, "route pr: body.n type changed");
    grant("json field no longer required",
          "id: { type: integer }", "id: { type: integer, required: false }",
          1, "route pr: body.meta.id no longer required");
    grant("additional false -> true",
          "      max_bytes: 1000\n",
          "      max_bytes: 1000\n      additional: true\n",
          1, "route pr: body accepts unlisted fields");
    grant("field added to a closed object",
          "login: { type: string, required: false }",
          "login: { type: string, required: false }, "
          "email: { type: string }",
          1, "route pr: body.user.email field added");
    grant("json no longer checked",
          "      json:\n"
          "        head: '^remediation/.+$'\n"
          "        n: { type: number, required: false }\n"
          "        user: { type: object, fields: { login: { type: string, "
          "required: false } } }\n"
          "        meta: { type: object, additional: true, fields: { id: "
          "{ type: integer } } }\n",
          "      content_type: application/json\n",
          1, "route pr: body no longer checked");
    grant("changed param pattern",
          "service: '^[a-z]+$'", "service: '^[a-z0-9]+$'",
          1, "route logs: param service pattern ^[a-z]+$ -> ^[a-z0-9]+$");
    grant("new inject header",
          "inject: { Authorization: \"Bearer {gh}\" }",
          "inject: { Authorization: \"Bearer {gh}\", X-Extra: \"{key}\" }",
          1, "route pr: injects X-Extra: {key}");
    grant("changed inject template",
          "\"Bearer {gh}\"", "\"Bearer {key}\"",
          1, "route pr: injects Authorization: Bearer {gh} -> Bearer {key}");
    grant("cookies allowed",
          "    to: /upload\n", "    to: /upload\n    cookies: true\n",
          1, "route upload: cookies allowed");
    grant("answers no longer scrubbed",
          "    to: /upload\n", "    to: /upload\n    scrub: false\n",
          1, "route upload: answers not scrubbed (scrub: false)");
    grant("upstream url changed",
          "http://127.0.0.1:9090", "http://127.0.0.1:9091",
          -1, "upstream prom: url http://127.0.0.1:9090 -> "
              "http://127.0.0.1:9091");
    grant("new identity for a client",
          "worker: { unix_uid: 1001 }", "worker: { unix_uid: [1001, 1002] }",
          1, "client worker: new unix_uid 1002");
    grant("raised llm budget",
          "tokens_per_minute: 1000", "tokens_per_minute: 2000",
          1, "llm openai: client agent tokens_per_minute 1000 -> 2000");
    grant("removed llm budget (0 = unlimited)",
          "tokens_per_day: 100000, ", "",
          1, "llm openai: client agent tokens_per_day 100000 -> 0 "
             "(0 = unlimited)");
    /* the default cap, unset, is max_tokens: it is raised with it */
    grant("raised max_tokens",
          "max_tokens: 512", "max_tokens: 4096",
          2, "llm openai: client agent max_tokens 512 -> 4096");
    grant("reject -> clamp",
          "over_max_tokens: reject", "over_max_tokens: clamp",
          1, "llm openai: client agent over_max_tokens reject -> clamp");
    grant("new model",
          "models: [gpt-4o-mini]", "models: [gpt-4o-mini, gpt-4o]",
          1, "llm openai: model gpt-4o added");
    grant("request member allowed",
          "models: [gpt-4o-mini]",
          "models: [gpt-4o-mini]\n    allow_members: [metadata]",
          1, "llm openai: request member metadata allowed");
    grant("new llm client",
          "over_max_tokens: reject }\n",
          "over_max_tokens: reject }\n      worker: {}\n",
          1, "llm openai: client worker added");
    grant("weaker deny threshold",
          "deny: { threshold: 3,", "deny: { threshold: 5,",
          1, "alerts.deny weakened: 3 in 60s -> 5 in 60s");
    grant("shorter deny window",
          "deny: { threshold: 3, window: 60s }",
          "deny: { threshold: 3, window: 30s }",
          1, "alerts.deny weakened");
    grant("shorter quarantine",
          "for: 10m", "for: 1m",
          1, "alerts.quarantine weakened");
    grant("quarantine removed",
          "  quarantine: { threshold: 20, window: 60s, for: 10m }\n", "",
          1, "alerts.quarantine removed");
    grant("removed sink",
          "    - alertmanager: { url: \"http://127.0.0.1:9093\" }\n", "",
          1, "alert sink http://127.0.0.1:9093 removed");

    /*
     * a replaced identity: a "+ " line for the new one and a "- " line
     * for the old one, as for a route's clients or a provider's models;
     * a token is named by neither its value nor its hash.  The old uid or
     * cidr is a "+ " line too: tools has tokens, and a request with one
     * from that uid or address, refused as naming two clients, is now
     * tools'
     */
    replace("replaced token",
            "\"" TOK2 "\"] }", "\"0f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b"
            "822cd15d6c15b0f00a08\"] }",
            "client tools: new token", '-', "client tools: token removed");
    replace("replaced unix_uid",
            "worker: { unix_uid: 1001 }", "worker: { unix_uid: 1002 }",
            "client worker: new unix_uid 1002", '+',
            "client worker: unix_uid 1001 removed: a request that also "
            "named another client, refused as ambiguous, is now that "
            "client's");
    replace("replaced cidr",
            "cidr: 10.20.0.0/16", "cidr: 10.30.0.0/16",
            "client ci: new cidr", '+', "client ci: cidr removed: a request");

    /* a client removed ends the same refusals */
    grant("removed client whose cidr a token could be shown from",
          "  ci: { cidr: 10.20.0.0/16 }\n", "", 1,
          "client ci removed: a request that also named another client, "
          "refused as ambiguous, is now that client's");

    /* narrowing: "- " lines only, nothing counted */
    narrow("removed route",
           "  - name: upload\n"
           "    clients: [agent]\n"
           "    match: { method: PUT, path: /upload }\n"
           "    upstream: prom\n"
           "    to: /upload\n"
           "    body: { max_bytes: 100 }\n", "",
           "route upload removed (PUT /upload)");
    narrow("removed client from a route",
           "clients: [agent, worker]", "clients: [agent]",
           "route pr: client worker removed");
    narrow("removed token",
           "[\"" TOK1 "\", \"" TOK2 "\"]", "\"" TOK1 "\"",
           "client tools: token removed");
    narrow("lower body max",
           "max_bytes: 1000", "max_bytes: 10",
           "route pr: body max_bytes 1000 -> 10");
    narrow("new required query parameter",
           "require: [since]", "require: [since, limit]",
           "route logs: query parameter limit now required");
    narrow("query parameter no longer allowed",
           "allow: [since, limit]", "allow: [since]",
           "route logs: query parameter limit no longer allowed");
    narrow("content type and json set on a free body",
           "body: { max_bytes: 100 }",
           "body: { max_bytes: 100, json: { a: '^x$' } }",
           "route upload: body now checked");
    narrow("json field type narrowed",
           "n: { type: number", "n: { type: integer",
           "route pr: body.n type changed");
    narrow("field constrained inside an open object",
           "id: { type: integer }", "id: { type: integer }, tag: '^t$'",
           "route pr: body.meta.tag field added");
    narrow("optional field dropped from a closed object",
           "fields: { login: { type: string, required: false } }",
           "fields: {}",
           "route pr: body.user.login no longer checked");
    narrow("lower llm budget",
           "tokens_per_minute: 1000", "tokens_per_minute: 10",
           "llm openai: client agent tokens_per_minute 1000 -> 10");
    narrow("stricter deny threshold",
           "deny: { threshold: 3,", "deny: { threshold: 2,",
           "alerts.deny tightened");
    narrow("removed llm provider",
           "llm:\n"
           "  - name: openai\n"
           "    prefix: /v1/proxy/openai\n"
           "    provider: openai\n"
           "    upstream: https://api.openai.com/v1\n"
           "    secret: key\n"
           "    models: [gpt-4o-mini]\n"
           "    clients:\n"
           "      agent: { tokens_per_minute: 1000, tokens_per_day: 100000, "
           "max_tokens: 512, over_max_tokens: reject }\n", "",
           "llm openai removed");
    narrow("added sink",
           "  sinks:\n",
           "  sinks:\n    - alertmanager: { url: \"http://10.0.0.1:9093\" }\n",
           "alert sink http://10.0.0.1:9093 added");

    /*
     * a webhook's second key (a change of secret): whoever holds it can
     * sign alerts, a grant; taken away at the end of the change, not one
     */
    grant("a second webhook key",
          "hmac_secret: hmac }", "hmac_secret: hmac, hmac_secret_also: key }",
          1, "alert sink http://127.0.0.1:9099/hook: hmac_secret_also - -> "
          "key");
    {
        char         *yaml;
        al_policy_t  *with;

        yaml = subst("hmac_secret: hmac }",
                     "hmac_secret: hmac, hmac_secret_also: key }");
        with = (yaml == NULL) ? NULL : parse("with", yaml);
        free(yaml);

        l.n = 0;
        tap_is_int(with ? al_policy_diff(with, old, collect, &l) : -1, 0,
                   "the second webhook key removed: 0 grants");
        tap_ok(l.n == 1 && has_line(&l, '-', "alert sink "
                                    "http://127.0.0.1:9099/hook: "
                                    "hmac_secret_also key -> -"),
               "the second webhook key removed: \"- ... hmac_secret_also "
               "key -> -\"");
        al_policy_free(with);
    }

    al_policy_free(old);

    return tap_done();
}


static al_policy_t *
parse(const char *name, const char *yaml)
{
    al_error_t    err;
    al_policy_t  *p;

    p = al_policy_parse(name, yaml, strlen(yaml), NULL, &err);
    if (p == NULL) {
        printf("# %s:%u:%u: %s\n", err.file, err.line, err.column, err.msg);
    }

    return p;
}


/* the base policy with "from", which must occur once, replaced by "to" */

static char *
subst(const char *from, const char *to)
{
    char        *out;
    size_t       flen, tlen, blen;
    const char  *at;

    at = strstr(base, from);
    if (at == NULL || strstr(at + 1, from) != NULL) {
        return NULL;
    }

    flen = strlen(from);
    tlen = strlen(to);
    blen = strlen(base);

    out = malloc(blen - flen + tlen + 1);
    if (out == NULL) {
        return NULL;
    }

    memcpy(out, base, (size_t) (at - base));
    memcpy(out + (at - base), to, tlen);
    memcpy(out + (at - base) + tlen, at + flen,
           blen - (size_t) (at - base) - flen + 1);

    return out;
}


static void
collect(void *data, const char *line)
{
    lines_t  *l = data;

    printf("# %s\n", line);

    if (l->n < LINES_MAX) {
        snprintf(l->line[l->n++], sizeof(l->line[0]), "%s", line);
    }
}


/* the number of grants, or -2 when a policy does not load */

static int
diff(const char *from, const char *to, lines_t *out)
{
    int           grants;
    char         *yaml;
    al_policy_t  *p;

    out->n = 0;

    yaml = subst(from, to);
    if (yaml == NULL) {
        printf("# \"%s\" is not in the base policy exactly once\n", from);
        return -2;
    }

    p = parse("new", yaml);
    free(yaml);

    if (p == NULL) {
        return -2;
    }

    grants = al_policy_diff(old, p, collect, out);

    al_policy_free(p);

    return grants;
}


static int
has_line(const lines_t *l, char kind, const char *text)
{
    size_t  i;

    for (i = 0; i < l->n; i++) {
        if (l->line[i][0] == kind && l->line[i][1] == ' '
            && strstr(l->line[i] + 2, text) != NULL)
        {
            return 1;
        }
    }

    return 0;
}


static int
all_kind(const lines_t *l, char kind)
{
    size_t  i;

    for (i = 0; i < l->n; i++) {
        if (l->line[i][0] != kind && l->line[i][0] != '~') {
            return 0;
        }
    }

    return 1;
}


/*
 * Two assertions: the number of grants (grants < 0: at least -grants),
 * and a "+ " line with text.
 */

static void
grant(const char *name, const char *from, const char *to, int grants,
    const char *text)
{
    int      n;
    char     label[256];
    lines_t  l;

    n = diff(from, to, &l);

    snprintf(label, sizeof(label), "%s: counted as a grant", name);
    if (grants > 0) {
        tap_is_int(n, grants, label);

    } else {
        tap_ok(n >= -grants, label);
    }

    snprintf(label, sizeof(label), "%s: \"+ %s\"", name, text);
    tap_ok(has_line(&l, '+', text), label);
}


/* Two assertions: 0 grants, and a "- " line with text (or any "- "). */

static void
narrow(const char *name, const char *from, const char *to, const char *text)
{
    int      n;
    char     label[256];
    lines_t  l;

    n = diff(from, to, &l);

    snprintf(label, sizeof(label), "%s: 0 grants", name);
    tap_is_int(n, 0, label);

    snprintf(label, sizeof(label), "%s: \"- %s\"", name,
             text ? text : "...");
    tap_ok(l.n > 0 && all_kind(&l, '-')
           && (text == NULL || has_line(&l, '-', text)), label);
}


/*
 * Four assertions: one grant (two when the removed line is one too), a
 * "+ " line with added, a line of kind rkind with removed, and no line
 * that shows a token or its hash.
 */

static void
replace(const char *name, const char *from, const char *to,
    const char *added, char rkind, const char *removed)
{
    int      n;
    char     label[256];
    size_t   i;
    lines_t  l;

    n = diff(from, to, &l);

    snprintf(label, sizeof(label), "%s: counted as a grant", name);
    tap_is_int(n, rkind == '+' ? 2 : 1, label);

    snprintf(label, sizeof(label), "%s: \"+ %s\"", name, added);
    tap_ok(has_line(&l, '+', added), label);

    snprintf(label, sizeof(label), "%s: \"%c %s\"", name, rkind, removed);
    tap_ok(has_line(&l, rkind, removed), label);

    for (i = 0; i < l.n; i++) {
        if (strstr(l.line[i], "9f86d0") != NULL
            || strstr(l.line[i], "0f86d0") != NULL
            || strstr(l.line[i], "d9298a") != NULL)
        {
            break;
        }
    }

    snprintf(label, sizeof(label), "%s: no hash shown", name);
    tap_ok(i == l.n, label);
}
