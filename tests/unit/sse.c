/*
 * al_llm_sse_*: the streaming usage parser and filter.  Recorded-style
 * OpenAI, Responses and Anthropic streams are fed whole, split at every
 * byte boundary, a byte at a time and at random points, in LF, CRLF and CR
 * form; the usage and the bytes kept for the client must come out the
 * same every time, and the kept bytes must be exactly the stream minus
 * the usage-only chunk when the client did not ask for it.
 *
 * The driver below is the algorithm al_llm.h describes for the nginx body
 * filter, written against plain buffers.
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "tap.h"


typedef struct {
    al_llm_kind_t        kind;
    al_llm_endpoint_t    ep;
    unsigned             hide;
} cfg_t;

/* what one run produced */
typedef struct {
    char                *kept;
    size_t               kept_len;
    size_t               kept_cap;
    size_t               held_max;
    al_llm_usage_t       usage;
    al_llm_source_t      source;
    char                 model[AL_LLM_MODEL_MAX];
    uint64_t             dropped;
    unsigned             done:1;
    unsigned             stopped:1;
    unsigned             error:1;
    unsigned             unread:1;
} run_t;

/* the filter's state, as the nginx module would keep it */
typedef struct {
    run_t               *out;
    char                *held;              /* bytes [pending, A) */
    size_t               held_len;
    size_t               held_cap;
    uint64_t             pending;
} filt_t;


static void test_no_model(void);
static void test_total_over(void);
static void test_usage_unread(void);
static void test_usage_escaped(void);
static void test_usage_partial(void);
static void test_usage_unsupported(void);
static void test_usage_delta_lax(void);
static void test_stream_unread(void);
static void test_error_usage(void);
static void test_cut_finish(void);
static void run(const cfg_t *cfg, const char *s, size_t len,
    const size_t *cuts, size_t ncuts, uint64_t prompt, run_t *r);
static void run_capped(const cfg_t *cfg, const char *s, size_t len,
    uint64_t prompt, uint64_t cap, run_t *r);
static void filt_slice(al_llm_sse_t *sse, filt_t *f, const char *p,
    size_t len);
static void filt_emit(filt_t *f, const char *p, uint64_t a, uint64_t to);
static void filt_hold(filt_t *f, const char *p, uint64_t a, size_t len);
static void put(run_t *r, const char *p, size_t n);
static void run_free(run_t *r);
static int same(const run_t *a, const run_t *b);
static char *join(const char *const *blocks, size_t n, size_t skip,
    const char *eol, size_t *len);
static int every_split(const cfg_t *cfg, const char *s, size_t len,
    const run_t *want);
static int byte_at_a_time(const cfg_t *cfg, const char *s, size_t len,
    const run_t *want);
static int random_splits(const cfg_t *cfg, const char *s, size_t len,
    const run_t *want, unsigned rounds);
static uint32_t rnd(void);
static void test_openai(void);
static void test_line_ends(void);
static void test_anthropic(void);
static void test_responses(void);
static void test_fields(void);
static void test_oversized(void);
static void test_interrupted(void);
static void test_observe(void);
static void test_scan_reference(void);
static void test_scan_strings(void);
static void test_scan_parsed(void);
static void test_scan_copies(void);
static void test_scan_counts(void);
static void test_strict(void);
static void test_strict_anthropic(void);
static void test_strict_responses(void);
static void test_scan_runs(void);
static void test_random_events(void);
static void test_memo(void);
static void test_memo_tail(void);
static void test_memo_random(void);
static int memo_same(const al_llm_sse_t *x, const al_llm_sse_t *y);
static void gen_value(char **p, char *end, unsigned depth, unsigned dups);
static void gen_object(char **p, char *end, unsigned depth, unsigned dups,
    unsigned root);
static void gen_put(char **p, char *end, const char *s);
static int strict_case(const cfg_t *cfg, const char *s, const char *model,
    uint64_t total, unsigned jansson);

/* the output cap run() passes to al_llm_sse_result() */
static uint64_t  reserved;

/*
 * drops: the filter feeds by al_llm_sse_feed_drops(), not
 * al_llm_sse_feed(); every_split(), byte_at_a_time() and random_splits()
 * run each stream both ways.  drops_bad: blocks it returned not dropped.
 */
static unsigned  drops;
static unsigned  drops_bad;
static void scan_stream(const cfg_t *cfg, const char *s, size_t len,
    size_t cut, unsigned ref, al_llm_sse_t *sse);


#define NOSKIP  ((size_t) -1)

static uint32_t  rnd_state = 2463534242u;

/* the parser's event buffer before the last scan_stream() finished */
static size_t    scan_cap;


/* chat.completions, stream: true, include_usage: blocks, LF form */

static const char *const  openai_blocks[] = {
    "data: {\"id\":\"chatcmpl-9x\",\"object\":\"chat.completion.chunk\","
    "\"created\":1720000000,\"model\":\"gpt-4o-mini-2024-07-18\","
    "\"system_fingerprint\":\"fp_0ba0d124f1\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},"
    "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",

    "data: {\"id\":\"chatcmpl-9x\",\"object\":\"chat.completion.chunk\","
    "\"created\":1720000000,\"model\":\"gpt-4o-mini-2024-07-18\","
    "\"system_fingerprint\":\"fp_0ba0d124f1\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\"Hello\"},\"logprobs\":null,"
    "\"finish_reason\":null}],\"usage\":null}\n\n",

    ": keep-alive\n\n",

    "data: {\"id\":\"chatcmpl-9x\",\"object\":\"chat.completion.chunk\","
    "\"created\":1720000000,\"model\":\"gpt-4o-mini-2024-07-18\","
    "\"system_fingerprint\":\"fp_0ba0d124f1\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\" there\"},\"logprobs\":null,"
    "\"finish_reason\":null}],\"usage\":null}\n\n",

    "data: {\"id\":\"chatcmpl-9x\",\"object\":\"chat.completion.chunk\","
    "\"created\":1720000000,\"model\":\"gpt-4o-mini-2024-07-18\","
    "\"system_fingerprint\":\"fp_0ba0d124f1\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\", how can I help?\"},\"logprobs\":null,"
    "\"finish_reason\":null}],\"usage\":null}\n\n",

    "data: {\"id\":\"chatcmpl-9x\",\"object\":\"chat.completion.chunk\","
    "\"created\":1720000000,\"model\":\"gpt-4o-mini-2024-07-18\","
    "\"system_fingerprint\":\"fp_0ba0d124f1\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],"
    "\"usage\":null}\n\n",

    /* the usage-only chunk */
    "data: {\"id\":\"chatcmpl-9x\",\"object\":\"chat.completion.chunk\","
    "\"created\":1720000000,\"model\":\"gpt-4o-mini-2024-07-18\","
    "\"system_fingerprint\":\"fp_0ba0d124f1\",\"choices\":[],"
    "\"usage\":{\"prompt_tokens\":19,\"completion_tokens\":10,"
    "\"total_tokens\":29,\"prompt_tokens_details\":{\"cached_tokens\":0,"
    "\"audio_tokens\":0},\"completion_tokens_details\":"
    "{\"reasoning_tokens\":0,\"audio_tokens\":0,"
    "\"accepted_prediction_tokens\":0,"
    "\"rejected_prediction_tokens\":0}}}\n\n",

    "data: [DONE]\n\n"
};

#define OPENAI_N      (sizeof(openai_blocks) / sizeof(openai_blocks[0]))
#define OPENAI_USAGE  6
#define OPENAI_DONE   7

/* "Hello" + " there" + ", how can I help?" */
#define OPENAI_DELTA  28


/* /v1/messages, stream: true */

static const char *const  anthropic_blocks[] = {
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01X\","
    "\"type\":\"message\",\"role\":\"assistant\",\"content\":[],"
    "\"model\":\"claude-sonnet-4-5-20250929\",\"stop_reason\":null,"
    "\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,"
    "\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000,"
    "\"output_tokens\":1}}}\n\n",

    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",

    "event: ping\n"
    "data: {\"type\": \"ping\"}\n\n",

    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",

    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"! How can I help \\u00e9?\"}}"
    "\n\n",

    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",

    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
    "\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":"
    "7}}\n\n",

    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
    "\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":"
    "12}}\n\n",

    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n\n"
};

#define ANTHROPIC_N                                                           \
    (sizeof(anthropic_blocks) / sizeof(anthropic_blocks[0]))
#define ANTHROPIC_STOP  8


/* /v1/responses, stream: true */

static const char *const  responses_blocks[] = {
    "event: response.created\n"
    "data: {\"type\":\"response.created\",\"sequence_number\":0,"
    "\"response\":{\"id\":\"resp_1\",\"object\":\"response\","
    "\"status\":\"in_progress\",\"model\":\"gpt-4o-2024-08-06\","
    "\"output\":[],\"usage\":null}}\n\n",

    "event: response.output_text.delta\n"
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":4,"
    "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
    "\"delta\":\"Hi\"}\n\n",

    "event: response.output_text.delta\n"
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":5,"
    "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
    "\"delta\":\" there, friend\"}\n\n",

    "event: response.completed\n"
    "data: {\"type\":\"response.completed\",\"sequence_number\":9,"
    "\"response\":{\"id\":\"resp_1\",\"object\":\"response\","
    "\"status\":\"completed\",\"model\":\"gpt-4o-2024-08-06\","
    "\"output\":[],\"usage\":{\"input_tokens\":36,\"input_tokens_details\":"
    "{\"cached_tokens\":4},\"output_tokens\":87,\"output_tokens_details\":"
    "{\"reasoning_tokens\":0},\"total_tokens\":123}}}\n\n"
};

#define RESPONSES_N  (sizeof(responses_blocks) / sizeof(responses_blocks[0]))


static const cfg_t  openai_hide = {
    AL_LLM_OPENAI, AL_LLM_EP_CHAT, 1
};
static const cfg_t  openai_keep = {
    AL_LLM_OPENAI, AL_LLM_EP_CHAT, 0
};
static const cfg_t  anthropic_cfg = {
    AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES, 1
};
static const cfg_t  responses_cfg = {
    AL_LLM_OPENAI, AL_LLM_EP_RESPONSES, 1
};


int
main(void)
{
    test_openai();
    test_line_ends();
    test_anthropic();
    test_responses();
    test_fields();
    test_oversized();
    test_interrupted();
    test_observe();
    test_scan_reference();
    test_scan_strings();
    test_scan_parsed();
    test_scan_copies();
    test_scan_counts();
    test_strict();
    test_strict_anthropic();
    test_strict_responses();
    test_scan_runs();
    test_random_events();
    test_memo();
    test_memo_tail();
    test_memo_random();
    test_no_model();
    test_total_over();
    test_usage_unread();
    test_usage_escaped();
    test_usage_partial();
    test_usage_unsupported();
    test_usage_delta_lax();
    test_stream_unread();
    test_error_usage();
    test_cut_finish();

    return tap_done();
}


/* run() in one slice, with an output cap reserved for the call */

static void
run_capped(const cfg_t *cfg, const char *s, size_t len, uint64_t prompt,
    uint64_t cap, run_t *r)
{
    reserved = cap;
    run(cfg, s, len, NULL, 0, prompt, r);
    reserved = 0;
}

/*
 * One stream through the filter, cut at cuts[] (ascending offsets), then
 * al_llm_sse_finish() and al_llm_sse_result().
 */

static void
run(const cfg_t *cfg, const char *s, size_t len, const size_t *cuts,
    size_t ncuts, uint64_t prompt, run_t *r)
{
    size_t              i, from, to;
    filt_t              f;
    al_llm_sse_t        sse;
    al_llm_sse_block_t  blk;

    memset(r, 0, sizeof(*r));
    memset(&f, 0, sizeof(f));
    f.out = r;

    al_llm_sse_init(&sse, cfg->kind, cfg->ep, cfg->hide);

    from = 0;

    for (i = 0; i <= ncuts; i++) {
        to = (i < ncuts) ? cuts[i] : len;
        filt_slice(&sse, &f, s + from, to - from);
        from = to;
    }

    if (al_llm_sse_finish(&sse, &blk) == 1 && blk.drop) {
        filt_emit(&f, NULL, al_llm_sse_offset(&sse), blk.start);
        f.held_len = 0;
        f.pending = blk.end;
    }

    filt_emit(&f, NULL, al_llm_sse_offset(&sse), al_llm_sse_offset(&sse));

    r->source = al_llm_sse_result(&sse, prompt, reserved, &r->usage);
    memcpy(r->model, sse.model, sizeof(r->model));
    r->dropped = sse.dropped;
    r->done = sse.done;
    r->stopped = sse.stopped;
    r->error = sse.error;
    r->unread = sse.unread;

    al_llm_sse_free(&sse);
    free(f.held);
}


/* the body filter's work on one buffer */

static void
filt_slice(al_llm_sse_t *sse, filt_t *f, const char *p, size_t len)
{
    int                 rc;
    size_t              off, used;
    uint64_t            a;
    al_llm_sse_block_t  blk;

    a = al_llm_sse_offset(sse);
    off = 0;

    while (off < len) {
        if (drops) {
            rc = al_llm_sse_feed_drops(sse, (const unsigned char *) p + off,
                                       len - off, &used, &blk);

            /* a block it returns is one to drop */
            drops_bad += (rc == 1 && !blk.drop);

        } else {
            rc = al_llm_sse_feed(sse, (const unsigned char *) p + off,
                                 len - off, &used, &blk);
        }

        if (rc == 1 && blk.drop) {
            filt_emit(f, p, a, blk.start);
            f->held_len = 0;
            f->pending = blk.end;
        }

        off += used;
    }

    filt_emit(f, p, a, al_llm_sse_settled(sse));
    filt_hold(f, p, a, len);
}


/*
 * Emits [pending, to): held bytes cover [pending, a), the slice p covers
 * [a, a + len).  Consumes what it emits.
 */

static void
filt_emit(filt_t *f, const char *p, uint64_t a, uint64_t to)
{
    size_t  n;

    if (to <= f->pending) {
        return;
    }

    if (f->pending < a) {
        n = (size_t) ((to < a ? to : a) - f->pending);
        put(f->out, f->held, n);
        memmove(f->held, f->held + n, f->held_len - n);
        f->held_len -= n;
        f->pending += n;
    }

    if (to > f->pending) {
        put(f->out, p + (f->pending - a), (size_t) (to - f->pending));
        f->pending = to;
    }
}


/* keeps [pending, a + len) for the next slice */

static void
filt_hold(filt_t *f, const char *p, uint64_t a, size_t len)
{
    size_t  from, n;

    if (f->pending >= a) {
        f->held_len = 0;
        from = (size_t) (f->pending - a);

    } else {
        from = 0;
    }

    n = len - from;

    if (n == 0) {
        return;
    }

    if (f->held_len + n > f->held_cap) {
        f->held_cap = (f->held_len + n) * 2;
        f->held = realloc(f->held, f->held_cap);
        if (f->held == NULL) {
            abort();
        }
    }

    memcpy(f->held + f->held_len, p + from, n);
    f->held_len += n;

    if (f->held_len > f->out->held_max) {
        f->out->held_max = f->held_len;
    }
}


static void
put(run_t *r, const char *p, size_t n)
{
    if (n == 0) {
        return;
    }

    if (r->kept_len + n > r->kept_cap) {
        r->kept_cap = (r->kept_len + n) * 2 + 64;
        r->kept = realloc(r->kept, r->kept_cap);
        if (r->kept == NULL) {
            abort();
        }
    }

    memcpy(r->kept + r->kept_len, p, n);
    r->kept_len += n;
}


static void
run_free(run_t *r)
{
    free(r->kept);
    r->kept = NULL;
}


static int
same(const run_t *a, const run_t *b)
{
    return a->kept_len == b->kept_len
           && (a->kept_len == 0
               || memcmp(a->kept, b->kept, a->kept_len) == 0)
           && memcmp(&a->usage, &b->usage, sizeof(a->usage)) == 0
           && a->source == b->source
           && strcmp(a->model, b->model) == 0
           && a->dropped == b->dropped
           && a->done == b->done
           && a->stopped == b->stopped
           && a->unread == b->unread;
}


/* the blocks, line ends replaced by eol, leaving out blocks[skip] */

static char *
join(const char *const *blocks, size_t n, size_t skip, const char *eol,
    size_t *len)
{
    char        *out;
    size_t       i, cap, el;
    const char  *p;

    el = strlen(eol);
    cap = 1;

    for (i = 0; i < n; i++) {
        cap += strlen(blocks[i]) * el;
    }

    out = malloc(cap);
    if (out == NULL) {
        abort();
    }

    *len = 0;

    for (i = 0; i < n; i++) {
        if (i == skip) {
            continue;
        }

        for (p = blocks[i]; *p != '\0'; p++) {
            if (*p == '\n') {
                memcpy(out + *len, eol, el);
                *len += el;
            } else {
                out[(*len)++] = *p;
            }
        }
    }

    out[*len] = '\0';

    return out;
}


static int
every_split(const cfg_t *cfg, const char *s, size_t len, const run_t *want)
{
    int     bad;
    size_t  i;
    run_t   r;

    bad = 0;

    for (drops = 0; drops < 2; drops++) {
        for (i = 0; i <= len; i++) {
            run(cfg, s, len, &i, 1, 0, &r);
            if (!same(&r, want)) {
                if (bad == 0) {
                    printf("# first mismatch at split %zu%s\n", i,
                           drops ? " (al_llm_sse_feed_drops)" : "");
                }
                bad++;
            }
            run_free(&r);
        }
    }

    drops = 0;
    bad += drops_bad;
    drops_bad = 0;

    return bad == 0;
}


static int
byte_at_a_time(const cfg_t *cfg, const char *s, size_t len,
    const run_t *want)
{
    int      ok;
    size_t   i, *cuts;
    run_t    r;

    cuts = malloc((len + 1) * sizeof(size_t));
    if (cuts == NULL) {
        abort();
    }

    for (i = 0; i < len; i++) {
        cuts[i] = i + 1;
    }

    run(cfg, s, len, cuts, len > 0 ? len - 1 : 0, 0, &r);
    ok = same(&r, want);
    run_free(&r);

    drops = 1;
    run(cfg, s, len, cuts, len > 0 ? len - 1 : 0, 0, &r);
    ok = ok && same(&r, want) && drops_bad == 0;
    run_free(&r);
    drops = 0;
    drops_bad = 0;

    free(cuts);

    return ok;
}


static int
random_splits(const cfg_t *cfg, const char *s, size_t len,
    const run_t *want, unsigned rounds)
{
    int       bad;
    size_t    i, j, n, t, cuts[16];
    unsigned  k;
    run_t     r;

    bad = 0;

    for (k = 0; k < rounds; k++) {
        n = 1 + rnd() % 15;

        for (i = 0; i < n; i++) {
            cuts[i] = rnd() % (len + 1);
        }

        for (i = 1; i < n; i++) {
            for (j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
                t = cuts[j];
                cuts[j] = cuts[j - 1];
                cuts[j - 1] = t;
            }
        }

        run(cfg, s, len, cuts, n, 0, &r);
        bad += !same(&r, want);
        run_free(&r);

        drops = 1;
        run(cfg, s, len, cuts, n, 0, &r);
        bad += !same(&r, want) + drops_bad;
        run_free(&r);
        drops = 0;
        drops_bad = 0;
    }

    return bad == 0;
}


static uint32_t
rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 17;
    rnd_state ^= rnd_state << 5;

    return rnd_state;
}


static void
test_openai(void)
{
    char    *s, *without;
    size_t   len, wlen;
    run_t    whole, keep;

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\n", &len);
    without = join(openai_blocks, OPENAI_N, OPENAI_USAGE, "\n", &wlen);

    run(&openai_hide, s, len, NULL, 0, 0, &whole);

    tap_ok(whole.source == AL_LLM_SOURCE_STREAM && whole.done,
           "openai: complete stream, usage from the stream");
    tap_ok(whole.usage.prompt_tokens == 19
           && whole.usage.completion_tokens == 10
           && whole.usage.total_tokens == 29
           && whole.usage.cached_tokens == 0, "openai: usage numbers");
    tap_is_str(whole.model, "gpt-4o-mini-2024-07-18", "openai: model");
    tap_ok(whole.kept_len == wlen && memcmp(whole.kept, without, wlen) == 0
           && whole.dropped == 1,
           "hidden: kept bytes are the stream without the usage chunk");
    tap_ok(whole.held_max < strlen(openai_blocks[OPENAI_USAGE]),
           "a whole stream in one slice holds back nothing beyond a block");

    tap_ok(every_split(&openai_hide, s, len, &whole),
           "openai hidden: same result split at every byte boundary");
    tap_ok(byte_at_a_time(&openai_hide, s, len, &whole),
           "openai hidden: same result fed a byte at a time");
    tap_ok(random_splits(&openai_hide, s, len, &whole, 2000),
           "openai hidden: same result at 2000 random multi-splits");

    run(&openai_keep, s, len, NULL, 0, 0, &keep);
    tap_ok(keep.kept_len == len && memcmp(keep.kept, s, len) == 0
           && keep.dropped == 0,
           "client asked for usage: every byte kept");
    tap_ok(memcmp(&keep.usage, &whole.usage, sizeof(keep.usage)) == 0,
           "and the same usage");
    tap_ok(every_split(&openai_keep, s, len, &keep),
           "openai kept: same result at every split");

    run_free(&keep);
    run_free(&whole);
    free(without);
    free(s);
}


static void
test_line_ends(void)
{
    char    *s, *without;
    size_t   len, wlen, i;
    run_t    r;
    int      ok;

    static const char *const  eols[] = { "\r\n", "\r" };
    static const char *const  names[] = { "CRLF", "CR" };

    for (i = 0; i < 2; i++) {
        s = join(openai_blocks, OPENAI_N, NOSKIP, eols[i], &len);
        without = join(openai_blocks, OPENAI_N, OPENAI_USAGE, eols[i], &wlen);

        run(&openai_hide, s, len, NULL, 0, 0, &r);

        ok = r.source == AL_LLM_SOURCE_STREAM
             && r.usage.total_tokens == 29
             && r.kept_len == wlen && memcmp(r.kept, without, wlen) == 0;
        tap_ok(ok, names[i]);

        tap_ok(every_split(&openai_hide, s, len, &r),
               i == 0 ? "CRLF: same result at every split"
                      : "CR: same result at every split");
        tap_ok(byte_at_a_time(&openai_hide, s, len, &r),
               i == 0 ? "CRLF: byte at a time" : "CR: byte at a time");

        run_free(&r);
        free(without);
        free(s);
    }

    /* a stream ending in a CR blank line: completed by finish */

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\r", &len);
    without = join(openai_blocks, OPENAI_N - 1, OPENAI_USAGE, "\r", &wlen);

    run(&openai_hide, s, len - strlen(openai_blocks[OPENAI_DONE]), NULL, 0,
        0, &r);
    tap_ok(r.kept_len == wlen && memcmp(r.kept, without, wlen) == 0
           && r.dropped == 1 && !r.done,
           "CR: a usage block ending the input is dropped at finish");
    run_free(&r);

    free(without);
    free(s);

    /* mixed: CRLF in one block, LF in the next, CR in a third */

    {
        static const char *const  mixed[] = {
            "data: {\"choices\":[{\"delta\":{\"content\":\"abcd\"}}]}"
            "\r\n\r\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,"
            "\"completion_tokens\":1,\"total_tokens\":4}}\n\n",
            ": c\r\r",
            "data: [DONE]\r\n\n"
        };

        s = join(mixed, 4, NOSKIP, "\n", &len);
        without = join(mixed, 4, 1, "\n", &wlen);

        run(&openai_hide, s, len, NULL, 0, 0, &r);
        ok = r.source == AL_LLM_SOURCE_STREAM && r.usage.total_tokens == 4
             && r.kept_len == wlen && memcmp(r.kept, without, wlen) == 0;
        tap_ok(ok, "mixed line ends");
        tap_ok(every_split(&openai_hide, s, len, &r),
               "mixed line ends: every split");
        run_free(&r);
        free(without);
        free(s);
    }
}


static void
test_anthropic(void)
{
    char    *s;
    size_t   len;
    run_t    r;

    s = join(anthropic_blocks, ANTHROPIC_N, NOSKIP, "\n", &len);

    run(&anthropic_cfg, s, len, NULL, 0, 0, &r);

    tap_ok(r.source == AL_LLM_SOURCE_STREAM && r.done,
           "anthropic: complete stream");
    tap_ok(r.usage.prompt_tokens == 2125 && r.usage.cached_tokens == 2000
           && r.usage.cache_write_tokens == 100,
           "anthropic: input from message_start, cache fields included");
    tap_is_int((long) r.usage.completion_tokens, 12,
               "anthropic: message_delta output_tokens replaces (12, "
               "not 1 + 7 + 12)");
    tap_is_int((long) r.usage.total_tokens, 2137, "anthropic: total");
    tap_is_str(r.model, "claude-sonnet-4-5-20250929", "anthropic: model");
    tap_ok(r.kept_len == len && memcmp(r.kept, s, len) == 0,
           "anthropic: nothing dropped");

    tap_ok(every_split(&anthropic_cfg, s, len, &r),
           "anthropic: same result at every split");
    tap_ok(byte_at_a_time(&anthropic_cfg, s, len, &r),
           "anthropic: byte at a time");
    tap_ok(random_splits(&anthropic_cfg, s, len, &r, 1000),
           "anthropic: 1000 random multi-splits");

    run_free(&r);
    free(s);

    s = join(anthropic_blocks, ANTHROPIC_N, NOSKIP, "\r\n", &len);
    run(&anthropic_cfg, s, len, NULL, 0, 0, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM && r.usage.total_tokens == 2137
           && every_split(&anthropic_cfg, s, len, &r),
           "anthropic CRLF: same usage at every split");
    run_free(&r);
    free(s);

    /* message_delta that also restates input (newer API versions) */

    s = "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"model\":\"c\","
        "\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n"
        "event: message_delta\n"
        "data: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":11,"
        "\"cache_read_input_tokens\":5,\"output_tokens\":3}}\n\n"
        "event: message_stop\n"
        "data: {\"type\":\"message_stop\"}\n\n";
    run(&anthropic_cfg, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.usage.prompt_tokens == 16 && r.usage.completion_tokens == 3
           && r.usage.cached_tokens == 5 && r.source == AL_LLM_SOURCE_STREAM,
           "anthropic: fields restated in message_delta replace");
    run_free(&r);

    /* data without "type": the event name decides */

    s = "event: message_start\n"
        "data: {\"message\":{\"usage\":{\"input_tokens\":4}}}\n\n"
        "event: message_delta\n"
        "data: {\"usage\":{\"output_tokens\":2}}\n\n"
        "event: message_stop\n"
        "data: {}\n\n";
    run(&anthropic_cfg, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.usage.total_tokens == 6 && r.source == AL_LLM_SOURCE_STREAM,
           "anthropic: the event: field names the event");
    run_free(&r);

    s = "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"model\":\"c\","
        "\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n"
        "event: error\n"
        "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
        "\"message\":\"Overloaded\"}}\n\n";
    run(&anthropic_cfg, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.error && r.source == AL_LLM_SOURCE_ESTIMATED
           && r.usage.prompt_tokens == 10 && r.usage.completion_tokens == 1,
           "anthropic: an error event ends it, estimated");
    run_free(&r);
}


static void
test_responses(void)
{
    char    *s;
    size_t   len;
    run_t    r;

    s = join(responses_blocks, RESPONSES_N, NOSKIP, "\n", &len);

    run(&responses_cfg, s, len, NULL, 0, 0, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM && r.usage.prompt_tokens == 36
           && r.usage.completion_tokens == 87 && r.usage.cached_tokens == 4
           && r.usage.total_tokens == 123,
           "responses: usage from response.completed");
    tap_is_str(r.model, "gpt-4o-2024-08-06", "responses: model");
    tap_ok(r.kept_len == len && r.dropped == 0,
           "responses: nothing dropped, even with hide set");
    tap_ok(every_split(&responses_cfg, s, len, &r),
           "responses: every split");
    run_free(&r);

    run(&responses_cfg, s, len - strlen(responses_blocks[RESPONSES_N - 1]),
        NULL, 0, 50, &r);
    tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED && r.usage.prompt_tokens == 50
           && r.usage.completion_tokens == 4,
           "responses cut before completed: estimated from the deltas");
    run_free(&r);

    free(s);
}


static void
test_fields(void)
{
    const char  *s;
    size_t       len;
    run_t        r;

    /* multi-line data joined with "\n", comments, id and retry lines */

    s = ": hello\n"
        "retry: 1000\n"
        "id: 7\n"
        "data: {\"choices\":[],\n"
        ": a comment inside the event\n"
        "data:\"usage\":{\"prompt_tokens\":5,\n"
        "data:  \"completion_tokens\":6,\"total_tokens\":11}}\n"
        "\n"
        "data:[DONE]\n\n";
    len = strlen(s);

    run(&openai_hide, s, len, NULL, 0, 0, &r);
    tap_ok(r.usage.total_tokens == 11 && r.source == AL_LLM_SOURCE_STREAM
           && r.dropped == 1 && r.kept_len == 13
           && memcmp(r.kept, "data:[DONE]\n\n", 13) == 0,
           "multi-line data, comments, no space after the colon");
    tap_ok(every_split(&openai_hide, s, len, &r),
           "multi-line data: every split");
    run_free(&r);

    /* the comment-only block before it is its own block: kept */

    s = ": ping\n\n"
        "data: {\"choices\":[],\"usage\":{\"total_tokens\":2}}\n\n"
        "data: [DONE]\n\n";
    len = strlen(s);
    run(&openai_hide, s, len, NULL, 0, 0, &r);
    tap_ok(r.kept_len == 8 + 14 && memcmp(r.kept, ": ping\n\n", 8) == 0
           && memcmp(r.kept + 8, "data: [DONE]\n\n", 14) == 0,
           "dropped range is exactly the usage block");
    run_free(&r);

    /* chunks with choices and usage (vLLM continuous usage) are kept */

    s = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}],"
        "\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1,"
        "\"total_tokens\":3}}\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\":\"y\"}}],"
        "\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2,"
        "\"total_tokens\":4}}\n\n"
        "data: [DONE]\n\n";
    len = strlen(s);
    run(&openai_hide, s, len, NULL, 0, 0, &r);
    tap_ok(r.kept_len == len && r.usage.total_tokens == 4
           && r.source == AL_LLM_SOURCE_STREAM,
           "usage on content chunks: kept, last one wins");
    run_free(&r);

    /* junk that is not JSON, an unknown field, a long field name */

    s = "data: {not json\n\n"
        "foo: bar\n"
        "averyveryverylongfieldname: x\n"
        "data\n"
        "data\n\n"
        "data: {\"choices\":[],\"usage\":{\"total_tokens\":9}}\n\n"
        "data: [DONE]\n\n";
    len = strlen(s);
    run(&openai_hide, s, len, NULL, 0, 0, &r);
    tap_ok(r.usage.total_tokens == 9 && r.source == AL_LLM_SOURCE_STREAM
           && r.dropped == 1, "junk events are skipped, not fatal");
    tap_ok(every_split(&openai_hide, s, len, &r), "junk: every split");
    run_free(&r);

    /* an OpenAI error chunk mid-stream */

    s = "data: {\"error\":{\"message\":\"server error\",\"type\":"
        "\"server_error\"}}\n\n";
    run(&openai_hide, s, strlen(s), NULL, 0, 7, &r);
    tap_ok(r.error && r.source == AL_LLM_SOURCE_ESTIMATED
           && r.usage.prompt_tokens == 7 && r.kept_len == strlen(s),
           "openai error chunk: estimated, kept");
    run_free(&r);
}


static void
test_oversized(void)
{
    char    *s, *p, *tail;
    size_t   len, n, head;
    run_t    r, r2;
    size_t   cuts[3];

    head = strlen(openai_blocks[1]);
    n = AL_LLM_EVENT_MAX + 100;
    tail = join(openai_blocks + OPENAI_USAGE, 2, NOSKIP, "\n", &len);

    s = malloc(head + n + len + 16);
    if (s == NULL) {
        abort();
    }

    p = s;
    memcpy(p, openai_blocks[1], head);
    p += head;
    memcpy(p, "data: \"", 7);
    memset(p + 7, 'x', n - 7);
    p += n;
    memcpy(p, "\"\n\n", 3);
    p += 3;
    memcpy(p, tail, len);
    p += len;
    len = (size_t) (p - s);

    run(&openai_hide, s, len, NULL, 0, 40, &r);
    tap_ok(r.stopped && r.source == AL_LLM_SOURCE_ESTIMATED,
           "an event over 1 MiB stops the parser: estimated");
    tap_ok(r.kept_len == len && memcmp(r.kept, s, len) == 0
           && r.dropped == 0,
           "and every byte passes, the usage chunk after it too");
    tap_ok(r.usage.completion_tokens == 2 && r.usage.prompt_tokens == 40,
           "estimate from what was seen before it");

    run_capped(&openai_hide, s, len, 40, 500, &r2);
    tap_ok(r2.stopped && r2.source == AL_LLM_SOURCE_ESTIMATED
           && r2.usage.completion_tokens == 500
           && r2.usage.prompt_tokens == 40,
           "stopped: at least the output cap reserved is charged");
    run_free(&r2);
    tap_ok(r.held_max <= AL_LLM_EVENT_MAX + 1,
           "held bytes never exceed the event bound");

    cuts[0] = head + 10;
    cuts[1] = head + AL_LLM_EVENT_MAX / 2;
    cuts[2] = head + AL_LLM_EVENT_MAX + 50;
    run(&openai_hide, s, len, cuts, 3, 40, &r2);
    tap_ok(same(&r, &r2), "oversized: the same when split");
    run_free(&r2);
    run_free(&r);

    /* exactly at the bound: still parsed */

    n = AL_LLM_EVENT_MAX - 2 - 7 - 1;
    p = s;
    memcpy(p, "data: \"", 7);
    memset(p + 7, 'y', n);
    p += 7 + n;
    memcpy(p, "\"\n\n", 3);
    p += 3;
    tap_ok((size_t) (p - s) == AL_LLM_EVENT_MAX, "fixture is the bound");
    memcpy(p, openai_blocks[OPENAI_USAGE], strlen(openai_blocks[6]));
    p += strlen(openai_blocks[OPENAI_USAGE]);
    memcpy(p, "data: [DONE]\n\n", 14);
    p += 14;
    len = (size_t) (p - s);

    run(&openai_hide, s, len, NULL, 0, 0, &r);
    tap_ok(!r.stopped && r.dropped == 1 && r.usage.total_tokens == 29
           && r.source == AL_LLM_SOURCE_STREAM,
           "an event of exactly AL_LLM_EVENT_MAX bytes is parsed");
    run_free(&r);

    /* one byte more: stopped */

    p = s;
    memcpy(p, "data: \"", 7);
    memset(p + 7, 'y', n + 1);
    p += 7 + n + 1;
    memcpy(p, "\"\n\n", 3);
    p += 3;
    memcpy(p, openai_blocks[OPENAI_USAGE], strlen(openai_blocks[6]));
    p += strlen(openai_blocks[OPENAI_USAGE]);
    len = (size_t) (p - s);

    run(&openai_hide, s, len, NULL, 0, 0, &r);
    tap_ok(r.stopped && r.dropped == 0 && r.kept_len == len,
           "one byte over AL_LLM_EVENT_MAX stops it");
    run_free(&r);

    /* a comment line that never ends */

    memset(s, ':', AL_LLM_EVENT_MAX + 2);
    run(&openai_hide, s, AL_LLM_EVENT_MAX + 2, NULL, 0, 0, &r);
    tap_ok(r.stopped && r.kept_len == AL_LLM_EVENT_MAX + 2,
           "an endless comment line is bounded too");
    run_free(&r);

    free(tail);
    free(s);
}


static void
test_interrupted(void)
{
    char    *s;
    size_t   len;
    run_t    r;

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\n", &len);

    /* cut before the usage chunk */

    run(&openai_hide, s, 0, NULL, 0, 0, &r);
    tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED && r.kept_len == 0
           && r.usage.total_tokens == 0, "an empty stream: estimated, 0");
    run_free(&r);

    len = 0;
    len += strlen(openai_blocks[0]) + strlen(openai_blocks[1])
           + strlen(openai_blocks[2]) + strlen(openai_blocks[3])
           + strlen(openai_blocks[4]) + strlen(openai_blocks[5]);

    run(&openai_hide, s, len, NULL, 0, 120, &r);
    tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED && !r.done,
           "no usage, no [DONE]: estimated");
    tap_ok(r.usage.completion_tokens == (OPENAI_DELTA + 3) / 4
           && r.usage.prompt_tokens == 120
           && r.usage.total_tokens == 120 + (OPENAI_DELTA + 3) / 4,
           "completion from delta bytes / 4, prompt from the request");
    run_free(&r);

    /*
     * The same cut with an output cap reserved: charged at least the cap,
     * as the provider may have generated up to it (hidden reasoning too)
     */

    run_capped(&openai_hide, s, len, 120, 500, &r);
    tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED
           && r.usage.completion_tokens == 500
           && r.usage.total_tokens == 620,
           "cut before its usage: at least the output cap reserved");
    run_free(&r);

    /* cut in the middle of the usage chunk: its bytes are passed */

    run(&openai_hide, s, len + 40, NULL, 0, 120, &r);
    tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED && r.kept_len == len + 40
           && r.dropped == 0,
           "a cut event is not dispatched; its bytes reach the client");
    run_free(&r);

    /* usage seen, [DONE] missing */

    len += strlen(openai_blocks[OPENAI_USAGE]);
    run(&openai_hide, s, len, NULL, 0, 120, &r);
    tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED
           && r.usage.prompt_tokens == 19 && r.usage.completion_tokens == 10,
           "usage but no [DONE]: estimated, the reported numbers kept");
    run_free(&r);

    run_capped(&openai_hide, s, len, 120, 500, &r);
    tap_ok(r.usage.completion_tokens == 10,
           "usage but no [DONE]: the final usage, not the cap");
    run_free(&r);

    /*
     * Usage in every chunk (vLLM's stream_options.continuous_usage_stats,
     * which a client may ask for): one beside choices that are not empty
     * is a count so far, not the final usage.  A stream cut after it is
     * charged at least the cap; one that ends keeps its last count.
     */

    {
        static const char  cont[] =
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\","
            "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
            "\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}],"
            "\"usage\":{\"prompt_tokens\":19,\"completion_tokens\":1,"
            "\"total_tokens\":20}}\n\n";
        static const char  last[] =
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\","
            "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
            "\"delta\":{},\"finish_reason\":\"stop\"}],"
            "\"usage\":{\"prompt_tokens\":19,\"completion_tokens\":7,"
            "\"total_tokens\":26}}\n\ndata: [DONE]\n\n";
        char    t[sizeof(cont) + sizeof(last)];

        run_capped(&openai_hide, cont, sizeof(cont) - 1, 120, 500, &r);
        tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED
               && r.usage.prompt_tokens == 19
               && r.usage.completion_tokens == 500,
               "usage in every chunk, cut: at least the output cap");
        run_free(&r);

        memcpy(t, cont, sizeof(cont) - 1);
        memcpy(t + sizeof(cont) - 1, last, sizeof(last));
        run_capped(&openai_hide, t, strlen(t), 120, 500, &r);
        tap_ok(r.source == AL_LLM_SOURCE_STREAM
               && r.usage.prompt_tokens == 19
               && r.usage.completion_tokens == 7,
               "usage in every chunk, ended: the last count");
        run_free(&r);
    }

    /* [DONE] but no usage (include_usage off) */

    {
        char    *t;
        size_t   tlen;

        t = join(openai_blocks, OPENAI_N, OPENAI_USAGE, "\n", &tlen);
        run(&openai_keep, t, tlen, NULL, 0, 33, &r);
        tap_ok(r.done && r.source == AL_LLM_SOURCE_ESTIMATED
               && r.usage.prompt_tokens == 33
               && r.usage.completion_tokens == 7,
               "[DONE] without usage: estimated");
        run_free(&r);

        run_capped(&openai_keep, t, tlen, 33, 500, &r);
        tap_ok(r.usage.completion_tokens == 7,
               "[DONE] without usage: the estimate, not the cap");
        run_free(&r);
        free(t);
    }

    free(s);

    /* anthropic cut after some deltas */

    s = join(anthropic_blocks, 5, NOSKIP, "\n", &len);
    run(&anthropic_cfg, s, len, NULL, 0, 999, &r);
    tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED
           && r.usage.prompt_tokens == 2125
           && r.usage.completion_tokens == (5 + 20 + 3) / 4,
           "anthropic cut: input from message_start, output estimated");
    run_free(&r);

    run_capped(&anthropic_cfg, s, len, 999, 300, &r);
    tap_ok(r.usage.prompt_tokens == 2125 && r.usage.completion_tokens == 300,
           "anthropic cut before message_delta: at least the cap");
    run_free(&r);
    free(s);

    s = join(anthropic_blocks, ANTHROPIC_STOP, NOSKIP, "\n", &len);
    run(&anthropic_cfg, s, len, NULL, 0, 0, &r);
    tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED
           && r.usage.completion_tokens == 12,
           "anthropic without message_stop: estimated, reported kept");
    run_free(&r);
    free(s);
}


static void
test_observe(void)
{
    char                *s;
    size_t               len, i;
    al_llm_sse_t         sse;
    al_llm_usage_t       u;
    al_llm_source_t      src;
    al_llm_sse_block_t   blk;

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\r\n", &len);

    al_llm_sse_init(&sse, AL_LLM_OPENAI, AL_LLM_EP_CHAT, 0);

    for (i = 0; i < len; i += 7) {
        al_llm_sse_observe(&sse, (const unsigned char *) s + i,
                           len - i < 7 ? len - i : 7);
    }

    tap_ok(al_llm_sse_settled(&sse) == len && al_llm_sse_offset(&sse) == len,
           "observe: everything settled at a block end");

    (void) al_llm_sse_finish(&sse, &blk);
    src = al_llm_sse_result(&sse, 0, 0, &u);
    tap_ok(src == AL_LLM_SOURCE_STREAM && u.total_tokens == 29
           && sse.dropped == 0 && sse.events == 7,
           "observe: usage without filtering");

    al_llm_sse_observe(&sse, (const unsigned char *) "data: x\n\n", 9);
    tap_ok(sse.events == 7 && al_llm_sse_offset(&sse) == len + 9,
           "after finish bytes are only counted");

    al_llm_sse_free(&sse);
    free(s);
}


/*
 * Feeds s in two slices cut at cut (len: one slice) and finishes; sse is
 * left for inspection (al_llm_sse_free() it).  ref: every event through
 * jansson, the reference the scan must agree with.
 */

static void
scan_stream(const cfg_t *cfg, const char *s, size_t len, size_t cut,
    unsigned ref, al_llm_sse_t *sse)
{
    al_llm_sse_block_t  blk;

    al_llm_sse_init(sse, cfg->kind, cfg->ep, cfg->hide);
    sse->parse_all = ref;

    if (cut > len) {
        cut = len;
    }

    al_llm_sse_observe(sse, (const unsigned char *) s, cut);
    al_llm_sse_observe(sse, (const unsigned char *) s + cut, len - cut);

    scan_cap = sse->data_cap;           /* finish frees the buffer */
    (void) al_llm_sse_finish(sse, &blk);
}


/* the scan against every event through jansson: the same, to the byte */

static int
like_reference(const cfg_t *cfg, const char *s, size_t len)
{
    int           ok;
    size_t        cut;
    run_t         a, b;
    al_llm_sse_t  x, y;

    ok = 1;

    for (cut = 0; cut <= len; cut += (len > 400 ? 7 : 1)) {
        scan_stream(cfg, s, len, cut, 0, &x);
        scan_stream(cfg, s, len, cut, 1, &y);

        ok = ok && memcmp(&x.usage, &y.usage, sizeof(x.usage)) == 0
             && strcmp(x.model, y.model) == 0
             && x.delta_bytes == y.delta_bytes && x.events == y.events
             && x.done == y.done && x.usage_seen == y.usage_seen
             && x.error == y.error && x.unread == y.unread
             && x.parsed <= y.parsed;

        al_llm_sse_free(&x);
        al_llm_sse_free(&y);
    }

    /* and through the filter: the same bytes dropped */

    run(cfg, s, len, NULL, 0, 3, &a);
    memset(&b, 0, sizeof(b));
    {
        filt_t              f;
        al_llm_sse_block_t  blk;

        memset(&f, 0, sizeof(f));
        f.out = &b;
        al_llm_sse_init(&y, cfg->kind, cfg->ep, cfg->hide);
        y.parse_all = 1;
        filt_slice(&y, &f, s, len);

        if (al_llm_sse_finish(&y, &blk) == 1 && blk.drop) {
            filt_emit(&f, NULL, al_llm_sse_offset(&y), blk.start);
            f.held_len = 0;
            f.pending = blk.end;
        }

        filt_emit(&f, NULL, al_llm_sse_offset(&y), al_llm_sse_offset(&y));
        b.source = al_llm_sse_result(&y, 3, 0, &b.usage);
        memcpy(b.model, y.model, sizeof(b.model));
        b.dropped = y.dropped;
        b.done = y.done;
        b.stopped = y.stopped;
        b.unread = y.unread;
        al_llm_sse_free(&y);
        free(f.held);
    }

    ok = ok && same(&a, &b);

    run_free(&a);
    run_free(&b);

    return ok;
}


static void
test_scan_reference(void)
{
    char    *s;
    size_t   len;

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\n", &len);
    tap_ok(like_reference(&openai_hide, s, len),
           "scan = reference: openai, every split");
    free(s);

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\r\n", &len);
    tap_ok(like_reference(&openai_keep, s, len),
           "scan = reference: openai CRLF, usage kept");
    free(s);

    s = join(anthropic_blocks, ANTHROPIC_N, NOSKIP, "\n", &len);
    tap_ok(like_reference(&anthropic_cfg, s, len),
           "scan = reference: anthropic, every split");
    free(s);

    s = join(responses_blocks, RESPONSES_N, NOSKIP, "\n", &len);
    tap_ok(like_reference(&responses_cfg, s, len),
           "scan = reference: responses, every split");
    free(s);

    /* tool calls: names and arguments count, ids and types do not */

    s = "data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{"
        "\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,"
        "\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":"
        "\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n"
        "data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{"
        "\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
        "\"{\\\"city\\\": \\\"Paris\\\"}\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"text\":\"legacy \\u00e9\\ud83d\\ude00\"},"
        "{\"text\":5},[\"x\"],{\"delta\":\"plain\"}]}\n\n"
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
        "\"completion_tokens\":2,\"total_tokens\":3}}\n\n"
        "data: [DONE]\n\n";
    len = strlen(s);
    tap_ok(like_reference(&openai_hide, s, len),
           "scan = reference: tool calls, legacy text, odd choices");

    /* anthropic thinking, tool input, signature skipped */

    s = "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"model\":\"c\","
        "\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
        "event: content_block_delta\n"
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{"
        "\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n"
        "event: content_block_delta\n"
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{"
        "\"type\":\"signature_delta\",\"signature\":\"c2lnbmF0dXJl\"}}\n\n"
        "event: content_block_delta\n"
        "data: {\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
        "\"partial_json\":\"{\\\"a\\\":1}\",\"more\":[{\"id\":\"x\","
        "\"t\":\"yz\"}]}}\n\n"
        "event: ping\n"
        "data: {\"type\":\"ping\",\"delta\":\"not counted\"}\n\n";
    len = strlen(s);
    tap_ok(like_reference(&anthropic_cfg, s, len),
           "scan = reference: anthropic thinking, tool input, signature");

    /* responses: other deltas, a type after the delta, the event name */

    s = "event: response.created\n"
        "data: {\"type\":\"response.created\",\"response\":{\"model\":"
        "\"gpt\",\"usage\":null}}\n\n"
        "data: {\"delta\":\"args\",\"type\":"
        "\"response.function_call_arguments.delta\"}\n\n"
        "event: response.output_text.delta\n"
        "data: {\"delta\":\"by name\"}\n\n"
        "event: response.output_text.delta\n"
        "data: {\"type\":\"response.output_text.done\",\"delta\":\"no\"}\n\n"
        "data: {\"type\":\"response.reasoning_summary_text.delta.and.a."
        "type.name.longer.than.sixty.four.bytes.delta\",\"delta\":\"l\"}"
        "\n\n"
        "data: {\"type\":\"response.output_text.delta\",\"delta\":[\"x\"]}"
        "\n\n";
    len = strlen(s);
    tap_ok(like_reference(&responses_cfg, s, len),
           "scan = reference: responses delta types, names, long type");

    /*
     * The scan reads a key whose colon follows it, and a string value
     * nothing is read of, in one step; around them: blanks before the
     * colon, escapes in keys and in values, empty strings, a line's end
     * inside a string, data lines joined before a colon and a value.
     */

    s = "data: {\"id\" :\"x\",\"model\":\"m\",\"choices\":[{\"index\":0,"
        "\"delta\":{\"content\" : \"a b\",\"role\"\t:\"assistant\"}}]}\n\n"
        "data: {\"id\":\"a\\\"b\\\\c\\u0041\",\"object\":\"x\\/y\","
        "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t\\\"\"}}]}\n\n"
        "data: {\"mod\\u0065l\":\"m2\",\"choices\":[{\"delta\":{"
        "\"cont\\\"ent\":\"zz\",\"content\":\"q\\\"r\\\\s\\u00e9\"}}]}\n\n"
        "data: {\"\":\"\",\"choices\":[{\"delta\":{\"content\":\"\","
        "\"\":\"\"}}],\"x\":[\"\",\"y\",{\"\":1}]}\n\n"
        "data: {\"id\":\"a\rb\",\"choices\":[{\"delta\":{\"content\":"
        "\"c\"}}]}\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\"\n"
        "data: :\"d\",\"refusal\":\n"
        "data: \"e\"}}]}\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\":\"f\",\"refusal\":"
        "\"g\\\\\"}}],\"model\" :\"m3\"}\n\n"
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\" :1,"
        "\"completion_tokens\": 2,\"total_tokens\":3}}\n\n"
        "data: [DONE]\n\n";
    len = strlen(s);
    tap_ok(like_reference(&openai_hide, s, len),
           "scan = reference: keys and plain strings read in one step");
    tap_ok(like_reference(&openai_keep, s, len),
           "scan = reference: the same, usage kept");

    s = "data: {\"type\" :\"response.output_text.delta\",\"delta\" :"
        "\"ab\",\"item_id\":\"i\\\"d\"}\n\n"
        "data: {\"delta\":\"c\\u00e9\",\"ty\\u0070e\":"
        "\"response.output_text.delta\"}\n\n"
        "data: {\"type\":\"response.completed\",\"response\" :{\"model\":"
        "\"gpt\",\"usage\":{\"input_tokens\" :2,\"output_tokens\":3,"
        "\"total_tokens\":5}}}\n\n";
    len = strlen(s);
    tap_ok(like_reference(&responses_cfg, s, len),
           "scan = reference: responses, keys read in one step");
}


/* strings: what looks like a key inside one is text */

static void
test_scan_strings(void)
{
    const char    *s;
    run_t          r;
    al_llm_sse_t   x;

    /* "usage" inside a content string is not usage */

    s = "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":"
        "\"usage\"}}],\"x\":\"usage\"}\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\":"
        "\"\\\"usage\\\":{\\\"prompt_tokens\\\":99}\"}}]}\n\n"
        "data: {\"choices\":[],\"note\":\"\\\"usage\\\":{}\"}\n\n"
        "data: [DONE]\n\n";
    run(&openai_hide, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.dropped == 0 && r.kept_len == strlen(s)
           && r.source == AL_LLM_SOURCE_ESTIMATED
           && r.usage.prompt_tokens == 0,
           "\"usage\" inside strings: no usage, nothing dropped");
    tap_ok(every_split(&openai_hide, s, strlen(s), &r),
           "\"usage\" inside strings: every split");
    run_free(&r);

    scan_stream(&openai_hide, s, strlen(s), strlen(s), 0, &x);
    tap_is_int((long) x.parsed, 1,
               "\"usage\" inside strings: only the model event parsed");
    tap_is_int((long) x.delta_bytes, 5 + 28,
               "\"usage\" inside strings: counted as text, escapes "
               "decoded");
    al_llm_sse_free(&x);

    /* escaped quotes and backslashes before the real usage */

    s = "data: {\"choices\":[],\"a\":\"\\\\\",\"b\":\"\\\\\\\"\","
        "\"c\":\"}]\\\"\",\"usage\":{\"prompt_tokens\":2,"
        "\"completion_tokens\":1,\"total_tokens\":3}}\n\n"
        "data: [DONE]\n\n";
    run(&openai_hide, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.dropped == 1 && r.usage.total_tokens == 3
           && r.source == AL_LLM_SOURCE_STREAM
           && r.kept_len == 14,
           "escaped quotes and backslashes: the usage after them found");
    tap_ok(every_split(&openai_hide, s, strlen(s), &r),
           "escaped quotes: every split");
    run_free(&r);

    /* a key written with escapes goes to jansson, which decodes it */

    s = "data: {\"choices\":[],\"us\\u0061ge\":{\"prompt_tokens\":2,"
        "\"completion_tokens\":1,\"total_tokens\":3}}\n\n"
        "data: [DONE]\n\n";
    run(&openai_hide, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.dropped == 1 && r.usage.total_tokens == 3
           && r.source == AL_LLM_SOURCE_STREAM,
           "a key with escapes: parsed, usage found");
    run_free(&r);

    /* the same key twice: jansson keeps the last */

    s = "data: {\"choices\":[],\"usage\":{\"total_tokens\":3},"
        "\"usage\":null}\n\n"
        "data: [DONE]\n\n";
    run(&openai_hide, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.dropped == 0 && r.source == AL_LLM_SOURCE_ESTIMATED,
           "usage then usage null: no usage, kept");
    run_free(&r);

    /* usage null on every chunk (include_usage): none of them parsed */

    s = "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":"
        "\"ab\"}}],\"usage\":null}\n\n"
        "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":"
        "\"cd\"}}],\"usage\":null}\n\n"
        "data: {\"model\":\"m\",\"choices\":[],\"usage\":{"
        "\"prompt_tokens\":2,\"completion_tokens\":1,\"total_tokens\":3}}"
        "\n\n"
        "data: [DONE]\n\n";
    scan_stream(&openai_hide, s, strlen(s), strlen(s), 0, &x);
    tap_ok(x.parsed == 2 && x.usage.total_tokens == 3 && x.dropped == 1
           && x.delta_bytes == 4,
           "\"usage\":null chunks are not parsed; the model event and the "
           "usage one are");
    al_llm_sse_free(&x);

    /* not one object: nothing, as jansson would give */

    s = "data: {\"choices\":[],\"usage\":{\"total_tokens\":3}} {}\n\n"
        "data: [{\"choices\":[],\"usage\":{\"total_tokens\":3}}]\n\n"
        "data: {\"choices\":[],\"usage\":{\"total_tokens\":3}\n\n"
        "data: [DONE]\n\n";
    run(&openai_hide, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.dropped == 0 && r.source == AL_LLM_SOURCE_ESTIMATED
           && r.done && r.kept_len == strlen(s),
           "trailing data, an array, an unclosed object: no usage");
    run_free(&r);
}


/* which events go to jansson */

static void
test_scan_parsed(void)
{
    char          *s, *deep;
    size_t         len, i;
    al_llm_sse_t   x;

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\n", &len);
    scan_stream(&openai_hide, s, len, len, 0, &x);
    tap_ok(x.parsed == 2 && x.events == 7,
           "openai: 2 of 7 events parsed (model, usage)");
    al_llm_sse_free(&x);
    free(s);

    s = join(anthropic_blocks, ANTHROPIC_N, NOSKIP, "\n", &len);
    scan_stream(&anthropic_cfg, s, len, len, 0, &x);
    tap_ok(x.parsed == 4 && x.events == 9,
           "anthropic: 4 of 9 events parsed (message_start, 2 "
           "message_delta, message_stop)");
    tap_is_int((long) x.delta_bytes, 5 + 20,
               "anthropic: content_block_delta text counted, \\u00e9 as 2");
    al_llm_sse_free(&x);
    free(s);

    s = join(responses_blocks, RESPONSES_N, NOSKIP, "\n", &len);
    scan_stream(&responses_cfg, s, len, len, 0, &x);
    tap_ok(x.parsed == 2 && x.events == 4 && x.delta_bytes == 16,
           "responses: created (model) and completed parsed, deltas "
           "counted");
    al_llm_sse_free(&x);
    free(s);

    /* deeper than AL_JSON_DEPTH_MAX: not parsed, nothing counted */

    deep = malloc(64 + 2 * 40 + 64);
    if (deep == NULL) {
        abort();
    }

    len = 0;
    len += (size_t) sprintf(deep, "data: {\"choices\":[],\"usage\":{\"a\":");

    for (i = 0; i < 40; i++) {
        deep[len++] = '[';
    }

    for (i = 0; i < 40; i++) {
        deep[len++] = ']';
    }

    len += (size_t) sprintf(deep + len, "}}\n\ndata: [DONE]\n\n");

    scan_stream(&openai_hide, deep, len, 30, 0, &x);
    tap_ok(x.parsed == 0 && !x.usage_seen && x.done,
           "nesting over the bound: not parsed");
    al_llm_sse_free(&x);
    free(deep);
}


/* events in one piece are never copied */

static void
test_scan_copies(void)
{
    char          *s, *p;
    size_t         len, n, head;
    al_llm_sse_t   x;

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\n", &len);
    scan_stream(&openai_hide, s, len, len, 0, &x);
    tap_ok(scan_cap == 0 && x.usage_seen,
           "a stream in one slice: no event copied");
    al_llm_sse_free(&x);

    scan_stream(&openai_hide, s, len, strlen(openai_blocks[0]) + 20, 0,
                &x);
    tap_ok(scan_cap > 0 && x.usage_seen,
           "an event across slices: copied");
    al_llm_sse_free(&x);
    free(s);

    /* a huge content event: scanned in place, counted, never copied */

    n = 900 * 1024;
    head = strlen("data: {\"choices\":[{\"delta\":{\"content\":\"");
    s = malloc(head + n + 64);
    if (s == NULL) {
        abort();
    }

    p = s;
    memcpy(p, "data: {\"choices\":[{\"delta\":{\"content\":\"", head);
    p += head;
    memset(p, 'z', n);
    p += n;
    memcpy(p, "\"}}]}\n\ndata: [DONE]\n\n", 21);
    p += 21;
    len = (size_t) (p - s);

    scan_stream(&openai_hide, s, len, len, 0, &x);
    tap_ok(scan_cap == 0 && x.delta_bytes == n && x.parsed == 0
           && x.done && !x.stopped,
           "a 900 KiB event in one slice: counted, not copied, not parsed");
    al_llm_sse_free(&x);

    scan_stream(&openai_hide, s, len, head + n / 2, 0, &x);
    tap_ok(x.delta_bytes == n && x.parsed == 0 && x.done && !x.stopped,
           "the same split in the middle: the same count");
    al_llm_sse_free(&x);

    /* a usage event behind a huge string: split, copied, parsed */

    p = s;
    memcpy(p, "data: {\"choices\":[],\"pad\":\"", 27);
    p += 27;
    memset(p, 'q', n);
    p += n;
    memcpy(p, "\",\"usage\":{\"total_tokens\":7}}\n\ndata: [DONE]\n\n", 45);
    p += 45;
    len = (size_t) (p - s);

    scan_stream(&openai_hide, s, len, 27 + n / 3, 0, &x);
    tap_ok(x.usage_seen && x.usage.total_tokens == 7 && x.dropped == 1
           && x.parsed == 1 && scan_cap > 0,
           "usage after 900 KiB, split: copied, found, dropped");
    al_llm_sse_free(&x);

    free(s);
}


/* text bytes as jansson decodes them */

static void
test_scan_counts(void)
{
    const char    *s;
    al_llm_sse_t   x;

    s = "data: {\"model\":\"m\",\"choices\":[]}\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\\n\\u00e9\\u20ac"
        "\\ud83d\\ude00\\\\\"}}]}\n\n";
    scan_stream(&openai_keep, s, strlen(s), 60, 0, &x);
    tap_is_int((long) x.delta_bytes, 1 + 1 + 2 + 3 + 4 + 1,
               "escapes count as their UTF-8 bytes");
    al_llm_sse_free(&x);

    /* multi-line data: joined with "\n", copied, counted once */

    s = "data: {\"model\":\"m\",\"choices\":[]}\n\n"
        "data: {\"choices\":[{\"delta\":\n"
        "data: {\"content\":\"abc\"}}]}\n\n"
        "data: {\"choices\":[],\n"
        "data: \"usage\":{\"total_tokens\":4}}\n\n"
        "data: [DONE]\n\n";
    scan_stream(&openai_hide, s, strlen(s), strlen(s), 0, &x);
    tap_ok(x.delta_bytes == 3 && x.usage.total_tokens == 4 && x.parsed == 2
           && x.dropped == 1,
           "multi-line data: scanned across the joins");
    al_llm_sse_free(&x);
}


/*
 * s against the reference at every split (like_reference()), then read
 * whole: the model and total wanted, and how many events jansson read
 * (the rest of those acted on went through the strict scanner).
 */

static int
strict_case(const cfg_t *cfg, const char *s, const char *model,
    uint64_t total, unsigned jansson)
{
    int           ok;
    size_t        len;
    al_llm_sse_t  x;

    len = strlen(s);
    ok = like_reference(cfg, s, len);

    scan_stream(cfg, s, len, len, 0, &x);

    if (strcmp(x.model, model) != 0 || x.usage.total_tokens != total
        || x.jansson != jansson)
    {
        printf("# model \"%s\" total %llu jansson %llu\n", x.model,
               (unsigned long long) x.usage.total_tokens,
               (unsigned long long) x.jansson);
        ok = 0;
    }

    al_llm_sse_free(&x);

    return ok;
}


/* chat events read without jansson, and those that still need it */

static void
test_strict(void)
{
    char          *s, *p;
    size_t         len, i;
    al_llm_sse_t   x;

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\n", &len);
    scan_stream(&openai_hide, s, len, 50, 0, &x);
    tap_ok(x.parsed == 2 && x.jansson == 0 && x.usage.total_tokens == 29
           && x.dropped == 1,
           "openai: the model and usage events read without jansson");
    al_llm_sse_free(&x);
    free(s);

    tap_ok(strict_case(&openai_hide,
               "data: {\"model\":\"a\",\"model\":\"b\",\"choices\":[]}\n\n"
               "data: {\"model\":\"c\",\"choices\":[],\"usage\":{"
               "\"total_tokens\":4}}\n\n"
               "data: [DONE]\n\n", "b", 4, 1),
           "strict: a duplicate model goes to jansson, which keeps the last");

    tap_ok(strict_case(&openai_hide,
               "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":"
               "\"a\",\"content\":\"bb\"}}],\"usage\":{\"total_tokens\":4}}"
               "\n\n"
               "data: [DONE]\n\n", "m", 4, 1),
           "strict: a duplicate key deep in choices, jansson's count");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,"
               "\"total_tokens\":3,\"total_tokens\":9}}\n\n"
               "data: [DONE]\n\n", "", 9, 1),
           "strict: a duplicate usage member, the last");

    tap_ok(strict_case(&openai_hide,
               "data: {\"model\":\"gpt\\u002d4\\u00e9\\ud83d\\ude00\\/x\","
               "\"choices\":[]}\n\n"
               "data: {\"model\":\"other\",\"choices\":[]}\n\n"
               "data: [DONE]\n\n", "gpt-4\xc3\xa9\xf0\x9f\x98\x80/x", 0,
               0),
           "strict: a model written with escapes, unescaped");

    tap_ok(strict_case(&openai_hide,
               "data: {\"model\":5,\"choices\":[]}\n\n"
               "data: {\"model\":null,\"choices\":[]}\n\n"
               "data: {\"model\":\"third\",\"choices\":[]}\n\n"
               "data: [DONE]\n\n", "third", 0, 0),
           "strict: models that are not strings are skipped");

    /* a model of 255 bytes fits, 256 does not */

    s = malloc(1024);
    if (s == NULL) {
        abort();
    }

    for (i = 255; i <= 256; i++) {
        p = s;
        p += sprintf(p, "data: {\"model\":\"");
        memset(p, 'm', i);
        p += i;
        (void) sprintf(p, "\",\"choices\":[]}\n\n"
                       "data: {\"model\":\"next\",\"choices\":[]}\n\n");
        scan_stream(&openai_hide, s, strlen(s), 30, 0, &x);
        tap_ok(like_reference(&openai_hide, s, strlen(s))
               && strlen(x.model) == (i == 255 ? 255 : 4)
               && x.jansson == 0,
               i == 255 ? "strict: a model of 255 bytes kept"
                        : "strict: a model of 256 bytes too long, skipped");
        al_llm_sse_free(&x);
    }

    free(s);

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":"
               "9223372036854775807,\"completion_tokens\":-5,"
               "\"total_tokens\":0}}\n\n"
               "data: [DONE]\n\n", "", UINT64_C(1) << 48, 0),
           "strict: INT64_MAX clamped to 2^48, negative as 0");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":"
               "9223372036854775808,\"total_tokens\":3}}\n\n"
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":"
               "-9223372036854775809,\"total_tokens\":3}}\n\n"
               "data: [DONE]\n\n", "", 3, 2),
           "strict: integers over 64 bits refused, jansson reads them as "
           "the nearest in 64 bits");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":"
               "-9223372036854775808,\"completion_tokens\":2.0,"
               "\"total_tokens\":1e2,\"x\":1e-400,\"y\":-0.5E+3}}\n\n"
               "data: [DONE]\n\n", "", 0, 0),
           "strict: reals and INT64_MIN read, none counted");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3,"
               "\"x\":1e400}}\n\n"
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3,"
               "\"x\":01}}\n\n"
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3,"
               "\"x\":1.}}\n\n"
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3},"
               "\"x\":tru}\n\n"
               "data: [DONE]\n\n", "", 3, 4),
           "strict: a real overflow, a leading zero, '1.', 'tru': refused; "
           "jansson reads the first");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3},"
               "\"x\":\"\\u0000\"}\n\n"
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3},"
               "\"x\":\"\\ud800\"}\n\n"
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3},"
               "\"x\":\"\xc0\xaf\"}\n\n"
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3},"
               "\"x\":\"\xed\xa0\x80\"}\n\n"
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3},"
               "\"x\":\"a\tb\"}\n\n"
               "data: [DONE]\n\n", "", 3, 5),
           "strict: \\u0000, a lone surrogate, bad UTF-8, a tab: refused; "
           "jansson reads the first two");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":[{\"total_tokens\":3}]}\n\n"
               "data: {\"choices\":[],\"usage\":\"x\"}\n\n"
               "data: {\"choices\":[],\"usage\":3}\n\n"
               "data: [DONE]\n\n", "", 0, 0),
           "strict: usage not an object: no usage");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
               "\"completion_tokens\":5,\"prompt_tokens_details\":{"
               "\"cached_tokens\":7,\"audio_tokens\":1,\"x\":{\"y\":[1]}}}}"
               "\n\n"
               "data: [DONE]\n\n", "", 15, 0),
           "strict: usage details, cached tokens, total from the sum");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
               "\"completion_tokens\":5,\"total_tokens\":15,"
               "\"prompt_tokens_details\":{\"cached_tokens\":7,"
               "\"cached_tokens\":8}}}\n\n"
               "data: [DONE]\n\n", "", 15, 1),
           "strict: a duplicate in the details: jansson");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
               "\"total_tokens\":15,\"prompt_tokens_details\":[7],"
               "\"cached_tokens\":9}}\n\n"
               "data: [DONE]\n\n", "", 15, 0),
           "strict: details not an object, cached_tokens at the wrong "
           "level");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[{\"delta\":{\"content\":\"ab\"}}],"
               "\"error\":null,\"usage\":null}\n\n"
               "data: {\"choices\":[],\"error\":{\"message\":\"x\"}}\n\n"
               "data: [DONE]\n\n", "", 0, 0),
           "strict: error null, then an error object");

    tap_ok(strict_case(&openai_keep,
               "data: {\"error\":false}\n\n", "", 0, 0),
           "strict: error false is an error");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\": [ \n\t ] ,\"usage\":{\"total_tokens\":3}}"
               "\n\n"
               "data: {\"choices\":[{}],\"usage\":{\"total_tokens\":4}}\n\n"
               "data: {\"choices\":{},\"usage\":{\"total_tokens\":5}}\n\n"
               "data: [DONE]\n\n", "", 5, 0),
           "strict: blanks in an empty choices dropped; others kept");

    tap_ok(strict_case(&openai_hide,
               "data: {\"model\":\"m\",\"choices\":[{\"text\":\"abc\","
               "\"delta\":{\"content\":\"d\\u00e9\",\"role\":\"x\","
               "\"tool_calls\":[{\"id\":\"q\",\"function\":{\"arguments\":"
               "\"{}\"}}]}},5,{\"text\":7}],\"usage\":{\"total_tokens\":3}}"
               "\n\n"
               "data: [DONE]\n\n", "m", 3, 0),
           "strict: text bytes of a usage event, as jansson counts them");

    /* an object of more than 64 keys: the duplicate check is jansson's */

    s = malloc(4096);
    if (s == NULL) {
        abort();
    }

    p = s;
    p += sprintf(p, "data: {\"model\":\"k\",\"choices\":[]");

    for (i = 0; i < 70; i++) {
        p += sprintf(p, ",\"k%zu\":%zu", i, i);
    }

    (void) sprintf(p, ",\"usage\":{\"total_tokens\":6}}\n\ndata: [DONE]\n\n");
    tap_ok(strict_case(&openai_hide, s, "k", 6, 1),
           "strict: 70 keys in one object: jansson");
    free(s);

    /* deep but within the bound: read; a key with escapes: jansson */

    s = malloc(1024);
    if (s == NULL) {
        abort();
    }

    p = s;
    p += sprintf(p, "data: {\"choices\":[],\"usage\":{\"total_tokens\":3},"
                    "\"x\":");

    for (i = 0; i < AL_JSON_DEPTH_MAX - 1; i++) {
        *p++ = '[';
    }

    for (i = 0; i < AL_JSON_DEPTH_MAX - 1; i++) {
        *p++ = ']';
    }

    (void) sprintf(p, "}\n\ndata: [DONE]\n\n");
    tap_ok(strict_case(&openai_hide, s, "", 3, 0),
           "strict: nesting at the bound read");
    free(s);

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"total_\\u0074okens\":3}}"
               "\n\n"
               "data: [DONE]\n\n", "", 3, 1),
           "strict: a key with escapes: jansson");

    tap_ok(strict_case(&openai_hide,
               "data: {\"choices\":[],\"usage\":{\"total_tokens\":3}} \r\n"
               "\n"
               "data:  {\"choices\":[],\"usage\":{\"total_tokens\":4}}\t\n\n"
               "data: [DONE]\n\n", "", 4, 0),
           "strict: blanks around the object");
}


static void
test_strict_anthropic(void)
{
    char          *s;
    size_t         len;
    al_llm_sse_t   x;

    s = join(anthropic_blocks, ANTHROPIC_N, NOSKIP, "\n", &len);
    scan_stream(&anthropic_cfg, s, len, 70, 0, &x);
    tap_ok(x.parsed == 4 && x.jansson == 0 && x.done && x.started
           && x.usage.total_tokens == 2125 + 12,
           "anthropic: message_start, message_delta, message_stop read "
           "without jansson");
    al_llm_sse_free(&x);
    free(s);

    tap_ok(strict_case(&anthropic_cfg,
               "event: message_start\n"
               "data: {\"type\":\"message_start\",\"message\":{\"model\":"
               "\"cl\\u0061ude\",\"usage\":{\"input_tokens\":5}}}\n\n"
               "data: {\"type\":\"message_delta\",\"usage\":{"
               "\"output_tokens\":3,\"input_tokens\":-1,"
               "\"cache_read_input_tokens\":2}}\n\n"
               "data: {\"type\":\"message_stop\"}\n\n", "claude", 10, 1),
           "strict anthropic: a model with escapes: jansson; delta members "
           "replace");

    tap_ok(strict_case(&anthropic_cfg,
               "data: {\"type\":\"message_start\",\"message\":{\"model\":"
               "\"c\",\"usage\":7}}\n\n"
               "data: {\"type\":\"message_start\",\"message\":[]}\n\n"
               "event: message_delta\n"
               "data: {\"usage\":{\"output_tokens\":4,"
               "\"output_tokens\":6}}\n\n"
               "event: message_delta\n"
               "data: {\"usage\":[]}\n\n"
               "event: message_stop\n"
               "data: {}\n\n", "c", 6, 1),
           "strict anthropic: usage not an object, by event name, "
           "a duplicate");

    tap_ok(strict_case(&anthropic_cfg,
               "event: message_start\n"
               "data: {\"type\":\"message_start\",\"message\":{\"model\":"
               "\"c\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1,"
               "\"cache_creation_input_tokens\":2}}}\n\n"
               "event: error\n"
               "data: {\"type\":\"error\",\"error\":{\"type\":"
               "\"overloaded_error\"}}\n\n"
               "data: {\"type\":\"message_delta\",\"usage\":{"
               "\"output_tokens\":1e2}}\n\n"
               "data: {\"type\":\"message_stop\",\"x\":[1,]}\n\n",
               "c", 103, 1),
           "strict anthropic: an error, a real, an invalid stop");
}


static void
test_strict_responses(void)
{
    char          *s;
    size_t         len;
    al_llm_sse_t   x;

    s = join(responses_blocks, RESPONSES_N, NOSKIP, "\n", &len);
    scan_stream(&responses_cfg, s, len, 90, 0, &x);
    tap_ok(x.parsed == 2 && x.jansson == 0 && x.done
           && x.usage.total_tokens == 123 && x.usage.cached_tokens == 4,
           "responses: created and completed read without jansson");
    al_llm_sse_free(&x);
    free(s);

    tap_ok(strict_case(&responses_cfg,
               "data: {\"type\":\"response.created\",\"response\":{"
               "\"model\":\"g\\u0070t\"}}\n\n"
               "data: {\"type\":\"response.failed\",\"response\":{"
               "\"usage\":{\"input_tokens\":3,\"output_tokens\":4,"
               "\"input_tokens_details\":{\"cached_tokens\":1}}}}\n\n",
               "gpt", 7, 1),
           "strict responses: a model with escapes, a failed response");

    tap_ok(strict_case(&responses_cfg,
               "event: response.created\n"
               "data: {\"response\":\"x\",\"model\":\"no\"}\n\n"
               "event: response.in_progress\n"
               "data: {\"response\":{\"model\":\"yes\"}}\n\n"
               "event: error\n"
               "data: {\"code\":1}\n\n"
               "event: response.incomplete\n"
               "data: {\"response\":{\"usage\":{\"total_tokens\":8,"
               "\"total_tokens\":9}}}\n\n",
               "yes", 9, 1),
           "strict responses: by event name, an error, a duplicate");
}


/*
 * The scan skips plain string bytes eight at a time and the rest of a
 * number or literal at once: a quote or backslash at every offset of a
 * word, bytes over 0x7f that differ from them by the high bit only, and
 * literals next to brackets must count as before.
 */

static void
test_scan_runs(void)
{
    int      ok;
    char    *s, *p;
    size_t   k, m;

    s = malloc(4096);
    if (s == NULL) {
        abort();
    }

    ok = 1;

    for (k = 0; k < 17 && ok; k++) {
        for (m = 0; m < 3 && ok; m++) {
            p = s;
            p += sprintf(p, "data: {\"model\":\"m\",\"choices\":[]}\n\n"
                            "data: {\"choices\":[{\"delta\":{\"content\":\"");
            memset(p, 'a', k);
            p += k;
            p += sprintf(p, "%s", m == 0 ? "\\\"" : m == 1 ? "\\\\"
                                  : "\xc2\xa2\xdc\x9c\xe2\x80\xa2");
            memset(p, 'b', 16 - k);
            p += 16 - k;
            (void) sprintf(p, "\",\"x%.*s\":[1,true,null,-2.5e+3,{}]}}],"
                              "\"created\":1720000000,\"n\":false}\n\n"
                              "data: {\"choices\":[],\"usage\":{"
                              "\"total_tokens\":3},\"p%.*s\":\"\\\\\"}\n\n"
                              "data: [DONE]\n\n",
                           (int) k, "kkkkkkkkkkkkkkkkk", (int) m, "qq");
            ok = like_reference(&openai_hide, s, strlen(s));
        }
    }

    tap_ok(ok, "scan: quotes, backslashes and high bytes at every offset, "
               "literals, every split");
    free(s);
}


/*
 * Random events built from the names the parser reads and values at the
 * edges of what jansson accepts: the normal mode (the strict scanner,
 * jansson as fallback) against every event through jansson, streams cut
 * at a random point.  In valid JSON without duplicate keys the text
 * count must be equal too; otherwise only never lower (the scan counts
 * both values of a key twice, or text in an event jansson refuses, when
 * the event is not parsed).
 */

static const char *const  gen_keys[] = {
    "model", "usage", "choices", "delta", "content", "text", "error",
    "prompt_tokens", "completion_tokens", "total_tokens",
    "prompt_tokens_details", "cached_tokens", "type", "role", "id",
    "message", "response", "input_tokens", "output_tokens",
    "cache_read_input_tokens", "cache_creation_input_tokens",
    "input_tokens_details", "index", "x", "mo\\u0064el", "signature"
};

/* valid first; the last GEN_INVALID are what jansson refuses */
static const char *const  gen_scalars[] = {
    "0", "7", "-3", "12345678901234", "9223372036854775807",
    "-9223372036854775808", "1.5", "-0", "2e-400", "true", "false",
    "null", "\"\"", "\"gpt-4o\"", "\"a\\nb\\u00e9\"", "\"\\ud83d\\ude00\"",
    "\"\xc3\xa9t\xc3\xa9\"", "\"q\\\"\\\\\"", "\"message_start\"",
    "\"message_delta\"", "\"message_stop\"", "\"content_block_delta\"",
    "\"error\"", "\"response.completed\"", "\"response.failed\"",
    "\"response.output_text.delta\"", "\"response.created\"",
    "9223372036854775808", "1e400", "01", "nul", "\"\\ud800\"",
    "\"\\u0000\"", "\"\xc3\""
};

#define GEN_INVALID  7

#define GEN_N(a)  (sizeof(a) / sizeof((a)[0]))


static void
gen_put(char **p, char *end, const char *s)
{
    size_t  n;

    n = strlen(s);

    if ((size_t) (end - *p) > n) {
        memcpy(*p, s, n);
        *p += n;
    }
}


static void
gen_value(char **p, char *end, unsigned depth, unsigned dups)
{
    uint32_t  r, k, n;

    r = rnd() % 10;

    if (depth < 4 && r < 3) {
        gen_object(p, end, depth + 1, dups, 0);
        return;
    }

    if (depth < 4 && r < 5) {
        gen_put(p, end, "[");
        n = rnd() % 4;

        for (k = 0; k < n; k++) {
            if (k > 0) {
                gen_put(p, end, rnd() % 8 ? "," : " , ");
            }
            gen_value(p, end, depth + 1, dups);
        }

        gen_put(p, end, "]");
        return;
    }

    /* dups bit 1: values jansson refuses too */

    gen_put(p, end, gen_scalars[rnd() % (GEN_N(gen_scalars)
                                         - ((dups & 2) ? 0 : GEN_INVALID))]);
}


static void
gen_object(char **p, char *end, unsigned depth, unsigned dups,
    unsigned root)
{
    uint32_t  k, n, key, used;

    gen_put(p, end, "{");
    n = rnd() % (root ? 6 : 4);
    used = 0;

    for (k = 0; k < n; k++) {
        key = rnd() % GEN_N(gen_keys);

        if (!(dups & 1) && (used >> key & 1)) {
            continue;
        }

        if (used != 0) {
            gen_put(p, end, rnd() % 8 ? "," : ",\n ");
        }

        used |= (uint32_t) 1 << key;
        gen_put(p, end, "\"");
        gen_put(p, end, gen_keys[key]);
        gen_put(p, end, "\":");

        if (rnd() % 3 == 0) {
            gen_value(p, end, depth, dups);

        } else if (strcmp(gen_keys[key], "choices") == 0) {
            gen_put(p, end, rnd() % 3 ? "[{\"delta\":" : "[");
            gen_value(p, end, depth + 2, dups);
            gen_put(p, end, rnd() % 2 ? "}]" : ",{\"text\":\"ab\"}]");

        } else if (strchr("umrd", gen_keys[key][0]) != NULL) {
            gen_object(p, end, depth + 1, dups, 0);

        } else {
            gen_value(p, end, depth, dups);
        }
    }

    gen_put(p, end, "}");
}


static void
test_random_events(void)
{
    char          *s, *p, *end;
    size_t         len, cut, bad, t, e, nev, fast, slow;
    unsigned       dups;
    al_llm_sse_t   x, y;

    static const cfg_t  *cfgs[] = {
        &openai_hide, &openai_keep, &anthropic_cfg, &responses_cfg
    };

    s = malloc(65536);
    if (s == NULL) {
        abort();
    }

    end = s + 65536 - 64;
    bad = 0;
    fast = 0;
    slow = 0;

    for (t = 0; t < 20000; t++) {
        p = s;
        dups = (t / 4) % 4;             /* 0: valid, no duplicate keys */
        nev = 1 + rnd() % 6;

        for (e = 0; e < nev; e++) {
            if (rnd() % 4 == 0) {
                gen_put(&p, end, rnd() % 2 ? "event: message_delta\n"
                                           : "event: response.completed\n");
            }

            gen_put(&p, end, "data: ");
            gen_object(&p, end, 1, dups, 1);
            gen_put(&p, end, "\n\n");
        }

        gen_put(&p, end, "data: [DONE]\n\n");
        len = (size_t) (p - s);
        cut = rnd() % (len + 1);

        scan_stream(cfgs[t % 4], s, len, cut, 0, &x);
        scan_stream(cfgs[t % 4], s, len, cut, 1, &y);

        if (memcmp(&x.usage, &y.usage, sizeof(x.usage)) != 0
            || strcmp(x.model, y.model) != 0
            || x.done != y.done || x.usage_seen != y.usage_seen
            || x.error != y.error || x.started != y.started
            || x.dropped != y.dropped || x.events != y.events
            || (dups != 0 ? x.delta_bytes < y.delta_bytes
                          : x.delta_bytes != y.delta_bytes))
        {
            if (bad++ == 0) {
                printf("# differs from the reference: %.*s\n", (int) len,
                       s);
            }
        }

        fast += x.parsed - x.jansson;
        slow += x.jansson;

        al_llm_sse_free(&x);
        al_llm_sse_free(&y);
    }

    printf("# random events: %zu read by the strict scanner, %zu by "
           "jansson\n", fast, slow);

    tap_ok(bad == 0 && fast > 2000 && slow > 2000,
           "random events: the same as every event through jansson");

    free(s);
}


/*
 * The envelope memo (al_llm_scan_first()): events that share their start
 * with the one scanned before, and differ from it just after, at the memo's
 * end or inside it; escapes, a key written with escapes and usage after
 * the shared start; data lines joined; against the reference at every
 * split, which also moves where the memo is recorded and whether it is
 * used.
 */

#define MEMO_E                                                                \
    "data: {\"id\":\"c-1\",\"object\":\"chat.completion.chunk\","           \
    "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{"

#define MEMO_T  "},\"finish_reason\":null}]}\n\n"

#define MEMO_A                                                                \
    "event: content_block_delta\n"                                            \
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{"         \
    "\"type\":\"text_delta\",\"text\":\""

#define MEMO_R                                                                \
    "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"i\","      \
    "\"output_index\":0,\"delta\":\""

static void
test_memo(void)
{
    char         buf[8192];
    size_t       e, n;
    const char  *s;

    s = MEMO_E "\"role\":\"assistant\",\"content\":\"\"" MEMO_T
        MEMO_E "\"content\":\"Hello\"" MEMO_T
        MEMO_E "\"content\":\" w\\\"or\\\\\\u00e9\\ud83d\\ude00ld\"" MEMO_T
        MEMO_E "\"content\":\"x\",\"\\u0074ext\":\"esc key\"" MEMO_T
        MEMO_E "\"content\":\"two\"},\ndata: \"finish_reason\":null}]}\n\n"
        MEMO_E "\"content\":\"\"" MEMO_T
        MEMO_E "\"content\":5" MEMO_T
        MEMO_E "\"content\":\"y\"}},{\"index\":1,\"delta\":{\"content\":"
        "\"z\"}}]}\n\n"
        "data: {\"id\":\"c-2\",\"object\":\"chat.completion.chunk\","
        "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{"
        "\"content\":\"again\"" MEMO_T
        MEMO_E "\"content\":\"a\"},\"finish_reason\":null}],\"usage\":{"
        "\"prompt_tokens\":5,\"completion_tokens\":6,\"total_tokens\":11}}"
        "\n\n"
        MEMO_E "\"content\":\"b\"}}]}\n\n"
        MEMO_E "\"content\":\"c\"" MEMO_T
        MEMO_E "}" MEMO_T
        "data: {\"id\":\"c-1\",\"object\":\"chat.completion.chunk\","
        "\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{"
        "\"prompt_tokens\":7,\"completion_tokens\":8,\"total_tokens\":15}}"
        "\n\n"
        "data: [DONE]\n\n";
    tap_ok(like_reference(&openai_hide, s, strlen(s)),
           "memo: chat events sharing an envelope, every split");
    tap_ok(like_reference(&openai_keep, s, strlen(s)),
           "memo: the same, usage kept");

    s = "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"model\":\"c\","
        "\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
        MEMO_A "Hi\"}}\n\n"
        MEMO_A " there\\n\"}}\n\n"
        MEMO_A "\"},\"x\":[\"not counted\"]}\n\n"
        MEMO_A "a\",\"more\":{\"t\":\"counted\",\"id\":\"not\"}}}\n\n"
        "event: content_block_delta\n"
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{"
        "\"type\":\"text_delta\",\"text\":\"one\"}}\n\n"
        MEMO_A "x\"},\"usage\":{\"output_tokens\":9}}\n\n"
        "event: message_delta\n"
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
        "\"end_turn\"},\"usage\":{\"output_tokens\":12}}\n\n"
        "event: message_stop\n"
        "data: {\"type\":\"message_stop\"}\n\n";
    tap_ok(like_reference(&anthropic_cfg, s, strlen(s)),
           "memo: anthropic deltas sharing their start, every split");

    s = "data: {\"type\":\"response.created\",\"response\":{\"model\":"
        "\"gpt\",\"usage\":null}}\n\n"
        MEMO_R "one\"}\n\n"
        MEMO_R "two\",\"type\":\"response.output_text.done\"}\n\n"
        MEMO_R "three\"}\n\n"
        MEMO_R "\\u0041\"}\n\n"
        "data: {\"type\":\"response.completed\",\"response\":{\"model\":"
        "\"gpt\",\"usage\":{\"input_tokens\":4,\"output_tokens\":5,"
        "\"total_tokens\":9}}}\n\n";
    tap_ok(like_reference(&responses_cfg, s, strlen(s)),
           "memo: responses deltas sharing their start, every split");

    /*
     * The memo keeps of a point's scan state the type only when the
     * event has one by then: a type that comes after the points, events
     * without one (the "event:" field decides), then one before them,
     * each sharing its start with the one before.
     */

    s = "event: content_block_delta\n"
        "data: {\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
        "\"a\"},\"type\":\"content_block_delta\"}\n\n"
        "event: content_block_delta\n"
        "data: {\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
        "\"bb\"}}\n\n"
        "event: ping\n"
        "data: {\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
        "\"not counted\"}}\n\n"
        "event: ping\n"
        "data: {\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
        "\"ccc\"},\"type\":\"content_block_delta\"}\n\n"
        MEMO_A "dddd\"}}\n\n"
        "event: ping\n"
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{"
        "\"type\":\"text_delta\",\"text\":\"eeeee\"}}\n\n"
        "event: content_block_delta\n"
        "data: {\"type\":\"ping\",\"index\":0,\"delta\":{"
        "\"type\":\"text_delta\",\"text\":\"not counted\"}}\n\n"
        "event: message_stop\n"
        "data: {\"type\":\"message_stop\"}\n\n";
    tap_ok(like_reference(&anthropic_cfg, s, strlen(s)),
           "memo: a type after the points, none, before them, every split");

    /*
     * A counter early in each event: nothing shared for 40 events (the
     * memo records on one in 16 after 4), then the same start again.
     */

    n = 0;

    for (e = 0; e < 48; e++) {
        n += (size_t) snprintf(buf + n, sizeof(buf) - n,
                               "data: {\"type\":\"response.output_text."
                               "delta\",\"sequence_number\":%zu,\"delta\":"
                               "\"w%zu\",\"x\":[1]}\n\n",
                               e < 40 ? e : 99, e);
    }

    n += (size_t) snprintf(buf + n, sizeof(buf) - n, "%s",
                           "data: {\"type\":\"response.completed\","
                           "\"response\":{\"model\":\"gpt\",\"usage\":{"
                           "\"input_tokens\":4,\"output_tokens\":5,"
                           "\"total_tokens\":9}}}\n\n");
    tap_ok(n < sizeof(buf) && like_reference(&responses_cfg, buf, n),
           "memo: events sharing nothing, then a start, every split");
}


/*
 * The memo's tail (al_llm_scan_tail()): events that end the same way after
 * their text, with text of every kind before (escapes, \u, a surrogate
 * pair, none); tails that differ by a byte, count text of
 * their own, change the type, end in blanks or CRLF, run on to another
 * data line, or are 64 and 65 bytes long.  Against the reference at every
 * split; fed whole, the tail is used.
 */

#define TAIL_T  "\"},\"finish_reason\":null}]}"

static void
test_memo_tail(void)
{
    const char    *s;
    al_llm_sse_t   x;

    s = MEMO_E "\"role\":\"assistant\",\"content\":\"\"" MEMO_T
        MEMO_E "\"content\":\"Hello" TAIL_T "\n\n"
        MEMO_E "\"content\":\" w\\\"or\\\\\\u00e9\\ud83d\\ude00ld" TAIL_T "\n\n"
        MEMO_E "\"content\":\"" TAIL_T "\n\n"
        MEMO_E "\"content\":\"tab\\there\\n" TAIL_T "\n\n"
        MEMO_E "\"content\":\"x" TAIL_T "\n\n"
        MEMO_E "\"content\":\"y\"},\"finish_reason\":null}]}  \n\n"
        MEMO_E "\"content\":\"yy\"},\"finish_reason\":null}]}  \n\n"
        MEMO_E "\"content\":\"z" TAIL_T "\r\n\r\n"
        MEMO_E "\"content\":\"zz" TAIL_T "\r\n\r\n"
        MEMO_E "\"content\":\"c\"}},{\"index\":1,\"delta\":{\"content\":"
        "\"counted\"}}]}\n\n"
        MEMO_E "\"content\":\"cc\"}},{\"index\":1,\"delta\":{\"content\":"
        "\"counted\"}}]}\n\n"
        MEMO_E "\"content\":\"d\"},\ndata: \"finish_reason\":null}]}\n\n"
        MEMO_E "\"content\":\"d\"},\ndata: \"finish_reason\":null}]}\n\n"
        MEMO_E "\"content\":\"e\"},\"finish_reason\":null,\"x\":"
        "\"01234567890123456789012345678901\"}]}\n\n"
        MEMO_E "\"content\":\"ee\"},\"finish_reason\":null,\"x\":"
        "\"01234567890123456789012345678901\"}]}\n\n"
        MEMO_E "\"content\":\"f\"},\"finish_reason\":null,\"x\":"
        "\"012345678901234567890123456789012\"}]}\n\n"
        MEMO_E "\"content\":\"ff\"},\"finish_reason\":null,\"x\":"
        "\"012345678901234567890123456789012\"}]}\n\n"
        MEMO_E "\"content\":\"g" TAIL_T "\n\n"
        MEMO_E "\"content\":\"g" TAIL_T ",\"usage\":{\"prompt_tokens\":1,"
        "\"completion_tokens\":2,\"total_tokens\":3}}\n\n"
        MEMO_E "\"content\":\"h" TAIL_T "\n\n"
        "data: [DONE]\n\n";
    tap_ok(like_reference(&openai_hide, s, strlen(s))
           && like_reference(&openai_keep, s, strlen(s)),
           "memo tail: chat events ending alike after their text, "
           "every split");

    al_llm_sse_init(&x, AL_LLM_OPENAI, AL_LLM_EP_CHAT, 1);
    al_llm_sse_observe(&x, (const unsigned char *) s, strlen(s));
    tap_ok(x.tail_ok && x.tail_len == strlen(TAIL_T) - 1,
           "memo tail: kept when fed whole");
    al_llm_sse_free(&x);

    s = "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"model\":\"c\","
        "\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
        MEMO_A "Hi\"}}\n\n"
        MEMO_A " there\\n\"}}\n\n"
        MEMO_A "a\"},\"type\":\"ping\"}\n\n"
        MEMO_A "b\"},\"type\":\"ping\"}\n\n"
        MEMO_A "c\"}}\n\n"
        MEMO_A "d\"},\"type\":\"content_block_delta\"}\n\n"
        MEMO_A "e\"},\"type\":\"content_block_delta\"}\n\n"
        MEMO_A "f\"},\"type\":\"message_stop\"}\n\n"
        MEMO_A "g\"}}\n\n"
        "event: message_delta\n"
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
        "\"end_turn\"},\"usage\":{\"output_tokens\":12}}\n\n"
        "event: message_stop\n"
        "data: {\"type\":\"message_stop\"}\n\n";
    tap_ok(like_reference(&anthropic_cfg, s, strlen(s)),
           "memo tail: anthropic deltas, a tail that changes the type, "
           "every split");
}


/*
 * Random events derived from one object (a byte changed, cut and
 * continued, split into two data lines), so most share a start: the
 * stream fed whole, where the memo is used, against the stream fed a
 * byte at a time, where it never is (a first piece of one byte records
 * nothing and matches nothing): every result the same, to the counters.
 */

static void
test_memo_random(void)
{
    char          *s, *p, *end, *base, *q;
    size_t         len, blen, t, e, nev, at, k, bad, used;
    unsigned       dups;
    al_llm_sse_t   x, y;

    static const cfg_t  *cfgs[] = {
        &openai_hide, &openai_keep, &anthropic_cfg, &responses_cfg
    };

    static const char  subst[] = "\"\\{}[],: a1n\n";

    /* a start with counted text, as each protocol's deltas have it */
    static const char *const  starts[] = {
        "{\"id\":\"i\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\"ab\"}}]",
        "{\"id\":\"i\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\"ab\"}}]",
        "{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"ab\"}",
        "{\"type\":\"response.output_text.delta\",\"delta\":\"a\\u00e9\""
    };

    s = malloc(65536);
    base = malloc(4096);
    if (s == NULL || base == NULL) {
        abort();
    }

    end = s + 65536 - 64;
    bad = 0;
    used = 0;

    for (t = 0; t < 20000; t++) {
        dups = (t / 4) % 4;
        q = base;

        if (rnd() % 4 != 0) {
            /* the start, then the members of a random object */
            gen_put(&q, base + 4096 - 64, starts[t % 4]);
            k = (size_t) (q - base);
            gen_object(&q, base + 4096 - 64, 1, dups, 1);
            base[k] = (q - base > (ptrdiff_t) k + 2) ? ',' : ' ';

        } else {
            gen_object(&q, base + 4096 - 64, 1, dups, 1);
        }

        blen = (size_t) (q - base);

        p = s;
        nev = 2 + rnd() % 6;

        for (e = 0; e < nev; e++) {
            gen_put(&p, end, "data: ");

            if ((size_t) (end - p) < 2 * blen + 16) {
                break;
            }

            at = rnd() % (blen + 1);

            switch (rnd() % 5) {

            case 0:                     /* the object as it is */
                memcpy(p, base, blen);
                p += blen;
                break;

            case 1:                     /* one byte changed */
                memcpy(p, base, blen);

                if (at < blen) {
                    p[at] = rnd() % 2 ? 'a'
                                      : subst[rnd() % (sizeof(subst) - 1)];
                }

                p += blen;
                break;

            case 2:                     /* cut, and another object's end */
                memcpy(p, base, at);
                p += at;
                q = p;
                gen_object(&p, end, 1, dups, 1);

                for (k = 0; q + k < p && q[k] != '"'; k++) {
                    /* void */
                }

                memmove(q, q + k, (size_t) (p - q) - k);
                p -= k;
                break;

            default:                    /* two data lines */
                memcpy(p, base, at);
                p += at;
                gen_put(&p, end, "\ndata: ");
                memcpy(p, base + at, blen - at);
                p += blen - at;
                break;
            }

            gen_put(&p, end, "\n\n");
        }

        gen_put(&p, end, "data: [DONE]\n\n");
        len = (size_t) (p - s);

        al_llm_sse_init(&x, cfgs[t % 4]->kind, cfgs[t % 4]->ep,
                        cfgs[t % 4]->hide);
        al_llm_sse_init(&y, cfgs[t % 4]->kind, cfgs[t % 4]->ep,
                        cfgs[t % 4]->hide);

        al_llm_sse_observe(&x, (const unsigned char *) s, len);

        for (k = 0; k < len; k++) {
            al_llm_sse_observe(&y, (const unsigned char *) s + k, 1);
        }

        if (y.memo_points != 0) {
            abort();                    /* not the reference it should be */
        }

        used += (x.memo_points != 0);

        if (!memo_same(&x, &y)) {
            if (bad++ == 0) {
                printf("# memo: differs: %.*s\n", (int) len, s);
            }
        }

        al_llm_sse_free(&x);
        al_llm_sse_free(&y);
    }

    printf("# memo: recorded in %zu of 20000 random streams\n", used);

    tap_ok(bad == 0 && used > 2000,
           "memo: random events sharing a start, the same as without it");

    free(base);
    free(s);
}


static int
memo_same(const al_llm_sse_t *x, const al_llm_sse_t *y)
{
    return memcmp(&x->usage, &y->usage, sizeof(x->usage)) == 0
           && strcmp(x->model, y->model) == 0
           && x->delta_bytes == y->delta_bytes && x->events == y->events
           && x->dropped == y->dropped && x->parsed == y->parsed
           && x->jansson == y->jansson && x->done == y->done
           && x->usage_seen == y->usage_seen && x->error == y->error
           && x->stopped == y->stopped && x->started == y->started;
}


/*
 * no_model: the module does not read the model, so no event is read in
 * full for it alone; everything else is as with the model wanted.
 */

static void
test_no_model(void)
{
    size_t                i, k, len;
    al_llm_sse_t          want, skip;
    al_llm_usage_t        uw, us;
    const char *const    *blocks;
    char                  text[8192];

    static const struct {
        const char *const  *blocks;
        size_t              n;
        al_llm_endpoint_t   ep;
        const char         *name;
    }  streams[] = {
        { openai_blocks, OPENAI_N, AL_LLM_EP_CHAT,
          "no model: chat: no event read for it, the rest the same" },
        { responses_blocks, RESPONSES_N, AL_LLM_EP_RESPONSES,
          "no model: responses: no event read for it, the rest the same" }
    };

    for (k = 0; k < sizeof(streams) / sizeof(streams[0]); k++) {
        blocks = streams[k].blocks;
        len = 0;

        for (i = 0; i < streams[k].n; i++) {
            len += (size_t) snprintf(text + len, sizeof(text) - len, "%s",
                                     blocks[i]);
        }

        al_llm_sse_init(&want, AL_LLM_OPENAI, streams[k].ep, 1);
        al_llm_sse_init(&skip, AL_LLM_OPENAI, streams[k].ep, 1);
        skip.no_model = 1;

        al_llm_sse_observe(&want, (const unsigned char *) text, len);
        al_llm_sse_observe(&skip, (const unsigned char *) text, len);

        (void) al_llm_sse_result(&want, 0, 0, &uw);
        (void) al_llm_sse_result(&skip, 0, 0, &us);

        tap_ok(skip.parsed + 1 == want.parsed
               && memcmp(&uw, &us, sizeof(uw)) == 0
               && want.delta_bytes == skip.delta_bytes
               && want.dropped == skip.dropped && want.done == skip.done
               && want.usage_seen == skip.usage_seen
               && want.error == skip.error,
               streams[k].name);

        al_llm_sse_free(&want);
        al_llm_sse_free(&skip);
    }
}


/*
 * A usage whose total_tokens is above its prompt and completion tokens
 * (proxies in front of Gemini leave its thinking tokens, billed as
 * output, out of completion_tokens): the rest is counted as output.
 */

static void
test_total_over(void)
{
    run_t        r;
    const char  *s;

    s = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\","
        "\"model\":\"gemini-2.5-flash\",\"choices\":[{\"index\":0,"
        "\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n"
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\","
        "\"model\":\"gemini-2.5-flash\",\"choices\":[],\"usage\":"
        "{\"prompt_tokens\":21,\"completion_tokens\":5,"
        "\"total_tokens\":466}}\n\n"
        "data: [DONE]\n\n";

    run(&openai_hide, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM && r.usage.prompt_tokens == 21
           && r.usage.completion_tokens == 445
           && r.usage.total_tokens == 466,
           "chat stream: total over prompt and completion is output");
    tap_ok(every_split(&openai_hide, s, strlen(s), &r),
           "... at every split");
    run_free(&r);

    s = "event: response.completed\n"
        "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\","
        "\"model\":\"gemini-2.5-flash\",\"usage\":{\"input_tokens\":36,"
        "\"output_tokens\":7,\"total_tokens\":143}}}\n\n";

    run(&responses_cfg, s, strlen(s), NULL, 0, 0, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM && r.usage.prompt_tokens == 36
           && r.usage.completion_tokens == 107
           && r.usage.total_tokens == 143,
           "responses stream: the same");
    tap_ok(every_split(&responses_cfg, s, strlen(s), &r),
           "... at every split");
    run_free(&r);
}


/*
 * A usage that counts no token (decimals, strings, every count 0, names
 * of another API) is no usage: the stream is charged its estimate, the
 * prompt estimate and the text, as one that ends without usage.
 */

static void
test_usage_unread(void)
{
    size_t       k;
    run_t        r;
    const char  *s;
    char         buf[1024];

    static const char  *usages[] = {
        "{\"prompt_tokens\":7.5,\"completion_tokens\":2.5,"
        "\"total_tokens\":10.0}",
        "{\"prompt_tokens\":\"7\",\"completion_tokens\":\"2\"}",
        "{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0,"
        "\"prompt_tokens_details\":{\"cached_tokens\":5}}",
        "{\"input_tokens\":7,\"output_tokens\":2}",
        "{}"
    };

    for (k = 0; k < sizeof(usages) / sizeof(usages[0]); k++) {
        (void) snprintf(buf, sizeof(buf),
                        "data: {\"choices\":[{\"index\":0,\"delta\":"
                        "{\"content\":\"Hello there\"}}]}\n\n"
                        "data: {\"choices\":[],\"usage\":%s}\n\n"
                        "data: [DONE]\n\n", usages[k]);

        run(&openai_hide, buf, strlen(buf), NULL, 0, 40, &r);
        tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED
               && r.usage.prompt_tokens == 40
               && r.usage.completion_tokens == 3
               && r.usage.cached_tokens == 0
               && r.usage.total_tokens == 43,
               "chat stream, a usage that counts no token: estimated");
        run_free(&r);
    }

    s = "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"model\":"
        "\"claude\",\"usage\":{\"input_tokens\":0,"
        "\"output_tokens\":0}}}\n\n"
        "event: message_delta\n"
        "data: {\"type\":\"message_delta\",\"usage\":"
        "{\"output_tokens\":0}}\n\n"
        "event: message_stop\n"
        "data: {\"type\":\"message_stop\"}\n\n";

    run(&anthropic_cfg, s, strlen(s), NULL, 0, 40, &r);
    tap_ok(r.source == AL_LLM_SOURCE_ESTIMATED
           && r.usage.prompt_tokens == 40 && r.usage.total_tokens == 40,
           "anthropic stream, every count 0: estimated");
    run_free(&r);
}


/*
 * A usage member named with escapes, or twice in one event: the count a
 * client's JSON reader takes (the name decoded, the last of two).
 */

static void
test_usage_escaped(void)
{
    size_t       k;
    run_t        r;
    char         buf[1024];

    static const char  *events[] = {
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
        "\"completion_tokens\":1,\"total_tokens\":2},\"us\\u0061ge\":"
        "{\"prompt_tokens\":100,\"completion_tokens\":100,"
        "\"total_tokens\":200}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
        "\"completion_tokens\":1,\"total_tokens\":2},\"usage\":"
        "{\"prompt_tokens\":100,\"completion_tokens\":100,"
        "\"total_tokens\":200}}",
        "{\"choices\":[],\"\\u0075sage\":{\"prompt_tokens\":100,"
        "\"completion_tokens\":100}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":100,"
        "\"completion_\\u0074okens\":100}}",
    };

    for (k = 0; k < sizeof(events) / sizeof(events[0]); k++) {
        (void) snprintf(buf, sizeof(buf),
                        "data: {\"choices\":[{\"index\":0,\"delta\":"
                        "{\"content\":\"Hello there\"}}]}\n\n"
                        "data: %s\n\n"
                        "data: [DONE]\n\n", events[k]);

        run(&openai_hide, buf, strlen(buf), NULL, 0, 40, &r);
        tap_ok(r.source == AL_LLM_SOURCE_STREAM
               && r.usage.total_tokens == 200,
               "chat stream, usage named with escapes or twice: the last");
        if (r.usage.total_tokens != 200) {
            tap_diag("event", events[k]);
        }
        run_free(&r);
    }

    /*
     * A count's string is decoded once where the event goes to jansson
     * (a member named twice): "\\u0035" is no number, "\u0035" is 5.
     */

    (void) snprintf(buf, sizeof(buf),
                    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
                    "\"completion_tokens\":\"\\\\u0035\","
                    "\"completion_tokens\":\"\\\\u0035\","
                    "\"total_tokens\":\"\\u0035\","
                    "\"total_tokens\":\"\\u0035\"}}\n\n"
                    "data: [DONE]\n\n");

    run(&openai_hide, buf, strlen(buf), NULL, 0, 40, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM
           && r.usage.completion_tokens == 4 && r.usage.total_tokens == 5,
           "chat stream, a count's string decoded once");
    if (r.usage.completion_tokens != 4) {
        tap_diag("event", buf);
    }
    run_free(&r);

    /* Anthropic: message_start's and message_delta's usage alike */

    (void) snprintf(buf, sizeof(buf),
        "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"model\":"
        "\"claude\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1},"
        "\"us\\u0061ge\":{\"input_tokens\":100,\"output_tokens\":1}}}\n\n"
        "event: message_delta\n"
        "data: {\"type\":\"message_delta\",\"usage\":"
        "{\"output_tokens\":1},\"\\u0075sage\":{\"output_tokens\":100}}"
        "\n\n"
        "event: message_stop\n"
        "data: {\"type\":\"message_stop\"}\n\n");

    run(&anthropic_cfg, buf, strlen(buf), NULL, 0, 40, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM
           && r.usage.prompt_tokens == 100 && r.usage.total_tokens == 200,
           "anthropic stream, usage named with escapes: the last");
    run_free(&r);

    (void) snprintf(buf, sizeof(buf),
        "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"model\":"
        "\"claude\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1},"
        "\"usage\":{\"input_tokens\":100,\"output_tokens\":1}}}\n\n"
        "event: message_delta\n"
        "data: {\"type\":\"message_delta\",\"usage\":"
        "{\"output_tokens\":1},\"usage\":{\"output_tokens\":100}}"
        "\n\n"
        "event: message_stop\n"
        "data: {\"type\":\"message_stop\"}\n\n");

    run(&anthropic_cfg, buf, strlen(buf), NULL, 0, 40, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM
           && r.usage.prompt_tokens == 100 && r.usage.total_tokens == 200,
           "anthropic stream, usage named twice: the last");
    run_free(&r);
}


/*
 * An event that is valid JSON (RFC 8259) holding what jansson and the
 * strict scanner do not take (a "\u0000", a lone surrogate, an integer
 * past 64 bits, a number past a double), in its usage or in its text (the
 * Responses API's response.completed repeats the whole output, which the
 * model wrote): its usage read as JSON.parse reads it, a count past 2^48
 * (or 1e999, Infinity to JSON.parse) as 2^48.  Before, the event was
 * passed over, and the call charged the estimate.  Invalid JSON is still
 * passed over.
 */

static void
test_usage_unsupported(void)
{
    size_t       k;
    run_t        r;
    uint64_t     want;
    char         buf[1024];

    static const struct {
        const char  *event;
        uint64_t     prompt;            /* 0: estimated */
    } chat[] = {
        { "{\"choices\":[],\"usage\":{\"prompt_tokens\":100000,"
          "\"completion_tokens\":5,\"x\":\"\\u0000\"}}", 100000 },
        { "{\"choices\":[],\"x\":[\"\\ud800\",\"\\udc00\\u0041\"],"
          "\"usage\":{\"prompt_tokens\":100000,\"completion_tokens\":5}}",
          100000 },
        { "{\"choices\":[{\"index\":0,\"delta\":{\"content\":"
          "\"a\\u0000b\"}}],\"usage\":{\"prompt_tokens\":100000,"
          "\"completion_tokens\":5}}", 100000 },
        { "{\"choices\":[],\"usage\":{\"prompt_tokens\":100000,"
          "\"completion_tokens\":5,\"x\":99999999999999999999,"
          "\"y\":1e999}}", 100000 },
        { "{\"choices\":[],\"usage\":{\"prompt_tokens\":"
          "100000000000000000000,\"completion_tokens\":5}}",
          UINT64_C(1) << 48 },
        { "{\"choices\":[],\"usage\":{\"prompt_tokens\":1e999,"
          "\"completion_tokens\":5}}", UINT64_C(1) << 48 },
        { "{\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
          "\"\\u0000\":1,\"prompt_tokens\":100000,"
          "\"completion_tokens\":5}}", 100000 },

        /* invalid JSON: passed over, as before */

        { "{\"choices\":[],\"usage\":{\"prompt_tokens\":100000,"
          "\"completion_tokens\":5,\"x\":\"\\u0000\xc3\"}}", 0 },
        { "{\"choices\":[],\"usage\":{\"prompt_tokens\":100000,"
          "\"completion_tokens\":5,\"x\":1e999.5}}", 0 },
        { "{\"choices\":[],\"usage\":{\"prompt_tokens\":100000,"
          "\"completion_tokens\":5,\"x\":\"\\ud800\\u00g0\"}}", 0 },
    };

    for (k = 0; k < sizeof(chat) / sizeof(chat[0]); k++) {
        (void) snprintf(buf, sizeof(buf),
                        "data: {\"choices\":[{\"index\":0,\"delta\":"
                        "{\"content\":\"Hello there\"}}]}\n\n"
                        "data: %s\n\n"
                        "data: [DONE]\n\n", chat[k].event);

        run(&openai_hide, buf, strlen(buf), NULL, 0, 40, &r);

        want = chat[k].prompt;

        if (!tap_ok((want == 0 ? r.source == AL_LLM_SOURCE_ESTIMATED
                                 && r.usage.prompt_tokens == 40
                     : r.source == AL_LLM_SOURCE_STREAM
                       && r.usage.prompt_tokens == want
                       && r.usage.total_tokens == want + 5)
                    && like_reference(&openai_hide, buf, strlen(buf)),
                    want == 0 ? "chat stream, invalid JSON: estimated"
                    : "chat stream, valid JSON jansson does not take: "
                      "its usage"))
        {
            printf("# source %d prompt %" PRIu64 " total %" PRIu64 "\n",
                   (int) r.source, r.usage.prompt_tokens,
                   r.usage.total_tokens);
            tap_diag("event", chat[k].event);
        }

        run_free(&r);
    }

    /* the output text, repeated in response.completed */

    (void) snprintf(buf, sizeof(buf),
        "event: response.output_text.delta\n"
        "data: {\"type\":\"response.output_text.delta\",\"delta\":"
        "\"a\\u0000b\\ud800\"}\n\n"
        "event: response.completed\n"
        "data: {\"type\":\"response.completed\",\"response\":{"
        "\"model\":\"m\",\"output\":[{\"type\":\"message\",\"content\":"
        "[{\"type\":\"output_text\",\"text\":\"a\\u0000b\\ud800\"}]}],"
        "\"usage\":{\"input_tokens\":100000,\"output_tokens\":5}}}\n\n");

    run(&responses_cfg, buf, strlen(buf), NULL, 0, 40, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM
           && r.usage.prompt_tokens == 100000
           && r.usage.total_tokens == 100005
           && like_reference(&responses_cfg, buf, strlen(buf)),
           "responses stream, a \\u0000 and a lone surrogate in the "
           "output: its usage");
    run_free(&r);

    (void) snprintf(buf, sizeof(buf),
        "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"model\":"
        "\"claude\",\"content\":[\"\\u0000\"],\"usage\":{\"input_tokens\":"
        "100000,\"output_tokens\":1}}}\n\n"
        "event: message_delta\n"
        "data: {\"type\":\"message_delta\",\"delta\":{\"x\":1e999},"
        "\"usage\":{\"output_tokens\":5,\"y\":\"\\udbff\"}}\n\n"
        "event: message_stop\n"
        "data: {\"type\":\"message_stop\"}\n\n");

    run(&anthropic_cfg, buf, strlen(buf), NULL, 0, 40, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM
           && r.usage.prompt_tokens == 100000
           && r.usage.total_tokens == 100005
           && like_reference(&anthropic_cfg, buf, strlen(buf)),
           "anthropic stream, a \\u0000, 1e999 and a lone surrogate: its "
           "usage");
    run_free(&r);
}


/*
 * Anthropic's message_delta with an integer count and a count written as
 * a decimal or string, after a message_start that read none: the usage
 * has a count read as an integer, so the other is the number a client
 * reads, whatever the order of its members and whichever path reads the
 * event (an escaped key sends it to jansson).
 */

static void
test_usage_delta_lax(void)
{
    size_t   k;
    run_t    r;
    char     buf[1024];

    static const char  *deltas[] = {
        "{\"type\":\"message_delta\",\"usage\":{\"input_tokens\":40,"
        "\"output_tokens\":\"90\"}}",
        "{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":40,"
        "\"input_tokens\":\"90\"}}",
        "{\"type\":\"message_delta\",\"usage\":{\"input_tokens\":40,"
        "\"output_tokens\":\"90\",\"\\u0078\":1}}",
        "{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":40,"
        "\"input_tokens\":90.0,\"\\u0078\":1}}",
    };

    for (k = 0; k < sizeof(deltas) / sizeof(deltas[0]); k++) {
        (void) snprintf(buf, sizeof(buf),
            "event: message_start\n"
            "data: {\"type\":\"message_start\",\"message\":{\"model\":"
            "\"claude\",\"usage\":{\"input_tokens\":0,"
            "\"output_tokens\":0}}}\n\n"
            "event: message_delta\n"
            "data: %s\n\n"
            "event: message_stop\n"
            "data: {\"type\":\"message_stop\"}\n\n", deltas[k]);

        run(&anthropic_cfg, buf, strlen(buf), NULL, 0, 40, &r);

        if (!tap_ok(r.source == AL_LLM_SOURCE_STREAM
                    && r.usage.total_tokens == 130
                    && like_reference(&anthropic_cfg, buf, strlen(buf)),
                    "anthropic message_delta, an integer count beside a "
                    "string or decimal one: both read"))
        {
            printf("# source %d total %" PRIu64 "\n", (int) r.source,
                   r.usage.total_tokens);
            tap_diag("event", deltas[k]);
        }

        run_free(&r);
    }
}


/*
 * A usage of which some counts are integers and others decimals or
 * strings: those are the numbers a client reads, not 0.
 */

static void
test_usage_partial(void)
{
    size_t       k;
    run_t        r;
    char         buf[1024];

    static const char  *usages[] = {
        "{\"prompt_tokens\":40,\"completion_tokens\":\"90\"}",
        "{\"prompt_tokens\":40,\"completion_tokens\":89.5}",
        "{\"prompt_tokens\":40,\"completion_tokens\":90,"
        "\"completion_tokens\":\"90\"}",
        "{\"prompt_tokens\":40,\"completion_tokens\":90,"
        "\"total_tokens\":1}",
        "{\"prompt_tokens\":40,\"completion_tokens\":\"\\u00390\"}",
        "{\"prompt_tokens\":40,\"completion_tokens\":\"0000000000000000"
        "00000000000000000000000000000000000000000000000000000000090\"}",
        "{\"prompt_tokens\":40,\"completion_tokens\":89.50000000000000000"
        "0000000000000000000000000000000000000000000000000000000000}",
    };

    /* a string holding quotes is no number, on both of the parser's paths */

    (void) snprintf(buf, sizeof(buf),
                    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,"
                    "\"completion_tokens\":\"\\\"90\\\"\"}}\n\n"
                    "data: {\"choices\":[],\"x\":\"\\u0041\",\"usage\":"
                    "{\"prompt_tokens\":40,\"completion_tokens\":"
                    "\"\\\"90\\\"\"}}\n\n"
                    "data: [DONE]\n\n");
    run(&openai_hide, buf, strlen(buf), NULL, 0, 40, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM && r.usage.total_tokens == 40,
           "chat stream, a count \"\\\"90\\\"\": no number");
    run_free(&r);


    for (k = 0; k < sizeof(usages) / sizeof(usages[0]); k++) {
        (void) snprintf(buf, sizeof(buf),
                        "data: {\"choices\":[{\"index\":0,\"delta\":"
                        "{\"content\":\"Hello there\"}}]}\n\n"
                        "data: {\"choices\":[],\"usage\":%s}\n\n"
                        "data: [DONE]\n\n", usages[k]);

        run(&openai_hide, buf, strlen(buf), NULL, 0, 40, &r);
        tap_ok(r.source == AL_LLM_SOURCE_STREAM
               && r.usage.completion_tokens == 90
               && r.usage.total_tokens == 130,
               "chat stream, a count a string or decimal beside an "
               "integer, a total below the sum");
        run_free(&r);
    }

    (void) snprintf(buf, sizeof(buf),
        "event: response.completed\n"
        "data: {\"type\":\"response.completed\",\"response\":{"
        "\"model\":\"m\",\"usage\":{\"input_tokens\":40,"
        "\"output_tokens\":\"90\"}}}\n\n");

    run(&responses_cfg, buf, strlen(buf), NULL, 0, 40, &r);
    tap_ok(r.source == AL_LLM_SOURCE_STREAM && r.usage.total_tokens == 130,
           "responses stream, output_tokens a string");
    run_free(&r);

    for (k = 0; k < 2; k++) {
        (void) snprintf(buf, sizeof(buf),
            "event: message_start\n"
            "data: {\"type\":\"message_start\",\"message\":{\"model\":"
            "\"claude\",\"usage\":{\"input_tokens\":40,"
            "\"output_tokens\":1}}}\n\n"
            "event: message_delta\n"
            "data: {\"type\":\"message_delta\",\"usage\":"
            "{\"output_tokens\":%s}}\n\n"
            "event: message_stop\n"
            "data: {\"type\":\"message_stop\"}\n\n",
            k == 0 ? "\"90\"" : "90.0,\"x\":\"\\u0041\"");

        run(&anthropic_cfg, buf, strlen(buf), NULL, 0, 40, &r);
        tap_ok(r.source == AL_LLM_SOURCE_STREAM
               && r.usage.prompt_tokens == 40
               && r.usage.total_tokens == 130,
               k == 0 ? "anthropic stream, output_tokens a string"
                      : "anthropic stream, output_tokens a decimal "
                        "(jansson)");
        run_free(&r);
    }
}


/*
 * A stream that ends without its final usage after an event whose data
 * is no JSON object (not JSON, cut short, another value) is charged at
 * least the output cap: that event may be output the text count missed.
 * Blank data and comments carry nothing; a final usage still counts.
 */

static void
test_stream_unread(void)
{
    size_t       i, len;
    run_t        r;
    const char  *s;

    static const char  text[] =
        "data: {\"choices\":[{\"index\":0,\"delta\":"
        "{\"content\":\"Hello\"}}]}\n\n";
    static const char  usage[] =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,"
        "\"completion_tokens\":3,\"total_tokens\":10}}\n\n";

    static const struct {
        const char  *middle;
        unsigned     usage;
        unsigned     unread;
        uint64_t     completion;
        const char  *name;
    } cases[] = {
        { "data: Hello there, the whole answer\n\n", 0, 1, 500,
          "an event that is not JSON, no usage: the output cap" },
        { "data: {\"choices\":[{\"delta\":{\"content\":\"Hello\n\n",
          0, 1, 500, "an event cut short, no usage: the output cap" },
        { "data: [\"Hello there\"]\n\n", 0, 1, 500,
          "an event that is an array, no usage: the output cap" },
        { "data: Hel\ndata: lo\n\n", 0, 1, 500,
          "an event of two lines, not JSON: the output cap" },
        { "data: Hello there\n\n", 1, 1, 3,
          "an event that is not JSON, then the usage: the usage" },
        { "data: \n\ndata:\n\n: keep-alive\n\n", 0, 0, 2,
          "blank data and comments, no usage: the text counted" },
        { "", 0, 0, 2, "every event read, no usage: the text counted" },
    };

    char  buf[512], name[128];

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        len = (size_t) snprintf(buf, sizeof(buf), "%s%s%sdata: [DONE]\n\n",
                                text, cases[i].middle,
                                cases[i].usage ? usage : "");
        s = buf;

        run_capped(&openai_keep, s, len, 0, 500, &r);
        tap_ok(r.unread == cases[i].unread
               && r.usage.completion_tokens == cases[i].completion,
               cases[i].name);

        reserved = 500;
        (void) snprintf(name, sizeof(name), "%s: however it is sliced",
                        cases[i].name);
        tap_ok(every_split(&openai_keep, s, len, &r)
               && byte_at_a_time(&openai_keep, s, len, &r), name);
        reserved = 0;

        run_free(&r);
    }
}


/*
 * An error event that says what the call used (a router that bills a
 * call and then fails it): its usage is read, for an error answer's
 * charge, but it is no final usage: a stream it cut is still charged at
 * least its output cap.
 */

static void
test_error_usage(void)
{
    size_t               i;
    al_llm_sse_t         sse;
    al_llm_usage_t       u;
    al_llm_source_t      src;
    al_llm_sse_block_t   blk;

    static const struct {
        al_llm_kind_t      kind;
        al_llm_endpoint_t  ep;
        const char        *s;
        uint64_t           in, out;
        const char        *name;
    } cases[] = {
        { AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
          "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
          "\"overloaded_error\"},\"usage\":{\"input_tokens\":40,"
          "\"output_tokens\":9}}\n\n", 40, 9,
          "anthropic: an error event's usage" },
        { AL_LLM_ANTHROPIC, AL_LLM_EP_MESSAGES,
          "event: message_start\ndata: {\"type\":\"message_start\","
          "\"message\":{\"usage\":{\"input_tokens\":40,"
          "\"output_tokens\":1}}}\n\n"
          "event: error\ndata: {\"type\":\"error\",\"error\":{},"
          "\"usage\":{\"output_tokens\":7}}\n\n", 40, 7,
          "anthropic: an error event's usage after message_start" },
        { AL_LLM_OPENAI, AL_LLM_EP_RESPONSES,
          "event: error\ndata: {\"type\":\"error\",\"code\":\"x\","
          "\"usage\":{\"input_tokens\":12,\"output_tokens\":5,"
          "\"total_tokens\":17}}\n\n", 12, 5,
          "responses: an error event's usage" },
        { AL_LLM_OPENAI, AL_LLM_EP_CHAT,
          "data: {\"error\":{\"message\":\"x\"},\"usage\":"
          "{\"prompt_tokens\":3,\"completion_tokens\":2,"
          "\"total_tokens\":5}}\n\n", 3, 2,
          "chat: an error chunk's usage" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        al_llm_sse_init(&sse, cases[i].kind, cases[i].ep, 0);
        al_llm_sse_observe(&sse, (const unsigned char *) cases[i].s,
                           strlen(cases[i].s));
        (void) al_llm_sse_finish(&sse, &blk);

        tap_ok(sse.error && sse.usage.prompt_tokens == cases[i].in
               && sse.usage.completion_tokens == cases[i].out,
               cases[i].name);

        if (cases[i].kind == AL_LLM_ANTHROPIC) {
            src = al_llm_sse_result(&sse, 100, 50, &u);
            tap_ok(src == AL_LLM_SOURCE_ESTIMATED
                   && u.completion_tokens == 50,
                   "anthropic: a stream an error cut: at least the cap");
        }

        al_llm_sse_free(&sse);
    }
}


/*
 * A stream cut at any byte (the client gone, the upstream reset): the
 * charge is the parser's state with or without al_llm_sse_finish() (the
 * request pool's cleanup settles without it), and an event cut short is
 * not read (as a client would not): its usage neither lowers the charge
 * under the output cap nor is taken; cut before the end of its final
 * usage, it is charged at least the cap.
 */

static void
test_cut_finish(void)
{
    char                 *s;
    size_t                len, cut, end, i;
    unsigned              bad;
    al_llm_sse_t          x, y;
    al_llm_usage_t        ux, uy;
    al_llm_source_t       sx, sy;
    al_llm_sse_block_t    blk;

    s = join(openai_blocks, OPENAI_N, NOSKIP, "\n", &len);
    bad = 0;

    /* the end of the final usage: a cut after it is charged that */

    end = 0;

    for (i = 0; i <= OPENAI_USAGE; i++) {
        end += strlen(openai_blocks[i]);
    }

    for (cut = 0; cut < len; cut++) {
        al_llm_sse_init(&x, AL_LLM_OPENAI, AL_LLM_EP_CHAT, 0);
        al_llm_sse_init(&y, AL_LLM_OPENAI, AL_LLM_EP_CHAT, 0);

        al_llm_sse_observe(&x, (const unsigned char *) s, cut);
        al_llm_sse_observe(&y, (const unsigned char *) s, cut);
        (void) al_llm_sse_finish(&y, &blk);

        sx = al_llm_sse_result(&x, 100, 1000, &ux);
        sy = al_llm_sse_result(&y, 100, 1000, &uy);

        if (sx != sy || memcmp(&ux, &uy, sizeof(ux)) != 0
            || (cut < end && ux.completion_tokens < 1000))
        {
            bad++;
        }

        al_llm_sse_free(&x);
        al_llm_sse_free(&y);
    }

    tap_ok(bad == 0, "a stream cut at any byte: the same charge finished "
           "or not, at least the cap until its final usage");

    free(s);
}
