/*
 * libFuzzer target for the streaming usage parser (al_llm_sse_*).
 *
 * Input: byte 0 picks the provider, endpoint and hide_usage; bytes 1-4 two
 * split points; the rest is the stream.  The stream goes through the body
 * filter algorithm of al_llm.h three times: as one slice, as two slices
 * cut at the first point, and as three.  Besides the sanitizers it checks
 * what the gateway relies on:
 *
 *   - usage, source, model, counters and the kept bytes are identical
 *     however the stream is sliced;
 *   - blocks are contiguous and in order, drops only on whole blocks;
 *   - kept + dropped bytes account for every input byte exactly, and the
 *     kept bytes are the input with the dropped ranges cut out;
 *   - held-back bytes never exceed AL_LLM_EVENT_MAX + 1;
 *   - observing without filtering gives the same usage;
 *   - against the reference (parse_all: every event through jansson, as
 *     before the scan decided which events need it, and before the strict
 *     scanner read most of those): the same usage as reported, model,
 *     flags and kept bytes, and never fewer text bytes counted;
 *   - without the model wanted (no_model, as the module runs it): the
 *     same against the normal run, the model aside;
 *   - fed a byte at a time, where the scan never uses its envelope memo:
 *     the same as fed whole, to the counters.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"


#define FUZZ_RANGES_MAX  64


typedef struct {
    unsigned char       *kept;
    size_t               kept_len;
    unsigned char       *held;
    size_t               held_len;
    uint64_t             pending;
    uint64_t             next_block;    /* where the next block starts */
    uint64_t             dropped_bytes;
    al_llm_usage_t       usage;
    al_llm_usage_t       raw;           /* as reported, before estimates */
    al_llm_source_t      source;
    uint64_t             dropped;
    uint64_t             events;
    uint64_t             delta;
    unsigned             done;
    unsigned             stopped;
    unsigned             unread;
    unsigned             error;
    unsigned             usage_seen;
    unsigned             started;
    char                 model[AL_LLM_MODEL_MAX];
    unsigned             drops;         /* fed by al_llm_sse_feed_drops() */
} fuzz_run_t;


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void fuzz_run(al_llm_kind_t kind, al_llm_endpoint_t ep,
    unsigned hide, unsigned ref, const uint8_t *s, size_t len,
    const size_t *cuts, size_t ncuts, fuzz_run_t *r);
static void fuzz_slice(al_llm_sse_t *sse, fuzz_run_t *r, const uint8_t *p,
    size_t len);
static void fuzz_block(fuzz_run_t *r, const al_llm_sse_block_t *blk,
    const uint8_t *p, uint64_t a);
static void fuzz_emit(fuzz_run_t *r, const uint8_t *p, uint64_t a,
    uint64_t to);
static void fuzz_same(const fuzz_run_t *x, const fuzz_run_t *y);
static void fuzz_like_ref(const fuzz_run_t *x, const fuzz_run_t *ref);
static void fuzz_bytes(al_llm_kind_t kind, al_llm_endpoint_t ep,
    unsigned hide, const uint8_t *s, size_t len);


static const al_llm_kind_t  fuzz_kinds[] = {
    AL_LLM_OPENAI, AL_LLM_OPENAI_COMPATIBLE, AL_LLM_ANTHROPIC
};

static const al_llm_endpoint_t  fuzz_eps[] = {
    AL_LLM_EP_CHAT, AL_LLM_EP_COMPLETIONS, AL_LLM_EP_RESPONSES,
    AL_LLM_EP_MESSAGES
};


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t              len, cuts[2], t;
    const uint8_t      *s;
    unsigned            hide;
    fuzz_run_t          one, two, three, ref, nomodel, drops;
    al_llm_kind_t       kind;
    al_llm_endpoint_t   ep;
    al_llm_sse_t        sse;
    al_llm_usage_t      u;
    al_llm_sse_block_t  blk;

    if (size < 5) {
        return 0;
    }

    kind = fuzz_kinds[(data[0] & 0x03) % 3];
    ep = fuzz_eps[(data[0] >> 2) & 0x03];
    hide = (data[0] >> 4) & 1;

    s = data + 5;
    len = size - 5;

    cuts[0] = ((size_t) data[1] | (size_t) data[2] << 8) % (len + 1);
    cuts[1] = ((size_t) data[3] | (size_t) data[4] << 8) % (len + 1);

    if (cuts[0] > cuts[1]) {
        t = cuts[0];
        cuts[0] = cuts[1];
        cuts[1] = t;
    }

    fuzz_run(kind, ep, hide, 0, s, len, NULL, 0, &one);
    fuzz_run(kind, ep, hide, 0, s, len, cuts, 1, &two);
    fuzz_run(kind, ep, hide, 0, s, len, cuts, 2, &three);
    fuzz_run(kind, ep, hide, 1, s, len, cuts, 1, &ref);
    fuzz_run(kind, ep, hide, 2, s, len, cuts, 2, &nomodel);
    fuzz_run(kind, ep, hide, 3, s, len, cuts, 2, &drops);

    fuzz_same(&nomodel, &drops);
    fuzz_same(&one, &two);
    fuzz_same(&one, &three);
    fuzz_like_ref(&one, &ref);

    memcpy(nomodel.model, one.model, sizeof(one.model));
    fuzz_like_ref(&nomodel, &one);

    /* without filtering: same usage, every byte */

    al_llm_sse_init(&sse, kind, ep, 0);
    al_llm_sse_observe(&sse, s, cuts[0]);
    al_llm_sse_observe(&sse, s + cuts[0], len - cuts[0]);
    (void) al_llm_sse_finish(&sse, &blk);

    if (al_llm_sse_result(&sse, 11, 0, &u) != one.source
        || memcmp(&u, &one.usage, sizeof(u)) != 0
        || al_llm_sse_offset(&sse) != len
        || al_llm_sse_settled(&sse) != len
        || sse.dropped != 0)
    {
        abort();
    }

    al_llm_sse_free(&sse);

    fuzz_bytes(kind, ep, hide, s, len);

    free(one.kept);
    free(two.kept);
    free(three.kept);
    free(ref.kept);
    free(nomodel.kept);
    free(drops.kept);

    return 0;
}


/*
 * A first piece of one byte neither matches nor records the scan's memo
 * of the envelope events share (al_llm_scan_first()), so the stream fed a
 * byte at a time is scanned in full: the memo must change nothing.
 */

static void
fuzz_bytes(al_llm_kind_t kind, al_llm_endpoint_t ep, unsigned hide,
    const uint8_t *s, size_t len)
{
    size_t              i;
    al_llm_sse_t        x, y;
    al_llm_sse_block_t  blk;

    al_llm_sse_init(&x, kind, ep, hide);
    al_llm_sse_init(&y, kind, ep, hide);

    al_llm_sse_observe(&x, s, len);

    for (i = 0; i < len; i++) {
        al_llm_sse_observe(&y, s + i, 1);
    }

    (void) al_llm_sse_finish(&x, &blk);
    (void) al_llm_sse_finish(&y, &blk);

    if (y.memo_points != 0
        || memcmp(&x.usage, &y.usage, sizeof(x.usage)) != 0
        || strcmp(x.model, y.model) != 0
        || x.delta_bytes != y.delta_bytes || x.events != y.events
        || x.dropped != y.dropped || x.parsed != y.parsed
        || x.jansson != y.jansson || x.done != y.done
        || x.usage_seen != y.usage_seen || x.error != y.error
        || x.stopped != y.stopped || x.started != y.started
        || x.unread != y.unread)
    {
        abort();
    }
}


/* ref: 0 the parser as the module runs it but with the model wanted, 1
   the reference (parse_all), 2 as the module runs it (no_model), 3 the
   same fed as the module feeds it, by al_llm_sse_feed_drops() */

static void
fuzz_run(al_llm_kind_t kind, al_llm_endpoint_t ep, unsigned hide,
    unsigned ref, const uint8_t *s, size_t len, const size_t *cuts,
    size_t ncuts, fuzz_run_t *r)
{
    size_t              i, from, to;
    uint64_t            end;
    al_llm_sse_t        sse;
    al_llm_sse_block_t  blk;

    memset(r, 0, sizeof(*r));

    r->drops = (ref == 3);
    r->kept = malloc(len + 1);
    r->held = malloc(len + 1);
    if (r->kept == NULL || r->held == NULL) {
        abort();
    }

    al_llm_sse_init(&sse, kind, ep, hide);
    sse.parse_all = (ref == 1);
    sse.no_model = (ref >= 2);

    from = 0;

    for (i = 0; i <= ncuts; i++) {
        to = (i < ncuts) ? cuts[i] : len;
        fuzz_slice(&sse, r, s + from, to - from);
        from = to;
    }

    end = al_llm_sse_offset(&sse);

    if (end != len) {
        abort();
    }

    if (al_llm_sse_finish(&sse, &blk) == 1) {
        if (r->drops) {
            /* the blocks kept before it were passed by */

            if (blk.start < r->next_block) {
                abort();
            }

            r->next_block = blk.start;
        }

        fuzz_block(r, &blk, NULL, end);
    }

    fuzz_emit(r, NULL, end, end);

    if (r->kept_len + r->dropped_bytes != len || r->pending != len) {
        abort();
    }

    r->source = al_llm_sse_result(&sse, 11, 0, &r->usage);
    r->dropped = sse.dropped;
    r->events = sse.events;
    r->delta = sse.delta_bytes;
    r->done = sse.done;
    r->stopped = sse.stopped;
    r->unread = sse.unread;
    r->error = sse.error;
    r->raw = sse.usage;
    r->usage_seen = sse.usage_seen;
    r->started = sse.started;
    memcpy(r->model, sse.model, sizeof(r->model));

    if (memchr(r->model, '\0', sizeof(r->model)) == NULL
        || (r->source != AL_LLM_SOURCE_STREAM
            && r->source != AL_LLM_SOURCE_ESTIMATED)
        || (r->source == AL_LLM_SOURCE_ESTIMATED
            && r->usage.total_tokens
               != r->usage.prompt_tokens + r->usage.completion_tokens)
        || (r->dropped != 0 && !hide))
    {
        abort();
    }

    al_llm_sse_free(&sse);
    free(r->held);
    r->held = NULL;
}


static void
fuzz_slice(al_llm_sse_t *sse, fuzz_run_t *r, const uint8_t *p, size_t len)
{
    size_t              off, used, from;
    uint64_t            a, settled;
    al_llm_sse_block_t  blk;

    a = al_llm_sse_offset(sse);
    off = 0;

    while (off < len) {
        if (r->drops) {
            if (al_llm_sse_feed_drops(sse, p + off, len - off, &used, &blk)
                == 1)
            {
                /* only blocks to drop; the blocks kept are passed by */

                if (!blk.drop || blk.start < r->next_block) {
                    abort();
                }

                r->next_block = blk.start;
                fuzz_block(r, &blk, p, a);

            } else if (used != len - off) {
                abort();
            }

        } else if (al_llm_sse_feed(sse, p + off, len - off, &used, &blk)
                   == 1)
        {
            fuzz_block(r, &blk, p, a);

        } else if (used != len - off) {
            abort();
        }

        off += used;

        if (off > len) {
            abort();
        }
    }

    if (al_llm_sse_offset(sse) != a + len) {
        abort();
    }

    settled = al_llm_sse_settled(sse);

    if (settled > a + len || settled < r->pending) {
        abort();
    }

    fuzz_emit(r, p, a, settled);

    /* hold [pending, a + len) */

    if (r->pending >= a) {
        r->held_len = 0;
        from = (size_t) (r->pending - a);
    } else {
        from = 0;
    }

    memcpy(r->held + r->held_len, p + from, len - from);
    r->held_len += len - from;

    if (r->held_len > AL_LLM_EVENT_MAX + 1) {
        abort();
    }
}


static void
fuzz_block(fuzz_run_t *r, const al_llm_sse_block_t *blk, const uint8_t *p,
    uint64_t a)
{
    if (blk->start != r->next_block || blk->end < blk->start
        || blk->start < r->pending)
    {
        abort();
    }

    r->next_block = blk->end;

    if (!blk->drop) {
        return;
    }

    if (!blk->event || blk->end < a) {
        abort();
    }

    fuzz_emit(r, p, a, blk->start);
    r->held_len = 0;
    r->dropped_bytes += blk->end - blk->start;
    r->pending = blk->end;
}


static void
fuzz_emit(fuzz_run_t *r, const uint8_t *p, uint64_t a, uint64_t to)
{
    size_t  n;

    if (to <= r->pending) {
        return;
    }

    if (r->pending < a) {
        n = (size_t) ((to < a ? to : a) - r->pending);

        if (n > r->held_len) {
            abort();
        }

        memcpy(r->kept + r->kept_len, r->held, n);
        memmove(r->held, r->held + n, r->held_len - n);
        r->held_len -= n;
        r->kept_len += n;
        r->pending += n;
    }

    if (to > r->pending) {
        if (p == NULL) {
            abort();
        }

        n = (size_t) (to - r->pending);
        memcpy(r->kept + r->kept_len, p + (r->pending - a), n);
        r->kept_len += n;
        r->pending = to;
    }
}


static void
fuzz_same(const fuzz_run_t *x, const fuzz_run_t *y)
{
    if (x->kept_len != y->kept_len
        || memcmp(x->kept, y->kept, x->kept_len) != 0
        || memcmp(&x->usage, &y->usage, sizeof(x->usage)) != 0
        || x->source != y->source
        || x->dropped != y->dropped
        || x->dropped_bytes != y->dropped_bytes
        || x->events != y->events
        || x->delta != y->delta
        || x->done != y->done
        || x->stopped != y->stopped
        || x->unread != y->unread
        || strcmp(x->model, y->model) != 0)
    {
        abort();
    }
}


/*
 * The scan against the reference: all but the text count is the same;
 * the count may only be higher (duplicate keys and events jansson refuses
 * can add bytes the reference does not), and so may an estimate.
 */

static void
fuzz_like_ref(const fuzz_run_t *x, const fuzz_run_t *ref)
{
    if (x->kept_len != ref->kept_len
        || memcmp(x->kept, ref->kept, x->kept_len) != 0
        || x->source != ref->source
        || x->dropped != ref->dropped
        || x->events != ref->events
        || x->done != ref->done
        || x->stopped != ref->stopped
        || x->unread != ref->unread
        || x->error != ref->error
        || x->usage_seen != ref->usage_seen
        || x->started != ref->started
        || memcmp(&x->raw, &ref->raw, sizeof(x->raw)) != 0
        || strcmp(x->model, ref->model) != 0
        || x->delta < ref->delta
        || x->usage.prompt_tokens != ref->usage.prompt_tokens
        || x->usage.cached_tokens != ref->usage.cached_tokens
        || x->usage.cache_write_tokens != ref->usage.cache_write_tokens
        || x->usage.completion_tokens < ref->usage.completion_tokens
        || (x->source == AL_LLM_SOURCE_STREAM
            && memcmp(&x->usage, &ref->usage, sizeof(x->usage)) != 0))
    {
        abort();
    }
}
