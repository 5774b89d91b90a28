/*
 * Unit tests for the quick paths of the LLM gateway's usage reading and
 * usage line (al_llm_usage.c): the usage object read in one loop, the
 * quick reader in front of the strict scanner, the plain model name, the
 * string and number writers.  Each case is run through the quick path and
 * through the code it stands in for (the strict scanner, jansson, the
 * byte-by-byte writer, printf), which must agree; and each says which
 * path it expects, so the fallbacks are seen to be taken.
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
#include "llm_quick_ref.h"
#include "tap.h"


#define Q  1                            /* read by the quick path */
#define S  0                            /* left to the strict scanner */
#define NO UINT64_MAX                   /* rc -1: no usage */

typedef struct {
    al_llm_kind_t        kind;
    al_llm_endpoint_t    ep;
    unsigned             quick;
    const char          *json;
    uint64_t             prompt;        /* NO: no usage at all */
    uint64_t             completion;
    uint64_t             total;
    uint64_t             cached;
    const char          *name;
} ut_usage_t;


static void test_usage(void);
static void test_usage_whole(void);
static int ref_resp_usage(const al_llm_resp_t *r, al_llm_usage_t *u,
    char *model, size_t size);
static uint64_t ref_u64(const al_llm_jfield_t *f);
static void test_model(void);
static void test_scan(void);
static int scan_same(const al_llm_scan_spec_t *spec, const al_llm_body_t *q,
    const al_llm_body_t *s);
static int field_same(const al_llm_jfield_t *a, const al_llm_jfield_t *b);
static void test_stream(void);
static void stream_run(al_llm_kind_t kind, al_llm_endpoint_t ep,
    const char *s, unsigned ref, al_llm_sse_t *out, al_llm_usage_t *u);
static void test_out(void);


static const char *const  ut_details[] = { "cached_tokens", NULL };
static const char *const  ut_oai[] = {
    "prompt_tokens", "completion_tokens", "total_tokens",
    "prompt_tokens_details", NULL
};
static const char *const  ut_resp[] = {
    "input_tokens", "output_tokens", "total_tokens", "input_tokens_details",
    NULL
};

static const al_llm_scan_spec_t  ut_oai_spec = {
    ut_oai, -1, 3, ut_details, 4, 0, NULL, NULL
};
static const al_llm_scan_spec_t  ut_resp_spec = {
    ut_resp, -1, 3, ut_details, 4, 0, NULL, NULL
};
static const char *const  ut_ant_cc[] = {
    "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", NULL
};
static const al_llm_scan_spec_t  ut_ant_spec = {
    al_llm_usage_ant_names, -1, 4, ut_ant_cc, 5, 0, NULL, NULL
};

#define OAI   AL_LLM_OPENAI, AL_LLM_EP_CHAT
#define RESP  AL_LLM_OPENAI, AL_LLM_EP_RESPONSES
#define ANT   AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES

static const ut_usage_t  ut_usages[] = {
    { OAI, Q, "{\"prompt_tokens\":11,\"completion_tokens\":5,"
              "\"total_tokens\":16}", 11, 5, 16, 0, "openai, compact" },
    { OAI, Q, "{\n  \"prompt_tokens\": 11,\n  \"completion_tokens\": 5,\n"
              "  \"total_tokens\": 16\r\n}\t ", 11, 5, 16, 0,
      "openai, pretty-printed (whitespace everywhere JSON allows it)" },
    { OAI, Q, "{\"total_tokens\":16,\"completion_tokens\":5,"
              "\"prompt_tokens\":11}", 11, 5, 16, 0, "keys in another order" },
    { OAI, Q, "{\"prompt_tokens\":11,\"completion_tokens\":5}",
      11, 5, 16, 0, "total missing: the sum" },
    { OAI, Q, "{\"prompt_tokens\":11,\"completion_tokens\":5,"
              "\"total_tokens\":0}", 11, 5, 16, 0, "total 0: the sum" },
    { OAI, Q, "{}", 0, 0, 0, 0, "empty object: zeros" },
    { OAI, Q, "{\"prompt_tokens\":19,\"completion_tokens\":10,"
              "\"total_tokens\":29,\"prompt_tokens_details\":"
              "{\"cached_tokens\":3,\"audio_tokens\":0},"
              "\"completion_tokens_details\":{\"reasoning_tokens\":4,"
              "\"audio_tokens\":0,\"accepted_prediction_tokens\":0,"
              "\"rejected_prediction_tokens\":0}}", 19, 10, 29, 3,
      "prompt_tokens_details.cached_tokens; reasoning tokens ignored" },
    { OAI, Q, "{\"prompt_tokens\":19,\"prompt_tokens_details\":null,"
              "\"completion_tokens\":1}", 19, 1, 20, 0,
      "details null: no cached tokens" },
    { OAI, Q, "{\"prompt_tokens\":19,\"prompt_tokens_details\":7}",
      19, 0, 19, 0, "details a number: no cached tokens" },
    { OAI, Q, "{\"cached_tokens\":5,\"prompt_tokens\":1,\"x\":{"
              "\"cached_tokens\":6}}", 1, 0, 1, 0,
      "cached_tokens elsewhere than the details: ignored" },
    { OAI, S, "{\"prompt_tokens\":-7,\"completion_tokens\":2.5,"
              "\"total_tokens\":-0}", 0, 0, 0, 0,
      "negative, decimal, -0: 0 (a decimal count: strict)" },
    { OAI, Q, "{\"prompt_tokens\":999999999999999999}",
      UINT64_C(1) << 48, 0, UINT64_C(1) << 48, 0,
      "18 digits: quick, at most 2^48" },
    { OAI, S, "{\"prompt_tokens\":9223372036854775807}",
      UINT64_C(1) << 48, 0, UINT64_C(1) << 48, 0,
      "19 digits: strict, at most 2^48" },
    { OAI, S, "{\"prompt_tokens\":9223372036854775808}",
      UINT64_C(1) << 48, 0, UINT64_C(1) << 48, 0,
      "over int64: strict refuses, read as JSON.parse does, 2^48" },
    { OAI, S, "{\"prompt_tokens\":-9223372036854775809,"
              "\"completion_tokens\":2}", 0, 2, 2, 0,
      "below int64: strict refuses, a negative count, 0" },
    { OAI, S, "{\"prompt_tokens\":1e999,\"completion_tokens\":2}",
      UINT64_C(1) << 48, 2, (UINT64_C(1) << 48) + 2, 0,
      "past a double beside an integer count: strict refuses, 2^48" },
    { OAI, S, "{\"prompt_tokens\":12,\"a\":\"\\u0000\"}", 12, 0, 12, 0,
      "\\u0000 in a value: strict refuses, read" },
    { OAI, S, "{\"prompt_tokens\":12,\"\\u0000\":1,\"a\":[\"\\udc00\","
              "\"\\ud800x\"]}", 12, 0, 12, 0,
      "\\u0000 in a name, lone surrogates: strict refuses, read" },
    { OAI, S, "{\"prompt_tokens\":12,\"prompt_tokens_details\":"
              "{\"cached_tokens\":5,\"x\":-1e999}}", 12, 0, 12, 5,
      "past a double in the details: strict refuses, read" },
    { OAI, S, "{\"prompt_tokens\":12,\"a\":\"\\u0000\xc3\"}", NO, 0, 0,
      0, "\\u0000 and invalid UTF-8: refused" },
    { OAI, S, "{\"prompt_tokens\":1e3,\"completion_tokens\":2}",
      1000, 2, 1002, 0,
      "an exponent: strict, its number beside an integer count" },
    { OAI, S, "{\"prompt_tokens\":1,\"prompt_tokens\":2}", 2, 0, 2, 0,
      "duplicate key: strict refuses, jansson's last" },
    { OAI, S, "{\"prompt_tokens\":1,\"completion_tokens\":2,"
              "\"completion_tokens\":2}", 1, 2, 3, 0,
      "duplicate of the name expected next: jansson's last" },
    { OAI, Q, "{\"prompt_tokensx\":4,\"prompt_token\":5,\"prompt_tokens\":3,"
              "\"completion_tokens \":6}", 3, 0, 3, 0,
      "names that begin as the name expected next: other names" },
    { OAI, S, "{\"prompt_tokens\":1,\"prompt_tokens_details\":"
              "{\"cached_tokens\":1,\"cached_tokens\":2}}", 1, 0, 1, 2,
      "duplicate key in the details: jansson's last" },
    { OAI, Q, "{\"prompt_tokens\":1,\"x\":{\"a\":1},\"y\":{\"a\":2}}",
      1, 0, 1, 0, "the same key in two objects is no duplicate" },
    { OAI, S, "{\"prompt\\u005ftokens\":12,\"completion_tokens\":1}",
      12, 1, 13, 0, "a key with an escape: strict, unescaped" },
    { OAI, S, "{\"prompt_tokens\":12,\"a\":\"\\n\"}", 12, 0, 12, 0,
      "an escape in a value: strict" },
    { OAI, S, "{\"prompt_tokens\":12,\"a\":\"\xc3\xa9\"}", 12, 0, 12, 0,
      "UTF-8 in a value: strict" },
    { OAI, S, "{\"prompt_tokens\":12,\"a\":\"\xc3\"}", NO, 0, 0, 0,
      "invalid UTF-8: strict, refused" },
    { OAI, S, "{\"prompt_tokens\":12,\"a\":[1,2]}", 12, 0, 12, 0,
      "an array: strict" },
    { OAI, S, "{\"prompt_tokens\":12,\"a\":{\"b\":{}}}", 12, 0, 12, 0,
      "objects two deep: strict" },
    { OAI, S, "{\"prompt_tokens\":12} x", NO, 0, 0, 0,
      "bytes after the object: strict, refused" },
    { OAI, S, "{\"prompt_tokens\":12,}", NO, 0, 0, 0,
      "a trailing comma: strict, refused" },
    { OAI, S, "{\"prompt_tokens\":012}", NO, 0, 0, 0,
      "a leading zero: strict, refused" },
    { OAI, S, "{\"prompt_tokens\":tru}", NO, 0, 0, 0,
      "a cut literal: strict, refused" },
    { OAI, S, "[1]", NO, 0, 0, 0, "not an object: refused" },
    { OAI, S, "{\"prompt_tokens\":1", NO, 0, 0, 0, "cut: refused" },
    { OAI, Q, "{\"prompt_tokens\":1,\"a\":true,\"b\":false,\"c\":null,"
              "\"d\":\"x y\"}", 1, 0, 1, 0, "literals and strings" },
    { RESP, Q, "{\"input_tokens\":5,\"input_tokens_details\":"
               "{\"cached_tokens\":2},\"output_tokens\":7,"
               "\"output_tokens_details\":{\"reasoning_tokens\":3},"
               "\"total_tokens\":12}", 5, 7, 12, 2,
      "responses: input_tokens_details.cached_tokens" },
    { RESP, Q, "{\"prompt_tokens\":5,\"completion_tokens\":7}",
      0, 0, 0, 0, "responses: chat names are not its names" },
    { ANT, Q, "{\"input_tokens\":10,\"cache_creation_input_tokens\":4,"
              "\"cache_read_input_tokens\":7,\"output_tokens\":25,"
              "\"service_tier\":\"standard\",\"cache_creation\":"
              "{\"ephemeral_5m_input_tokens\":4,"
              "\"ephemeral_1h_input_tokens\":0}}", 21, 25, 46, 7,
      "anthropic: cache reads and writes are input" },
    { ANT, Q, "{\"output_tokens\":25,\"input_tokens\":3}", 3, 25, 28, 0,
      "anthropic: keys in another order" },
    { ANT, Q, "{\"input_tokens\":3,\"prompt_tokens_details\":"
              "{\"cached_tokens\":9}}", 3, 0, 3, 0,
      "anthropic: no details object of OpenAI's" },
    { ANT, S, "{\"input_tokens\":3,\"input_tokens\":4}", 4, 0, 4, 0,
      "anthropic: duplicate key, jansson's last" },
    { ANT, S, "{\"input_tokens\":3,\"x\":[1e400,\"\\u0000\"],"
              "\"cache_creation\":{\"ephemeral_1h_input_tokens\":"
              "99999999999999999999}}", (UINT64_C(1) << 48) + 3, 0,
      (UINT64_C(1) << 48) + 3, 0,
      "anthropic: what jansson refuses, read; a count past 2^48, 2^48" }
};


int
main(void)
{
    test_usage();
    test_model();
    test_scan();
    test_stream();
    test_out();

    return tap_done();
}


static void
test_usage(void)
{
    int                rc, rq, rr;
    size_t             k;
    uint64_t           v[AL_LLM_USAGE_V];
    al_llm_resp_t      r;
    al_llm_usage_t     u, w;
    const ut_usage_t  *t;
    char               name[256];

    for (k = 0; k < sizeof(ut_usages) / sizeof(ut_usages[0]); k++) {
        t = &ut_usages[k];

        al_llm_resp_init(&r, t->kind, t->ep);
        al_llm_resp_feed(&r, (const unsigned char *) "{\"usage\":", 9);
        al_llm_resp_feed(&r, (const unsigned char *) t->json,
                         strlen(t->json));
        al_llm_resp_feed(&r, (const unsigned char *) "}", 1);

        if (r.usage_len == 0) {
            /* the capture stops where the response scanner does */
            r.usage_len = strlen(t->json);
            memcpy(r.usage, t->json, r.usage_len);
        }

        rq = al_llm_usage_quick(t->kind, t->ep,
                                (const unsigned char *) r.usage,
                                r.usage_len, v);
        rc = al_llm_resp_usage(&r, &u, NULL, 0);
        rr = ref_resp_usage(&r, &w, NULL, 0);

        (void) snprintf(name, sizeof(name), "%s: %s path", t->name,
                        t->quick ? "quick" : "strict");
        tap_ok(rq == (t->quick ? 0 : 1), name);

        (void) snprintf(name, sizeof(name), "%s: as the strict scanner",
                        t->name);

        if (t->prompt == NO) {
            tap_ok(rc == -1 && rr == -1 && memcmp(&u, &w, sizeof(u)) == 0,
                   name);
            continue;
        }

        if (!tap_ok(rc == 0 && rr == 0 && memcmp(&u, &w, sizeof(u)) == 0
                    && u.prompt_tokens == t->prompt
                    && u.completion_tokens == t->completion
                    && u.total_tokens == t->total
                    && u.cached_tokens == t->cached, name))
        {
            printf("# rc %d/%d got %" PRIu64 " %" PRIu64 " %" PRIu64 " %"
                   PRIu64 "\n", rc, rr, u.prompt_tokens,
                   u.completion_tokens, u.total_tokens, u.cached_tokens);
        }
    }

    test_usage_whole();
}


/*
 * The same usage values in answers fed in one piece, where the response
 * scanner reads a value laid out for the quick loop in place
 * (al_llm_resp_quick()): the same capture and the same usage as the
 * strict scanner, a value read in place only when the quick loop takes
 * it, and a later "usage" (any layout) wins over one read in place.
 */

static void
test_usage_whole(void)
{
    int                rc, rr;
    size_t             k, f, n;
    al_llm_resp_t      r;
    al_llm_usage_t     u, w;
    const ut_usage_t  *t;
    char               body[1024], name[300];

    /* what comes before the usage value, and after it */
    static const char *const  forms[][2] = {
        { "{\"id\":\"x\",\"usage\":", ",\"model\":\"m\"}" },
        { "{\"usage\": \n", "\t }" },
        { "{\"usage\":", " , \"n\":[1,{\"usage\":2}]}" },
        { "{\"usage\":", " x}" },
        { "{\"usage\":", ",\"usage\":{\"prompt_tokens\":77}}" },
        { "{\"usage\":", ",\"usage\":{ \"prompt_tokens\" : 78 }}" },
        { "{\"usage\":{\"prompt_tokens\":79},\"usage\":", "}" },
        { "{\"usage\":", ",\"usage\":\"x\"}" },
        { "{\"usage\":", "" }
    };

    for (k = 0; k < sizeof(ut_usages) / sizeof(ut_usages[0]); k++) {
        t = &ut_usages[k];

        for (f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
            n = (size_t) snprintf(body, sizeof(body), "%s%s%s", forms[f][0],
                                  t->json, forms[f][1]);

            al_llm_resp_init(&r, t->kind, t->ep);
            al_llm_resp_feed(&r, (const unsigned char *) body, n);

            rc = al_llm_resp_usage(&r, &u, NULL, 0);
            rr = ref_resp_usage(&r, &w, NULL, 0);

            (void) snprintf(name, sizeof(name), "%s: whole, form %u%s",
                            t->name, (unsigned) f,
                            r.quick ? ", read in place" : "");

            if (!tap_ok(rc == rr && memcmp(&u, &w, sizeof(u)) == 0
                        && (f != 0 || r.quick == t->quick)
                        && ((f != 3 && f != 7 && f != 8) || !r.quick),
                        name))
            {
                printf("# rc %d/%d got %" PRIu64 " %" PRIu64 " want %"
                       PRIu64 " %" PRIu64 "\n", rc, rr, u.prompt_tokens,
                       u.total_tokens, w.prompt_tokens, w.total_tokens);
            }
        }
    }
}


/*
 * al_llm_resp_usage() before the quick paths: the strict scanner, jansson,
 * and what it refuses read by the reference reader of llm_quick_ref.h
 */

static int
ref_resp_usage(const al_llm_resp_t *r, al_llm_usage_t *u, char *model,
    size_t size)
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

    if (model != NULL && size > 0) {
        model[0] = '\0';

        if (r->model_len > 0) {
            v = json_loadb(r->model, r->model_len, JSON_DECODE_ANY, &err);
            if (v != NULL) {
                (void) al_llm_copy_str(v, model, size);
                json_decref(v);
            }
        }
    }

    if (r->usage_len == 0) {
        return -1;
    }

    spec = (r->kind == AL_LLM_ANTHROPIC) ? &ut_ant_spec
           : (r->endpoint == AL_LLM_EP_RESPONSES) ? &ut_resp_spec
           : &ut_oai_spec;

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

    if (u->total_tokens == 0) {
        u->total_tokens = u->prompt_tokens + u->completion_tokens;
    }

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


/* the model name: in place when a plain string, else as jansson reads it */

static void
test_model(void)
{
    size_t          k;
    al_llm_resp_t   r;
    al_llm_usage_t  u, w;
    char            a[AL_LLM_MODEL_MAX], b[AL_LLM_MODEL_MAX];

    static const struct {
        const char  *capture;
        size_t       size;
        const char  *want;
    } models[] = {
        { "\"gpt-4o\"", AL_LLM_MODEL_MAX, "gpt-4o" },
        { " \"gpt-4o\"\n ", AL_LLM_MODEL_MAX, "gpt-4o" },
        { "\"gpt\\u002d4o\"", AL_LLM_MODEL_MAX, "gpt-4o" },
        { "\"gpt-4o\" x", AL_LLM_MODEL_MAX, "" },
        { "\"gpt-4o", AL_LLM_MODEL_MAX, "" },
        { "\"gpt-4o\"", 6, "" },
        { "\"gpt-4o\"", 7, "gpt-4o" },
        { "\"\"", AL_LLM_MODEL_MAX, "" },
        { "42", AL_LLM_MODEL_MAX, "" },
        { "\"caf\xc3\xa9\"", AL_LLM_MODEL_MAX, "caf\xc3\xa9" }
    };

    for (k = 0; k < sizeof(models) / sizeof(models[0]); k++) {
        al_llm_resp_init(&r, AL_LLM_OPENAI, AL_LLM_EP_CHAT);
        r.model_len = strlen(models[k].capture);
        memcpy(r.model, models[k].capture, r.model_len);

        (void) al_llm_resp_usage(&r, &u, a, models[k].size);
        (void) ref_resp_usage(&r, &w, b, models[k].size);

        if (!tap_ok(strcmp(a, b) == 0 && strcmp(a, models[k].want) == 0,
                    models[k].capture))
        {
            printf("# got \"%s\", jansson \"%s\"\n", a, b);
        }
    }
}


/* the quick reader against the strict scanner, with the stream's specs */

static void
test_scan(void)
{
    int             rq, rs;
    size_t          k, n;
    al_llm_body_t   q, s;
    char            detail[AL_DETAIL_MAX], name[512];

    static const char *const  chat[] = {
        "model", "error", "usage", "choices", NULL
    };
    static const char *const  msg[] = { "message", NULL };
    static const char *const  mu[] = { "model", "usage", NULL };

    /* chat and ut_oai with their lengths (spec 2, as al_llm_sse.c's) */
    static const al_str_t  chat_keys[] = {
        { "model", 5 }, { "error", 5 }, { "usage", 5 }, { "choices", 7 },
        { NULL, 0 }
    };
    static const al_str_t  oai_keys[] = {
        { "prompt_tokens", 13 }, { "completion_tokens", 17 },
        { "total_tokens", 12 }, { "prompt_tokens_details", 21 },
        { NULL, 0 }
    };

    static const al_llm_scan_spec_t  specs[] = {
        { chat, 0, 2, ut_oai, 4, 0, NULL, NULL },
        { msg, -1, 0, mu, 1, 0, NULL, NULL },
        { chat, 0, 2, ut_oai, 4, 0, chat_keys, oai_keys }
    };

    static const struct {
        unsigned     spec;
        unsigned     quick;
        const char  *json;
    } docs[] = {
        { 0, Q, "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
                "\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[],"
                "\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":5,"
                "\"total_tokens\":16}}" },
        { 0, Q, "{ \"model\" : \"m\" , \"choices\" : [ { \"index\" : 0 ,"
                " \"delta\" : { } } ] , \"error\" : null }" },
        { 0, S, "{\"model\":\"m\",\"model\":\"n\"}" },
        { 1, Q, "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
                "\"type\":\"message\",\"role\":\"assistant\",\"model\":"
                "\"claude-x\",\"content\":[],\"stop_reason\":null,"
                "\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}" },
        { 1, S, "{\"type\":\"message_start\",\"message\":{\"model\":"
                "\"claude\\u002dx\"}}" },
        { 1, S, "{\"type\":\"message_start\",\"message\":{\"usage\":"
                "{\"input_tokens\":1e2}}}" },
        { 0, Q, "{\"model\":\"gpt\",\"choices\":[{\"delta\":{\"content\":"
                "\"hi\"}}],\"usage\":{\"prompt_tokens\":3,"
                "\"prompt_tokens_details\":{\"cached_tokens\":1},"
                "\"completion_tokens\":-0,\"total_tokens\":2.5}}" },
        { 0, Q, "{\"x\":{\"model\":\"no\",\"usage\":{\"prompt_tokens\":9}},"
                "\"usage\":[{\"prompt_tokens\":8}],\"choices\":{}}" },
        { 0, Q, "{\"mode\":\"a\",\"models\":\"b\",\"usag\":{},\"usage_\":1,"
                "\"model\":\"\x7f\",\"error\":[]}" },
        { 0, Q, "{\"usage\":{\"prompt_tokens\":-999999999999999999}}" },
        { 0, S, "{\"usage\":{\"prompt_tokens\":1000000000000000000}}" },
        { 0, S, "{\"usage\":{\"prompt_tokens\":1}\v}" },
        { 0, S, "{\"usage\":{\"prompt_tokens\":1.}}" },
        { 0, S, "{\"usage\":{\"prompt_tokens\":01}}" },
        /* duplicate keys: found whatever keys come between */
        { 0, S, "{\"a\":1,\"b\":2,\"model\":\"m\",\"c\":[3],\"d\":{},"
                "\"model\":\"n\"}" },
        { 0, S, "{\"usage\":{\"prompt_tokens\":1,\"x\":1,\"y\":{\"z\":2},"
                "\"prompt_tokens\":2}}" },
        { 0, S, "{ \"x\" : 1 ,\n\t\"y\" : 2 , \"x\" : 3 }" },
        { 0, S, "{\"\":1,\"a\":2,\"\":3}" },
        { 0, S, "{\"ab\":1,\"ba\":2,\"ab\":3}" },
        /* keys sharing a hash bit, or one with a parent's key: no dup */
        { 0, Q, "{\"ab\":1,\"ba\":2,\"\":3,\"abc\":4,\"cba\":5}" },
        { 0, Q, "{\"a\":{\"a\":1,\"b\":2},\"b\":{\"a\":3},\"c\":4}" },
        { 0, Q, "{\"k00\":0,\"k01\":0,\"k02\":0,\"k03\":0,\"k04\":0,"
                "\"k05\":0,\"k06\":0,\"k07\":0,\"k08\":0,\"k09\":0,"
                "\"k10\":0,\"k11\":0,\"k12\":0,\"k13\":0,\"k14\":0,"
                "\"k15\":0,\"k16\":0,\"k17\":0,\"k18\":0,\"k19\":0,"
                "\"k20\":0,\"k21\":0,\"k22\":0,\"k23\":0,\"k24\":0,"
                "\"k25\":0,\"k26\":0,\"k27\":0,\"k28\":0,\"k29\":0,"
                "\"model\":\"m\"}" },
        { 0, S, "{\"k00\":0,\"k01\":0,\"k02\":0,\"k03\":0,\"k04\":0,"
                "\"k05\":0,\"k06\":0,\"k07\":0,\"k08\":0,\"k09\":0,"
                "\"k10\":0,\"k11\":0,\"k12\":0,\"k13\":0,\"k14\":0,"
                "\"k15\":0,\"k16\":0,\"k17\":0,\"k18\":0,\"k19\":0,"
                "\"k20\":0,\"k21\":0,\"k22\":0,\"k23\":0,\"k24\":0,"
                "\"k25\":0,\"k26\":0,\"k27\":0,\"k28\":0,\"k29\":0,"
                "\"k17\":1}" },
        /* names: a key a name starts with, or one that starts with it */
        { 0, Q, "{\"usage\":{\"prompt_tokens_details_\":{\"cached_tokens\":1},"
                "\"prompt_tokens_detail\":2,\"p\":3,\"prompt\":4,"
                "\"total_tokens\":5,\"total_tokensx\":6}}" },
        { 0, Q, "{\"m\":1,\"modelx\":2,\"choice\":3,\"u\":4,\"e\":5}" },
        { 1, Q, "{\"message\":{\"usage\":{\"input_tokens\":1},\"model\":"
                "\"c\",\"modell\":\"d\"},\"messages\":1}" },
        { 0, Q, "{\"a\":[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]}" },
        { 0, S, "{\"a\":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}" }
    };

    for (k = 0; k < sizeof(docs) / sizeof(docs[0]); k++) {
        n = strlen(docs[k].json);
        rq = al_llm_json_quick(&specs[docs[k].spec],
                               (const unsigned char *) docs[k].json, n, &q);
        rs = al_llm_json_scan(&specs[docs[k].spec],
                              (const unsigned char *) docs[k].json, n, &s,
                              detail, sizeof(detail));

        tap_ok(rq == (docs[k].quick ? 0 : 1)
               && (rq != 0
                   || (rs == 0 && scan_same(&specs[docs[k].spec], &q, &s))),
               docs[k].json);

        if (docs[k].spec != 0) {
            continue;
        }

        /* the chat documents again, the names looked up by length */

        rq = al_llm_json_quick(&specs[2],
                               (const unsigned char *) docs[k].json, n, &q);

        (void) snprintf(name, sizeof(name), "by length: %s", docs[k].json);

        tap_ok(rq == (docs[k].quick ? 0 : 1)
               && (rq != 0 || scan_same(&specs[2], &q, &s)), name);
    }
}


/*
 * What the stream's readers take from a body, the quick reader's against
 * the strict scanner's: every field's type, span and number (the escape
 * flag of strings), the counters and the model bytes.
 */

static int
scan_same(const al_llm_scan_spec_t *spec, const al_llm_body_t *q,
    const al_llm_body_t *s)
{
    size_t  k, n;

    if (!field_same(&q->root, &s->root)) {
        return 0;
    }

    for (k = 0; k < AL_LLM_F_MAX; k++) {
        if (!field_same(&q->f[k], &s->f[k])) {
            return 0;
        }
    }

    if (q->root_last != s->root_last || q->root_members != s->root_members
        || q->so_last != s->so_last || q->so_members != s->so_members
        || q->jansson != s->jansson)
    {
        return 0;
    }

    if (spec->model >= 0 && s->f[spec->model].type == AL_LLM_JT_STRING) {
        n = (size_t) s->f[spec->model].num;
        n = n < sizeof(s->model) ? n : sizeof(s->model);

        return memcmp(q->model, s->model, n) == 0;
    }

    return 1;
}


static int
field_same(const al_llm_jfield_t *a, const al_llm_jfield_t *b)
{
    if (a->type != b->type) {
        return 0;
    }

    if (a->type == AL_LLM_JT_NONE) {
        return 1;
    }

    return a->at == b->at && a->len == b->len && a->num == b->num
           && (a->type != AL_LLM_JT_STRING || a->esc == b->esc);
}


/*
 * Streams whose usage events take the quick reader or not: the same
 * usage, model and flags as the reference (every event through jansson).
 */

static void
test_stream(void)
{
    size_t          k;
    al_llm_sse_t    a, b;
    al_llm_usage_t  ua, ub;

    static const struct {
        al_llm_kind_t       kind;
        al_llm_endpoint_t   ep;
        const char         *s;
        uint64_t            total;
        const char         *name;
    } streams[] = {
        { OAI, "data: {\"id\":\"c\",\"model\":\"gpt\",\"choices\":[],"
               "\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":5,"
               "\"total_tokens\":16,\"prompt_tokens_details\":"
               "{\"cached_tokens\":2}}}\n\ndata: [DONE]\n\n", 16,
          "chat usage chunk, details (quick)" },
        { OAI, "data: {\"id\":\"c\",\"model\":\"gpt\",\"choices\":[],"
               "\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":5,"
               "\"prompt_tokens\":12}}\n\ndata: [DONE]\n\n", 17,
          "chat usage chunk, duplicate key (jansson keeps the last)" },
        { OAI, "data: {\"id\":\"c\",\"model\":\"gpt\",\"choices\":[],"
               "\"usage\":{\"prompt_tokens\":1e1,\"completion_tokens\":5}}"
               "\n\ndata: [DONE]\n\n", 15,
          "chat usage chunk, a real beside an integer: its number" },
        { ANT, "event: message_start\ndata: {\"type\":\"message_start\","
               "\"message\":{\"model\":\"claude\",\"usage\":"
               "{\"input_tokens\":25,\"cache_read_input_tokens\":5,"
               "\"output_tokens\":1}}}\n\nevent: message_delta\ndata: "
               "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
               "\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n"
               "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
          45, "anthropic message_start, message_delta (quick)" },
        { ANT, "event: message_start\ndata: {\"type\":\"message_start\","
               "\"message\":{\"model\":\"claude\",\"usage\":"
               "{\"input_tokens\":25,\"output_tokens\":1}}}\n\n"
               "event: message_delta\ndata: {\"type\":\"message_delta\","
               "\"usage\":{\"output_tokens\":15,\"output_tokens\":16}}\n\n"
               "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
          41, "anthropic message_delta, duplicate key" },
        { RESP, "event: response.completed\ndata: {\"type\":"
                "\"response.completed\",\"response\":{\"model\":\"o\","
                "\"usage\":{\"input_tokens\":5,\"output_tokens\":7,"
                "\"total_tokens\":12,\"input_tokens_details\":"
                "{\"cached_tokens\":1}}}}\n\n", 12,
          "responses completed (quick)" }
    };

    for (k = 0; k < sizeof(streams) / sizeof(streams[0]); k++) {
        stream_run(streams[k].kind, streams[k].ep, streams[k].s, 0, &a, &ua);
        stream_run(streams[k].kind, streams[k].ep, streams[k].s, 1, &b, &ub);

        if (!tap_ok(memcmp(&ua, &ub, sizeof(ua)) == 0
                    && memcmp(&a.usage, &b.usage, sizeof(a.usage)) == 0
                    && ua.total_tokens == streams[k].total
                    && strcmp(a.model, b.model) == 0
                    && a.done == b.done && a.error == b.error
                    && a.usage_seen == b.usage_seen, streams[k].name))
        {
            printf("# total %" PRIu64 " reference %" PRIu64 "\n",
                   ua.total_tokens, ub.total_tokens);
        }
    }

}


static void
stream_run(al_llm_kind_t kind, al_llm_endpoint_t ep, const char *s,
    unsigned ref, al_llm_sse_t *out, al_llm_usage_t *u)
{
    size_t              off, used, len;
    al_llm_sse_block_t  blk;

    al_llm_sse_init(out, kind, ep, 0);
    out->parse_all = ref;

    len = strlen(s);

    for (off = 0; off < len; off += used) {
        (void) al_llm_sse_feed(out, (const unsigned char *) s + off,
                               len - off, &used, &blk);
    }

    (void) al_llm_sse_finish(out, &blk);
    (void) al_llm_sse_result(out, 0, 0, u);
    al_llm_sse_free(out);
}


/* the writers against printf and against a byte-by-byte copy */

static void
test_out(void)
{
    size_t        k;
    al_llm_out_t  o;
    char          buf[128], want[64];

    static const uint64_t  nums[] = {
        0, 9, 10, 99, 100, 12345, UINT64_C(18446744073709551615)
    };

    for (k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
        al_llm_out_init(&o, buf, sizeof(buf));
        al_llm_out_u64(&o, nums[k]);
        (void) snprintf(want, sizeof(want), "%" PRIu64, nums[k]);

        if (strcmp(buf, want) != 0 || o.len != strlen(want)) {
            break;
        }
    }

    tap_ok(k == sizeof(nums) / sizeof(nums[0]), "al_llm_out_u64 as printf");

    al_llm_out_init(&o, buf, 5);
    al_llm_out_u64(&o, 123456);
    tap_ok(o.len == 6 && strcmp(buf, "1234") == 0,
           "al_llm_out_u64 cut, length counted");

    al_llm_out_init(&o, buf, sizeof(buf));
    al_llm_out_json(&o, "plain ascii, 0123456789abcdef!", 30);
    al_llm_out_json(&o, "a\"b\\c\x7f\x01\n\xc3\xa9\xff", 11);
    tap_is_str(buf, "\"plain ascii, 0123456789abcdef!\""
                    "\"a\\\"b\\\\c\\u007f\\u0001\\n\xc3\xa9\\u00ff\"",
               "al_llm_out_json: plain runs, escapes, UTF-8, invalid");
}
