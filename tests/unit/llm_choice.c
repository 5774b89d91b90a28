/*
 * The request check of "tool_choice" (al_llm_req_tool_choice()) over many
 * shapes: strings, objects with escapes, bytes past ASCII, keys in
 * another case ("Type", "TOOLS", a long s), duplicate keys, allowed_tools
 * in the chat and the responses shapes, nested objects, a "type" that is
 * no string, null; on chat, responses, messages and completions (where an
 * entry's allow_members lets it pass).
 *
 * Each shape is decided twice: as sent, and with a member of many keys
 * beside it, which sends the whole body to the recursive scan (the loop
 * stops at AL_LLM_SCAN_KEYS keys open at once); both must decide the
 * same.  The verdicts are those of the code before the body scan read
 * the choice (a second scan of the member, then jansson's tree): the
 * table below names each; the generated shapes, too many to list, are
 * checked against the digest of their verdicts then.  To see which
 * differ, run this test with LLM_CHOICE_DUMP=file on both commits and
 * compare the files.
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "tap.h"


#define S(s)  { s, sizeof(s) - 1 }

/* where a choice is sent */
enum {
    CT_RESPONSES = 0,                   /* openai, web_search allowed */
    CT_CHAT,                            /* openai */
    CT_MESSAGES,                        /* anthropic */
    CT_COMPLETIONS,                     /* allow_members: tool_choice */
    CT_MAX
};

#define LONG40  "abcdefghijklmnopqrstuvwxyzabcdefghijklmn"


static void decide(unsigned ctx, const char *choice, unsigned pad,
    al_llm_req_t *out);
static int same(const al_llm_req_t *a, const al_llm_req_t *b);
static void digest(uint64_t *h, const void *p, size_t n);
static void test_table(void);
static void test_generated(void);
static void test_many_keys(void);
static void test_cut(void);


static al_client_t  c_tools = { .name = S("tools") };

static al_str_t  oai_models[] = { S("gpt-4o") };
static al_str_t  ant_models[] = { S("claude-sonnet-4-5") };

static al_llm_client_t  clients[] = { { .client = &c_tools } };

static al_str_t  members[] = { S("x") };
static al_str_t  members_tc[] = { S("x"), S("tool_choice") };

static al_llm_t  oai = {
    .name = S("openai"), .prefix = S("/v1/proxy/openai"),
    .kind = AL_LLM_OPENAI, .upstream = { .base_path = S("/v1") },
    .models = oai_models, .nmodels = 1, .clients = clients,
    .nclients = 1, .body_max = 65536, .allow_members = members,
    .nallow_members = 1
};

static al_llm_t  oai_web = {
    .name = S("openai"), .prefix = S("/v1/proxy/openai"),
    .kind = AL_LLM_OPENAI, .upstream = { .base_path = S("/v1") },
    .models = oai_models, .nmodels = 1, .clients = clients,
    .nclients = 1, .body_max = 65536, .allow_members = members,
    .nallow_members = 1,
    .provider_tools = UINT32_C(1) << AL_LLM_PT_WEB_SEARCH
};

static al_llm_t  compat_tc = {
    .name = S("ollama"), .prefix = S("/v1/proxy/ollama"),
    .kind = AL_LLM_OPENAI_COMPATIBLE, .upstream = { .base_path = S("/v1") },
    .models = oai_models, .nmodels = 1, .clients = clients,
    .nclients = 1, .body_max = 65536, .allow_members = members_tc,
    .nallow_members = 2
};

static al_llm_t  ant = {
    .name = S("anthropic"), .prefix = S("/v1/proxy/anthropic"),
    .kind = AL_LLM_ANTHROPIC, .upstream = { .base_path = S("/v1") },
    .models = ant_models, .nmodels = 1, .clients = clients,
    .nclients = 1, .body_max = 65536, .allow_members = members,
    .nallow_members = 1
};

static const char *const  ctx_names[CT_MAX] = {
    "responses", "chat", "messages", "completions"
};

/* what each shape decides, as the code before decided it */
static const struct {
    unsigned     ctx;
    const char  *choice;
    const char  *want;                  /* the detail; "": allowed */
} table[] = {
#include "llm_choice_table.h"
};

/* the generated shapes' keys and values (JSON text) */
static const char *const  keys[] = {
    "\"type\"", "\"Type\"", "\"TYPE\"", "\"typ\\u0065\"", "\"\\u0054ype\"",
    "\"tools\"", "\"Tools\"", "\"tool\xc5\xbf\"", "\"tool\\u017f\"",
    "\"allowed_tools\"", "\"Allowed_Tools\"", "\"allowed_tool\\u017F\"",
    "\"function\"", "\"name\"", "\"x\xc3\xa9\"", "\"Typ\xc3\xa9\"",
    "\"mode\""
};

static const char *const  values[] = {
    "\"function\"", "\"custom\"", "\"auto\"", "\"tool\"", "\"mcp\"",
    "\"web_search_preview\"", "\"file_search\"", "\"allowed_tools\"",
    "\"\\u0061llowed_tools\"", "\"fun\\u0063tion\"", "\"m\\u0063p\"",
    "\"frobnicate\"", "\"f\xc3\xa9\"", "\"f\\u00e9\"", "\"Function\"",
    "\"\"", "\"" LONG40 LONG40 "\"", "\"web_search_\\u0078" LONG40 LONG40
    "\"",
    /* the strings end here (NSTRINGS) */
    "1", "null", "true", "{}", "{\"type\":\"mcp\"}", "[]",
    "[{\"type\":\"mcp\"}]", "[{\"type\":\"web_search_preview\"}]",
    "[{\"type\":\"function\",\"name\":\"f\"},{\"name\":\"g\"}]",
    "{\"tools\":[{\"type\":\"file_search\"}]}", "{\"Tools\":[]}",
    "[\"x\"]"
};

#define NKEYS     (sizeof(keys) / sizeof(keys[0]))
#define NVALUES   (sizeof(values) / sizeof(values[0]))
#define NSTRINGS  18

/*
 * The digest of the generated shapes' verdicts (digest()), and their
 * number, as the code before decided them.
 */
#define GEN_DIGEST  UINT64_C(0xee34cfcca6373b58)
#define GEN_COUNT   263232

static FILE  *dump;


int
main(void)
{
    const char  *path;

    path = getenv("LLM_CHOICE_DUMP");
    dump = (path != NULL) ? fopen(path, "w") : NULL;

    test_table();
    test_generated();
    test_many_keys();
    test_cut();

    if (dump != NULL) {
        (void) fclose(dump);
    }

    return tap_done();
}


/*
 * The request of ctx with choice as its "tool_choice"; pad: and a member
 * of 62 keys, which with the body's others is more than the scan's loop
 * keeps at once, so that the recursive scan reads the body.
 */

static void
decide(unsigned ctx, const char *choice, unsigned pad, al_llm_req_t *out)
{
    int              n;
    size_t           i;
    char             body[8192], padding[1024];
    const al_llm_t  *llm;
    al_llm_endpoint_t  ep;

    padding[0] = '\0';

    if (pad) {
        n = snprintf(padding, sizeof(padding), ",\"x\":{");

        for (i = 0; i < 62; i++) {
            n += snprintf(padding + n, sizeof(padding) - (size_t) n,
                          "%s\"k%zu\":0", i ? "," : "", i);
        }

        (void) snprintf(padding + n, sizeof(padding) - (size_t) n, "}");
    }

    switch (ctx) {

    case CT_RESPONSES:
        llm = &oai_web;
        ep = AL_LLM_EP_RESPONSES;
        (void) snprintf(body, sizeof(body), "{\"model\":\"gpt-4o\","
                        "\"input\":\"x\",\"tool_choice\":%s%s}", choice,
                        padding);
        break;

    case CT_CHAT:
        llm = &oai;
        ep = AL_LLM_EP_CHAT;
        (void) snprintf(body, sizeof(body), "{\"model\":\"gpt-4o\","
                        "\"messages\":[],\"tool_choice\":%s%s}", choice,
                        padding);
        break;

    case CT_MESSAGES:
        llm = &ant;
        ep = AL_LLM_EP_MESSAGES;
        (void) snprintf(body, sizeof(body), "{\"model\":"
                        "\"claude-sonnet-4-5\",\"max_tokens\":10,"
                        "\"messages\":[],\"tool_choice\":%s%s}", choice,
                        padding);
        break;

    default:
        llm = &compat_tc;
        ep = AL_LLM_EP_COMPLETIONS;
        (void) snprintf(body, sizeof(body), "{\"model\":\"gpt-4o\","
                        "\"prompt\":\"x\",\"tool_choice\":%s%s}", choice,
                        padding);
        break;
    }

    (void) al_llm_request(llm, &clients[0], ep, "application/json", 16,
                          (const unsigned char *) body, strlen(body), out);
}


static int
same(const al_llm_req_t *a, const al_llm_req_t *b)
{
    return a->reason == b->reason && strcmp(a->detail, b->detail) == 0;
}


/* FNV-1a, 64 bits */

static void
digest(uint64_t *h, const void *p, size_t n)
{
    size_t               i;
    const unsigned char  *s;

    s = p;

    for (i = 0; i < n; i++) {
        *h ^= s[i];
        *h *= UINT64_C(0x100000001b3);
    }
}


static void
test_table(void)
{
    int           ok, bad, pad_bad;
    size_t        i;
    al_llm_req_t  r, p;

    memset(&r, 0, sizeof(r));
    memset(&p, 0, sizeof(p));

    bad = 0;
    pad_bad = 0;

    for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        decide(table[i].ctx, table[i].choice, 0, &r);
        decide(table[i].ctx, table[i].choice, 1, &p);

        if (dump != NULL) {
            fprintf(dump, "%s %s -> %d %s\n", ctx_names[table[i].ctx],
                    table[i].choice, (int) r.reason, r.detail);
        }

        ok = (table[i].want[0] == '\0')
             ? r.reason == AL_REASON_NONE
             : r.reason == AL_REASON_BODY
               && strcmp(r.detail, table[i].want) == 0;

        if (!ok) {
            tap_diag("shape: ", table[i].choice);
            tap_diag("on: ", ctx_names[table[i].ctx]);
            tap_diag("want: ", table[i].want);
            tap_diag("got: ", r.detail);
            bad++;
        }

        if (!same(&r, &p)) {
            tap_diag("shape, padded: ", table[i].choice);
            tap_diag("got: ", p.detail);
            pad_bad++;
        }

        al_llm_request_free(&r);
        al_llm_request_free(&p);
    }

    tap_ok(bad == 0, "tool_choice: each shape of the table decided as "
           "before");
    tap_ok(pad_bad == 0, "tool_choice: the recursive scan decides the "
           "table the same");
}


/*
 * Objects of one member (every key with every value), of two ("type"
 * with each value, then or before each member; a key in another case
 * then or before each member), and the strings alone, in each place.
 */

static void
test_generated(void)
{
    int            bad;
    size_t         i, j, k, v, count;
    unsigned       ctx, order;
    uint64_t       h;
    al_llm_req_t   r, p;
    unsigned char  rb;
    char           choice[600], first[256], second[256];

    memset(&r, 0, sizeof(r));
    memset(&p, 0, sizeof(p));

    h = UINT64_C(0xcbf29ce484222325);
    count = 0;
    bad = 0;

    /* i: the first member's pick, j the second's, 0 none */

    for (i = 0; i <= NVALUES + 2 * NKEYS; i++) {
        for (j = 0; j <= NKEYS * NVALUES; j++) {
            for (order = 0; order < 2; order++) {

                if (i == 0) {
                    /* a single member, or a string choice */

                    if (order == 1) {
                        continue;
                    }

                    if (j == 0) {
                        continue;
                    }

                    k = (j - 1) / NVALUES;
                    v = (j - 1) % NVALUES;

                    (void) snprintf(choice, sizeof(choice), "{%s:%s}",
                                    keys[k], values[v]);

                } else if (i <= NVALUES) {
                    if (j == 0) {
                        if (order == 1 || i > NSTRINGS) {
                            continue;
                        }

                        (void) snprintf(choice, sizeof(choice), "%s",
                                        values[i - 1]);

                    } else {
                        (void) snprintf(first, sizeof(first),
                                        "\"type\":%s", values[i - 1]);
                        k = (j - 1) / NVALUES;
                        v = (j - 1) % NVALUES;
                        (void) snprintf(second, sizeof(second), "%s:%s",
                                        keys[k], values[v]);
                        (void) snprintf(choice, sizeof(choice), "{%s,%s}",
                                        order ? second : first,
                                        order ? first : second);
                    }

                } else {

                    /* a key (in another case, or not) with a string or
                       a list, beside each member */

                    if (j == 0) {
                        continue;
                    }

                    k = (i - NVALUES - 1) % NKEYS;
                    (void) snprintf(first, sizeof(first), "%s:%s",
                                    keys[k],
                                    (i - NVALUES - 1) < NKEYS
                                    ? "\"mcp\"" : "[{\"type\":\"mcp\"}]");
                    k = (j - 1) / NVALUES;
                    v = (j - 1) % NVALUES;
                    (void) snprintf(second, sizeof(second), "%s:%s",
                                    keys[k], values[v]);
                    (void) snprintf(choice, sizeof(choice), "{%s,%s}",
                                    order ? second : first,
                                    order ? first : second);
                }

                for (ctx = 0; ctx < CT_MAX; ctx++) {
                    decide(ctx, choice, 0, &r);

                    count++;
                    rb = (unsigned char) r.reason;
                    digest(&h, &rb, 1);
                    digest(&h, r.detail, strlen(r.detail) + 1);

                    if (dump != NULL) {
                        fprintf(dump, "%s %s -> %d %s\n", ctx_names[ctx],
                                choice, (int) r.reason, r.detail);
                    }

                    /* the recursive scan: in one place (it does not
                       know the endpoint) */

                    if (ctx == CT_RESPONSES) {
                        decide(ctx, choice, 1, &p);

                        if (!same(&r, &p) && bad++ < 5) {
                            tap_diag("shape, padded: ", choice);
                            tap_diag("want: ", r.detail);
                            tap_diag("got: ", p.detail);
                        }

                        al_llm_request_free(&p);
                    }

                    al_llm_request_free(&r);
                }
            }
        }
    }

    if (dump != NULL) {
        fprintf(dump, "count %zu digest 0x%016" PRIx64 "\n", count, h);
    }

    tap_ok(bad == 0, "tool_choice: the recursive scan decides the "
           "generated shapes the same");
    tap_ok(count == GEN_COUNT, "tool_choice: the generated shapes");
    tap_ok(h == GEN_DIGEST, "tool_choice: the generated shapes decided "
           "as before (their digest)");
}


/*
 * Objects of many keys: past what the scan's loop keeps at once (its
 * keys grow, and go back), past the count whose duplicates it compares
 * (AL_LLM_SCAN_KEYS: then jansson's check of the body).
 */

static void
test_many_keys(void)
{
    int           bad;
    size_t        i, j, k, n;
    al_llm_req_t  r, p;
    char          choice[4096], want[AL_DETAIL_MAX];

    static const size_t  counts[] = { 1, 58, 60, 61, 62, 63, 64, 65, 66,
                                      70, 130 };
    static const char *const  types[] = { "function", "mcp", "Type" };

    memset(&r, 0, sizeof(r));
    memset(&p, 0, sizeof(p));

    bad = 0;

    for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        for (k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
            n = (size_t) snprintf(choice, sizeof(choice),
                                  "{\"type\":\"%s\"",
                                  k == 1 ? "mcp" : "function");

            for (j = 0; j + 1 < counts[i] && n < sizeof(choice) - 64; j++) {
                n += (size_t) snprintf(choice + n, sizeof(choice) - n,
                                       ",\"k%zu\":{\"a\":[%zu]}", j, j);
            }

            (void) snprintf(choice + n, sizeof(choice) - n, "%s}",
                            k == 2 ? ",\"Type\":\"mcp\"" : "");

            want[0] = '\0';

            if (k == 1) {
                (void) snprintf(want, sizeof(want), "tool type \"mcp\" in "
                                "\"tool_choice\" is run by the provider; "
                                "the policy does not allow it "
                                "(provider_tools: mcp)");

            } else if (k == 2) {
                (void) snprintf(want, sizeof(want), "key \"Type\" in "
                                "\"tool_choice\" differs from \"type\" "
                                "only by case");
            }

            decide(CT_RESPONSES, choice, 0, &r);
            decide(CT_RESPONSES, choice, 1, &p);

            if (strcmp(r.detail, want) != 0 || !same(&r, &p)) {
                tap_diag("shape: ", choice);
                tap_diag("want: ", want);
                tap_diag("got: ", r.detail);
                tap_diag("padded: ", p.detail);
                bad++;
            }

            al_llm_request_free(&r);
            al_llm_request_free(&p);
        }
    }

    tap_ok(bad == 0, "tool_choice: objects of many keys decided as "
           "before, by the loop and by the recursive scan");
}


/*
 * A body cut anywhere, in a buffer of its length alone (the sanitizers
 * see a read past it): refused, as a JSON text cut short is.
 */

static void
test_cut(void)
{
    int            bad;
    size_t         i, k, len;
    char          *p;
    al_llm_req_t   r;

    static const char *const  bodies[] = {
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":\"auto\"}",
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":"
        "\"web_se\\u0061rch\"}",
        "{\"model\":\"gpt-4o\",\"input\":\"x\",\"tool_choice\":{\"typ\\u0065"
        "\":\"mcp\",\"Tools\":[{\"type\":\"mcp\"}],\"x\":{\"Type\":1}}}"
    };

    memset(&r, 0, sizeof(r));

    bad = 0;

    for (k = 0; k < sizeof(bodies) / sizeof(bodies[0]); k++) {
        len = strlen(bodies[k]);

        for (i = 1; i < len; i++) {
            p = malloc(i);
            if (p == NULL) {
                abort();
            }

            memcpy(p, bodies[k], i);

            (void) al_llm_request(&oai_web, &clients[0],
                                  AL_LLM_EP_RESPONSES, "application/json",
                                  16, (const unsigned char *) p, i, &r);

            if (r.reason != AL_REASON_BODY) {
                tap_diag("cut: ", bodies[k]);
                bad++;
            }

            al_llm_request_free(&r);
            free(p);
        }
    }

    tap_ok(bad == 0, "tool_choice: a body cut short is refused");
}
