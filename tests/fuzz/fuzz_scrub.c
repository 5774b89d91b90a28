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
 *     none is left raw in what the scan passed over;
 *   - with the first string's inner base64 forms listed (when it has
 *     AL_SCRUB_INNER bytes, al_scrub_inner()), the first string encoded
 *     in base64 0 to 2 bytes past a multiple of 3 in a longer text, with
 *     a line end (LF or CRLF) put anywhere in it, leaves none of them in
 *     what is sent, line ends taken out.
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
static void fuzz_inner(const al_str_t *str, size_t n, const uint8_t *data,
    size_t size, size_t piece);


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

    fuzz_inner(str, n, data, size, piece);

    return 0;
}


static void
fuzz_inner(const al_str_t *str, size_t n, const uint8_t *data, size_t size,
    size_t piece)
{
    char           forms[6][16 * 8 / 6 + 1];
    size_t         i, k, m, len, blen, elen, at, olen, pre, flen[6];
    uint8_t        blob[2 + 16 + 8], text[64], out[64 * 10 + 1];
    al_str_t       all[FUZZ_STR_MAX + 6];
    al_scrub_t     s;
    const char    *eol;

    len = str[0].len;

    if (len < AL_SCRUB_INNER || size < 3) {
        return;
    }

    memcpy(all, str, n * sizeof(al_str_t));
    m = n;

    for (k = 0; k < 6; k++) {
        flen[k] = al_scrub_inner(forms[k],
                                 (const unsigned char *) str[0].data, len,
                                 (unsigned) k / 2, (int) k & 1);
        all[m].data = forms[k];
        all[m].len = flen[k];
        m++;
    }

    memset(&s, 0, sizeof(s));
    s.str = all;
    s.n = m;
    al_scrub_index(&s);

    /* the text: 0 to 2 bytes of the response, the string, up to 8 more */

    pre = data[0] % 3;
    blen = 0;

    for (i = 0; i < pre; i++) {
        blob[blen++] = data[1 + i];
    }

    memcpy(blob + blen, str[0].data, len);
    blen += len;

    for (i = 0; i < data[2] % 9u && i < size; i++) {
        blob[blen++] = data[size - 1 - i];
    }

    elen = al_base64_encode((char *) text, sizeof(text), blob, blen);

    if (data[1] & 1) {
        for (i = 0; i < elen; i++) {
            text[i] = (text[i] == '+') ? '-' : (text[i] == '/') ? '_'
                                                                : text[i];
        }
    }

    /* a line end somewhere inside */

    eol = (data[0] & 4) ? "\r\n" : "\n";
    at = 1 + data[2] % (elen - 1);
    memmove(text + at + strlen(eol), text + at, elen - at);
    memcpy(text + at, eol, strlen(eol));
    elen += strlen(eol);

    olen = fuzz_scrub(&s, text, elen, piece, out);

    /* line ends out, then none of the forms is there */

    for (i = 0, k = 0; i < olen; i++) {
        if (out[i] != '\r' && out[i] != '\n') {
            out[k++] = out[i];
        }
    }

    for (i = 0; i < 6; i++) {
        if (memmem(out, k, forms[i], flen[i]) != NULL) {
            abort();
        }
    }
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
