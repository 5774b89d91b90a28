/*
 * libFuzzer target for the scrub matcher (al_scrub_match()).
 *
 * Input: byte 0 the number of scrub strings (1-3), byte 1 a piece size
 * (1-16), then each string as a length byte (1-16) and its bytes, then the
 * response.  The response is scrubbed the way the module does it: whole
 * (a header value, a held body: every decision final), and as a stream
 * that arrives piece bytes at a time (a decision waits while the match is
 * PARTIAL).  Besides the sanitizers it checks what the filter relies on:
 *
 *   - a FULL match covers at least one byte, at most what is there, and
 *     at most maxspan bytes;
 *   - a PARTIAL match is never returned for a final decision, and what it
 *     keeps waiting is shorter than maxspan (the filter's carry);
 *   - the stream scrubs to exactly what the whole response scrubs to,
 *     and to the same with the pair and prefix filters as without them;
 *   - a scrub string placed raw in the response is always redacted:
 *     none is left raw in what the scan passed over.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"


#define FUZZ_STR_MAX  3
#define REDACTED      "[REDACTED]"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static size_t fuzz_scrub(const al_scrub_t *s, const uint8_t *in, size_t len,
    size_t piece, uint8_t *out);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t      i, j, n, piece, len, wlen, slen;
    uint8_t    *whole, *stream, *raw;
    al_str_t    str[FUZZ_STR_MAX];
    al_scrub_t  s, asked;

    if (size < 2) {
        return 0;
    }

    memset(&s, 0, sizeof(s));

    n = 1 + data[0] % FUZZ_STR_MAX;
    piece = 1 + data[1] % 16;
    data += 2;
    size -= 2;

    for (i = 0; i < n; i++) {
        if (size < 2) {
            return 0;
        }

        len = 1 + data[0] % 16;
        if (size < 1 + len) {
            return 0;
        }

        str[i].data = (const char *) data + 1;
        str[i].len = len;

        data += 1 + len;
        size -= 1 + len;
    }

    s.str = str;
    s.n = n;
    al_scrub_index(&s);

    /*
     * the same list without the pair and prefix filters: it asks about
     * every place
     */

    asked = s;
    memset(asked.no_pair, 0, sizeof(asked.no_pair));
    asked.plen = 0;

    /* every byte may become "[REDACTED]" */

    whole = malloc(size * (sizeof(REDACTED) - 1) + 1);
    stream = malloc(size * (sizeof(REDACTED) - 1) + 1);

    if (whole == NULL || stream == NULL) {
        free(whole);
        free(stream);
        return 0;
    }

    wlen = fuzz_scrub(&s, data, size, size ? size : 1, whole);
    slen = fuzz_scrub(&s, data, size, piece, stream);

    if (wlen != slen || memcmp(whole, stream, wlen) != 0) {
        abort();
    }

    slen = fuzz_scrub(&asked, data, size, piece, stream);

    if (wlen != slen || memcmp(whole, stream, wlen) != 0) {
        abort();
    }

    /* the first string, raw, between the response's two halves */

    raw = malloc(size + str[0].len);
    if (raw != NULL) {
        memcpy(raw, data, size / 2);
        memcpy(raw + size / 2, str[0].data, str[0].len);
        memcpy(raw + size / 2 + str[0].len, data + size / 2,
               size - size / 2);

        free(whole);
        whole = malloc((size + str[0].len) * (sizeof(REDACTED) - 1) + 1);

        if (whole != NULL) {
            wlen = fuzz_scrub(&s, raw, size + str[0].len, piece, whole);

            /* no string is left raw in what the scan passed over: an
               occurrence in the output is made of "[REDACTED]" in part */
            for (i = 0; i < str[0].len; i++) {
                if (memchr("[REDACT]", str[0].data[i], 8) != NULL) {
                    break;
                }
            }

            if (i == str[0].len
                && memmem(whole, wlen, str[0].data, str[0].len) != NULL)
            {
                abort();
            }
        }

        free(raw);
    }

    free(whole);
    free(stream);

    return 0;
}


/* the module's algorithm: decide a byte with what has arrived so far */

static size_t
fuzz_scrub(const al_scrub_t *s, const uint8_t *in, size_t len, size_t piece,
    uint8_t *out)
{
    int     m, final;
    size_t  have, i, o, n;

    i = 0;
    o = 0;
    have = 0;

    do {
        have = (have + piece < len) ? have + piece : len;
        final = (have == len);

        while (i < have) {
            if (!s->first[in[i]]) {
                out[o++] = in[i++];
                continue;
            }

            m = al_scrub_match(s, in + i, have - i, final, &n);

            if (m == AL_SCRUB_PARTIAL) {
                if (final || n != 0 || have - i >= s->maxspan) {
                    abort();
                }
                break;
            }

            if (m == AL_SCRUB_FULL) {
                if (n == 0 || n > have - i || n > s->maxspan) {
                    abort();
                }

                memcpy(out + o, REDACTED, sizeof(REDACTED) - 1);
                o += sizeof(REDACTED) - 1;
                i += n;
                continue;
            }

            if (m != AL_SCRUB_NONE || n != 0) {
                abort();
            }

            out[o++] = in[i++];
        }

    } while (have < len);

    return o;
}
