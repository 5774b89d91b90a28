/*
 * Unit tests for the JSON answer's usage scanner (al_llm_resp_feed()):
 * each body is fed whole, cut in two at every byte, cut in three at every
 * pair of bytes (the short ones), and a byte at a time; the captured
 * "usage" and "model" values must be those of the byte scanner it
 * replaced (llm_resp_ref.h) fed whole, and the usage and model read from
 * them those of al_llm_usage_parse() on the whole body.
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "tap.h"
#include "llm_resp_ref.h"


static char  ut_spill[AL_LLM_USAGE_MAX];
static int   ut_spills;
static int   ut_no_model;               /* readers made with no_model */

static void *ut_alloc(void *ctx, size_t size);
static int ut_same(const al_llm_resp_t *r, const ref_resp_t *ref);
static int ut_body(const char *body, size_t len, int alloc);
static void ut_bodies(void);
static void ut_long(void);
static void ut_escaped(void);
static void ut_partial(void);
static void ut_total_low(void);
static void ut_twice(void);
static void ut_big(void);
static void ut_unsupported(void);
static void ut_long_count(void);
static void ut_reader(void);
static void ut_random(void);
static uint32_t ut_rand(void);
static void ut_put(char *buf, size_t *len, const char *s);
static void ut_gen_value(char *buf, size_t *len, unsigned depth);
static void ut_gen_string(char *buf, size_t *len);
static void ut_gen_answer(char *buf, size_t *len);
static int ut_random_body(const char *body, size_t len);
static int ut_usage(const char *body, al_llm_usage_t *u);
static int ut_long_usage(al_llm_kind_t kind, const char *head,
    const char *tail, size_t cut, al_llm_usage_t *u);


static void *
ut_alloc(void *ctx, size_t size)
{
    (void) ctx;

    if (size != AL_LLM_USAGE_MAX) {
        return NULL;
    }

    ut_spills++;

    return ut_spill;
}


/* the same captures, as the usage reader sees them */

static int
ut_same(const al_llm_resp_t *r, const ref_resp_t *ref)
{
    if (ut_no_model) {
        return r->usage_len == ref->usage_len
               && memcmp(r->usage, ref->usage, ref->usage_len) == 0
               && r->model_len == 0;
    }

    return r->usage_len == ref->usage_len
           && memcmp(r->usage, ref->usage, ref->usage_len) == 0
           && r->model_len == ref->model_len
           && memcmp(r->model, ref->model, ref->model_len) == 0;
}


static void
ut_init(al_llm_resp_t *r, int alloc)
{
    al_llm_resp_init(r, AL_LLM_OPENAI, AL_LLM_EP_CHAT);

    if (alloc) {
        r->alloc = ut_alloc;
    }

    r->no_model = ut_no_model;
}


/* the number of ways of feeding it that differ from the reference */

static int
ut_body(const char *body, size_t len, int alloc)
{
    int                   bad, rc1, rc2;
    size_t                i, j;
    ref_resp_t           *ref;
    al_llm_resp_t         r;
    al_llm_usage_t        u1, u2;
    char                  m1[AL_LLM_MODEL_MAX], m2[AL_LLM_MODEL_MAX];
    const unsigned char  *p;

    p = (const unsigned char *) body;
    bad = 0;

    ref = malloc(sizeof(ref_resp_t));
    if (ref == NULL) {
        return 1;
    }

    ref_resp_init(ref);
    ref_resp_feed(ref, p, len);

    if (ref->usage_len > AL_LLM_USAGE_INLINE && !alloc) {
        ref->usage_len = 0;             /* not taken without an alloc */
    }

    ut_init(&r, alloc);
    al_llm_resp_feed(&r, p, len);
    bad += !ut_same(&r, ref);

    rc1 = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT, p, len, &u1, m1,
                             sizeof(m1));
    rc2 = al_llm_resp_usage(&r, &u2, m2, sizeof(m2));

    if (alloc || ref->usage_len == 0 || ref->usage_len <= AL_LLM_USAGE_INLINE)
    {
        bad += (rc1 != rc2 && (alloc || rc1 != 0))
               || (rc1 == rc2 && memcmp(&u1, &u2, sizeof(u1)) != 0)
               || strcmp(ut_no_model ? "" : m1, m2) != 0;
    }

    for (i = 0; i <= len; i++) {
        ut_init(&r, alloc);
        al_llm_resp_feed(&r, p, i);
        al_llm_resp_feed(&r, p + i, len - i);
        bad += !ut_same(&r, ref);
    }

    if (len <= 400) {
        for (i = 0; i <= len; i++) {
            for (j = i; j <= len; j++) {
                ut_init(&r, alloc);
                al_llm_resp_feed(&r, p, i);
                al_llm_resp_feed(&r, p + i, j - i);
                al_llm_resp_feed(&r, p + j, len - j);
                bad += !ut_same(&r, ref);
            }
        }
    }

    ut_init(&r, alloc);
    for (i = 0; i < len; i++) {
        al_llm_resp_feed(&r, p + i, 1);
    }
    bad += !ut_same(&r, ref);

    free(ref);

    return bad;
}


static const char *const  ut_cases[] = {

    /* the bench's answer */
    "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1,"
    "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"message\":"
    "{\"role\":\"assistant\",\"content\":\"Hello from the bench\"},"
    "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":11,"
    "\"completion_tokens\":5,\"total_tokens\":16}}",

    /* pretty, with details, escapes and unicode in the content */
    "{\n  \"id\": \"chatcmpl-AbC\",\n  \"object\": \"chat.completion\",\n"
    "  \"created\": 1720000000,\n  \"model\": \"gpt-4o-2024-08-06\",\n"
    "  \"choices\": [\n    {\n      \"index\": 0,\n      \"message\": {\n"
    "        \"role\": \"assistant\",\n        \"content\": \"Line one\\n"
    "Line two \\\"quoted\\\" \\\\ back\\u00e9 caf\xc3\xa9 \xe2\x82\xac {[}]"
    " , : \\n\\tend\",\n        \"refusal\": null\n      },\n"
    "      \"logprobs\": null,\n      \"finish_reason\": \"stop\"\n    }\n"
    "  ],\n  \"usage\": {\n    \"prompt_tokens\": 19,\n"
    "    \"completion_tokens\": 10,\n    \"total_tokens\": 29,\n"
    "    \"prompt_tokens_details\": {\n      \"cached_tokens\": 3,\n"
    "      \"audio_tokens\": 0\n    },\n"
    "    \"completion_tokens_details\": {\n"
    "      \"reasoning_tokens\": 0,\n      \"audio_tokens\": 0,\n"
    "      \"accepted_prediction_tokens\": 0,\n"
    "      \"rejected_prediction_tokens\": 0\n    }\n  },\n"
    "  \"system_fingerprint\": \"fp_1\"\n}\n",

    /* tool calls */
    "{\"id\":\"x\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,"
    "\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":"
    "[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":"
    "\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\","
    "\\\"usage\\\":{\\\"x\\\":1}}\"}}]},\"finish_reason\":\"tool_calls\"}],"
    "\"usage\":{\"prompt_tokens\":80,\"completion_tokens\":17,"
    "\"total_tokens\":97}}",

    /* embeddings */
    "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
    "\"embedding\":[0.0023064255,-0.009327292,0.015797347,-0.0077780345,"
    "-0.0046922187,0.014823521,-0.009559742,-0.0038547351,-0.024047991,"
    "-0.011981346,0.0088918174,0.005678,1e-7,-2.5E+3,0,1,2,3,4,5,6,7,8,9"
    "]}],\"model\":\"text-embedding-3-small\",\"usage\":{\"prompt_tokens\""
    ":8,\"total_tokens\":8}}",

    /* Anthropic's layout */
    "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
    "\"model\":\"claude-3-5-sonnet\",\"content\":[{\"type\":\"text\","
    "\"text\":\"Hi!\"}],\"stop_reason\":\"end_turn\",\"usage\":"
    "{\"input_tokens\":12,\"cache_read_input_tokens\":4,"
    "\"output_tokens\":6}}",

    /* names: escaped, long, repeated, nested, at the wrong place */
    "{\"us\\u0061ge\":{\"prompt_tokens\":1},\"model\":\"a\","
    "\"usage\":{\"prompt_tokens\":2},\"usage\":{\"prompt_tokens\":3},"
    "\"model\":\"b\",\"x\":{\"usage\":{\"prompt_tokens\":4}},"
    "\"a_very_long_member_name_usage\":1,\"model\" : \"c\" }",
    "{\"a\" \"usage\":{\"prompt_tokens\":5},\"b\":1}",
    "{x\"usage\":{\"prompt_tokens\":6}}",
    "{\"usage\"\"model\":{\"prompt_tokens\":7},\"z\":2}",
    "{\"usage\":{\"prompt_tokens\":8}]",
    "{\"usage\":{\"prompt_tokens\":9}",
    "{\"usage\":{\"prompt_tokens\":10}} trailing {\"usage\":1}",
    "  \r\n\t{\"usage\" : [1,2,{\"prompt_tokens\":11}] , \"model\":12}",
    "{\"model\":\"m\\\"q\\\\\\u00e9\xc3\xa9\",\"usage\":{\"prompt_tokens\""
    ":12}}",
    "{{\"usage\":{\"prompt_tokens\":13}},\"usage\":{\"prompt_tokens\":14}}",
    "{[],\"usage\":{\"prompt_tokens\":15}:1,\"model\"::\"m\"}",
    "{\"model\"",
    "{\"model\\",
    "{\"usage\":\"\\",
    "[{\"usage\":{\"prompt_tokens\":16}}]",
    "x{\"usage\":{\"prompt_tokens\":17}}",
    "{\"usage\":{\"prompt_tokens\":18},\"usage\":{\"prompt_tokens\":19]}",
    "{\"usage\":{\"prompt_tokens\":20},\"usage\":{\"prompt_tokens\":21",
    "{\"k\":\"\\\\\",\"usage\":{\"a\":\"\\\"}\",\"prompt_tokens\":22}}",
    "{\"model\":,\"usage\":,}",
    "{}",
    "",
    "{\"usage\":{\"prompt_tokens\":23}}}}]]",
    "{\"usage\":{\"prompt_tokens\":24},\"us\\u0061ge\":{\"prompt_tokens\":25},"
    "\"mo\\u0064el\":\"d\",\"\\u0075\\u0073\\u0061\\u0067\\u0065x\":1}",
    "{\"\\u0075\\u0073\\u0061\\u0067\\u0065\":{\"prompt_tokens\":26},"
    "\"\\u0075\\u0073\\u0061\\u0067\\u00651\":2,\"usag\\e\":3,"
    "\"\\u00\":4,\"\\u00e9sage\":5,\"mode\\\\\":6,\"\\/usage\":7}",

    /* backslashes outside strings: bytes the scanner passes over */
    "{\"x\":1,\\\"usage\":{\"prompt_tokens\":27}}",
    "{\"x\":[1,\\\"],\"usage\":{\"prompt_tokens\":28}}",
    "{\\\"x\":\"usage\",\"usage\":{\"prompt_tokens\":29}}",
};


static void
ut_bodies(void)
{
    int     bad, alloc;
    size_t  k;

    for (alloc = 0; alloc < 2; alloc++) {
        bad = 0;

        for (k = 0; k < sizeof(ut_cases) / sizeof(ut_cases[0]); k++) {
            if (ut_body(ut_cases[k], strlen(ut_cases[k]), alloc) != 0) {
                tap_diag("body", ut_cases[k]);
                bad++;
            }
        }

        tap_is_int(bad, 0, alloc ? "bodies, every split, with an alloc"
                                 : "bodies, every split, without an alloc");
    }

    /* the gateway's reader: the same usage, no model taken */

    ut_no_model = 1;
    bad = 0;

    for (k = 0; k < sizeof(ut_cases) / sizeof(ut_cases[0]); k++) {
        if (ut_body(ut_cases[k], strlen(ut_cases[k]), 1) != 0) {
            tap_diag("body", ut_cases[k]);
            bad++;
        }
    }

    ut_no_model = 0;

    tap_is_int(bad, 0, "bodies, every split, the model not taken");
}


/* usage values about the struct's buffer and about the bound */

static void
ut_long(void)
{
    int             bad, alloc;
    char           *body;
    size_t          n, len, sizes[] = {
        AL_LLM_USAGE_INLINE - 1, AL_LLM_USAGE_INLINE,
        AL_LLM_USAGE_INLINE + 1, 2000, AL_LLM_USAGE_MAX - 1,
        AL_LLM_USAGE_MAX, AL_LLM_USAGE_MAX + 1, 6000
    }, k;
    al_llm_resp_t   r;
    al_llm_usage_t  u;

    body = malloc(8192);
    if (body == NULL) {
        tap_ok(0, "memory");
        return;
    }

    for (alloc = 0; alloc < 2; alloc++) {
        bad = 0;

        for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {

            /* {"usage":{"prompt_tokens":42,"pad":"xx..."}} */

            len = (size_t) sprintf(body, "{\"usage\":{\"prompt_tokens\":42,"
                                   "\"pad\":\"");
            n = sizes[k] - (len - 9) - 2;
            memset(body + len, 'x', n);
            len += n;
            memcpy(body + len, "\"}}", 4);
            len += 3;

            bad += ut_body(body, len, alloc);

            ut_spills = 0;
            ut_init(&r, alloc);
            al_llm_resp_feed(&r, (const unsigned char *) body, len);

            /* over the buffer: the members read are kept, and read */

            if (al_llm_resp_usage(&r, &u, NULL, 0) != 0
                || u.prompt_tokens != 42
                || (r.usage_len == 0)
                   != (sizes[k] > (alloc ? AL_LLM_USAGE_MAX
                                         : AL_LLM_USAGE_INLINE))
                || ut_spills != (alloc && sizes[k] > AL_LLM_USAGE_INLINE))
            {
                bad++;
            }
        }

        tap_is_int(bad, 0, alloc ? "long usage values, with an alloc"
                                 : "long usage values, without an alloc");
    }

    free(body);
}


/*
 * A top-level name written with escapes is the name a client's JSON
 * reader decodes: "us\u0061ge" is "usage", and of two the last is read
 * (JSON.parse, json.loads), so the charge is the usage the client reads.
 */

static void
ut_escaped(void)
{
    int                   bad, rc;
    size_t                k, i, len;
    al_llm_resp_t         r;
    al_llm_usage_t        u;
    char                  m[AL_LLM_MODEL_MAX];
    const unsigned char  *p;

    static const struct {
        const char  *body;
        uint64_t     total;
        const char  *model;
    } cases[] = {
        { "{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,"
          "\"total_tokens\":2},\"us\\u0061ge\":{\"prompt_tokens\":100,"
          "\"completion_tokens\":100,\"total_tokens\":200}}", 200, "" },
        { "{\"\\u0075\\u0073\\u0061\\u0067\\u0065\":{\"prompt_tokens\""
          ":7,\"completion_tokens\":3}}", 10, "" },
        { "{\"\\u0075\\u0073\\u0061\\u0067\\u0065\":{\"prompt_tokens\""
          ":7},\"usage\":{\"prompt_tokens\":2}}", 2, "" },
        { "{\"usage\":{\"prompt_tokens\":2},\"U\\u0053AGE\":"
          "{\"prompt_tokens\":9}}", 2, "" },
        { "{\"model\":\"a\",\"mod\\u0065l\":\"b\",\"usage\":"
          "{\"prompt_tokens\":4}}", 4, "b" },
        { "{\"mo\\u0064\\u0065\\u006C\":\"c\",\"us\\/age\":{\"prompt_tokens\""
          ":1},\"usage\":{\"prompt_tokens\":5}}", 5, "c" },
        { "{\"usage\":{\"prompt_tokens\":3},\"usag\\u0065x\":"
          "{\"prompt_tokens\":9}}", 3, "" },
    };

    bad = 0;

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        p = (const unsigned char *) cases[k].body;
        len = strlen(cases[k].body);

        rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT, p, len, &u, m,
                                sizeof(m));

        if (rc != 0 || u.total_tokens != cases[k].total
            || strcmp(m, cases[k].model) != 0)
        {
            tap_diag("parse", cases[k].body);
            bad++;
        }

        for (i = 0; i <= len; i++) {
            ut_init(&r, 1);
            al_llm_resp_feed(&r, p, i);
            al_llm_resp_feed(&r, p + i, len - i);

            if (al_llm_resp_usage(&r, &u, m, sizeof(m)) != 0
                || u.total_tokens != cases[k].total
                || strcmp(m, cases[k].model) != 0)
            {
                tap_diag("split", cases[k].body);
                bad++;
                break;
            }
        }

        ut_init(&r, 1);
        for (i = 0; i < len; i++) {
            al_llm_resp_feed(&r, p + i, 1);
        }

        if (al_llm_resp_usage(&r, &u, m, sizeof(m)) != 0
            || u.total_tokens != cases[k].total)
        {
            tap_diag("bytes", cases[k].body);
            bad++;
        }
    }

    tap_is_int(bad, 0, "names written with escapes are read decoded");
}


/*
 * A usage of which some counts are integers and others are written as
 * decimals or strings: those are the numbers a client reads ("5000",
 * 5000.0; a fraction rounded up), not 0.  A usage in which no count is
 * an integer stays one that counts no token (taken for none).
 */

static void
ut_partial(void)
{
    int             bad, rc;
    size_t          k;
    al_llm_usage_t  u;

    static const struct {
        al_llm_kind_t       kind;
        al_llm_endpoint_t   ep;
        const char         *body;
        uint64_t            completion;
        uint64_t            total;
    } cases[] = {
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":"
          "\"5000\"}}", 5000, 6000 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":"
          "5000.0}}", 5000, 6000 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":"
          "4999.5}}", 5000, 6000 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":5,"
          "\"total_tokens\":\"6000\"}}", 5000, 6000 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":\"5e3\",\"completion_tokens\":"
          "1000}}", 1000, 6000 },
        { AL_LLM_OPENAI, AL_LLM_EP_RESPONSES,
          "{\"usage\":{\"input_tokens\":1000,\"output_tokens\":"
          "\"5000\"}}", 5000, 6000 },
        { AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
          "{\"usage\":{\"input_tokens\":1000,\"output_tokens\":"
          "\"5000\"}}", 5000, 6000 },
        { AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
          "{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":"
          "990.5,\"output_tokens\":5000}}", 5000, 6001 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":"
          "null,\"x\":\"9\"}}", 0, 1000 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":"
          "\"many\"}}", 0, 1000 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":"
          "\"\\u0035000\"}}", 5000, 6000 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":"
          "\"\\\"5000\\\"\"}}", 0, 1000 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":\"7\",\"completion_tokens\":"
          "2.5}}", 0, 0 },
    };

    bad = 0;

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        rc = al_llm_usage_parse(cases[k].kind, cases[k].ep,
                                (const unsigned char *) cases[k].body,
                                strlen(cases[k].body), &u, NULL, 0);

        if (rc != 0 || u.completion_tokens != cases[k].completion
            || u.total_tokens != cases[k].total)
        {
            tap_diag("usage", cases[k].body);
            bad++;
        }
    }

    tap_is_int(bad, 0, "counts written as decimals or strings beside "
                       "integers are read");
}


/*
 * A total_tokens below the sum of the prompt and completion tokens: the
 * budget is charged the total, so the sum (what the answer says was
 * used), not the smaller number.
 */

static void
ut_total_low(void)
{
    int             rc;
    al_llm_usage_t  u;
    const char     *body;

    body = "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":5000,"
           "\"total_tokens\":1}}";

    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                            (const unsigned char *) body, strlen(body), &u,
                            NULL, 0);
    tap_ok(rc == 0 && u.prompt_tokens == 1000 && u.completion_tokens == 5000
           && u.total_tokens == 6000,
           "a total below prompt and completion tokens: their sum");

    body = "{\"usage\":{\"input_tokens\":1000,\"output_tokens\":5000,"
           "\"total_tokens\":6,\"input_tokens_details\":"
           "{\"cached_tokens\":0}}}";

    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_RESPONSES,
                            (const unsigned char *) body, strlen(body), &u,
                            NULL, 0);
    tap_ok(rc == 0 && u.total_tokens == 6000,
           "responses: a total below input and output tokens: their sum");
}


/*
 * A member of the usage object named twice, plainly or with escapes: the
 * last, as a client's reader takes it (and as streams read it), not no
 * usage at all.
 */

static void
ut_twice(void)
{
    int             bad, rc;
    size_t          k;
    al_llm_usage_t  u;

    static const struct {
        al_llm_kind_t       kind;
        al_llm_endpoint_t   ep;
        const char         *body;
        uint64_t            total;
    } cases[] = {
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,"
          "\"prompt_tokens\":100}}", 101 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"usage\":{\"prompt_tokens\":1,\"prompt_tok\\u0065ns\":100,"
          "\"completion_tokens\":1}}", 101 },
        { AL_LLM_OPENAI, AL_LLM_EP_RESPONSES,
          "{\"usage\":{\"input_tokens\":100,\"output_tokens\":1,"
          "\"output_tokens\":100}}", 200 },
        { AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
          "{\"usage\":{\"input_tokens\":1,\"output_tokens\":1,"
          "\"output_tokens\":100,\"cache_creation\":{\"ephemeral_1h_"
          "input_tokens\":\"9\"}}}", 110 },
    };

    bad = 0;

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        rc = al_llm_usage_parse(cases[k].kind, cases[k].ep,
                                (const unsigned char *) cases[k].body,
                                strlen(cases[k].body), &u, NULL, 0);

        if (rc != 0 || u.total_tokens != cases[k].total) {
            tap_diag("usage", cases[k].body);
            bad++;
        }
    }

    tap_is_int(bad, 0, "a usage member named twice: the last");
}


/*
 * A usage value longer than its buffer (a provider that adds members:
 * details, padding): its counts are read as a client reads them, the
 * last of a name twice, escaped names decoded, fed whole, cut in two at
 * every byte and a byte at a time, with and without an alloc.  Before,
 * such a usage was no usage (the call charged its reservation).
 */

static void
ut_big(void)
{
    int             bad, alloc, rc;
    char           *body, *q;
    size_t          i, k, len, cut;
    al_llm_resp_t   r;
    al_llm_usage_t  u;

    /* before and after the fill */
    static const char *const  pads[][2] = {
        /* a nested value that is no count, with what looks like brackets */
        { "\"completion_tokens_details\":{",
          "\"z\":[1,{\"a\":\"}\\\"]\"}]}," },
        { "\"pad\":\"", "\"," },
        { "\"prompt_tokens_details\":{\"cached_tokens\":1,\"x\":\"", "\"}," }
    };

    body = malloc(65536);
    if (body == NULL) {
        tap_ok(0, "memory");
        return;
    }

    bad = 0;

    for (k = 0; k < 3 * 2; k++) {
        char  fill[5000];

        /* members of the details object, or a long string */

        q = fill;

        if (k % 3 == 0) {
            for (i = 0; q - fill < 4500; i++) {
                q += sprintf(q, "\"m%zu\":%zu,", i, i);
            }

        } else {
            memset(fill, 'x', 4500);
            q = fill + 4500;
        }

        *q = '\0';

        /* the pad first, or between the counts */

        q = body + sprintf(body, "{\"id\":\"c\",\"usage\":{");

        if (k < 3) {
            q += sprintf(q, "%s%s%s", pads[k][0], fill, pads[k][1]);
        }

        q += sprintf(q, "\"prompt_tokens\":1, \"prompt_tok\\u0065ns\" : 700 ,"
                     "\"completion_tokens\":90,");

        if (k >= 3) {
            q += sprintf(q, "%s%s%s", pads[k - 3][0], fill, pads[k - 3][1]);
        }

        q += sprintf(q, "\"prompt_tokens_details\":{\"cached_tokens\":3,"
                     "\"audio\":{\"x\":[1]}},\"total_tokens\":5},"
                     "\"model\":\"m\"}");
        len = (size_t) (q - body);

        for (alloc = 0; alloc < 2; alloc++) {
            for (cut = 0; cut <= len + 1; cut++) {
                ut_init(&r, alloc);

                if (cut == len + 1) {
                    for (i = 0; i < len; i++) {
                        al_llm_resp_feed(&r, (unsigned char *) body + i, 1);
                    }

                } else {
                    al_llm_resp_feed(&r, (unsigned char *) body, cut);
                    al_llm_resp_feed(&r, (unsigned char *) body + cut,
                                     len - cut);
                }

                rc = al_llm_resp_usage(&r, &u, NULL, 0);

                if (rc != 0 || u.prompt_tokens != 700
                    || u.completion_tokens != 90 || u.total_tokens != 790
                    || u.cached_tokens != 3)
                {
                    bad++;
                    break;
                }
            }
        }
    }

    tap_is_int(bad, 0, "a long usage: its counts read, every split");

    /* a count named 2000 times (8 KB): the last */

    q = body + sprintf(body, "{\"usage\":{");

    for (i = 0; i < 2000; i++) {
        q += sprintf(q, "\"prompt_tokens\":%zu,", i);
    }

    q += sprintf(q, "\"completion_tokens\":1}}");
    len = (size_t) (q - body);

    bad = 0;

    for (alloc = 0; alloc < 2; alloc++) {
        for (k = 1; k < 20; k += 6) {
            ut_init(&r, alloc);

            for (i = 0; i < len; i += k) {
                al_llm_resp_feed(&r, (unsigned char *) body + i,
                                 (len - i < k) ? len - i : k);
            }

            bad += (al_llm_resp_usage(&r, &u, NULL, 0) != 0
                    || u.prompt_tokens != 1999 || u.total_tokens != 2000);
        }
    }

    tap_is_int(bad, 0, "a long usage: a count named 2000 times, the last");

    /* Anthropic: the last cache_creation object, its parts */

    q = body + sprintf(body, "{\"usage\":{\"input_tokens\":5,"
                       "\"cache_creation\":{\"ephemeral_5m_input_tokens\":10,"
                       "\"ephemeral_1h_input_tokens\":20,\"pad\":\"");
    memset(q, 'y', 5000);
    q += 5000;
    q += sprintf(q, "\"},\"output_tokens\":7,\"cache_creation\":"
                 "{\"ephemeral_1h_input_tokens\":30}}}");
    len = (size_t) (q - body);

    rc = al_llm_usage_parse(AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
                            (unsigned char *) body, len, &u, NULL, 0);

    tap_ok(rc == 0 && u.prompt_tokens == 35 && u.completion_tokens == 7
           && u.cache_write_1h_tokens == 30,
           "a long Anthropic usage: the last cache_creation read");

    /* not an object, or cut short: no usage, as before */

    q = body + sprintf(body, "{\"usage\":[");
    memset(q, '1', 5000);
    q += 5000;
    q += sprintf(q, "]}");

    rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                            (unsigned char *) body, (size_t) (q - body), &u,
                            NULL, 0);
    tap_ok(rc == -1, "a long usage that is no object: no usage");

    free(body);
}


/*
 * A usage that is valid JSON (RFC 8259) holding what jansson and the
 * strict scanner do not take (a "\u0000", a lone surrogate, an integer
 * past 64 bits, a number past a double), in a member the gateway does not
 * read or in a count: read as JSON.parse reads it, a count past 2^48 (and
 * 1e999, Infinity to JSON.parse) as 2^48.  Before, such a usage was no
 * usage and the call was charged its reservation.  Invalid JSON is still
 * no usage.
 */

static void
ut_unsupported(void)
{
    int             bad, rc;
    char           *body;
    size_t          k, i, len;
    al_llm_resp_t   r;
    al_llm_usage_t  u, w;

    static const struct {
        al_llm_kind_t       kind;
        al_llm_endpoint_t   ep;
        const char         *usage;
        uint64_t            prompt;
        uint64_t            total;      /* 0: no usage */
        uint64_t            cached;
    } cases[] = {
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"completion_tokens\":5,"
          "\"x\":\"\\u0000\"}", 100000, 100005, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"completion_tokens\":5,"
          "\"x\":\"a\\ud800\"}", 100000, 100005, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":\"\\udc00\\ud800\\u0041\","
          "\"completion_tokens\":5}", 100000, 100005, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":\"\\ud800\\ud800\\udc00\","
          "\"completion_tokens\":5}", 100000, 100005, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"completion_tokens\":5,"
          "\"x\":[99999999999999999999999,-9223372036854775809]}",
          100000, 100005, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"completion_tokens\":5,"
          "\"x\":{\"y\":1e999,\"z\":-2E+308}}", 100000, 100005, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"\\u0000\":1,\"prompt_tokens\\u0000\":7,"
          "\"prompt_tokens\":100000,\"completion_tokens\":5}",
          100000, 100005, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":1,\"x\":\"\\u0000\",\"prompt_tokens\":100000,"
          "\"completion_tokens\":5}", 100000, 100005, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"completion_tokens\":5,"
          "\"prompt_tokens_details\":{\"cached_tokens\":300,"
          "\"x\":\"\\ud800\"}}", 100000, 100005, 300 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000000000000000000,"
          "\"completion_tokens\":5}",
          UINT64_C(1) << 48, (UINT64_C(1) << 48) + 5, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":1e999,\"completion_tokens\":5}",
          UINT64_C(1) << 48, (UINT64_C(1) << 48) + 5, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":1.8e308,\"completion_tokens\":5,"
          "\"x\":[0e999,-0.0E+99999999999999999999,0.00001e-999999,"
          "1.7976931348623157e308,179769313486231580793e288,"
          "0.000000000001e320,9223372036854775807,"
          "-9223372036854775808,\"\\u0000\"]}",
          UINT64_C(1) << 48, (UINT64_C(1) << 48) + 5, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":-100000000000000000000,"
          "\"completion_tokens\":5,\"total_tokens\":-1e999}", 0, 5, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"completion_tokens\":\"5\\u0000\"}",
          100000, 100000, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_RESPONSES,
          "{\"input_tokens\":100000,\"output_tokens\":5,"
          "\"output_tokens_details\":{\"x\":\"\\u0000\"}}",
          100000, 100005, 0 },
        { AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
          "{\"input_tokens\":100000,\"output_tokens\":5,"
          "\"service_tier\":\"\\udfff\"}", 100000, 100005, 0 },
        { AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
          "{\"input_tokens\":100000,\"output_tokens\":5,\"cache_creation\":"
          "{\"ephemeral_1h_input_tokens\":10,\"x\":1e400}}",
          100010, 100015, 0 },

        /* invalid JSON: no usage, as before */

        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":\"\\u00\"}", 0, 0, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":\"\\ud800\\u12\"}", 0, 0, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":01e999}", 0, 0, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":1e999e}", 0, 0, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":-}", 0, 0, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":\"\\u0000\",}", 0, 0, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":\"\\u0000\xc3\"}", 0, 0, 0 },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "{\"prompt_tokens\":100000,\"x\":\"\\u0000\t\"}", 0, 0, 0 },
    };

    bad = 0;

    body = malloc(8192);
    if (body == NULL) {
        abort();
    }

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        len = (size_t) snprintf(body, 8192, "{\"id\":\"x\",\"usage\":%s}",
                                cases[k].usage);

        rc = al_llm_usage_parse(cases[k].kind, cases[k].ep,
                                (const unsigned char *) body, len, &u, NULL,
                                0);

        if (cases[k].total == 0 ? rc != -1
            : rc != 0 || u.prompt_tokens != cases[k].prompt
              || u.total_tokens != cases[k].total
              || u.cached_tokens != cases[k].cached)
        {
            printf("# rc %d prompt %" PRIu64 " total %" PRIu64 " cached %"
                   PRIu64 "\n", rc, u.prompt_tokens, u.total_tokens,
                   u.cached_tokens);
            tap_diag("usage", cases[k].usage);
            bad++;
            continue;
        }

        /* the same cut in two at every byte */

        for (i = 0; i <= len; i++) {
            al_llm_resp_init(&r, cases[k].kind, cases[k].ep);
            r.alloc = ut_alloc;
            al_llm_resp_feed(&r, (const unsigned char *) body, i);
            al_llm_resp_feed(&r, (const unsigned char *) body + i, len - i);

            if (al_llm_resp_usage(&r, &w, NULL, 0) != rc
                || (rc == 0 && memcmp(&u, &w, sizeof(u)) != 0))
            {
                tap_diag("cut", cases[k].usage);
                bad++;
                break;
            }
        }
    }

    tap_is_int(bad, 0, "a usage with what jansson does not take: read as "
               "JSON.parse reads it, invalid JSON as none");

    /* over the buffer: the members kept read the same way */

    bad = 0;

    for (k = 0; k < 3; k++) {
        len = (size_t) snprintf(body, 8192, "{\"usage\":{\"x\":\"");
        memset(body + len, 'a', 5000);
        len += 5000;
        len += (size_t) snprintf(body + len, 8192 - len, "%s",
                                 k == 0 ? "\\u0000\",\"prompt_tokens\":"
                                          "100000,\"completion_tokens\":5}}"
                                 : k == 1 ? "\",\"prompt_tokens\":1e999,"
                                            "\"completion_tokens\":5}}"
                                 : "\",\"prompt_tokens\":"
                                   "100000000000000000000,"
                                   "\"completion_tokens\":5}}");

        for (i = 0; i <= len; i += 97) {
            al_llm_resp_init(&r, AL_LLM_OPENAI, AL_LLM_EP_CHAT);
            r.alloc = ut_alloc;
            al_llm_resp_feed(&r, (const unsigned char *) body, i);
            al_llm_resp_feed(&r, (const unsigned char *) body + i, len - i);
            rc = al_llm_resp_usage(&r, &u, NULL, 0);

            if (rc != 0 || u.completion_tokens != 5
                || u.prompt_tokens != (k == 0 ? 100000 : UINT64_C(1) << 48))
            {
                printf("# case %u cut %u rc %d prompt %" PRIu64 "\n",
                       (unsigned) k, (unsigned) i, rc, u.prompt_tokens);
                bad++;
                break;
            }
        }
    }

    tap_is_int(bad, 0, "a usage over the buffer with what jansson does not "
               "take: read as JSON.parse reads it");

    free(body);
}


/*
 * A count written as a decimal or a string of a number longer than 63
 * bytes (zeros before it, or after its point): the number a client reads,
 * as for a short one.  Before, such a count was read as 0 by the strict
 * scanner's path (jansson's read it), and the call charged less.
 */

static void
ut_long_count(void)
{
    int             bad, rc;
    char            body[512], zeros[80];
    size_t          k;
    al_llm_usage_t  u;

    memset(zeros, '0', 70);
    zeros[70] = '\0';

    bad = 0;

    for (k = 0; k < 6; k++) {
        switch (k) {
        case 0:
            (void) snprintf(body, sizeof(body), "{\"usage\":{\"prompt_tokens\""
                            ":1,\"completion_tokens\":\"%s5000\"}}", zeros);
            break;
        case 1:
            (void) snprintf(body, sizeof(body), "{\"usage\":{\"prompt_tokens\""
                            ":1,\"completion_tokens\":4999.5%s}}", zeros);
            break;
        case 2:
            (void) snprintf(body, sizeof(body), "{\"usage\":{\"prompt_tokens\""
                            ":1,\"completion_tokens\":\"5000.%s\"}}", zeros);
            break;
        case 3:
            (void) snprintf(body, sizeof(body), "{\"usage\":{\"prompt_tokens\""
                            ":1,\"completion_tokens\":\"%s5\\u0030\\u0030"
                            "\\u0030\"}}", zeros);
            break;
        case 4:
            /* the same through jansson (a key twice) */
            (void) snprintf(body, sizeof(body), "{\"usage\":{\"prompt_tokens\""
                            ":1,\"completion_tokens\":\"%s5000\","
                            "\"prompt_tokens\":1}}", zeros);
            break;
        default:
            (void) snprintf(body, sizeof(body), "{\"usage\":{\"prompt_tokens\""
                            ":1,\"completion_tokens\":4999.5%s,"
                            "\"prompt_tokens\":1}}", zeros);
            break;
        }

        rc = al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                                (const unsigned char *) body, strlen(body),
                                &u, NULL, 0);

        if (rc != 0 || u.completion_tokens != 5000
            || u.total_tokens != 5001)
        {
            printf("# rc %d completion %" PRIu64 "\n", rc,
                   u.completion_tokens);
            tap_diag("body", body);
            bad++;
        }
    }

    tap_is_int(bad, 0, "a count longer than 63 bytes: its number");
}


/*
 * A usage object of kind (OpenAI's chat, or Anthropic's) made of head, a
 * member of 5,000 bytes, tail and its '}', in an answer, read by
 * al_llm_usage_parse() (over its buffer) or, when cut is not 0, fed in
 * two pieces with no alloc, cut short after cut bytes of tail and the
 * two '}' after it.
 */

static int
ut_long_usage(al_llm_kind_t kind, const char *head, const char *tail,
    size_t cut, al_llm_usage_t *u)
{
    int             rc;
    char           *body, *q;
    size_t          len;
    al_llm_resp_t   r;

    body = malloc(8192);
    if (body == NULL) {
        return -2;
    }

    q = body + sprintf(body, "{\"usage\":%s\"pad\":\"", head);
    memset(q, 'p', 5000);
    q += 5000;
    q += sprintf(q, "\"%s}}", tail);
    len = (size_t) (q - body);

    if (cut == 0) {
        rc = al_llm_usage_parse(kind, (kind == AL_LLM_ANTHROPIC)
                                      ? AL_LLM_EP_MESSAGES : AL_LLM_EP_CHAT,
                                (unsigned char *) body, len, u, NULL, 0);

    } else {
        al_llm_resp_init(&r, kind, (kind == AL_LLM_ANTHROPIC)
                                   ? AL_LLM_EP_MESSAGES : AL_LLM_EP_CHAT);
        al_llm_resp_feed(&r, (unsigned char *) body, 100);
        al_llm_resp_feed(&r, (unsigned char *) body + 100,
                         len - strlen(tail) - 2 - 100 + cut);
        rc = al_llm_resp_usage(&r, u, NULL, 0);
    }

    free(body);

    return rc;
}


/* an OpenAI chat answer's usage, read whole */

static int
ut_usage(const char *body, al_llm_usage_t *u)
{
    return al_llm_usage_parse(AL_LLM_OPENAI, AL_LLM_EP_CHAT,
                              (const unsigned char *) body, strlen(body), u,
                              NULL, 0);
}


/*
 * The usage reader: one reading of a usage object however long it is and
 * however it arrives, the reading of a client's JSON reader (RFC 8259;
 * the last member of a name).  Before it, a usage over its buffer was
 * read by a member filter that took invalid JSON for a usage (bytes in
 * the members it passed over were not checked), and counted one the
 * answer was cut in; the jansson fallback decoded a count's string twice
 * ("\\u0035" read as 5); and the strict scanner took a details object
 * written as a number for a count read.
 */

static void
ut_reader(void)
{
    int             rc;
    char            name[128], head[128];
    size_t          k;
    al_llm_usage_t  u;

    static const struct {
        const char  *member;
        const char  *what;
    }  bad[] = {
        { "\"x\\u00zz\":1,", "a bad escape in a name" },
        { "\"x\xff\":1,", "a name not UTF-8" },
        { "\"x\":\"a\tb\",", "a control byte in a string" },
        { "\"x\":tru,", "a bad literal" },
        { "\"x\":01,", "a number with a leading 0" },
        { "\"x\":1.,", "a number without its fraction" },
        { "\"x\":[1},", "brackets that do not pair" },
        { "\"x\":{\"a\" 1},", "a member without its colon, nested" },
        { "\"x\":{\"a\":[\"\xc0\xaf\"]},", "an overlong UTF-8 form, nested" },
        { "\"x\":{\"a\":\"\xed\xa0\x80\"},", "a UTF-8 surrogate, nested" },
        { "\"x\":1 2,", "two values" },
        { "\"x\":1,,", "two commas" },
    };

    for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        (void) snprintf(head, sizeof(head), "{\"prompt_tokens\":5,%s",
                        bad[k].member);
        rc = ut_long_usage(AL_LLM_OPENAI, head, ",\"completion_tokens\":7",
                           0, &u);
        (void) snprintf(name, sizeof(name),
                        "a long usage with %s: invalid, no usage",
                        bad[k].what);
        tap_is_int(rc, -1, name);
    }

    /* valid JSON the filter passed over: read as before */

    rc = ut_long_usage(AL_LLM_OPENAI,
                       "{\"prompt_tokens\":5,\"x\":{\"a\":[1,-0.5e+3,"
                       "\"\\ud800\\u0000\xc3\xa9\",true,false,null,{}]},",
                       ",\"completion_tokens\":7", 0, &u);
    tap_ok(rc == 0 && u.prompt_tokens == 5 && u.completion_tokens == 7,
           "a long usage with valid nested members: read");

    /* cut short in the usage: no usage, as for a short one */

    rc = ut_long_usage(AL_LLM_OPENAI, "{\"prompt_tokens\":5,",
                       ",\"completion_tokens\":7", 24, &u);
    tap_ok(rc == 0 && u.completion_tokens == 7,
           "a long usage fed in pieces, whole: read");

    rc = ut_long_usage(AL_LLM_OPENAI, "{\"prompt_tokens\":5,",
                       ",\"completion_tokens\":7", 23, &u);
    tap_is_int(rc, -1, "a long usage, the answer cut after it: no usage");

    rc = ut_long_usage(AL_LLM_OPENAI, "{\"prompt_tokens\":5,",
                       ",\"completion_tokens\":7", 22, &u);
    tap_is_int(rc, -1, "a long usage cut before its end: no usage");

    /* a count's string is decoded once, short or long */

    rc = ut_usage("{\"usage\":{\"prompt_tokens\":1,"
                  "\"completion_tokens\":\"\\\\u0035\","
                  "\"completion_tokens\":\"\\\\u0035\"}}", &u);
    tap_ok(rc == 0 && u.prompt_tokens == 1 && u.completion_tokens == 0,
           "a count \"\\\\u0035\", named twice: no number, not 5");

    rc = ut_usage("{\"usage\":{\"prompt_tokens\":1,"
                  "\"completion_tokens\":\"\\u0035\","
                  "\"completion_tokens\":\"\\u0035\"}}", &u);
    tap_ok(rc == 0 && u.completion_tokens == 5,
           "a count \"\\u0035\", named twice: 5");

    /* prompt_tokens_details is no count, however it is written */

    rc = ut_usage("{\"usage\":{\"prompt_tokens\":\"10\","
                  "\"prompt_tokens_details\":5}}", &u);
    tap_ok(rc == 0 && u.prompt_tokens == 0,
           "details written as a number: no count read, as twice");

    rc = ut_usage("{\"usage\":{\"prompt_tokens\":\"10\","
                  "\"prompt_tokens_details\":5,"
                  "\"prompt_tokens_details\":5}}", &u);
    tap_ok(rc == 0 && u.prompt_tokens == 0,
           "details written as a number twice: no count read");

    /* numbers written long: as strtod() reads them */

    rc = ut_long_usage(AL_LLM_ANTHROPIC, "{\"input_tokens\":1,",
                       ",\"output_tokens\":\"0.0000000000000000000000000"
                       "000000000000000000000000000000000000000000000001\","
                       "\"cache_read_input_tokens\":"
                       "100000000000000000000000000000000000000000000000"
                       "000000e-60,\"cache_creation\":{"
                       "\"ephemeral_5m_input_tokens\":"
                       "2.0000000000000000000000000000000000000000000000"
                       "0000001}", 0, &u);
    tap_ok(rc == 0 && u.completion_tokens == 1 && u.cached_tokens == 1
           && u.cache_write_tokens == 2,
           "long decimals: 1e-73 as 1, 1e-6 as 1, 2.0...01 as 2 (a double)");
}



/*
 * Generated answers, valid and mutated, read by the gateway's reader (the
 * model not taken) fed whole, cut in two at every byte, and a byte at a
 * time: the same usage value as the reference fed whole.  The whole
 * answer takes the mask reader's way (al_llm_resp_whole()) where it can:
 * strings with escapes across its 64-byte blocks, names escaped or named
 * twice, "usage" inside strings and nested objects, brackets that do not
 * pair, backslashes outside strings.
 */

#define UT_GEN_MAX  4096
#define UT_XS       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"  /* 40 */

static uint32_t  ut_seed = 12345;


static uint32_t
ut_rand(void)
{
    ut_seed = ut_seed * 1103515245u + 12345u;

    return ut_seed >> 8;
}


static void
ut_put(char *buf, size_t *len, const char *s)
{
    size_t  n;

    n = strlen(s);

    if (*len + n < UT_GEN_MAX - 64) {
        memcpy(buf + *len, s, n);
        *len += n;
    }
}


static void
ut_gen_string(char *buf, size_t *len)
{
    unsigned  k, n;

    static const char *const  pieces[] = {
        "usage", "model", "Hello from the bench ", "\\\"", "\\\\", "\\n",
        "\\u0075", "{", "}", "[", "]", ",", ":", " ", "\\\\\\\"", "x",
        "\\/", "\xc3\xa9", "\\\\\\\\", "usage\\\"", "a long run of text "
        "that takes most of a block, to cut escapes at its end "
    };

    ut_put(buf, len, "\"");
    n = ut_rand() % 8;

    for (k = 0; k < n; k++) {
        ut_put(buf, len, pieces[ut_rand() % (sizeof(pieces)
                                             / sizeof(pieces[0]))]);
    }

    ut_put(buf, len, "\"");
}


static void
ut_gen_value(char *buf, size_t *len, unsigned depth)
{
    unsigned  k, n, pick;
    char      num[32];

    static const char *const  names[] = {
        "\"usage\"", "\"model\"", "\"content\"", "\"prompt_tokens\"",
        "\"us\\u0061ge\"", "\"role\""
    };
    static const char *const  ws[] = { "", "", "", " ", "\n  ", "\t" };

    pick = ut_rand() % (depth > 4 ? 3 : 6);

    switch (pick) {

    case 0:
        sprintf(num, "%u", ut_rand() % 100000);
        ut_put(buf, len, num);
        return;

    case 1:
        ut_gen_string(buf, len);
        return;

    case 2:
        ut_put(buf, len, (ut_rand() & 1) ? "null" : "true");
        return;

    case 3:
    case 4:
        ut_put(buf, len, "{");
        n = ut_rand() % 4;

        for (k = 0; k < n; k++) {
            if (k > 0) {
                ut_put(buf, len, ",");
            }

            ut_put(buf, len, ws[ut_rand() % 6]);

            if (ut_rand() % 3 == 0) {
                ut_gen_string(buf, len);

            } else {
                ut_put(buf, len, names[ut_rand() % 6]);
            }

            ut_put(buf, len, ws[ut_rand() % 6]);
            ut_put(buf, len, ":");
            ut_put(buf, len, ws[ut_rand() % 6]);
            ut_gen_value(buf, len, depth + 1);
        }

        ut_put(buf, len, "}");
        return;

    default:
        ut_put(buf, len, "[");
        n = ut_rand() % 4;

        for (k = 0; k < n; k++) {
            if (k > 0) {
                ut_put(buf, len, ",");
            }

            ut_gen_value(buf, len, depth + 1);
        }

        ut_put(buf, len, "]");
    }
}


static void
ut_gen_answer(char *buf, size_t *len)
{
    unsigned  k, n;
    char      num[96];

    static const char *const  names[] = {
        "\"id\"", "\"model\"", "\"choices\"", "\"usage\"", "\"object\"",
        "\"us\\u0061ge\"", "\"usagex\"", "\"usage\"", "\"x\\\\\""
    };
    static const char *const  ws[] = { "", "", "", " ", "\n  ", "\t" };

    *len = 0;
    ut_put(buf, len, ws[ut_rand() % 6]);
    ut_put(buf, len, "{");
    n = ut_rand() % 7;

    for (k = 0; k < n; k++) {
        if (k > 0) {
            ut_put(buf, len, ",");
        }

        ut_put(buf, len, ws[ut_rand() % 6]);

        if (ut_rand() % 3 == 0) {
            ut_put(buf, len, "\"usage\"");
            ut_put(buf, len, ws[ut_rand() % 6]);
            ut_put(buf, len, ":");
            sprintf(num, "{\"prompt_tokens\":%u,\"completion_tokens\":%u,"
                    "\"total_tokens\":%u}", ut_rand() % 100,
                    ut_rand() % 100, ut_rand() % 1000);
            ut_put(buf, len, num);
            continue;
        }

        ut_put(buf, len, names[ut_rand() % 9]);
        ut_put(buf, len, ws[ut_rand() % 6]);
        ut_put(buf, len, ":");
        ut_put(buf, len, ws[ut_rand() % 6]);
        ut_gen_value(buf, len, 1);
    }

    ut_put(buf, len, ws[ut_rand() % 6]);
    ut_put(buf, len, "}");
    ut_put(buf, len, ws[ut_rand() % 6]);
}


static int
ut_random_body(const char *body, size_t len)
{
    int                   bad, rc1, rc2;
    size_t                i;
    ref_resp_t           *ref;
    al_llm_resp_t         r, r2;
    al_llm_usage_t        u1, u2;
    const unsigned char  *p;

    p = (const unsigned char *) body;
    bad = 0;

    ref = malloc(sizeof(ref_resp_t));
    if (ref == NULL) {
        return 1;
    }

    ref_resp_init(ref);
    ref_resp_feed(ref, p, len);

    ut_init(&r, 1);
    al_llm_resp_feed(&r, p, len);
    bad += !ut_same(&r, ref);

    for (i = 0; i <= len; i++) {
        ut_init(&r2, 1);
        al_llm_resp_feed(&r2, p, i);
        al_llm_resp_feed(&r2, p + i, len - i);
        bad += !ut_same(&r2, ref);
    }

    ut_init(&r2, 1);
    for (i = 0; i < len; i++) {
        al_llm_resp_feed(&r2, p + i, 1);
    }
    bad += !ut_same(&r2, ref);

    rc1 = al_llm_resp_usage(&r, &u1, NULL, 0);
    rc2 = al_llm_resp_usage(&r2, &u2, NULL, 0);
    bad += rc1 != rc2 || (rc1 == 0 && memcmp(&u1, &u2, sizeof(u1)) != 0);

    free(ref);

    return bad;
}


static void
ut_random(void)
{
    int           bad, mutated;
    char         *buf;
    size_t        len, at;
    unsigned      n, k, m;

    static const char  bytes[] = "{}[]\",:\\u }";
    static const char *const  escapes[] = {
        "\\\\", "\\\"", "\\\\\\\"", "\\\\\\\\", "\\\"\\\"\\\\",
        "\\u0022", "\\\\\",\\\"usage", "\\\"}", "\\\\\"}"
    };

    buf = malloc(UT_GEN_MAX);
    if (buf == NULL) {
        tap_ok(0, "memory");
        return;
    }

    ut_no_model = 1;

    for (mutated = 0; mutated < 2; mutated++) {
        bad = 0;

        for (n = 0; n < 3000; n++) {
            ut_gen_answer(buf, &len);

            for (k = mutated ? 1 + ut_rand() % 3 : 0; k > 0 && len > 1; k--)
            {
                at = ut_rand() % len;
                m = ut_rand() % 4;

                if (m == 0) {                           /* a byte less */
                    memmove(buf + at, buf + at + 1, len - at - 1);
                    len--;

                } else if (m == 1) {                    /* a byte more */
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = bytes[ut_rand() % (sizeof(bytes) - 1)];
                    len++;

                } else if (m == 2) {
                    buf[at] = bytes[ut_rand() % (sizeof(bytes) - 1)];

                } else {                        /* a backslash before '"' */
                    while (at < len && buf[at] != '"') {
                        at++;
                    }

                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = '\\';
                    len++;
                }
            }

            if (ut_random_body(buf, len) != 0) {
                buf[len] = '\0';
                tap_diag("body", buf);
                bad++;
            }
        }

        tap_is_int(bad, 0, mutated ? "generated answers, mutated: the same"
                                     " usage as the reference, any cut"
                                   : "generated answers: the same usage as"
                                     " the reference, any cut");
    }

    /* escapes at every place about the 64-byte blocks' bounds */

    bad = 0;

    for (n = 0; n < 160; n++) {
        for (k = 0; k < sizeof(escapes) / sizeof(escapes[0]); k++) {
            len = (size_t) sprintf(buf, "{\"id\":\"%.*s%s\",\"usage\":"
                                   "{\"prompt_tokens\":%u}}", (int) n,
                                   UT_XS UT_XS UT_XS UT_XS UT_XS, escapes[k],
                                   n);
            bad += ut_random_body(buf, len) != 0;
        }
    }

    /*
     * Nested, where the mask reader reads them: a backslash pair or an
     * escaped quote at every place about a block's bound, each followed
     * by bytes that close the object early if it is paired wrong.
     */

    for (n = 0; n < 160; n++) {
        len = (size_t) sprintf(buf, "{\"a\":[{\"b\":\"%.*s\\\"}}}}\"}],"
                               "\"usage\":{\"prompt_tokens\":%u}}", (int) n,
                               UT_XS UT_XS UT_XS UT_XS UT_XS, n);
        bad += ut_random_body(buf, len) != 0;

        len = (size_t) sprintf(buf, "{\"a\":[{\"b\":\"%.*s\\\\\"}],"
                               "\"x\":\"}}}\",\"usage\":{\"prompt_tokens\":"
                               "%u}}", (int) n, UT_XS UT_XS UT_XS UT_XS UT_XS,
                               n);
        bad += ut_random_body(buf, len) != 0;
    }

    tap_is_int(bad, 0, "escapes across the reader's blocks");

    ut_no_model = 0;
    free(buf);
}

int
main(void)
{
    ut_bodies();
    ut_long();
    ut_escaped();
    ut_partial();
    ut_total_low();
    ut_twice();
    ut_big();
    ut_unsupported();
    ut_long_count();
    ut_reader();
    ut_random();

    return tap_done();
}
