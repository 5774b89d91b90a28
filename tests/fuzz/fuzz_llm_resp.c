/*
 * libFuzzer target for the JSON answer's usage scanner
 * (al_llm_resp_feed()): any bytes, fed in pieces whose sizes the first
 * bytes pick, must give the captures of the byte scanner it replaced
 * (tests/unit/llm_resp_ref.h) fed whole, with and without an alloc for
 * long usage values; and the usage and model read from them those of
 * al_llm_usage_parse() on the whole body.  The gateway's reader (the
 * model not taken) is fed the body whole, which it may read by its bit
 * masks (al_llm_resp_whole()), and in two pieces at the point data[1]
 * picks, where the masks read the first.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "../unit/llm_resp_ref.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void *fz_alloc(void *ctx, size_t size);


static void *
fz_alloc(void *ctx, size_t size)
{
    void  **slot;

    slot = ctx;

    if (*slot != NULL) {
        abort();                        /* asked for twice */
    }

    *slot = malloc(size);

    return *slot;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int              alloc, rc1, rc2;
    void            *spill;
    size_t           i, n, len, cuts[4];
    uint8_t          pick;
    ref_resp_t      *ref;
    al_llm_resp_t   *r;
    al_llm_usage_t   u1, u2;
    const uint8_t   *p;
    char             m1[AL_LLM_MODEL_MAX], m2[AL_LLM_MODEL_MAX];
    static const al_llm_kind_t  kinds[] = {
        AL_LLM_OPENAI, AL_LLM_ANTHROPIC, AL_LLM_OPENAI
    };
    static const al_llm_endpoint_t  eps[] = {
        AL_LLM_EP_CHAT, AL_LLM_EP_CHAT, AL_LLM_EP_RESPONSES
    };

    if (size < 5) {
        return 0;
    }

    pick = data[0];
    p = data + 5;
    len = size - 5;

    for (i = 0; i < 4; i++) {
        cuts[i] = len ? data[1 + i] % (len + 1) : 0;
    }

    ref = malloc(sizeof(ref_resp_t));
    r = malloc(sizeof(al_llm_resp_t));
    if (ref == NULL || r == NULL) {
        abort();
    }

    ref_resp_init(ref);
    ref_resp_feed(ref, p, len);

    for (alloc = 0; alloc < 2; alloc++) {
        spill = NULL;

        al_llm_resp_init(r, kinds[pick % 3], eps[pick % 3]);

        if (alloc) {
            r->alloc = fz_alloc;
            r->alloc_ctx = &spill;
        }

        if (pick & 0x80) {

            /* pieces of the sizes data[1..4] pick, then the rest */

            for (i = 0, n = 0; n < len; i++) {
                size_t  k = i < 4 ? (data[1 + i] & 0x3f) : len - n;

                k = k < len - n ? k : len - n;
                al_llm_resp_feed(r, p + n, k);
                n += k;
            }

        } else {

            /* cut at the (sorted) points data[1..4] pick */

            size_t  a = cuts[0] < cuts[1] ? cuts[0] : cuts[1];
            size_t  b = cuts[0] < cuts[1] ? cuts[1] : cuts[0];

            al_llm_resp_feed(r, p, a);
            al_llm_resp_feed(r, p + a, b - a);
            al_llm_resp_feed(r, p + b, len - b);
        }

        if (r->model_len != ref->model_len
            || memcmp(r->model, ref->model, ref->model_len) != 0)
        {
            abort();
        }

        if (alloc || ref->usage_len <= AL_LLM_USAGE_INLINE) {
            if (r->usage_len != ref->usage_len
                || memcmp(r->usage, ref->usage, ref->usage_len) != 0)
            {
                abort();
            }

        } else if (r->usage_len != 0) {
            abort();
        }

        if (alloc) {
            rc1 = al_llm_usage_parse(kinds[pick % 3], eps[pick % 3], p, len,
                                     &u1, m1, sizeof(m1));
            rc2 = al_llm_resp_usage(r, &u2, m2, sizeof(m2));

            if (rc1 != rc2 || memcmp(&u1, &u2, sizeof(u1)) != 0
                || strcmp(m1, m2) != 0)
            {
                abort();
            }
        }

        free(spill);
    }

    if (len < 1024) {
        al_llm_resp_init(r, kinds[pick % 3], eps[pick % 3]);

        for (i = 0; i < len; i++) {
            al_llm_resp_feed(r, p + i, 1);
        }

        if (r->model_len != ref->model_len
            || memcmp(r->model, ref->model, ref->model_len) != 0
            || (ref->usage_len <= AL_LLM_USAGE_INLINE
                && (r->usage_len != ref->usage_len
                    || memcmp(r->usage, ref->usage, ref->usage_len) != 0)))
        {
            abort();
        }
    }

    /* the gateway's reader: the model not taken, the answer whole */

    spill = NULL;
    al_llm_resp_init(r, kinds[pick % 3], eps[pick % 3]);
    r->alloc = fz_alloc;
    r->alloc_ctx = &spill;
    r->no_model = 1;

    al_llm_resp_feed(r, p, len);

    if (r->model_len != 0 || r->usage_len != ref->usage_len
        || memcmp(r->usage, ref->usage, ref->usage_len) != 0)
    {
        abort();
    }

    rc2 = al_llm_resp_usage(r, &u2, m2, sizeof(m2));

    if (rc1 != rc2 || memcmp(&u1, &u2, sizeof(u1)) != 0 || m2[0] != '\0') {
        abort();
    }

    free(spill);

    /*
     * and in two pieces: the first, a prefix of the answer that may end
     * in '}', read by the masks, the scanner going on in the second
     */

    spill = NULL;
    al_llm_resp_init(r, kinds[pick % 3], eps[pick % 3]);
    r->alloc = fz_alloc;
    r->alloc_ctx = &spill;
    r->no_model = 1;

    al_llm_resp_feed(r, p, cuts[0]);
    al_llm_resp_feed(r, p + cuts[0], len - cuts[0]);

    if (r->model_len != 0 || r->usage_len != ref->usage_len
        || memcmp(r->usage, ref->usage, ref->usage_len) != 0)
    {
        abort();
    }

    free(spill);
    free(ref);
    free(r);

    return 0;
}
