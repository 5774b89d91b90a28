/*
 * The policy loader: a full schema v1 policy compiles into the expected
 * tables, and every class of mistake is refused with the file, line and
 * column of the node at fault and a message that says what to do.
 *
 * Error cases mark the place the error must point at with a backtick,
 * which is removed before the text is parsed.  Unix identities use uid 0
 * and the user "root" so the tests run on any machine.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include "airlock.h"
#include "al_internal.h"
#include "al_llm.h"
#include "tap.h"
#include "refuse.h"


/* sha256("test") */
#define TOK  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

#define HEAD                                                                 \
    "version: 1\n"                                                           \
    "clients:\n"                                                             \
    "  agent: { unix_uid: 0 }\n"                                             \
    "  tools: { token_sha256: \"" TOK "\" }\n"

#define SECRETS                                                              \
    "secrets:\n"                                                             \
    "  github_pr: { sealed: \"AAAA\" }\n"                                    \
    "  openai_key: { file: /run/credentials/airlock.service/openai_key }\n"

#define UPS                                                                  \
    "upstreams:\n"                                                           \
    "  prom: { url: \"http://127.0.0.1:9090\" }\n"

#define ALERTS                                                               \
    "alerts:\n"                                                              \
    "  deny: { threshold: 3, window: 60s }\n"

/* one route; the caller appends its own keys */
#define ROUTE                                                                \
    "routes:\n"                                                              \
    "  - name: q\n"                                                          \
    "    clients: [agent]\n"                                                 \
    "    match: { method: GET, path: /q }\n"                                 \
    "    upstream: prom\n"                                                   \
    "    to: /api/q\n"

/* a checked query, for ROUTE */
#define QUERY_PATTERN                                                        \
    "    query: { allow: [name], patterns: { name: '^[A-Za-z]+$' } }\n"

/* a route with two params, for their params: entries */
#define DRIVE_ROUTE                                                          \
    "routes:\n  - name: q\n    clients: [agent]\n"                           \
    "    match: { method: GET, path: \"/v/{id}/{range}\" }\n"                \
    "    upstream: prom\n    to: \"/v/{id}/{range}\"\n"

#define LLM                                                                  \
    "llm:\n"                                                                 \
    "  - name: openai\n"                                                     \
    "    prefix: /v1/proxy/openai\n"                                         \
    "    provider: openai\n"                                                 \
    "    upstream: https://api.openai.com/v1\n"                              \
    "    secret: openai_key\n"                                               \
    "    models: [gpt-4o-mini]\n"


static al_policy_t *load(const char *yaml, al_error_t *err);
static int str_is(const al_str_t *s, const char *want);
static void test_full(void);
static void test_syntax(void);
static void test_types(void);
static void test_clients(void);
static void test_secrets(void);
static void test_upstreams(void);
static void test_routes(void);
static void test_query_body(void);
static void test_json_names_apart(void);
static void test_inject(void);
static void loads(const char *name, const char *yaml);
static void test_llm(void);
static void test_alerts(void);
static void test_open_secrets(void);
static void test_many(void);
static void test_changed_file(void);
static void test_path_trusted(void);
static int write_file(const char *path, const char *text, int flags);


static const char  full[] =
    "# every top-level key and most fields\n"
    "version: 1\n"
    "clients:\n"
    "  agent: { unix_uid: root }\n"
    "  worker: { unix_uid: [1001, 1002], description: sandbox runner }\n"
    "  ops: { unix_gid: 0 }\n"
    "  net: { cidr: [10.0.0.0/8, \"fd00::/8\"] }\n"
    "  tools: { token_sha256: \"" TOK "\" }\n"
    "secrets:\n"
    "  prom_basic: { sealed: \"c2VhbGVk\" }\n"
    "  github_pr: { file: /run/credentials/airlock.service/github_pr }\n"
    "  openai_key: { sealed: \"AAAA\", description: the API key }\n"
    "  alert_hmac: { file: /run/credentials/airlock.service/alert_hmac }\n"
    "upstreams:\n"
    "  prometheus: { url: \"http://127.0.0.1:9090/\" }\n"
    "  github: { url: \"https://api.github.com:8443/base/\" }\n"
    "routes:\n"
    "  - name: prometheus-query\n"
    "    description: instant queries\n"
    "    clients: [agent, worker, tools]\n"
    "    match: { method: [GET, HEAD], path: /prometheus/query }\n"
    "    upstream: prometheus\n"
    "    to: /api/v1/query\n"
    "    query:\n"
    "      allow: [query, time]\n"
    "      require: [query]\n"
    "      patterns: { time: '^[0-9]+$' }\n"
    "    inject: { Authorization: \"Basic {prom_basic|base64}\" }\n"
    "  - name: logs\n"
    "    clients: agent\n"
    "    match: { method: GET, path: \"/logs/{service}/{day}\" }\n"
    "    params: { service: '^[a-z0-9-]{1,63}$', day: '^[0-9]{8}$' }\n"
    "    upstream: prometheus\n"
    "    to: \"/svc/{day}/{service}\"\n"
    "    cookies: true\n"
    "  - name: github-pull-request\n"
    "    clients: [agent]\n"
    "    match: { method: POST, path: /github/pull-request }\n"
    "    upstream: github\n"
    "    to: /repos/acme/infra/pulls\n"
    "    body:\n"
    "      max_bytes: 65536\n"
    "      json:\n"
    "        head: '^remediation/[A-Za-z0-9._/-]+$'\n"
    "        draft: { type: boolean, required: false }\n"
    "        meta: { type: object }\n"
    "        user:\n"
    "          type: object\n"
    "          fields:\n"
    "            login: { type: string, pattern: '^[a-z]+$' }\n"
    "          additional: true\n"
    "    inject:\n"
    "      Authorization: \"Bearer {github_pr}\"\n"
    "      Accept: application/vnd.github+json\n"
    "llm:\n"
    "  - name: openai\n"
    "    prefix: /v1/proxy/openai\n"
    "    provider: openai\n"
    "    upstream: https://api.openai.com/v1\n"
    "    secret: openai_key\n"
    "    models: [gpt-4o-mini, gpt-4o]\n"
    "    max_body_bytes: 1048576\n"
    "    clients:\n"
    "      agent:\n"
    "        tokens_per_minute: 20000\n"
    "        tokens_per_day: 2000000\n"
    "        max_tokens: 4096\n"
    "        over_max_tokens: clamp\n"
    "      worker:\n"
    "        models: [gpt-4o-mini]\n"
    "        max_tokens: 1024\n"
    "        over_max_tokens: reject\n"
    "  - name: local\n"
    "    prefix: /v1/proxy/ollama\n"
    "    provider: openai-compatible\n"
    "    upstream: prometheus\n"
    "    secret: openai_key\n"
    "    models: llama3\n"
    "    include_usage: false\n"
    "    clients:\n"
    "      tools: {}\n"
    "  - name: claude\n"
    "    prefix: /v1/proxy/anthropic\n"
    "    provider: anthropic\n"
    "    upstream: https://api.anthropic.com\n"
    "    secret: openai_key\n"
    "    models: [claude-sonnet-4]\n"
    "    clients: { agent: { tokens_per_day: 100000 } }\n"
    "alerts:\n"
    "  deny: { threshold: 3, window: 60s }\n"
    "  quarantine: { threshold: 20, window: 1m, for: 10m }\n"
    "  sinks:\n"
    "    - webhook: { url: \"http://127.0.0.1:9099/airlock\",\n"
    "                 hmac_secret: alert_hmac }\n"
    "    - alertmanager: { url: \"http://127.0.0.1:9093\" }\n";


int
main(void)
{
    test_full();
    test_syntax();
    test_types();
    test_clients();
    test_secrets();
    test_upstreams();
    test_routes();
    test_query_body();
    test_inject();
    test_llm();
    test_alerts();
    test_open_secrets();
    test_many();
    test_changed_file();
    test_path_trusted();

    return tap_done();
}


static al_policy_t *
load(const char *yaml, al_error_t *err)
{
    memset(err, 0, sizeof(al_error_t));

    return al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, err);
}


static int
str_is(const al_str_t *s, const char *want)
{
    return s->data != NULL && s->len == strlen(want)
           && memcmp(s->data, want, s->len) == 0 && s->data[s->len] == '\0';
}


static void
test_full(void)
{
    const al_llm_t     *l;
    const al_route_t   *r;
    const al_client_t  *c;
    al_error_t          err;
    al_policy_t        *p;

    p = load(full, &err);
    if (!tap_ok(p != NULL, "full policy loads")) {
        tap_diag("error: ", err.msg);
        exit(tap_done());
    }

    tap_is_int(p->version, 1, "version 1");
    tap_is_int(p->nclients, 5, "5 clients");
    tap_is_int(p->nsecrets, 4, "4 secrets");
    tap_is_int(p->nupstreams, 2, "2 upstreams");
    tap_is_int(p->nroutes, 3, "3 routes");
    tap_is_int(p->nllm, 3, "3 llm providers");
    tap_is_int(p->nsinks, 2, "2 sinks");
    tap_ok(!p->secrets_open, "no keyring: secrets stay closed");

    /* clients, in file order */
    c = al_policy_client(p, "agent", 5);
    tap_ok(c == &p->clients[0] && c->nuids == 1 && c->uids[0] == 0,
           "agent: user root is uid 0");
    c = al_policy_client(p, "worker", 6);
    tap_ok(c != NULL && c->nuids == 2 && c->uids[1] == 1002,
           "worker: list of numeric uids");
    c = al_policy_client(p, "ops", 3);
    tap_ok(c != NULL && c->ngids == 1 && c->gids[0] == 0 && c->index == 2,
           "ops: gid 0, index 2");
    c = al_policy_client(p, "net", 3);
    tap_ok(c != NULL && c->ncidrs == 2 && c->cidrs[0].prefix == 104
           && c->cidrs[0].addr[10] == 0xff && c->cidrs[0].addr[12] == 10,
           "net: IPv4 cidr stored as ::ffff:10.0.0.0/104");
    tap_ok(c != NULL && c->cidrs[1].prefix == 8
           && c->cidrs[1].addr[0] == 0xfd, "net: IPv6 cidr fd00::/8");
    c = al_policy_client(p, "tools", 5);
    tap_ok(c != NULL && c->ntokens == 1 && c->tokens[0][0] == 0x9f
           && c->tokens[0][31] == 0x08, "tools: token hash decoded");
    tap_ok(al_policy_client(p, "nobody", 6) == NULL, "unknown client: NULL");

    /* secrets */
    tap_ok(p->secrets[0].sealed && str_is(&p->secrets[0].source, "c2VhbGVk"),
           "sealed secret keeps its box");
    tap_ok(!p->secrets[1].sealed && str_is(&p->secrets[1].source,
           "/run/credentials/airlock.service/github_pr"),
           "file secret keeps its path");
    tap_ok(p->secrets[1].value == NULL, "file secret not read without keys");

    /* upstreams */
    tap_ok(str_is(&p->upstreams[0].url, "http://127.0.0.1:9090"),
           "upstream url: trailing slash dropped");
    tap_ok(p->upstreams[0].port == 9090 && !p->upstreams[0].https
           && str_is(&p->upstreams[0].host, "127.0.0.1:9090")
           && str_is(&p->upstreams[0].hostname, "127.0.0.1")
           && p->upstreams[0].base_path.len == 0,
           "upstream http: host, port, no base path");
    tap_ok(p->upstreams[1].https && p->upstreams[1].port == 8443
           && str_is(&p->upstreams[1].base_path, "/base")
           && str_is(&p->upstreams[1].url, "https://api.github.com:8443/base"),
           "upstream https with port and base path");

    /* route 1: methods, query, inject */
    r = al_policy_route(p, "prometheus-query", 16);
    tap_ok(r == &p->routes[0], "route found by name");
    tap_is_int(r->methods, AL_METHOD_GET | AL_METHOD_HEAD,
               "methods [GET, HEAD] bitmask");
    tap_ok(r->nsegs == 2 && str_is(&r->segs[0], "prometheus")
           && !r->seg_is_param[1], "literal path segments");
    tap_ok(r->client_ok[0] && r->client_ok[1] && !r->client_ok[2]
           && !r->client_ok[3] && r->client_ok[4], "client_ok per client");
    tap_is_int(r->nquery_allow, 2, "query allow: 2 names");
    tap_ok(r->query_required[0] && !r->query_required[1],
           "query require marks query only");
    tap_ok(r->query_patterns[0].re == NULL && r->query_patterns[1].re != NULL
           && str_is(&r->query_patterns[1].pattern, "^[0-9]+$"),
           "query pattern for time only");
    tap_ok(r->query_checked, "query_checked: a query parameter has a "
           "pattern");
    tap_ok(r->ninject == 1 && str_is(&r->inject[0].name, "Authorization")
           && str_is(&r->inject[0].tmpl, "Basic {prom_basic|base64}")
           && r->inject[0].value == NULL, "inject template kept, not rendered");
    tap_ok(!r->has_body && r->json == NULL && !r->allow_cookies,
           "no body, no cookies by default");
    tap_ok(r->upstream == &p->upstreams[0], "route upstream resolved");

    /* route 2: params and the to template */
    r = &p->routes[1];
    tap_ok(r->nparams == 2 && str_is(&r->params[0].name, "service")
           && str_is(&r->params[1].name, "day") && r->params[1].re != NULL,
           "path params in path order, with patterns");
    tap_ok(r->seg_is_param[1] && r->seg_is_param[2]
           && str_is(&r->segs[2], "day"), "param segments carry the name");
    /* "/svc/{day}/{service}": adjacent literal text is one part */
    tap_is_int(r->nto_parts, 4, "to: 4 parts");
    tap_ok(r->to_param[0] == -1 && r->to_parts[0].len == 5
           && memcmp(r->to_parts[0].data, "/svc/", 5) == 0
           && r->to_param[1] == 1 && r->to_param[2] == -1
           && r->to_param[3] == 0,
           "to: literal, then {day} (param 1), then {service} (param 0)");
    tap_ok(r->allow_cookies, "cookies: true");
    tap_ok(r->client_ok[0] && !r->client_ok[1], "clients: a single name");
    tap_ok(!r->query_checked, "query_checked: not without query patterns");

    /* route 3: body and json rules */
    r = &p->routes[2];
    tap_ok(r->has_body && r->body_max == 65536, "body max_bytes");
    tap_ok(str_is(&r->content_type, "application/json"),
           "json implies content_type application/json");
    tap_ok(r->json != NULL && r->json->type == AL_JSON_OBJECT
           && r->json->nmembers == 4 && !r->json->additional,
           "json root: closed object with 4 fields");
    tap_ok(r->json->members[0].type == AL_JSON_STRING
           && r->json->members[0].required && r->json->members[0].re != NULL
           && str_is(&r->json->members[0].name, "head"),
           "scalar shorthand: required string with pattern");
    tap_ok(r->json->members[1].type == AL_JSON_BOOLEAN
           && !r->json->members[1].required, "draft: optional boolean");
    tap_ok(r->json->members[2].type == AL_JSON_OBJECT
           && r->json->members[2].additional
           && r->json->members[2].nmembers == 0,
           "object without fields is opaque");
    tap_ok(r->json->members[3].nmembers == 1 && r->json->members[3].additional
           && r->json->members[3].members[0].re != NULL
           && str_is(&r->json->members[3].members[0].pattern, "^[a-z]+$"),
           "nested fields, additional: true");
    tap_ok(r->ninject == 2 && str_is(&r->inject[1].tmpl,
                                     "application/vnd.github+json"),
           "inject: a literal header value");

    /* llm */
    l = &p->llm[0];
    tap_ok(l->kind == AL_LLM_OPENAI && str_is(&l->prefix, "/v1/proxy/openai")
           && l->upstream.https && str_is(&l->upstream.base_path, "/v1"),
           "llm openai: prefix and upstream URL");
    tap_ok(l->secret == &p->secrets[2] && l->nmodels == 2,
           "llm: secret and models");
    tap_ok(l->include_usage && l->body_max == 1048576,
           "llm: include_usage default on, max_body_bytes");
    tap_ok(l->nclients == 2 && l->clients[0].client == &p->clients[0]
           && l->clients[0].tokens_per_minute == 20000
           && l->clients[0].tokens_per_day == 2000000
           && l->clients[0].max_tokens == 4096 && l->clients[0].clamp
           && l->clients[0].models == NULL,
           "llm client agent: budgets, clamp, every model");
    tap_ok(l->clients[1].nmodels == 1 && !l->clients[1].clamp
           && l->clients[1].max_tokens == 1024
           && l->clients[1].tokens_per_minute == 0,
           "llm client worker: one model, reject, no budget");
    l = &p->llm[1];
    tap_ok(l->kind == AL_LLM_OPENAI_COMPATIBLE && !l->include_usage
           && l->body_max == 4 * 1024 * 1024 && l->nmodels == 1
           && str_is(&l->upstream.url, "http://127.0.0.1:9090"),
           "llm by upstream name, include_usage false, default body max");
    tap_ok(p->llm[2].kind == AL_LLM_ANTHROPIC
           && p->llm[2].clients[0].tokens_per_day == 100000,
           "llm anthropic");

    /* alerts */
    tap_ok(p->deny.threshold == 3 && p->deny.window == 60,
           "deny: 3 in 60s");
    tap_ok(p->quarantine.threshold == 20 && p->quarantine.window == 60
           && p->quarantine.duration == 600,
           "quarantine: 20 in 1m for 10m");
    tap_ok(p->sinks[0].kind == AL_SINK_WEBHOOK
           && p->sinks[0].hmac == &p->secrets[3]
           && str_is(&p->sinks[0].url, "http://127.0.0.1:9099/airlock"),
           "webhook sink with hmac secret");
    tap_ok(p->sinks[1].kind == AL_SINK_ALERTMANAGER
           && p->sinks[1].hmac == NULL, "alertmanager sink");

    al_policy_free(p);

    /* the smallest policy: version, clients, alerts */
    p = load(HEAD ALERTS, &err);
    tap_ok(p != NULL && p->nroutes == 0 && p->nllm == 0
           && p->quarantine.threshold == 0, "minimal policy loads");
    al_policy_free(p);
}


static void
test_syntax(void)
{
    char         buf[512];
    al_error_t   err;
    al_policy_t *p;

    refuse("invalid YAML", HEAD "routes: [ { name: q }\n`" ALERTS,
           "invalid YAML");
    refuse("tab indentation", "version: 1\nclients:\n`\tagent: 1\n",
           "invalid YAML");
    refuse("empty file", "`", "the policy file is empty");
    refuse("only comments", "`# nothing here\n", "empty");
    refuse("YAML anchor",
           "version: 1\nclients:\n  agent: `&a { unix_uid: 0 }\n" ALERTS,
           "YAML anchors (&a) are not supported");
    refuse("YAML alias",
           "version: 1\nclients:\n  agent: `*a\n" ALERTS,
           "aliases");
    refuse("YAML tag", "version: `!!int 1\n", "YAML tags");
    refuse("two documents", HEAD ALERTS "`---\nversion: 1\n",
           "only one YAML document");
    refuse("duplicate key", HEAD ALERTS "`version: 1\n",
           "duplicate key \"version\" (first given at line 1)");
    refuse("non-scalar key", "version: 1\n`[a]: 1\n",
           "mapping keys must be plain names");
    refuse("NUL by escape",
           "version: 1\nclients:\n  agent: { unix_uid: `\"nobody\\0-x\" }\n"
           ALERTS, "a NUL character");
    refuse("NUL by \\x00 escape, in a key",
           "version: 1\nclients:\n  `\"ag\\x00ent\": { unix_uid: 0 }\n"
           ALERTS, "a NUL character");
    refuse("NUL by \\u0000 escape",
           "version: 1\nclients:\n  agent: { description: `\"\\u0000\" }\n"
           ALERTS, "a NUL character");

    /* bytes libyaml's reader refuses: placed where they are, as others */
    refuse("a control character",
           "version: 1\nclients:\n  agent: { unix_uid: 0, description: "
           "\"ab`\x01c\" }\n" ALERTS, "control characters are not allowed");
    refuse("invalid UTF-8",
           "version: 1\nclients:\n  agent: { unix_uid: 0 }\n"
           "  other: { unix_uid: 1, description: x`\xff }\n" ALERTS,
           "invalid leading UTF-8 octet");

    /* a byte order mark may begin a YAML stream (editors on Windows
       write one): it is no character of the first line */
    p = load("\xef\xbb\xbf" HEAD ALERTS, &err);
    if (!tap_ok(p != NULL && p->nclients == 2,
                "a policy after a byte order mark loads")) {
        tap_diag("error: ", err.msg);
    }
    al_policy_free(p);
    p = load("\xef\xbb\xbfversion: 1\nclients: { agent: { unix_uid: 0, "
             "x: 1 } }\n" ALERTS, &err);
    tap_ok(p == NULL && err.line == 2 && err.column == 34,
           "after a byte order mark, errors are placed as without it");

    p = load("version: 1\n  bad\n", &err);
    tap_ok(p == NULL && al_error_format(&err, buf, sizeof(buf)) > 0
           && strncmp(buf, "policy.yaml:", 12) == 0,
           "al_error_format: file:line:column: message");

    p = al_policy_parse("policy.yaml", "version: 1\0", 11, NULL, &err);
    tap_ok(p == NULL && strstr(err.msg, "NUL") != NULL, "NUL byte refused");
}


static void
test_types(void)
{
    refuse("unknown key with suggestion",
           "version: 1\n`clinets:\n  agent: { unix_uid: 0 }\n" ALERTS,
           "unknown key \"clinets\" in the policy (did you mean "
           "\"clients\"?)");
    refuse("unknown key without suggestion",
           HEAD ALERTS "`frobnicate: 1\n",
           "expected one of: version, clients, secrets, upstreams, routes, "
           "llm, alerts");
    refuse("list where a mapping is expected",
           "version: 1\nclients: `[agent]\n" ALERTS,
           "clients must be a mapping, found a list");
    refuse("mapping where a scalar is expected",
           HEAD UPS ROUTE "    cookies: `{ a: 1 }\n" ALERTS,
           "cookies must be a scalar, found a mapping");
    refuse("routes not a list", HEAD UPS "routes: `{ q: 1 }\n" ALERTS,
           "routes must be a list");
    refuse("policy not a mapping", "`- version: 1\n",
           "the policy must be a mapping");
    refuse("missing required key", "`version: 1\n" ALERTS,
           "the policy is missing the required key \"clients\"");
    refuse("missing alerts", "`" HEAD, "missing the required key \"alerts\"");
    refuse("version 2", "version: `2\n", "unsupported policy version 2");
    refuse("version empty", "version:` \nclients: {}\n", "version is empty");
    refuse("bad number", HEAD "alerts:\n  deny: { threshold: `3x, "
           "window: 60s }\n", "threshold must be a whole number");
    refuse("quoted number", HEAD "alerts:\n  deny: { threshold: `\"3\", "
           "window: 60s }\n", "threshold must be a whole number");
    refuse("leading zero", HEAD "alerts:\n  deny: { threshold: `010, "
           "window: 60s }\n", "threshold must be written without leading "
           "zeros, found \"010\"");
    refuse("number out of range", HEAD "alerts:\n  deny: { threshold: `0, "
           "window: 60s }\n", "threshold must be between 1 and 1000000");
    refuse("bool yes", HEAD UPS ROUTE "    cookies: `yes\n" ALERTS,
           "cookies must be true or false, found \"yes\"");
    refuse("bool quoted", HEAD UPS ROUTE "    cookies: `\"true\"\n" ALERTS,
           "cookies must be true or false");
    refuse("duration without unit", HEAD "alerts:\n  deny: { threshold: 3, "
           "window: `60 }\n", "window must be a duration such as 30s");
    refuse("duration unknown unit", HEAD "alerts:\n  deny: { threshold: 3, "
           "window: `5w }\n", "must be a duration");
    refuse("zero duration", HEAD "alerts:\n  deny: { threshold: 3, "
           "window: `0s }\n", "window must be between 1s and 366d");
    refuse("name with bad characters",
           "version: 1\nclients:\n  `\"bad name!\": { unix_uid: 0 }\n"
           ALERTS, "client name \"bad name!\" is not a valid name");
    refuse("name starting with '-'",
           HEAD UPS "routes:\n  - name: `-q\n" ALERTS,
           "route name \"-q\" is not a valid name");
}


static void
test_clients(void)
{
    refuse("unknown client in route",
           HEAD UPS "routes:\n  - name: q\n    clients: [`agnet]\n"
           "    match: { method: GET, path: /q }\n" ALERTS,
           "unknown client \"agnet\" (did you mean \"agent\"?)");
    refuse("route with no clients",
           HEAD UPS "routes:\n  - name: q\n    clients: `[]\n" ALERTS,
           "clients is empty");
    refuse("client with no identity",
           "version: 1\nclients:\n  agent: `{ description: nothing }\n"
           ALERTS, "client \"agent\" has no identity");
    refuse("unknown user name",
           "version: 1\nclients:\n  agent: { unix_uid: "
           "`no-such-user-airlock-test }\n" ALERTS,
           "no such user \"no-such-user-airlock-test\"");
    refuse("unknown group name",
           "version: 1\nclients:\n  agent: { unix_gid: "
           "[0, `no-such-group-airlock-test] }\n" ALERTS,
           "no such group");
    refuse("cidr without prefix",
           "version: 1\nclients:\n  net: { cidr: `10.0.0.0 }\n" ALERTS,
           "cidr must be ADDRESS/PREFIX");
    refuse("cidr prefix too long",
           "version: 1\nclients:\n  net: { cidr: `10.0.0.0/33 }\n" ALERTS,
           "invalid cidr \"10.0.0.0/33\"");
    refuse("cidr not an address",
           "version: 1\nclients:\n  net: { cidr: `10.0.0/8 }\n" ALERTS,
           "invalid cidr");
    refuse("cidr with host bits",
           "version: 1\nclients:\n  net: { cidr: `10.0.0.1/8 }\n" ALERTS,
           "has bits set past the prefix length");
    refuse("IPv6 cidr with host bits",
           "version: 1\nclients:\n  net: { cidr: `\"fd00::1/64\" }\n"
           ALERTS, "has bits set past the prefix length");
    refuse("overlapping cidrs",
           "version: 1\nclients:\n  a: { cidr: 10.0.0.0/8 }\n"
           "  `b: { cidr: 10.1.0.0/16 }\n" ALERTS,
           "clients \"a\" (line 3) and \"b\" (line 4) share an identity");
    refuse("IPv4-mapped IPv6 overlaps IPv4",
           "version: 1\nclients:\n  a: { cidr: 10.0.0.0/8 }\n"
           "  `b: { cidr: \"::ffff:0:0/96\" }\n" ALERTS,
           "share an identity");
    refuse("duplicate uid across clients",
           "version: 1\nclients:\n  a: { unix_uid: 0 }\n"
           "  `b: { unix_uid: root }\n" ALERTS,
           "clients \"a\" (line 3) and \"b\" (line 4) share an identity");
    refuse("duplicate uid in one client",
           "version: 1\nclients:\n  `a: { unix_uid: [0, root] }\n" ALERTS,
           "client \"a\" (line 3) lists the same identity twice");
    refuse("duplicate token",
           "version: 1\nclients:\n  a: { token_sha256: \"" TOK "\" }\n"
           "  `b: { token_sha256: \"" TOK "\" }\n" ALERTS,
           "share an identity");
    refuse("token_sha256 too short",
           "version: 1\nclients:\n  a: { token_sha256: `abc }\n" ALERTS,
           "token_sha256 must be 64 hex digits");
    refuse("token_sha256 not hex",
           "version: 1\nclients:\n  a: { token_sha256: "
           "`9g86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
           " }\n" ALERTS, "token_sha256 must be 64 hex digits");
    refuse("identity of the wrong type",
           "version: 1\nclients:\n  a: { unix_uid: `{ x: 1 } }\n" ALERTS,
           "unix_uid must be a name or a list of names");
}


static void
test_secrets(void)
{
    refuse("plaintext secret",
           HEAD "secrets:\n  github_pr: `hunter2\n" ALERTS,
           "secret \"github_pr\" is written in plain text");
    refuse("secret with sealed and file",
           HEAD "secrets:\n  s: `{ sealed: AAAA, file: /run/s }\n" ALERTS,
           "needs exactly one of \"sealed\" or \"file\"");
    refuse("secret with neither",
           HEAD "secrets:\n  s: `{ description: x }\n" ALERTS,
           "needs exactly one of");
    refuse("relative file path",
           HEAD "secrets:\n  s: { file: `creds/s }\n" ALERTS,
           "file must be an absolute path");
    refuse("sealed secret not base64",
           HEAD "secrets:\n  s: { sealed: `\"not base64!\" }\n" ALERTS,
           "is not base64");
    refuse("secret name with '-'",
           HEAD "secrets:\n  `github-pr: { sealed: AAAA }\n" ALERTS,
           "secret names may use letters, digits and '_' only");
    refuse("unknown key in a secret",
           HEAD "secrets:\n  s: { `seal: AAAA }\n" ALERTS,
           "did you mean \"sealed\"?");
}


static void
test_upstreams(void)
{
    al_error_t    err;
    al_policy_t  *p;

    refuse("url scheme",
           HEAD "upstreams:\n  u: { url: `ftp://example.com }\n" ALERTS,
           "url must start with http:// or https://");
    refuse("credentials in url",
           HEAD "upstreams:\n  u: { url: `\"https://u:p@example.com\" }\n"
           ALERTS, "must not carry credentials");
    refuse("query in url",
           HEAD "upstreams:\n  u: { url: `\"https://example.com/a?b=c\" }\n"
           ALERTS, "must not have a query or a fragment");
    refuse("port out of range",
           HEAD "upstreams:\n  u: { url: `\"http://example.com:99999\" }\n"
           ALERTS, "port out of range");
    refuse("port not a number",
           HEAD "upstreams:\n  u: { url: `\"http://example.com:8o\" }\n"
           ALERTS, "invalid port");
    refuse("no host", HEAD "upstreams:\n  u: { url: `\"http:///x\" }\n"
           ALERTS, "has no host");
    refuse("bad host", HEAD "upstreams:\n  u: { url: `\"http://a_b/\" }\n"
           ALERTS, "invalid character in host name");
    refuse("dot segment in the base path",
           HEAD "upstreams:\n  u: { url: `\"http://example.com/v1/..\" }\n"
           ALERTS, "the path has an empty or a dot segment");
    refuse("invalid IPv6 host",
           HEAD "upstreams:\n  u: { url: `\"http://[fd00::zz]:80/\" }\n"
           ALERTS, "invalid IPv6 address");
    refuse("upstream without url",
           HEAD "upstreams:\n  u: `{ description: x }\n" ALERTS,
           "upstream \"u\" is missing the required key \"url\"");

    p = load(HEAD "upstreams:\n"
             "  v6: { url: \"https://[fd00::10]:8200/v1/\" }\n" ALERTS, &err);
    tap_ok(p != NULL && p->upstreams[0].port == 8200
           && str_is(&p->upstreams[0].hostname, "[fd00::10]")
           && str_is(&p->upstreams[0].host, "[fd00::10]:8200")
           && str_is(&p->upstreams[0].base_path, "/v1"),
           "IPv6 upstream: host, port and base path");
    al_policy_free(p);
}


static void
test_routes(void)
{
    al_error_t    err;
    al_policy_t  *p;

    refuse("route missing upstream",
           HEAD UPS "routes:\n  - `name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: /q }\n    to: /q\n" ALERTS,
           "route \"q\" is missing the required key \"upstream\"");
    refuse("route missing to",
           HEAD UPS "routes:\n  - `name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: /q }\n    upstream: prom\n"
           ALERTS, "route \"q\" is missing the required key \"to\"");
    refuse("route missing match",
           HEAD UPS "routes:\n  - `name: q\n    clients: [agent]\n" ALERTS,
           "missing the required key \"match\"");
    refuse("unknown upstream",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: /q }\n    upstream: `prometheus\n"
           "    to: /q\n" ALERTS,
           "names upstream \"prometheus\", which is not defined");
    refuse("lower-case method",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: [GET, `post], path: /q }\n" ALERTS,
           "methods are upper case: write POST, not post");
    refuse("CONNECT",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: `CONNECT, path: /q }\n" ALERTS,
           "method \"CONNECT\" is not allowed");
    refuse("method twice",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: [GET, `GET], path: /q }\n" ALERTS,
           "listed twice");
    refuse("path without '/'",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `q/r }\n" ALERTS,
           "path must start with '/'");
    refuse("trailing slash",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `/q/ }\n" ALERTS,
           "has an empty segment");
    refuse("empty segment",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `/a//b }\n" ALERTS,
           "has an empty segment");
    refuse("dot segment in path",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `/a/../b }\n" ALERTS,
           "dot segment");
    refuse("query parameter named like a path param",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: \"/items/{id}\" }\n"
           "    params: { id: '^[0-9]+$' }\n"
           "    upstream: prom\n    to: /x\n"
           "    query: { allow: [page, `ID] }\n" ALERTS,
           "query parameter \"ID\" has the name of the path param {id}");
    refuse("query parameter nesting under a path param's name",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: \"/items/{id}\" }\n"
           "    params: { id: '^[0-9]+$' }\n"
           "    upstream: prom\n    to: /x\n"
           "    query: { allow: [page, `\"Id[x]\"] }\n" ALERTS,
           "query parameter \"Id[x]\" has the name of the path param {id}");
    refuse("query parameter nesting under a path param's name, brackets "
           "first",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: \"/items/{id}\" }\n"
           "    params: { id: '^[0-9]+$' }\n"
           "    upstream: prom\n    to: /x\n"
           "    query: { allow: [`\"[]id\"] }\n" ALERTS,
           "query parameter \"[]id\" has the name of the path param {id}");
    refuse("query parameters differing by case",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: /items }\n"
           "    upstream: prom\n    to: /x\n"
           "    query: { allow: [file, page, `File],"
           " patterns: { file: '^[a-z]+$' } }\n" ALERTS,
           "query parameters \"file\" and \"File\" differ only by case");
    refuse("query parameters differing by '.' for '_'",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: /items }\n"
           "    upstream: prom\n    to: /x\n"
           "    query: { allow: [a_b, `a.b],"
           " patterns: { a_b: '^[a-z]+$' } }\n" ALERTS,
           "query parameters \"a_b\" and \"a.b\" differ only by case or "
           "by '.', ' ' for '_', which ASP.NET or PHP reads as one "
           "parameter");
    refuse("three dots in path",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `/a/.../b }\n" ALERTS,
           "path \"/a/.../b\" has a dot segment");
    refuse("four dots in path",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `/a/.... }\n" ALERTS,
           "has a dot segment");
    refuse("drive in path",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `/files/c:x }\n" ALERTS,
           "has a segment that starts with a drive (\"C:\"); requests "
           "with one are refused, so the route could never match");
    refuse("param not a whole segment",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `\"/logs/{service}.json\" }\n"
           ALERTS, "a param must be a whole segment");
    refuse("param inside a literal",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `\"/logs/x{service}\" }\n"
           ALERTS, "a param must be a whole segment");
    refuse("param used twice",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `\"/{a}/{a}\" }\n" ALERTS,
           "uses param {a} twice");
    refuse("param without pattern",
           HEAD UPS "routes:\n  - `name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: \"/logs/{service}\" }\n"
           "    upstream: prom\n    to: /q\n" ALERTS,
           "path param {service} has no pattern");
    refuse("params key not a path param",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: \"/logs/{service}\" }\n"
           "    params: { service: '^[a-z]+$', `svc: '^x$' }\n" ALERTS,
           "params names \"svc\", which is not a {param} of path");
    refuse("invalid regex",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: \"/logs/{service}\" }\n"
           "    params: { service: `'^[a-z$' }\n" ALERTS,
           "param pattern: invalid regular expression at offset");
    refuse("to uses an unknown param",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: \"/logs/{service}\" }\n"
           "    params: { service: '^[a-z]+$' }\n    upstream: prom\n"
           "    to: `\"/svc/{svc}\"\n" ALERTS,
           "uses {svc}, which is not a param of path /logs/{service}");
    refuse("to without '/'",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: /q }\n    upstream: prom\n"
           "    to: `api/q\n" ALERTS, "to must start with '/'");
    refuse("two conflicting routes",
           HEAD UPS "routes:\n"
           "  - name: logs\n    clients: [agent]\n"
           "    match: { method: GET, path: \"/logs/{s}\" }\n"
           "    params: { s: '^[a-z]+$' }\n"
           "    upstream: prom\n    to: /q\n"
           "  - `name: errors\n    clients: [agent]\n"
           "    match: { method: [POST, GET], path: /logs/errors }\n"
           "    upstream: prom\n    to: /e\n" ALERTS,
           "route \"errors\" (/logs/errors) can match the same requests as "
           "route \"logs\" (/logs/{s}, line 8)");
    refuse("duplicate route name",
           HEAD UPS ROUTE
           "  - `name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: /r }\n"
           "    upstream: prom\n    to: /r\n" ALERTS,
           "route name \"q\" is already used at line 8");
    refuse("unknown key in a route",
           HEAD UPS ROUTE "    `cookie: true\n" ALERTS,
           "did you mean \"cookies\"?");

    /* a param that takes a drive: { pattern, drive: true } */

    refuse("drive not a boolean",
           HEAD UPS DRIVE_ROUTE "    params:\n      id: '^[a-z]+$'\n"
           "      range: { pattern: '^[A-Z:]+$', drive: `yes }\n" ALERTS,
           "param {range}: drive must be true or false, found \"yes\"");
    refuse("drive quoted",
           HEAD UPS DRIVE_ROUTE "    params:\n      id: '^[a-z]+$'\n"
           "      range:\n        pattern: '^[A-Z:]+$'\n"
           "        drive: `\"true\"\n" ALERTS,
           "param {range}: drive must be true or false, found \"true\"");
    refuse("drive a list",
           HEAD UPS DRIVE_ROUTE "    params:\n      id: '^[a-z]+$'\n"
           "      range: { pattern: '^[A-Z:]+$', drive: `[true] }\n" ALERTS,
           "param {range}: drive must be a scalar, found a list");
    refuse("param mapping without pattern",
           HEAD UPS DRIVE_ROUTE "    params:\n      id: '^[a-z]+$'\n"
           "      range: `{ drive: true }\n" ALERTS,
           "param {range} is missing the required key \"pattern\"");
    refuse("param mapping with an unknown key",
           HEAD UPS DRIVE_ROUTE "    params:\n      id: '^[a-z]+$'\n"
           "      range: { pattern: '^[A-Z:]+$', `drives: true }\n" ALERTS,
           "unknown key \"drives\" in param {range} (did you mean "
           "\"drive\"?)");
    refuse("param mapping with a bad pattern",
           HEAD UPS DRIVE_ROUTE "    params:\n      id: '^[a-z]+$'\n"
           "      range: { pattern: `'^[A-Z:$', drive: true }\n" ALERTS,
           "param pattern: invalid regular expression at offset");
    refuse("param a list",
           HEAD UPS DRIVE_ROUTE "    params:\n      id: '^[a-z]+$'\n"
           "      range: `['^[A-Z:]+$']\n" ALERTS,
           "param pattern must be a scalar, found a list");
    refuse("drive in a literal segment",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: GET, path: `/models/x:generate }\n" ALERTS,
           "so the route could never match; for an upstream that does not "
           "read it as a Windows path, make it a {param} with drive: true");

    p = load(HEAD UPS DRIVE_ROUTE "    params:\n"
             "      id: { pattern: '^[a-z]+$', drive: false }\n"
             "      range: { pattern: '^[A-Z:]+$', drive: true }\n"
             "  - name: r\n    clients: [agent]\n"
             "    match: { method: GET, path: \"/w/{id}/{range}\" }\n"
             "    params: { id: { pattern: '^[a-z]+$' }, range: '.+' }\n"
             "    upstream: prom\n    to: /w\n" ALERTS, &err);
    if (!tap_ok(p != NULL && p->nroutes == 2,
                "params as { pattern, drive } load"))
    {
        tap_diag("error: ", err.msg);

    } else {
        tap_ok(str_is(&p->routes[0].params[0].pattern, "^[a-z]+$")
               && !p->routes[0].params[0].drive
               && str_is(&p->routes[0].params[1].pattern, "^[A-Z:]+$")
               && p->routes[0].params[1].drive
               && !p->routes[1].params[0].drive
               && !p->routes[1].params[1].drive,
               "drive: true on its param only, false by default");
    }
    al_policy_free(p);

    /* scrub: false, a route's statement that its upstream holds no
       credential; every other route is scrubbed once there are secrets */

    refuse("scrub yes", HEAD UPS ROUTE "    scrub: `yes\n" ALERTS,
           "scrub must be true or false, found \"yes\"");
    refuse("scrub quoted", HEAD UPS ROUTE "    scrub: `\"false\"\n" ALERTS,
           "scrub must be true or false, found \"false\"");
    refuse("scrub a number", HEAD UPS ROUTE "    scrub: `0\n" ALERTS,
           "scrub must be true or false, found \"0\"");
    refuse("scrub a list", HEAD UPS ROUTE "    scrub: `[false]\n" ALERTS,
           "scrub must be a scalar, found a list");
    refuse("scrub empty", HEAD UPS ROUTE "    scrub:`\n" ALERTS,
           "scrub is empty");
    refuse("scrub: false with a secret injected",
           HEAD SECRETS UPS ROUTE
           "    inject: { Authorization: \"Bearer {github_pr}\" }\n"
           "    scrub: `false\n" ALERTS,
           "route \"q\" injects a secret in Authorization, so its answers "
           "are scrubbed: scrub: false is only for a route whose upstream "
           "holds no credential");

    p = load(HEAD SECRETS UPS ROUTE "    scrub: false\n"
             "  - name: r\n    clients: [agent]\n"
             "    match: { method: GET, path: /r }\n"
             "    upstream: prom\n    to: /r\n"
             "  - name: s\n    clients: [agent]\n"
             "    match: { method: GET, path: /s }\n"
             "    upstream: prom\n    to: /s\n    scrub: true\n"
             "    inject: { Accept: application/json }\n" ALERTS, &err);
    if (!tap_ok(p != NULL && p->nroutes == 3, "scrub: true and false load"))
    {
        tap_diag("error: ", err.msg);

    } else {
        tap_ok(p->routes[0].no_scrub && !p->routes[1].no_scrub
               && !p->routes[2].no_scrub,
               "scrub: false on its route only, true by default");
        tap_ok(!al_scrub_route_scrubbed(p, &p->routes[0])
               && al_scrub_route_scrubbed(p, &p->routes[1])
               && al_scrub_route_scrubbed(p, &p->routes[2]),
               "with secrets: every route scrubbed, injecting or not, "
               "but scrub: false");
    }
    al_policy_free(p);

    p = load(HEAD UPS ROUTE "  - name: r\n    clients: [agent]\n"
             "    match: { method: GET, path: /r }\n"
             "    upstream: prom\n    to: /r\n"
             "    inject: { Accept: application/json }\n" ALERTS, &err);
    if (!tap_ok(p != NULL, "a policy without secrets loads")) {
        tap_diag("error: ", err.msg);

    } else {
        tap_ok(!al_scrub_route_scrubbed(p, &p->routes[0])
               && !al_scrub_route_scrubbed(p, &p->routes[1]),
               "without secrets: nothing to scrub, no route scrubbed");
    }
    al_policy_free(p);

    p = load(HEAD UPS "routes:\n"
             "  - name: read\n    clients: [agent]\n"
             "    match: { method: GET, path: \"/logs/{s}\" }\n"
             "    params: { s: '^[a-z]+$' }\n"
             "    upstream: prom\n    to: /q\n"
             "  - name: write\n    clients: [agent]\n"
             "    match: { method: POST, path: /logs/errors }\n"
             "    upstream: prom\n    to: /e\n"
             "  - name: delete\n    clients: [agent]\n"
             "    match: { method: DELETE, path: \"/logs/{s}\" }\n"
             "    params: { s: '^[a-z]+$' }\n"
             "    upstream: prom\n    to: /d\n" ALERTS, &err);
    if (!tap_ok(p != NULL && p->nroutes == 3,
                "same paths with different methods load")) {
        tap_diag("error: ", err.msg);
    }
    al_policy_free(p);
}


static void
test_query_body(void)
{
    refuse("query require not in allow",
           HEAD UPS ROUTE "    query: { allow: [a], require: [a, `b] }\n"
           ALERTS, "required query parameter \"b\" is not in allow");
    refuse("pattern for a query param not allowed",
           HEAD UPS ROUTE "    query: { allow: [a], patterns: { `b: '^x$' } }\n"
           ALERTS, "pattern for query parameter \"b\", which is not in allow");
    refuse("query without allow",
           HEAD UPS ROUTE "    query: `{ require: [a] }\n" ALERTS,
           "query is missing the required key \"allow\"");
    refuse("query name twice",
           HEAD UPS ROUTE "    query: { allow: [a, `a] }\n" ALERTS,
           "query parameter \"a\" is listed twice");
    refuse("body without max_bytes",
           HEAD UPS ROUTE "    body: `{ content_type: text/plain }\n" ALERTS,
           "body is missing the required key \"max_bytes\"");
    refuse("max_bytes too large",
           HEAD UPS ROUTE "    body: { max_bytes: `16777217 }\n" ALERTS,
           "max_bytes must be between 1 and 16777216");
    refuse("json field rule bad type",
           HEAD UPS ROUTE "    body:\n      max_bytes: 100\n"
           "      json: { draft: { type: `bool } }\n" ALERTS,
           "unknown JSON type \"bool\"");
    refuse("json field rule without type",
           HEAD UPS ROUTE "    body:\n      max_bytes: 100\n"
           "      json: { draft: `{ required: false } }\n" ALERTS,
           "a JSON field rule is missing the required key \"type\"");
    refuse("pattern on a non-string",
           HEAD UPS ROUTE "    body:\n      max_bytes: 100\n"
           "      json: { n: { type: integer, pattern: `'^1$' } }\n" ALERTS,
           "pattern only applies to type string");
    refuse("fields on a non-object",
           HEAD UPS ROUTE "    body:\n      max_bytes: 100\n"
           "      json: { n: { type: array, fields: `{ a: x } } }\n" ALERTS,
           "fields only applies to type object");
    refuse("bad regex in a json field",
           HEAD UPS ROUTE "    body:\n      max_bytes: 100\n"
           "      json: { head: `'(' }\n" ALERTS,
           "field pattern: invalid regular expression");
    refuse("additional without json",
           HEAD UPS ROUTE "    body: { max_bytes: 100, additional: `true }\n"
           ALERTS, "additional only applies together with json");

    /*
     * A JSON field the rules check, named like a query parameter or a
     * path param: an upstream that merges them reads one of two values
     */

    refuse("json field named like a query parameter in another case",
           HEAD UPS ROUTE "    query: { allow: [head, Base] }\n"
           "    body:\n      max_bytes: 256\n"
           "      json: { head2: '^x$', `base: '^main$' }\n" ALERTS,
           "JSON field \"base\" has the name of the query parameter "
           "\"Base\"");
    refuse("json field named like a query parameter without a pattern",
           HEAD UPS ROUTE "    query: { allow: [head, Base] }\n"
           "    body:\n      max_bytes: 256\n"
           "      json: { `head: '^remediation/.+$' }\n" ALERTS,
           "JSON field \"head\" has the name of the query parameter "
           "\"head\", which an upstream may read for it");
    refuse("json field named like a query parameter with its pattern",
           HEAD UPS ROUTE "    query: { allow: [head],"
           " patterns: { head: '^main$' } }\n"
           "    body:\n      max_bytes: 256\n"
           "      json: { `head: '^main$' }\n" ALERTS,
           "has the name of the query parameter \"head\"");
    refuse("json field rule named like a query parameter, '_' for '.'",
           HEAD UPS ROUTE "    query: { allow: [a.b] }\n"
           "    body:\n      max_bytes: 256\n"
           "      json: { x: '^x$', `A_B: { type: string } }\n" ALERTS,
           "JSON field \"A_B\" has the name of the query parameter "
           "\"a.b\"");
    refuse("json field named like the key a query parameter nests under",
           HEAD UPS ROUTE "    query: { allow: [page, \"pr[head]\"] }\n"
           "    body:\n      max_bytes: 256\n"
           "      json:\n"
           "        `pr: { type: object, fields: { head: '^x$' } }\n" ALERTS,
           "JSON field \"pr\" has the name of the query parameter "
           "\"pr[head]\"");
    refuse("json field named like a query parameter's key, brackets first",
           HEAD UPS ROUTE "    query: { allow: [\"[]Head\"] }\n"
           "    body:\n      max_bytes: 256\n"
           "      json: { `head: '^x$' }\n" ALERTS,
           "JSON field \"head\" has the name of the query parameter "
           "\"[]Head\"");
    refuse("json field named like a path param",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: POST, path: \"/prs/{head}\" }\n"
           "    params: { head: '.+' }\n"
           "    upstream: prom\n    to: \"/prs/{head}\"\n"
           "    body:\n      max_bytes: 256\n"
           "      json: { `head: '^remediation/.+$' }\n" ALERTS,
           "JSON field \"head\" has the name of the path param {head}");
    refuse("json field named like a path param in another case",
           HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
           "    match: { method: POST, path: \"/items/{item_id}\" }\n"
           "    params: { item_id: '^[0-9]+$' }\n"
           "    upstream: prom\n    to: \"/items/{item_id}\"\n"
           "    query: { allow: [page] }\n"
           "    body:\n      max_bytes: 256\n"
           "      json:\n        `Item.Id: { type: integer }\n" ALERTS,
           "JSON field \"Item.Id\" has the name of the path param "
           "{item_id}");

    test_json_names_apart();
}


/* names that no upstream reads as one, and nested fields, still load */

static void
test_json_names_apart(void)
{
    al_error_t    err;
    al_policy_t  *p;

    p = load(HEAD UPS "routes:\n  - name: q\n    clients: [agent]\n"
             "    match: { method: POST, path: \"/prs/{id}\" }\n"
             "    params: { id: '^[0-9]+$' }\n"
             "    upstream: prom\n    to: \"/prs/{id}\"\n"
             "    query: { allow: [head, page, \"page[size]\", \"[]x\","
             " \"idx[0]\"],"
             " patterns: { head: '^x$' } }\n"
             "    body:\n      max_bytes: 256\n"
             "      json:\n"
             "        heads: '^x$'\n"
             "        ids: { type: array }\n"
             "        _id: { type: integer }\n"
             "        user: { type: object, fields: { head: '^x$',"
             " id: { type: integer }, page: '^[0-9]+$' } }\n" ALERTS, &err);
    if (!tap_ok(p != NULL && p->nroutes == 1
                && p->routes[0].json->nmembers == 4,
                "json fields apart from the params' names, and nested "
                "fields named like them, load"))
    {
        tap_diag("error: ", err.msg);
    }
    al_policy_free(p);
}


static void
test_inject(void)
{
    refuse("inject Host",
           HEAD SECRETS UPS ROUTE "    inject: { `Host: example.com }\n"
           ALERTS, "header \"Host\" cannot be injected");
    refuse("inject Content-Length",
           HEAD SECRETS UPS ROUTE "    inject: { `content-length: \"1\" }\n"
           ALERTS, "cannot be injected");
    refuse("inject Proxy-Authorization",
           HEAD SECRETS UPS ROUTE
           "    inject: { `Proxy-Authorization: \"Bearer {github_pr}\" }\n"
           ALERTS, "cannot be injected");
    refuse("inject Transfer-Encoding",
           HEAD SECRETS UPS ROUTE
           "    inject: { `Transfer-Encoding: chunked }\n" ALERTS,
           "cannot be injected");
    refuse("inject Content-Encoding",
           HEAD SECRETS UPS ROUTE
           "    inject: { `Content-Encoding: gzip }\n" ALERTS,
           "header \"Content-Encoding\" cannot be injected");
    refuse("inject a bad header name",
           HEAD SECRETS UPS ROUTE "    inject: { `\"X Auth\": a }\n" ALERTS,
           "invalid header name \"X Auth\"");
    refuse("inject unknown secret",
           HEAD SECRETS UPS ROUTE
           "    inject: { Authorization: `\"Bearer {githb_pr}\" }\n" ALERTS,
           "unknown secret \"githb_pr\" (did you mean \"github_pr\"?)");
    refuse("inject unknown secret with base64",
           HEAD SECRETS UPS ROUTE
           "    inject: { Authorization: `\"Basic {nope|base64}\" }\n"
           ALERTS, "unknown secret \"nope\"");
    refuse("unbalanced '}'",
           HEAD SECRETS UPS ROUTE
           "    inject: { Authorization: `\"Bearer github_pr}\" }\n" ALERTS,
           "unbalanced '}'");
    refuse("unterminated '{'",
           HEAD SECRETS UPS ROUTE
           "    inject: { Authorization: `\"Bearer {github_pr\" }\n" ALERTS,
           "unterminated '{'");
    refuse("header injected twice",
           HEAD SECRETS UPS ROUTE
           "    inject: { Accept: a, `accept: b }\n" ALERTS,
           "injected twice");

    /* the upstream may read the query in an injected charset */

    refuse("injected Content-Type in EBCDIC beside a query pattern",
           HEAD SECRETS UPS ROUTE QUERY_PATTERN
           "    inject: { Content-Type: `\"text/plain; charset=ibm037\" }\n"
           ALERTS, "route \"q\" injects Content-Type \"text/plain; "
           "charset=ibm037\": on a route with query patterns its charset "
           "must be utf-8, us-ascii or iso-8859-1");
    refuse("injected Content-Type, charset in another parameter's name",
           HEAD SECRETS UPS ROUTE QUERY_PATTERN
           "    inject:\n      Accept: a\n"
           "      content-type: `\"text/plain; xcharset=utf-16\"\n"
           ALERTS, "its charset must be utf-8, us-ascii or iso-8859-1");
    refuse("injected Content-Type in RFC 2231 form",
           HEAD SECRETS UPS ROUTE QUERY_PATTERN
           "    inject: { Content-Type: `\"text/plain; charset*=utf-8''x\" }"
           "\n" ALERTS, "its charset must be utf-8");
    refuse("secret in an injected Content-Type beside a query pattern",
           HEAD SECRETS UPS ROUTE QUERY_PATTERN
           "    inject: { Content-Type: `\"text/plain; {github_pr}\" }\n"
           ALERTS, "route \"q\" injects a secret in Content-Type: on a "
           "route with query patterns it must be a constant");
    loads("injected Content-Type in utf-8 beside a query pattern",
          HEAD SECRETS UPS ROUTE QUERY_PATTERN
          "    inject: { Content-Type: \"text/plain; charset=UTF-8\" }\n"
          ALERTS);
    loads("injected Content-Type without charset beside a query pattern",
          HEAD SECRETS UPS ROUTE QUERY_PATTERN
          "    inject: { Content-Type: application/x-www-form-urlencoded }\n"
          ALERTS);
    loads("injected Content-Type in EBCDIC, query without a pattern",
          HEAD SECRETS UPS ROUTE "    query: { allow: [name] }\n"
          "    inject: { Content-Type: \"text/plain; charset=ibm037\" }\n"
          ALERTS);
}


static void
loads(const char *name, const char *yaml)
{
    al_error_t    err;
    al_policy_t  *p;

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, &err);

    if (!tap_ok(p != NULL, name)) {
        tap_diag("message: ", err.msg);
    }

    al_policy_free(p);
}


static void
test_llm(void)
{
    refuse("llm unknown provider",
           HEAD SECRETS "llm:\n  - name: x\n    prefix: /v1/x\n"
           "    provider: `gemini\n" ALERTS,
           "unknown provider \"gemini\"");
    refuse("llm prefix with trailing slash",
           HEAD SECRETS "llm:\n  - name: x\n    prefix: `/v1/proxy/openai/\n"
           ALERTS, "no trailing '/'");
    refuse("llm prefix ending in a dot segment",
           HEAD SECRETS "llm:\n  - name: x\n    prefix: `/v1/..\n" ALERTS,
           "prefix must be a path");
    refuse("llm prefix with an empty segment",
           HEAD SECRETS "llm:\n  - name: x\n    prefix: `/v1//x\n" ALERTS,
           "prefix must be a path");
    refuse("llm unknown upstream name",
           HEAD SECRETS "llm:\n  - name: x\n    prefix: /v1/x\n"
           "    provider: openai\n    upstream: `openai\n" ALERTS,
           "upstream \"openai\" is neither a URL nor defined");
    refuse("llm unknown secret",
           HEAD SECRETS "llm:\n  - name: x\n    prefix: /v1/x\n"
           "    provider: openai\n    upstream: https://a.example\n"
           "    secret: `openai_kye\n" ALERTS,
           "unknown secret \"openai_kye\" (did you mean \"openai_key\"?)");
    refuse("llm without models",
           HEAD SECRETS "llm:\n  - name: x\n    prefix: /v1/x\n"
           "    provider: openai\n    upstream: https://a.example\n"
           "    secret: openai_key\n    models: `[]\n" ALERTS,
           "models is empty");
    refuse("route inside an llm prefix",
           HEAD SECRETS UPS "routes:\n"
           "  - name: chat\n    clients: [agent]\n"
           "    match: { method: POST, path: /v1/proxy/openai/chat }\n"
           "    upstream: prom\n    to: /chat\n"
           "    body: { max_bytes: 100 }\n"
           "llm:\n  - `name: openai\n    prefix: /v1/proxy/openai\n"
           "    provider: openai\n    upstream: https://api.openai.com/v1\n"
           "    secret: openai_key\n    models: [gpt-4o-mini]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "route \"chat\" (/v1/proxy/openai/chat, line 11) is inside llm "
           "prefix /v1/proxy/openai");
    refuse("route with a param inside an llm prefix",
           HEAD SECRETS UPS "routes:\n"
           "  - name: chat\n    clients: [agent]\n"
           "    match: { method: POST, path: \"/v1/{p}/openai\" }\n"
           "    params: { p: '^[a-z]+$' }\n"
           "    upstream: prom\n    to: /chat\n"
           "llm:\n  - `name: openai\n    prefix: /v1/proxy/openai\n"
           "    provider: openai\n    upstream: https://api.openai.com/v1\n"
           "    secret: openai_key\n    models: [gpt-4o-mini]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "is inside llm prefix");
    refuse("llm prefix inside another",
           HEAD SECRETS "llm:\n"
           "  - name: a\n    prefix: /v1/proxy\n"
           "    provider: openai\n    upstream: https://api.openai.com/v1\n"
           "    secret: openai_key\n    models: [m]\n"
           "    clients: { agent: {} }\n"
           "  - `name: b\n    prefix: /v1/proxy/b\n"
           "    provider: openai\n    upstream: https://api.openai.com/v1\n"
           "    secret: openai_key\n    models: [m]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "llm prefix /v1/proxy/b is inside llm prefix /v1/proxy");
    refuse("llm client model not in provider models",
           HEAD SECRETS LLM
           "    clients: { agent: { models: [`gpt-5] } }\n" ALERTS,
           "model \"gpt-5\" is not in the provider's models");
    refuse("llm client with an empty model list",
           HEAD SECRETS LLM "    clients: { agent: { models: `[] } }\n"
           ALERTS, "models is empty");
    refuse("llm unknown client",
           HEAD SECRETS LLM "    clients: { `agnet: {} }\n" ALERTS,
           "unknown client \"agnet\"");
    refuse("max_tokens without over_max_tokens",
           HEAD SECRETS LLM "    clients: { agent: `{ max_tokens: 100 } }\n"
           ALERTS, "max_tokens needs over_max_tokens: clamp or reject");
    refuse("over_max_tokens without max_tokens",
           HEAD SECRETS LLM
           "    clients: { agent: { over_max_tokens: `clamp } }\n" ALERTS,
           "over_max_tokens needs max_tokens");
    refuse("over_max_tokens bad value",
           HEAD SECRETS LLM "    clients: { agent: { max_tokens: 100, "
           "over_max_tokens: `truncate } }\n" ALERTS,
           "over_max_tokens must be clamp or reject");
    refuse("default_max_tokens over max_tokens",
           HEAD SECRETS LLM "    clients: { agent: { max_tokens: 100, "
           "over_max_tokens: clamp, default_max_tokens: `200 } }\n" ALERTS,
           "default_max_tokens 200 is over max_tokens 100");
    refuse("provider_tools: an unknown name",
           HEAD SECRETS LLM "    provider_tools: [web_search, `browse]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "unknown provider tool \"browse\"; use one of: web_search, "
           "web_fetch, mcp");
    refuse("provider_tools: a type, not a family",
           HEAD SECRETS LLM "    provider_tools: `web_search_preview\n"
           "    clients: { agent: {} }\n" ALERTS,
           "unknown provider tool \"web_search_preview\"");
    refuse("provider_tools: a name twice",
           HEAD SECRETS LLM "    provider_tools: [mcp, `mcp]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "provider tool \"mcp\" is listed twice");
    refuse("provider_tools: not names",
           HEAD SECRETS LLM "    provider_tools: `{ mcp: true }\n"
           "    clients: { agent: {} }\n" ALERTS,
           "provider_tools must be a name or a list of names");
    {
        const char   *yaml;
        al_error_t    err;
        al_policy_t  *pt;

        yaml = HEAD SECRETS LLM "    provider_tools: [web_search, mcp]\n"
               "    clients: { agent: {} }\n"
               "  - name: other\n    prefix: /v1/other\n"
               "    provider: openai\n"
               "    upstream: https://api.openai.com/v1\n"
               "    secret: openai_key\n    models: [m]\n"
               "    clients: { agent: {} }\n" ALERTS;
        memset(&err, 0, sizeof(err));
        pt = al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, &err);

        if (!tap_ok(pt != NULL && pt->nllm == 2
                    && pt->llm[0].provider_tools
                       == ((UINT32_C(1) << AL_LLM_PT_WEB_SEARCH)
                           | (UINT32_C(1) << AL_LLM_PT_MCP))
                    && pt->llm[1].provider_tools == 0,
                    "provider_tools: the families allowed; none when "
                    "absent"))
        {
            tap_diag("error: ", err.msg);
        }

        al_policy_free(pt);
    }
    refuse("allow_members: a member refused for cause",
           HEAD SECRETS LLM "    allow_members: [metadata, `api_base]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "allow_members: \"api_base\" cannot be allowed: the gateway "
           "refuses it in every request: routers read it as other models, "
           "URLs, keys or headers");
    refuse("allow_members: a model list",
           HEAD SECRETS LLM "    allow_members: `fallbacks\n"
           "    clients: { agent: {} }\n" ALERTS,
           "\"fallbacks\" cannot be allowed: the gateway refuses it");
    refuse("allow_members: a member the gateway checks",
           HEAD SECRETS LLM "    allow_members: [`max_tokens]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "\"max_tokens\" cannot be allowed: the gateway reads it itself");
    refuse("allow_members: a member in another case",
           HEAD SECRETS LLM "    allow_members: [`Model]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "\"Model\" cannot be allowed: it differs from a member the "
           "gateway reads only by case");
    refuse("allow_members: a name twice",
           HEAD SECRETS LLM "    allow_members: [tags, `tags]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "allow_members: \"tags\" is listed twice");
    refuse("allow_members: too long",
           HEAD SECRETS LLM "    allow_members: "
           "`aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
           "    clients: { agent: {} }\n" ALERTS,
           "longer than 48 bytes");
    refuse("allow_members: not names",
           HEAD SECRETS LLM "    allow_members: `{ tags: true }\n"
           "    clients: { agent: {} }\n" ALERTS,
           "allow_members must be a name or a list of names");
    {
        const char   *yaml;
        al_error_t    err;
        al_policy_t  *pt;

        yaml = HEAD SECRETS LLM "    allow_members: [metadata, \"tags\"]\n"
               "    clients: { agent: {} }\n" ALERTS;
        memset(&err, 0, sizeof(err));
        pt = al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, &err);

        if (!tap_ok(pt != NULL && pt->nllm == 1
                    && pt->llm[0].nallow_members == 2
                    && str_is(&pt->llm[0].allow_members[0], "metadata")
                    && str_is(&pt->llm[0].allow_members[1], "tags"),
                    "allow_members: the names listed"))
        {
            tap_diag("error: ", err.msg);
        }

        al_policy_free(pt);
    }
    refuse("include_usage on anthropic",
           HEAD SECRETS "llm:\n  - name: c\n    prefix: /v1/c\n"
           "    provider: anthropic\n    upstream: https://api.anthropic.com\n"
           "    secret: openai_key\n    models: [m]\n"
           "    include_usage: `true\n" ALERTS,
           "include_usage applies to OpenAI-style providers");
    refuse("duplicate llm name",
           HEAD SECRETS LLM "    clients: { agent: {} }\n"
           "  - `name: openai\n    prefix: /v1/other\n"
           "    provider: openai\n    upstream: https://api.openai.com/v1\n"
           "    secret: openai_key\n    models: [m]\n"
           "    clients: { agent: {} }\n" ALERTS,
           "llm name \"openai\" is already used at line 9");
}


static void
test_alerts(void)
{
    refuse("alerts missing deny",
           HEAD "alerts:\n  `quarantine: { threshold: 20, window: 1m, "
           "for: 10m }\n", "alerts is missing the required key \"deny\"");
    refuse("quarantine without for",
           HEAD "alerts:\n  deny: { threshold: 3, window: 60s }\n"
           "  quarantine: `{ threshold: 20, window: 1m }\n",
           "alerts.quarantine is missing the required key \"for\"");
    refuse("for on deny",
           HEAD "alerts:\n  deny: { threshold: 3, window: 60s, `for: 1m }\n",
           "unknown key \"for\" in alerts.deny");
    refuse("sink with unknown kind",
           HEAD ALERTS "  sinks:\n    - { `slack: { url: \"http://x\" } }\n",
           "unknown key \"slack\" in a sink; expected one of: webhook, "
           "alertmanager");
    refuse("sink with two kinds",
           HEAD SECRETS ALERTS "  sinks:\n"
           "    - `{ alertmanager: { url: \"http://x\" },\n"
           "        webhook: { url: \"http://y\", hmac_secret: github_pr } }\n",
           "a sink is either webhook");
    refuse("webhook without hmac_secret",
           HEAD ALERTS "  sinks:\n    - webhook: `{ url: \"http://x\" }\n",
           "webhook is missing the required key \"hmac_secret\"");
    refuse("webhook with unknown hmac secret",
           HEAD SECRETS ALERTS "  sinks:\n    - webhook: { url: \"http://x\", "
           "hmac_secret: `alert_hmac }\n", "unknown secret \"alert_hmac\"");
    refuse("webhook with unknown hmac_secret_also",
           HEAD SECRETS ALERTS "  sinks:\n    - webhook: { url: \"http://x\", "
           "hmac_secret: github_pr, hmac_secret_also: `github_prr }\n",
           "unknown secret \"github_prr\" (did you mean \"github_pr\"?)");
    refuse("webhook with hmac_secret_also not a scalar",
           HEAD SECRETS ALERTS "  sinks:\n    - webhook: { url: \"http://x\", "
           "hmac_secret: github_pr, hmac_secret_also: `[openai_key] }\n",
           "hmac_secret_also must be a scalar");
    refuse("webhook with hmac_secret_also its hmac_secret",
           HEAD SECRETS ALERTS "  sinks:\n    - webhook: { url: \"http://x\", "
           "hmac_secret: github_pr, hmac_secret_also: `github_pr }\n",
           "hmac_secret_also names \"github_pr\", the webhook's "
           "hmac_secret");
    refuse("alertmanager with hmac_secret_also",
           HEAD SECRETS ALERTS "  sinks:\n    - alertmanager: { url: "
           "\"http://x\", `hmac_secret_also: github_pr }\n",
           "unknown key \"hmac_secret_also\" in alertmanager");
    {
        const char    *yaml = HEAD SECRETS ALERTS "  sinks:\n"
                              "    - webhook: { url: "
                              "\"http://127.0.0.1:9/x\", "
                              "hmac_secret: github_pr, "
                              "hmac_secret_also: openai_key }\n"
                              "    - webhook: { url: "
                              "\"http://127.0.0.1:9/y\", "
                              "hmac_secret: openai_key }\n";
        al_error_t     err;
        al_policy_t   *p;

        p = load(yaml, &err);
        if (!tap_ok(p != NULL && p->nsinks == 2
                    && p->sinks[0].hmac_also != NULL
                    && str_is(&p->sinks[0].hmac_also->name, "openai_key")
                    && str_is(&p->sinks[0].hmac->name, "github_pr")
                    && p->sinks[1].hmac_also == NULL,
                    "hmac_secret_also names a second secret; without it, "
                    "none"))
        {
            tap_diag("error: ", p == NULL ? err.msg : "");
        }
        al_policy_free(p);
    }
    refuse("alertmanager without url",
           HEAD ALERTS "  sinks:\n    - alertmanager: `{}\n",
           "alertmanager is missing the required key \"url\"");
    refuse("the same webhook twice, but for a trailing slash",
           HEAD SECRETS ALERTS "  sinks:\n"
           "    - webhook: { url: \"http://127.0.0.1:9/a\", "
           "hmac_secret: github_pr }\n"
           "    - webhook: { url: `\"http://127.0.0.1:9/a/\", "
           "hmac_secret: openai_key }\n",
           "alerts.sinks lists this webhook url already (sink 1)");
    refuse("the same alertmanager twice",
           HEAD ALERTS "  sinks:\n"
           "    - alertmanager: { url: \"http://am:9093\" }\n"
           "    - alertmanager: { url: \"http://x\" }\n"
           "    - alertmanager: { url: `\"http://am:9093\" }\n",
           "alerts.sinks lists this alertmanager url already (sink 1)");
    refuse("alertmanager bad url",
           HEAD ALERTS "  sinks:\n"
           "    - alertmanager: { url: `localhost:9093 }\n",
           "url must start with http:// or https://, found no scheme");

    /* a webhook's path is its secret: the error shows the scheme only */

    refuse("webhook with a mistyped scheme",
           HEAD SECRETS ALERTS "  sinks:\n"
           "    - webhook: { url: `\"htps://hooks.example.com/services/"
           "FAKE-T0/FAKE-B0/FAKEsecretPATH\", hmac_secret: github_pr }\n",
           "url must start with http:// or https://, found \"htps://...\"");
    {
        const char  *yaml = HEAD SECRETS ALERTS "  sinks:\n"
                            "    - webhook: { url: \"hooks.example.com/"
                            "services/FAKEsecretPATH\", "
                            "hmac_secret: github_pr }\n";
        al_error_t    err;
        al_policy_t  *p;

        memset(&err, 0, sizeof(err));
        p = al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, &err);
        tap_ok(p == NULL && strstr(err.msg, "found no scheme") != NULL
               && strstr(err.msg, "FAKEsecret") == NULL,
               "webhook without a scheme: its path is not in the error");
        al_policy_free(p);
    }

    /* http:// only to this host, or with allow_insecure_http: true */

    refuse("webhook over http:// past this host",
           HEAD SECRETS ALERTS "  sinks:\n"
           "    - webhook: { url: `\"http://hooks.example.com/FAKEsecretPATH\","
           " hmac_secret: github_pr }\n",
           "webhook url is http:// to \"hooks.example.com\", not this host");
    refuse("webhook over http:// to a name that starts 127",
           HEAD SECRETS ALERTS "  sinks:\n"
           "    - webhook: { url: `\"http://127.0.0.1.example.com/x\","
           " hmac_secret: github_pr }\n",
           "webhook url is http:// to \"127.0.0.1.example.com\"");
    refuse("webhook over http:// to an IPv6 address past this host",
           HEAD SECRETS ALERTS "  sinks:\n"
           "    - webhook: { url: `\"http://[2001:db8::1]:8080/x\","
           " hmac_secret: github_pr }\n",
           "webhook url is http:// to \"[2001:db8::1]\"");
    refuse("webhook allow_insecure_http not a boolean",
           HEAD SECRETS ALERTS "  sinks:\n"
           "    - webhook: { url: \"http://192.0.2.1/x\","
           " hmac_secret: github_pr, allow_insecure_http: `yes }\n",
           "allow_insecure_http must be true or false");
    {
        static const char  *ok[] = {
            "http://127.0.0.1:9/x\", hmac_secret: github_pr",
            "http://127.255.0.1/x\", hmac_secret: github_pr",
            "http://localhost:9/x\", hmac_secret: github_pr",
            "http://LocalHost./x\", hmac_secret: github_pr",
            "http://[::1]:9/x\", hmac_secret: github_pr",
            "http://[::ffff:127.0.0.2]/x\", hmac_secret: github_pr",
            "https://hooks.example.com/x\", hmac_secret: github_pr",
            "http://192.0.2.1/x\", hmac_secret: github_pr, "
                "allow_insecure_http: true",
            NULL
        };
        char           yaml[1024];
        size_t         i;
        al_error_t     err;
        al_policy_t   *p;

        for (i = 0; ok[i] != NULL; i++) {
            snprintf(yaml, sizeof(yaml), "%s%s%s  sinks:\n"
                     "    - webhook: { url: \"%s }\n"
                     "    - alertmanager: { url: \"http://192.0.2.9\" }\n",
                     HEAD, SECRETS, ALERTS, ok[i]);
            p = load(yaml, &err);
            if (!tap_ok(p != NULL && p->nsinks == 2
                        && p->sinks[0].insecure_http
                           == (strstr(ok[i], "insecure") != NULL),
                        "a webhook url to this host, https:// or with "
                        "allow_insecure_http: true loads"))
            {
                tap_diag("url: ", ok[i]);
                tap_diag("error: ", p == NULL ? err.msg : "");
            }
            al_policy_free(p);
        }
    }
}


/*
 * With a keyring, file: secrets are read (one trailing newline dropped),
 * sealed ones opened and inject templates rendered.
 */

static void
test_open_secrets(void)
{
    int            fd;
    char           dir[] = "/tmp/airlock-loader-XXXXXX";
    char           key[128], pub[128], file[128], yaml[4096];
    char          *sealed;
    al_error_t     err;
    al_policy_t   *p;
    al_keyring_t  *kr;

    if (mkdtemp(dir) == NULL) {
        tap_ok(0, "mkdtemp");
        return;
    }

    snprintf(key, sizeof(key), "%s/airlock.key", dir);
    snprintf(pub, sizeof(pub), "%s/airlock.key.pub", dir);
    snprintf(file, sizeof(file), "%s/token", dir);

    fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd == -1 || write(fd, "s3cret\n", 7) != 7) {
        tap_ok(0, "write the secret file");
    }
    if (fd != -1) {
        close(fd);
    }

    sealed = NULL;
    kr = NULL;

    if (!tap_ok(al_keygen(key, &err) == 0
                && (kr = al_keyring_load(key, &err)) != NULL
                && al_seal(pub, (const unsigned char *) "user:pw", 7, &sealed,
                           &err) == 0, "keygen, load, seal"))
    {
        tap_diag("error: ", err.msg);
        goto done;
    }

    snprintf(yaml, sizeof(yaml),
             HEAD
             "secrets:\n"
             "  basic: { sealed: \"%s\" }\n"
             "  token: { file: %s }\n"
             UPS ROUTE
             "    inject:\n"
             "      Authorization: \"Basic {basic|base64}\"\n"
             "      X-Token: \"t={token};u={basic}\"\n"
             ALERTS, sealed, file);

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    if (!tap_ok(p != NULL && p->secrets_open, "policy opens with keys")) {
        tap_diag("error: ", err.msg);
        goto done;
    }

    tap_ok(p->secrets[0].len == 7
           && memcmp(p->secrets[0].value, "user:pw", 7) == 0,
           "sealed secret opened");
    tap_ok(p->secrets[1].len == 6
           && strcmp((char *) p->secrets[1].value, "s3cret") == 0,
           "file secret: one trailing newline stripped");
    tap_ok(p->routes[0].inject[0].len == 18
           && strcmp((char *) p->routes[0].inject[0].value,
                     "Basic dXNlcjpwdw==") == 0,
           "{secret|base64} rendered");
    tap_ok(strcmp((char *) p->routes[0].inject[1].value,
                  "t=s3cret;u=user:pw") == 0,
           "two references in one template");

    al_policy_free(p);

    /* a missing file is an error only when secrets are opened */
    snprintf(yaml, sizeof(yaml), HEAD
             "secrets:\n  gone: { file: %s/missing }\n" ALERTS, dir);
    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), kr, &err);
    tap_ok(p == NULL && strstr(err.msg, "cannot open") != NULL
           && err.line == 6, "missing secret file refused with keys");
    al_policy_free(p);

done:

    free(sealed);
    al_keyring_free(kr);
    unlink(file);
    unlink(key);
    unlink(pub);
    rmdir(dir);
}


/*
 * Large policies: names are found through indexes, duplicates among many
 * are still found and located, and routes that share text share memory.
 */

static void
test_many(void)
{
    char               *yaml, *p;
    size_t              i, n, cap;
    al_error_t          err;
    al_policy_t        *pol;
    const al_route_t   *r;

    n = 3000;
    cap = 256 + n * 200;
    yaml = malloc(cap);
    if (yaml == NULL) {
        tap_ok(0, "memory for a large policy");
        return;
    }

    /* 40 clients: a mapping past the size checked pairwise */
    p = yaml + snprintf(yaml, cap, "version: 1\nclients:\n");
    for (i = 0; i < 40; i++) {
        p += sprintf(p, "  c%zu: { unix_uid: %zu }\n", i, 1000 + i);
    }
    p += sprintf(p, UPS "routes:\n");
    for (i = 0; i < n; i++) {
        p += sprintf(p, "  - { name: r%zu, clients: [c1, c39], match: "
                     "{ method: GET, path: \"/s%zu/{id}\" }, params: "
                     "{ id: '^[0-9]+$' }, upstream: prom, to: "
                     "\"/a/%zu/{id}\" }\n", i, i, i);
    }
    sprintf(p, ALERTS);

    pol = load(yaml, &err);
    tap_ok(pol != NULL, "3000 routes and 40 clients load");

    if (pol != NULL) {
        r = al_policy_route(pol, "r2999", 5);
        tap_ok(r == &pol->routes[2999], "the last route is found by name");
        tap_ok(al_policy_route(pol, "r3000", 5) == NULL,
               "a name no route has is not found");
        tap_ok(al_policy_client(pol, "c39", 3) == &pol->clients[39],
               "a client is found by name");
        tap_ok(pol->routes[0].client_ok == pol->routes[2999].client_ok,
               "routes with the same clients share one client table");
        tap_ok(pol->routes[0].upstream->name.data
               == pol->routes[2999].upstream->name.data
               && pol->routes[0].params[0].pattern.data
                  == pol->routes[2999].params[0].pattern.data,
               "repeated strings are kept once");
        tap_ok(pol->routes[7].nto_parts == 2
               && pol->routes[7].to_parts[0].len == 5
               && memcmp(pol->routes[7].to_parts[0].data, "/a/7/", 5) == 0,
               "adjacent literal text of to is one part");
        al_policy_free(pol);
    }

    /* the same name at the end of a long list */
    sprintf(strstr(yaml, "name: r2999,"), "name: r1234, clients: [c1, c39], "
            "match: { method: GET, path: \"/z/{id}\" }, params: { id: "
            "'^[0-9]+$' }, upstream: prom, to: \"/b/{id}\" }\n" ALERTS);
    pol = load(yaml, &err);
    /* route i is on line 46 + i */
    tap_ok(pol == NULL && err.line == 46 + 2999,
           "a duplicate route name among 3000 is refused at the second");
    tap_ok(strcmp(err.msg, "route name \"r1234\" is already used at line "
                  "1280") == 0, err.msg);
    al_policy_free(pol);

    /* a duplicate key in a mapping of 40 */
    p = yaml + snprintf(yaml, cap, "version: 1\nclients:\n");
    for (i = 0; i < 40; i++) {
        p += sprintf(p, "  c%zu: { unix_uid: %zu }\n", i == 33 ? 5 : i,
                     1000 + i);
    }
    sprintf(p, ALERTS);
    pol = load(yaml, &err);
    tap_ok(pol == NULL && err.line == 36 && err.column == 3,
           "a duplicate key in a large mapping is located at the second");
    tap_ok(strcmp(err.msg, "duplicate key \"c5\" (first given at line 8)")
           == 0, err.msg);
    al_policy_free(pol);

    /* a wide block at the end holds the first of 40 narrow ones */
    p = yaml + snprintf(yaml, cap, "version: 1\nclients:\n");
    for (i = 0; i < 40; i++) {
        p += sprintf(p, "  c%zu: { cidr: 10.0.%zu.0/24 }\n", i, 40 - i);
    }
    sprintf(p, "  wide: { cidr: [192.168.0.0/16, 10.0.0.0/18] }\n" ALERTS);
    pol = load(yaml, &err);
    tap_ok(pol == NULL && err.line == 43,
           "overlapping cidrs among many clients are found");
    tap_ok(strstr(err.msg, "clients \"c0\" (line 3) and \"wide\" (line 43) "
                  "share an identity") != NULL, err.msg);
    al_policy_free(pol);

    free(yaml);
}


/*
 * A policy file that changes while it is read.  al_policy_load_open() is
 * open(), fstat() and al_policy_read(); here the file is cut or extended
 * between the fstat() and the read.  Cut before its second route, what
 * is left is a valid policy with one route: it must not be loaded.  Files
 * in /proc and /sys, whose size is not their length, are refused the
 * same way through al_policy_load().
 */

static void
test_changed_file(void)
{
    int           fd;
    char          dir[] = "/tmp/airlock-loader-XXXXXX";
    char          file[128];
    char         *buf;
    size_t        len, cut;
    struct stat   st;
    al_error_t    err;
    al_policy_t  *p;

    static const char  two[] = HEAD UPS ALERTS ROUTE
        "  - name: q2\n"
        "    clients: [agent]\n"
        "    match: { method: GET, path: /q2 }\n"
        "    upstream: prom\n"
        "    to: /api/q2\n";

    static const char  more[] =
        "  - name: q3\n"
        "    clients: [tools]\n"
        "    match: { method: GET, path: /q3 }\n"
        "    upstream: prom\n"
        "    to: /api/q3\n";

    cut = (size_t) (strstr(two, "  - name: q2") - two);

    p = al_policy_parse("policy.yaml", two, cut, NULL, &err);
    tap_ok(p != NULL && p->nroutes == 1,
           "the policy cut before its second route is valid on its own");
    al_policy_free(p);

    if (mkdtemp(dir) == NULL) {
        tap_ok(0, "mkdtemp");
        return;
    }

    snprintf(file, sizeof(file), "%s/policy.yaml", dir);

    /* unchanged: read whole, and loaded */

    memset(&err, 0, sizeof(err));
    if (write_file(file, two, O_TRUNC) != 0
        || (p = al_policy_load(file, NULL, &err)) == NULL)
    {
        tap_ok(0, "write and load the policy file");
        tap_diag("error: ", err.msg);
        goto done;
    }

    tap_ok(p->nroutes == 2, "an unchanged file loads whole");
    al_policy_free(p);

    fd = open(file, O_RDONLY | O_CLOEXEC);
    buf = NULL;
    if (fd != -1 && fstat(fd, &st) == 0) {
        buf = al_policy_read(fd, file, (size_t) st.st_size, &len, &err);
    }
    tap_ok(buf != NULL && len == sizeof(two) - 1
           && memcmp(buf, two, len) == 0,
           "al_policy_read: an unchanged file, every byte");
    free(buf);
    if (fd != -1) {
        close(fd);
    }

    /* truncated between fstat() and read() */

    memset(&err, 0, sizeof(err));
    buf = NULL;
    fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd != -1 && fstat(fd, &st) == 0 && truncate(file, (off_t) cut) == 0)
    {
        buf = al_policy_read(fd, file, (size_t) st.st_size, &len, &err);
    }
    if (!tap_ok(buf == NULL
                && strstr(err.msg, "truncated or rewritten while it was "
                          "read") != NULL,
                "a file truncated after fstat() is refused, not parsed"))
    {
        tap_diag("error: ", err.msg);
    }
    tap_ok(strcmp(err.file, file) == 0 && err.line == 0,
           "the error names the file");
    free(buf);
    if (fd != -1) {
        close(fd);
    }

    /* appended to between fstat() and read() */

    memset(&err, 0, sizeof(err));
    buf = NULL;
    fd = -1;
    if (write_file(file, two, O_TRUNC) == 0) {
        fd = open(file, O_RDONLY | O_CLOEXEC);
    }
    if (fd != -1 && fstat(fd, &st) == 0
        && write_file(file, more, O_APPEND) == 0)
    {
        buf = al_policy_read(fd, file, (size_t) st.st_size, &len, &err);
    }
    if (!tap_ok(buf == NULL
                && strstr(err.msg, "grew or was rewritten while it was "
                          "read") != NULL,
                "a file appended to after fstat() is refused, not parsed"))
    {
        tap_diag("error: ", err.msg);
    }
    free(buf);
    if (fd != -1) {
        close(fd);
    }

    /* a size of 0 and a longer content */

    if (stat("/proc/self/status", &st) == 0 && st.st_size == 0) {
        memset(&err, 0, sizeof(err));
        p = al_policy_load("/proc/self/status", NULL, &err);
        if (!tap_ok(p == NULL && strstr(err.msg, "longer than its 0 bytes")
                    != NULL, "/proc/self/status (size 0): refused as "
                    "longer than its size, not parsed as empty"))
        {
            tap_diag("error: ", err.msg);
        }
        al_policy_free(p);

    } else {
        tap_skip("no /proc/self/status of size 0");
    }

    /* a size of 4096 and a shorter content: one read returns less */

    if (stat("/sys/kernel/uevent_seqnum", &st) == 0 && st.st_size == 4096) {
        memset(&err, 0, sizeof(err));
        p = al_policy_load("/sys/kernel/uevent_seqnum", NULL, &err);
        if (!tap_ok(p == NULL && strstr(err.msg, "of its 4096 bytes") != NULL,
                    "/sys/kernel/uevent_seqnum (size 4096): refused after "
                    "the short read, not parsed"))
        {
            tap_diag("error: ", err.msg);
        }
        al_policy_free(p);

    } else {
        tap_skip("no /sys/kernel/uevent_seqnum of size 4096");
    }

done:

    (void) unlink(file);
    (void) rmdir(dir);
}


/*
 * al_policy_load(), which airlock-agent, airlock-worker and
 * airlock-alertd call, refuses a policy in a directory others may
 * write, the file's own mode 0600: anyone could put another policy under
 * its name (al_policy_trusted()).  The scratch directory (0700 under the
 * sticky /tmp) is taken, and so is a sticky directory.
 */

static void
test_path_trusted(void)
{
    char          dir[] = "/tmp/airlock-loader-XXXXXX";
    char          sub[128], file[128];
    al_error_t    err;
    al_policy_t  *p;

    static const char  one[] = HEAD UPS ALERTS ROUTE;

    if (mkdtemp(dir) == NULL) {
        tap_ok(0, "mkdtemp");
        return;
    }

    snprintf(sub, sizeof(sub), "%s/pub", dir);
    snprintf(file, sizeof(file), "%s/pub/policy.yaml", dir);

    if (mkdir(sub, 0755) != 0 || write_file(file, one, O_TRUNC) != 0) {
        tap_ok(0, "write the policy file");
        goto done;
    }

    memset(&err, 0, sizeof(err));
    p = al_policy_load(file, NULL, &err);
    if (!tap_ok(p != NULL, "al_policy_load: a policy in a directory only "
                "its owner may write is loaded"))
    {
        tap_diag("error: ", err.msg);
    }
    al_policy_free(p);

    (void) chmod(sub, 0777);

    memset(&err, 0, sizeof(err));
    p = al_policy_load(file, NULL, &err);
    if (!tap_ok(p == NULL && strcmp(err.file, file) == 0
                && strstr(err.msg, "any user can write the directory ")
                   != NULL
                && strstr(err.msg, "/pub (mode 0777)") != NULL,
                "al_policy_load: one in a directory others may write is "
                "refused, the directory and its mode named"))
    {
        tap_diag("error: ", err.msg);
    }
    al_policy_free(p);

    (void) chmod(sub, 01777);

    memset(&err, 0, sizeof(err));
    p = al_policy_load(file, NULL, &err);
    if (!tap_ok(p != NULL, "al_policy_load: sticky, the policy its "
                "owner's: loaded"))
    {
        tap_diag("error: ", err.msg);
    }
    al_policy_free(p);

done:

    (void) unlink(file);
    (void) rmdir(sub);
    (void) rmdir(dir);
}


/* text written to path, opened with flags (O_TRUNC or O_APPEND) */

static int
write_file(const char *path, const char *text, int flags)
{
    int     fd, rc;
    size_t  len;

    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0600);
    if (fd == -1) {
        return -1;
    }

    len = strlen(text);
    rc = (write(fd, text, len) == (ssize_t) len) ? 0 : -1;

    if (close(fd) != 0) {
        rc = -1;
    }

    return rc;
}
