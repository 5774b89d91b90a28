/*
 * libFuzzer target for the agent's reading of the model's answer
 * (agent/ag_llm.c: ag_llm_write, ag_llm_line, ag_llm_delta, ag_llm_args),
 * the text/event-stream the LLM gateway relays from the model: its text
 * and its tool calls, their arguments sent a piece at a time.  The model
 * shapes it, and prompt injection shapes the model.
 *
 * Input: bytes 0-1 a split point; the rest is the stream, as curl hands
 * it to ag_llm_write: whole, as two pieces cut at the point, and a byte
 * at a time.  Besides the sanitizers it checks:
 *
 *   - the result (text, tool calls and their arguments, finish reason,
 *     tokens, error, "[DONE]", the delta events sent) is the same however
 *     the stream is cut;
 *   - the text is at most AG_CONTENT_MAX bytes, and the delta events add
 *     up to it; at most AG_CALLS_MAX tool calls, each with string id,
 *     name and arguments, the arguments at most AG_ARGS_MAX bytes;
 *   - the text, each call's id, name and arguments hold no NUL (the
 *     agent reads them as C strings);
 *   - the error is a NUL-terminated string within its buffer.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>


static CURLcode fuzz_getinfo(CURL *curl, CURLINFO info, long *v);

/* the answer's status, as curl would report it: always 200 here */
#undef curl_easy_getinfo
#define curl_easy_getinfo(c, i, v)  fuzz_getinfo(c, i, v)

#include "ag_llm.c"

#undef curl_easy_getinfo


typedef struct {
    int              failed;
    int              done;
    int              stopped;               /* a write returned short */
    char            *content;
    size_t           content_len;
    char            *calls;                 /* the tool calls, dumped */
    char             finish[32];
    long             tokens;
    char             error[AG_ERRBODY_MAX];
    char            *deltas;                /* the delta events' text */
    size_t           deltas_len;
} fuzz_result_t;


volatile sig_atomic_t  ag_stopping;
volatile sig_atomic_t  ag_left;

static fuzz_result_t  *fuzz_current;


static CURLcode
fuzz_getinfo(CURL *curl, CURLINFO info, long *v)
{
    (void) curl;
    (void) info;

    *v = 200;

    return CURLE_OK;
}


int64_t
ag_now_ms(void)
{
    return 0;
}


void
ag_event(ag_run_t *run, const char *type, json_t *data)
{
    json_t         *t;
    size_t          n;
    fuzz_result_t  *r;

    (void) run;

    r = fuzz_current;

    if (strcmp(type, "delta") != 0) {
        abort();
    }

    t = json_object_get(data, "text");
    if (!json_is_string(t)) {
        abort();
    }

    n = json_string_length(t);
    r->deltas = realloc(r->deltas, r->deltas_len + n + 1);
    if (r->deltas == NULL) {
        abort();
    }

    memcpy(r->deltas + r->deltas_len, json_string_value(t), n);
    r->deltas_len += n;

    json_decref(data);
}


static int
fuzz_nul(json_t *s)
{
    return strlen(json_string_value(s)) != json_string_length(s);
}


/*
 * what ag_llm_call() does around curl_easy_perform(): the stream in
 * pieces, the first of first bytes, each other of piece bytes
 */

static void
fuzz_parse(const char *p, size_t size, size_t first, size_t piece,
    fuzz_result_t *r)
{
    size_t            i, off, n;
    json_t           *tc, *v;
    ag_run_t          run;
    ag_llm_ctx_t      ctx;
    ag_llm_result_t   res;

    memset(r, 0, sizeof(*r));
    memset(&run, 0, sizeof(run));
    memset(&res, 0, sizeof(res));
    memset(&ctx, 0, sizeof(ctx));

    res.total_tokens = -1;
    res.tool_calls = json_array();
    res.status = 200;
    ctx.run = &run;
    ctx.res = &res;

    fuzz_current = r;

    for (off = 0; off < size; off += n) {
        n = (off == 0) ? first : piece;
        n = size - off < n ? size - off : n;

        if (ag_llm_write((char *) p + off, 1, n, &ctx) != n) {
            r->stopped = 1;
            break;
        }
    }

    if (ctx.line_len && !ctx.failed) {
        ag_llm_line(&ctx, ctx.line, ctx.line_len);
    }

    if (ag_llm_args(&ctx) != 0 && !ctx.failed) {
        abort();
    }

    if (memchr(res.error, '\0', sizeof(res.error)) == NULL
        || memchr(res.finish, '\0', sizeof(res.finish)) == NULL)
    {
        abort();
    }

    if (res.content_len > AG_CONTENT_MAX
        || (res.content_len && strlen(res.content) != res.content_len))
    {
        abort();
    }

    if (!ctx.failed
        && (r->deltas_len != res.content_len
            || (res.content_len
                && memcmp(r->deltas, res.content, res.content_len) != 0)))
    {
        abort();
    }

    if (json_array_size(res.tool_calls) > AG_CALLS_MAX) {
        abort();
    }

    json_array_foreach(res.tool_calls, i, tc) {
        if (!json_is_string(json_object_get(tc, "id"))
            || !json_is_string(json_object_get(tc, "name")))
        {
            abort();
        }

        v = json_object_get(tc, "arguments");
        if (!json_is_string(v) || json_string_length(v) > AG_ARGS_MAX) {
            abort();
        }

        /* C strings to the agent: no NUL in them ends one early */
        if (fuzz_nul(json_object_get(tc, "id"))
            || fuzz_nul(json_object_get(tc, "name")) || fuzz_nul(v))
        {
            abort();
        }
    }

    r->failed = ctx.failed;
    r->done = ctx.done;
    r->content = res.content;
    r->content_len = res.content_len;
    r->calls = json_dumps(res.tool_calls, JSON_COMPACT | JSON_SORT_KEYS);
    memcpy(r->finish, res.finish, sizeof(r->finish));
    r->tokens = res.total_tokens;
    memcpy(r->error, res.error, sizeof(r->error));

    res.content = NULL;
    json_decref(res.tool_calls);
    free(ctx.line);
    free(ctx.raw);

    for (i = 0; i < AG_CALLS_MAX; i++) {
        free(ctx.args[i].data);
    }
}


static void
fuzz_same(const fuzz_result_t *a, const fuzz_result_t *b)
{
    if (a->failed != b->failed || a->done != b->done
        || a->content_len != b->content_len
        || (a->content_len
            && memcmp(a->content, b->content, a->content_len) != 0)
        || strcmp(a->calls, b->calls) != 0
        || strcmp(a->finish, b->finish) != 0
        || a->tokens != b->tokens
        || strcmp(a->error, b->error) != 0
        || a->deltas_len != b->deltas_len
        || (a->deltas_len
            && memcmp(a->deltas, b->deltas, a->deltas_len) != 0))
    {
        abort();
    }
}


static void
fuzz_free(fuzz_result_t *r)
{
    free(r->content);
    free(r->calls);
    free(r->deltas);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t          split;
    const char     *p;
    fuzz_result_t   whole, cut, bytes;

    if (size < 2) {
        return 0;
    }

    split = (size_t) data[0] << 8 | data[1];
    p = (const char *) data + 2;
    size -= 2;
    split = size ? split % size + 1 : 1;     /* 1 to size */

    fuzz_parse(p, size, size, size, &whole);

    fuzz_parse(p, size, split, size, &cut);
    fuzz_same(&whole, &cut);

    if (size <= 1024) {
        fuzz_parse(p, size, 1, 1, &bytes);
        fuzz_same(&whole, &bytes);
        fuzz_free(&bytes);
    }

    fuzz_free(&whole);
    fuzz_free(&cut);

    return 0;
}
