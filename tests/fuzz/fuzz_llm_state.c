/*
 * libFuzzer target for the readers of stored-response ids
 * (al_llm_state.c): any bytes, read as a JSON answer and as an event
 * stream, fed whole and in pieces whose size the first byte picks, must
 * give the same ids in the same order, each within its bound, of
 * printable ASCII, each feed reading at least one byte and no more than
 * it was given; and read as a request body, a previous response id and
 * input item ids within the same bound, the items in order, each of an
 * element within the array.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"


#define FZ_IDS  8192


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fz_id(const char *id, size_t len);
static size_t fz_read(const uint8_t *p, size_t len, unsigned stream,
    size_t piece, char *ids);


static void
fz_id(const char *id, size_t len)
{
    size_t  k;

    if (len > AL_LLM_STATE_ID_MAX || strlen(id) != len) {
        abort();
    }

    for (k = 0; k < len; k++) {
        if (id[k] < 0x21 || id[k] > 0x7e) {
            abort();
        }
    }
}


/* the ids, space-separated (items "+id"), cut at FZ_IDS */

static size_t
fz_read(const uint8_t *p, size_t len, unsigned stream, size_t piece,
    char *ids)
{
    size_t               i, n, k, at, out;
    al_llm_state_resp_t  s;

    al_llm_state_resp_init(&s, stream);
    out = 0;
    ids[0] = '\0';

    for (i = 0; i < len; i += n) {
        n = (piece == 0 || len - i < piece) ? len - i : piece;

        for (at = 0; at < n; at += k) {
            k = al_llm_state_resp_feed(&s, p + i + at, n - at);

            if (k == 0 || k > n - at) {
                abort();
            }

            if (s.id_len == 0) {
                continue;
            }

            fz_id(s.id, s.id_len);

            if (out + s.id_len + 3 < FZ_IDS) {
                out += (size_t) snprintf(ids + out, FZ_IDS - out, "%s%s%s",
                                         out ? " " : "", s.item ? "+" : "",
                                         s.id);
            }
        }
    }

    return out;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                  rc;
    size_t               piece, last;
    unsigned             stream, first;
    al_llm_state_req_t   req;
    al_llm_state_ref_t   ref;
    static char          a[FZ_IDS], b[FZ_IDS];

    if (size < 1) {
        return 0;
    }

    piece = data[0] % 17 + 1;

    for (stream = 0; stream < 2; stream++) {
        (void) fz_read(data + 1, size - 1, stream, 0, a);
        (void) fz_read(data + 1, size - 1, stream, piece, b);

        if (strcmp(a, b) != 0) {
            abort();
        }
    }

    rc = al_llm_state_request(data + 1, size - 1, &req);

    if (rc < -1 || rc > 0 || req.named > 1
        || (!req.named && req.prev.len != 0))
    {
        abort();
    }

    fz_id(req.prev.id, req.prev.len);

    if (rc < 0) {
        return 0;
    }

    first = 1;
    last = 0;

    for ( ;; ) {
        rc = al_llm_state_item(&req, data + 1, &ref);

        if (rc < -1 || rc > 1) {
            abort();
        }

        if (rc <= 0) {
            break;
        }

        fz_id(ref.id, ref.len);

        if ((!first && req.index < last) || req.index >= size) {
            abort();
        }

        first = 0;
        last = req.index;
    }

    return 0;
}
