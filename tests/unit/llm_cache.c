/*
 * Unit tests for prompt-cache writes (Anthropic): the cache_creation
 * counts read from a JSON answer (quick and strict paths) and from a
 * stream (scanner and jansson), their cost at the cache_write prices,
 * the reservation's worst case, the policy's prices and the usage line.
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "tap.h"


static void test_answer(void);
static void test_stream(void);
static void test_cost(void);
static void test_openai_cached(void);
static void test_policy(void);
static void test_line(void);
static void test_beta(void);
static void test_asked(void);
static void usage_of(const char *json, al_llm_usage_t *u);
static void stream_of(const char *s, unsigned ref, al_llm_usage_t *u);
static al_policy_t *load(const char *yaml, al_error_t *err);


int
main(void)
{
    test_answer();
    test_stream();
    test_cost();
    test_openai_cached();
    test_policy();
    test_line();
    test_beta();
    test_asked();

    return tap_done();
}


/* 10 read, 1000 written for 5 minutes and 2000 for an hour */

#define CC_QUICK                                                            \
    "{\"input_tokens\":5,\"cache_creation_input_tokens\":3000,"             \
    "\"cache_read_input_tokens\":10,\"cache_creation\":"                    \
    "{\"ephemeral_5m_input_tokens\":1000,"                                  \
    "\"ephemeral_1h_input_tokens\":2000},\"output_tokens\":7}"

#define CC_STRICT                                                           \
    "{\"input_tokens\":5,\"cache_creation_input_tokens\":3000,"             \
    "\"cache_read_input_tokens\":10,\"cache_creation\":"                    \
    "{\"ephemeral_5m_input_tokens\":1000,"                                  \
    "\"ephemeral_1h_input_tokens\":2e3},\"output_tokens\":7,"               \
    "\"x\":\"\\u0041\"}"


static void
test_answer(void)
{
    al_llm_usage_t  u;

    usage_of(CC_QUICK, &u);
    tap_ok(u.prompt_tokens == 3015 && u.cached_tokens == 10
           && u.cache_write_tokens == 3000
           && u.cache_write_1h_tokens == 2000
           && u.completion_tokens == 7 && u.total_tokens == 3022,
           "answer: cache writes and their 1-hour part (quick path)");

    /* 2e3 beside integer counts: the number a client reads */
    usage_of(CC_STRICT, &u);
    tap_ok(u.prompt_tokens == 3015 && u.cache_write_tokens == 3000
           && u.cache_write_1h_tokens == 2000,
           "answer: the strict scanner reads cache_creation too");

    usage_of("{\"input_tokens\":5,\"cache_creation_input_tokens\":3000,"
             "\"cache_creation\":{\"ephemeral_5m_input_tokens\":0,"
             "\"ephemeral_1h_input_tokens\":3000,\"x\":\"\\u0041\"},"
             "\"output_tokens\":7}", &u);
    tap_ok(u.cache_write_tokens == 3000 && u.cache_write_1h_tokens == 3000,
           "answer: strict, all written for an hour");

    usage_of("{\"input_tokens\":5,\"cache_creation_input_tokens\":300,"
             "\"output_tokens\":7}", &u);
    tap_ok(u.prompt_tokens == 305 && u.cache_write_tokens == 300
           && u.cache_write_1h_tokens == 0,
           "answer: without cache_creation, all 5-minute writes");

    usage_of("{\"input_tokens\":5,\"cache_creation_input_tokens\":10,"
             "\"cache_creation\":{\"ephemeral_5m_input_tokens\":10,"
             "\"ephemeral_1h_input_tokens\":90},\"output_tokens\":7}", &u);
    tap_ok(u.prompt_tokens == 105 && u.cache_write_tokens == 100
           && u.cache_write_1h_tokens == 90,
           "answer: parts over the total are taken");
}


#define EV(type, data)  "event: " type "\ndata: " data "\n\n"

static void
test_stream(void)
{
    unsigned        ref;
    char            name[128];
    al_llm_usage_t  u;

    static const char  start[] =
        EV("message_start", "{\"type\":\"message_start\",\"message\":"
           "{\"id\":\"m\",\"model\":\"claude\",\"usage\":"
           "{\"input_tokens\":5,\"cache_creation_input_tokens\":3000,"
           "\"cache_read_input_tokens\":10,\"cache_creation\":"
           "{\"ephemeral_5m_input_tokens\":1000,"
           "\"ephemeral_1h_input_tokens\":2000},\"output_tokens\":1}}}")
        EV("content_block_delta", "{\"type\":\"content_block_delta\","
           "\"index\":0,\"delta\":{\"type\":\"text_delta\","
           "\"text\":\"hi\"}}");

    static const char  end[] =
        EV("message_delta", "{\"type\":\"message_delta\",\"delta\":"
           "{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}")
        EV("message_stop", "{\"type\":\"message_stop\"}");

    static const char  end_cc[] =
        EV("message_delta", "{\"type\":\"message_delta\",\"delta\":"
           "{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":5,"
           "\"cache_creation_input_tokens\":3000,"
           "\"cache_read_input_tokens\":10,\"cache_creation\":"
           "{\"ephemeral_5m_input_tokens\":0,"
           "\"ephemeral_1h_input_tokens\":3000},\"output_tokens\":7}}")
        EV("message_stop", "{\"type\":\"message_stop\"}");

    char  buf[2048];

    for (ref = 0; ref < 2; ref++) {
        (void) snprintf(buf, sizeof(buf), "%s%s", start, end);
        stream_of(buf, ref, &u);

        (void) snprintf(name, sizeof(name), "stream (%s): message_start's "
                        "cache writes and their 1-hour part",
                        ref ? "jansson" : "scanner");
        tap_ok(u.prompt_tokens == 3015 && u.cache_write_tokens == 3000
               && u.cache_write_1h_tokens == 2000
               && u.completion_tokens == 7, name);

        (void) snprintf(buf, sizeof(buf), "%s%s", start, end_cc);
        stream_of(buf, ref, &u);

        (void) snprintf(name, sizeof(name), "stream (%s): message_delta's "
                        "cache_creation replaces", ref ? "jansson"
                                                        : "scanner");
        tap_ok(u.prompt_tokens == 3015 && u.cache_write_tokens == 3000
               && u.cache_write_1h_tokens == 3000, name);
    }
}


static void
test_cost(void)
{
    int             ok;
    size_t          i;
    al_llm_usage_t  u;
    al_llm_price_t  p;

    memset(&p, 0, sizeof(p));
    p.input = 3000000;              /* $3 per million */
    p.cached_input = 300000;        /* $0.30 */
    p.output = 15000000;            /* $15 */
    p.cache_write = 3750000;        /* $3.75 */
    p.cache_write_1h = 6000000;     /* $6 */

    usage_of(CC_QUICK, &u);

    /* 5 * 3 + 10 * 0.3 + 1000 * 3.75 + 2000 * 6 + 7 * 15 (e-6 dollars) */
    tap_ok(al_llm_cost(&p, &u) == UINT64_C(15000000 + 3000000 + 3750000000
                                           + 12000000000 + 105000000),
           "cost: cache writes at their 5-minute and 1-hour prices");

    tap_ok(al_llm_cost_need(&p, 1, 1000, 10) == UINT64_C(6000000000
                                                         + 150000000),
           "worst case: every input token written for an hour");

    tap_ok(al_llm_cost_need(&p, 0, 1000, 10) == UINT64_C(3000000000
                                                         + 150000000),
           "worst case without cache_control: the input price");

    p.cache_write_1h = 1000000;
    tap_ok(al_llm_cost_need(&p, 1, 1000, 0) == UINT64_C(3750000000),
           "worst case: the highest of the input prices");

    p.cache_write = 0;
    p.cache_write_1h = 0;
    tap_ok(al_llm_cost_need(&p, 1, 1000, 0) == UINT64_C(3000000000),
           "worst case: never below the input price");

    memset(&u, 0, sizeof(u));
    u.prompt_tokens = 10;
    u.cache_write_tokens = 100;
    u.cache_write_1h_tokens = 100;
    p.cache_write_1h = 6000000;
    tap_ok(al_llm_cost(&p, &u) == UINT64_C(60000000),
           "cost: writes over the prompt count as all of it");

    /* an uncounted prompt is charged as the reservation priced it */

    p.cache_write = 3750000;
    p.cache_write_1h = 6000000;

    for (i = 0; i < 3; i++) {
        if (i == 1) {
            p.cache_write_1h = 1000000;     /* 5 minutes the dearer */

        } else if (i == 2) {
            p.cache_write = p.input;        /* no write above input */
            p.cache_write_1h = p.input;
        }

        memset(&u, 0, sizeof(u));
        u.prompt_tokens = 1000;
        al_llm_cost_guess(&p, 1, &u);
        ok = (al_llm_cost(&p, &u) == al_llm_cost_need(&p, 1, 1000, 0));

        memset(&u, 0, sizeof(u));
        u.prompt_tokens = 1000;
        al_llm_cost_guess(&p, 0, &u);
        ok = ok && u.cache_write_tokens == 0
             && al_llm_cost(&p, &u) == al_llm_cost_need(&p, 0, 1000, 0);

        tap_ok(ok, i == 0 ? "guessed prompt: charged as reserved, 1 hour"
                   : i == 1 ? "guessed prompt: charged as reserved, 5 min"
                   : "guessed prompt: charged as reserved, input");
    }
}


/* OpenAI: cached_tokens at cached_input, the rest at input */

static void
test_openai_cached(void)
{
    al_llm_usage_t  u;
    al_llm_price_t  p;

    static const char  oai[] =
        "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":200,"
        "\"total_tokens\":1200,\"prompt_tokens_details\":"
        "{\"cached_tokens\":400}}}";

    memset(&p, 0, sizeof(p));
    p.input = 2500000;
    p.cached_input = 1250000;
    p.output = 10000000;
    p.cache_write = p.input;
    p.cache_write_1h = p.input;

    (void) al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                              (const unsigned char *) oai, strlen(oai),
                              &u, NULL, 0);

    tap_ok(u.prompt_tokens == 1000 && u.cached_tokens == 400
           && u.cache_write_tokens == 0
           && al_llm_cost(&p, &u) == UINT64_C(4000000000)
           && al_llm_cost_need(&p, 1, 1000, 200) == UINT64_C(4500000000),
           "openai: cached input at cached_input, no cache writes");
}


#define POLICY                                                              \
    "version: 1\n"                                                          \
    "clients:\n"                                                            \
    "  agent: { unix_uid: 1000 }\n"                                         \
    "secrets:\n"                                                            \
    "  k: { file: /run/credentials/airlock/k }\n"                           \
    "llm:\n"                                                                \
    "  - name: an\n"                                                        \
    "    prefix: /v1/proxy/an\n"                                            \
    "    provider: anthropic\n"                                             \
    "    upstream: https://api.anthropic.com/v1\n"                          \
    "    secret: k\n"                                                       \
    "    models: [m1, m2]\n"                                                \
    "    prices:\n"                                                         \
    "      m1: { input: 3, output: 15 }\n"                                  \
    "      m2: { input: 0.000001, output: 1, cache_write: 0.5, "            \
    "cache_write_1h: 9 }\n"                                                 \
    "    clients:\n"                                                        \
    "      agent: { usd_per_day: 1 }\n"                                     \
    "alerts:\n"                                                             \
    "  deny: { threshold: 3, window: 60s }\n"


static void
test_policy(void)
{
    char                   buf[AL_ERR_MAX + 256];
    const char            *at;
    al_error_t             err;
    al_policy_t           *p;
    const al_llm_price_t  *pr;
    char                   yaml[sizeof(POLICY) + 64];

    p = load(POLICY, &err);
    tap_ok(p != NULL, "anthropic prices with cache_write load");

    if (p == NULL) {
        tap_diag("error: ", err.msg);
        return;
    }

    pr = al_llm_price(&p->llm[0], "m1", 2);
    tap_ok(pr != NULL && pr->cache_write == 3750000
           && pr->cache_write_1h == 6000000,
           "cache_write defaults: 1.25 and 2 times input");

    pr = al_llm_price(&p->llm[0], "m2", 2);
    tap_ok(pr != NULL && pr->input == 1 && pr->cache_write == 500000
           && pr->cache_write_1h == 9000000,
           "cache_write and cache_write_1h as given");

    al_policy_free(p);

    /* 1 picodollar a token: 1.25 rounds up */
    at = strstr(POLICY, "input: 0.000001, output: 1, cache_write");
    (void) snprintf(yaml, sizeof(yaml), "%.*sinput: 0.000001, output: 1 }"
                    "\n%s", (int) (at - POLICY), POLICY,
                    strstr(at, "    clients:"));
    p = load(yaml, &err);
    pr = (p != NULL) ? al_llm_price(&p->llm[0], "m2", 2) : NULL;
    tap_ok(pr != NULL && pr->cache_write == 2 && pr->cache_write_1h == 2,
           "cache_write default rounds up to a whole picodollar");
    if (p != NULL) {
        al_policy_free(p);
    }

    /* not for other providers */
    at = strstr(POLICY, "anthropic\n");
    (void) snprintf(yaml, sizeof(yaml), "%.*sopenai\n%s",
                    (int) (at - POLICY), POLICY, at + 10);
    p = load(yaml, &err);
    (void) al_error_format(&err, buf, sizeof(buf));
    tap_ok(p == NULL && strstr(buf, "cache_write is for anthropic entries "
                                    "only") != NULL,
           "cache_write refused on an openai entry");
    if (p != NULL) {
        al_policy_free(p);
    }
}


static void
test_line(void)
{
    char             buf[AL_LLM_RECORD_MAX];
    al_llm_record_t  rec;

    memset(&rec, 0, sizeof(rec));
    rec.model.data = "m";
    rec.model.len = 1;
    rec.client = rec.model;
    rec.provider = rec.model;
    rec.request_id = rec.model;
    rec.endpoint = AL_LLM_EP_MESSAGES;

    usage_of(CC_QUICK, &rec.usage);
    (void) al_llm_record_format(&rec, buf, sizeof(buf));
    tap_ok(strstr(buf, ",\"cached_tokens\":10,\"cache_write_tokens\":3000,"
                       "\"cache_write_1h_tokens\":2000,") != NULL,
           "the usage line names the cache writes");

    memset(&rec.usage, 0, sizeof(rec.usage));
    (void) al_llm_record_format(&rec, buf, sizeof(buf));
    tap_ok(strstr(buf, "cache_write") == NULL,
           "and leaves them out when there are none");
}


/* anthropic-beta values billed above the policy's prices */

static void
test_beta(void)
{
    tap_ok(al_llm_beta_priced("context-1m-2025-08-07", 21)
           && al_llm_beta_priced("a-1, context-1m-2025-08-07", 26)
           && al_llm_beta_priced("a-1,\tCONTEXT-1M-x", 17),
           "beta: context-1m anywhere in the list, in any case");
    tap_ok(al_llm_beta_priced("fast-mode-2026-02-01", 20)
           && al_llm_beta_priced("a-1, FAST-MODE-x", 16),
           "beta: fast-mode anywhere in the list, in any case");
    tap_ok(!al_llm_beta_priced("prompt-caching-2024-07-31", 25)
           && !al_llm_beta_priced("x-context-1m", 12)
           && !al_llm_beta_priced("context-1", 9)
           && !al_llm_beta_priced("x-fast-mode", 11)
           && !al_llm_beta_priced("", 0)
           && !al_llm_beta_priced("a_1.x, b-2,\tc", 13),
           "beta: other betas pass");
#define UT_BETA(s)  al_llm_beta_priced(s, sizeof(s) - 1)

    tap_ok(UT_BETA("\xa0" "context-1m-2025-08-07")
           && UT_BETA("a-1,\vcontext-1m-x")
           && UT_BETA("a-1,\x1f" "fast-mode-x")
           && UT_BETA("[\"context-1m-x\"]")
           && UT_BETA("[\"\\u0063ontext-1m-x\"]")
           && UT_BETA("a-1;b-2"),
           "beta: a value that is no plain list of names is taken for "
           "a priced one (Python's strip, a JSON list)");

    tap_ok(UT_BETA("a-1, context-1m-2025-08-07") == AL_LLM_BETA_LONG
           && UT_BETA("fast-mode-x") == AL_LLM_BETA_OTHER
           && UT_BETA("context-1m-x,fast-mode-x")
              == (AL_LLM_BETA_LONG | AL_LLM_BETA_OTHER)
           && UT_BETA("[\"context-1m-x\"]") == AL_LLM_BETA_OTHER
           && UT_BETA("a-1") == 0,
           "beta: the 1M context told from the betas long_context "
           "prices cannot count");
}


static void
usage_of(const char *json, al_llm_usage_t *u)
{
    char  body[1024];
    int   n;

    n = snprintf(body, sizeof(body), "{\"id\":\"m\",\"usage\":%s}", json);

    if (al_llm_usage_parse(AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
                           (const unsigned char *) body, (size_t) n, u,
                           NULL, 0)
        != 0)
    {
        memset(u, 0xff, sizeof(*u));
    }
}


static void
stream_of(const char *s, unsigned ref, al_llm_usage_t *u)
{
    size_t              off, used, len;
    al_llm_sse_t        sse;
    al_llm_sse_block_t  blk;

    al_llm_sse_init(&sse, AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES, 0);
    sse.parse_all = ref;

    len = strlen(s);

    for (off = 0; off < len; off += used) {
        (void) al_llm_sse_feed(&sse, (const unsigned char *) s + off,
                               len - off, &used, &blk);
    }

    (void) al_llm_sse_finish(&sse, &blk);
    (void) al_llm_sse_result(&sse, 0, 0, u);
    al_llm_sse_free(&sse);
}


static al_policy_t *
load(const char *yaml, al_error_t *err)
{
    memset(err, 0, sizeof(al_error_t));

    return al_policy_parse("policy.yaml", yaml, strlen(yaml), NULL, err);
}


/*
 * Whether a request may write the prompt cache: a member named
 * cache_control anywhere in the body (on a block, on a tool, on the
 * system prompt, or at the top for automatic caching), its name
 * unescaped as the provider reads it; the same bytes in a string value
 * or another name do not count.
 */

static void
test_asked(void)
{
    size_t                  i, n;
    al_error_t              err;
    al_policy_t            *p;
    al_llm_req_t            req;
    const al_llm_t         *llm;
    const al_llm_client_t  *lc;
    char                    body[2048];

    static const struct {
        const char  *body;
        unsigned     cache;
    } t[] = {
        { "{\"model\":\"m1\",\"max_tokens\":5,\"messages\":[{\"role\":"
          "\"user\",\"content\":\"cache_control\"}]}", 0 },
        { "{\"model\":\"m1\",\"max_tokens\":5,\"messages\":[{\"role\":"
          "\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\","
          "\"cache_control\":{\"type\":\"ephemeral\"}}]}]}", 1 },
        { "{\"model\":\"m1\",\"max_tokens\":5,\"cache_control\":"
          "{\"type\":\"ephemeral\"},\"messages\":[{\"role\":\"user\","
          "\"content\":\"hi\"}]}", 1 },
        { "{\"model\":\"m1\",\"max_tokens\":5,\"system\":[{\"type\":"
          "\"text\",\"text\":\"s\",\"cache_control\":{\"type\":"
          "\"ephemeral\",\"ttl\":\"1h\"}}],\"messages\":[{\"role\":"
          "\"user\",\"content\":\"hi\"}]}", 1 },
        { "{\"model\":\"m1\",\"max_tokens\":5,\"tools\":[{\"name\":\"t\","
          "\"input_schema\":{\"type\":\"object\"},\"cache_contro\\u006c\":"
          "{\"type\":\"ephemeral\"}}],\"messages\":[{\"role\":\"user\","
          "\"content\":\"hi\"}]}", 1 },
        { "{\"model\":\"m1\",\"max_tokens\":5,\"messages\":[{\"role\":"
          "\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\","
          "\"cache_controls\":1,\"Cache_control\":2}]}]}", 0 },
    };

    p = load(POLICY, &err);

    if (p == NULL) {
        tap_ok(0, "the policy loads");
        tap_diag("error: ", err.msg);
        return;
    }

    llm = &p->llm[0];
    lc = &llm->clients[0];

    for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        (void) al_llm_request(llm, lc, AL_LLM_EP_MESSAGES,
                              "application/json", 16,
                              (const unsigned char *) t[i].body,
                              strlen(t[i].body), &req);

        tap_ok(req.reason == AL_REASON_NONE
               && req.cache_control == t[i].cache,
               t[i].cache ? "cache_control named: the cache may be written"
                          : "no cache_control member: no cache write");

        if (req.reason != AL_REASON_NONE) {
            tap_diag("refused: ", req.detail);
        }

        al_llm_request_free(&req);
    }

    /*
     * Keys enough in the objects open at once that the scan without
     * recursion hands the body to the recursive one, which must see the
     * member too.
     */

    n = (size_t) snprintf(body, sizeof(body), "{\"model\":\"m1\","
                          "\"max_tokens\":5,\"messages\":[{\"role\":"
                          "\"user\",\"content\":[{\"type\":\"text\","
                          "\"text\":\"hi\"");

    for (i = 0; i < 70; i++) {
        n += (size_t) snprintf(body + n, sizeof(body) - n, ",\"k%zu\":1",
                               i);
    }

    n += (size_t) snprintf(body + n, sizeof(body) - n, ",\"cache_control\":"
                           "{\"type\":\"ephemeral\"}}]}]}");

    (void) al_llm_request(llm, lc, AL_LLM_EP_MESSAGES, "application/json",
                          16, (const unsigned char *) body, n, &req);

    tap_ok(req.reason == AL_REASON_NONE && req.cache_control == 1,
           "cache_control named in a block of many keys: the cache may be "
           "written");

    if (req.reason != AL_REASON_NONE) {
        tap_diag("refused: ", req.detail);
    }

    al_llm_request_free(&req);

    al_policy_free(p);
}
