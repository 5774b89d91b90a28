/*
 * Unit tests for the request body scan's loop (al_llm_json_scan(), the
 * loop al_llm_scan_flat() in front of the recursive scan): on each body,
 * for the request's spec and a usage object's, the loop and the recursive
 * scan alone (al_llm_json_scan_strict()) must fill the same members,
 * counts and model, and refuse the same bodies with the same detail.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "al_llm_internal.h"
#include "tap.h"


static const char *const  ut_fields[] = {
    "model", "stream", "max_tokens", "max_completion_tokens",
    "max_output_tokens", "stream_options", "n", "tools",
    "web_search_options", "mcp_servers", "best_of", "service_tier",
    "n_predict", "models", "fallbacks", "speed",
    "data_sources", "inference_geo", "context_window_fallbacks",
    "content_policy_fallbacks", "fallback_models", "modalities", "audio",
    "plugins", "mock_testing_fallbacks", "mock_testing_context_fallbacks",
    "mock_testing_content_policy_fallbacks", "provider", "background",
    "user_config", "api_base", "base_url", "extra_body", "extra_headers",
    "headers", "prediction", "context_management", "prompt", NULL
};
static const char *const  ut_so[] = { "include_usage", NULL };
static const al_llm_scan_spec_t  ut_request = {
    ut_fields, 0, 5, ut_so, AL_LLM_F_INCLUDE_USAGE, 1, NULL, NULL
};
static const char *const  ut_usage_names[] = {
    "prompt_tokens", "completion_tokens", "total_tokens",
    "prompt_tokens_details", NULL
};
static const char *const  ut_details[] = { "cached_tokens", NULL };
static const al_llm_scan_spec_t  ut_usage = {
    ut_usage_names, -1, 3, ut_details, 4, 0, NULL, NULL
};

/* al_llm_scan.c's names: the fields read and where prompt text lives */
static const char *const  ut_names[] = {
    "model", "stream", "max_tokens", "max_completion_tokens",
    "max_output_tokens", "stream_options", "n", "messages", "prompt",
    "input", "instructions", "system", "tools", "functions",
    "response_format", "text", "web_search_options", "mcp_servers",
    "best_of", "service_tier",
    "n_predict", "models", "fallbacks", "speed", "data_sources",
    "inference_geo", "context_window_fallbacks", "content_policy_fallbacks",
    "fallback_models", "modalities", "audio", "plugins",
    "mock_testing_fallbacks", "mock_testing_context_fallbacks",
    "mock_testing_content_policy_fallbacks", "provider", "background",
    "user_config", "api_base", "base_url", "extra_body", "extra_headers",
    "headers", "prediction", "context_management"
};

/* other servers' thinking members, as from AL_LLM_F_THINKING_BUDGET */
static const char *const  ut_thinks[] = {
    "thinking_budget", "thinking_token_budget", "thinking_budget_tokens",
    "chat_template_kwargs", "nvext", "enable_thinking"
};

static int ut_same_field(const al_llm_jfield_t *a, const al_llm_jfield_t *b);
static int ut_same(const al_llm_scan_spec_t *spec, const char *body,
    size_t len);
static int ut_same_body(const al_llm_body_t *a, const al_llm_body_t *b,
    const al_llm_scan_spec_t *spec);
static int ut_think(const char *name, unsigned id, size_t keys);


static int
ut_same_field(const al_llm_jfield_t *a, const al_llm_jfield_t *b)
{
    /* an absent member's span is not written (al_llm_body_clear()) */
    return a->type == b->type
           && (a->type == AL_LLM_JT_NONE
               || (a->at == b->at && a->len == b->len && a->num == b->num
                   && (a->type != AL_LLM_JT_STRING || a->esc == b->esc)));
}


static int
ut_same(const al_llm_scan_spec_t *spec, const char *body, size_t len)
{
    int                   rc1, rc2;
    al_llm_body_t         a, b;
    const unsigned char  *p;
    char                  d1[AL_DETAIL_MAX], d2[AL_DETAIL_MAX];

    p = (const unsigned char *) body;

    rc1 = al_llm_json_scan(spec, p, len, &a, d1, sizeof(d1));
    rc2 = al_llm_json_scan_strict(spec, p, len, &b, d2, sizeof(d2));

    if (rc1 != rc2) {
        return 0;
    }

    if (rc1 != 0) {
        return strcmp(d1, d2) == 0;
    }

    if (!ut_same_body(&a, &b, spec)) {
        return 0;
    }

    /* the request's own entry point: the same scan, its own names */

    if (spec == &ut_request) {
        if (al_llm_body_scan(p, len, &a, d1, sizeof(d1)) != 0
            || !ut_same_body(&a, &b, spec))
        {
            return 0;
        }
    }

    return 1;
}


static int
ut_same_body(const al_llm_body_t *a, const al_llm_body_t *b,
    const al_llm_scan_spec_t *spec)
{
    size_t  k, n;

    if (!ut_same_field(&a->root, &b->root)) {
        return 0;
    }

    for (k = 0; k < AL_LLM_F_MAX; k++) {
        if (!ut_same_field(&a->f[k], &b->f[k])) {
            return 0;
        }
    }

    if (a->root_last != b->root_last || a->root_members != b->root_members
        || a->so_last != b->so_last || a->so_members != b->so_members
        || a->jansson != b->jansson || a->text_bytes != b->text_bytes
        || a->extra != b->extra || a->tools != b->tools
        || a->cache_control != b->cache_control || a->urls != b->urls
        || a->audio != b->audio)
    {
        return 0;
    }

    for (k = 0; k < AL_LLM_PT_MAX; k++) {
        if ((a->tools & (UINT32_C(1) << k))
            && (a->tool_at[k] != b->tool_at[k]
                || a->tool_len[k] != b->tool_len[k]))
        {
            return 0;
        }
    }

    if (spec->model >= 0 && a->f[spec->model].type == AL_LLM_JT_STRING) {
        n = (size_t) a->f[spec->model].num;
        n = n < sizeof(a->model) ? n : sizeof(a->model);

        if (memcmp(a->model, b->model, n) != 0) {
            return 0;
        }
    }

    return 1;
}


/* a body with tools of every kind: client, provider, unknown, odd */
#define UT_TOOLS                                                             \
    "{\"model\":\"gpt\",\"tools\":[{\"type\":\"function\",\"function\":"     \
    "{\"parameters\":{\"type\":\"object\"}}},{\"type\":\"mcp\","             \
    "\"server_url\":\"https://a.example/\"},{\"typ\\u0065\":"                \
    "\"web_search_pr\\u0065view\"},{\"name\":\"f\"},\"x\",[1],"              \
    "{\"type\":null},{\"type\":\"x0123456789012345678901234567890123\"},"    \
    "{\"type\":\"web_search\",\"image\":{\"type\":\"mcp\"}},{}],"            \
    "\"web_search_options\":{},\"mcp_servers\":[{\"url\":\"u\"}]}"

static const char *const  ut_bodies[] = {
    "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\","
    "\"content\":\"Say hello to the benchmark\"}]}",
    " {\"model\" : \"gpt-4o\" ,\n\"messages\":[{\"role\":\"system\","
    "\"content\":\"Be brief.\\nReally \\\"brief\\\" \\u00e9\xc3\xa9 "
    "\xf0\x9f\x98\x80\"},{\"role\":\"user\",\"content\":[{\"type\":"
    "\"text\",\"text\":\"What is this?\"},{\"type\":\"image_url\","
    "\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}}]}],"
    "\"max_tokens\":100,\"stream\":true,\"stream_options\":"
    "{\"include_usage\":true,\"x\":1},\"n\":2,\"temperature\":0.5,"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{}}}}],"
    "\"seed\":-12,\"top_p\":1e-3,\"user\":null,\"logprobs\":false} \n",
    "{\"m\\u006fdel\":\"gpt-4o\",\"input\":\"hi\",\"instructions\":\"x\"}",
    "{\"model\":\"c\",\"system\":[{\"type\":\"text\",\"text\":\"s\","
    "\"cache_contro\\u006c\":{\"type\":\"ephemeral\"}}]}",
    "{\"model\":\"a\\u0000\"}",
    "{\"model\":\"m\",\"messages\":[{\"content\":[{\"type\":\"input_audio\","
    "\"input_\\u0061udio\":{\"data\":\"AAAA\"}}]}],\"modalities\":"
    "[\"text\",\"audio\"],\"audio\":{}}",
    "{\"model\":\"m\",\"messages\":[{\"content\":[{\"type\":\"file\","
    "\"file\":{\"file_d\\u0061ta\":\"https://a.example/\"}}]}]}",
    "{\"model\":\"m\",\"messages\":[{\"content\":[{\"file\":"
    "{\"file_id\":\"gs://b/x\"}}]}]}",
    "{\"model\":\"c\",\"contain\\u0065r\":\"x\",\"messages\":"
    "[{\"container\":{\"container\":1}}]}",
    "{\"model\":\"a\",\"model\":\"b\"}",
    "{\"model\":\"a\",\"m\\u006fdel\":\"b\"}",
    "{\"a\":1,\"b\":{\"a\":1,\"b\":2},\"b2\":[1,2,{\"b\":1,\"b\":2}]}",
    "{\"model\":\"gpt\"} x",
    "{\"model\":\"gpt\",}",
    "{\"model\":\"gpt\"",
    "{\"model\" \"gpt\"}",
    "[1,2,3]",
    "\"just a string\"",
    "12345678901234567890",
    "-1.5e400",
    "{\"max_tokens\":9223372036854775808}",
    "{\"max_tokens\":-9223372036854775808,\"n\":01}",
    "{\"prompt\":[1,2,3,\"abc\"],\"model\":{\"x\":\"y\"}}",
    "{\"messages\":[{\"content\":\"\xff\"}]}",
    "{\"messages\":[{\"content\":\"\x01\"}]}",
    "{\"usage\":{\"prompt_tokens\":1},\"prompt_tokens\":5,"
    "\"prompt_tokens_details\":{\"cached_tokens\":3,\"x\":[]},"
    "\"total_tokens\":1.5}",
    "{}",
    "[]",
    "",
    "   ",
    "{\"a\":tru}",
    "{\"a\":nul}",
    "{\"a\":falsey}",
    "{\"model\":\"",
    "{\"model\":\"x\\",
    "{\"stream_options\":[{\"include_usage\":true}],\"stream\":\"yes\"}",
    UT_TOOLS,
    "{\"tools\":{\"type\":\"mcp\"},\"x\":{\"tools\":[{\"type\":"
    "\"mcp\"}]}}",
    "{\"tools\":[{\"type\":\"mcp\",\"type\":\"function\"}]}",
    "{\"model\":\"a\",\"Model\":\"b\",\"max_tokens\":1}",
    "{\"x\":{\"Model\":\"b\"},\"MAX_to\xe2\x84\xaa" "ens\":1}",
    "{\"stream_options\":{\"Include_usage\":true}}",
    "{\"tools\":[{\"function\":{\"Type\":1}},{\"TYPE\":\"mcp\"}]}",
    "{\"tools\":[{\"type\":\"function\",\"googleSearch\":{}},{\"type\":"
    "\"custom\",\"name\":\"g\"},{\"type\":\"function\",\"x\":{\"name\":1}},"
    "{\"name\":\"f\",\"type\":\"custom\"},{\"type\":\"function\","
    "\"functio\\u006e\":{}}]}",
    "{\"\\u017Ftream\":true,\"m\\u0061x_tokens\":1}",
    "{\"Prompt_tokens\":1,\"prompt_tokens_detail\xc5\xbf\":{}}",
    "{\"model\":\"" "0123456789012345678901234567890123456789"
    "0123456789012345678901234567890123456789"
    "0123456789012345678901234567890123456789"
    "0123456789012345678901234567890123456789"
    "0123456789012345678901234567890123456789"
    "0123456789012345678901234567890123456789"
    "0123456789012345678901234567890123456789\"}",
};


int
main(void)
{
    int     bad;
    char   *body;
    size_t  k, i, n;

    bad = 0;

    for (k = 0; k < sizeof(ut_bodies) / sizeof(ut_bodies[0]); k++) {
        for (n = 0; n <= strlen(ut_bodies[k]); n++) {

            /* every prefix: the ends of input on the way */

            if (!ut_same(&ut_request, ut_bodies[k], n)
                || !ut_same(&ut_usage, ut_bodies[k], n))
            {
                tap_diag("body ", ut_bodies[k]);
                bad++;
                break;
            }
        }
    }

    tap_is_int(bad, 0, "the loop reads as the recursive scan, every prefix");

    /* nesting about the bound, keys about the count compared */

    body = malloc(8192);
    if (body == NULL) {
        tap_ok(0, "memory");
        return tap_done();
    }

    bad = 0;

    for (k = AL_JSON_DEPTH_MAX - 2; k <= AL_JSON_DEPTH_MAX + 2; k++) {
        n = 0;
        for (i = 0; i < k; i++) {
            n += (size_t) sprintf(body + n, i % 2 ? "[" : "{\"messages\":");
        }
        n += (size_t) sprintf(body + n, "\"x\"");
        for (i = k; i-- > 0; ) {
            body[n++] = i % 2 ? ']' : '}';
        }

        bad += !ut_same(&ut_request, body, n);
    }

    for (k = 60; k <= 140; k += 4) {
        n = (size_t) sprintf(body, "{\"o\":{");
        for (i = 0; i < k; i++) {
            n += (size_t) sprintf(body + n, "%s\"k%zu\":%zu", i ? "," : "",
                                  i % 70, i);
        }
        n += (size_t) sprintf(body + n, "},\"model\":\"m\"}");

        bad += !ut_same(&ut_request, body, n);
    }

    tap_is_int(bad, 0, "nesting about the bound, many keys");

    /* every name the request looks for, and names one byte off them */

    bad = 0;

    for (k = 0; k < sizeof(ut_names) / sizeof(ut_names[0]); k++) {
        for (i = 0; i <= strlen(ut_names[k]) + 1; i++) {
            char  name[64];

            (void) snprintf(name, sizeof(name), "%s", ut_names[k]);

            if (i < strlen(name)) {
                name[i] ^= 0x01;            /* one byte off */

            } else if (i == strlen(name)) {
                name[i - 1] = '\0';         /* one byte short */
            }                               /* else the name itself */

            n = (size_t) sprintf(body, "{\"%s\":[\"abc\",{\"image\":1,"
                                 "\"x\":\"de\"},7],\"y\":\"z\"}", name);
            bad += !ut_same(&ut_request, body, n);

            n = (size_t) sprintf(body, "{\"%s\":\"gpt\",\"q\":1}", name);
            bad += !ut_same(&ut_request, body, n);

            n = (size_t) sprintf(body, "{\"%s\":{\"include_usage\":1}}",
                                 name);
            bad += !ut_same(&ut_request, body, n);
        }
    }

    tap_is_int(bad, 0, "the request's names, and names one byte off");

    /*
     * The names in another case, or with a letter Go's encoding/json
     * folds to theirs (the Kelvin sign for k, the long s for s, the
     * Turkish capital I and dotless i for i): the members read and the
     * places of prompt text are refused by both scans alike.
     */

    bad = 0;

    for (k = 0; k < sizeof(ut_names) / sizeof(ut_names[0]); k++) {
        for (i = 0; i < 2 * strlen(ut_names[k]); i++) {
            int             before;
            size_t          j, at;
            al_llm_body_t   b;
            char            name[96], d[AL_DETAIL_MAX];
            const char     *sub;

            before = bad;
            at = i / 2;
            sub = NULL;

            switch (ut_names[k][at]) {
            case 'k':
                sub = "\xe2\x84\xaa";
                break;
            case 's':
                sub = "\xc5\xbf";
                break;
            case 'i':
                sub = i % 2 ? "\xc4\xb0" : "\xc4\xb1";
                break;
            }

            if (i % 2 == 0 || sub == NULL) {
                if (ut_names[k][at] < 'a' || ut_names[k][at] > 'z') {
                    continue;
                }

                sub = NULL;
            }

            n = 0;

            for (j = 0; ut_names[k][j] != '\0'; j++) {
                if (j != at) {
                    name[n++] = ut_names[k][j];

                } else if (sub != NULL) {
                    n += (size_t) sprintf(name + n, "%s", sub);

                } else {
                    name[n++] = (char) (ut_names[k][j] - 'a' + 'A');
                }
            }

            name[n] = '\0';

            n = (size_t) sprintf(body, "{\"%s\":1,\"q\":1}", name);
            bad += !ut_same(&ut_request, body, n)
                   || !ut_same(&ut_usage, body, n)
                   || al_llm_body_scan((const unsigned char *) body, n,
                                       &b, d, sizeof(d))
                      == 0;

            n = (size_t) sprintf(body, "{\"stream_options\":{\"%s\":1}}",
                                 name);
            bad += !ut_same(&ut_request, body, n)
                   || al_llm_body_scan((const unsigned char *) body, n, &b,
                                       d, sizeof(d))
                      != 0;

            if (bad != before) {
                tap_diag("name ", name);
                break;
            }
        }
    }

    {
        static const char *const  so[] = {
            "Include_usage", "include_u\xc5\xbf" "age",
            "\xc4\xb0nclude_usage", "INCLUDE_USAGE"
        };

        for (k = 0; k < sizeof(so) / sizeof(so[0]); k++) {
            al_llm_body_t  b;
            char           d[AL_DETAIL_MAX];

            n = (size_t) sprintf(body, "{\"stream_options\":{\"%s\":1},"
                                 "\"tools\":[{\"%s\":1}]}", so[k], so[k]);
            bad += !ut_same(&ut_request, body, n)
                   || al_llm_body_scan((const unsigned char *) body, n, &b,
                                       d, sizeof(d))
                      == 0;

            n = (size_t) sprintf(body, "{\"tools\":[{\"typ%s\":1}]}",
                                 k % 2 ? "E" : "e");
            bad += !ut_same(&ut_request, body, n)
                   || (al_llm_body_scan((const unsigned char *) body, n, &b,
                                        d, sizeof(d))
                       == 0) == (k % 2);
        }
    }

    tap_is_int(bad, 0, "the request's names in another case: the members "
               "read refused, by both scans");

    /* what the tools record: families, the first span of each */

    {
        al_llm_body_t   b;
        const char     *t;
        char            d[AL_DETAIL_MAX];

        t = UT_TOOLS;
        n = strlen(t);

        tap_ok(al_llm_body_scan((const unsigned char *) t, n, &b, d,
                                sizeof(d)) == 0
               && b.tools == ((UINT32_C(1) << AL_LLM_PT_MCP)
                              | (UINT32_C(1) << AL_LLM_PT_WEB_SEARCH)
                              | (UINT32_C(1) << AL_LLM_PT_UNKNOWN)
                              | (UINT32_C(1) << AL_LLM_PT_NOT_OBJECT)
                              | (UINT32_C(1) << AL_LLM_PT_UNTYPED)
                              | (UINT32_C(1) << AL_LLM_PT_ANONYMOUS))
               && b.tool_len[AL_LLM_PT_ANONYMOUS] == 2
               && memcmp(t + b.tool_at[AL_LLM_PT_ANONYMOUS], "{}]", 3) == 0
               && b.tool_len[AL_LLM_PT_MCP] == 5
               && memcmp(t + b.tool_at[AL_LLM_PT_MCP], "\"mcp\"", 5) == 0
               && memcmp(t + b.tool_at[AL_LLM_PT_WEB_SEARCH],
                         "\"web_search_pr\\u0065view\"", 23) == 0
               && memcmp(t + b.tool_at[AL_LLM_PT_NOT_OBJECT], "\"x\"", 3)
                  == 0
               && memcmp(t + b.tool_at[AL_LLM_PT_UNKNOWN], "null", 4) == 0
               && b.tool_len[AL_LLM_PT_UNTYPED] == 12
               && memcmp(t + b.tool_at[AL_LLM_PT_UNTYPED], "{\"name\":\"f\"}",
                         12) == 0
               && b.f[AL_LLM_F_WEB_SEARCH_OPTIONS].type == AL_LLM_JT_OBJECT
               && b.f[AL_LLM_F_MCP_SERVERS].type == AL_LLM_JT_ARRAY
               && b.f[AL_LLM_F_TOOLS].type == AL_LLM_JT_ARRAY,
               "tools: the families of the elements and where each first "
               "is");

        t = "{\"tools\":[{\"type\":\"custom\",\"name\":\"g\"},{\"type\":"
            "\"function\",\"x\":{\"name\":1}},{\"function\":{},\"type\":"
            "\"function\"}]}";
        tap_ok(al_llm_body_scan((const unsigned char *) t, strlen(t), &b, d,
                                sizeof(d)) == 0
               && b.tools == (UINT32_C(1) << AL_LLM_PT_UNNAMED)
               && b.tool_len[AL_LLM_PT_UNNAMED] == 10
               && memcmp(t + b.tool_at[AL_LLM_PT_UNNAMED], "\"function\"",
                         10) == 0
               && t + b.tool_at[AL_LLM_PT_UNNAMED]
                  == strstr(t, "\"function\",\"x\""),
               "tools: a function of no function, custom or name noted");

        t = "{\"tools\":{\"type\":\"mcp\"},\"x\":{\"tools\":[{\"type\":"
            "\"mcp\"}]}}";
        tap_ok(al_llm_body_scan((const unsigned char *) t, strlen(t), &b, d,
                                sizeof(d)) == 0
               && b.tools == 0
               && b.f[AL_LLM_F_TOOLS].type == AL_LLM_JT_OBJECT,
               "tools: only the elements of the body's own list are read");
    }

    free(body);

    /* the members' list: sorted by length and name, indexed by length */

    bad = 0;

    for (i = 0; al_llm_scan_members[i].name.data != NULL; i++) {
        const al_llm_member_t  *m = &al_llm_scan_members[i];

        n = m->name.len;

        if (n != strlen(m->name.data) || n < 4 || n > AL_LLM_MEMBER_LONGEST
            || i < al_llm_scan_member_first[n]
            || i >= al_llm_scan_member_first[n + 1]
            || m->eps == 0
            || (m->eps & ~(AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS
                           | AL_LLM_M_EMBEDDINGS | AL_LLM_M_RESPONSES
                           | AL_LLM_M_MESSAGES)) != 0
            || (i > 0
                && (al_llm_scan_members[i - 1].name.len > n
                    || (al_llm_scan_members[i - 1].name.len == n
                        && strcmp(al_llm_scan_members[i - 1].name.data,
                                  m->name.data) >= 0)))
            || al_llm_member_eps(m->name.data, n) != m->eps
            || al_llm_member_refused(m->name.data, n) != NULL)
        {
            tap_diag("member ", m->name.data);
            bad++;
        }
    }

    tap_ok(bad == 0 && i == al_llm_scan_member_first[AL_LLM_MEMBER_LONGEST
                                                     + 1],
           "members: sorted, indexed by length, none the gateway reads");

    /*
     * The gateway's own names: on every endpoint, never listed; but
     * "prediction", chat's, and "prompt", completions', whose checks
     * let allow_members add them elsewhere
     */

    bad = 0;

    for (i = 0; ut_fields[i] != NULL; i++) {
        if (al_llm_member_eps(ut_fields[i], strlen(ut_fields[i]))
            != (AL_LLM_M_CHAT | AL_LLM_M_COMPLETIONS | AL_LLM_M_EMBEDDINGS
                | AL_LLM_M_RESPONSES | AL_LLM_M_MESSAGES)
            || (al_llm_member_refused(ut_fields[i], strlen(ut_fields[i]))
                == NULL)
               != (strcmp(ut_fields[i], "prediction") == 0
                   || strcmp(ut_fields[i], "context_management") == 0
                   || strcmp(ut_fields[i], "prompt") == 0))
        {
            tap_diag("field ", ut_fields[i]);
            bad++;
        }
    }

    tap_is_int(bad, 0, "members: the names the gateway reads pass its "
               "checks, and allow_members may not list them");

    /*
     * Other servers' thinking members: fields of the one scan, read by
     * the loop and by the recursive scan alike (an object of 63 keys
     * fills the loop's stack of keys), yet keys of no endpoint's list,
     * unlisted unless allow_members lists them exactly, and no names a
     * key must not be in another case (a key in another case is an
     * unlisted key); allow_members may list them in lower case only
     * (al_llm_member_refused()), and think_members has a bit for each.
     */

    bad = 0;

    for (i = 0; i < sizeof(ut_thinks) / sizeof(ut_thinks[0]); i++) {
        al_str_t  m;

        m.data = (char *) ut_thinks[i];
        m.len = strlen(ut_thinks[i]);

        if (ut_think(ut_thinks[i], AL_LLM_F_THINKING_BUDGET + (unsigned) i,
                     62)
               != 0
            || ut_think(ut_thinks[i],
                        AL_LLM_F_THINKING_BUDGET + (unsigned) i, 63)
               != 0
            || al_llm_member_eps(m.data, m.len) != 0
            || al_llm_member_refused(m.data, m.len) != NULL
            || al_llm_members_think(&m, 1) != 1u << i)
        {
            tap_diag("thinking member ", ut_thinks[i]);
            bad++;
        }
    }

    tap_is_int(bad, 0, "members: other servers' thinking members, read "
               "only as allow_members lists them");

    return tap_done();
}


/*
 * The body {"model":"m","response_format":{keys keys},NAME:[1,{"a":2}]}
 * to an entry that lists no member, then to one that lists NAME, with
 * NAME as it is and with its first letter in upper case: 0 when each
 * reads as it should (NAME recorded at id, the first unlisted member
 * unless listed; the loader would refuse to list it in upper case),
 * else 1.
 */

static int
ut_think(const char *name, unsigned id, size_t keys)
{
    int             rc, up;
    char            body[1024], key[64], d[AL_DETAIL_MAX];
    size_t          i, n, at, klen;
    al_str_t        listed;
    al_llm_t        none, one;
    al_llm_body_t   b;
    const al_llm_jfield_t  *f;

    memset(&none, 0, sizeof(none));
    memset(&one, 0, sizeof(one));
    one.allow_members = &listed;
    one.nallow_members = 1;

    for (up = 0; up <= 1; up++) {
        klen = (size_t) snprintf(key, sizeof(key), "%s", name);
        key[0] = (char) (up ? key[0] - 'a' + 'A' : key[0]);
        listed.data = key;
        listed.len = klen;

        n = (size_t) snprintf(body, sizeof(body), "{\"model\":\"m\","
                              "\"response_format\":{");

        for (i = 0; i < keys; i++) {
            n += (size_t) snprintf(body + n, sizeof(body) - n,
                                   "%s\"k%zu\":0", i ? "," : "", i);
        }

        at = n + 3;
        n += (size_t) snprintf(body + n, sizeof(body) - n,
                               "},\"%s\":[1,{\"a\":2}]}", key);

        rc = al_llm_body_scan_ep(&none, AL_LLM_EP_CHAT,
                                 (const unsigned char *) body, n, &b, d,
                                 sizeof(d));
        f = &b.f[id];

        if (rc != 0
            || f->type != (up ? AL_LLM_JT_NONE : AL_LLM_JT_ARRAY)
            || (!up && (f->at != at + klen + 2 || f->len != 11))
            || b.unlisted.type != AL_LLM_JT_STRING
            || b.unlisted.at != at || b.unlisted.len != klen)
        {
            return 1;
        }

        rc = al_llm_body_scan_ep(&one, AL_LLM_EP_CHAT,
                                 (const unsigned char *) body, n, &b, d,
                                 sizeof(d));

        if (rc != 0 || b.unlisted.type != AL_LLM_JT_NONE
            || (!up && b.f[id].type != AL_LLM_JT_ARRAY)
            || (up && al_llm_member_refused(key, klen) == NULL))
        {
            return 1;
        }
    }

    return 0;
}
