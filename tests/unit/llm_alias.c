/*
 * Azure entries, model aliases and fallback (policy/al_llm_alias.c): the
 * policy fields and their errors, the Azure endpoint table and
 * api-version, the top-level "model" scanner, the splice, the fallback's
 * model and URI, the usage line's "alias" and "fallback_from", and the
 * model list the gateway answers GET /models with.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "tap.h"
#include "refuse.h"


/*
 * The ids of a model list al_llm_model_list() and al_llm_model_listed()
 * read (test_list_many()): policy/al_llm_alias.c is built in here, with
 * a count where it reads one; the library it ships in counts nothing.
 * Its functions here stand for the library's (the linker takes no
 * member of the archive whose symbols are all defined).
 */
static size_t  list_looks;

#define AL_LLM_LIST_LOOK()  (list_looks++)
#include "al_llm_alias.c"


#define HEAD                                                                 \
    "version: 1\n"                                                           \
    "clients:\n"                                                             \
    "  agent: { unix_uid: 0 }\n"                                             \
    "  worker: { unix_uid: 1 }\n"                                            \
    "secrets:\n"                                                             \
    "  k: { file: /run/credentials/airlock.service/k }\n"                    \
    "alerts:\n"                                                              \
    "  deny: { threshold: 3, window: 60s }\n"                                \
    "llm:\n"

#define AZURE                                                                \
    "  - name: az\n"                                                         \
    "    prefix: /v1/proxy/azure\n"                                          \
    "    provider: azure\n"                                                  \
    "    upstream: https://res.openai.azure.com\n"                           \
    "    secret: k\n"                                                        \
    "    models: [mini-prod, big-prod, embed]\n"

#define CLIENTS                                                              \
    "    clients:\n"                                                         \
    "      agent: {}\n"                                                      \
    "      worker: { models: [embed] }\n"


static const al_llm_route_t *route(const al_llm_t *llm,
    const al_llm_client_t *lc, unsigned method, const char *target);
static int locate(const char *body, size_t *at, size_t *raw);
static const char *map(const al_llm_t *llm, const char *force,
    const char *body);
static void test_policy(void);
static void test_azure(void);
static void test_locate(void);
static void test_map(void);
static void test_record(void);
static void test_fallback(void);
static void test_list(void);
static void test_list_many(void);
static void looks_ok(size_t looks, size_t most, const char *what);


static al_policy_t     *pol;
static al_llm_route_t   rt;
static char             out[1024];


int
main(void)
{
    test_policy();
    test_azure();
    test_locate();
    test_map();
    test_record();
    test_fallback();
    test_list();
    test_list_many();

    al_policy_free(pol);

    return tap_done();
}


static void
test_policy(void)
{
    const char  *yaml;
    al_error_t   err;
    al_llm_t    *l;

    refuse("azure without api_version",
           HEAD "  - `name: az\n"
           "    prefix: /v1/proxy/azure\n"
           "    provider: azure\n"
           "    upstream: https://res.openai.azure.com\n"
           "    secret: k\n"
           "    models: [mini-prod]\n" CLIENTS,
           "an azure provider needs api_version");

    refuse("api_version on openai",
           HEAD "  - name: oa\n"
           "    prefix: /v1/proxy/openai\n"
           "    provider: openai\n"
           "    upstream: https://api.openai.com/v1\n"
           "    secret: k\n"
           "    models: [embed]\n"
           "    api_version: `x\n" CLIENTS,
           "api_version applies to azure providers only");

    refuse("api_version characters",
           HEAD AZURE "    api_version: `\"2024/10\"\n" CLIENTS,
           "is not an Azure API version");

    refuse("alias to a model not listed",
           HEAD AZURE "    api_version: \"2024-10-21\"\n"
           "    aliases: { fast: `gpt-5 }\n" CLIENTS,
           "alias \"fast\" names model \"gpt-5\", which is not in the "
           "provider's models");

    refuse("alias that is a model",
           HEAD AZURE "    api_version: \"2024-10-21\"\n"
           "    aliases: { `embed: mini-prod }\n" CLIENTS,
           "is also one of the provider's models");

    refuse("alias that is not a name",
           HEAD AZURE "    api_version: \"2024-10-21\"\n"
           "    aliases: { `\"a b\": mini-prod }\n" CLIENTS,
           "is not a valid name");

    refuse("aliases empty",
           HEAD AZURE "    api_version: \"2024-10-21\"\n"
           "    aliases: `{}\n" CLIENTS,
           "aliases is empty");

    refuse("aliases a list",
           HEAD AZURE "    api_version: \"2024-10-21\"\n"
           "    aliases: `[fast]\n" CLIENTS,
           "aliases");

    yaml = HEAD AZURE "    api_version: \"2024-10-21\"\n"
           "    aliases: { fast: mini-prod, smart: big-prod }\n" CLIENTS;

    memset(&err, 0, sizeof(err));
    pol = al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, &err);

    if (!tap_ok(pol != NULL && pol->nllm == 1, "an azure entry loads")) {
        tap_diag("error: ", err.msg);
        exit(tap_done());
    }

    l = &pol->llm[0];

    tap_ok(l->kind == AL_LLM_AZURE && l->api_version.len == 10
           && memcmp(l->api_version.data, "2024-10-21", 10) == 0,
           "kind azure, api_version");
    tap_ok(l->naliases == 2 && l->aliases[1].name.len == 5
           && memcmp(l->aliases[1].model.data, "big-prod", 8) == 0,
           "aliases: name -> model");
}


static const al_llm_route_t *
route(const al_llm_t *llm, const al_llm_client_t *lc, unsigned method,
    const char *target)
{
    (void) al_llm_route(llm, lc, method, target, strlen(target), &rt);
    return &rt;
}


static void
test_azure(void)
{
    const al_llm_t         *l;
    const al_llm_route_t   *r;
    const al_llm_client_t  *agent, *worker;

    l = &pol->llm[0];
    agent = &l->clients[0];
    worker = &l->clients[1];

    r = route(l, agent, AL_METHOD_POST,
              "/openai/deployments/mini-prod/chat/completions"
              "?api-version=2024-06-01");
    tap_ok(r->reason == AL_REASON_NONE && r->endpoint == AL_LLM_EP_CHAT,
           "azure: deployment chat/completions");
    tap_is_str(r->uri, "/openai/deployments/mini-prod/chat/completions"
               "?api-version=2024-10-21",
               "azure: the client's api-version replaced by the policy's");
    tap_ok(r->model.len == 9 && memcmp(r->model.data, "mini-prod", 9) == 0
           && r->alias.len == 0, "azure: the deployment is the model");

    r = route(l, agent, AL_METHOD_POST,
              "/openai/deployments/fast/chat/completions");
    tap_is_str(r->uri, "/openai/deployments/mini-prod/chat/completions"
               "?api-version=2024-10-21",
               "azure: an alias in the path becomes its deployment");
    tap_ok(r->alias.len == 4 && memcmp(r->alias.data, "fast", 4) == 0,
           "azure: the alias is kept for the usage line");

    r = route(l, agent, AL_METHOD_POST, "/openai/deployments/embed/embeddings");
    tap_ok(r->reason == AL_REASON_NONE && r->endpoint == AL_LLM_EP_EMBEDDINGS,
           "azure: embeddings");

    r = route(l, agent, AL_METHOD_POST,
              "/openai/deployments/embed/completions");
    tap_ok(r->reason == AL_REASON_NONE
           && r->endpoint == AL_LLM_EP_COMPLETIONS, "azure: completions");

    r = route(l, agent, AL_METHOD_POST, "/openai/responses");
    tap_ok(r->reason == AL_REASON_NONE && r->endpoint == AL_LLM_EP_RESPONSES
           && r->model.len == 0, "azure: responses, the model in the body");
    tap_is_str(r->uri, "/openai/responses?api-version=2024-10-21",
               "azure: responses gets the api-version");

    r = route(l, agent, AL_METHOD_POST,
              "/openai/deployments/mini-prod/chat/completions?foo=1");
    tap_ok(r->reason == AL_REASON_QUERY, "azure: another query refused");

    r = route(l, agent, AL_METHOD_GET,
              "/openai/deployments/mini-prod/chat/completions");
    tap_ok(r->reason == AL_REASON_METHOD, "azure: GET refused (method)");

    r = route(l, agent, AL_METHOD_POST, "/chat/completions");
    tap_ok(r->reason == AL_REASON_NO_ROUTE, "azure: OpenAI paths refused");

    r = route(l, agent, AL_METHOD_POST,
              "/openai/deployments/other/chat/completions");
    tap_ok(r->reason == AL_REASON_MODEL, "azure: unknown deployment refused");

    r = route(l, worker, AL_METHOD_POST,
              "/openai/deployments/mini-prod/chat/completions");
    tap_ok(r->reason == AL_REASON_MODEL,
           "azure: the client's allowlist applies to the deployment");

    r = route(l, worker, AL_METHOD_POST,
              "/openai/deployments/fast/chat/completions");
    tap_ok(r->reason == AL_REASON_MODEL,
           "azure: an alias does not widen the client's allowlist");

    r = route(l, agent, AL_METHOD_POST,
              "/openai/deployments/a%22b/chat/completions");
    tap_ok(r->reason == AL_REASON_MODEL, "azure: a deployment name with '\"'");

    r = route(l, agent, AL_METHOD_POST,
              "/openai/deployments/mini-prod/chat/x");
    tap_ok(r->reason == AL_REASON_NO_ROUTE, "azure: unknown endpoint");
}


static int
locate(const char *body, size_t *at, size_t *raw)
{
    return al_llm_model_locate((const unsigned char *) body, strlen(body),
                               at, raw);
}


static void
test_locate(void)
{
    int          rc;
    size_t       at, raw;
    const char  *b;

    b = "{\"model\":\"fast\",\"x\":1}";
    rc = locate(b, &at, &raw);
    tap_ok(rc == 1 && at == 9 && raw == 6, "locate: first member");

    b = " {\n \"messages\": [{\"model\": \"no\"}], \"s\": \"\\\"model\\\":\","
        " \"n\": -1.5e3, \"t\": true, \"o\": {\"a\": [1, {\"model\": 2}]},"
        " \"model\" : \"fa\\\"st\" }";
    rc = locate(b, &at, &raw);
    tap_ok(rc == 1 && strncmp(b + at, "\"fa\\\"st\"", raw) == 0
           && raw == 8, "locate: nested and quoted \"model\" skipped");

    rc = locate("{\"messages\":[]}", &at, &raw);
    tap_ok(rc == 0 && at == 1, "locate: absent, at after '{'");

    rc = locate("{\"model\":null}", &at, &raw);
    tap_is_int(rc, 2, "locate: not a string");

    tap_is_int(locate("[1]", &at, &raw), -1, "locate: not an object");
    tap_is_int(locate("{\"a\":\"x", &at, &raw), -1, "locate: cut short");
    tap_is_int(locate("{\"modelx\":\"a\"}", &at, &raw), 0,
               "locate: another key that starts the same");
    tap_is_int(locate("", &at, &raw), -1, "locate: empty");
}


static const char *
map(const al_llm_t *llm, const char *force, const char *body)
{
    al_str_t      f;
    al_llm_map_t  m;

    f.data = force;
    f.len = force ? strlen(force) : 0;

    switch (al_llm_model_map(llm, force ? &f : NULL,
                             (const unsigned char *) body, strlen(body), &m))
    {
    case 0:
        break;

    case 1:
        return "(refused)";

    default:
        return "(error)";
    }

    if (m.body == NULL) {
        return "(unchanged)";
    }

    snprintf(out, sizeof(out), "%.*s%s%s", (int) m.body_len, m.body,
             m.alias_len ? " alias=" : "", m.alias);
    free(m.body);

    return out;
}


static void
test_map(void)
{
    const al_llm_t  *l;
    al_llm_req_t     req;
    unsigned char   *o;
    size_t           n;
    const char      *b;

    l = &pol->llm[0];

    tap_is_str(map(l, NULL, "{\"model\":\"fast\",\"stream\":false}"),
               "{\"model\":\"mini-prod\",\"stream\":false} alias=fast",
               "map: an alias becomes its model, nothing else moves");
    tap_is_str(map(l, NULL, "{ \"a\": 1 ,\"model\" :\"smart\"}"),
               "{ \"a\": 1 ,\"model\" :\"big-prod\"} alias=smart",
               "map: spacing kept");
    tap_is_str(map(l, NULL, "{\"model\":\"mini-prod\"}"), "(unchanged)",
               "map: a model name is left alone");
    tap_is_str(map(l, NULL, "{\"model\":\"f\\u0061st\"}"), "(unchanged)",
               "map: an escaped alias is not one (the allowlist refuses)");
    tap_is_str(map(l, NULL, "{\"messages\":[]}"), "(unchanged)",
               "map: no model, no alias");

    tap_is_str(map(l, "mini-prod", "{\"model\":\"gpt-4o\",\"a\":1}"),
               "{\"model\":\"mini-prod\",\"a\":1}",
               "map: force replaces the model");
    tap_is_str(map(l, "mini-prod", "{\"a\":1}"),
               "{\"model\":\"mini-prod\",\"a\":1}",
               "map: force adds a model");
    tap_is_str(map(l, "mini-prod", " { } "), " {\"model\":\"mini-prod\" } ",
               "map: force into an empty object");
    tap_is_str(map(l, "mini-prod", "{\"model\":\"mini-prod\"}"),
               "(unchanged)", "map: force, already the same");
    tap_is_str(map(l, "mini-prod", "[]"), "(unchanged)",
               "map: not an object, left for the body check");
    tap_is_str(map(l, "mini-prod", "{\"model\":\"\\q\"}"), "(refused)",
               "map: force refuses a bad escape");
    tap_is_str(map(l, "mini-prod", "{\"model\":\"a\tb\"}"), "(refused)",
               "map: force refuses a control byte");
    tap_is_str(map(l, "mini-prod", "{\"model\":\"g\\u0070t-4o\"}"),
               "(refused)",
               "map: force refuses a valid escape (the check would read "
               "gpt-4o while mini-prod is served)");
    tap_is_str(map(l, "mini-prod", "{\"model\":\"mini-pro\\u0064\"}"),
               "(refused)", "map: force refuses even its own name escaped");
    tap_is_str(map(l, "mini-prod", "{\"model\":7}"), "(unchanged)",
               "map: force leaves a model that is no string for the check");

    tap_ok(al_llm_model_splice((const unsigned char *) "{\"model\":\"x\"}",
                               13, 9, 3, "a\"b\\c", 5, &o, &n) == 0
           && n == 19 && memcmp(o, "{\"model\":\"a\\\"b\\\\c\"}", n) == 0,
           "splice: the new value is JSON-escaped");
    free(o);

    tap_ok(al_llm_model_splice((const unsigned char *) "{}", 2, 1, 5, "a",
                               1, &o, &n) == -1 && o == NULL,
           "splice: a range past the end is refused");

    /* the spliced body is what al_llm_request() checks */

    b = map(l, NULL, "{\"model\":\"fast\",\"model\":\"embed\"}");
    tap_ok(strncmp(b, "{\"model\":\"mini-prod\",\"model\":\"embed\"}", 36)
           == 0, "map: the first of two \"model\" keys");
    (void) al_llm_request(l, &l->clients[0], AL_LLM_EP_CHAT, NULL, 0,
                          (const unsigned char *) out, strlen(out) - 10,
                          &req);
    tap_ok(req.reason == AL_REASON_BODY,
           "... and the duplicate is refused by the body check");
    al_llm_request_free(&req);
}


static void
test_record(void)
{
    char             buf[AL_LLM_RECORD_MAX];
    al_llm_record_t  rec;

    memset(&rec, 0, sizeof(rec));
    rec.model.data = "mini-prod";
    rec.model.len = 9;
    rec.alias.data = "fast";
    rec.alias.len = 4;

    (void) al_llm_record_format(&rec, buf, sizeof(buf));
    tap_ok(strstr(buf, "\"model\":\"mini-prod\",\"alias\":\"fast\",") != NULL,
           "record: the real model, then the alias");

    rec.alias.len = 0;
    (void) al_llm_record_format(&rec, buf, sizeof(buf));
    tap_ok(strstr(buf, "\"alias\"") == NULL
           && strstr(buf, "fallback") == NULL,
           "record: no alias, no fallback, no fields");

    rec.provider.data = "backup";
    rec.provider.len = 6;
    rec.fallback_from.data = "primary";
    rec.fallback_from.len = 7;
    rec.fallback_status = 503;
    (void) al_llm_record_format(&rec, buf, sizeof(buf));
    tap_ok(strstr(buf, "\"provider\":\"backup\"") != NULL
           && strstr(buf, "\"fallback_from\":\"primary\","
                          "\"fallback_status\":503,") != NULL,
           "record: the entry that served, the one that failed and how");
}


#define OAI                                                                  \
    "  - name: oa\n"                                                         \
    "    prefix: /v1/proxy/openai\n"                                         \
    "    provider: openai\n"                                                 \
    "    upstream: https://api.openai.com/v1\n"                              \
    "    secret: k\n"                                                        \
    "    models: [gpt-4o-mini, gpt-4o, embed]\n"                             \
    "    aliases: { fast: gpt-4o-mini }\n"

#define ANT                                                                  \
    "  - name: an\n"                                                         \
    "    prefix: /v1/proxy/anthropic\n"                                      \
    "    provider: anthropic\n"                                              \
    "    upstream: https://api.anthropic.com/v1\n"                           \
    "    secret: k\n"                                                        \
    "    models: [claude]\n"                                                 \
    "    clients: { agent: {}, worker: {} }\n"


static void
test_fallback(void)
{
    char                    uri[256];
    size_t                  len;
    al_str_t                m;
    const char             *yaml;
    al_error_t              err;
    al_policy_t            *p;
    const al_llm_t         *oa, *az;
    const al_llm_client_t  *lc;

    refuse("fallback to no entry",
           HEAD OAI "    fallback: `nope\n" CLIENTS,
           "fallback \"nope\" is not an llm entry");

    refuse("fallback to itself",
           HEAD OAI "    fallback: `oa\n" CLIENTS,
           "cannot be its own fallback");

    refuse("fallback to another API",
           HEAD OAI "    fallback: `an\n" CLIENTS ANT,
           "speaks another API");

    refuse("fallback without the client",
           HEAD OAI "    fallback: `az\n" CLIENTS
           AZURE "    api_version: \"2024-10-21\"\n"
           "    clients: { agent: {} }\n",
           "fallback \"az\" does not list client \"worker\" of llm \"oa\"");

    refuse("fallback that allows fewer provider tools",
           HEAD OAI "    provider_tools: [mcp]\n    fallback: `az\n" CLIENTS
           AZURE "    api_version: \"2024-10-21\"\n" CLIENTS,
           "fallback \"az\" does not allow provider tool mcp, which llm "
           "\"oa\" allows");

    refuse("fallback that allows fewer members",
           HEAD OAI "    allow_members: [metadata, tags]\n"
           "    fallback: `az\n" CLIENTS
           AZURE "    api_version: \"2024-10-21\"\n"
           "    allow_members: metadata\n" CLIENTS,
           "fallback \"az\" does not allow member \"tags\", which llm "
           "\"oa\" allows; add it to the fallback's allow_members");

    yaml = HEAD OAI "    fallback: az\n" CLIENTS
           AZURE "    api_version: \"2024-10-21\"\n"
           "    aliases: { fast: mini-prod }\n" CLIENTS;

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, &err);

    if (!tap_ok(p != NULL, "an openai entry with an azure fallback loads")) {
        tap_diag("error: ", err.msg);
        return;
    }

    oa = &p->llm[0];
    az = &p->llm[1];

    tap_ok(oa->fallback == az && az->fallback == NULL,
           "fallback: the entry it names");

    lc = &az->clients[0];

    tap_ok(al_llm_fallback_model(az, lc, "gpt-4o-mini", 11, "fast", 4, &m)
           == 0 && m.len == 9 && memcmp(m.data, "mini-prod", 9) == 0,
           "fallback model: the alias, by the fallback's aliases");
    tap_ok(al_llm_fallback_model(az, lc, "gpt-4o", 6, "", 0, &m) == -1,
           "fallback model: a model the fallback does not serve");
    tap_ok(al_llm_fallback_model(az, lc, "embed", 5, "", 0, &m) == 0
           && m.len == 5, "fallback model: the same name when served");
    tap_ok(al_llm_fallback_model(az, &az->clients[1], "fast", 4, "", 0, &m)
           == -1, "fallback model: the client's allowlist in the fallback");

    m.data = "mini-prod";
    m.len = 9;

    tap_ok(al_llm_fallback_uri(az, AL_LLM_EP_CHAT, &m, uri, sizeof(uri),
                               &len) == 0
           && strcmp(uri, "/openai/deployments/mini-prod/chat/completions"
                          "?api-version=2024-10-21") == 0
           && len == strlen(uri), "fallback URI: azure deployment path");
    tap_ok(al_llm_fallback_uri(az, AL_LLM_EP_RESPONSES, &m, uri,
                               sizeof(uri), &len) == 0
           && strcmp(uri, "/openai/responses?api-version=2024-10-21") == 0,
           "fallback URI: azure responses");
    tap_ok(al_llm_fallback_uri(oa, AL_LLM_EP_EMBEDDINGS, &m, uri,
                               sizeof(uri), &len) == 0
           && strcmp(uri, "/v1/embeddings") == 0,
           "fallback URI: an OpenAI base path");
    tap_ok(al_llm_fallback_uri(oa, AL_LLM_EP_MODELS, &m, uri, sizeof(uri),
                               &len) == -1, "fallback URI: no GET endpoints");
    tap_ok(al_llm_fallback_uri(oa, AL_LLM_EP_MESSAGES, &m, uri, sizeof(uri),
                               &len) == -1,
           "fallback URI: messages only on anthropic");
    tap_ok(al_llm_fallback_uri(oa, AL_LLM_EP_CHAT, &m, uri, 5, &len) == -1,
           "fallback URI: bounded");

    al_policy_free(p);
}



#define LIST_OAI                                                             \
    "  - name: oa\n"                                                         \
    "    prefix: /v1/proxy/openai\n"                                         \
    "    provider: openai\n"                                                 \
    "    upstream: https://api.openai.com/v1\n"                              \
    "    secret: k\n"                                                        \
    "    models: [gpt-4o-mini, gpt-4o, embed]\n"                             \
    "    aliases: { fast: gpt-4o-mini, large: gpt-4o }\n"

#define LIST_ANT                                                             \
    "  - name: an\n"                                                         \
    "    prefix: /v1/proxy/anthropic\n"                                      \
    "    provider: anthropic\n"                                              \
    "    upstream: https://api.anthropic.com/v1\n"                           \
    "    secret: k\n"                                                        \
    "    models: [c1, c2]\n"                                                 \
    "    aliases: { c3: c1 }\n"                                              \
    "    clients: { agent: {}, worker: { models: [c2] } }\n"


static void
test_list(void)
{
    char                    buf[1024];
    size_t                  len;
    al_str_t                id;
    const char             *yaml;
    al_error_t              err;
    al_policy_t            *p;
    al_llm_page_t           page;
    const al_llm_t         *oa, *an;
    const al_llm_route_t   *r;

    yaml = HEAD LIST_OAI CLIENTS LIST_ANT;

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, &err);

    if (!tap_ok(p != NULL && p->nllm == 2, "list: the policy loads")) {
        tap_diag("error: ", err.msg);
        return;
    }

    oa = &p->llm[0];
    an = &p->llm[1];

    len = al_llm_model_list(oa, &oa->clients[0], NULL, buf, sizeof(buf));
    tap_is_str(buf,
        "{\"object\":\"list\",\"data\":["
        "{\"id\":\"gpt-4o-mini\",\"object\":\"model\",\"created\":0,"
        "\"owned_by\":\"airlock\"},"
        "{\"id\":\"gpt-4o\",\"object\":\"model\",\"created\":0,"
        "\"owned_by\":\"airlock\"},"
        "{\"id\":\"embed\",\"object\":\"model\",\"created\":0,"
        "\"owned_by\":\"airlock\"},"
        "{\"id\":\"fast\",\"object\":\"model\",\"created\":0,"
        "\"owned_by\":\"airlock\"},"
        "{\"id\":\"large\",\"object\":\"model\",\"created\":0,"
        "\"owned_by\":\"airlock\"}]}",
        "list: openai, the entry's models, then its aliases");
    tap_ok(len == strlen(buf), "list: the length");

    (void) al_llm_model_list(oa, &oa->clients[1], NULL, buf, sizeof(buf));
    tap_is_str(buf,
        "{\"object\":\"list\",\"data\":["
        "{\"id\":\"embed\",\"object\":\"model\",\"created\":0,"
        "\"owned_by\":\"airlock\"}]}",
        "list: a client's own models, no alias of a model it may not use");

    tap_ok(al_llm_model_list(oa, &oa->clients[0], NULL, NULL, 0) == len,
           "list: the length without a buffer");
    tap_ok(al_llm_model_list(oa, &oa->clients[0], NULL, buf, 16) == len
           && strlen(buf) == 15, "list: bounded, NUL-terminated");

    (void) al_llm_model_list(an, &an->clients[0], NULL, buf, sizeof(buf));
    tap_is_str(buf,
        "{\"data\":["
        "{\"type\":\"model\",\"id\":\"c1\",\"display_name\":\"c1\","
        "\"created_at\":\"1970-01-01T00:00:00Z\"},"
        "{\"type\":\"model\",\"id\":\"c2\",\"display_name\":\"c2\","
        "\"created_at\":\"1970-01-01T00:00:00Z\"},"
        "{\"type\":\"model\",\"id\":\"c3\",\"display_name\":\"c3\","
        "\"created_at\":\"1970-01-01T00:00:00Z\"}],"
        "\"has_more\":false,\"first_id\":\"c1\",\"last_id\":\"c3\"}",
        "list: anthropic");

    memset(&page, 0, sizeof(page));
    page.limit = 1;
    page.after_id.data = "c1";
    page.after_id.len = 2;

    (void) al_llm_model_list(an, &an->clients[0], &page, buf, sizeof(buf));
    tap_ok(strstr(buf, "\"id\":\"c2\"") != NULL
           && strstr(buf, "\"id\":\"c3\"") == NULL
           && strstr(buf, "\"has_more\":true,\"first_id\":\"c2\","
                          "\"last_id\":\"c2\"}") != NULL,
           "list: after_id and limit");

    page.after_id.len = 0;
    page.before_id.data = "c3";
    page.before_id.len = 2;
    page.limit = 5;

    (void) al_llm_model_list(an, &an->clients[0], &page, buf, sizeof(buf));
    tap_ok(strstr(buf, "\"has_more\":false,\"first_id\":\"c1\","
                       "\"last_id\":\"c2\"}") != NULL,
           "list: before_id");

    page.before_id.data = "c9";

    (void) al_llm_model_list(an, &an->clients[0], &page, buf, sizeof(buf));
    tap_is_str(buf, "{\"data\":[],\"has_more\":false,\"first_id\":null,"
                    "\"last_id\":null}", "list: a cursor not listed");

    (void) al_llm_model_list(an, &an->clients[1], NULL, buf, sizeof(buf));
    tap_ok(strstr(buf, "\"first_id\":\"c2\",\"last_id\":\"c2\"}")
           != NULL, "list: anthropic, a client's own models");

    tap_ok(oa->clients[0].naliases == 2 && oa->clients[1].naliases == 0
           && an->clients[0].naliases == 1 && an->clients[1].naliases == 0,
           "list: each client's aliases, listed at load");

    /* GET models/{id}: the same list, one object of it */

    tap_ok(al_llm_model_listed(oa, &oa->clients[0], "fast", 4)
           && al_llm_model_listed(oa, &oa->clients[0], "gpt-4o", 6)
           && al_llm_model_listed(oa, &oa->clients[1], "embed", 5),
           "models/{id}: a model or an alias the client may use is listed");
    tap_ok(!al_llm_model_listed(oa, &oa->clients[1], "fast", 4)
           && !al_llm_model_listed(oa, &oa->clients[1], "gpt-4o", 6)
           && !al_llm_model_listed(oa, &oa->clients[0], "gpt-5", 5)
           && !al_llm_model_listed(an, &an->clients[1], "c3", 2),
           "models/{id}: another client's model or alias is not, nor "
           "one of no entry");
    tap_ok(al_llm_model_listed(oa, NULL, "large", 5)
           && !al_llm_model_listed(oa, NULL, "larg", 4),
           "models/{id}: no client, the entry's list");

    r = route(oa, &oa->clients[0], AL_METHOD_GET, "/models/fast");
    tap_ok(r->reason == AL_REASON_NONE && r->endpoint == AL_LLM_EP_MODEL
           && r->model.len == 4 && memcmp(r->model.data, "fast", 4) == 0,
           "models/{id}: an alias routes, its id kept");

    r = route(oa, &oa->clients[1], AL_METHOD_GET, "/v1/models/gpt-4o");
    tap_ok(r->reason == AL_REASON_MODEL && r->endpoint == AL_LLM_EP_MODEL
           && al_llm_error_from_route(r->reason, r->endpoint)
              == AL_LLM_ERR_NOT_FOUND,
           "models/{id}: not on the list, not found");
    tap_ok(al_llm_error_from_route(AL_REASON_MODEL, AL_LLM_EP_CHAT)
           == AL_LLM_ERR_MODEL
           && al_llm_error_from_route(AL_REASON_QUERY, AL_LLM_EP_MODEL)
              == AL_LLM_ERR_ENDPOINT,
           "models/{id}: other refusals keep their errors");

    id.data = "fast";
    id.len = 4;
    len = al_llm_model_get(oa, &id, buf, sizeof(buf));
    tap_is_str(buf, "{\"id\":\"fast\",\"object\":\"model\",\"created\":0,"
                    "\"owned_by\":\"airlock\"}", "models/{id}: openai");
    tap_ok(len == strlen(buf) && al_llm_model_get(oa, &id, NULL, 0) == len,
           "models/{id}: the length");

    id.data = "c3";
    id.len = 2;
    (void) al_llm_model_get(an, &id, buf, sizeof(buf));
    tap_is_str(buf, "{\"type\":\"model\",\"id\":\"c3\",\"display_name\":"
                    "\"c3\",\"created_at\":\"1970-01-01T00:00:00Z\"}",
               "models/{id}: anthropic");

    len = al_llm_error_body(AL_LLM_OPENAI, AL_LLM_ERR_NOT_FOUND, "gone",
                            "r1", buf, sizeof(buf));
    tap_ok(len == strlen(buf) && al_llm_error_status(AL_LLM_ERR_NOT_FOUND)
           == 404 && strstr(buf, "\"type\":\"invalid_request_error\","
                                 "\"param\":\"model\",\"code\":"
                                 "\"model_not_found\"") != NULL,
           "models/{id}: OpenAI's 404");

    (void) al_llm_error_body(AL_LLM_ANTHROPIC, AL_LLM_ERR_NOT_FOUND, NULL,
                             "r1", buf, sizeof(buf));
    tap_ok(strstr(buf, "{\"type\":\"error\",\"error\":{\"type\":"
                       "\"not_found_error\"") != NULL,
           "models/{id}: Anthropic's 404");

    al_policy_free(p);
}


/*
 * Many aliases: a page and its cursors cost what the page holds and one
 * pass over the list, not a pass over the aliases for every id (which
 * took seconds at this size: the list was found again id by id).  Held
 * by count, not by time: list_looks counts the ids of the list
 * read, and each call may read one pass (the cursor's, or the id's for
 * models/{id}) and the page, and its first and last ids again; a list
 * found again id by id reads about total^2 / 2 of them.  And the pages
 * are made from the client's list as al_llm_client_list() made it at
 * load: with the aliases' models changed under it, they do not change.
 */

#define MANY  20000

static void
test_list_many(void)
{
    char                   buf[4096], want[64];
    size_t                 i, total, looks, most;
    al_str_t               models[2], cmodels[1];
    al_llm_t               llm;
    al_llm_page_t          page;
    al_llm_client_t        lc;
    static char            names[MANY][8];
    static al_llm_alias_t  aliases[MANY];
    static const al_llm_alias_t  *list[MANY];

    models[0].data = "m-ok";
    models[0].len = 4;
    models[1].data = "m-no";
    models[1].len = 4;
    cmodels[0] = models[0];

    /* even aliases to the client's model, odd ones to another */

    for (i = 0; i < MANY; i++) {
        (void) snprintf(names[i], sizeof(names[i]), "a%zu", i);
        aliases[i].name.data = names[i];
        aliases[i].name.len = strlen(names[i]);
        aliases[i].model = models[i % 2];
    }

    memset(&llm, 0, sizeof(llm));
    llm.kind = AL_LLM_ANTHROPIC;
    llm.models = models;
    llm.nmodels = 2;
    llm.aliases = aliases;
    llm.naliases = MANY;

    memset(&lc, 0, sizeof(lc));
    lc.models = cmodels;
    lc.nmodels = 1;

    tap_ok(al_llm_client_list(&llm, &lc, list) == MANY / 2
           && lc.naliases == MANY / 2 && lc.aliases[1] == &aliases[2],
           "many: the client's aliases, once");

    /* the list is made: the aliases' models no longer matter */

    for (i = 0; i < MANY; i++) {
        aliases[i].model = models[(i + 1) % 2];
    }

    total = lc.nmodels + lc.naliases;
    most = 0;

    memset(&page, 0, sizeof(page));
    page.limit = 1;
    page.after_id.data = "a19996";
    page.after_id.len = 6;

    looks = list_looks;
    (void) al_llm_model_list(&llm, &lc, &page, buf, sizeof(buf));
    looks = list_looks - looks;
    most = (looks > most) ? looks : most;
    tap_ok(strstr(buf, "\"has_more\":false,\"first_id\":\"a19998\","
                       "\"last_id\":\"a19998\"}") != NULL,
           "many: after_id near the end");
    looks_ok(looks, total + page.limit + 2,
             "many: after_id: one pass and the page");

    page.after_id.len = 0;
    page.before_id.data = "a4";
    page.before_id.len = 2;
    page.limit = 5;

    looks = list_looks;
    (void) al_llm_model_list(&llm, &lc, &page, buf, sizeof(buf));
    looks = list_looks - looks;
    most = (looks > most) ? looks : most;
    tap_ok(strstr(buf, "\"has_more\":false,\"first_id\":\"m-ok\","
                       "\"last_id\":\"a2\"}") != NULL,
           "many: before_id near the start");
    looks_ok(looks, 3 + 1 + 3 + 2,
             "many: before_id: as far as it, and the page");

    page.before_id.len = 0;
    page.limit = 10;
    page.after_id.data = "a19978";
    page.after_id.len = 6;

    looks = list_looks;
    (void) al_llm_model_list(&llm, &lc, &page, buf, sizeof(buf));
    looks = list_looks - looks;
    most = (looks > most) ? looks : most;
    (void) snprintf(want, sizeof(want), "\"last_id\":\"a%d\"}", MANY - 2);
    tap_ok(strstr(buf, "\"first_id\":\"a19980\"") != NULL
           && strstr(buf, want) != NULL
           && strstr(buf, "\"has_more\":false") != NULL,
           "many: the last page");
    looks_ok(looks, total + page.limit + 2,
             "many: the last page: one pass and the page");

    looks = list_looks;
    tap_ok(!al_llm_model_listed(&llm, &lc, "a19999", 6)
           && al_llm_model_listed(&llm, &lc, "a19998", 6),
           "many: models/{id} of the last aliases");
    looks = list_looks - looks;
    most = (looks > most) ? looks : most;
    looks_ok(looks, 2 * total, "many: models/{id}: one pass each");

    tap_ok(most >= total, "many: the ids read are counted");
}


static void
looks_ok(size_t looks, size_t most, const char *what)
{
    char  buf[64];

    if (!tap_ok(looks <= most, what)) {
        (void) snprintf(buf, sizeof(buf), "%zu, at most %zu", looks, most);
        tap_diag("ids read: ", buf);
    }
}
