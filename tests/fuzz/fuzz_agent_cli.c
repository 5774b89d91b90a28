/*
 * libFuzzer target for the airlock CLI's display of what the agent sends
 * (agent/airlock.c): the event stream of `airlock ask` (airlock_write,
 * airlock_event, airlock_escape_event), shown as lines and as --json,
 * and the session `airlock history` prints as it comes (airlock_stream).
 * The text in them is the model's, and the model reads what the tools
 * fetched.
 *
 * Input: byte 0 picks --json; bytes 1-2 a split point; the rest is the
 * stream, as curl hands it over: whole, as two pieces cut at the point,
 * and a byte at a time.  Besides the sanitizers it checks:
 *
 *   - what the CLI writes (stdout and stderr, colours off) holds no
 *     character a terminal acts on: no C0 control but newline and tab,
 *     no DEL, no C1 control (C2 80-9F);
 *   - the same output however the stream is cut;
 *   - each --json line is JSON, the event that came: the escapes mean
 *     the same characters;
 *   - the history, printed as it comes in pieces, is the same as printed
 *     whole.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>


static CURLcode fuzz_getinfo(CURL *curl, CURLINFO info, long *v);

static FILE  *fuzz_out;

#define main  airlock_main
#undef curl_easy_getinfo
#define curl_easy_getinfo(c, i, v)  fuzz_getinfo(c, i, v)
#undef stdout
#undef stderr
#define stdout  fuzz_out
#define stderr  fuzz_out
#define printf(...)  fprintf(fuzz_out, __VA_ARGS__)

#include "airlock.c"

#undef main
#undef curl_easy_getinfo
#undef printf


typedef struct {
    char    *buf;
    size_t   len;
} fuzz_output_t;


static CURLcode
fuzz_getinfo(CURL *curl, CURLINFO info, long *v)
{
    (void) curl;
    (void) info;

    *v = 200;

    return CURLE_OK;
}


static void
fuzz_open(fuzz_output_t *o)
{
    o->buf = NULL;
    o->len = 0;

    fuzz_out = open_memstream(&o->buf, &o->len);
    if (fuzz_out == NULL) {
        abort();
    }
}


static void
fuzz_close(fuzz_output_t *o)
{
    if (fclose(fuzz_out) != 0) {
        abort();
    }

    fuzz_out = NULL;
}


/* nothing a terminal acts on */

static void
fuzz_check_shown(const fuzz_output_t *o)
{
    size_t          i;
    unsigned char   c;

    for (i = 0; i < o->len; i++) {
        c = (unsigned char) o->buf[i];

        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
            abort();
        }

        if (c == 0xc2 && i + 1 < o->len
            && (unsigned char) o->buf[i + 1] >= 0x80
            && (unsigned char) o->buf[i + 1] <= 0x9f)
        {
            abort();
        }
    }
}


/* each --json line decodes to an event the stream holds */

static void
fuzz_check_json(const fuzz_output_t *o, const char *p, size_t size)
{
    char          *line, *in, *nl, *end;
    json_t        *shown, *sent;
    size_t         i;
    const char    *s;
    json_error_t   err;

    line = malloc(o->len + 1);
    in = malloc(size + 1);
    if (line == NULL || in == NULL) {
        abort();
    }

    memcpy(line, o->buf, o->len);
    line[o->len] = '\0';
    memcpy(in, p, size);
    in[size] = '\0';

    for (s = line; *s != '\0'; s = nl + 1) {
        nl = strchr(s, '\n');
        if (nl == NULL) {
            abort();                        /* every event ends a line */
        }
        *nl = '\0';

        shown = json_loads(s, 0, &err);
        if (shown == NULL) {
            abort();
        }

        /* the first "data: " line whose event is it */
        sent = NULL;
        for (i = 0; i < size; i = end - in + 1) {
            end = memchr(in + i, '\n', size - i);
            if (end == NULL) {
                break;
            }
            *end = '\0';

            if (strncmp(in + i, "data: ", 6) == 0) {
                sent = json_loads(in + i + 6, 0, NULL);
                *end = '\n';
                if (sent != NULL && json_equal(sent, shown)) {
                    break;
                }
                json_decref(sent);
                sent = NULL;
            } else {
                *end = '\n';
            }
        }

        if (sent == NULL) {
            abort();
        }

        json_decref(sent);
        json_decref(shown);
    }

    free(line);
    free(in);
}


static void
fuzz_ask(const char *p, size_t size, size_t first, size_t piece, int json,
    fuzz_output_t *o)
{
    size_t          off, n;
    airlock_ctx_t   ctx;

    memset(&ctx, 0, sizeof(ctx));
    ctx.json = json;

    fuzz_open(o);

    for (off = 0; off < size; off += n) {
        n = (off == 0) ? first : piece;
        n = size - off < n ? size - off : n;

        if (airlock_write((char *) p + off, 1, n, &ctx) != n) {
            break;
        }
    }

    fuzz_close(o);
    free(ctx.line);
    free(ctx.errbody);
}


static void
fuzz_history(const char *p, size_t size, size_t first, size_t piece,
    fuzz_output_t *o)
{
    size_t          off, n;
    airlock_ctx_t   ctx;

    memset(&ctx, 0, sizeof(ctx));

    fuzz_open(o);

    for (off = 0; off < size; off += n) {
        n = (off == 0) ? first : piece;
        n = size - off < n ? size - off : n;

        if (airlock_stream((char *) p + off, 1, n, &ctx) != n) {
            abort();
        }
    }

    /* as airlock_history() ends */
    if (ctx.pending) {
        airlock_print(stdout, "\xc2", 1);
    }

    fuzz_close(o);
}


static void
fuzz_same(const fuzz_output_t *a, const fuzz_output_t *b)
{
    if (a->len != b->len || (a->len && memcmp(a->buf, b->buf, a->len) != 0))
    {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int             json;
    size_t          split;
    const char     *p;
    fuzz_output_t   whole, cut, bytes;

    if (size < 3) {
        return 0;
    }

    airlock_red = airlock_green = airlock_dim = airlock_bold = airlock_off
        = "";

    json = data[0] & 1;
    split = (size_t) data[1] << 8 | data[2];
    p = (const char *) data + 3;
    size -= 3;
    split = size ? split % size + 1 : 1;    /* 1 to size */

    fuzz_ask(p, size, size, size, json, &whole);
    fuzz_check_shown(&whole);
    if (json) {
        fuzz_check_json(&whole, p, size);
    }

    fuzz_ask(p, size, split, size, json, &cut);
    fuzz_same(&whole, &cut);
    free(cut.buf);

    if (size <= 1024) {
        fuzz_ask(p, size, 1, 1, json, &bytes);
        fuzz_same(&whole, &bytes);
        free(bytes.buf);
    }

    free(whole.buf);

    fuzz_history(p, size, size, size, &whole);
    fuzz_check_shown(&whole);

    fuzz_history(p, size, split, size, &cut);
    fuzz_same(&whole, &cut);
    free(cut.buf);

    if (size <= 1024) {
        fuzz_history(p, size, 1, 1, &bytes);
        fuzz_same(&whole, &bytes);
        free(bytes.buf);
    }

    free(whole.buf);

    return 0;
}
