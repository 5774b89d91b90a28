/*
 * The LLM gateway core: the endpoint table, the request body policy
 * (models, output caps, include_usage), usage from JSON responses, the
 * usage log line, budgets and the provider-native error bodies.  The
 * streaming parser has its own file, sse.c.
 */

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "airlock.h"
#include "al_llm.h"
#include "tap.h"


#define S(s)  { s, sizeof(s) - 1 }


static const al_llm_req_t *req(const al_llm_t *llm,
    const al_llm_client_t *lc, al_llm_endpoint_t ep, const char *body);
static json_t *req_json(void);
static json_int_t req_int(const char *key);
static const al_llm_route_t *route(const al_llm_t *llm, unsigned method,
    const char *target);
static int has(const char *s, const char *sub);
static void test_endpoints(void);
static void test_models(void);
static void test_caps(void);
static void test_thinking(void);
static void test_usage_option(void);
static void test_bodies(void);
static void test_estimate(void);
static void test_splice(void);
static void test_strict(void);
static void test_cap_members(void);
static void test_other_caps(void);
static void test_other_n(void);
static int body_is(const char *want);
static const al_llm_req_t *reqn(const al_llm_t *llm,
    const al_llm_client_t *lc, al_llm_endpoint_t ep, const char *body,
    size_t len);
static void test_usage(void);
static void test_usage_runs(void);
static void test_record_bytes(void);
static void test_record(void);
static void test_budget(void);
static void test_errors(void);
static void test_request_with(void);
static void *arena_alloc(void *data, size_t size);
static void test_scan_runs(void);
static void test_route_uri(void);
static void test_provider_tools(void);
static void test_state_ids(void);
static const char *state_ids(const char *body);
static void test_tool_choice(void);
static int refused_tool(const char *want);
static void test_case_fold(void);
static void test_body_text(void);
static void test_service_tier(void);
static void test_provider_routing(void);
static void test_background(void);
static void test_prediction(void);
static void test_user_config(void);
static void test_api_base(void);
static void test_merged(void);
static void test_total_over(void);
static int refused_case(const char *want);
static void test_members(void);
static int refused_member(const char *name, const char *ep,
    const char *llm);
static int member_case(const char *name);


static al_client_t  c_agent = { .name = S("agent") };
static al_client_t  c_worker = { .name = S("worker") };
static al_client_t  c_tools = { .name = S("tools") };
static al_client_t  c_small = { .name = S("small") };
static al_client_t  c_other = { .name = S("other") };

static al_str_t  oai_models[] = {
    S("gpt-4o-mini"), S("gpt-4o"), S("text-embedding-3-small"),
    S("ft:gpt-4o-mini:acme::x1")
};

static al_str_t  worker_models[] = { S("gpt-4o-mini") };

static al_llm_client_t  oai_clients[] = {
    { .client = &c_agent, .max_tokens = 1000, .clamp = 1,
      .tokens_per_minute = 20000, .tokens_per_day = 2000000 },
    { .client = &c_worker, .models = worker_models, .nmodels = 1,
      .max_tokens = 500 },
    { .client = &c_tools },
    { .client = &c_small, .max_tokens = 10, .clamp = 1 }
};

/*
 * The members other than the providers' own that the bodies below send,
 * as a policy's allow_members would list them (the 80 "k0".."k79" are
 * filled in by main()); oai_plain and bare list none.
 */
#define TEST_MEMBERS  14

static char      k_names[80][4];
static al_str_t  listed_members[TEST_MEMBERS + 80] = {
    S("x"), S("y"), S("z"), S("other"), S("metadata"), S("prompt"),
    S("Temperature"), S("MODE"), S("Modelo"), S("Message"), S("\xc3\xa9"),
    S("max_\xe2\x84\xaa" "ompletion_tokens"),
    S("max_compl\xc4\xb0" "tion_to\xe2\x84\xaa" "en\xc5\xbf"),
    S("model" "xxxxxxxxxxxxxxxxxxxxxxxxxxx")
};

static al_llm_t  oai = {
    .name = S("openai"), .prefix = S("/v1/proxy/openai"),
    .kind = AL_LLM_OPENAI, .upstream = { .base_path = S("/v1") },
    .models = oai_models, .nmodels = 4, .clients = oai_clients,
    .nclients = 4, .include_usage = 1, .body_max = 4096,
    .allow_members = listed_members, .nallow_members = TEST_MEMBERS + 80
};

static al_llm_t  compat = {
    .name = S("ollama"), .prefix = S("/v1/proxy/ollama"),
    .kind = AL_LLM_OPENAI_COMPATIBLE, .upstream = { .base_path = S("/v1") },
    .models = oai_models, .nmodels = 4, .clients = oai_clients,
    .nclients = 4, .include_usage = 1, .body_max = 4096,
    .allow_members = listed_members, .nallow_members = TEST_MEMBERS + 80
};

static al_llm_t  bare = {
    .name = S("bare"), .prefix = S("/v1/proxy/bare"),
    .kind = AL_LLM_OPENAI_COMPATIBLE, .upstream = { .base_path = S("/v1") },
    .models = oai_models, .nmodels = 4, .clients = oai_clients,
    .nclients = 4, .include_usage = 1, .body_max = 4096
};

static al_llm_t  oai_plain = {
    .name = S("openai"), .prefix = S("/v1/proxy/openai"),
    .kind = AL_LLM_OPENAI, .upstream = { .base_path = S("/v1") },
    .models = oai_models, .nmodels = 4, .clients = oai_clients,
    .nclients = 4, .include_usage = 0, .body_max = 4096
};

static al_str_t  ant_models[] = {
    S("claude-3-5-haiku-latest"), S("claude-sonnet-4-5")
};

static al_llm_client_t  ant_clients[] = {
    { .client = &c_agent, .max_tokens = 1000, .clamp = 1 }
};

static al_llm_t  ant = {
    .name = S("anthropic"), .prefix = S("/v1/proxy/anthropic"),
    .kind = AL_LLM_ANTHROPIC, .upstream = { .base_path = S("/v1") },
    .models = ant_models, .nmodels = 2, .clients = ant_clients,
    .nclients = 1, .body_max = 4096,
    .allow_members = listed_members, .nallow_members = TEST_MEMBERS + 80
};

static al_llm_t  bare_ant = {
    .name = S("bare_ant"), .prefix = S("/v1/proxy/bare_ant"),
    .kind = AL_LLM_ANTHROPIC, .upstream = { .base_path = S("/v1") },
    .models = ant_models, .nmodels = 2, .clients = ant_clients,
    .nclients = 1, .body_max = 4096
};

#define AGENT   (&oai_clients[0])
#define WORKER  (&oai_clients[1])
#define TOOLS   (&oai_clients[2])
#define SMALL   (&oai_clients[3])

static al_llm_req_t    rq;
static al_llm_route_t  rt;


int
main(void)
{
    size_t  k;

    for (k = 0; k < 80; k++) {
        (void) snprintf(k_names[k], sizeof(k_names[k]), "k%zu", k);
        listed_members[TEST_MEMBERS + k].data = k_names[k];
        listed_members[TEST_MEMBERS + k].len = strlen(k_names[k]);
    }

    test_endpoints();
    test_models();
    test_caps();
    test_thinking();
    test_usage_option();
    test_bodies();
    test_estimate();
    test_splice();
    test_strict();
    test_usage();
    test_usage_runs();
    test_record();
    test_record_bytes();
    test_budget();
    test_errors();
    test_request_with();
    test_scan_runs();
    test_route_uri();
    test_provider_tools();
    test_state_ids();
    test_tool_choice();
    test_case_fold();
    test_body_text();
    test_service_tier();
    test_provider_routing();
    test_background();
    test_prediction();
    test_user_config();
    test_api_base();
    test_merged();
    test_total_over();
    test_members();
    test_cap_members();
    test_other_caps();
    test_other_n();

    al_llm_request_free(&rq);

    return tap_done();
}


static const al_llm_req_t *
req(const al_llm_t *llm, const al_llm_client_t *lc, al_llm_endpoint_t ep,
    const char *body)
{
    al_llm_request_free(&rq);
    (void) al_llm_request(llm, lc, ep, "application/json", 16,
                          (const unsigned char *) body, strlen(body), &rq);
    return &rq;
}


static const al_llm_req_t *
reqn(const al_llm_t *llm, const al_llm_client_t *lc, al_llm_endpoint_t ep,
    const char *body, size_t len)
{
    al_llm_request_free(&rq);
    (void) al_llm_request(llm, lc, ep, NULL, 0,
                          (const unsigned char *) body, len, &rq);
    return &rq;
}


/* the rewritten body is exactly want */

static int
body_is(const char *want)
{
    char  got[2048];

    if (rq.reason != AL_REASON_NONE || rq.body == NULL) {
        tap_diag("no rewrite: ", rq.detail);
        return 0;
    }

    if (rq.body_len != strlen(want) || memcmp(rq.body, want, rq.body_len))
    {
        (void) snprintf(got, sizeof(got), "%.*s", (int) rq.body_len,
                        rq.body);
        tap_diag("got:  ", got);
        tap_diag("want: ", want);
        return 0;
    }

    return 1;
}


/* the rewritten body, parsed */

static json_t *
req_json(void)
{
    json_error_t  err;

    if (rq.body == NULL) {
        return NULL;
    }

    return json_loadb(rq.body, rq.body_len, JSON_REJECT_DUPLICATES, &err);
}


static json_int_t
req_int(const char *key)
{
    json_t      *j, *v;
    json_int_t   i;

    j = req_json();
    if (j == NULL) {
        return -1;
    }

    v = json_object_get(j, key);
    i = (v != NULL && json_is_integer(v)) ? json_integer_value(v) : -1;
    json_decref(j);

    return i;
}


static const al_llm_route_t *
route(const al_llm_t *llm, unsigned method, const char *target)
{
    (void) al_llm_route(llm, AGENT, method, target, strlen(target), &rt);
    return &rt;
}


static int
has(const char *s, const char *sub)
{
    return s != NULL && strstr(s, sub) != NULL;
}


static void
test_endpoints(void)
{
    size_t  i;

    static const struct {
        const al_llm_t     *llm;
        unsigned            method;
        const char         *target;
        al_llm_endpoint_t   ep;
        al_reason_t         reason;
        const char         *uri;
    } t[] = {
        { &oai, AL_METHOD_POST, "/chat/completions", AL_LLM_EP_CHAT,
          AL_REASON_NONE, "/v1/chat/completions" },
        { &oai, AL_METHOD_POST, "/completions", AL_LLM_EP_COMPLETIONS,
          AL_REASON_NONE, "/v1/completions" },
        { &oai, AL_METHOD_POST, "/embeddings", AL_LLM_EP_EMBEDDINGS,
          AL_REASON_NONE, "/v1/embeddings" },
        { &oai, AL_METHOD_POST, "/responses", AL_LLM_EP_RESPONSES,
          AL_REASON_NONE, "/v1/responses" },
        { &oai, AL_METHOD_GET, "/models", AL_LLM_EP_MODELS,
          AL_REASON_NONE, "/v1/models" },
        { &oai, AL_METHOD_GET, "/models/gpt-4o", AL_LLM_EP_MODEL,
          AL_REASON_NONE, "/v1/models/gpt-4o" },
        { &oai, AL_METHOD_GET, "/models/ft:gpt-4o-mini:acme::x1",
          AL_LLM_EP_MODEL, AL_REASON_NONE,
          "/v1/models/ft:gpt-4o-mini:acme::x1" },
        { &oai, AL_METHOD_GET, "/models/gpt-5", AL_LLM_EP_MODEL,
          AL_REASON_MODEL, "" },
        { &compat, AL_METHOD_POST, "/chat/completions", AL_LLM_EP_CHAT,
          AL_REASON_NONE, "/v1/chat/completions" },
        { &ant, AL_METHOD_POST, "/messages", AL_LLM_EP_MESSAGES,
          AL_REASON_NONE, "/v1/messages" },
        { &ant, AL_METHOD_POST, "/messages?beta=true", AL_LLM_EP_MESSAGES,
          AL_REASON_NONE, "/v1/messages?beta=true" },
        /* the SDKs' own /v1 under the prefix (the Anthropic SDK's path) */
        { &ant, AL_METHOD_POST, "/v1/messages?beta=true", AL_LLM_EP_MESSAGES,
          AL_REASON_NONE, "/v1/messages?beta=true" },
        { &oai, AL_METHOD_POST, "/v1/chat/completions", AL_LLM_EP_CHAT,
          AL_REASON_NONE, "/v1/chat/completions" },
        { &ant, AL_METHOD_GET, "/models?limit=5&after_id=m%201",
          AL_LLM_EP_MODELS, AL_REASON_NONE,
          "/v1/models?limit=5&after_id=m%201" },

        /* refusals */
        { &oai, AL_METHOD_GET, "/chat/completions", AL_LLM_EP_CHAT,
          AL_REASON_METHOD, "" },
        { &oai, AL_METHOD_POST, "/files", AL_LLM_EP_NONE,
          AL_REASON_NO_ROUTE, "" },
        { &oai, AL_METHOD_POST, "/messages", AL_LLM_EP_NONE,
          AL_REASON_NO_ROUTE, "" },
        { &ant, AL_METHOD_POST, "/chat/completions", AL_LLM_EP_NONE,
          AL_REASON_NO_ROUTE, "" },
        { &ant, AL_METHOD_POST, "/v1/v1/messages", AL_LLM_EP_NONE,
          AL_REASON_NO_ROUTE, "" },
        { &oai, AL_METHOD_POST, "/chat/completions?api-version=1",
          AL_LLM_EP_CHAT, AL_REASON_QUERY, "" },
        { &ant, AL_METHOD_GET, "/models?cursor=1", AL_LLM_EP_MODELS,
          AL_REASON_QUERY, "" },
        { &oai, AL_METHOD_POST, "/chat/../completions", AL_LLM_EP_NONE,
          AL_REASON_PATH, "" },
        { &oai, AL_METHOD_POST, "/chat%2Fcompletions", AL_LLM_EP_NONE,
          AL_REASON_PATH, "" },
        { &oai, AL_METHOD_POST, "/chat/completions/", AL_LLM_EP_NONE,
          AL_REASON_PATH, "" },
        { &oai, AL_METHOD_POST, "//chat/completions", AL_LLM_EP_NONE,
          AL_REASON_PATH, "" },
        { &oai, AL_METHOD_POST, "/chat/%63ompletions", AL_LLM_EP_CHAT,
          AL_REASON_NONE, "/v1/chat/completions" },
        { &oai, AL_METHOD_POST, "", AL_LLM_EP_NONE, AL_REASON_PATH, "" },
        { &oai, AL_METHOD_POST, "/", AL_LLM_EP_NONE, AL_REASON_NO_ROUTE,
          "" },
        { &oai, AL_METHOD_GET, "/models/gpt-4o/extra", AL_LLM_EP_NONE,
          AL_REASON_NO_ROUTE, "" }
    };

    char  name[256];
    int   ok;

    for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        route(t[i].llm, t[i].method, t[i].target);

        ok = rt.reason == t[i].reason
             && (t[i].reason == AL_REASON_NONE || rt.detail[0] != '\0')
             && (t[i].reason != AL_REASON_NONE
                 || (rt.endpoint == t[i].ep
                     && strcmp(rt.uri, t[i].uri) == 0));

        snprintf(name, sizeof(name), "%s %s %s -> %s %s",
                 t[i].llm->name.data, al_method_name(t[i].method),
                 t[i].target, al_reason_name(t[i].reason),
                 al_llm_endpoint_name(t[i].ep));

        if (!tap_ok(ok, name)) {
            printf("# reason %s endpoint %s uri '%s' detail '%s'\n",
                   al_reason_name(rt.reason),
                   al_llm_endpoint_name(rt.endpoint), rt.uri, rt.detail);
        }
    }

    route(&oai, AL_METHOD_GET, "/models/gpt-4o");
    tap_ok(rt.model.len == 6 && memcmp(rt.model.data, "gpt-4o", 6) == 0,
           "GET /models/{id} reports the id");

    tap_ok(al_llm_endpoint_has_body(AL_LLM_EP_CHAT)
           && al_llm_endpoint_has_body(AL_LLM_EP_MESSAGES)
           && !al_llm_endpoint_has_body(AL_LLM_EP_MODELS)
           && !al_llm_endpoint_has_body(AL_LLM_EP_NONE),
           "which endpoints take a body");

    tap_ok(al_llm_find_client(&oai, &c_worker) == WORKER
           && al_llm_find_client(&oai, &c_other) == NULL
           && al_llm_find_client(&oai, NULL) == NULL,
           "al_llm_find_client");
}


static void
test_models(void)
{
    const char  *mini, *big;

    mini = "{\"model\":\"gpt-4o-mini\",\"messages\":[]}";
    big = "{\"model\":\"gpt-4o\",\"messages\":[]}";

    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT, big)->reason,
               AL_REASON_NONE, "agent may use gpt-4o (provider list)");
    req(&oai, TOOLS, AL_LLM_EP_CHAT, big);
    tap_ok(rq.reason == AL_REASON_NONE && rq.body == NULL
           && strcmp(rq.model, "gpt-4o") == 0
           && rq.model_len == 6,
           "an unchanged body is forwarded as is; model reported");

    tap_is_int(req(&oai, WORKER, AL_LLM_EP_CHAT, big)->reason,
               AL_REASON_MODEL, "worker may not use gpt-4o (own list)");
    tap_ok(has(rq.detail, "\"gpt-4o\" is not allowed"), "detail names it");

    tap_is_int(req(&oai, WORKER, AL_LLM_EP_CHAT, mini)->reason,
               AL_REASON_NONE, "worker may use gpt-4o-mini");

    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-5\",\"messages\":[]}")->reason,
               AL_REASON_MODEL, "a model on no list is refused");

    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"model\":\"GPT-4o\",\"messages\":[]}")->reason,
               AL_REASON_MODEL, "model names are case-sensitive");

    tap_is_int(req(&oai, NULL, AL_LLM_EP_CHAT, big)->reason,
               AL_REASON_NONE, "no client entry: the provider's list");

    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"messages\":[]}")->reason,
               AL_REASON_BODY, "missing model is refused");

    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"model\":[\"gpt-4o\"]}")->reason,
               AL_REASON_BODY, "a model that is not a string is refused");

    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"model\":\"\\u0001\\\"<script>\"}")->reason,
               AL_REASON_MODEL, "odd model name refused");
    tap_ok(strchr(rq.detail, '<') != NULL && strchr(rq.detail, 1) == NULL
           && strstr(rq.detail, "\\\"") == NULL,
           "detail shows only printable, quote-free client text");

    tap_is_int(req(&oai, AGENT, AL_LLM_EP_EMBEDDINGS,
                   "{\"model\":\"text-embedding-3-small\","
                   "\"input\":\"hello world\"}")->reason,
               AL_REASON_NONE, "embeddings: model checked, nothing capped");
    tap_ok(rq.body == NULL && rq.max_output == 0,
           "embeddings: no rewrite, no output");
}


/*
 * A thinking budget (Anthropic's thinking.budget_tokens, OpenRouter's
 * reasoning.max_tokens) is output: held to the output the request is
 * reserved for, per choice, clamp or not.
 */

static void
test_thinking(void)
{
    al_llm_t         routed, qwen;
    static al_str_t  reasoning[] = { S("reasoning") };
    static al_str_t  budgets[] = {
        S("thinking_budget"), S("thinking_token_budget"),
        S("thinking_budget_tokens"), S("chat_template_kwargs"), S("nvext"),
        S("enable_thinking")
    };

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":900,"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":800},"
        "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 900,
           "thinking: a budget under max_tokens passes");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":900,"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":901},"
        "\"messages\":[]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"thinking.budget_tokens\" 901 is over the "
                             "900 output tokens"),
           "thinking: a budget over max_tokens is refused");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":16000,"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":10000},"
        "\"messages\":[]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "10000 is over the 1000 output tokens"),
           "thinking: over the cap max_tokens was clamped to: refused");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":900,"
        "\"thinking\":{\"type\":\"enabled\",\"budget\\u005ftokens\":"
        "5000},\"messages\":[]}");
    tap_ok(rq.reason == AL_REASON_BODY,
           "thinking: the key read as the provider reads it, escapes too");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":900,"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":\"800\"},"
        "\"messages\":[]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "must be a non-negative integer"),
           "thinking: a budget that is no integer is refused");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":900,"
        "\"thinking\":{\"type\":\"adaptive\"},\"messages\":[]}");
    tap_ok(rq.reason == AL_REASON_NONE, "thinking: no budget passes");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":900,"
        "\"thinking\":null,\"messages\":[]}");
    tap_ok(rq.reason == AL_REASON_NONE, "thinking: null passes");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"thinking\":{\"budget_tokens\":10}}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"thinking\" is not accepted on "
                             "chat/completions"),
           "thinking: still only on messages");

    /* reasoning.max_tokens on responses, and the cap added */

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\","
        "\"reasoning\":{\"effort\":\"high\",\"max_tokens\":5000}}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"reasoning.max_tokens\" 5000 is over the "
                             "1000 output tokens"),
           "reasoning: over the output cap added: refused");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"max_output_tokens\":600,"
        "\"reasoning\":{\"max_tokens\":600,\"summary\":\"auto\"}}");
    tap_ok(rq.reason == AL_REASON_NONE, "reasoning: at the limit passes");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\","
        "\"reasoning\":{\"effort\":\"low\"}}");
    tap_ok(rq.reason == AL_REASON_NONE, "reasoning: an effort passes");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\","
        "\"reasoning\":{\"max_tokens\":99999}}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 0,
           "reasoning: nothing reserved, nothing to hold it to");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"reasoning\":{\"max_tokens\":400}}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"reasoning\" is not accepted on "
                             "chat/completions"),
           "reasoning: on chat only as allow_members lets it");

    routed = compat;
    routed.allow_members = reasoning;
    routed.nallow_members = 1;

    req(&routed, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,\"n\":2,"
        "\"reasoning\":{\"max_tokens\":400}}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 1000,
           "reasoning: allowed on chat, under max_tokens");

    req(&routed, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,\"n\":2,"
        "\"reasoning\":{\"max_tokens\":501}}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "501 is over the 500 output tokens"),
           "reasoning: per choice, n does not raise it");

    /*
     * Other servers' budgets, which pass only as allow_members names them:
     * held to the output limit too, and Qwen's, which those servers bill
     * beside max_tokens, reserved on top of it.
     */

    qwen = compat;
    qwen.allow_members = budgets;
    qwen.nallow_members = sizeof(budgets) / sizeof(budgets[0]);
    qwen.think_members = al_llm_members_think(budgets, qwen.nallow_members);

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"enable_thinking\":true,\"thinking_budget\":30000}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"thinking_budget\" 30000 is over the 500 "
                             "output tokens"),
           "thinking_budget: over the output limit: refused");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,\"n\":2,"
        "\"thinking_budget\":400}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 1800,
           "thinking_budget: under it passes, reserved beside max_tokens, "
           "per choice");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"thinking_budget\":-1}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"thinking_budget\" must be a non-negative "
                             "integer"),
           "thinking_budget: -1 (no limit) is refused");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"thinking_budget\":\"400\"}");
    tap_ok(rq.reason == AL_REASON_BODY, "thinking_budget: a string refused");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"thinking\\u005fbudget\":30000}");
    tap_ok(rq.reason == AL_REASON_BODY,
           "thinking_budget: the key read unescaped, as allowed");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"thinking_token_budget\":1001}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"thinking_token_budget\" 1001 is over the "
                             "1000 output tokens"),
           "thinking_token_budget (vLLM): over the default limit: refused");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"thinking_token_budget\":500,\"thinking_budget_tokens\":500}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 500,
           "vLLM's, llama.cpp's: at the limit pass, within it");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"thinking_budget_tokens\":8192}");
    tap_ok(rq.reason == AL_REASON_BODY,
           "thinking_budget_tokens (llama.cpp): over it: refused");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"chat_template_kwargs\":{\"enable_thinking\":true,"
        "\"thinking_budget\":4096}}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"chat_template_kwargs.thinking_budget\" "
                             "4096 is over"),
           "chat_template_kwargs.thinking_budget: over it: refused");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"chat_template_kwargs\":{\"enable_thinking\":true}}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 500,
           "chat_template_kwargs without a budget passes");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"nvext\":{\"max_thinking_tokens\":501}}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"nvext.max_thinking_tokens\" 501"),
           "nvext.max_thinking_tokens (NIM): over it: refused");

    req(&qwen, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"thinking_budget\":99999}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 0,
           "thinking_budget: nothing reserved, nothing to hold it to");

    /* Qwen's switch with no budget: the server's own, unbounded here */

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"enable_thinking\":true}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"enable_thinking\" needs a "
                             "\"thinking_budget\" (0 to the 500 output "
                             "tokens"),
           "enable_thinking with no thinking_budget: refused");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"enable_thinking\":1,"
        "\"thinking_budget\":null}");
    tap_ok(rq.reason == AL_REASON_BODY,
           "enable_thinking 1, thinking_budget null: refused");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"enable_thinking\":false}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 500,
           "enable_thinking false passes");

    req(&qwen, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"enable_thinking\":true,\"thinking_budget\":0}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 500,
           "enable_thinking with a thinking_budget passes");

    req(&qwen, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"enable_thinking\":true}");
    tap_ok(rq.reason == AL_REASON_NONE,
           "enable_thinking: nothing reserved, nothing to hold it to");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":500,"
        "\"thinking_budget\":400}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"thinking_budget\" is not accepted"),
           "thinking_budget: only as allow_members lets it");

    tap_ok(al_llm_member_eps("thinking", 8) == (1u << AL_LLM_EP_MESSAGES)
           && al_llm_member_eps("reasoning", 9)
              == (1u << AL_LLM_EP_RESPONSES)
           && al_llm_member_refused("reasoning", 9) == NULL
           && al_llm_member_refused("thinking", 8) == NULL,
           "thinking, reasoning: where they pass, and allow_members may "
           "add them");
}


static void
test_caps(void)
{
    json_t    *j;
    al_llm_t   stored;

    /* clamp */

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":5000,\"temperature\":0.7,"
        "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.clamped && rq.body != NULL,
           "max_tokens over the cap is clamped");
    tap_is_int(req_int("max_tokens"), 1000, "to the cap");
    tap_ok(rq.body != NULL
           && strncmp(rq.body, "{\"model\":\"gpt-4o\",\"max_tokens\":1000,"
                      "\"temperature\":0.7,\"messages\":", 58) == 0,
           "key order kept, compact, 0.7 printed as 0.7");
    tap_is_int((long) rq.max_output, 1000, "max_output is the cap");
    tap_ok(req_int("max_completion_tokens") == -1,
           "nothing else added when the client sent one");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_completion_tokens\":2000}");
    tap_is_int(req_int("max_completion_tokens"), 1000,
               "max_completion_tokens clamped too");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":800}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.body == NULL
           && rq.max_output == 800 && !rq.clamped,
           "under the cap: untouched");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":800,\"n\":3}");
    tap_is_int((long) rq.max_output, 2400, "n multiplies max_output");

    req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"x\",\"max_tokens\":800,"
        "\"best_of\":5}");
    tap_is_int((long) rq.max_output, 4000,
               "best_of multiplies max_output: every answer is charged");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":800,\"n\":3,\"best_of\":2}");
    tap_is_int((long) rq.max_output, 2400, "n over best_of: n counts");

    /* completions: a batch of prompts has each answered */

    req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":[\"a\", \"b,]\\\"\" ,\"c\"],"
        "\"max_tokens\":800}");
    tap_is_int((long) rq.max_output, 2400,
               "a batch of 3 prompts multiplies max_output");

    req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":[[1,2],[3],[4,[5]],[]],"
        "\"max_tokens\":800,\"best_of\":2}");
    tap_is_int((long) rq.max_output, 6400,
               "a batch of 4 token lists, best_of 2: times 8");

    req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":[1,2,3,4],\"max_tokens\":800}");
    tap_is_int((long) rq.max_output, 800, "token ids are one prompt");

    req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":[ ],\"max_tokens\":800}");
    tap_is_int((long) rq.max_output, 800, "an empty list: one");

    req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"pr\\u006fmpt\":[\"a\",\"b\"],"
        "\"max_tokens\":800}");
    tap_is_int((long) rq.max_output, 1600, "an escaped prompt key counts");

    req(&bare, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"prompt\":[\"a\",\"b\"]}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"prompt\"")
           && has(rq.detail, "allow_members"),
           "prompt is a completions member: refused on chat");

    req(&bare, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"prompt\":{\"id\":\"pmpt_1\"}}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "... and on responses (a stored prompt)");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"prompt\":\"y\"}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "... but where allow_members names it, as text");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"prompt\":{\"id\":\"pmpt_FAKE1\","
        "\"version\":\"2\",\"variables\":{\"city\":\"Paris\"}}}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"prompt\" names a prompt the account stores")
           && has(rq.detail, "provider_tools: stored_files"),
           "a stored prompt by its id needs stored_files as well");

    req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":{\"id\":\"pmpt_FAKE1\"}}");
    tap_is_int(rq.reason, AL_REASON_BODY, "... on completions too");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"prompt\":null}");
    tap_is_int(rq.reason, AL_REASON_NONE, "... null is none");

    stored = oai;
    stored.provider_tools = UINT32_C(1) << AL_LLM_PT_STORED_FILES;

    req(&stored, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"prompt\":{\"id\":\"pmpt_FAKE1\","
        "\"version\":\"2\",\"variables\":{\"city\":\"Paris\"}}}");
    tap_is_int(rq.reason, AL_REASON_NONE, "... and passes with it");

    req(&bare, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"prompt\":{\"id\":\"pmpt_1\"}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "allow_members"),
           "... where allow_members names it");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":800,\"n\":2,\"best_of\":4}");
    tap_is_int((long) rq.max_output, 3200, "best_of over n: best_of counts");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[]}");
    tap_ok(rq.capped && !rq.clamped && req_int("max_completion_tokens")
           == 1000 && req_int("max_tokens") == -1,
           "absent: openai gets max_completion_tokens = cap");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[]}");
    tap_ok(rq.capped && req_int("max_tokens") == 1000
           && req_int("max_completion_tokens") == -1,
           "absent: openai-compatible gets max_tokens = cap");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":null}");
    tap_ok(rq.capped && req_int("max_tokens") == 1000,
           "null counts as absent; the null member gets the cap");

    req(&oai, TOOLS, AL_LLM_EP_CHAT, "{\"model\":\"gpt-4o\"}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.body == NULL
           && rq.max_output == 0,
           "no cap, none sent: untouched, max_output unknown");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_completion_tokens\":"
        "4611686018427387904,\"n\":4}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == UINT64_MAX
           && al_llm_request_need(&rq) == UINT64_MAX,
           "n times a huge cap saturates, it does not wrap to nothing");

    /* reject */

    req(&oai, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"max_tokens\":600}");
    tap_is_int(rq.reason, AL_REASON_BODY, "over the cap, reject mode");
    tap_ok(has(rq.detail, "600") && has(rq.detail, "500"),
           "detail gives the value and the limit");

    req(&oai, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"max_tokens\":500}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.body == NULL,
           "at the cap, reject mode: fine");

    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"max_tokens\":-1}")->reason,
               AL_REASON_BODY, "negative max_tokens refused");
    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"max_tokens\":\"100\"}")->reason,
               AL_REASON_BODY, "string max_tokens refused");
    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"max_tokens\":10.5}")->reason,
               AL_REASON_BODY, "real max_tokens refused");
    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"n\":0}")->reason,
               AL_REASON_BODY, "n = 0 refused");
    tap_is_int(req(&oai, AGENT, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"n\":1000}")->reason,
               AL_REASON_BODY, "n over 128 refused");
    tap_is_int(req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
                   "{\"model\":\"gpt-4o\",\"prompt\":\"x\","
                   "\"best_of\":1000}")->reason,
               AL_REASON_BODY, "best_of over 128 refused");
    tap_ok(has(rq.detail, "\"best_of\" must be"), "and named");
    tap_is_int(req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
                   "{\"model\":\"gpt-4o\",\"prompt\":\"x\","
                   "\"best_of\":\"5\"}")->reason,
               AL_REASON_BODY, "string best_of refused");

    /* the other APIs */

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\",\"max_output_tokens\":9000}");
    tap_ok(rq.clamped && req_int("max_output_tokens") == 1000,
           "responses: max_output_tokens clamped");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\"}");
    tap_ok(rq.capped && req_int("max_output_tokens") == 1000
           && req_int("max_tokens") == -1,
           "responses: max_output_tokens added");

    req(&oai, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"hi\"}");
    tap_ok(rq.body == NULL && rq.max_output == 16,
           "completions: absent means 16, no rewrite");

    req(&oai, SMALL, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"hi\"}");
    tap_ok(rq.capped && req_int("max_tokens") == 10 && rq.max_output == 10,
           "completions: a cap under 16 is added");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":4096,"
        "\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}");
    tap_ok(rq.clamped && req_int("max_tokens") == 1000,
           "anthropic: max_tokens clamped");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"messages\":[]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "max_tokens: Field required"),
           "anthropic: max_tokens is required");

    req(&ant, NULL, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":64000,"
        "\"stream\":true}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.body == NULL && rq.stream
           && !rq.hide_usage && rq.max_output == 64000,
           "anthropic without cap: untouched, no usage option");

    j = NULL;
    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":5000,\"logit_bias\":"
        "{\"50256\":-100},\"top_p\":0.1,\"x\":[1e-7,123456.789,"
        "0.30000000000000004,2.5e300]}");
    j = req_json();
    tap_ok(j != NULL
           && json_real_value(json_object_get(j, "top_p")) == 0.1
           && json_real_value(json_array_get(json_object_get(j, "x"), 2))
              == 0.30000000000000004
           && json_real_value(json_array_get(json_object_get(j, "x"), 3))
              == 2.5e300
           && has(rq.body, "\"logit_bias\":{\"50256\":-100}"),
           "rewritten reals read back exactly");
    json_decref(j);
}


static void
test_usage_option(void)
{
    json_t  *j, *so;

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,\"messages\":[]}");
    j = req_json();
    so = (j != NULL) ? json_object_get(j, "stream_options") : NULL;
    tap_ok(rq.stream && rq.hide_usage && !rq.client_usage && so != NULL
           && json_is_true(json_object_get(so, "include_usage")),
           "stream without stream_options: include_usage added, hidden");
    json_decref(j);

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,"
        "\"stream_options\":{\"include_usage\":true}}");
    tap_ok(rq.body == NULL && rq.client_usage && !rq.hide_usage,
           "client asked itself: untouched, not hidden");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,"
        "\"stream_options\":{\"include_usage\":false,\"x\":1}}");
    tap_ok(rq.hide_usage && !rq.client_usage
           && has(rq.body, "\"stream_options\":{\"include_usage\":true,"
                  "\"x\":1}"),
           "include_usage false: set true in place, hidden");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,\"stream_options\":null,"
        "\"n\":1}");
    tap_ok(rq.hide_usage
           && has(rq.body, "\"stream_options\":{\"include_usage\":true},"
                  "\"n\":1}"),
           "stream_options null: replaced in place");

    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"stream\":true,"
                   "\"stream_options\":\"yes\"}")->reason,
               AL_REASON_BODY, "stream_options not an object: refused");

    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"stream\":true,"
                   "\"stream_options\":{\"include_usage\":1}}")->reason,
               AL_REASON_BODY, "include_usage not a boolean: refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":false}");
    tap_ok(rq.body == NULL && !rq.stream && !rq.hide_usage,
           "stream false: nothing added");

    req(&oai_plain, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true}");
    tap_ok(rq.body == NULL && !rq.hide_usage && !rq.client_usage,
           "include_usage off in policy: nothing added");

    req(&oai_plain, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,"
        "\"stream_options\":{\"include_usage\":true}}");
    tap_ok(rq.body == NULL && rq.client_usage && !rq.hide_usage,
           "include_usage off in policy: the client's own is noted");

    req(&oai, TOOLS, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"stream\":true,\"prompt\":\"x\"}");
    tap_ok(rq.hide_usage && has(rq.body, "\"include_usage\":true"),
           "legacy completions get include_usage too");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"stream\":true,\"input\":\"x\"}");
    tap_ok(rq.body == NULL && !rq.hide_usage,
           "responses streams carry usage already: untouched");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,\"max_tokens\":99999}");
    j = req_json();
    tap_ok(rq.clamped && rq.hide_usage && j != NULL
           && json_integer_value(json_object_get(j, "max_tokens")) == 1000
           && json_object_get(j, "stream_options") != NULL,
           "clamp and include_usage in one rewrite");
    json_decref(j);

    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"stream\":\"yes\"}")->reason,
               AL_REASON_BODY, "stream not a boolean: refused");
}


static void
test_bodies(void)
{
    char         *big;
    al_reason_t   r;

    big = malloc(5000);
    if (big == NULL) {
        abort();
    }
    memset(big, ' ', 4999);
    memcpy(big, "{\"model\":\"gpt-4o\"}", 18);
    big[4999] = '\0';

    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT, big)->reason,
               AL_REASON_BODY_TOO_LARGE, "over max_body_bytes");
    big[4096] = '\0';
    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT, big)->reason,
               AL_REASON_NONE, "exactly max_body_bytes is fine");
    free(big);

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"model\":\"gpt-5\"}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "duplicate"),
           "duplicate keys refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream_options\":{\"a\":1,\"a\":2}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "duplicate"),
           "nested duplicate keys refused");

    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",}")->reason,
               AL_REASON_BODY, "invalid JSON refused");
    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\"} {}")->reason,
               AL_REASON_BODY, "trailing data refused");
    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT,
                   "[{\"model\":\"gpt-4o\"}]")->reason,
               AL_REASON_BODY, "a top-level array refused");
    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT, "")->reason,
               AL_REASON_BODY, "empty body refused");
    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"x\":\"a\\u0000b\"}")->reason,
               AL_REASON_BODY, "NUL in a string refused");
    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_CHAT,
                   "{\"model\":\"gpt-4o\",\"x\":[[[[[[[[[[[[[[[[[[[[[[[["
                   "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
                   "]]]]}")->reason,
               AL_REASON_BODY, "nesting over the bound refused");

    r = al_llm_request(&oai, TOOLS, AL_LLM_EP_CHAT, "text/plain", 10,
                       (const unsigned char *) "{\"model\":\"gpt-4o\"}", 18,
                       &rq);
    tap_is_int(r, AL_REASON_BODY, "content type must be JSON");

    r = al_llm_request(&oai, TOOLS, AL_LLM_EP_CHAT,
                       "Application/JSON; charset=utf-8", 31,
                       (const unsigned char *) "{\"model\":\"gpt-4o\"}", 18,
                       &rq);
    tap_is_int(r, AL_REASON_NONE, "JSON with parameters is fine");

    r = al_llm_request(&oai, TOOLS, AL_LLM_EP_CHAT,
                       "application/json; charset=utf-7", 31,
                       (const unsigned char *) "{\"model\":\"gpt-4o\"}", 18,
                       &rq);
    tap_is_int(r, AL_REASON_BODY, "JSON in utf-7 refused");
    tap_ok(strstr(rq.detail, "charset must be utf-8") != NULL,
           "JSON in utf-7: detail");

    r = al_llm_request(&oai, TOOLS, AL_LLM_EP_CHAT,
                       "application/json; charset=\"utf-8\"", 33,
                       (const unsigned char *) "{\"model\":\"gpt-4o\"}", 18,
                       &rq);
    tap_is_int(r, AL_REASON_NONE, "JSON with a quoted utf-8 charset is fine");

    r = al_llm_request(&oai, TOOLS, AL_LLM_EP_CHAT, "application/jsonx", 17,
                       (const unsigned char *) "{\"model\":\"gpt-4o\"}", 18,
                       &rq);
    tap_is_int(r, AL_REASON_BODY, "application/jsonx is not JSON");

    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_MODELS, "{}")->reason,
               AL_REASON_BODY_TOO_LARGE, "GET /models takes no body");
    tap_is_int(req(&oai, TOOLS, AL_LLM_EP_MODELS, "")->reason,
               AL_REASON_NONE, "GET /models without a body");
}


static void
test_estimate(void)
{
    char  body[1024];

    snprintf(body, sizeof(body),
             "{\"model\":\"gpt-4o\",\"max_tokens\":100,\"messages\":["
             "{\"role\":\"system\",\"content\":\"%0400d\"},"
             "{\"role\":\"user\",\"content\":[{\"type\":\"text\","
             "\"text\":\"%0396d\"},{\"type\":\"image_url\",\"image_url\":"
             "{\"url\":\"data:image/png;base64,AAAA\"}}]}]}", 0, 0);

    req(&oai, TOOLS, AL_LLM_EP_CHAT, body);
    tap_ok(rq.reason == AL_REASON_NONE
           && rq.prompt_estimate >= 200
           && rq.prompt_estimate < 200 + 25 + AL_LLM_ATTACHMENT_TOKENS,
           "prompt estimate: text bytes / 4 plus a flat image estimate");
    tap_is_int((long) al_llm_request_need(&rq),
               (long) (rq.prompt_estimate + 100), "need = prompt + output");
    tap_is_int((long) rq.prompt_text,
               (4 + 6 + 7 + 400) + (4 + 4 + 7) + (4 + 4 + 4 + 396)
               + (4 + 9 + 9),
               "prompt text: the bytes the estimate counts (keys, and the "
               "values but the image's URL)");
    tap_is_int((long) al_llm_prompt_bound(rq.prompt_estimate,
                                          rq.prompt_text),
               (long) (rq.prompt_text + AL_LLM_ATTACHMENT_TOKENS),
               "prompt bound: a token a byte, the image as estimated");
    tap_is_int((long) al_llm_prompt_bound(1004, 4015), 4015,
               "prompt bound: the text alone");
    tap_is_int((long) al_llm_prompt_bound(0, 0), 0,
               "prompt bound: no prompt");
    tap_ok(al_llm_prompt_bound(UINT64_MAX, 8) == UINT64_MAX,
           "prompt bound: saturates");

    req(&oai, TOOLS, AL_LLM_EP_EMBEDDINGS,
        "{\"model\":\"text-embedding-3-small\",\"input\":[[1,2,3,4]]}");
    tap_is_int((long) rq.prompt_estimate, 4,
               "token-array input: one per token");
}


/*
 * Rewrites splice the body: every byte outside the changed values stays
 * as the client wrote it, whitespace and escapes included.
 */

static void
test_splice(void)
{
    size_t       i, n;
    char         big[2048];
    const char  *b, *m;

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        " { \"model\" : \"gpt-4o\" ,\n \"max_tokens\" :\t5000 ,"
        " \"temperature\" : 0.70 , \"messages\" : [ ] } \r\n");
    tap_ok(rq.clamped && body_is(" { \"model\" : \"gpt-4o\" ,\n"
                                 " \"max_tokens\" :\t1000 , \"temperature\""
                                 " : 0.70 , \"messages\" : [ ] } \r\n"),
           "clamp: the value replaced, whitespace and 0.70 kept");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":5000,"
        "\"max_completion_tokens\":99999}");
    tap_ok(body_is("{\"model\":\"gpt-4o\",\"max_tokens\":1000,"
                   "\"max_completion_tokens\":1000}")
           && rq.max_output == 1000,
           "clamp: both names, values of other lengths");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{ \"model\": \"gpt-4o\" , \"messages\": [] \n}");
    tap_ok(rq.capped && body_is("{ \"model\": \"gpt-4o\" , \"messages\": [],"
                                "\"max_completion_tokens\":1000 \n}"),
           "cap added after the last member");

    req(&compat, AGENT, AL_LLM_EP_CHAT, "{\"model\":\"gpt-4o\"}");
    tap_ok(body_is("{\"model\":\"gpt-4o\",\"max_tokens\":1000}"),
           "openai-compatible: max_tokens added");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_completion_tokens\":1}");
    tap_ok(body_is("{\"model\":\"gpt-4o\",\"max_completion_tokens\":1,"
                   "\"max_tokens\":1}") && rq.max_output == 1,
           "openai-compatible: max_completion_tokens alone is copied to "
           "max_tokens, the one such servers read");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":null,"
        "\"max_completion_tokens\":9999}");
    tap_ok(body_is("{\"model\":\"gpt-4o\",\"max_tokens\":1000,"
                   "\"max_completion_tokens\":1000}") && rq.max_output == 1000,
           "openai-compatible: ... clamped, into a null max_tokens");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_completion_tokens\":7}");
    tap_ok(body_is("{\"model\":\"gpt-4o\",\"max_completion_tokens\":7,"
                   "\"max_tokens\":7}"),
           "openai-compatible: ... for a client without a cap as well");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":5,"
        "\"max_completion_tokens\":7}");
    tap_ok(rq.body == NULL && rq.max_output == 7,
           "openai-compatible: both named, left as sent");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_completion_tokens\":null}");
    tap_ok(rq.capped && body_is("{\"model\":\"gpt-4o\","
                                "\"max_completion_tokens\":null,"
                                "\"max_tokens\":1000}")
           && rq.max_output == 1000,
           "openai-compatible: a null max_completion_tokens stays null, "
           "the cap goes to max_tokens");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_completion_tokens\":null,"
        "\"max_tokens\":null}");
    tap_ok(rq.capped && body_is("{\"model\":\"gpt-4o\","
                                "\"max_completion_tokens\":null,"
                                "\"max_tokens\":1000}"),
           "openai-compatible: both null, the cap into the null max_tokens");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":0}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "max_tokens 0 refused: Ollama reads it as no limit");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_completion_tokens\":-0}");
    tap_is_int(rq.reason, AL_REASON_BODY, "max_completion_tokens -0 refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\",\"max_output_tokens\":0}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strstr(rq.detail, "positive integer") != NULL,
           "max_output_tokens 0 refused for a client without a cap too");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":10,\"n_predict\":100000}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strstr(rq.detail, "n_predict") != NULL,
           "n_predict refused: llama.cpp reads it before max_tokens");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"n_predict\":null}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "n_predict refused as null too, for a client without a cap");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"N_Predict\":5}");
    tap_is_int(rq.reason, AL_REASON_BODY, "n_predict in another case refused");

    req(&compat, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"models\":[\"gpt-4o\"]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strstr(rq.detail, "\"models\"") != NULL,
           "models refused: OpenRouter serves the call with those");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"fallbacks\":[\"o1\"]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strstr(rq.detail, "\"fallbacks\"") != NULL,
           "fallbacks refused: LiteLLM serves the call with those");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"fallbacks\":[{\"model\":\"claude-opus-4-1\","
        "\"max_tokens\":100000}]}");
    tap_is_int(rq.reason, AL_REASON_BODY, "Anthropic fallbacks refused");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"models\":null}");
    tap_is_int(rq.reason, AL_REASON_BODY, "models refused as null too");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Fallbacks\":[\"o1\"]}");
    tap_is_int(rq.reason, AL_REASON_BODY, "fallbacks in another case refused");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"mod\\u0065ls\":[\"o1\"]}");
    tap_is_int(rq.reason, AL_REASON_BODY, "models with an escape refused");

    req(&compat, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"context_window_fallbacks\":"
        "[{\"gpt-4o-mini\":[\"gpt-4o\"]}]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strstr(rq.detail, "\"context_window_fallbacks\"") != NULL,
           "context_window_fallbacks refused: LiteLLM serves with those");

    req(&compat, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"content_policy_fallbacks\":"
        "[{\"gpt-4o-mini\":[\"gpt-4o\"]}]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strstr(rq.detail, "\"content_policy_fallbacks\"") != NULL,
           "content_policy_fallbacks refused");

    req(&compat, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"fallback_models\":[\"gpt-4o\"]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strstr(rq.detail, "\"fallback_models\"") != NULL,
           "fallback_models refused: Keywords AI serves with those");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Content_Policy_Fallbacks\":null}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "content_policy_fallbacks in another case refused");

    req(&compat, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"mock_testing_fallbacks\":true}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strstr(rq.detail, "\"mock_testing_fallbacks\"") != NULL,
           "mock_testing_fallbacks refused: LiteLLM falls back by it");

    req(&compat, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"mock_testing_context_fallbacks\":1}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "mock_testing_context_fallbacks refused");

    req(&compat, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\","
        "\"Mock_Testing_Content_Policy_Fallbacks\":\"true\"}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "mock_testing_content_policy_fallbacks in another case refused");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"fallback_m\\u006fdels\":[\"o1\"]}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "fallback_models with an escape refused");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"metadata\":{\"models\":1}}");
    tap_is_int(rq.reason, AL_REASON_NONE, "models below the top passes");

    req(&compat, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"hi\"}");
    tap_ok(rq.capped && req_int("max_tokens") == 1000
           && rq.max_output == 1000,
           "openai-compatible completions: no default of 16 assumed, the "
           "cap added");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\": null ,\"n\":2}");
    tap_ok(body_is("{\"model\":\"gpt-4o\",\"max_tokens\": 1000 ,\"n\":2}")
           && rq.max_output == 2000,
           "a null cap replaced in place");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\",\"max_output_tokens\":1e3}");
    tap_is_int(rq.reason, AL_REASON_BODY, "1e3 is a real: refused");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\",\"max_output_tokens\":"
        "9223372036854775807}");
    tap_ok(body_is("{\"model\":\"gpt-4o\",\"input\":\"hi\","
                   "\"max_output_tokens\":1000}"),
           "responses: the largest integer clamped");

    req(&oai, AGENT, AL_LLM_EP_CHAT, "{\"model\":\"gpt-4o\",\"stream\":true}");
    tap_ok(rq.capped && rq.hide_usage
           && body_is("{\"model\":\"gpt-4o\",\"stream\":true,"
                      "\"max_completion_tokens\":1000,"
                      "\"stream_options\":{\"include_usage\":true}}"),
           "cap and stream_options added, in that order");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,\"stream_options\":{ }}");
    tap_ok(body_is("{\"model\":\"gpt-4o\",\"stream\":true,"
                   "\"stream_options\":{\"include_usage\":true }}"),
           "include_usage added to an empty stream_options");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"stream_options\":{\"x\":[1,{\"include_usage\":false}]},"
        "\"model\":\"gpt-4o\",\"stream\":true}");
    tap_ok(body_is("{\"stream_options\":{\"x\":[1,{\"include_usage\":false}]"
                   ",\"include_usage\":true},\"model\":\"gpt-4o\","
                   "\"stream\":true}"),
           "include_usage added after the last member; nested ones "
           "are not it");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,"
        "\"stream_options\":{\"include_usage\" : null}}");
    tap_ok(body_is("{\"model\":\"gpt-4o\",\"stream\":true,"
                   "\"stream_options\":{\"include_usage\" : true}}"),
           "include_usage null set true in place");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,"
        "\"stream_options\":{\"include_\\u0075sage\":true}}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.body == NULL
           && rq.client_usage && !rq.hide_usage,
           "include_usage named with an escape is the client's own");

    /* names with escapes are the same names */

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"mo\\u0064el\":\"gpt-4o\",\"max_\\u0074okens\":5000}");
    tap_ok(rq.clamped && strcmp(rq.model, "gpt-4o") == 0
           && body_is("{\"mo\\u0064el\":\"gpt-4o\","
                      "\"max_\\u0074okens\":1000}"),
           "escaped member names are read and rewritten");

    req(&oai, TOOLS, AL_LLM_EP_CHAT, "{\"model\":\"gpt-4\\u006F\"}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.body == NULL
           && strcmp(rq.model, "gpt-4o") == 0,
           "an escaped model name is unescaped before the allowlist");
    tap_ok(rq.model_at == 9 && rq.model_raw_len == 13,
           "model_at and model_raw_len span the value as written");

    req(&oai, TOOLS, AL_LLM_EP_CHAT, "{\"model\":\"gpt-4\\u00f6\"}");
    tap_is_int(rq.reason, AL_REASON_MODEL,
               "a different code point is a different model");

    b = "{\"max_tokens\":99999 , \"model\" : \"gpt-4o\",\"n\":1}";
    req(&oai, AGENT, AL_LLM_EP_CHAT, b);
    m = strstr(b, "\"gpt-4o\"");
    tap_ok(rq.body != NULL && rq.model_at == (size_t) (m - b)
           && rq.model_raw_len == 8
           && rq.body_model_at == rq.model_at - 1
           && memcmp(rq.body + rq.body_model_at, "\"gpt-4o\"", 8) == 0,
           "body_model_at follows the model past a shorter value");

    b = "{\"model\":\"gpt-4o\",\"stream\":true}";
    req(&oai, AGENT, AL_LLM_EP_CHAT, b);
    tap_ok(rq.body != NULL && rq.body_model_at == rq.model_at
           && memcmp(rq.body + rq.body_model_at, "\"gpt-4o\"", 8) == 0,
           "members added after the model leave it where it was");

    /* duplicates, compared unescaped */

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"mo\\u0064el\":\"gpt-5\"}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "duplicate key"),
           "\"mo\\u0064el\" duplicates \"model\"");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"x\":{\"\\ud83d\\ude00\":1,"
        "\"\xf0\x9f\x98\x80\":2}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "duplicate key"),
           "a surrogate pair duplicates the same code point in UTF-8");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"x\":{\"\\u00e9\":1,\"\\u00E9\":2}}");
    tap_ok(rq.reason == AL_REASON_BODY, "hex digits in either case");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"x\":{\"a\":1},\"y\":{\"a\":1},"
        "\"z\":[{\"a\":1},{\"a\":2}]}");
    tap_ok(rq.reason == AL_REASON_NONE,
           "the same key in sibling objects is no duplicate");

    /* objects too large to compare keys pairwise: jansson checks them */

    n = (size_t) snprintf(big, sizeof(big), "{\"model\":\"gpt-4o\"");
    for (i = 0; i < 80; i++) {
        n += (size_t) snprintf(big + n, sizeof(big) - n, ",\"k%zu\":%zu",
                               i, i);
    }
    (void) snprintf(big + n, sizeof(big) - n, "}");

    req(&oai, TOOLS, AL_LLM_EP_CHAT, big);
    tap_ok(rq.reason == AL_REASON_NONE, "an object of 81 members");

    (void) snprintf(big + n, sizeof(big) - n, ",\"k\\u0033\":1}");
    req(&oai, TOOLS, AL_LLM_EP_CHAT, big);
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "duplicate"),
           "a duplicate past the 64th member is still refused");

    /* the estimate counts unescaped bytes, as before */

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\","
        "\"content\":\"\\u00e9\\u00e9\\u00e9\\u00e9\\n\\n\\n\\n\"}]}");
    tap_is_int((long) rq.prompt_estimate, 7,
               "estimate: 4 + 8 + 4 unescaped bytes (role, content) and "
               "the keys' 4 + 7, / 4");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"content\":[{\"image_url\":"
        "{\"url\":\"data:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}},"
        "{\"text\":\"abcd\"}]}],\"prompt\":[1,2,3.5],\"other\":\"zzzzzzzz\"}");
    tap_is_int((long) rq.prompt_estimate, 6 + AL_LLM_ATTACHMENT_TOKENS + 2,
               "estimate: text and the keys of the prompt (content, "
               "image_url, text), an attachment, integers; other members "
               "not");
}


/* the refusals of al_json_check(), from the scanner */

static void
test_strict(void)
{
    size_t  i;

    static const struct {
        const char  *body;
        const char  *what;
    } bad[] = {
        { "{\"model\":\"gpt-4o\",\"x\":\"\\ud800\"}", "a lone high surrogate" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\\udc00\"}", "a lone low surrogate" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\\ud800\\u0041\"}",
          "a high surrogate before a non-surrogate" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\\x\"}", "an unknown escape" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\\u12g4\"}", "a bad hex digit" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\xff\"}", "byte 0xff" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\xc0\xaf\"}", "overlong UTF-8" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\xed\xa0\x80\"}",
          "a surrogate in UTF-8" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\xf4\x90\x80\x80\"}",
          "over U+10FFFF" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\xe2\x82\"}", "cut UTF-8" },
        { "{\"model\":\"gpt-4o\",\"x\":\"a\nb\"}",
          "a raw newline in a string" },
        { "{\"model\":\"gpt-4o\",\"x\":9223372036854775808}",
          "an integer over int64" },
        { "{\"model\":\"gpt-4o\",\"x\":-9223372036854775809}",
          "an integer under int64" },
        { "{\"model\":\"gpt-4o\",\"x\":1e999}", "a real that overflows" },
        { "{\"model\":\"gpt-4o\",\"x\":01}", "a leading zero" },
        { "{\"model\":\"gpt-4o\",\"x\":1.}", "no digit after the point" },
        { "{\"model\":\"gpt-4o\",\"x\":1e}", "no digit in the exponent" },
        { "{\"model\":\"gpt-4o\",\"x\":-}", "a lone minus" },
        { "{\"model\":\"gpt-4o\",\"x\":.5}", "no digit before the point" },
        { "{\"model\":\"gpt-4o\",\"x\":+1}", "a plus sign" },
        { "{\"model\":\"gpt-4o\",\"x\":[1,]}", "a trailing comma" },
        { "{\"model\":\"gpt-4o\",\"x\":tru}", "a cut literal" },
        { "{\"model\":\"gpt-4o\",\"x\":True}", "a literal in capitals" },
        { "{\"model\":\"gpt-4o\"/* c */}", "a comment" },
        { "{'model':'gpt-4o'}", "single quotes" },
        { "{\"model\":\"gpt-4o\",\"x\":NaN}", "NaN" },
        { "{\"model\" \"gpt-4o\"}", "no colon" },
        { "{\"model\":\"gpt-4o\" \"n\":1}", "no comma" },
        { "{\"model\":\"gpt-4o\"", "no closing brace" },
        { "{\"model\":\"gpt-4o", "a cut string" },
        { "{\"model\":\"gpt-4o\",\"x\":\"\\u00", "a cut escape" },
        { "\xef\xbb\xbf{\"model\":\"gpt-4o\"}", "a byte order mark" },
        { " \n\t ", "only whitespace" },
        { "{\"model\":\"gpt-4o\"}\x0c", "a form feed after the body" },
        { "\"gpt-4o\"", "a string at the top" }
    };

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        req(&oai, TOOLS, AL_LLM_EP_CHAT, bad[i].body);
        tap_ok(rq.reason == AL_REASON_BODY && rq.body == NULL
               && rq.detail[0] != '\0', bad[i].what);
    }

    reqn(&oai, TOOLS, AL_LLM_EP_CHAT, "{\"model\":\"gpt-4o\",\"n\":1\0}", 25);
    tap_ok(rq.reason == AL_REASON_BODY,
           "a NUL byte after a number is refused");
    reqn(&oai, TOOLS, AL_LLM_EP_CHAT, "{\"model\":\"gpt-4o\"}\0", 19);
    tap_ok(rq.reason == AL_REASON_BODY, "a NUL byte after the body too");
    reqn(&oai, TOOLS, AL_LLM_EP_CHAT, "{\"model\":\"gp\0t-4o\"}", 19);
    tap_ok(rq.reason == AL_REASON_BODY, "a NUL byte in a string too");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"x\":[-0,0.5e-3,1E+2,-12.25,\"\\/\\b\\f\\r\\t"
        "\\\"\\\\\",\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\",true,false,"
        "null,{},[],\"\"],\"y\":1e-999}");
    tap_ok(rq.reason == AL_REASON_NONE,
           "every kind of value, escape and UTF-8 length is accepted");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]"
        "]]]]]]]]]]]]]]]]]]]]]]]]}");
    tap_ok(rq.reason == AL_REASON_NONE, "nesting of 32 is fine");
}


static void
test_usage(void)
{
    int             rc, bad;
    size_t          i, len;
    char            model[AL_LLM_MODEL_MAX];
    al_llm_usage_t  u, u2;
    al_llm_resp_t   r;
    const char     *body;

    body = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\","
           "\"created\":1720000000,\"model\":\"gpt-4o-mini-2024-07-18\","
           "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
           "\"content\":\"{\\\"usage\\\": {\\\"prompt_tokens\\\": 1}}\"},"
           "\"extra\":{\"usage\":{\"prompt_tokens\":7}},"
           "\"finish_reason\":\"stop\"}],"
           "\"usage\":{\"prompt_tokens\":19,\"completion_tokens\":10,"
           "\"total_tokens\":29,\"prompt_tokens_details\":"
           "{\"cached_tokens\":3,\"audio_tokens\":0}},"
           "\"system_fingerprint\":\"fp_1\"}";
    len = strlen(body);

    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                            (const unsigned char *) body, len, &u, model,
                            sizeof(model));
    tap_ok(rc == 0 && u.prompt_tokens == 19 && u.completion_tokens == 10
           && u.total_tokens == 29 && u.cached_tokens == 3,
           "openai chat usage; nested and quoted \"usage\" ignored");
    tap_is_str(model, "gpt-4o-mini-2024-07-18", "openai response model");

    bad = 0;
    for (i = 0; i <= len; i++) {
        al_llm_resp_init(&r, AL_LLM_OPENAI, AL_LLM_EP_CHAT);
        al_llm_resp_feed(&r, (const unsigned char *) body, i);
        al_llm_resp_feed(&r, (const unsigned char *) body + i, len - i);
        if (al_llm_resp_usage(&r, &u2, NULL, 0) != 0
            || memcmp(&u, &u2, sizeof(u)) != 0)
        {
            bad++;
        }
    }
    tap_is_int(bad, 0, "the same usage at every split point");

    al_llm_resp_init(&r, AL_LLM_OPENAI, AL_LLM_EP_CHAT);
    for (i = 0; i < len; i++) {
        al_llm_resp_feed(&r, (const unsigned char *) body + i, 1);
    }
    tap_ok(al_llm_resp_usage(&r, &u2, NULL, 0) == 0
           && memcmp(&u, &u2, sizeof(u)) == 0, "fed a byte at a time");

    body = "{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"gpt-4o\","
           "\"output\":[],\"usage\":{\"input_tokens\":36,"
           "\"input_tokens_details\":{\"cached_tokens\":5},"
           "\"output_tokens\":87,\"output_tokens_details\":"
           "{\"reasoning_tokens\":20},\"total_tokens\":123}}";
    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_RESPONSES,
                            (const unsigned char *) body, strlen(body), &u,
                            model, sizeof(model));
    tap_ok(rc == 0 && u.prompt_tokens == 36 && u.completion_tokens == 87
           && u.cached_tokens == 5 && u.total_tokens == 123
           && strcmp(model, "gpt-4o") == 0, "responses API usage");

    body = "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
           "\"model\":\"claude-sonnet-4-5\",\"content\":[{\"type\":\"text\","
           "\"text\":\"Hi\"}],\"stop_reason\":\"end_turn\","
           "\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":"
           "100,\"cache_read_input_tokens\":2000,\"output_tokens\":12}}";
    rc = al_llm_usage_parse(AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
                            (const unsigned char *) body, strlen(body), &u,
                            model, sizeof(model));
    tap_ok(rc == 0 && u.prompt_tokens == 2125 && u.completion_tokens == 12
           && u.cached_tokens == 2000 && u.cache_write_tokens == 100
           && u.total_tokens == 2137
           && strcmp(model, "claude-sonnet-4-5") == 0,
           "anthropic usage: input includes cache reads and writes");

    body = "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\","
           "\"index\":0,\"embedding\":[0.1,-0.2,0.3]}],"
           "\"model\":\"text-embedding-3-small\","
           "\"usage\":{\"prompt_tokens\":8,\"total_tokens\":8}}";
    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_EMBEDDINGS,
                            (const unsigned char *) body, strlen(body), &u,
                            model, sizeof(model));
    tap_ok(rc == 0 && u.prompt_tokens == 8 && u.completion_tokens == 0
           && u.total_tokens == 8, "embeddings usage");

    body = "{\"choices\":[{\"message\":{\"usage\":{\"prompt_tokens\":999}}}],"
           "\"usage\" : { \"prompt_\\u0074okens\" : 7 , \"completion_tokens\":"
           "2,\"prompt_tokens_details\":{\"audio_tokens\":0,"
           "\"cached_tokens\":4},\"x\":[1,{\"total_tokens\":50}]}}";
    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                            (const unsigned char *) body, strlen(body), &u,
                            NULL, 0);
    tap_ok(rc == 0 && u.prompt_tokens == 7 && u.completion_tokens == 2
           && u.cached_tokens == 4 && u.total_tokens == 9,
           "usage: escaped names, details, nested look-alikes ignored");

    body = "{\"usage\":{\"prompt_tokens\":7,\"prompt_tokens\":1000}}";
    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                            (const unsigned char *) body, strlen(body), &u,
                            NULL, 0);
    tap_ok(rc == 0 && u.prompt_tokens == 1000 && u.total_tokens == 1000,
           "usage with a key twice: the last, as a client reads it");

    body = "{\"error\":{\"message\":\"bad\","
           "\"type\":\"invalid_request_error\",\"param\":null,"
           "\"code\":null}}";
    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                            (const unsigned char *) body, strlen(body), &u,
                            model, sizeof(model));
    tap_ok(rc == -1 && model[0] == '\0' && u.total_tokens == 0,
           "an error body has no usage");

    body = "{\"model\":\"gpt-4o\",\"usage\":{\"prompt_tokens\":19,";
    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                            (const unsigned char *) body, strlen(body), &u,
                            NULL, 0);
    tap_is_int(rc, -1, "a cut response has no usage");

    body = "{\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":\"7\","
           "\"total_tokens\":1.5}}";
    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                            (const unsigned char *) body, strlen(body), &u,
                            NULL, 0);
    tap_ok(rc == 0 && u.prompt_tokens == 0 && u.completion_tokens == 0
           && u.total_tokens == 0, "nonsense counts read as 0");

    body = "[1,2,{\"usage\":{\"prompt_tokens\":1}}]";
    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                            (const unsigned char *) body, strlen(body), &u,
                            NULL, 0);
    tap_is_int(rc, -1, "not an object: no usage");
}


/*
 * The response scanner skips string bytes eight at a time: quotes and
 * backslashes at every offset from a word's start, in a value before
 * "model", in a nested member (skipped whole, brackets in its strings not
 * counted) and in the model itself, with bytes over 0x7f beside them (no
 * quote or backslash is found in them), split at every point, read as
 * when whole.
 */

static void
test_usage_runs(void)
{
    int             bad;
    size_t          k, i, len;
    char            model[AL_LLM_MODEL_MAX], want[64], body[256];
    al_llm_usage_t  u;
    al_llm_resp_t   r;

    bad = 0;

    for (k = 0; k < 17; k++) {
        len = (size_t) snprintf(body, sizeof(body),
                                "{\"pad\":\"%.*s\\\"\\\\ \\\"x\xff\","
                                "\"c\":[{\"t\":\"%.*s\\\"}]\\\\"
                                "\xc3\xa9\xe2\x82\xac\xff\x80\"},[]],"
                                "\"m\\u006fdel\":\"no\","
                                "\"model\":\"m\\\"%.*s\\\\"
                                "\xc3\xa9\xe2\x82\xac\","
                                "\"usage\":{\"prompt_tokens\":%zu}}",
                                (int) k, "xxxxxxxxxxxxxxxxx",
                                (int) k, "zzzzzzzzzzzzzzzzz",
                                (int) k, "yyyyyyyyyyyyyyyyy", k + 1);
        (void) snprintf(want, sizeof(want), "m\"%.*s\\\xc3\xa9\xe2\x82\xac",
                        (int) k, "yyyyyyyyyyyyyyyyy");

        for (i = 0; i <= len; i++) {
            al_llm_resp_init(&r, AL_LLM_OPENAI, AL_LLM_EP_CHAT);
            al_llm_resp_feed(&r, (const unsigned char *) body, i);
            al_llm_resp_feed(&r, (const unsigned char *) body + i, len - i);

            if (al_llm_resp_usage(&r, &u, model, sizeof(model)) != 0
                || u.prompt_tokens != k + 1 || strcmp(model, want) != 0)
            {
                bad++;
            }
        }

        al_llm_resp_init(&r, AL_LLM_OPENAI, AL_LLM_EP_CHAT);
        for (i = 0; i < len; i++) {
            al_llm_resp_feed(&r, (const unsigned char *) body + i, 1);
        }

        if (al_llm_resp_usage(&r, &u, model, sizeof(model)) != 0
            || u.prompt_tokens != k + 1 || strcmp(model, want) != 0)
        {
            bad++;
        }
    }

    tap_is_int(bad, 0, "escapes at every offset of a word, every split");
}


/*
 * A model name of plain bytes but one, at each place of names of 1 to 40
 * bytes: the line reads back as JSON with the name it was given (NUL and
 * a byte from 0x80, not UTF-8, as U+FFFD).  The run of plain bytes is found
 * sixteen, then eight, then one at a time.
 */

static void
test_record_bytes(void)
{
    int               ok, tried;
    size_t            n, k, c, wlen;
    json_t           *j, *m;
    al_llm_record_t   rec;
    json_error_t      err;
    char              name[48], want[64];
    char              buf[AL_LLM_RECORD_MAX];

    static const unsigned char  bytes[] = {
        0x00, 0x01, 0x1f, 0x20, '"', '\\', 'a', 0x7e, 0x7f, 0x80, 0xc3,
        0xff
    };

    memset(&rec, 0, sizeof(rec));
    rec.time_ms = 1720000000123LL;
    rec.request_id.data = "4f9c2a";
    rec.request_id.len = 6;
    rec.client.data = "agent";
    rec.client.len = 5;
    rec.provider = rec.client;
    rec.status = 200;

    ok = 0;
    tried = 0;

    for (n = 1; n <= 40; n++) {
        for (k = 0; k < n; k++) {
            for (c = 0; c < sizeof(bytes); c++) {
                memset(name, 'b', n);
                name[k] = (char) bytes[c];

                memcpy(want, name, n);
                wlen = n;

                if (bytes[c] == 0x00) {
                    memcpy(want + k, "\xef\xbf\xbd", 3);
                    memset(want + k + 3, 'b', n - k - 1);
                    wlen = n + 2;

                } else if (bytes[c] >= 0x80) {
                    /* \u00XX: U+00XX, as al_json_escape() writes it */
                    want[k] = (char) (0xc0 | (bytes[c] >> 6));
                    want[k + 1] = (char) (0x80 | (bytes[c] & 0x3f));
                    memset(want + k + 2, 'b', n - k - 1);
                    wlen = n + 1;
                }

                rec.model.data = name;
                rec.model.len = n;
                tried++;

                (void) al_llm_record_format(&rec, buf, sizeof(buf));

                j = json_loads(buf, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                               &err);
                m = j != NULL ? json_object_get(j, "model") : NULL;

                if (m != NULL && json_string_length(m) == wlen
                    && memcmp(json_string_value(m), want, wlen) == 0)
                {
                    ok++;

                } else if (ok == tried - 1) {
                    tap_diag("line: ", buf);
                }

                json_decref(j);
            }
        }
    }

    tap_is_int(ok, tried, "a model name with one byte not plain ASCII, "
               "at each place: read back as written");
}


static void
test_record(void)
{
    size_t           n, small;
    json_t          *j;
    al_llm_record_t  rec;
    json_error_t     err;
    char            *line;
    char             buf[AL_LLM_RECORD_MAX], junk[1000];
    char             plain[AL_LLM_RECORD_MAX];

    memset(&rec, 0, sizeof(rec));
    rec.time_ms = 1720000000123LL;
    rec.request_id.data = "4f9c2a";
    rec.request_id.len = 6;
    rec.client.data = "agent";
    rec.client.len = 5;
    rec.provider.data = "openai";
    rec.provider.len = 6;
    rec.model.data = "gpt-4o\"\n\xff\xc3\xa9\x7f";
    rec.model.len = 12;
    rec.usage.prompt_tokens = 19;
    rec.usage.completion_tokens = 10;
    rec.usage.cached_tokens = 3;
    rec.status = 200;
    rec.latency_ms = 1234;
    rec.ttfb_ms = 321;
    rec.stream = 1;
    rec.source = AL_LLM_SOURCE_STREAM;

    n = al_llm_record_format(&rec, buf, sizeof(buf));
    j = json_loads(buf, JSON_REJECT_DUPLICATES, &err);

    tap_ok(n == strlen(buf) && j != NULL, "the usage line is valid JSON");
    tap_ok(j != NULL
           && strcmp(json_string_value(json_object_get(j, "time")),
                     "2024-07-03T09:46:40.123Z") == 0
           && json_integer_value(json_object_get(j, "total_tokens")) == 29
           && json_integer_value(json_object_get(j, "cached_tokens")) == 3
           && json_integer_value(json_object_get(j, "status")) == 200
           && json_integer_value(json_object_get(j, "ttfb_ms")) == 321
           && json_is_true(json_object_get(j, "stream"))
           && strcmp(json_string_value(json_object_get(j, "usage_source")),
                     "stream") == 0,
           "fields and values");
    tap_ok(j != NULL
           && strcmp(json_string_value(json_object_get(j, "model")),
                     "gpt-4o\"\n\xc3\xbf\xc3\xa9\x7f") == 0
           && strstr(buf, "\\u00ff\xc3\xa9\\u007f\"") != NULL,
           "strings escaped (DEL too), an invalid byte as \\u00XX, "
           "valid kept");
    tap_ok(strncmp(buf, "{\"time\":", 8) == 0
           && strstr(buf, "\"usage_source\":\"stream\","
                     "\"cost_usd\":null}") != NULL
           && strchr(buf, '\n') == NULL, "field order; one line");
    json_decref(j);

    /* policy names copied as they are: the same line */

    rec.names_plain = 1;
    tap_ok(al_llm_record_format(&rec, plain, sizeof(plain)) == n
           && strcmp(plain, buf) == 0, "policy names copied: the same line");

    rec.client.data = "a-0_b.c9012345678901234567890123456789012345678901"
                      "23456789012345";
    rec.client.len = 64;
    rec.provider.data = "Z";
    rec.provider.len = 1;
    n = al_llm_record_format(&rec, plain, sizeof(plain));
    rec.names_plain = 0;
    tap_ok(al_llm_record_format(&rec, buf, sizeof(buf)) == n
           && strcmp(plain, buf) == 0,
           "the longest policy name and the shortest copied: the same line");

    /* counts around the places where the writer changes its way */

    {
        size_t     k;
        int        bad;
        uint64_t   v;

        static const uint64_t  counts[] = {
            0, 9, 10, 99, 100, 101, 999, 1000, 12345, UINT64_MAX
        };

        bad = 0;

        for (k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            v = counts[k];
            rec.usage.prompt_tokens = v;
            rec.usage.completion_tokens = v;
            rec.usage.cached_tokens = v;
            rec.usage.total_tokens = v;
            rec.status = (unsigned) (v > 999 ? 999 : v);
            rec.latency_ms = v;
            rec.ttfb_ms = v;

            (void) al_llm_record_format(&rec, buf, sizeof(buf));
            (void) snprintf(plain, sizeof(plain),
                            ",\"total_tokens\":%" PRIu64 ",\"status\":%u,"
                            "\"latency_ms\":%" PRIu64 ",\"ttfb_ms\":%" PRIu64
                            ",", v, rec.status, v, v);
            bad += (strstr(buf, plain) == NULL);
        }

        tap_is_int(bad, 0, "counts of 1 to 20 digits");

        /*
         * A caller's clock: each line the same as without one, over
         * seconds, minutes, days and years that turn, times before 1970
         * and after 9999, each time first and then again.
         */

        {
            int             again;
            int64_t         t;
            al_llm_clock_t  clock;

            static const int64_t  times[] = {
                1720000000123LL, 1720000000999LL, 1720000001000LL,
                1720000001001LL, 1720000000123LL, 1720051199999LL,
                1720051200000LL, 1735689599999LL, 1735689600000LL,
                0, -1, -999, -1000, -1001, -86400001LL,
                253402300799999LL, 253402300800000LL, 253402300800001LL,
                1720000000123LL, INT64_MAX / 2, INT64_MIN / 2
            };

            bad = 0;
            clock.sec = AL_LLM_CLOCK_NONE;

            for (k = 0; k < sizeof(times) / sizeof(times[0]); k++) {
                for (again = 0; again < 2; again++) {
                    t = times[k];
                    rec.time_ms = t;
                    rec.clock = NULL;
                    (void) al_llm_record_format(&rec, plain, sizeof(plain));
                    rec.clock = &clock;
                    (void) al_llm_record_format(&rec, buf, sizeof(buf));
                    bad += (strcmp(plain, buf) != 0);
                }
            }

            rec.clock = NULL;
            rec.time_ms = 1720000000123LL;

            tap_is_int(bad, 0, "a caller's clock: the same lines");
        }

        /* each endpoint's name and each source's, one out of range too */

        {
            int                e;
            al_llm_source_t    src0;
            al_llm_endpoint_t  ep0;

            static const char *const  eps[] = {
                "none", "chat", "completions", "embeddings", "responses",
                "messages", "models", "models", "none"
            };
            static const char *const  srcs[] = {
                "response", "stream", "estimated", "unknown"
            };

            bad = 0;
            ep0 = rec.endpoint;
            src0 = rec.source;

            for (e = 0; e < 9; e++) {
                rec.endpoint = (al_llm_endpoint_t) e;
                rec.source = (al_llm_source_t) (e % 4);

                (void) al_llm_record_format(&rec, buf, sizeof(buf));
                (void) snprintf(plain, sizeof(plain), ",\"endpoint\":\"%s\",",
                                eps[e]);
                bad += (strstr(buf, plain) == NULL);
                (void) snprintf(plain, sizeof(plain),
                                ",\"usage_source\":\"%s\",", srcs[e % 4]);
                bad += (strstr(buf, plain) == NULL);
            }

            tap_is_int(bad, 0, "the usage line's endpoint and source names");

            rec.endpoint = ep0;
            rec.source = src0;
        }

        /* al_llm_dec_back(): around each power of ten, and at random */

        {
            int        i;
            char      *p;
            uint64_t   x, pow;
            char       dec[24];

            bad = 0;
            pow = 1;
            x = 88172645463325252ULL;

            for (i = 0; i < 3000; i++) {
                if (i < 60) {
                    v = pow + (uint64_t) (i % 3) - 1;
                    if (i % 3 == 2 && pow <= UINT64_MAX / 10) {
                        pow *= 10;
                    }

                } else {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    v = x >> (i % 64);
                }

                p = al_llm_dec_back(dec + sizeof(dec), v);
                (void) snprintf(plain, sizeof(plain), "%" PRIu64, v);

                if ((size_t) (dec + sizeof(dec) - p) != strlen(plain)
                    || memcmp(p, plain, strlen(plain)) != 0)
                {
                    bad++;
                }
            }

            tap_is_int(bad, 0, "al_llm_dec_back(): as printf writes them, "
                       "around each power of ten and at random");
        }

        rec.usage.prompt_tokens = 19;
        rec.usage.completion_tokens = 10;
        rec.usage.cached_tokens = 3;
        rec.usage.total_tokens = 0;
        rec.status = 200;
        rec.latency_ms = 1234;
        rec.ttfb_ms = 321;
    }

    {
        memset(junk, 1, sizeof(junk));
        rec.model.data = junk;
        rec.model.len = sizeof(junk);
        rec.client = rec.model;
        rec.provider = rec.model;
        rec.request_id = rec.model;
        rec.time_ms = INT64_MAX;
        rec.priced = 1;
        rec.cost = UINT64_MAX;

        n = al_llm_record_format(&rec, buf, sizeof(buf));
        j = json_loads(buf, 0, &err);
        tap_ok(n < sizeof(buf) && j != NULL,
               "worst-case strings still fit AL_LLM_RECORD_MAX");
        json_decref(j);

        /*
         * Every field at its longest, in a heap buffer of exactly
         * AL_LLM_RECORD_MAX bytes (the line is written there without a
         * check per byte: a sanitizer build sees a byte past it), and
         * the same line cut into a shorter buffer.
         */

        rec.alias = rec.model;
        rec.fallback_from = rec.model;
        rec.fallback_status = UINT_MAX;
        rec.usage.prompt_tokens = UINT64_MAX;
        rec.usage.completion_tokens = UINT64_MAX;
        rec.usage.cached_tokens = UINT64_MAX;
        rec.usage.cache_write_tokens = UINT64_MAX;
        rec.usage.cache_write_1h_tokens = UINT64_MAX;
        rec.usage.total_tokens = UINT64_MAX;
        rec.status = UINT_MAX;
        rec.latency_ms = UINT64_MAX;
        rec.ttfb_ms = UINT64_MAX;

        line = malloc(AL_LLM_RECORD_MAX);
        n = line != NULL ? al_llm_record_format(&rec, line,
                                                AL_LLM_RECORD_MAX)
                         : 0;
        j = (line != NULL) ? json_loads(line, JSON_DECODE_INT_AS_REAL, &err)
                           : NULL;
        tap_ok(n == (line != NULL ? strlen(line) : 1)
               && n < AL_LLM_RECORD_MAX && j != NULL
               && json_is_string(json_object_get(j, "alias"))
               && json_number_value(json_object_get(j, "fallback_status"))
                  == (double) UINT_MAX,
               "every field at its longest fits AL_LLM_RECORD_MAX");
        json_decref(j);

        small = 1000;
        tap_ok(line != NULL
               && al_llm_record_format(&rec, buf, small) == n
               && strlen(buf) == small - 1
               && memcmp(buf, line, small - 1) == 0,
               "the longest line cut into a short buffer: its first bytes");
        free(line);

        rec.alias.len = 0;
        rec.fallback_from.len = 0;

        junk[sizeof(junk) - 1] = '\0';
        n = al_llm_error_body(AL_LLM_OPENAI, AL_LLM_ERR_INVALID, junk, junk,
                              buf, sizeof(buf));
        j = json_loads(buf, 0, &err);
        tap_ok(n < AL_LLM_ERROR_MAX && j != NULL,
               "worst-case openai error body fits AL_LLM_ERROR_MAX");
        json_decref(j);

        n = al_llm_error_body(AL_LLM_ANTHROPIC, AL_LLM_ERR_INVALID, junk,
                              junk, buf, sizeof(buf));
        j = json_loads(buf, 0, &err);
        tap_ok(n < AL_LLM_ERROR_MAX && j != NULL,
               "worst-case anthropic error body fits AL_LLM_ERROR_MAX");
        json_decref(j);
    }

    /* the time is written without gmtime(): the same as gmtime()'s */

    {
        int        i, same;
        int64_t    ms;
        time_t     t;
        struct tm  tm;
        char       want[64];
        uint64_t   x;

        static const int64_t  at[] = {
            0, -1, 951782400000LL, 951868799999LL, 4107542400000LL,
            4107456000000LL, 1735689599999LL, 253402300799999LL,
            -62135596800000LL
        };

        rec.priced = 0;
        rec.client.data = "agent";
        rec.client.len = 5;
        rec.provider = rec.client;
        rec.request_id = rec.client;
        rec.model = rec.client;

        same = 0;
        x = 88172645463325252ULL;

        for (i = 0; i < 2000; i++) {
            if (i < (int) (sizeof(at) / sizeof(at[0]))) {
                ms = at[i];

            } else {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ms = (int64_t) (x % 253402300800000ULL)
                     - (int64_t) (i % 2) * 62135596800000LL;
            }

            t = (time_t) (ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
            if (gmtime_r(&t, &tm) == NULL) {
                continue;
            }

            snprintf(want, sizeof(want),
                     "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (int) (ms - (int64_t) t * 1000));

            rec.time_ms = ms;
            (void) al_llm_record_format(&rec, buf, sizeof(buf));

            if (strncmp(buf, want, strlen(want)) == 0) {
                same++;

            } else if (same == i) {
                tap_diag("time: ", buf);
                tap_diag("want: ", want);
            }
        }

        tap_is_int(same, 2000, "the time: as gmtime() writes it, years "
                   "1 to 9999");
    }

    rec.model.data = "gpt-4o";
    rec.model.len = 6;
    small = 40;
    n = al_llm_record_format(&rec, buf, small);
    tap_ok(n > small && strlen(buf) == small - 1,
           "a short buffer: cut, terminated, needed length returned");
}


static void
test_budget(void)
{
    int              rc;
    int64_t          t0, at;
    al_llm_budget_t  b;
    al_llm_quota_t   q;
    al_llm_client_t  lc;

    memset(&b, 0, sizeof(b));
    memset(&lc, 0, sizeof(lc));
    lc.tokens_per_minute = 1000;
    lc.tokens_per_day = 5000;

    t0 = 1719999980;                        /* 20 s into a minute */

    rc = al_llm_budget_check(&b, &lc, t0, 400, &q);
    tap_ok(rc == 0 && q.minute_remaining == 1000 && q.day_remaining == 5000
           && q.minute_reset == 40 && q.retry_after == 0,
           "fresh budget: all remaining, reset in 40 s");

    al_llm_budget_charge(&b, t0, 700);
    rc = al_llm_budget_check(&b, &lc, t0 + 5, 400, &q);
    tap_ok(rc == -1 && q.over_minute && !q.over_day && !q.too_large
           && q.minute_remaining == 300 && q.retry_after == 35,
           "over the minute window: retry when it rolls");

    rc = al_llm_budget_check(&b, &lc, t0 + 5, 300, &q);
    tap_is_int(rc, 0, "exactly the remainder fits");

    rc = al_llm_budget_check(&b, &lc, t0 + 40, 400, &q);
    tap_ok(rc == 0 && q.minute_remaining == 1000 && q.day_remaining == 4300
           && b.minute_used == 0 && b.day_used == 700,
           "the minute rolled; the day did not");

    rc = al_llm_budget_check(&b, &lc, t0 + 40, 1001, &q);
    tap_ok(rc == -1 && q.too_large && q.retry_after == 0,
           "more than a whole minute window can never fit");

    rc = al_llm_budget_reserve(&b, &lc, t0 + 40, 900, &q);
    tap_ok(rc == 0 && b.minute_used == 900 && b.day_used == 1600
           && q.minute_remaining == 100, "reserve charges at once");

    rc = al_llm_budget_reserve(&b, &lc, t0 + 41, 200, &q);
    tap_ok(rc == -1 && b.minute_used == 900,
           "a second reservation does not fit; nothing charged");

    at = t0 + 40;
    al_llm_budget_settle(&b, t0 + 45, at, 900, 250);
    tap_ok(b.minute_used == 250 && b.day_used == 950,
           "settle gives back the reservation, charges the actual");

    al_llm_budget_reserve(&b, &lc, t0 + 50, 500, &q);
    al_llm_budget_settle(&b, t0 + 100, t0 + 50, 500, 120);
    tap_ok(b.minute_used == 120 && b.day_used == 950 + 120,
           "settled after the minute rolled: actual in the new window");

    b.day_used = 4900;
    rc = al_llm_budget_check(&b, &lc, t0 + 70, 200, &q);
    tap_ok(rc == -1 && q.over_day && q.retry_after == q.day_reset
           && q.day_reset == (unsigned) (86400 - (t0 + 70) % 86400),
           "over the day: retry at the next UTC day");

    rc = al_llm_budget_check(&b, &lc, t0 + 86400, 200, &q);
    tap_ok(rc == 0 && b.day_used == 0, "the day rolled");

    al_llm_budget_charge(&b, t0 + 86400, 10);
    rc = al_llm_budget_check(&b, &lc, t0 + 86400 - 3600, 10, &q);
    tap_ok(b.day_used == 10 && b.minute_used == 10,
           "a clock stepping back keeps the current windows");

    rc = al_llm_budget_check(&b, NULL, t0, UINT64_MAX, &q);
    tap_ok(rc == 0 && q.minute_remaining == UINT64_MAX
           && q.day_remaining == UINT64_MAX, "no limits: unlimited");

    al_llm_budget_charge(&b, t0 + 86400, UINT64_MAX);
    tap_ok(b.day_used == UINT64_MAX, "charges saturate");

    /* the reset as the answer says it, after the provider took its time */

    memset(&b, 0, sizeof(b));
    rc = al_llm_budget_check(&b, &lc, t0, 10, &q);
    tap_ok(rc == 0 && q.minute_end == t0 + 40 && q.day_end % 86400 == 0,
           "the quota says when its windows end");
    tap_is_int(al_llm_quota_reset(q.minute_end, AL_LLM_MINUTE, t0 + 15), 25,
               "reset from the answer's clock: 40 s at admission, 25 s "
               "when the answer leaves 15 s later");
    tap_is_int(al_llm_quota_reset(q.minute_end, AL_LLM_MINUTE, t0 + 45), 55,
               "the window rolled meanwhile: the next one's end");
    tap_is_int(al_llm_quota_reset(q.minute_end, AL_LLM_MINUTE, t0 + 40), 60,
               "at the very end: a whole window");

    /* the output cap a request without one gets */

    memset(&lc, 0, sizeof(lc));
    tap_is_int((long) al_llm_default_max_tokens(&lc), 0,
               "no budget, no caps: no default cap");
    lc.tokens_per_day = 5000;
    tap_is_int((long) al_llm_default_max_tokens(&lc),
               AL_LLM_DEFAULT_MAX_TOKENS, "a budget: the built-in default");
    lc.max_tokens = 300;
    tap_is_int((long) al_llm_default_max_tokens(&lc), 300,
               "max_tokens is the default");
    lc.default_max_tokens = 30;
    tap_is_int((long) al_llm_default_max_tokens(&lc), 30,
               "default_max_tokens wins");
    tap_is_int((long) al_llm_default_max_tokens(NULL), 0,
               "no client entry: none");
}


static void
test_errors(void)
{
    size_t          n, i, k;
    json_t         *j, *e;
    al_llm_quota_t  q;
    json_error_t    err;
    char            buf[AL_LLM_ERROR_MAX], msg[256], name[128];
    int             ok;

    static const al_llm_kind_t  kinds[] = {
        AL_LLM_OPENAI, AL_LLM_OPENAI_COMPATIBLE, AL_LLM_ANTHROPIC
    };

    static const unsigned  statuses[] = {
        429, 429, 403, 403, 400, 413, 403, 401
    };

    for (k = 0; k < 3; k++) {
        ok = 1;

        for (i = 0; i <= AL_LLM_ERR_AUTH; i++) {
            n = al_llm_error_body(kinds[k], (al_llm_error_t) i,
                                  "a \"quoted\" message", "req-1", buf,
                                  sizeof(buf));
            j = json_loads(buf, JSON_REJECT_DUPLICATES, &err);

            if (n != strlen(buf) || j == NULL
                || al_llm_error_status((al_llm_error_t) i) != statuses[i])
            {
                ok = 0;
                json_decref(j);
                continue;
            }

            e = json_object_get(j, "error");

            if (kinds[k] == AL_LLM_ANTHROPIC) {
                ok &= strcmp(json_string_value(json_object_get(j, "type")),
                             "error") == 0
                      && json_is_string(json_object_get(e, "type"))
                      && strcmp(json_string_value(
                                    json_object_get(e, "message")),
                                "a \"quoted\" message") == 0
                      && strcmp(json_string_value(
                                    json_object_get(j, "request_id")),
                                "req-1") == 0;
            } else {
                ok &= json_object_size(j) == 1
                      && json_is_string(json_object_get(e, "type"))
                      && json_is_string(json_object_get(e, "code"))
                      && json_object_get(e, "param") != NULL
                      && has(json_string_value(
                                 json_object_get(e, "message")),
                             "a \"quoted\" message (request id req-1)");
            }

            json_decref(j);
        }

        snprintf(name, sizeof(name), "error bodies are valid JSON in the "
                 "%s format", kinds[k] == AL_LLM_ANTHROPIC ? "anthropic"
                                                           : "openai");
        tap_ok(ok, name);
    }

    al_llm_error_body(AL_LLM_OPENAI, AL_LLM_ERR_RATE_LIMIT, NULL, NULL, buf,
                      sizeof(buf));
    tap_is_str(buf, "{\"error\":{\"message\":\"token rate limit reached for "
               "this client\",\"type\":\"tokens\",\"param\":null,"
               "\"code\":\"rate_limit_exceeded\"}}", "openai 429");

    al_llm_error_body(AL_LLM_ANTHROPIC, AL_LLM_ERR_RATE_LIMIT, "slow down",
                      NULL, buf, sizeof(buf));
    tap_is_str(buf, "{\"type\":\"error\",\"error\":{\"type\":"
               "\"rate_limit_error\",\"message\":\"slow down\"}}",
               "anthropic 429");

    al_llm_error_body(AL_LLM_OPENAI, AL_LLM_ERR_QUOTA, "x", NULL, buf,
                      sizeof(buf));
    tap_ok(has(buf, "\"type\":\"insufficient_quota\""),
           "openai quota: insufficient_quota");

    al_llm_error_body(AL_LLM_OPENAI, AL_LLM_ERR_MODEL, "x", NULL, buf,
                      sizeof(buf));
    tap_ok(has(buf, "\"param\":\"model\",\"code\":\"model_not_allowed\""),
           "openai 403 model names the param");

    al_llm_error_body(AL_LLM_ANTHROPIC, AL_LLM_ERR_MODEL, "x", NULL, buf,
                      sizeof(buf));
    tap_ok(has(buf, "\"type\":\"permission_error\""),
           "anthropic 403 is a permission_error");

    al_llm_error_body(AL_LLM_ANTHROPIC, AL_LLM_ERR_INVALID, "x", NULL, buf,
                      sizeof(buf));
    tap_ok(has(buf, "\"type\":\"invalid_request_error\""),
           "anthropic 400 is an invalid_request_error");

    n = al_llm_error_body(AL_LLM_OPENAI, AL_LLM_ERR_INVALID, "x", NULL, buf,
                          10);
    tap_ok(n > 10 && strlen(buf) == 9, "short buffer: cut and terminated");

    memset(&q, 0, sizeof(q));
    tap_is_int(al_llm_error_from_reason(AL_REASON_MODEL, NULL),
               AL_LLM_ERR_MODEL, "reason model -> MODEL");
    tap_is_int(al_llm_error_from_reason(AL_REASON_METHOD, NULL),
               AL_LLM_ERR_ENDPOINT, "reason method -> ENDPOINT");
    tap_is_int(al_llm_error_from_reason(AL_REASON_BODY_TOO_LARGE, NULL),
               AL_LLM_ERR_TOO_LARGE, "reason body_too_large -> TOO_LARGE");
    tap_is_int(al_llm_error_from_reason(AL_REASON_BUDGET, &q),
               AL_LLM_ERR_RATE_LIMIT, "budget, minute -> RATE_LIMIT");
    q.over_day = 1;
    tap_is_int(al_llm_error_from_reason(AL_REASON_BUDGET, &q),
               AL_LLM_ERR_QUOTA, "budget, day -> QUOTA");
    tap_is_int(al_llm_error_from_reason(AL_REASON_QUARANTINED, NULL),
               AL_LLM_ERR_DENIED, "anything else -> DENIED");
    tap_is_int(al_llm_error_from_reason(AL_REASON_CLIENT_UNKNOWN, NULL),
               AL_LLM_ERR_AUTH, "reason client_unknown -> AUTH");

    al_llm_error_body(AL_LLM_OPENAI, AL_LLM_ERR_AUTH, NULL, NULL, buf,
                      sizeof(buf));
    tap_ok(has(buf, "\"code\":\"invalid_api_key\"")
           && al_llm_error_status(AL_LLM_ERR_AUTH) == 401,
           "openai 401 invalid_api_key");

    al_llm_error_body(AL_LLM_ANTHROPIC, AL_LLM_ERR_AUTH, NULL, NULL, buf,
                      sizeof(buf));
    tap_ok(has(buf, "\"type\":\"authentication_error\""),
           "anthropic 401 is an authentication_error");

    memset(&q, 0, sizeof(q));
    q.over_minute = 1;
    q.minute_limit = 20000;
    q.minute_remaining = 150;
    q.retry_after = 23;
    al_llm_quota_message(&q, 1200, msg, sizeof(msg));
    tap_is_str(msg, "token rate limit reached: 150 of 20000 tokens per "
               "minute left, request needs about 1200; retry in 23s",
               "quota message");
}


/*
 * al_llm_request_with(): the rewrite comes from the caller's allocator,
 * byte for byte what al_llm_request() writes with malloc(), and
 * al_llm_request_free() leaves it alone (free() of this static arena
 * would abort).  An allocator that fails refuses the request.
 */

static unsigned char  arena[1024];
static size_t         arena_used;
static unsigned       arena_calls;

static void *
arena_alloc(void *data, size_t size)
{
    unsigned char  *p;

    arena_calls++;

    if (data != NULL || size > sizeof(arena) - arena_used) {
        return NULL;
    }

    p = arena + arena_used;
    arena_used += size;

    return p;
}


static void
test_request_with(void)
{
    size_t        i;
    al_reason_t   r;
    al_llm_req_t  mine;
    int           fail;

    static const char *const  bodies[] = {
        "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\","
        "\"content\":\"Say hello to the benchmark\"}]}",
        "{\"model\":\"gpt-4o-mini\",\"messages\":[],\"stream\":true}",
        "{\"model\":\"gpt-4o\",\"max_tokens\":5000,"
        "\"max_completion_tokens\":99999,\"stream\":true,"
        "\"stream_options\":null}",
        " { \"model\" : \"gpt-4o\" , \"stream_options\" : { } ,"
        " \"stream\" : true } "
    };

    for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        req(&oai, AGENT, AL_LLM_EP_CHAT, bodies[i]);

        arena_used = 0;
        arena_calls = 0;

        r = al_llm_request_with(&oai, AGENT, AL_LLM_EP_CHAT, NULL,
                                "application/json", 16,
                                (const unsigned char *) bodies[i],
                                strlen(bodies[i]), arena_alloc, NULL,
                                &mine);

        tap_ok(r == AL_REASON_NONE && rq.body != NULL
               && mine.body == (char *) arena && mine.body_theirs
               && arena_calls == 1 && arena_used == mine.body_len
               && mine.body_len == rq.body_len
               && memcmp(mine.body, rq.body, rq.body_len) == 0
               && mine.max_output == rq.max_output
               && mine.hide_usage == rq.hide_usage
               && mine.body_model_at == rq.body_model_at,
               "request_with: the same rewrite, in the caller's memory");

        al_llm_request_free(&mine);
        tap_ok(mine.body == NULL, "request_with: freed without free()");
    }

    arena_calls = 0;
    r = al_llm_request_with(&oai, TOOLS, AL_LLM_EP_CHAT, NULL, NULL, 0,
                            (const unsigned char *) "{\"model\":\"gpt-4o\"}",
                            18, arena_alloc, NULL, &mine);
    tap_ok(r == AL_REASON_NONE && mine.body == NULL && arena_calls == 0,
           "request_with: no rewrite, no allocation");
    al_llm_request_free(&mine);

    fail = 1;
    r = al_llm_request_with(&oai, AGENT, AL_LLM_EP_CHAT, NULL, NULL, 0,
                            (const unsigned char *) bodies[0],
                            strlen(bodies[0]), arena_alloc, &fail, &mine);
    tap_ok(r == AL_REASON_BODY && mine.body == NULL
           && has(mine.detail, "out of memory"),
           "request_with: an allocator that fails refuses the request");
    al_llm_request_free(&mine);
}


/*
 * Strings are read eight bytes at a time: a byte that ends the plain run
 * (a quote, a backslash, a control character, UTF-8) is found at every
 * offset from the start of the body, and keys with escapes are still the
 * names they spell.
 */

static void
test_scan_runs(void)
{
    size_t       k, n, ok, bad;
    char         body[256], text[64];
    const char  *head;

    head = "{\"model\":\"gpt-4o\",\"messages\":[{\"content\":\"";
    ok = 0;
    bad = 0;

    for (k = 0; k < 24; k++) {
        memset(text, 'a', sizeof(text));

        /* a raw control character at k: refused */

        text[k] = '\t';
        n = (size_t) snprintf(body, sizeof(body), "%s%.*s\"}]}", head,
                              (int) (k + 9), text);
        reqn(&oai, TOOLS, AL_LLM_EP_CHAT, body, n);
        bad += (rq.reason == AL_REASON_BODY && has(rq.detail, "control"));

        /* an escaped quote, a backslash pair and UTF-8 at k: read */

        text[k] = 'a';

        n = (size_t) snprintf(body, sizeof(body),
                              "%s%.*s\\\"%.*s\\\\\xc3\xa9%.*s\"}]}", head,
                              (int) k, text, (int) (k % 9), text,
                              (int) (24 - k), text);
        reqn(&oai, TOOLS, AL_LLM_EP_CHAT, body, n);
        ok += (rq.reason == AL_REASON_NONE
               && rq.prompt_estimate
                  == (k + (k % 9) + (24 - k) + 1 + 1 + 2 + 7 + 3) / 4);

        /* a string cut at the end of the body, at k */

        n = (size_t) snprintf(body, sizeof(body), "%s%.*s", head, (int) k,
                              text);
        reqn(&oai, TOOLS, AL_LLM_EP_CHAT, body, n);
        bad += (rq.reason == AL_REASON_BODY
                && has(rq.detail, "premature end"));
    }

    tap_is_int((long) bad, 48, "scan: control bytes, cut strings refused "
               "at every offset");
    tap_is_int((long) ok, 24, "scan: escapes and UTF-8 read at every "
               "offset");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"\\u006dodel\":\"gpt-4o\",\"max_\\u0074okens\":5000}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.clamped
           && strcmp(rq.model, "gpt-4o") == 0,
           "scan: escaped keys are the names they spell");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"\\u006dodel\":\"gpt-4o\"}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "duplicate"),
           "scan: a key and its escaped spelling are duplicates");

    req(&oai, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"\\u006d\\u006f\\u0064\\u0065\\u006c"
        "\\u0078\\u0078\\u0078\\u0078\\u0078\\u0078\\u0078\\u0078"
        "\\u0078\\u0078\\u0078\\u0078\\u0078\\u0078\\u0078\\u0078"
        "\\u0078\\u0078\\u0078\\u0078\\u0078\\u0078\\u0078\\u0078"
        "\\u0078\\u0078\\u0078\":1}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.body != NULL,
           "scan: a long escaped key is no name looked for");
}


/* the upstream URI of a fixed endpoint is the table's literal path */

static void
test_route_uri(void)
{
    const al_llm_route_t  *r;

    r = route(&oai, AL_METHOD_POST, "/chat/completions?");
    tap_ok(r->reason == AL_REASON_NONE
           && strcmp(r->uri, "/v1/chat/completions") == 0,
           "route: chat/completions");

    r = route(&oai, AL_METHOD_POST, "/v1/%63hat/completion%73");
    tap_ok(r->reason == AL_REASON_NONE
           && strcmp(r->uri, "/v1/chat/completions") == 0,
           "route: an encoded literal becomes the literal");

    r = route(&oai, AL_METHOD_GET, "/models/ft:gpt-4o-mini:acme::x1");
    tap_ok(r->reason == AL_REASON_NONE
           && strncmp(r->uri, "/v1/models/ft", 13) == 0,
           "route: a model id is escaped as before");

    r = route(&oai, AL_METHOD_POST, "/chat/completionsx");
    tap_is_int(r->reason, AL_REASON_NO_ROUTE,
               "route: a longer segment is no literal");

    r = route(&oai, AL_METHOD_POST, "/chat/completion");
    tap_is_int(r->reason, AL_REASON_NO_ROUTE,
               "route: a shorter segment is no literal");
}


/* the last request was refused as a provider tool, its detail has want */

static int
refused_tool(const char *want)
{
    if (rq.reason == AL_REASON_BODY && has(rq.detail, want)) {
        return 1;
    }

    tap_diag("detail: ", rq.detail);

    return 0;
}


/*
 * Tools the provider runs itself (web search, fetch, remote MCP servers)
 * make the provider reach arbitrary URLs for a boxed client: refused
 * unless the entry's provider_tools allows them.  Tools the client runs
 * (OpenAI function and custom, Anthropic without a type or custom) pass.
 */

static void
test_provider_tools(void)
{
    size_t    i, n;
    al_llm_t  oai_tools, stored;
    char      body[2048];

    /* client tools */

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{\"type\":\"function\","
        "\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\","
        "\"properties\":{\"q\":{\"type\":\"string\"}}}}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "tools: a function tool passes (its schema's type is not "
               "the tool's)");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"function\",\"name\":\"f\",\"parameters\":{}},{\"type\":\"custom\","
        "\"name\":\"g\"}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "tools: responses function and custom tools pass");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":[],"
        "\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}},"
        "{\"type\":\"custom\",\"name\":\"g\",\"input_schema\":{}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "tools: anthropic tools without a type, or custom, pass");

    /*
     * elsewhere a tool of no type is none the client runs: LiteLLM reads
     * {"googleSearch": {}}, {"urlContext": {}} as Gemini's own tools
     */

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{\"type\":\"function\","
        "\"function\":{\"name\":\"f\"}},{\"urlContext\":{}}]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strcmp(rq.detail, "a tool has no \"type\": it is refused on "
                     "chat/completions, where a router may read it as a "
                     "tool the provider runs ({\"googleSearch\": {}})") == 0,
           "tools: a chat tool of no type refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"googleSearch\":"
        "{}}]}");
    tap_ok(refused_tool("has no \"type\": it is refused on responses"),
           "tools: a responses tool of no type refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{}]}");
    tap_ok(refused_tool("has no \"type\""), "tools: {} refused on chat");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{\"codeExecution\":{}},"
        "{\"type\":\"mcp\"}]}");
    tap_ok(refused_tool("has no \"type\""),
           "tools: the first refused element is named");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"},"
        "{\"googleSearch\":{}}]}}");
    tap_ok(refused_tool("a tool in \"tool_choice\" has no \"type\""),
           "tools: an allowed tool of no type refused off messages");

    /*
     * LiteLLM drops a tool's "type" before it looks for Gemini's: a tool
     * of a type the client runs that names no tool is refused, on every
     * endpoint; its name ("function", "custom", "name") lets it pass
     */

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{\"type\":\"function\","
        "\"googleSearch\":{}}]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strcmp(rq.detail, "a tool of a type the client runs has no "
                     "\"function\", \"custom\" or \"name\": it is "
                     "refused, as a router may read its other key as a "
                     "tool the provider runs ({\"type\": \"function\", "
                     "\"googleSearch\": {}})") == 0,
           "tools: a function tool of no function refused on chat");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"function\",\"name\":\"f\"},{\"type\":\"custom\","
        "\"urlContext\":{}}]}");
    tap_ok(refused_tool("has no \"function\", \"custom\" or \"name\""),
           "tools: a custom tool of no name refused on responses");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"messages\":[],\"tools\":[{\"type\":\"custom\","
        "\"codeExecution\":{}}]}");
    tap_ok(refused_tool("has no \"function\", \"custom\" or \"name\""),
           "tools: a custom tool of no name refused on messages");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{\"type\":\"function\","
        "\"function\":{\"name\":\"f\"}},{\"type\":\"function\","
        "\"googleSearch\":{\"function\":{},\"name\":\"g\"}}]}");
    tap_ok(refused_tool("has no \"function\", \"custom\" or \"name\""),
           "tools: a name nested in another key does not count");

    /*
     * the rule holds on messages for a tool of no "type" (Anthropic's
     * own tools have a "name"), and for the tools of an allowed_tools
     * choice on every endpoint
     */

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"messages\":[],\"tools\":[{\"name\":\"f\",\"input_schema\":{}},"
        "{\"googleSearch\":{}}]}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strcmp(rq.detail, "a tool has no \"type\" and no \"name\": "
                     "it is refused, as a router may read its key as a "
                     "tool the provider runs ({\"googleSearch\": {}})") == 0,
           "tools: a messages tool of no type and no name refused");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"messages\":[],\"tools\":[{}]}");
    tap_ok(refused_tool("has no \"type\" and no \"name\""),
           "tools: {} refused on messages");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{\"name\":\"f\"},{}]}");
    tap_ok(refused_tool("has no \"type\": it is refused on chat"),
           "tools: off messages, no name still says no type");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"messages\":[],\"tool_choice\":{\"type\":\"allowed_tools\","
        "\"tools\":[{\"name\":\"f\"},{\"urlContext\":{}}]}}");
    tap_ok(refused_tool("a tool in \"tool_choice\" has no \"type\" and "
                        "no \"name\""),
           "tools: an allowed tool of no type and no name refused on "
           "messages");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tools\":[{\"type\":\"function\","
        "\"googleSearch\":{}}]}}");
    tap_ok(refused_tool("a tool in \"tool_choice\" of a type the client "
                        "runs has no \"function\", \"custom\" or \"name\""),
           "tools: an allowed function of no name refused on responses");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"allowed_tools\":{\"tools\":[{\"type\":"
        "\"custom\",\"urlContext\":{}}]}}}");
    tap_ok(refused_tool("has no \"function\", \"custom\" or \"name\""),
           "tools: a chat allowed custom tool of no name refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"allowed_tools\":{\"tools\":[{\"type\":"
        "\"function\",\"function\":{\"name\":\"f\"}},{\"type\":\"custom\","
        "\"nam\\u0065\":\"g\"}]}}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "tools: allowed tools that name themselves pass");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{\"type\":\"function\","
        "\"function\":{\"name\":\"f\"}},{\"type\":\"custom\","
        "\"custom\":{\"name\":\"g\"}},{\"googleSearch\":{},"
        "\"type\":\"function\",\"nam\\u0065\":\"h\"}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "tools: function, custom and an escaped name pass");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[],\"web_search_options\":null}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "tools: an empty list, a null web_search_options pass");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\","
        "\"content\":\"x\",\"tools\":[{\"type\":\"mcp\"}],"
        "\"mcp_servers\":[1]}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "tools: only the body's own members are read");

    /* provider tools, not allowed by default */

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":\"mcp\","
        "\"server_label\":\"x\",\"server_url\":\"https://attacker.example/"
        "mcp\",\"require_approval\":\"never\"}]}");
    tap_ok(refused_tool("tool type \"mcp\" is run by the provider; the "
                        "policy does not allow it"),
           "tools: responses remote MCP refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"function\",\"name\":\"f\"},{\"type\":\"web_search_preview\"}]}");
    tap_ok(refused_tool("tool type \"web_search_preview\" is run by the "
                        "provider"),
           "tools: web_search_preview after a function refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"web_search_options\":{}}");
    tap_ok(refused_tool("\"web_search_options\""),
           "tools: chat web_search_options refused");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":[],"
        "\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://attacker."
        "example/sse\",\"name\":\"x\"}]}");
    tap_ok(refused_tool("\"mcp_servers\""),
           "tools: anthropic mcp_servers refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"data_sources\":[{\"type\":"
        "\"elasticsearch\",\"parameters\":{\"endpoint\":"
        "\"https://attacker.example\"}}]}");
    tap_ok(refused_tool("\"data_sources\" is run by the provider")
           && has(rq.detail, "provider_tools: data_sources"),
           "tools: azure data_sources refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Data_Sources\":[]}");
    tap_ok(refused_case("\"data_sources\""), "fold: Data_Sources refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"data_sources\":null}");
    tap_is_int(rq.reason, AL_REASON_NONE, "tools: data_sources null passes");

    /* inputs by URL: downloaded by the provider */

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\","
        "\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":"
        "\"https://attacker.example/?d=1\"}}]}]}");
    tap_ok(refused_tool("(\"image_url\") is downloaded by the provider")
           && has(rq.detail, "provider_tools: url_input"),
           "urls: a chat image by https refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":[{\"role\":\"user\",\"content\":"
        "[{\"type\":\"input_image\",\"image_url\":\"http://a.example/\"}]}]}");
    tap_ok(refused_tool("\"image_url\""),
           "urls: responses input_image refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":[{\"role\":\"user\",\"content\":"
        "[{\"type\":\"input_file\",\"file_url\":\"https://a.example/f\"}]}]}");
    tap_ok(refused_tool("\"file_url\""), "urls: responses input_file refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"plugins\":[{\"id\":\"web\","
        "\"max_results\":3}]}");
    tap_ok(refused_tool("provider_tools: web_search"),
           "plugins: OpenRouter's web search refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"plugins\":[{\"id\":\"file-parser\"},"
        "{\"id\":\"frobnicate\"}]}");
    tap_ok(refused_tool("plugin \"frobnicate\" of \"plugins\" is unknown"),
           "plugins: an unknown plugin refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Plugins\":[]}");
    tap_ok(refused_case("\"plugins\""), "plugins: Plugins refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"plugins\":[{\"id\":\"response-healing\"},"
        "{\"id\":\"file-parser\",\"pdf\":{\"engine\":\"pdf-text\"}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE, "plugins: inert plugins pass");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":"
        "[{\"type\":\"file\",\"file\":{\"filename\":\"x.pdf\","
        "\"file_data\":\"https://a.example/x.pdf\"}}]}]}");
    tap_ok(refused_tool("\"file_data\""), "urls: file_data by URL refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":"
        "[{\"type\":\"file\",\"file\":{\"file_id\":"
        "\"https://a.example/x.pdf\"}}]}]}");
    tap_ok(refused_tool("\"file_id\""), "urls: file_id by URL refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":"
        "[{\"type\":\"file\",\"file\":{\"file_id\":\"file-abc\","
        "\"file_data\":\"JVBERi0x\"}},{\"type\":\"file\",\"file\":"
        "{\"file_data\":\"data:application/pdf;base64,JVBE\"}}]}]}");
    tap_ok(refused_tool("\"file_id\" names a file or container the account "
                        "stores") && has(rq.detail, "stored_files"),
           "urls: file_id of an upload needs stored_files");

    stored = compat;
    stored.provider_tools |= UINT32_C(1) << AL_LLM_PT_STORED_FILES;

    req(&stored, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":"
        "[{\"type\":\"file\",\"file\":{\"file_id\":\"file-abc\","
        "\"file_data\":\"JVBERi0x\"}},{\"type\":\"file\",\"file\":"
        "{\"file_data\":\"data:application/pdf;base64,JVBE\"}}]}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "urls: with it, file_id of an upload, base64 and data: pass");

    /* both kinds in one body: read once, the URL refused first */

#define BOTH                                                                  \
    "{\"model\":\"gpt-4o\",\"input\":[{\"role\":\"user\",\"content\":"  \
    "[{\"type\":\"input_file\",\"file_id\":\"file-FAKE1\"}]}],"            \
    "\"instructions\":[{\"role\":\"system\",\"content\":[{\"type\":"      \
    "\"input_image\",\"image_url\":\"https://a.example/\"}]}]}"

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES, BOTH);
    tap_ok(refused_tool("(\"image_url\") is downloaded"),
           "both: a URL in a later member is refused before a stored file");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES, BOTH);
    tap_ok(refused_tool("(\"image_url\") is downloaded"),
           "both: with stored_files, the URL");

    stored = oai;
    stored.provider_tools = UINT32_C(1) << AL_LLM_PT_URL_INPUT;

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES, BOTH);
    tap_ok(refused_tool("\"file_id\" names a file"),
           "both: with url_input, the stored file");

    stored.provider_tools |= UINT32_C(1) << AL_LLM_PT_STORED_FILES;

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES, BOTH);
    tap_is_int(rq.reason, AL_REASON_NONE, "both: with both, it passes");

#undef BOTH

    /* files and containers the account stores, named by their ids */

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":[{\"role\":\"user\",\"content\":"
        "[{\"type\":\"input_file\",\"file_id\":\"file-FAKE1\"}]}]}");
    tap_ok(refused_tool("\"file_id\" names a file"),
           "stored: a Responses input_file by file_id refused");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":[{\"role\":\"user\",\"content\":"
        "[{\"type\":\"input_image\",\"file_id\":\"file-FAKE1\"}]}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "stored: ... passes with stored_files");

    /* in a tool the provider runs; not in a function's schema */

    stored = oai;
    stored.provider_tools = UINT32_C(1) << AL_LLM_PT_IMAGE_GENERATION;

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"image_generation\",\"input_image_mask\":{\"image_url\":"
        "\"https://a.example/m.png\"}}]}");
    tap_ok(refused_tool("(\"image_url\") is downloaded")
           && has(rq.detail, "url_input"),
           "urls: an image_generation mask by URL refused");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"function\",\"name\":\"f\",\"parameters\":{\"type\":"
        "\"object\",\"properties\":{\"image_url\":{\"type\":"
        "\"string\",\"default\":\"https://a.example/\"}}}},{\"type\":"
        "\"image_generation\",\"input_image_mask\":{\"image_url\":"
        "\"data:image/png;base64,AAAA\"}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "urls: ... a data: mask and a function's schema pass");

    stored = oai;
    stored.provider_tools = UINT32_C(1) << AL_LLM_PT_CODE_INTERPRETER;

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"code_interpreter\",\"container\":{\"type\":\"auto\"}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "stored: code_interpreter in a new container passes");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"code_interpreter\",\"container\":\"cntr_FAKE1\"}]}");
    tap_ok(refused_tool("\"container\" names a file or container"),
           "stored: code_interpreter in a container by its id refused");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"code_interpreter\",\"container\":{\"type\":\"auto\","
        "\"file_ids\":[\"file-FAKE1\"]}}]}");
    tap_ok(refused_tool("\"file_ids\" names a file"),
           "stored: code_interpreter's file_ids refused");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"function\",\"name\":\"f\",\"parameters\":{\"type\":"
        "\"object\",\"properties\":{\"file_id\":{\"type\":\"string\","
        "\"default\":\"x\"},\"file_ids\":{\"type\":\"array\"},"
        "\"container\":{\"type\":\"string\"}},\"examples\":[{"
        "\"file_id\":\"file-x\"}]}},{\"type\":\"code_interpreter\","
        "\"container\":{\"type\":\"auto\",\"file_ids\":[]}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "stored: a function's schema is the client's; no file_ids "
               "pass");

    stored.provider_tools |= UINT32_C(1) << AL_LLM_PT_STORED_FILES;

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"code_interpreter\",\"container\":\"cntr_FAKE1\"}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "stored: ... a container by its id with stored_files");

    stored = ant;
    stored.provider_tools = UINT32_C(1) << AL_LLM_PT_CODE_EXECUTION;

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
        "\"code_execution_20250825\",\"name\":\"code_execution\"}],"
        "\"container\":\"container_FAKE1\"}");
    tap_ok(refused_tool("\"container\" names a file or container"),
           "stored: an anthropic container reused refused");

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],"
        "\"container\":\"container_FAKE1\"}");
    tap_ok(refused_tool("\"container\" names a file or container"),
           "stored: ... with no code tool as well");

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],\"container\":"
        "{\"skills\":[],\"file_ids\":[\"file-FAKE1\"]}}");
    tap_ok(refused_tool("\"file_ids\" names a file"),
           "stored: ... a container is read whole");

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
        "\"code_execution_20250825\",\"name\":\"code_execution\"}],"
        "\"container\":null}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "stored: ... null passes");

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
        "\"code_execution_20250825\",\"name\":\"code_execution\"}],"
        "\"container\":{\"id\":\"container_FAKE1\",\"skills\":[]}}");
    tap_ok(refused_tool("\"container\" names a file or container"),
           "stored: ... or an object with its id refused");

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
        "\"code_execution_20250825\",\"name\":\"code_execution\"}],"
        "\"container\":{\"id\":null,\"skills\":[{\"type\":\"anthropic\","
        "\"skill_id\":\"pptx\",\"version\":\"latest\"}]}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "stored: ... a new container of skills passes");

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
        "\"code_execution_20250825\",\"name\":\"code_execution\"}],"
        "\"container\":{\"skills\":[{\"type\":\"anthropic\","
        "\"skill_id\":\"xlsx\"},{\"type\":\"custom\",\"skill_id\":"
        "\"skill_01FAKE\",\"version\":\"latest\"}]}}");
    tap_ok(refused_tool("\"skill_id\" names a skill the account stores")
           && has(rq.detail, "stored_files"),
           "stored: an anthropic custom skill refused");

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
        "\"code_execution_20250825\",\"name\":\"code_execution\"}],"
        "\"container\":{\"skills\":[{\"typ\\u0065\":\"cust\\u006fm\","
        "\"skill_id\":\"skill_01FAKE\"}]}}");
    tap_ok(refused_tool("\"skill_id\""),
           "stored: ... read as the provider reads it, escapes included");

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
        "\"code_execution_20250825\",\"name\":\"code_execution\"}],"
        "\"container\":{\"skills\":[{\"skill_id\":\"skill_01FAKE\"}]}}");
    tap_ok(refused_tool("\"skill_id\""),
           "stored: ... and one of no type");

    stored.provider_tools |= UINT32_C(1) << AL_LLM_PT_STORED_FILES;

    req(&stored, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":"
        "\"code_execution_20250825\",\"name\":\"code_execution\"}],"
        "\"container\":{\"skills\":[{\"type\":\"custom\",\"skill_id\":"
        "\"skill_01FAKE\",\"version\":\"latest\"}]}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "stored: ... passes with stored_files");

    stored = oai;
    stored.provider_tools = (UINT32_C(1) << AL_LLM_PT_SHELL)
                            | (UINT32_C(1) << AL_LLM_PT_CODE_INTERPRETER);

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"shell\",\"environment\":{\"type\":\"container_auto\","
        "\"skills\":[{\"type\":\"skill_reference\",\"skill_id\":"
        "\"skill_FAKE1\",\"version\":2}]}}]}");
    tap_ok(refused_tool("\"skill_id\" names a skill"),
           "stored: a hosted shell's skill by its id refused");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"code_interpreter\",\"container\":{\"type\":\"auto\","
        "\"skills\":[{\"type\":\"skill_reference\",\"skill_id\":"
        "\"skill_FAKE1\"}]}}]}");
    tap_ok(refused_tool("\"skill_id\" names a skill"),
           "stored: ... and a code_interpreter container's");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"shell\",\"environment\":{\"type\":\"container_reference\","
        "\"container_id\":\"cntr_FAKE1\"}}]}");
    tap_ok(refused_tool("\"container_id\" names a file or container"),
           "stored: a hosted shell in a container by its id refused");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"shell\",\"environment\":{\"type\":\"container_auto\","
        "\"file_ids\":[\"file-FAKE1\"]}}]}");
    tap_ok(refused_tool("\"file_ids\" names a file"),
           "stored: a hosted shell's file_ids refused");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"shell\",\"environment\":{\"type\":\"container_auto\","
        "\"skills\":[{\"type\":\"inline\",\"name\":\"n\","
        "\"description\":\"d\",\"source\":{\"type\":\"base64\","
        "\"media_type\":\"application/zip\",\"data\":\"UEsFBgA=\"}}],"
        "\"file_ids\":[]}},{\"type\":\"function\",\"name\":\"f\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{"
        "\"skill_id\":{\"type\":\"string\"},\"container_id\":"
        "{\"type\":\"string\"}}}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "stored: an inline skill is the client's; so is a schema");

    stored.provider_tools |= UINT32_C(1) << AL_LLM_PT_STORED_FILES;

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"shell\",\"environment\":{\"type\":\"container_auto\","
        "\"skills\":[{\"type\":\"skill_reference\",\"skill_id\":"
        "\"skill_FAKE1\"}]}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "stored: ... a skill by its id with stored_files");

    /* the network of the provider's code containers */

    stored = oai;
    stored.provider_tools = (UINT32_C(1) << AL_LLM_PT_SHELL)
                            | (UINT32_C(1) << AL_LLM_PT_CODE_INTERPRETER)
                            | (UINT32_C(1) << AL_LLM_PT_STORED_FILES);

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"shell\",\"environment\":{\"type\":\"container_auto\","
        "\"network_policy\":{\"type\":\"allowlist\",\"allowed_domains\":"
        "[\"attacker.example\"]}}}]}");
    tap_ok(refused_tool("\"network_policy\" lets the provider's container")
           && has(rq.detail, "provider_tools: web_fetch"),
           "network: a hosted shell's allowlist needs web_fetch");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"code_interpreter\",\"container\":{\"type\":\"auto\","
        "\"network_policy\":{\"typ\\u0065\":\"allowlist\","
        "\"allowed_domains\":[\"a.example\"]}}}]}");
    tap_ok(refused_tool("\"network_policy\""),
           "network: ... so does a code_interpreter's");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"shell\",\"environment\":{\"type\":\"container_auto\","
        "\"network_policy\":\"allowlist\"}}]}");
    tap_ok(refused_tool("\"network_policy\""),
           "network: ... and one that is no object");

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"shell\",\"environment\":{\"type\":\"container_auto\","
        "\"network_policy\":{\"type\":\"disabled\"}}},{\"type\":"
        "\"code_interpreter\",\"container\":{\"type\":\"auto\","
        "\"network_policy\":null}},{\"type\":\"function\",\"name\":"
        "\"f\",\"parameters\":{\"type\":\"object\",\"properties\":{"
        "\"network_policy\":{\"type\":\"object\"}}}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "network: disabled and null pass, and a function's schema");

    stored.provider_tools |= UINT32_C(1) << AL_LLM_PT_WEB_FETCH;

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"shell\",\"environment\":{\"type\":\"container_auto\","
        "\"network_policy\":{\"type\":\"allowlist\",\"allowed_domains\":"
        "[\"a.example\"]}}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "network: ... an allowlist passes with web_fetch");

    /* a connector is the provider's MCP server, with the client's token */

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"mcp\",\"server_label\":\"mail\",\"connector_id\":"
        "\"connector_gmail\",\"authorization\":\"FAKE-oauth\"}]}");
    tap_ok(refused_tool("provider_tools: mcp"),
           "mcp: a connector by its id needs mcp");

    stored = oai;
    stored.provider_tools = UINT32_C(1) << AL_LLM_PT_MCP;

    req(&stored, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"mcp\",\"server_label\":\"mail\",\"connector_id\":"
        "\"connector_gmail\",\"authorization\":\"FAKE-oauth\"}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "mcp: ... and no more (not stored_files)");

    stored = ant;
    stored.provider_tools = UINT32_C(1) << AL_LLM_PT_CODE_EXECUTION;

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":[{\"type\":\"document\","
        "\"source\":{\"type\":\"file\",\"file_id\":\"file_FAKE1\"}}]}]}");
    tap_ok(refused_tool("\"file_id\" names a file"),
           "stored: an anthropic document by file_id refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"prompt\":{\"id\":\"p\",\"variables\":"
        "{\"v\":{\"type\":\"input_image\",\"image_url\":\"https://a.ex/\"}}}}");
    tap_ok(refused_tool("\"image_url\""), "urls: in a prompt's variables");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"user\",\"content\":[{\"type\":\"document\","
        "\"source\":{\"type\":\"url\",\"url\":\"https://a.example/d\"}}]}]}");
    tap_ok(refused_tool("(\"url\")"), "urls: an anthropic url source refused");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"system\":"
        "[{\"type\":\"image\",\"source\":{\"typ\\u0065\":\"ur\\u006c\","
        "\"ur\\u006c\":\"\\u0068ttps://a.example/\"}}],\"messages\":[]}");
    tap_is_int(rq.reason, AL_REASON_BODY, "urls: escapes read as the "
               "provider reads them");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\","
        "\"content\":[{\"type\":\"image_url\",\"Image_URL\":{\"URL\":"
        "\"https://a.example/\"}}]}]}");
    tap_ok(refused_tool("(\"image_url\")"),
           "urls: keys in another case, as a Go server binds them");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\","
        "\"content\":[{\"type\":\"image_url\",\"image_url\":{\"\xc5\xbfrc\":"
        "\"x\",\"Url\":\"https://a.example/\"}}]}]}");
    tap_is_int(rq.reason, AL_REASON_BODY, "urls: Url beside other keys");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\","
        "\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":"
        "\"DATA:image/png;base64,AAAA\"}}]}]}");
    tap_is_int(rq.reason, AL_REASON_NONE, "urls: a data: URL passes");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":"
        "[{\"role\":\"assistant\",\"content\":[{\"type\":"
        "\"web_search_tool_result\",\"content\":[{\"type\":"
        "\"web_search_result\",\"url\":\"https://a.example/\"}]}]}],"
        "\"metadata\":{\"image_url\":\"https://a.example/\"}}");
    tap_is_int(rq.reason, AL_REASON_NONE, "urls: a search result's url, and "
               "members outside the prompt, pass");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":[{\"type\":\"web_search_call\","
        "\"id\":\"ws_1\",\"status\":\"completed\",\"action\":{\"type\":"
        "\"search\",\"sources\":[{\"type\":\"url\",\"url\":"
        "\"https://a.example/\"}]}}]}");
    tap_is_int(rq.reason, AL_REASON_NONE, "urls: the sources of a web "
               "search call in the history pass");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":[],"
        "\"tools\":[{\"type\":\"web_search_20250305\",\"name\":"
        "\"web_search\"}]}");
    tap_ok(refused_tool("tool type \"web_search_20250305\""),
           "tools: anthropic web search refused");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":[],"
        "\"tools\":[{\"name\":\"f\"},{\"type\":\"web_fetch_20250910\","
        "\"name\":\"web_fetch\"}]}");
    tap_ok(refused_tool("tool type \"web_fetch_20250910\""),
           "tools: anthropic web fetch refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"frobnicate\"}]}");
    tap_ok(refused_tool("tool type \"frobnicate\""),
           "tools: an unknown type refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"m\\u0063p\",\"server_url\":\"https://a.example/\"}]}");
    tap_ok(refused_tool("is run by the provider"),
           "tools: an escaped type is the name it spells");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"typ\\u0065\":"
        "\"mcp\",\"server_url\":\"https://a.example/\"}]}");
    tap_ok(refused_tool("is run by the provider"),
           "tools: an escaped \"type\" key is that key");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":null}]}");
    tap_is_int(rq.reason, AL_REASON_BODY, "tools: a type that is no string "
               "refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[\"web_search\"]}");
    tap_is_int(rq.reason, AL_REASON_BODY, "tools: an element that is no "
               "object refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":{\"type\":"
        "\"mcp\"}}");
    tap_is_int(rq.reason, AL_REASON_BODY, "tools: tools that are no list "
               "refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"function\",\"name\":\"f\"},[{\"type\":\"mcp\"}]]}");
    tap_is_int(rq.reason, AL_REASON_BODY, "tools: a list in the list "
               "refused");

    /* a tool of more keys than the scan compares: its type still read */

    n = (size_t) snprintf(body, sizeof(body), "{\"model\":\"gpt-4o\","
                          "\"input\":\"x\",\"tools\":[{");
    for (i = 0; i < 80; i++) {
        n += (size_t) snprintf(body + n, sizeof(body) - n, "\"k%zu\":1,",
                               i);
    }
    n += (size_t) snprintf(body + n, sizeof(body) - n,
                           "\"type\":\"mcp\"}]}");
    reqn(&oai, TOOLS, AL_LLM_EP_RESPONSES, body, n);
    tap_ok(refused_tool("tool type \"mcp\""),
           "tools: the type of a tool of 81 keys is read");

    /* families allowed by provider_tools */

    oai_tools = oai;
    oai_tools.provider_tools = UINT32_C(1) << AL_LLM_PT_WEB_SEARCH;

    req(&oai_tools, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"web_search_preview\"},{\"type\":\"web_search\"}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "provider_tools web_search: web_search_preview passes");

    req(&oai_tools, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"web_search_options\":{}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "provider_tools web_search: web_search_options passes");

    req(&oai_tools, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"web_search_preview\"},{\"type\":\"mcp\"},{\"type\":"
        "\"web_searcher\"}]}");
    tap_ok(refused_tool("tool type \"mcp\" is run by the provider"),
           "provider_tools web_search: mcp still refused");

    req(&oai_tools, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"web_searcher\"}]}");
    tap_ok(refused_tool("tool type \"web_searcher\" is unknown"),
           "provider_tools web_search: web_searcher is no web_search");

    req(&oai_tools, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"data_sources\":[]}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "provider_tools web_search: data_sources still refused");

    oai_tools.provider_tools = UINT32_C(1) << AL_LLM_PT_DATA_SOURCES;

    req(&oai_tools, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"data_sources\":[{\"type\":"
        "\"azure_search\"}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "provider_tools data_sources: data_sources passes");

    oai_tools.provider_tools = UINT32_C(1) << AL_LLM_PT_URL_INPUT;

    req(&oai_tools, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\","
        "\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":"
        "\"https://a.example/\"}}]}]}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "provider_tools url_input: an image by URL passes");

    oai_tools.provider_tools = ~UINT32_C(0);

    req(&oai_tools, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"mcp\"},{\"type\":\"frobnicate\"}]}");
    tap_ok(refused_tool("\"frobnicate\" is unknown"),
           "every bit set: an unknown type still refused");

    req(&oai_tools, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[1]}");
    tap_ok(refused_tool("list of objects"),
           "every bit set: an element that is no object still refused");

    req(&oai_tools, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{\"googleSearch\":{}}]}");
    tap_ok(refused_tool("has no \"type\""),
           "every bit set: a chat tool of no type still refused");

    /* the families: a name, or the name, '_' and more */

    tap_ok(al_llm_tool_family("function", 8) == -1
           && al_llm_tool_family("custom", 6) == -1
           && al_llm_tool_family("functions", 9) == AL_LLM_PT_UNKNOWN
           && al_llm_tool_family("web_search", 10) == AL_LLM_PT_WEB_SEARCH
           && al_llm_tool_family("web_search_preview_2025_03_11", 29)
              == AL_LLM_PT_WEB_SEARCH
           && al_llm_tool_family("web_search_20250305", 19)
              == AL_LLM_PT_WEB_SEARCH
           && al_llm_tool_family("web_fetch_20250910", 18)
              == AL_LLM_PT_WEB_FETCH
           && al_llm_tool_family("mcp_toolset", 11) == AL_LLM_PT_MCP
           && al_llm_tool_family("mcpx", 4) == AL_LLM_PT_UNKNOWN
           && al_llm_tool_family("code_execution_20250825", 23)
              == AL_LLM_PT_CODE_EXECUTION
           && al_llm_tool_family("computer_use_preview", 20)
              == AL_LLM_PT_COMPUTER
           && al_llm_tool_family("tool_search_tool_regex_20251119", 31)
              == AL_LLM_PT_TOOL_SEARCH
           && al_llm_tool_family("local_shell", 11) == AL_LLM_PT_LOCAL_SHELL
           && al_llm_tool_family("shell", 5) == AL_LLM_PT_SHELL
           && al_llm_tool_family("", 0) == AL_LLM_PT_UNKNOWN,
           "tool families: names and their prefixes");

    tap_ok(al_llm_tool_name("mcp", 3) == AL_LLM_PT_MCP
           && al_llm_tool_name("web_search_preview", 18) == -1
           && al_llm_tool_name("apply_patch", 11) == AL_LLM_PT_APPLY_PATCH
           && al_llm_tool_name("data_sources", 12) == AL_LLM_PT_DATA_SOURCES
           && al_llm_tool_name("url_input", 9) == AL_LLM_PT_URL_INPUT
           && al_llm_tool_name("stored_files", 12) == AL_LLM_PT_STORED_FILES
           && al_llm_tool_names[AL_LLM_PT_NAMED] == NULL,
           "tool families: the names the policy takes");
}


/*
 * The ids of stored state a Responses body names, as the body scan keeps
 * them: "index:id" each ("prev:" for previous_response_id, "index:"
 * alone for one bound to none), or "apart" when it kept them not
 */

static const char *
state_ids(const char *body)
{
    size_t                    k, n;
    const al_llm_state_id_t  *id;
    static char               out[4096];

    (void) req(&oai, AGENT, AL_LLM_EP_RESPONSES, body);

    if (rq.reason != AL_REASON_NONE) {
        return rq.detail;
    }

    if (!rq.state_read) {
        return "apart";
    }

    out[0] = '\0';
    n = 0;

    for (k = 0; k < rq.nstate && n < sizeof(out) - 200; k++) {
        id = &rq.state[k];

        if (id->index == AL_LLM_STATE_PREV) {
            n += (size_t) snprintf(out + n, sizeof(out) - n, "%sprev:",
                                   n ? " " : "");
        } else {
            n += (size_t) snprintf(out + n, sizeof(out) - n, "%s%zu:",
                                   n ? " " : "", id->index);
        }

        n += (size_t) snprintf(out + n, sizeof(out) - n, "%.*s",
                               (int) id->len, body + id->at);
    }

    return out;
}


static void
test_state_ids(void)
{
    size_t  i, k, n;
    char    body[8192];

    tap_is_str(state_ids("{\"model\":\"gpt-4o\",\"input\":\"Hi\"}"), "",
               "state: none named");

    tap_is_str(state_ids("{\"model\":\"gpt-4o\",\"input\":[{\"role\":"
                         "\"user\",\"content\":[{\"type\":\"input_text\","
                         "\"text\":\"Hi\",\"id\":\"no\"}]},{\"type\":"
                         "\"item_reference\",\"id\":\"msg_1\"},\"x\",[{\"id\":"
                         "\"no\"}],{\"approval_request_id\":\"mcpr_2\","
                         "\"type\":\"mcp_approval_response\",\"approve\":"
                         "true,\"i\\u0064\":\"mcpa_3\"},{\"id\":null},"
                         "{\"id\":5}],\"previous_response_id\":\"resp_4\"}"),
               "prev:resp_4 1:msg_1 4:mcpa_3 4:mcpr_2 6:",
               "state: the previous response first, an element's id before "
               "its approval, its own members only");

    tap_is_str(state_ids("{\"model\":\"gpt-4o\",\"previous_response_id\":"
                         "\"resp\\u005f5\",\"input\":[{\"id\":\"a b\"}]}"),
               "prev: 0:", "state: ids bound to none, named");

    tap_is_str(state_ids("{\"model\":\"gpt-4o\",\"previous_response_id\":"
                         "null,\"input\":{\"id\":\"no\"}}"),
               "", "state: null, and an input that is no list: none");

    tap_is_str(state_ids("{\"model\":\"gpt-4o\",\"text\":{\"format\":"
                         "{\"type\":\"text\"}},\"input\":[{\"id\":\"m_1\"}],"
                         "\"max_output_tokens\":1000000}"),
               "0:m_1", "state: in a body that is rewritten");

    for (n = 64; n <= 65; n++) {
        i = (size_t) snprintf(body, sizeof(body),
                              "{\"model\":\"gpt-4o\",\"input\":[");

        for (k = 0; k < n; k++) {
            i += (size_t) snprintf(body + i, sizeof(body) - i,
                                   "%s{\"id\":\"m_%zu\"}", k ? "," : "", k);
        }

        (void) snprintf(body + i, sizeof(body) - i,
                        "],\"previous_response_id\":\"r\"}");

        if (n == 64) {
            tap_ok(strncmp(state_ids(body), "prev:r 0:m_0 1:m_1", 18) == 0
                   && rq.nstate == 65
                   && rq.state[64].index == 63 && rq.state[64].len == 4,
                   "state: 64 ids and the previous response kept");
        } else {
            tap_is_str(state_ids(body), "apart",
                       "state: 65 ids read apart");
        }
    }
}


/*
 * "tool_choice" may name a tool the provider runs, which a server behind
 * an entry runs though "tools" does not list it: such a choice needs the
 * tool's family in provider_tools, as the tool in "tools" would.
 */

static void
test_tool_choice(void)
{
    size_t    i;
    al_llm_t  llm;
    char      body[512];
    al_str_t  listed[] = { S("tool_choice") };

    static const struct {
        const char  *type;
        const char  *family;
    } hosted[] = {
        { "web_search_preview", "web_search" },
        { "web_search_preview_2025_03_11", "web_search" },
        { "file_search", "file_search" },
        { "code_interpreter", "code_interpreter" },
        { "image_generation", "image_generation" },
        { "computer_use_preview", "computer" },
        { "mcp\",\"server_label\":\"x", "mcp" },
        { "shell", "shell" },
        { "apply_patch", "apply_patch" }
    };

    static const char *const  pass[] = {
        "\"none\"", "\"auto\"", "\"required\"", "\"any\"", "null",
        "\"\\u0061uto\"",
        "{\"type\":\"function\",\"name\":\"f\"}",
        "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}",
        "{\"type\":\"function\",\"function\":{\"name\":\"getType\"}}",
        "{\"type\":\"function\",\"function\":{\"name\":\"f\\u00e9\"}}",
        "{\"type\":\"custom\",\"name\":\"g\"}",
        "{\"type\":\"auto\",\"disable_parallel_tool_use\":true}",
        "{\"type\":\"any\"}", "{\"type\":\"none\"}",
        "{\"type\":\"tool\",\"name\":\"f\"}",
        "{\"type\":\"allowed_tools\",\"mode\":\"auto\",\"tools\":"
        "[{\"type\":\"function\",\"name\":\"f\"},{\"type\":\"custom\","
        "\"name\":\"g\"}]}",
        "{\"type\":\"allowed_tools\",\"allowed_tools\":{\"mode\":"
        "\"required\",\"tools\":[{\"type\":\"function\",\"function\":"
        "{\"name\":\"f\"}}]}}"
    };

    /* a hosted tool named only in tool_choice, on each endpoint */

    for (i = 0; i < sizeof(hosted) / sizeof(hosted[0]); i++) {
        (void) snprintf(body, sizeof(body), "{\"model\":\"gpt-4o\","
                        "\"input\":\"x\",\"tool_choice\":{\"type\":\"%s\"}}",
                        hosted[i].type);
        req(&oai, TOOLS, AL_LLM_EP_RESPONSES, body);
        tap_ok(refused_tool("in \"tool_choice\" is run by the provider; "
                            "the policy does not allow it")
               && has(rq.detail, hosted[i].family),
               "tool_choice: a hosted tool refused");
    }

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"web_search_preview\"}}");
    tap_ok(rq.reason == AL_REASON_BODY
           && strcmp(rq.detail, "tool type \"web_search_preview\" in "
                     "\"tool_choice\" is run by the provider; the policy "
                     "does not allow it (provider_tools: web_search)") == 0,
           "tool_choice: the detail names the type, where, the family");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "\"web_search\"}}");
    tap_ok(refused_tool("provider_tools: web_search"),
           "tool_choice: a hosted tool on chat refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "\"code_interpreter\"}}");
    tap_ok(refused_tool("provider_tools: code_interpreter"),
           "tool_choice: on an openai-compatible entry refused");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":[],"
        "\"tool_choice\":{\"type\":\"web_fetch_20250910\"}}");
    tap_ok(refused_tool("provider_tools: web_fetch"),
           "tool_choice: on an anthropic entry refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":"
        "\"web_search_preview\"}");
    tap_ok(refused_tool("provider_tools: web_search"),
           "tool_choice: a hosted tool named by a string refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"typ\\u0065"
        "\":\"m\\u0063p\",\"server_label\":\"x\"}}");
    tap_ok(refused_tool("provider_tools: mcp"),
           "tool_choice: escapes read as the provider reads them");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":"
        "\"web_se\\u0061rch\"}");
    tap_ok(refused_tool("provider_tools: web_search"),
           "tool_choice: an escaped string is the name it spells");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"function\":"
        "{\"type\":\"function\"},\"type\":\"file_search\"}}");
    tap_ok(refused_tool("provider_tools: file_search"),
           "tool_choice: its own type, not a nested one's");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"file_search\",\"note\":\"Type\"}}");
    tap_ok(refused_tool("provider_tools: file_search"),
           "tool_choice: read by jansson, the same");

    /* allowed_tools: its tools are read as "tools" */

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"function\",\"name\":\"f\"}],\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"mode\":\"auto\",\"tools\":[{\"type\":"
        "\"function\",\"name\":\"f\"},{\"type\":\"mcp\",\"server_label\":"
        "\"deepwiki\"}]}}");
    tap_ok(refused_tool("tool type \"mcp\" in \"tool_choice\" is run by "
                        "the provider"),
           "tool_choice: allowed_tools with a hosted tool refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"allowed_tools\":{\"mode\":\"auto\",\"tools\":"
        "[{\"type\":\"image_generation\"}]}}}");
    tap_ok(refused_tool("provider_tools: image_generation"),
           "tool_choice: chat's allowed_tools with a hosted tool refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tools\":[{\"type\":\"frobnicate\"}]}}");
    tap_ok(refused_tool("tool type \"frobnicate\" in \"tool_choice\" is "
                        "unknown"),
           "tool_choice: allowed_tools with an unknown type refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tools\":[\"web_search\"]}}");
    tap_ok(refused_tool("\"tools\" in \"tool_choice\" must be a list of "
                        "objects"),
           "tool_choice: an allowed tool that is no object refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tools\":{\"type\":\"mcp\"}}}");
    tap_ok(refused_tool("\"tools\" in \"tool_choice\" must be a list"),
           "tool_choice: allowed tools that are no list refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tools\":[{\"type\":1}]}}");
    tap_ok(refused_tool("a tool's \"type\" in \"tool_choice\" must be a "
                        "string"),
           "tool_choice: an allowed tool's type that is no string refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"allowed_tools\":[]}}");
    tap_ok(refused_tool("\"allowed_tools\" in \"tool_choice\" must be an "
                        "object"),
           "tool_choice: allowed_tools that is no object refused");

    /* unknown types, wrong shapes */

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"frobnicate\"}}");
    tap_ok(refused_tool("tool type \"frobnicate\" in \"tool_choice\" is "
                        "unknown to the gateway"),
           "tool_choice: an unknown type refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":"
        "\"sometimes\"}");
    tap_ok(refused_tool("tool type \"sometimes\" in \"tool_choice\" is "
                        "unknown"),
           "tool_choice: an unknown string refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":1}");
    tap_ok(refused_tool("\"tool_choice\" must be a string or an object"),
           "tool_choice: a number refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":[{\"type\":"
        "\"function\"}]}");
    tap_ok(refused_tool("\"tool_choice\" must be a string or an object"),
           "tool_choice: a list refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":true}");
    tap_ok(refused_tool("\"tool_choice\" must be a string or an object"),
           "tool_choice: true refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"function\":"
        "{\"name\":\"f\"}}}");
    tap_ok(refused_tool("a tool's \"type\" in \"tool_choice\" must be a "
                        "string"),
           "tool_choice: an object of no type refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "null}}");
    tap_ok(refused_tool("a tool's \"type\" in \"tool_choice\" must be a "
                        "string"),
           "tool_choice: a type that is no string refused");

    /* keys in another case, as a Go server binds them */

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"Tool_Choice\":{\"type\":"
        "\"web_search\"}}");
    tap_ok(refused_case("\"tool_choice\""), "fold: Tool_Choice refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "\"function\",\"TYPE\":\"web_search\"}}");
    tap_ok(refused_case("\"type\""), "fold: tool_choice's TYPE refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"Tools\":[{\"type\":\"mcp\"}]}}");
    tap_ok(refused_case("\"tools\""), "fold: allowed_tools' Tools refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"allowed_tools\":{\"TOOLS\":[]}}}");
    tap_ok(refused_case("\"tools\""),
           "fold: chat allowed_tools' TOOLS refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tool\xc5\xbf\":[{\"type\":\"mcp\"}]}}");
    tap_ok(refused_case("\"tools\""),
           "fold: allowed_tools' tools with a long s refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tools\":[{\"Typ\xc3\xa9\":\"x\",\"tYpE\":"
        "\"mcp\"}]}}");
    tap_ok(refused_case("\"type\""), "fold: an allowed tool's tYpE refused");

    /* what passes */

    for (i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
        (void) snprintf(body, sizeof(body), "{\"model\":\"gpt-4o\","
                        "\"messages\":[],\"tool_choice\":%s}", pass[i]);
        req(&oai, TOOLS, AL_LLM_EP_CHAT, body);
        tap_is_int(rq.reason, AL_REASON_NONE,
                   "tool_choice: no tool, or one the client runs, passes");

        if (rq.reason != AL_REASON_NONE) {
            tap_diag("tool_choice: ", pass[i]);
            tap_diag("detail: ", rq.detail);
        }
    }

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":[],"
        "\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],\"tool_choice\":"
        "{\"type\":\"tool\",\"name\":\"f\"}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "tool_choice: anthropic's tool by name passes");

    /* families allowed by provider_tools */

    llm = oai;
    llm.provider_tools = UINT32_C(1) << AL_LLM_PT_WEB_SEARCH;

    req(&llm, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tools\":[{\"type\":"
        "\"web_search_preview\"}],\"tool_choice\":{\"type\":"
        "\"web_search_preview\"}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "provider_tools web_search: tool_choice web_search passes");

    req(&llm, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tools\":[{\"type\":\"web_search_preview\"}]}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "provider_tools web_search: allowed web_search passes");

    req(&llm, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"allowed_tools\",\"tools\":[{\"type\":\"web_search_preview\"},"
        "{\"type\":\"file_search\"}]}}");
    tap_ok(refused_tool("provider_tools: file_search"),
           "provider_tools web_search: allowed file_search still refused");

    llm.provider_tools = ~UINT32_C(0);

    req(&llm, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"type\":"
        "\"frobnicate\"}}");
    tap_ok(refused_tool("\"frobnicate\" in \"tool_choice\" is unknown"),
           "every bit set: an unknown tool_choice still refused");

    /* documented on chat, responses and messages only */

    req(&bare, TOOLS, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"x\",\"tool_choice\":\"auto\"}");
    tap_ok(refused_member("tool_choice", "completions", "bare"),
           "tool_choice on completions refused");

    req(&bare, TOOLS, AL_LLM_EP_EMBEDDINGS,
        "{\"model\":\"text-embedding-3-small\",\"input\":\"x\","
        "\"tool_choice\":\"none\"}");
    tap_ok(refused_member("tool_choice", "embeddings", "bare"),
           "tool_choice on embeddings refused");

    llm = bare;
    llm.allow_members = listed;
    llm.nallow_members = 1;

    req(&llm, TOOLS, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"x\",\"tool_choice\":\"auto\"}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "tool_choice on completions: allow_members lets it pass");

    req(&llm, TOOLS, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"x\",\"tool_choice\":{\"type\":"
        "\"web_search\"}}");
    tap_ok(refused_tool("provider_tools: web_search"),
           "tool_choice on completions: ... and its check still runs");

    tap_ok(al_llm_member_refused("tool_choice", 11) == NULL,
           "allow_members: tool_choice may be listed");
}


static int
refused_case(const char *want)
{
    if (rq.reason == AL_REASON_BODY && has(rq.detail, want)
        && has(rq.detail, "only by case"))
    {
        return 1;
    }

    tap_diag("detail: ", rq.detail);

    return 0;
}


/*
 * A key that is a member the gateway reads in another case: Go's
 * encoding/json (Ollama, Go proxies behind an openai-compatible entry)
 * folds ASCII case, the Kelvin sign, the long s and the Turkish i's, and
 * the last key wins, so the gateway would check one value and the
 * upstream use another.  Refused for every provider kind.
 */

static void
test_case_fold(void)
{
    req(&compat, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"Model\":\"gpt-4o\"}");
    tap_ok(refused_case("\"model\""), "fold: Model after model refused");

    req(&compat, SMALL, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":10,\"MAX_TOKENS\":100000}");
    tap_ok(refused_case("\"max_tokens\""),
           "fold: MAX_TOKENS after max_tokens refused");

    req(&compat, SMALL, AL_LLM_EP_CHAT,
        "{\"MAX_TOKENS\":100000,\"model\":\"gpt-4o\"}");
    tap_ok(refused_case("\"max_tokens\""), "fold: MAX_TOKENS alone refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Tools\":[{\"type\":\"web_search\"}]}");
    tap_ok(refused_case("\"tools\""), "fold: Tools refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"tools\":[{\"Type\":\"web_search\"}]}");
    tap_ok(refused_case("\"type\""), "fold: a tool's Type refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream\":true,\"stream_options\":"
        "{\"include_usage\":true,\"Include_Usage\":false}}");
    tap_ok(refused_case("\"include_usage\""),
           "fold: Include_Usage in stream_options refused");

    req(&compat, SMALL, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_to\xe2\x84\xaa" "ens\":100000}");
    tap_ok(refused_case("\"max_tokens\""),
           "fold: the Kelvin sign for k refused");

    req(&compat, SMALL, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_to\\u212Aen\\u017F\":100000}");
    tap_ok(refused_case("\"max_tokens\""),
           "fold: the Kelvin sign and long s, escaped, refused");

    req(&compat, SMALL, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"max_output_to\xe2\x84\xaa"
        "en\xc5\xbf\":100000}");
    tap_ok(refused_case("\"max_output_tokens\""),
           "fold: max_output_tokens with multi-byte letters refused");

    req(&compat, SMALL, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_\xe2\x84\xaa" "ompletion_tokens\":1}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "fold: the Kelvin sign is no c: another key passes");

    req(&compat, SMALL, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_compl\xc4\xb0" "tion_to\xe2\x84\xaa"
        "en\xc5\xbf\":100000}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "fold: a folded letter where the name has none is another key");

    req(&compat, SMALL, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"MAX_COMPLET\xc4\xb0ON_TO\xe2\x84\xaa"
        "EN\xc5\xbf\":100000}");
    tap_ok(refused_case("\"max_completion_tokens\""),
           "fold: the dotted capital I, the Kelvin sign and long s at "
           "once refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"N\":5,\"n\":1}");
    tap_ok(refused_case("\"n\""), "fold: N refused");

    req(&compat, TOOLS, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"x\",\"Best_Of\":20}");
    tap_ok(refused_case("\"best_of\""), "fold: Best_Of refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"\xc5\xbftream\":true}");
    tap_ok(refused_case("\"stream\""), "fold: the long s for s refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Web_Search_Options\":{}}");
    tap_ok(refused_case("\"web_search_options\""),
           "fold: Web_Search_Options refused");

    req(&compat, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"MCP_servers\":[]}");
    tap_ok(refused_case("\"mcp_servers\""), "fold: MCP_servers refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"stream_opt\xc4\xb1ons\":{}}");
    tap_ok(refused_case("\"stream_options\""),
           "fold: the dotless i for i refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"\\u004dodel\":\"gpt-4o\"}");
    tap_ok(refused_case("\"model\""), "fold: an escaped M refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Model\":\"gpt-4o\"}");
    tap_ok(refused_case("\"model\""), "fold: refused for openai too");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"Max_Tokens\":99999,\"messages\":[]}");
    tap_ok(refused_case("\"max_tokens\""), "fold: refused for anthropic too");

    /* where the prompt is: the estimate would read the short one */

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"Messages\":[{\"role\":"
        "\"user\",\"content\":\"a long prompt\"}]}");
    tap_ok(refused_case("\"messages\""), "fold: Messages refused");

    req(&compat, TOOLS, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"x\",\"PROMPT\":\"long\"}");
    tap_ok(refused_case("\"prompt\""), "fold: PROMPT refused");

    req(&compat, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"Instructions\":\"x\",\"input\":\"x\"}");
    tap_ok(refused_case("\"instructions\""), "fold: Instructions refused");

    req(&ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"\xc5\xbfystem\":\"long\",\"messages\":[]}");
    tap_ok(refused_case("\"system\""), "fold: the long s in system refused");

    /* keys that fold to no member read, and members of other objects */

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Temperature\":1,\"MODE\":1,\"Modelo\":1,"
        "\"Message\":[],\"\xc3\xa9\":1,\"messages\":[{\"role\":\"user\","
        "\"content\":\"x\",\"Model\":\"y\",\"Tools\":1}],\"tools\":"
        "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"Type\":1,"
        "\"parameters\":{\"Type\":\"object\"}}}],\"stream_options\":"
        "{\"Other\":1}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "fold: other keys, and keys of other objects, pass");
}


/*
 * service_tier, for a client with a dollar budget: the tiers priced as
 * the policy's prices (or less) pass, the others are refused; a client
 * without one may ask for any.
 */

static void
test_service_tier(void)
{
    size_t                 i;
    al_llm_client_t        priced;
    static const char     *pass[] = {
        "\"auto\"", "\"default\"", "\"flex\"", "\"standard_only\"", "null"
    };

    memset(&priced, 0, sizeof(priced));
    priced.client = &c_tools;
    priced.cost_per_day = 1000000000000ULL;

    for (i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
        char  body[128];

        (void) snprintf(body, sizeof(body),
                        "{\"model\":\"gpt-4o\",\"service_tier\":%s}",
                        pass[i]);
        req(&oai, &priced, AL_LLM_EP_CHAT, body);
        tap_is_int(rq.reason, AL_REASON_NONE, pass[i]);
    }

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"service_tier\":\"priority\"}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "service_tier \"priority\" may cost more"),
           "service_tier priority refused for a dollar budget");

    req(&oai, &priced, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"service_tier\":\"scale\"}");
    tap_is_int(rq.reason, AL_REASON_BODY, "scale refused, responses too");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"service_tier\":\"\\u0061uto\"}");
    tap_is_int(rq.reason, AL_REASON_BODY, "an escaped tier refused");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"service_tier\":1}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "must be a string"),
           "a tier that is no string refused");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Service_Tier\":\"priority\"}");
    tap_ok(refused_case("\"service_tier\""), "Service_Tier refused");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"service_tier\":\"priority\"}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "no dollar budget: any tier passes");

    /* fast mode: several times the prices */

    req(&ant, &priced, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"speed\":\"fast\"}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "speed \"fast\" (fast mode) costs more"),
           "speed fast refused for a dollar budget");

    req(&compat, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"SPEED\":\"fast\"}");
    tap_ok(refused_case("\"speed\""), "SPEED refused");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"speed\":\"st\\u0061ndard\"}");
    tap_is_int(rq.reason, AL_REASON_BODY, "an escaped speed refused");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"speed\":true}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "must be a string"),
           "a speed that is no string refused");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"speed\":\"standard\"}");
    tap_is_int(rq.reason, AL_REASON_NONE, "speed standard passes");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"speed\":null}");
    tap_is_int(rq.reason, AL_REASON_NONE, "speed null passes");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"speed\":\"fast\"}");
    tap_is_int(rq.reason, AL_REASON_NONE, "no dollar budget: fast passes");

    /* US-only inference: 1.1 times the prices */

    req(&ant, &priced, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"inference_geo\":\"us\"}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "inference_geo \"us\" costs more"),
           "inference_geo us refused for a dollar budget");

    req(&ant, &priced, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"Inference_Geo\":\"us\"}");
    tap_ok(refused_case("\"inference_geo\""), "Inference_Geo refused");

    req(&ant, &priced, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"inference_geo\":\"global\"}");
    tap_is_int(rq.reason, AL_REASON_NONE, "inference_geo global passes");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"inference_geo\":\"us\"}");
    tap_is_int(rq.reason, AL_REASON_NONE, "no dollar budget: us passes");

    /* audio: billed at audio prices, many times the text prices */

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"modalities\":[\"text\",\"audio\"],"
        "\"audio\":{\"voice\":\"alloy\",\"format\":\"wav\"}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"modalities\"")
           && has(rq.detail, "dollar budget"),
           "audio output refused for a dollar budget");

    req(&compat, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"audio\":{\"voice\":\"alloy\"}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"audio\""),
           "audio alone refused");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"modalities\":\"audio\"}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "must be an array"),
           "modalities that is no array refused");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\","
        "\"content\":[{\"type\":\"input_audio\",\"input_audio\":"
        "{\"data\":\"AAAA\",\"format\":\"wav\"}}]}]}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "input_audio"),
           "audio input refused for a dollar budget");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Modalities\":[\"audio\"]}");
    tap_ok(refused_case("\"modalities\""), "Modalities refused");

    req(&oai, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"modalities\":[\"t\\u0065xt\"],"
        "\"audio\":null}");
    tap_is_int(rq.reason, AL_REASON_NONE, "modalities text (escaped) passes");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"modalities\":[\"text\",\"audio\"],"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
        "\"input_audio\",\"input_audio\":{\"data\":\"AAAA\"}}]}]}");
    tap_is_int(rq.reason, AL_REASON_NONE, "no dollar budget: audio passes");
}


/*
 * OpenRouter's "provider", for a client with a dollar budget: members
 * that cannot raise the price pass, any other only beside a max_price at
 * most the policy's prices (of the entry and of its fallback).
 */

static void
test_provider_routing(void)
{
    size_t                 i;
    al_llm_t               router, back;
    al_llm_client_t        priced, bpriced;
    char                   body[256];
    static al_llm_price_t  prices[] = {
        { S("gpt-4o"), 2500000, 1250000, 10000000, 0, 0, 0, NULL }
    };
    al_str_t               fast;
    static al_llm_price_t  bprices[] = {
        { S("gpt-4o"), 2000000, 1000000, 8000000, 0, 0, 0, NULL },
        { S("gpt-4o-mini"), 100000, 50000, 400000, 0, 0, 0, NULL }
    };
    static al_llm_alias_t  baliases[] = {
        { S("fast"), S("gpt-4o-mini") }
    };
    static const char     *pass[] = {
        "{\"sort\":\"price\"}",
        "{\"sort\":{\"by\":\"price\",\"partition\":\"none\"}}",
        "{\"allow_fallbacks\":true,\"data_collection\":\"allow\","
        "\"zdr\":false,\"require_parameters\":false,"
        "\"enforce_distillable_text\":false}",
        "{\"max_price\":{\"prompt\":1,\"completion\":2}}",
        "{\"order\":null,\"only\":null}",
        "{}",
        "null",
        "{\"data_collection\":\"deny\",\"zdr\":true,\"max_price\":"
        "{\"prompt\":2.5,\"completion\":10,\"request\":0,\"image\":0}}",
        "{\"order\":[\"x\"],\"allow_fallbacks\":false,\"max_price\":"
        "{\"prompt\":0.15,\"completion\":0.6,\"request\":0,"
        "\"image\":0.0}}",
        "{\"max_price\":{\"prompt\":1,\"completion\":2,\"request\":5}}"
    };
    static const char     *refuse[] = {
        "{\"order\":[\"dear\"],\"allow_fallbacks\":false}",
        "{\"only\":[\"dear\"]}",
        "{\"ignore\":[\"cheap\"]}",
        "{\"quantizations\":[\"fp16\"]}",
        "{\"sort\":\"throughput\"}",
        "{\"sort\":{\"by\":\"latency\"}}",
        "{\"allow_fallbacks\":false}",
        "{\"data_collection\":\"deny\"}",
        "{\"zdr\":true}",
        "{\"require_parameters\":true}",
        "{\"preferred_min_throughput\":100}",
        "{\"order\":[\"x\"],\"max_price\":{\"prompt\":2.6,"
        "\"completion\":10}}",
        "{\"order\":[\"x\"],\"max_price\":{\"prompt\":1,"
        "\"completion\":10.01}}",
        "{\"order\":[\"x\"],\"max_price\":{\"prompt\":1}}",
        "{\"order\":[\"x\"],\"max_price\":{\"prompt\":\"1\","
        "\"completion\":\"2\"}}",
        "{\"zdr\":true,\"max_price\":{\"prompt\":1,\"completion\":2}}",
        "{\"zdr\":true,\"max_price\":{\"prompt\":1,\"completion\":2,"
        "\"image\":0}}",
        "{\"zdr\":true,\"max_price\":{\"prompt\":1,\"completion\":2,"
        "\"request\":0}}",
        "{\"zdr\":true,\"max_price\":{\"prompt\":1,\"completion\":2,"
        "\"request\":0.01,\"image\":0}}",
        "{\"zdr\":true,\"max_price\":{\"prompt\":1,\"completion\":2,"
        "\"request\":0,\"image\":0.001}}",
        "{\"zdr\":true,\"max_price\":{\"prompt\":1,\"completion\":2,"
        "\"request\":null,\"image\":0}}",
        "{\"zdr\":true,\"max_price\":{\"prompt\":1,\"completion\":2,"
        "\"request\":\"0\",\"image\":0}}",
        "{\"ord\\u0065r\":[\"x\"]}"
    };

    memset(&priced, 0, sizeof(priced));
    priced.client = &c_tools;
    priced.cost_per_day = 1000000000000ULL;

    router = compat;
    router.clients = &priced;
    router.nclients = 1;
    router.prices = prices;
    router.nprices = 1;

    for (i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
        (void) snprintf(body, sizeof(body),
                        "{\"model\":\"gpt-4o\",\"provider\":%s}", pass[i]);
        req(&router, &priced, AL_LLM_EP_CHAT, body);
        tap_is_int(rq.reason, AL_REASON_NONE, pass[i]);
    }

    for (i = 0; i < sizeof(refuse) / sizeof(refuse[0]); i++) {
        (void) snprintf(body, sizeof(body),
                        "{\"model\":\"gpt-4o\",\"provider\":%s}", refuse[i]);
        req(&router, &priced, AL_LLM_EP_CHAT, body);
        tap_ok(rq.reason == AL_REASON_BODY
               && has(rq.detail, "dollar budget")
               && has(rq.detail, "max_price"), refuse[i]);
    }

    req(&router, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"provider\":[\"dear\"]}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "must be an object"),
           "a provider that is no object refused");

    req(&router, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"provider\":{\"max_price\":1}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "must be an object"),
           "a max_price that is no object refused");

    req(&router, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Provider\":{\"order\":[\"dear\"]}}");
    tap_ok(refused_case("\"provider\""), "Provider refused");

    req(&router, &priced, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\","
        "\"provider\":{\"only\":[\"dear\"]}}");
    tap_is_int(rq.reason, AL_REASON_BODY, "refused on responses too");

    req(&router, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"provider\":{\"order\":[\"dear\"],"
        "\"allow_fallbacks\":false}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "no dollar budget: any provider routing passes");

    /* a cheaper fallback bounds the max_price too */

    bpriced = priced;
    back = compat;
    back.clients = &bpriced;
    back.nclients = 1;
    back.prices = bprices;
    back.nprices = 2;
    router.fallback = &back;

    req(&router, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"provider\":{\"zdr\":true,\"max_price\":"
        "{\"prompt\":2.5,\"completion\":10,\"request\":0,\"image\":0}}}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "a max_price over the fallback's prices refused");

    req(&router, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"provider\":{\"zdr\":true,\"max_price\":"
        "{\"prompt\":2,\"completion\":8,\"request\":0,\"image\":0}}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "a max_price at the fallback's prices passes");

    /*
     * The client asked for "fast", gpt-4o here; the fallback serves its
     * own "fast", gpt-4o-mini at 0.1 and 0.4
     */

    back.aliases = baliases;
    back.naliases = 1;
    fast.data = "fast";
    fast.len = 4;

    (void) snprintf(body, sizeof(body),
                    "{\"model\":\"gpt-4o\",\"provider\":{\"zdr\":true,"
                    "\"max_price\":{\"prompt\":2,\"completion\":8,"
                    "\"request\":0,\"image\":0}}}");
    al_llm_request_free(&rq);
    (void) al_llm_request_with(&router, &priced, AL_LLM_EP_CHAT, &fast,
                               NULL, 0, (const unsigned char *) body,
                               strlen(body), NULL, NULL, &rq);
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "max_price"),
           "a max_price over the prices of the fallback's alias refused");

    req(&router, &priced, AL_LLM_EP_CHAT, body);
    tap_is_int(rq.reason, AL_REASON_NONE,
               "... which no alias named passes at the model's");

    (void) snprintf(body, sizeof(body),
                    "{\"model\":\"gpt-4o\",\"provider\":{\"zdr\":true,"
                    "\"max_price\":{\"prompt\":0.1,\"completion\":0.4,"
                    "\"request\":0,\"image\":0}}}");
    al_llm_request_free(&rq);
    (void) al_llm_request_with(&router, &priced, AL_LLM_EP_CHAT, &fast,
                               NULL, 0, (const unsigned char *) body,
                               strlen(body), NULL, NULL, &rq);
    tap_is_int(rq.reason, AL_REASON_NONE,
               "a max_price at the prices of the fallback's alias passes");
}


/*
 * The Responses API's "background": its answer has no usage; a client
 * with a token or dollar budget may not ask for it.
 */

static void
test_background(void)
{
    al_llm_client_t  tpm, priced;

    memset(&tpm, 0, sizeof(tpm));
    tpm.client = &c_tools;
    tpm.tokens_per_day = 100000;

    memset(&priced, 0, sizeof(priced));
    priced.client = &c_tools;
    priced.cost_per_month = 1000000000000ULL;

    req(&oai, &tpm, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"background\":true,"
        "\"previous_response_id\":\"resp_1\"}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "no usage"),
           "background refused for a token budget");

    req(&compat, &priced, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"background\":true}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "background refused for a dollar budget");

    req(&oai, &tpm, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"background\":1}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "must be a boolean"),
           "a background that is no boolean refused");

    req(&oai, &tpm, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"Background\":true}");
    tap_ok(refused_case("\"background\""), "Background refused");

    req(&oai, &tpm, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"background\":false}");
    tap_is_int(rq.reason, AL_REASON_NONE, "background false passes");

    req(&oai, &tpm, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"background\":null}");
    tap_is_int(rq.reason, AL_REASON_NONE, "background null passes");

    req(&oai, &tpm, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"background\":true}");
    tap_is_int(rq.reason, AL_REASON_NONE, "chat: not the Responses member");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"background\":true}");
    tap_is_int(rq.reason, AL_REASON_NONE, "no budget: background passes");
}


/*
 * OpenAI's "prediction" (Predicted Outputs): the prediction's tokens the
 * answer does not use are billed as output past the cap; a client with a
 * token or dollar budget may not send one.
 */

static void
test_prediction(void)
{
    al_llm_t         listed;
    al_llm_client_t  tpm, priced;
    static al_str_t  name = S("prediction");

    memset(&tpm, 0, sizeof(tpm));
    tpm.client = &c_tools;
    tpm.tokens_per_minute = 100000;

    memset(&priced, 0, sizeof(priced));
    priced.client = &c_tools;
    priced.cost_per_day = 1000000000000ULL;

    req(&oai, &tpm, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":1,\"prediction\":"
        "{\"type\":\"content\",\"content\":\"x = 1;\"}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"prediction\"")
           && has(rq.detail, "budget"),
           "prediction refused for a token budget");

    req(&compat, &priced, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"prediction\":{\"type\":\"content\","
        "\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}");
    tap_is_int(rq.reason, AL_REASON_BODY,
               "prediction refused for a dollar budget");

    req(&oai, &tpm, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"prediction\":\"x\"}");
    tap_is_int(rq.reason, AL_REASON_BODY, "a prediction of any type refused");

    req(&oai, &tpm, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"pr\\u0065diction\":{\"type\":"
        "\"content\",\"content\":\"x\"}}");
    tap_is_int(rq.reason, AL_REASON_BODY, "an escaped prediction refused");

    req(&oai, &tpm, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Prediction\":{}}");
    tap_ok(refused_case("\"prediction\""), "Prediction refused");

    req(&oai, &tpm, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"prediction\":null}");
    tap_is_int(rq.reason, AL_REASON_NONE, "prediction null passes");

    req(&oai, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"prediction\":{\"type\":\"content\","
        "\"content\":\"x\"}}");
    tap_is_int(rq.reason, AL_REASON_NONE, "no budget: prediction passes");

    /* a chat member: elsewhere only as allow_members names it */

    req(&bare, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"prediction\":null}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"prediction\"")
           && has(rq.detail, "allow_members"),
           "prediction refused on responses");

    listed = bare;
    listed.allow_members = &name;
    listed.nallow_members = 1;

    req(&listed, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"prediction\":{}}");
    tap_is_int(rq.reason, AL_REASON_NONE,
               "... passes there as allow_members names it");

    req(&listed, &tpm, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"prediction\":{}}");
    tap_is_int(rq.reason, AL_REASON_BODY, "... but not for a budget");
}


/* LiteLLM's "user_config": a router of the client's for the call */

static void
test_user_config(void)
{
    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"user_config\":{\"model_list\":[{"
        "\"model_name\":\"gpt-4o\",\"litellm_params\":{\"model\":"
        "\"openai/o3\",\"api_base\":\"https://attacker.example\"}}]}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"user_config\""),
           "user_config refused");

    req(&oai, TOOLS, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"user_config\":null}");
    tap_is_int(rq.reason, AL_REASON_BODY, "user_config null refused");

    req(&compat, TOOLS, AL_LLM_EP_EMBEDDINGS,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"us\\u0065r_config\":{}}");
    tap_is_int(rq.reason, AL_REASON_BODY, "user_config escaped refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"User_Config\":{}}");
    tap_ok(refused_case("\"user_config\""), "User_Config refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"metadata\":{\"user_config\":1}}");
    tap_is_int(rq.reason, AL_REASON_NONE, "user_config elsewhere passes");
}


/* LiteLLM's "api_base" and "base_url": where the call is sent */

static void
test_api_base(void)
{
    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"api_key\":\"x\","
        "\"api_base\":\"https://attacker.example/v1\"}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"api_base\"")
           && has(rq.detail, "URL"), "api_base refused");

    req(&oai, TOOLS, AL_LLM_EP_EMBEDDINGS,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"api_key\":\"x\","
        "\"base_url\":\"https://attacker.example/v1\"}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"base_url\""),
           "base_url refused");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"api_b\\u0061se\":null}");
    tap_is_int(rq.reason, AL_REASON_BODY, "api_base escaped, null refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Base_URL\":\"https://attacker.example\"}");
    tap_ok(refused_case("\"base_url\""), "Base_URL refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"metadata\":"
        "{\"api_base\":\"https://example.com\"}}");
    tap_is_int(rq.reason, AL_REASON_NONE, "api_base elsewhere passes");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"api_key\":\"x\"}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"api_key\" is not accepted on "
                  "chat/completions"),
           "api_key, no member of the list, refused");
}


/* LiteLLM's "extra_body", "extra_headers", "headers": sent on as they are */

static void
test_merged(void)
{
    req(&compat, SMALL, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_tokens\":5,\"extra_body\":"
        "{\"max_tokens\":100000,\"service_tier\":\"priority\"}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"extra_body\"")
           && has(rq.detail, "members of the body"), "extra_body refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"extra_headers\":"
        "{\"anthropic-beta\":\"context-1m-2025-08-07\"}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"extra_headers\"")
           && has(rq.detail, "as headers"), "extra_headers refused");

    req(&oai, TOOLS, AL_LLM_EP_EMBEDDINGS,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"headers\":"
        "{\"OpenAI-Project\":\"proj_other\"}}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"headers\""),
           "headers refused");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"extra_b\\u006fdy\":null}");
    tap_is_int(rq.reason, AL_REASON_BODY, "extra_body escaped, null refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"Extra_Headers\":{}}");
    tap_ok(refused_case("\"extra_headers\""), "Extra_Headers refused");

    req(&compat, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"metadata\":{\"headers\":{},"
        "\"extra_body\":{}}}");
    tap_is_int(rq.reason, AL_REASON_NONE, "the names elsewhere pass");
}


/*
 * A JSON answer whose total_tokens is above its prompt and completion
 * tokens: the rest is output the usage left out (thinking, behind proxies
 * in front of Gemini), counted at the output price.
 */

static void
test_total_over(void)
{
    size_t          i, len;
    unsigned        bad;
    al_llm_usage_t  u, u2;
    al_llm_resp_t   r;
    const char     *body;

    body = "{\"id\":\"c\",\"object\":\"chat.completion\",\"model\":"
           "\"gemini-2.5-flash\",\"choices\":[],\"usage\":{\"prompt_tokens\":"
           "21,\"completion_tokens\":0,\"total_tokens\":81,"
           "\"completion_tokens_details\":{\"reasoning_tokens\":60}}}";
    len = strlen(body);

    tap_ok(al_llm_usage_parse(AL_LLM_OPENAI_COMPATIBLE, AL_LLM_EP_CHAT,
                              (const unsigned char *) body, len, &u, NULL, 0)
           == 0
           && u.prompt_tokens == 21 && u.completion_tokens == 60
           && u.total_tokens == 81,
           "chat: total over prompt and completion is output");

    bad = 0;
    for (i = 0; i <= len; i++) {
        al_llm_resp_init(&r, AL_LLM_OPENAI_COMPATIBLE, AL_LLM_EP_CHAT);
        al_llm_resp_feed(&r, (const unsigned char *) body, i);
        al_llm_resp_feed(&r, (const unsigned char *) body + i, len - i);
        if (al_llm_resp_usage(&r, &u2, NULL, 0) != 0
            || memcmp(&u, &u2, sizeof(u)) != 0)
        {
            bad++;
        }
    }
    tap_is_int(bad, 0, "... the same at every split point");

    body = "{\"id\":\"r\",\"object\":\"response\",\"model\":\"g\","
           "\"output\":[],\"usage\":{\"input_tokens\":36,\"output_tokens\":7,"
           "\"total_tokens\":143}}";
    tap_ok(al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_RESPONSES,
                              (const unsigned char *) body, strlen(body), &u,
                              NULL, 0)
           == 0
           && u.prompt_tokens == 36 && u.completion_tokens == 107
           && u.total_tokens == 143, "responses: the same");

    body = "{\"usage\":{\"prompt_tokens\":21,\"completion_tokens\":5,"
           "\"total_tokens\":20}}";
    tap_ok(al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                              (const unsigned char *) body, strlen(body), &u,
                              NULL, 0)
           == 0
           && u.prompt_tokens == 21 && u.completion_tokens == 5
           && u.total_tokens == 26, "a total under the sum: the sum");
}


/* refused as a member no list has, the refusal naming it, ep and llm */

static int
refused_member(const char *name, const char *ep, const char *llm)
{
    char  want[256];

    (void) snprintf(want, sizeof(want), "\"%s\" is not accepted on %s: "
                    "only the request members the providers document "
                    "there pass; allow_members of llm \"%s\" adds one",
                    name, ep, llm);

    if (rq.reason != AL_REASON_BODY || strcmp(rq.detail, want) != 0) {
        tap_diag("got", rq.detail);
        return 0;
    }

    return 1;
}


/* refused in allow_members as a name the gateway reads in another case */

static int
member_case(const char *name)
{
    const char  *why;

    why = al_llm_member_refused(name, strlen(name));

    if (why == NULL || strstr(why, "case") == NULL) {
        tap_diag("allowed or refused for another cause", name);
        return 0;
    }

    return 1;
}


/*
 * Top-level members: the providers' documented ones pass on their
 * endpoints, any other is refused unless allow_members lists it.
 */

static void
test_members(void)
{
    size_t           i, j;
    char             body[1024];
    al_llm_t         listed;
    al_str_t         extra[] = { S("some_new_router_option"),
                                 S("custom_llm_provider") };

    static const char  *unknown[] = {
        "aws_bedrock_runtime_endpoint", "custom_llm_provider",
        "some_new_router_option", "tags", "metadata", "api_key",
        "vertex_project", "route", "transforms"
    };

    static const struct {
        al_llm_t           *llm;
        al_llm_endpoint_t   ep;
        const char         *base;       /* a body without its closing } */
    } eps[] = {
        { &bare, AL_LLM_EP_CHAT,
          "{\"model\":\"gpt-4o\",\"messages\":[]" },
        { &bare, AL_LLM_EP_COMPLETIONS,
          "{\"model\":\"gpt-4o\",\"prompt\":\"x\"" },
        { &bare, AL_LLM_EP_EMBEDDINGS,
          "{\"model\":\"text-embedding-3-small\",\"input\":\"x\"" },
        { &bare, AL_LLM_EP_RESPONSES,
          "{\"model\":\"gpt-4o\",\"input\":\"x\"" },
        { &bare_ant, AL_LLM_EP_MESSAGES,
          "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
          "\"messages\":[]" }
    };

    for (i = 0; i < sizeof(eps) / sizeof(eps[0]); i++) {
        (void) snprintf(body, sizeof(body), "%s}", eps[i].base);
        req(eps[i].llm, AGENT, eps[i].ep, body);
        tap_is_int(rq.reason, AL_REASON_NONE, "members: the base body "
                   "passes");

        for (j = 0; j < sizeof(unknown) / sizeof(unknown[0]); j++) {
            (void) snprintf(body, sizeof(body), "%s,\"%s\":\"x\"}",
                            eps[i].base, unknown[j]);
            req(eps[i].llm, AGENT, eps[i].ep, body);
            tap_ok(refused_member(unknown[j], al_llm_endpoint_name(eps[i].ep),
                                  eps[i].llm->name.data),
                   "members: an unknown member refused");
        }

        /* listed: accepted, on every endpoint */

        listed = *eps[i].llm;
        listed.allow_members = extra;
        listed.nallow_members = 2;

        (void) snprintf(body, sizeof(body), "%s,\"some_new_router_option\":"
                        "{\"a\":1},\"custom_llm_provider\":\"x\"}",
                        eps[i].base);
        req(&listed, AGENT, eps[i].ep, body);
        tap_is_int(rq.reason, AL_REASON_NONE,
                   "members: allow_members lets them pass");

        (void) snprintf(body, sizeof(body), "%s,\"some_new_router_option\":"
                        "1,\"tags\":[\"x\"]}", eps[i].base);
        req(&listed, AGENT, eps[i].ep, body);
        tap_ok(refused_member("tags", al_llm_endpoint_name(eps[i].ep),
                              eps[i].llm->name.data),
               "members: ... and no other");
    }

    /*
     * The documented members of each endpoint pass (chat's for a client
     * without a budget: with one, "prediction" is refused)
     */

    req(&bare, TOOLS, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"temperature\":0.5,"
        "\"top_p\":1,\"top_k\":40,\"min_p\":0.1,\"repetition_penalty\":1.1,"
        "\"seed\":1,\"stop\":[\"x\"],\"user\":\"u\",\"response_format\":"
        "{\"type\":\"text\"},\"tool_choice\":\"auto\","
        "\"parallel_tool_calls\":false,\"logprobs\":true,\"top_logprobs\":2,"
        "\"frequency_penalty\":0,\"presence_penalty\":0,\"logit_bias\":{},"
        "\"store\":false,\"reasoning_effort\":\"low\",\"verbosity\":\"low\","
        "\"prompt_cache_key\":\"k\",\"prompt_cache_retention\":\"24h\","
        "\"safety_identifier\":\"s\",\"prediction\":{\"type\":\"content\","
        "\"content\":\"x\"},\"functions\":[],\"function_call\":\"none\","
        "\"max_tokens\":5,\"stream\":false}");
    tap_is_int(rq.reason, AL_REASON_NONE, "members: chat's pass");

    req(&bare, AGENT, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o\",\"prompt\":\"x\",\"suffix\":\"y\","
        "\"echo\":false,\"best_of\":1,\"logprobs\":1,\"temperature\":0,"
        "\"top_k\":1,\"min_p\":0,\"repetition_penalty\":1,\"seed\":1,"
        "\"stop\":\"x\",\"user\":\"u\",\"n\":1}");
    tap_is_int(rq.reason, AL_REASON_NONE, "members: completions' pass");

    req(&bare, AGENT, AL_LLM_EP_EMBEDDINGS,
        "{\"model\":\"text-embedding-3-small\",\"input\":[\"x\"],"
        "\"dimensions\":256,\"encoding_format\":\"float\",\"user\":\"u\"}");
    tap_is_int(rq.reason, AL_REASON_NONE, "members: embeddings' pass");

    req(&bare, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"instructions\":\"y\","
        "\"include\":[],\"previous_response_id\":\"r\",\"reasoning\":"
        "{\"effort\":\"low\"},\"text\":{\"format\":{\"type\":\"text\"}},"
        "\"truncation\":\"auto\",\"max_tool_calls\":2,\"store\":false,"
        "\"tool_choice\":\"auto\",\"parallel_tool_calls\":true,"
        "\"temperature\":1,\"top_p\":1,\"top_logprobs\":0,\"user\":\"u\","
        "\"safety_identifier\":\"s\",\"prompt_cache_key\":\"k\","
        "\"max_output_tokens\":5}");
    tap_is_int(rq.reason, AL_REASON_NONE, "members: responses' pass");

    req(&bare_ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":[],"
        "\"system\":\"s\",\"stop_sequences\":[],\"temperature\":1,"
        "\"top_p\":1,\"top_k\":5,\"tool_choice\":{\"type\":\"auto\"},"
        "\"thinking\":{\"type\":\"disabled\"},\"cache_control\":"
        "{\"type\":\"ephemeral\"},\"context_management\":{},"
        "\"container\":{\"skills\":[]}}");
    tap_is_int(rq.reason, AL_REASON_NONE, "members: messages' pass");

    /* another endpoint's member is refused */

    req(&bare, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"input\":\"x\"}");
    tap_ok(refused_member("input", "chat/completions", "bare"),
           "members: input on chat refused");

    req(&bare, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"messages\":[]}");
    tap_ok(refused_member("messages", "responses", "bare"),
           "members: messages on responses refused");

    req(&bare, AGENT, AL_LLM_EP_EMBEDDINGS,
        "{\"model\":\"text-embedding-3-small\",\"input\":\"x\","
        "\"temperature\":1}");
    tap_ok(refused_member("temperature", "embeddings", "bare"),
           "members: temperature on embeddings refused");

    req(&bare_ant, AGENT, AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,\"messages\":[],"
        "\"stop\":[\"x\"]}");
    tap_ok(refused_member("stop", "messages", "bare_ant"),
           "members: stop on messages refused");

    /* escaped, long, after a member with a check of its own */

    req(&bare, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"te\\u006dperature\":1,"
        "\"cust\\u006fm_llm_provider\":\"x\"}");
    tap_ok(refused_member("cust?u006fm_llm_provider", "chat/completions",
                          "bare"),
           "members: escaped keys are compared unescaped");

    req(&bare, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"messages\":[],\"aaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "aaa...\" is not "
                                              "accepted on chat"),
           "members: a key longer than any name refused");

    req(&bare, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"custom_llm_provider\":\"x\","
        "\"fallbacks\":[\"o1\"]}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"fallbacks\" is "
                                              "not accepted: routers serve"),
           "members: a member with a check of its own has its reason");

    req(&bare, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"x\":{\"aws_bedrock_runtime_endpoint\":1},"
        "\"messages\":[{\"role\":\"user\",\"content\":\"x\","
        "\"custom\":1}]}");
    tap_ok(refused_member("x", "chat/completions", "bare"),
           "members: only the top level is looked at, the first named");

    /*
     * more keys open at once than the loop keeps (the body's and a
     * member's): the recursive scan reads it, and finds the same
     */

    for (j = 0; j < 2; j++) {
        size_t  n;

        n = (size_t) snprintf(body, sizeof(body), "{\"model\":\"gpt-4o\","
                              "\"messages\":[],\"response_format\":{");
        for (i = 0; i < 62; i++) {
            n += (size_t) snprintf(body + n, sizeof(body) - n, "%s\"k%zu\":0",
                                   i ? "," : "", i);
        }
        (void) snprintf(body + n, sizeof(body) - n, "}%s}",
                        j ? ",\"custom_llm_provider\":1" : "");

        req(&bare, AGENT, AL_LLM_EP_CHAT, body);
        tap_ok(j ? refused_member("custom_llm_provider", "chat/completions",
                                  "bare")
                 : rq.reason == AL_REASON_NONE,
               j ? "members: the recursive scan refuses the same"
                 : "members: the recursive scan passes the same");
    }

    /* what allow_members may list */

    tap_ok(al_llm_member_refused("some_new_router_option", 22) == NULL
           && al_llm_member_refused("metadata", 8) == NULL
           && al_llm_member_refused("input", 5) == NULL,
           "allow_members: other names may be listed");
    tap_ok(al_llm_member_refused("models", 6) != NULL
           && strstr(al_llm_member_refused("api_base", 8), "refuses") != NULL
           && strstr(al_llm_member_refused("extra_headers", 13), "refuses")
              != NULL
           && strstr(al_llm_member_refused("n_predict", 9), "refuses")
              != NULL
           && strstr(al_llm_member_refused("max_tokens", 10), "reads it")
              != NULL
           && strstr(al_llm_member_refused("MAX_TOKENS", 10), "case")
              != NULL
           && strstr(al_llm_member_refused("Messages", 8), "case") != NULL
           && al_llm_member_refused("", 0) != NULL
           && al_llm_member_refused("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                    "aaaaaaaa", 49) != NULL
           && al_llm_member_refused("a\0b", 3) != NULL,
           "allow_members: refused or read names may not");
    tap_ok(al_llm_member_refused("enable_thinking", 15) == NULL
           && al_llm_member_refused("nvext", 5) == NULL
           && member_case("Enable_Thinking")
           && member_case("THINKING_BUDGET")
           && member_case("nvExt")
           && member_case("chat_template_Kwargs"),
           "allow_members: a thinking member only in lower case");

    tap_ok(al_llm_member_eps("max_tokens", 10) == 0x3e
           && al_llm_member_eps("messages", 8)
              == ((1u << AL_LLM_EP_CHAT) | (1u << AL_LLM_EP_MESSAGES))
           && al_llm_member_eps("dimensions", 10)
              == (1u << AL_LLM_EP_EMBEDDINGS)
           && al_llm_member_eps("metadata", 8) == 0
           && al_llm_member_eps("custom_llm_provider", 19) == 0,
           "al_llm_member_eps()");
}


/*
 * The output cap's member made at load (al_llm_client_caps()) gives the
 * body al_llm_edit_member() gives per call: same bytes, same cap.
 */

static void
test_cap_members(void)
{
    size_t            i;
    uint64_t          max;
    al_llm_client_t   lc;
    char              want[512], name[96];
    size_t            want_len;

    static const struct {
        const al_llm_t     *llm;
        al_llm_client_t     lc;
        al_llm_endpoint_t   ep;
        const char         *body;
    } cases[] = {
        { &oai, { .client = &c_agent, .max_tokens = 1000, .clamp = 1 },
          AL_LLM_EP_CHAT, "{\"model\":\"gpt-4o\"}" },
        { &oai, { .client = &c_agent, .tokens_per_day = 100 },
          AL_LLM_EP_CHAT, "{\"model\":\"gpt-4o\",\"stream\":true}" },
        { &oai, { .client = &c_agent, .default_max_tokens = 10000000 },
          AL_LLM_EP_RESPONSES, "{\"model\":\"gpt-4o\",\"input\":\"hi\"}" },
        { &oai, { .client = &c_agent, .default_max_tokens = 7 },
          AL_LLM_EP_CHAT,
          "{\"model\":\"gpt-4o\",\"max_completion_tokens\":null}" },
        { &compat, { .client = &c_agent, .max_tokens = 512 },
          AL_LLM_EP_CHAT, "{\"model\":\"gpt-4o\"}" },
        { &compat, { .client = &c_agent, .max_tokens = 512 },
          AL_LLM_EP_COMPLETIONS, "{\"model\":\"gpt-4o\",\"prompt\":\"x\"}" },
        { &oai, { .client = &c_agent, .tokens_per_minute = 5 },
          AL_LLM_EP_RESPONSES, "{\"model\":\"gpt-4o\",\"input\":[]}" },
        { &oai, { .client = &c_agent }, AL_LLM_EP_CHAT,
          "{\"model\":\"gpt-4o\"}" }
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        lc = cases[i].lc;
        (void) snprintf(name, sizeof(name), "case %zu: the member made at "
                        "load gives the same body", i);

        req(cases[i].llm, &lc, cases[i].ep, cases[i].body);
        want_len = (rq.body != NULL && rq.body_len < sizeof(want))
                   ? rq.body_len : 0;
        memcpy(want, rq.body != NULL ? rq.body : "", want_len);
        want[want_len] = '\0';
        max = rq.max_output;

        al_llm_client_caps(&lc);

        req(cases[i].llm, &lc, cases[i].ep, cases[i].body);
        tap_ok(want_len == 0 ? rq.body == NULL || rq.body_len == 0
                             : body_is(want) && rq.max_output == max,
               name);
    }
}


/*
 * The output limits of the other APIs (max_tokens on responses,
 * max_output_tokens on chat, max_completion_tokens on completions and
 * messages): a router behind an entry may read them, so they are held to
 * the cap and reserved for, as the endpoint's own.
 */

static void
test_other_caps(void)
{
    req(&oai, WORKER, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o-mini\",\"max_tokens\":10,"
        "\"max_output_tokens\":99999}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"max_output_tokens\" 99999 is over"),
           "chat: max_output_tokens over the cap, reject mode: refused");

    req(&oai, WORKER, AL_LLM_EP_COMPLETIONS,
        "{\"model\":\"gpt-4o-mini\",\"prompt\":\"x\","
        "\"max_completion_tokens\":99999}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"max_completion_tokens\" 99999 is over"),
           "completions: max_completion_tokens over the cap: refused");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\",\"max_tokens\":100000}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.clamped
           && req_int("max_tokens") == 1000
           && req_int("max_output_tokens") == 1000
           && rq.max_output == 1000,
           "responses: max_tokens clamped, max_output_tokens still added");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\",\"max_output_tokens\":5,"
        "\"max_completion_tokens\":700}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.body == NULL
           && rq.max_output == 700,
           "responses: under the cap, the larger limit is reserved");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"max_completion_tokens\":50000,\"max_output_tokens\":0}");
    tap_ok(rq.reason == AL_REASON_BODY
           && has(rq.detail, "\"max_output_tokens\" must be a positive"),
           "messages: a limit of 0 under another name: refused");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":10,"
        "\"max_completion_tokens\":50000,\"max_output_tokens\":null}");
    tap_ok(rq.reason == AL_REASON_NONE
           && req_int("max_completion_tokens") == 1000
           && req_int("max_tokens") == 10 && rq.max_output == 1000,
           "messages: max_completion_tokens clamped and reserved");

    req(&compat, AGENT, AL_LLM_EP_CHAT,
        "{\"model\":\"gpt-4o\",\"max_completion_tokens\":5000,"
        "\"max_output_tokens\":6000,\"stream\":true}");
    tap_ok(rq.reason == AL_REASON_NONE && req_int("max_tokens") == 1000
           && req_int("max_completion_tokens") == 1000
           && req_int("max_output_tokens") == 1000
           && rq.max_output == 1000,
           "openai-compatible chat: all three at the cap, with the usage "
           "option");

    req(&oai, AGENT, AL_LLM_EP_EMBEDDINGS,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\"}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.body == NULL,
           "embeddings: untouched");
}


/*
 * "n" and "best_of" on the Responses API and messages: the providers
 * have none, a router that serves them through chat passes them on, so
 * they are checked and multiply the output reserved there too.
 */

static void
test_other_n(void)
{
    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\",\"max_output_tokens\":100,"
        "\"n\":9}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 900,
           "responses: n multiplies the output reserved");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":100,"
        "\"best_of\":4,\"n\":2}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 400,
           "messages: best_of over n multiplies it");

    req(&oai, AGENT, AL_LLM_EP_RESPONSES,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\",\"n\":1000}");
    tap_ok(rq.reason == AL_REASON_BODY && has(rq.detail, "\"n\" must be"),
           "responses: n over 128 refused");

    req(&ant, &ant_clients[0], AL_LLM_EP_MESSAGES,
        "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":100,"
        "\"n\":\"5\"}");
    tap_is_int(rq.reason, AL_REASON_BODY, "messages: a string n refused");

    req(&oai, AGENT, AL_LLM_EP_EMBEDDINGS,
        "{\"model\":\"gpt-4o\",\"input\":\"hi\",\"n\":3}");
    tap_ok(rq.reason == AL_REASON_NONE && rq.max_output == 0,
           "embeddings: no output, nothing reserved");
}


/*
 * al_llm_body_text(): JSON answers, event streams and other text, whole
 * or cut anywhere, are text; compressed bodies (their first bytes as
 * encoders write them) and random bytes are not.
 */

static void
test_body_text(void)
{
    int            want;
    size_t         i, k, at, len, bad, pass;
    uint32_t       x;
    unsigned char  r[AL_LLM_TEXT_PEEK], b[AL_LLM_TEXT_PEEK + 8];

    static const struct {
        const char  *body;
        size_t       len;
        int          want;
    } t[] = {
#define B(s, w)  { s, sizeof(s) - 1, w }
        B("{\"id\":\"chatcmpl-1\"}", 1),
        B("{\n  \"id\": \"chatcmpl-1\",\n  \"object\": \"chat\"", 1),
        B("\xef\xbb\xbf{\"id\":1}", 1),
        B("data: {\"id\":1}\n\n", 1),
        B("event: message_start\r\ndata: {}\r\n\r\n", 1),
        B(": OPENROUTER PROCESSING\n\ndata: {}\n\n", 1),
        B("{\"text\":\"\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\"}", 1),
        B("<<%73%6B>>;<<%73%6B>>;", 1),
        B("<html><body>502</body></html>", 1),
        B("{\"id\":\"chatcmpl-1\"}\x1f\x8b\x08", 1),     /* past the peek */
        /* the first 16 bytes of real bodies: gzip, zlib at levels 1, 6
         and 9, raw deflate, zstd, bzip2, xz */
        B("\x1f\x8b\x08\x00\xac\xd5\x15\x6b"
          "\x02\xff\x35\xcc\x31\x0e\x83\x30", 0),
        B("\x78\x01\x35\xcc\x31\x0e\x83\x30"
          "\x14\x03\xd0\xab\x44\x7f\x06\xc4", 0),
        B("\x78\x9c\x35\xcc\x31\x0e\x83\x30"
          "\x14\x03\xd0\xab\x44\x7f\x06\xc4", 0),
        B("\x78\xda\x35\xcc\x31\x0e\x83\x30"
          "\x14\x03\xd0\xab\x44\x7f\x06\xc4", 0),
        B("\x35\xcc\x31\x0e\x83\x30\x14\x03"
          "\xd0\xab\x44\x7f\x06\xc4\xdc\x0d", 0),
        B("\x28\xb5\x2f\xfd\x04\x58\x35\x02"
          "\x00\xb4\x03\x7b\x22\x69\x64\x22", 0),
        B("\x42\x5a\x68\x39\x31\x41\x59\x26"
          "\x53\x59\xd2\x8a\xca\xa0\x00\x00", 0),
        B("\xfd\x37\x7a\x58\x5a\x00\x00\x04"
          "\xe6\xd6\xb4\x46\x02\x00\x21\x01", 0),
        B("\x1b\x5c\x02\x00\x04\x58", 0),                     /* brotli */
        B("\x8b\x07\x80\x7b\x22\x69", 0),
        B("\x5b\x3a\x94\x21\x02\x80", 0),
        B("\x22\x8f\x41\x30", 0),
        B("\x04\x22\x4d\x18", 0),                             /* lz4 */
        B("{\x1f\x8b", 0),
        B("dat\x8b", 0),
        B("\xef\xbb\x00{}", 0),
        B("\xe6\x97x", 0),
        B("{\"a\":\"\xc0\xaf\"}", 0),                         /* overlong */
        B("\x00{\x00\"\x00", 0),                              /* UTF-16 */
#undef B
    };

    bad = 0;

    for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (al_llm_body_text((const unsigned char *) t[i].body, t[i].len)
            != t[i].want)
        {
            tap_diag("body", t[i].body);
            bad++;
        }

        /* text cut anywhere, a UTF-8 sequence too, is text */

        for (k = 1; k < t[i].len && t[i].want; k++) {
            if (!al_llm_body_text((const unsigned char *) t[i].body, k)) {
                tap_diag("body cut", t[i].body);
                bad++;
            }
        }
    }

    tap_ok(bad == 0, "al_llm_body_text(): text in, compressed bodies out");

    /* every byte value at every place of the peek, words and bytes alike */

    bad = 0;

    for (k = 0; k < 2 * AL_LLM_TEXT_PEEK; k++) {
        for (i = 0; i < 256; i++) {
            memcpy(b, "data: {\"id\":\"chatcmpl-1", sizeof(b));
            at = k % AL_LLM_TEXT_PEEK;
            len = (k < AL_LLM_TEXT_PEEK) ? AL_LLM_TEXT_PEEK : sizeof(b);
            b[at] = (unsigned char) i;

            want = (i >= 0x20 && i < 0x7f) || i == '\t' || i == '\n'
                   || i == '\r'
                   || (i >= 0xc2 && i <= 0xf4 && at + 1 == len);

            if (al_llm_body_text(b, len) != want) {
                bad++;
            }
        }
    }

    tap_ok(bad == 0, "al_llm_body_text(): each byte at each place");

    /* random bytes, as a compressed body's are past its header */

    x = 2463534242u;
    pass = 0;

    for (i = 0; i < 100000; i++) {
        for (k = 0; k < sizeof(r); k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            r[k] = (unsigned char) x;
        }

        pass += al_llm_body_text(r, sizeof(r));
    }

    tap_ok(pass <= 2, "al_llm_body_text(): random bytes are not text");
}
