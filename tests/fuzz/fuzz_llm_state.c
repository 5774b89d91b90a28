/*
 * libFuzzer target for the readers of stored-response ids
 * (al_llm_state.c): any bytes, read as a JSON answer and as an event
 * stream, fed whole and in pieces whose size the first byte picks, must
 * give the same id, one within its bound, of printable ASCII; and read as
 * a request body, an id within the same bound.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t fz_read(const uint8_t *p, size_t len, unsigned stream,
    size_t piece, char *id);


static size_t
fz_read(const uint8_t *p, size_t len, unsigned stream, size_t piece,
    char *id)
{
    size_t               i, n, k;
    al_llm_state_resp_t  s;

    al_llm_state_resp_init(&s, stream);

    for (i = 0; i < len; i += n) {
        n = (piece == 0 || len - i < piece) ? len - i : piece;
        (void) al_llm_state_resp_feed(&s, p + i, n);
    }

    if (s.id_len > AL_LLM_STATE_ID_MAX || strlen(s.id) != s.id_len) {
        abort();
    }

    for (k = 0; k < s.id_len; k++) {
        if (s.id[k] < 0x21 || s.id[k] > 0x7e) {
            abort();
        }
    }

    memcpy(id, s.id, s.id_len + 1);

    return s.id_len;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                 rc;
    size_t              piece;
    unsigned            stream;
    al_llm_state_ref_t  ref;
    char                a[AL_LLM_STATE_ID_MAX + 1];
    char                b[AL_LLM_STATE_ID_MAX + 1];

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

    rc = al_llm_state_request(data + 1, size - 1, &ref);

    if (rc < -1 || rc > 1 || ref.len > AL_LLM_STATE_ID_MAX
        || strlen(ref.id) != ref.len || (rc != 1 && ref.len != 0))
    {
        abort();
    }

    return 0;
}
