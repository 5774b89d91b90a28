/*
 * LLM gateway: the text/event-stream parser for streaming responses.
 *
 * It follows the WHATWG event-stream rules for what it reads (fields,
 * comments, multi-line data joined with "\n", one optional space after the
 * colon, LF / CRLF / CR line ends) and adds the notion of a block, the
 * bytes of one event including its blank line, so a caller can drop an
 * event from the stream as an exact byte range.  The blocks of a stream
 * are contiguous and their boundaries depend only on the bytes, never on
 * how the bytes were sliced, so the usage and the dropped ranges are the
 * same however the network splits the stream.  That is what the unit tests
 * and fuzz_sse check, at every split point.
 *
 * A UTF-8 BOM at the start is not stripped: providers do not send one,
 * and it would only turn the first line into an unknown field.
 *
 * Most events are never parsed as JSON.  While an event's data arrives, a
 * scan follows its strings and nesting (the same string rule as
 * al_json_depth_ok(), so both agree on depth) and notes the few keys that
 * matter: a "usage" object, an "error", the "type", the text of a
 * "delta".  At the blank line that is enough to decide: an event that
 * can report usage, end the stream, name the model or carry an error is
 * parsed; any other event only adds the text bytes the scan counted (for
 * estimates).  Keys written with escapes make an event parsed, so the
 * scan never has to decode a key.  The scan skips plain string bytes
 * sixteen at a time (SSE2; eight elsewhere) and stops at the line's end,
 * so a data line's end is found in the same pass.  The envelope most
 * events of a stream share before their text, and the bytes they share
 * after it, are compared with those of an event scanned before, not
 * scanned again (al_llm_scan_first(), al_llm_scan_tail()).
 *
 * An event parsed is read by the strict one-pass scanner of al_llm_scan.c
 * (no tree; for ordinary events no allocation), which accepts exactly
 * what jansson accepts and finds the few members the handler reads; the
 * text bytes are the scan's count.  What it refuses or cannot tell the
 * way jansson would (duplicate keys, of which jansson keeps the last;
 * invalid JSON; keys written with escapes) is parsed by jansson as
 * before, so the result is jansson's on every input: the unit tests and
 * fuzz_sse compare both with every event through jansson (parse_all).
 * Valid JSON jansson refuses too (a "\u0000", a lone surrogate, numbers
 * past 64 bits or past a double) is read as a client reads it, by
 * al_llm_json_load(), on both paths.
 *
 * Memory: the data of an event that lies in one piece of the slice being
 * fed is read in place; only an event whose data spans slices, or has
 * several data lines, is copied, into a buffer that grows to at most
 * AL_LLM_EVENT_MAX + 1 bytes.  A block over that bound stops the parser;
 * from then on bytes are counted and settled, nothing else.
 */

#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#if (defined __x86_64__ && defined __SSE2__)
#include <emmintrin.h>
#endif

#include "al_llm_internal.h"


enum {
    AL_LLM_P_CHAT = 0,                  /* chat and legacy completions */
    AL_LLM_P_RESPONSES,
    AL_LLM_P_ANTHROPIC
};

enum {
    AL_LLM_S_LINE = 0,                  /* at the start of a line */
    AL_LLM_S_FIELD,
    AL_LLM_S_VALUE_START,               /* after ':', one space to skip */
    AL_LLM_S_VALUE,
    AL_LLM_S_COMMENT
};

enum {
    AL_LLM_T_NONE = 0,
    AL_LLM_T_DATA,
    AL_LLM_T_EVENT
};

/* the scan: where it is */
enum {
    AL_LLM_L_TOP = 0,                   /* before the top-level value */
    AL_LLM_L_IN,                        /* inside it, outside strings */
    AL_LLM_L_STR,
    AL_LLM_L_ESC,                       /* after a backslash */
    AL_LLM_L_HEX,                       /* in the digits of \uXXXX */
    AL_LLM_L_END,                       /* after it: only blanks */
    AL_LLM_L_DEAD                       /* nothing jansson would act on */
};

/* what comes next inside an object or array */
enum {
    AL_LLM_X_NONE = 0,
    AL_LLM_X_KEY,
    AL_LLM_X_VALUE
};

/* what the open string is */
enum {
    AL_LLM_R_NONE = 0,
    AL_LLM_R_KEY,
    AL_LLM_R_COUNT,                     /* generated text: count it */
    AL_LLM_R_TYPE                       /* the top-level "type": keep it */
};

/* the keys the scan knows */
enum {
    AL_LLM_K_OTHER = 0,
    AL_LLM_K_USAGE,
    AL_LLM_K_ERROR,
    AL_LLM_K_CHOICES,
    AL_LLM_K_DELTA,
    AL_LLM_K_TEXT,
    AL_LLM_K_RESPONSE,
    AL_LLM_K_TYPE,                      /* from here on: the keys */
    AL_LLM_K_MODEL,                     /* al_llm_text_bytes() skips */
    AL_LLM_K_ROLE,
    AL_LLM_K_ID,
    AL_LLM_K_INDEX,
    AL_LLM_K_SIGNATURE,
    AL_LLM_K_OBJECT
};

/* what the scan saw, for the decision at the blank line */
#define AL_LLM_F_USAGE      0x01        /* top-level "usage": {...} */
#define AL_LLM_F_ERROR      0x02        /* top-level "error", not null */
#define AL_LLM_F_MODEL      0x04        /* top-level "model" */
#define AL_LLM_F_RESPONSE   0x08        /* top-level "response": {...} */
#define AL_LLM_F_ESCAPED    0x10        /* a key or the type has escapes */
#define AL_LLM_F_TYPE       0x20        /* top-level "type" is a string */

#define AL_LLM_DATA_MIN   4096

/*
 * The scan's state without key_buf and the type: in whole words, so that
 * it is copied with a few moves (the bytes of key_buf it takes along are
 * never read from a copy).
 */
#define AL_LLM_SCAN_CORE                                                      \
    ((offsetof(al_llm_sse_scan_t, key_buf) + 7) & ~(size_t) 7)


static int al_llm_sse_run(al_llm_sse_t *s, const unsigned char *p,
    size_t len, size_t *used, al_llm_sse_block_t *blk, unsigned each);
static size_t al_llm_sse_eol(const unsigned char *p, size_t i, size_t len);
static void al_llm_sse_field(al_llm_sse_t *s);
static void al_llm_sse_data_line(al_llm_sse_t *s);
static size_t al_llm_sse_data(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static void al_llm_sse_name(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static void al_llm_sse_keep(al_llm_sse_t *s);
static int al_llm_sse_append(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static void al_llm_sse_dispatch(al_llm_sse_t *s);
static int al_llm_sse_wanted(al_llm_sse_t *s);
static void al_llm_sse_unread(al_llm_sse_t *s);
static void al_llm_sse_counted(al_llm_sse_t *s);
static void al_llm_sse_decode(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static int al_llm_sse_strict(const al_llm_scan_spec_t *spec,
    const unsigned char *p, size_t n, al_llm_body_t *b);
static int al_llm_sse_fast_chat(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static int al_llm_sse_fast_responses(al_llm_sse_t *s,
    const unsigned char *p, size_t n);
static int al_llm_sse_fast_anthropic(al_llm_sse_t *s,
    const unsigned char *p, size_t n);
static void al_llm_sse_fast_model(al_llm_sse_t *s, const unsigned char *p,
    const al_llm_jfield_t *f);
static uint64_t al_llm_sse_u64(const al_llm_jfield_t *f);
static void al_llm_sse_parse(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static void al_llm_sse_block(al_llm_sse_t *s, al_llm_sse_block_t *blk);
static void al_llm_sse_stop(al_llm_sse_t *s);
static void al_llm_sse_chat(al_llm_sse_t *s, json_t *root);
static void al_llm_sse_responses(al_llm_sse_t *s, json_t *root);
static void al_llm_sse_anthropic(al_llm_sse_t *s, json_t *root);
static void al_llm_sse_cache_creation(al_llm_sse_t *s, const json_t *usage);
static void al_llm_sse_model(al_llm_sse_t *s, const json_t *obj);
static const char *al_llm_sse_type(al_llm_sse_t *s, const json_t *root,
    size_t *len);
static size_t al_llm_scan_first(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static size_t al_llm_scan_tail(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static size_t al_llm_scan_text(al_llm_sse_scan_t *x, const unsigned char *p,
    size_t n);
static size_t al_llm_scan_common(const unsigned char *a,
    const unsigned char *b, size_t n);
static void al_llm_scan_memo(al_llm_sse_t *s, const unsigned char *end,
    unsigned text);
static void al_llm_scan_copy(al_llm_sse_scan_t *to,
    const al_llm_sse_scan_t *from);
static size_t al_llm_scan(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static inline size_t al_llm_scan_run(const unsigned char *p, size_t i,
    size_t n);
static void al_llm_scan_nl(al_llm_sse_t *s);
static void al_llm_scan_value(al_llm_sse_t *s, al_llm_sse_scan_t *x,
    unsigned char c);
static void al_llm_scan_key(al_llm_sse_scan_t *x, const char *k,
    size_t len);
static int al_llm_scan_type(al_llm_sse_t *s, const char *name, size_t n);
static int al_llm_scan_suffix(al_llm_sse_t *s, const char *suffix,
    size_t n);
static size_t al_llm_utf8_len(unsigned cp);


/* what a byte is to the scan inside an object or array */
enum {
    AL_LLM_B_OTHER = 0,                 /* in a number, true, false, null */
    AL_LLM_B_BLANK,
    AL_LLM_B_EOL,                       /* CR, LF: the line's end */
    AL_LLM_B_QUOTE,
    AL_LLM_B_OPEN,                      /* '{' '[' */
    AL_LLM_B_CLOSE,                     /* '}' ']' */
    AL_LLM_B_COMMA,
    AL_LLM_B_COLON
};

static const unsigned char  al_llm_scan_class[256] = {
    [' '] = AL_LLM_B_BLANK, ['\t'] = AL_LLM_B_BLANK,
    ['\n'] = AL_LLM_B_EOL, ['\r'] = AL_LLM_B_EOL,
    ['"'] = AL_LLM_B_QUOTE,
    ['{'] = AL_LLM_B_OPEN, ['['] = AL_LLM_B_OPEN,
    ['}'] = AL_LLM_B_CLOSE, [']'] = AL_LLM_B_CLOSE,
    [','] = AL_LLM_B_COMMA, [':'] = AL_LLM_B_COLON
};

/* 1: a byte a string's run stops at ('"', backslash, a line's end) */
static const unsigned char  al_llm_scan_stop[256] = {
    ['"'] = 1, ['\\'] = 1, ['\n'] = 1, ['\r'] = 1
};


/*
 * What the strict scanner (al_llm_json_scan()) records of the events that
 * need more than the scan: by the index of each name in its list.
 */

static const char *const  al_llm_sse_none[] = { NULL };

static const al_llm_scan_spec_t  al_llm_sse_plain = {
    al_llm_sse_none, -1, -1, NULL, 0, 0, NULL, NULL
};

/* chat: model, error, usage (its members from 4 on), choices */

enum {
    AL_LLM_C_MODEL = 0,
    AL_LLM_C_ERROR,
    AL_LLM_C_USAGE,
    AL_LLM_C_CHOICES,
    AL_LLM_C_PROMPT,
    AL_LLM_C_COMPLETION,
    AL_LLM_C_TOTAL,
    AL_LLM_C_DETAILS
};

static const char *const  al_llm_sse_chat_names[] = {
    "model", "error", "usage", "choices", NULL
};

static const char *const  al_llm_sse_chat_usage[] = {
    "prompt_tokens", "completion_tokens", "total_tokens",
    "prompt_tokens_details", NULL
};

/* the two lists above with their lengths, for the quick reader */

static const al_str_t  al_llm_sse_chat_keys[] = {
    { "model", 5 }, { "error", 5 }, { "usage", 5 }, { "choices", 7 },
    { NULL, 0 }
};

static const al_str_t  al_llm_sse_chat_usage_keys[] = {
    { "prompt_tokens", 13 }, { "completion_tokens", 17 },
    { "total_tokens", 12 }, { "prompt_tokens_details", 21 }, { NULL, 0 }
};

static const al_llm_scan_spec_t  al_llm_sse_chat_spec = {
    al_llm_sse_chat_names, AL_LLM_C_MODEL, AL_LLM_C_USAGE,
    al_llm_sse_chat_usage, AL_LLM_C_PROMPT, 0, al_llm_sse_chat_keys,
    al_llm_sse_chat_usage_keys
};

static const char *const  al_llm_sse_cached[] = { "cached_tokens", NULL };

static const al_llm_scan_spec_t  al_llm_sse_details_spec = {
    al_llm_sse_cached, -1, -1, NULL, 0, 0, NULL, NULL
};

/* responses: response {model, usage}, then the usage object */

static const char *const  al_llm_sse_resp_names[] = { "response", NULL };
static const char *const  al_llm_sse_msg_names[] = { "message", NULL };

static const char *const  al_llm_sse_model_usage[] = {
    "model", "usage", NULL
};

static const al_llm_scan_spec_t  al_llm_sse_resp_spec = {
    al_llm_sse_resp_names, -1, 0, al_llm_sse_model_usage, 1, 0, NULL, NULL
};

static const char *const  al_llm_sse_resp_usage[] = {
    "input_tokens", "output_tokens", "total_tokens", "input_tokens_details",
    NULL
};

static const al_llm_scan_spec_t  al_llm_sse_resp_usage_spec = {
    al_llm_sse_resp_usage, -1, 3, al_llm_sse_cached, 4, 0, NULL, NULL
};

/* anthropic: message {model, usage}; usage; the usage members */

static const al_llm_scan_spec_t  al_llm_sse_start_spec = {
    al_llm_sse_msg_names, -1, 0, al_llm_sse_model_usage, 1, 0, NULL, NULL
};

static const char *const  al_llm_sse_usage_names[] = { "usage", NULL };

static const al_llm_scan_spec_t  al_llm_sse_mdelta_spec = {
    al_llm_sse_usage_names, -1, 0, al_llm_usage_ant_names, 1, 0, NULL, NULL
};


void
al_llm_sse_init(al_llm_sse_t *s, al_llm_kind_t kind, al_llm_endpoint_t ep,
    unsigned hide_usage)
{
    /* the memo's points and bytes are read only once recorded */
    memset(s, 0, offsetof(al_llm_sse_t, memo_point));

    if (kind == AL_LLM_ANTHROPIC) {
        s->proto = AL_LLM_P_ANTHROPIC;

    } else if (ep == AL_LLM_EP_RESPONSES) {
        s->proto = AL_LLM_P_RESPONSES;

    } else {
        s->proto = AL_LLM_P_CHAT;
    }

    /* only OpenAI chat streams carry a chunk we add and hide */
    s->hide_usage = (hide_usage && s->proto == AL_LLM_P_CHAT);
    s->state = AL_LLM_S_LINE;
}


void
al_llm_sse_free(al_llm_sse_t *s)
{
    free(s->data);
    s->data = NULL;
    s->data_len = 0;
    s->data_cap = 0;
    s->span = NULL;
    s->span_len = 0;
}


/*
 * The byte loop.  base + i is the absolute offset of p[i].  Before bytes
 * are taken into the open block, the block's size with them is checked
 * against the bound; the last LF of a CRLF blank line is the one byte
 * taken unchecked, so the bound does not depend on where a slice ends.
 */

int
al_llm_sse_feed(al_llm_sse_t *s, const unsigned char *p, size_t len,
    size_t *used, al_llm_sse_block_t *blk)
{
    return al_llm_sse_run(s, p, len, used, blk, 1);
}


int
al_llm_sse_feed_drops(al_llm_sse_t *s, const unsigned char *p, size_t len,
    size_t *used, al_llm_sse_block_t *blk)
{
    return al_llm_sse_run(s, p, len, used, blk, 0);
}


/*
 * al_llm_sse_feed() (each 1), or al_llm_sse_feed_drops() (each 0): a block
 * that is not dropped does not end the call, the slice goes on.
 */

static int
al_llm_sse_run(al_llm_sse_t *s, const unsigned char *p, size_t len,
    size_t *used, al_llm_sse_block_t *blk, unsigned each)
{
    size_t          i, j;
    uint64_t        base;
    unsigned char   c;

    base = s->offset;
    i = 0;

    if (s->stopped || s->ended) {
        s->offset += len;
        *used = len;
        return 0;
    }

    if (s->cr_block) {
        if (len == 0) {
            *used = 0;
            return 0;
        }

        s->cr_block = 0;

        if (p[0] == '\n') {
            i = 1;
        }

        s->offset = base + i;
        al_llm_sse_block(s, blk);

        if (each || blk->drop) {
            *used = i;
            return 1;
        }
    }

    while (i < len) {
        c = p[i];

        if (s->cr) {
            s->cr = 0;

            if (c == '\n') {
                i++;
                continue;
            }
        }

        switch (s->state) {

        case AL_LLM_S_LINE:

            if (c == '\n' || c == '\r') {

                /* a blank line: the event, and the block, end here */

            blank:

                if (base + i + 1 - s->block_start > AL_LLM_EVENT_MAX) {
                    goto stop;
                }

                i++;
                al_llm_sse_dispatch(s);

                if (c == '\r') {
                    if (i == len) {
                        s->cr_block = 1;
                        s->offset = base + i;
                        *used = i;
                        return 0;
                    }

                    if (p[i] == '\n') {
                        i++;
                    }
                }

                s->offset = base + i;
                al_llm_sse_block(s, blk);

                if (each || blk->drop) {
                    *used = i;
                    return 1;
                }

                break;
            }

            if (c == ':') {
                if (base + i + 1 - s->block_start > AL_LLM_EVENT_MAX) {
                    goto stop;
                }

                i++;
                s->state = AL_LLM_S_COMMENT;
                break;
            }

            /*
             * "data:" whole in the slice, the line of most events: what
             * the field state does with it, without its byte loop.
             */

            if (c == 'd' && len - i >= 5 && memcmp(p + i, "data:", 5) == 0) {
                if (base + i + 5 - s->block_start > AL_LLM_EVENT_MAX) {
                    goto stop;
                }

                i += 5;

                if (s->data_lines == 0) {
                    /* the event's first data line: nothing to join */
                    s->target = AL_LLM_T_DATA;
                    s->data_lines = 1;

                } else {
                    al_llm_sse_data_line(s);
                }

                if (s->stopped) {
                    goto stop;
                }

                /* on to the value without turns of the loop */

                if (i == len) {
                    s->state = AL_LLM_S_VALUE_START;
                    break;
                }

                if (p[i] == ' ') {
                    if (base + i + 1 - s->block_start > AL_LLM_EVENT_MAX) {
                        goto stop;
                    }

                    i++;
                }

                s->state = AL_LLM_S_VALUE;

                if (i == len) {
                    break;
                }

                goto value;
            }

            s->state = AL_LLM_S_FIELD;
            s->field_len = 0;
            break;

        case AL_LLM_S_FIELD:

            for (j = i; j < len && p[j] != ':' && p[j] != '\r'
                        && p[j] != '\n'; j++)
            {
                /* void */
            }

            if (base + j + (j < len) - s->block_start > AL_LLM_EVENT_MAX) {
                goto stop;
            }

            if (s->field_len + (j - i) <= sizeof(s->field)) {
                memcpy(s->field + s->field_len, p + i, j - i);
                s->field_len += j - i;

            } else {
                s->field_len = sizeof(s->field) + 1;
            }

            i = j;

            if (i == len) {
                break;
            }

            al_llm_sse_field(s);
            i++;

            if (s->stopped) {
                goto stop;
            }

            if (p[j] == ':') {
                s->state = AL_LLM_S_VALUE_START;
                break;
            }

            /* "data" alone on its line: a field with an empty value */

            s->cr = (p[j] == '\r');
            s->state = AL_LLM_S_LINE;
            break;

        case AL_LLM_S_VALUE_START:

            s->state = AL_LLM_S_VALUE;

            if (c == ' ') {
                if (base + i + 1 - s->block_start > AL_LLM_EVENT_MAX) {
                    goto stop;
                }
                i++;
            }
            break;

        case AL_LLM_S_VALUE:
        value:

            /*
             * A data line is scanned as its end is looked for: the scan
             * stops at the line's end (and the bytes an event shares with
             * the one before are not read at all).  A block over the
             * bound stops the parser, whatever was scanned.
             */

            if (s->target == AL_LLM_T_DATA) {
                j = i + al_llm_sse_data(s, p + i, len - i);

            } else {
                j = al_llm_sse_eol(p, i, len);
            }

            if (base + j + (j < len) - s->block_start > AL_LLM_EVENT_MAX) {
                goto stop;
            }

            if (s->target == AL_LLM_T_EVENT) {
                al_llm_sse_name(s, p + i, j - i);

            } else if (s->stopped) {
                goto stop;
            }

            i = j;

            if (i == len) {
                break;
            }

            s->state = AL_LLM_S_LINE;

            /* LF and a blank line, the end of most events */

            if (p[i] == '\n' && len - i >= 2
                && (p[i + 1] == '\n' || p[i + 1] == '\r'))
            {
                i++;
                c = p[i];
                goto blank;
            }

            s->cr = (p[i] == '\r');
            i++;
            break;

        case AL_LLM_S_COMMENT:

            j = al_llm_sse_eol(p, i, len);

            if (base + j + (j < len) - s->block_start > AL_LLM_EVENT_MAX) {
                goto stop;
            }

            i = j;

            if (i == len) {
                break;
            }

            s->cr = (p[i] == '\r');
            s->state = AL_LLM_S_LINE;
            i++;
            break;

        default:
            goto stop;
        }
    }

    /* the slice ends inside an event: what it had of the data is copied */
    al_llm_sse_keep(s);

    s->offset = base + len;
    *used = len;

    return 0;

stop:

    al_llm_sse_stop(s);
    s->offset = base + len;
    *used = len;

    return 0;
}


void
al_llm_sse_observe(al_llm_sse_t *s, const unsigned char *p, size_t len)
{
    size_t              off, used;
    al_llm_sse_block_t  blk;

    off = 0;

    while (off < len) {
        (void) al_llm_sse_run(s, p + off, len - off, &used, &blk, 0);
        off += used;
    }
}


uint64_t
al_llm_sse_settled(const al_llm_sse_t *s)
{
    return (s->stopped || s->ended) ? s->offset : s->block_start;
}


uint64_t
al_llm_sse_offset(const al_llm_sse_t *s)
{
    return s->offset;
}


int
al_llm_sse_finish(al_llm_sse_t *s, al_llm_sse_block_t *blk)
{
    int  rc;

    rc = 0;

    if (s->cr_block) {
        s->cr_block = 0;
        al_llm_sse_block(s, blk);
        rc = 1;
    }

    s->ended = 1;
    al_llm_sse_free(s);

    return rc;
}


al_llm_source_t
al_llm_sse_result(const al_llm_sse_t *s, uint64_t prompt, uint64_t reserved,
    al_llm_usage_t *u)
{
    unsigned  last;
    uint64_t  est;

    *u = s->usage;

    /*
     * A usage that counts no token (decimals, strings, names of another
     * API: each read as 0) is none: a call with a prompt used some.
     */

    if (s->done && s->usage_seen && !s->stopped && u->total_tokens != 0
        && (s->proto != AL_LLM_P_ANTHROPIC || s->started))
    {
        return AL_LLM_SOURCE_STREAM;
    }

    if (u->total_tokens == 0) {
        memset(u, 0, sizeof(*u));
    }

    est = s->delta_bytes / 4 + (s->delta_bytes % 4 != 0);

    if (u->completion_tokens < est) {
        u->completion_tokens = est;
    }

    /*
     * A parser that stopped (an event over the bound, no memory) saw
     * none of the rest, which may be output up to the cap reserved: a
     * client could otherwise make its output go uncounted by having an
     * early event echo a large request.  So did a stream cut before its
     * end and its final usage: the provider may have generated up to
     * the cap, reasoning the client never sees included, and a client
     * that closed its connection after the last text could otherwise
     * have it charged as the text alone.  A chat stream's usage beside
     * choices (in every chunk, with vLLM's continuous_usage_stats) is a
     * count so far: the final one comes beside none.  A stream that
     * ended without its final usage after an event that was no JSON
     * object is charged so too: that event may have been output the
     * text count missed, as a JSON answer that cannot be read is
     * charged its reservation.
     */

    last = s->usage_seen && (s->proto != AL_LLM_P_CHAT || s->usage_last);

    if ((s->stopped || (!last && (!s->done || s->unread)))
        && u->completion_tokens < reserved)
    {
        u->completion_tokens = reserved;
    }

    if (u->prompt_tokens == 0) {
        u->prompt_tokens = prompt;
    }

    u->total_tokens = u->prompt_tokens + u->completion_tokens;

    return AL_LLM_SOURCE_ESTIMATED;
}


/*
 * Where the line at p[i] ends: its CR or LF, else len.  Sixteen bytes at
 * a time where the CPU has SSE2 (every x86-64), else eight (a word has a
 * zero byte exactly when (w - 0x01..) & ~w & 0x80.. is not 0; the lowest
 * flag is exact, borrows only run upwards).
 */

static size_t
al_llm_sse_eol(const unsigned char *p, size_t i, size_t len)
{
#if (defined __x86_64__ && defined __SSE2__)

    unsigned  m;
    __m128i   v, lf, cr;

    lf = _mm_set1_epi8('\n');
    cr = _mm_set1_epi8('\r');

    while (len - i >= 16) {
        v = _mm_loadu_si128((const __m128i *) (const void *) (p + i));
        m = (unsigned) _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lf),
                                                      _mm_cmpeq_epi8(v, cr)));
        if (m != 0) {
            return i + (size_t) __builtin_ctz(m);
        }

        i += 16;
    }

#elif (defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

    uint64_t  w, a, b, m;

    while (len - i >= 8) {
        memcpy(&w, p + i, 8);
        a = w ^ UINT64_C(0x0a0a0a0a0a0a0a0a);
        b = w ^ UINT64_C(0x0d0d0d0d0d0d0d0d);
        m = (((a - UINT64_C(0x0101010101010101)) & ~a)
             | ((b - UINT64_C(0x0101010101010101)) & ~b))
            & UINT64_C(0x8080808080808080);

        if (m != 0) {
            return i + (size_t) (__builtin_ctzll(m) >> 3);
        }

        i += 8;
    }

#endif

    while (i < len && p[i] != '\n' && p[i] != '\r') {
        i++;
    }

    return i;
}


/* a field name is complete: where does its value go */

static void
al_llm_sse_field(al_llm_sse_t *s)
{
    s->target = AL_LLM_T_NONE;

    if (s->field_len == 4 && memcmp(s->field, "data", 4) == 0) {
        al_llm_sse_data_line(s);

    } else if (s->field_len == 5 && memcmp(s->field, "event", 5) == 0) {
        s->target = AL_LLM_T_EVENT;
        s->event_len = 0;
        s->event_over = 0;
    }
}


/* a "data" field: its value goes to the data, after a LF if not the first */

static void
al_llm_sse_data_line(al_llm_sse_t *s)
{
    static const unsigned char  nl = '\n';

    s->target = AL_LLM_T_DATA;

    if (s->data_lines > 0) {
        /* lines join with "\n": the data is no longer one piece */
        al_llm_sse_keep(s);

        if (s->scan.state != AL_LLM_L_DEAD || s->parse_all) {
            (void) al_llm_sse_append(s, &nl, 1);
        }

        if (s->data_total < sizeof(s->head)) {
            s->head[s->data_total] = nl;
        }

        s->data_total++;
        al_llm_scan_nl(s);
    }

    s->data_lines++;
}


/*
 * A data line's bytes from p, n of them to the end of the slice: scanned
 * where they lie up to the line's end, which is returned (the index of
 * its CR or LF, else n).  The piece is only remembered (span), and copied
 * by al_llm_sse_keep() if another piece follows or the slice ends first.
 */

static size_t
al_llm_sse_data(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    size_t  k, m;

    if (p[0] == '\n' || p[0] == '\r') {
        return 0;
    }

    al_llm_sse_keep(s);

    if (s->data_total == 0) {
        m = al_llm_scan_first(s, p, n);

    } else {
        m = al_llm_scan(s, p, n);
    }

    if (s->data_total == 0 && m >= sizeof(s->head)) {
        memcpy(s->head, p, sizeof(s->head));

    } else if (s->data_total < sizeof(s->head)) {
        k = sizeof(s->head) - s->data_total;
        memcpy(s->head + s->data_total, p, m < k ? m : k);
    }

    s->data_total += m;
    s->span = p;
    s->span_len = m;

    return m;
}


/* a piece of an "event:" line */

static void
al_llm_sse_name(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    if (n > sizeof(s->event_name) - s->event_len) {
        s->event_over = 1;
        return;
    }

    memcpy(s->event_name + s->event_len, p, n);
    s->event_len += n;
}


/*
 * The remembered piece is about to go out of reach: copy it, unless the
 * scan already knows the event will not be parsed.
 */

static void
al_llm_sse_keep(al_llm_sse_t *s)
{
    if (s->span_len == 0) {
        return;
    }

    if (s->scan.state != AL_LLM_L_DEAD || s->parse_all) {
        (void) al_llm_sse_append(s, s->span, s->span_len);
    }

    s->span = NULL;
    s->span_len = 0;
}


/*
 * The data bytes of a block never outnumber its raw bytes, which the
 * caller of this has bounded, so the buffer stays within
 * AL_LLM_EVENT_MAX + 1.
 */

static int
al_llm_sse_append(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    size_t          cap;
    unsigned char  *data;

    if (n == 0) {
        return 0;
    }

    if (n > AL_LLM_EVENT_MAX + 1 - s->data_len) {
        s->stopped = 1;
        return -1;
    }

    if (s->data_len + n > s->data_cap) {
        cap = s->data_cap ? s->data_cap : AL_LLM_DATA_MIN;

        while (cap < s->data_len + n) {
            cap *= 2;
        }

        if (cap > AL_LLM_EVENT_MAX + 1) {
            cap = AL_LLM_EVENT_MAX + 1;
        }

        data = realloc(s->data, cap);
        if (data == NULL) {
            s->nomem = 1;
            s->stopped = 1;
            return -1;
        }

        s->data = data;
        s->data_cap = cap;
    }

    memcpy(s->data + s->data_len, p, n);
    s->data_len += n;

    return 0;
}


static void
al_llm_sse_block(al_llm_sse_t *s, al_llm_sse_block_t *blk)
{
    blk->start = s->block_start;
    blk->end = s->offset;
    blk->drop = s->block_drop;
    blk->event = s->block_event;

    if (s->block_drop) {
        s->dropped++;
    }

    s->block_start = s->offset;
    s->block_drop = 0;
    s->block_event = 0;
}


static void
al_llm_sse_stop(al_llm_sse_t *s)
{
    s->stopped = 1;
    s->cr = 0;
    s->cr_block = 0;
    al_llm_sse_free(s);
}


/* a blank line: dispatch the event, if the block had data lines */

static void
al_llm_sse_dispatch(al_llm_sse_t *s)
{
    if (s->data_lines > 0) {
        s->block_event = 1;
        s->events++;

        if (s->proto == AL_LLM_P_CHAT && s->data_total == 6
            && s->head[0] == '[' && s->head[5] == ']'
            && memcmp(s->head + 1, "DONE", 4) == 0)
        {
            s->done = 1;

        } else if (s->parse_all) {
            al_llm_sse_unread(s);
            al_llm_sse_keep(s);
            al_llm_sse_parse(s, s->data, s->data_len);

        } else if (s->scan.state != AL_LLM_L_END) {
            al_llm_sse_unread(s);

        } else {

            /*
             * One object and blanks.  Anything else jansson refuses or
             * does not act on (valid JSON always ends the scan here).
             */

            if (!al_llm_sse_wanted(s)) {
                al_llm_sse_counted(s);

            } else if (s->data_len == 0) {
                al_llm_sse_decode(s, s->span, s->span_len);

            } else {
                al_llm_sse_keep(s);
                al_llm_sse_decode(s, s->data, s->data_len);
            }
        }
    }

    s->data_len = 0;
    s->data_total = 0;
    s->span = NULL;
    s->span_len = 0;
    s->data_lines = 0;
    s->event_len = 0;
    s->event_over = 0;
    s->target = AL_LLM_T_NONE;
    s->state = AL_LLM_S_LINE;

    /* key_buf, type and type_tail are read only as far as written */
    memset(&s->scan, 0, AL_LLM_SCAN_CORE);
}


/*
 * An event whose data the scan did not see end as one object (not JSON,
 * cut short, another value): what it carried, text or usage, is not
 * known, and a client reading it less strictly may still take text from
 * it.  Blank data carries nothing.
 */

static void
al_llm_sse_unread(al_llm_sse_t *s)
{
    if (s->scan.state != AL_LLM_L_END && s->scan.state != AL_LLM_L_TOP) {
        s->unread = 1;
    }
}


/*
 * Does the event need the JSON parser: can it report usage, end the
 * stream, carry an error or name the model still unknown?  Otherwise all
 * it can give is text bytes, which the scan counted.
 */

static int
al_llm_sse_wanted(al_llm_sse_t *s)
{
    unsigned  f;

    f = s->scan.flags;

    if (f & AL_LLM_F_ESCAPED) {
        return 1;
    }

    switch (s->proto) {

    case AL_LLM_P_CHAT:
        return (f & (AL_LLM_F_USAGE | AL_LLM_F_ERROR))
               || ((f & AL_LLM_F_MODEL) && s->model[0] == '\0'
                   && !s->no_model);

    case AL_LLM_P_RESPONSES:
        return ((f & AL_LLM_F_RESPONSE) && s->model[0] == '\0'
                && !s->no_model)
               || al_llm_scan_type(s, "response.completed", 18)
               || al_llm_scan_type(s, "response.incomplete", 19)
               || al_llm_scan_type(s, "response.failed", 15)
               || al_llm_scan_type(s, "error", 5);

    default:
        return al_llm_scan_type(s, "message_start", 13)
               || al_llm_scan_type(s, "message_delta", 13)
               || al_llm_scan_type(s, "message_stop", 12)
               || al_llm_scan_type(s, "error", 5);
    }
}


/* an event not parsed: the text it carried, as the parser would count */

static void
al_llm_sse_counted(al_llm_sse_t *s)
{
    switch (s->proto) {

    case AL_LLM_P_CHAT:
        s->delta_bytes += s->scan.count;
        break;

    case AL_LLM_P_RESPONSES:
        if (al_llm_scan_suffix(s, ".delta", 6)) {
            s->delta_bytes += s->scan.count;
        }
        break;

    default:
        if (al_llm_scan_type(s, "content_block_delta", 19)) {
            s->delta_bytes += s->scan.count;
        }
        break;
    }
}


/*
 * An event the parser acts on.  When the scan saw no key written with
 * escapes, the strict scanner reads it in one pass, without a tree, and
 * the text bytes are the scan's count; it accepts only what jansson
 * accepts and reads the same values.  What it refuses or cannot tell
 * (duplicate keys, of which jansson keeps the last; an object too large
 * for its duplicate check; a model written with escapes below the top
 * level; invalid JSON) goes to jansson (al_llm_json_load()), so the
 * result is always the one jansson gives.
 */

static void
al_llm_sse_decode(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    int  rc;

    rc = -1;

    if (!(s->scan.flags & AL_LLM_F_ESCAPED)) {
        switch (s->proto) {

        case AL_LLM_P_CHAT:
            rc = al_llm_sse_fast_chat(s, p, n);
            break;

        case AL_LLM_P_RESPONSES:
            rc = al_llm_sse_fast_responses(s, p, n);
            break;

        default:
            rc = al_llm_sse_fast_anthropic(s, p, n);
            break;
        }
    }

    if (rc != 0) {
        al_llm_sse_parse(s, p, n);
    }
}


/* one object, valid as jansson reads it, duplicate keys checked */

static int
al_llm_sse_strict(const al_llm_scan_spec_t *spec, const unsigned char *p,
    size_t n, al_llm_body_t *b)
{
    char  detail[128];

    if (al_llm_json_read(spec, p, n, b, detail, sizeof(detail)) != 0
        || b->jansson || b->root.type != AL_LLM_JT_OBJECT)
    {
        return -1;
    }

    return 0;
}


/*
 * As al_llm_sse_chat(): each failure comes before the first change to s,
 * so an event given to jansson after all is read once.
 */

static int
al_llm_sse_fast_chat(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    size_t            i;
    uint64_t          cached;
    al_llm_body_t     b, d;
    al_llm_usage_t   *u;
    al_llm_jfield_t  *f;

    if (al_llm_sse_strict(&al_llm_sse_chat_spec, p, n, &b) != 0) {
        return -1;
    }

    cached = 0;
    f = &b.f[AL_LLM_C_DETAILS];

    if (b.f[AL_LLM_C_USAGE].type == AL_LLM_JT_OBJECT
        && f->type == AL_LLM_JT_OBJECT)
    {
        if (al_llm_sse_strict(&al_llm_sse_details_spec, p + f->at, f->len,
                              &d)
            != 0)
        {
            return -1;
        }

        cached = al_llm_sse_u64(&d.f[0]);
    }

    s->parsed++;

    f = &b.f[AL_LLM_C_MODEL];

    if (s->model[0] == '\0' && f->type == AL_LLM_JT_STRING
        && (uint64_t) f->num < sizeof(s->model))
    {
        memcpy(s->model, b.model, (size_t) f->num);
        s->model[f->num] = '\0';
    }

    f = &b.f[AL_LLM_C_ERROR];

    if (f->type != AL_LLM_JT_NONE && f->type != AL_LLM_JT_NULL) {
        s->error = 1;
    }

    if (b.f[AL_LLM_C_USAGE].type == AL_LLM_JT_OBJECT) {
        u = &s->usage;
        memset(u, 0, sizeof(*u));

        u->prompt_tokens = al_llm_sse_u64(&b.f[AL_LLM_C_PROMPT]);
        u->completion_tokens = al_llm_sse_u64(&b.f[AL_LLM_C_COMPLETION]);
        u->total_tokens = al_llm_sse_u64(&b.f[AL_LLM_C_TOTAL]);
        u->cached_tokens = cached;

        /* some count read: the others as a client reads them */

        if ((u->prompt_tokens | u->completion_tokens | u->total_tokens)
            != 0)
        {
            u->prompt_tokens = al_llm_field_count(&b.f[AL_LLM_C_PROMPT], p,
                                                  u->prompt_tokens);
            u->completion_tokens = al_llm_field_count(
                                       &b.f[AL_LLM_C_COMPLETION], p,
                                       u->completion_tokens);
            u->total_tokens = al_llm_field_count(&b.f[AL_LLM_C_TOTAL], p,
                                                 u->total_tokens);
        }

        al_llm_usage_total(u);

        s->usage_seen = 1;
    }

    f = &b.f[AL_LLM_C_CHOICES];

    if (f->type != AL_LLM_JT_ARRAY) {
        s->usage_last |= (b.f[AL_LLM_C_USAGE].type == AL_LLM_JT_OBJECT);
        return 0;
    }

    s->delta_bytes += s->scan.count;

    if (b.f[AL_LLM_C_USAGE].type != AL_LLM_JT_OBJECT) {
        return 0;
    }

    /* "choices": [] (blanks inside the brackets only) */

    for (i = 1; i + 1 < f->len; i++) {
        if (p[f->at + i] != ' ' && p[f->at + i] != '\t'
            && p[f->at + i] != '\n' && p[f->at + i] != '\r')
        {
            return 0;
        }
    }

    s->usage_last = 1;
    s->block_drop = s->hide_usage;

    return 0;
}


/* as al_llm_sse_responses() */

static int
al_llm_sse_fast_responses(al_llm_sse_t *s, const unsigned char *p,
    size_t n)
{
    unsigned          resp, final, usage;
    al_llm_body_t     b, d;
    al_llm_usage_t    u;
    al_llm_jfield_t  *f;

    if ((s->scan.flags & AL_LLM_F_USAGE) && al_llm_scan_type(s, "error", 5))
    {
        /* an error that says what the call used: rare, jansson */
        return -1;
    }

    if (al_llm_sse_strict(&al_llm_sse_resp_spec, p, n, &b) != 0) {
        return -1;
    }

    resp = (b.f[0].type == AL_LLM_JT_OBJECT);

    if (resp && s->model[0] == '\0' && b.f[1].type == AL_LLM_JT_STRING
        && b.f[1].esc)
    {
        return -1;
    }

    final = al_llm_scan_type(s, "response.completed", 18)
            || al_llm_scan_type(s, "response.incomplete", 19)
            || al_llm_scan_type(s, "response.failed", 15);

    usage = 0;
    f = &b.f[2];

    if (final && resp && f->type == AL_LLM_JT_OBJECT) {
        if (al_llm_sse_strict(&al_llm_sse_resp_usage_spec, p + f->at,
                              f->len, &d)
            != 0)
        {
            return -1;
        }

        memset(&u, 0, sizeof(u));
        u.prompt_tokens = al_llm_sse_u64(&d.f[0]);
        u.completion_tokens = al_llm_sse_u64(&d.f[1]);
        u.total_tokens = al_llm_sse_u64(&d.f[2]);
        u.cached_tokens = al_llm_sse_u64(&d.f[4]);

        if ((u.prompt_tokens | u.completion_tokens | u.total_tokens) != 0) {
            u.prompt_tokens = al_llm_field_count(&d.f[0], p + f->at,
                                                 u.prompt_tokens);
            u.completion_tokens = al_llm_field_count(&d.f[1], p + f->at,
                                                     u.completion_tokens);
            u.total_tokens = al_llm_field_count(&d.f[2], p + f->at,
                                                u.total_tokens);
        }

        al_llm_usage_total(&u);

        usage = 1;
    }

    s->parsed++;

    if (resp) {
        al_llm_sse_fast_model(s, p, &b.f[1]);
    }

    if (final) {
        s->done = 1;

        if (al_llm_scan_type(s, "response.failed", 15)) {
            s->error = 1;
        }

        if (usage) {
            s->usage = u;
            s->usage_seen = 1;
        }

        return 0;
    }

    if (al_llm_scan_type(s, "error", 5)) {
        s->error = 1;
        return 0;
    }

    if (al_llm_scan_suffix(s, ".delta", 6)) {
        s->delta_bytes += s->scan.count;
    }

    return 0;
}


/* as al_llm_sse_anthropic() */

static int
al_llm_sse_fast_anthropic(al_llm_sse_t *s, const unsigned char *p,
    size_t n)
{
    size_t            k;
    unsigned          lax;
    uint64_t          v[4];
    al_llm_body_t     b, d;
    al_llm_jfield_t  *f;

    if (al_llm_scan_type(s, "message_start", 13)) {
        if (al_llm_sse_strict(&al_llm_sse_start_spec, p, n, &b) != 0) {
            return -1;
        }

        if (b.f[0].type != AL_LLM_JT_OBJECT) {
            s->parsed++;
            return 0;
        }

        if (s->model[0] == '\0' && b.f[1].type == AL_LLM_JT_STRING
            && b.f[1].esc)
        {
            return -1;
        }

        f = &b.f[2];

        if (f->type == AL_LLM_JT_OBJECT
            && al_llm_sse_strict(&al_llm_usage_ant, p + f->at,
                                 f->len, &d)
               != 0)
        {
            return -1;
        }

        s->parsed++;
        al_llm_sse_fast_model(s, p, &b.f[1]);

        if (f->type != AL_LLM_JT_OBJECT) {
            return 0;
        }

        s->started = 1;
        s->in = al_llm_sse_u64(&d.f[0]);
        s->cache_read = al_llm_sse_u64(&d.f[1]);
        s->cache_write = al_llm_sse_u64(&d.f[2]);
        s->out = al_llm_sse_u64(&d.f[3]);
        s->write_5m = al_llm_sse_u64(&d.f[5]);
        s->write_1h = al_llm_sse_u64(&d.f[6]);

        /* some count read: the others as a client reads them */

        if ((s->in | s->cache_read | s->cache_write | s->out | s->write_5m
             | s->write_1h)
            != 0)
        {
            f = &b.f[2];
            s->in = al_llm_field_count(&d.f[0], p + f->at, s->in);
            s->cache_read = al_llm_field_count(&d.f[1], p + f->at,
                                               s->cache_read);
            s->cache_write = al_llm_field_count(&d.f[2], p + f->at,
                                                s->cache_write);
            s->out = al_llm_field_count(&d.f[3], p + f->at, s->out);
            s->write_5m = al_llm_field_count(&d.f[5], p + f->at,
                                             s->write_5m);
            s->write_1h = al_llm_field_count(&d.f[6], p + f->at,
                                             s->write_1h);
        }

    } else if (al_llm_scan_type(s, "message_delta", 13)) {
        if (al_llm_sse_strict(&al_llm_sse_mdelta_spec, p, n, &b) != 0) {
            return -1;
        }

        s->parsed++;

        if (b.f[0].type != AL_LLM_JT_OBJECT) {
            return 0;
        }

        /*
         * A count written as a decimal or a string, once the stream has
         * read one or this usage has one as an integer: the number a
         * client reads.
         */

        lax = (s->in | s->cache_read | s->cache_write | s->out) != 0;

        for (k = 0; k < 4; k++) {
            lax |= (al_llm_sse_u64(&b.f[1 + k]) != 0);
        }

        /* present members replace; output_tokens is the final count */

        for (k = 0; k < 4; k++) {
            f = &b.f[1 + k];
            v[k] = al_llm_sse_u64(f);

            if (f->type == AL_LLM_JT_REAL || f->type == AL_LLM_JT_STRING) {
                v[k] = al_llm_field_count(f, p, 0);

                if (v[k] == 0 || !lax) {
                    continue;
                }

            } else if (f->type != AL_LLM_JT_INT || f->num < 0) {
                continue;
            }

            switch (k) {
            case 0: s->in = v[k]; break;
            case 1: s->cache_read = v[k]; break;
            case 2: s->cache_write = v[k]; break;
            default: s->out = v[k]; s->usage_seen = 1; break;
            }
        }

        /* a cache_creation object replaces the parts as a whole */

        f = &b.f[5];

        if (f->type == AL_LLM_JT_OBJECT) {
            if (al_llm_sse_strict(&al_llm_usage_ant_cc, p + f->at, f->len,
                                  &d)
                != 0)
            {
                return -1;
            }

            s->write_5m = al_llm_sse_u64(&d.f[0]);
            s->write_1h = al_llm_sse_u64(&d.f[1]);

            if ((s->in | s->cache_read | s->cache_write | s->out) != 0) {
                s->write_5m = al_llm_field_count(&d.f[0], p + f->at,
                                                 s->write_5m);
                s->write_1h = al_llm_field_count(&d.f[1], p + f->at,
                                                 s->write_1h);
            }
        }

    } else {
        if ((s->scan.flags & AL_LLM_F_USAGE)
            && al_llm_scan_type(s, "error", 5))
        {
            /* an error that says what the call used: rare, jansson */
            return -1;
        }

        if (al_llm_sse_strict(&al_llm_sse_plain, p, n, &b) != 0) {
            return -1;
        }

        s->parsed++;

        if (al_llm_scan_type(s, "content_block_delta", 19)) {
            s->delta_bytes += s->scan.count;

        } else if (al_llm_scan_type(s, "message_stop", 12)) {
            s->done = 1;

        } else if (al_llm_scan_type(s, "error", 5)) {
            s->error = 1;
        }

        return 0;
    }

    al_llm_usage_anthropic(s->in, s->cache_read, s->cache_write,
                           s->write_5m, s->write_1h, s->out, &s->usage);

    return 0;
}


/* the first "model" the stream names, a string without escapes */

static void
al_llm_sse_fast_model(al_llm_sse_t *s, const unsigned char *p,
    const al_llm_jfield_t *f)
{
    if (s->model[0] == '\0' && f->type == AL_LLM_JT_STRING
        && f->len - 2 < sizeof(s->model))
    {
        memcpy(s->model, p + f->at + 1, f->len - 2);
        s->model[f->len - 2] = '\0';
    }
}


/* as al_llm_json_u64(): a non-negative integer, else 0; at most 2^48 */

static uint64_t
al_llm_sse_u64(const al_llm_jfield_t *f)
{
    if (f->type != AL_LLM_JT_INT || f->num < 0) {
        return 0;
    }

    return (uint64_t) f->num > (UINT64_C(1) << 48) ? (UINT64_C(1) << 48)
                                                  : (uint64_t) f->num;
}


static void
al_llm_sse_parse(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    json_t  *root;

    if (n == 0 || !al_json_depth_ok(p, n)) {
        return;
    }

    s->parsed++;
    s->jansson++;

    root = al_llm_json_load(p, n);
    if (root == NULL) {
        return;
    }

    if (json_is_object(root)) {
        switch (s->proto) {

        case AL_LLM_P_CHAT:
            al_llm_sse_chat(s, root);
            break;

        case AL_LLM_P_RESPONSES:
            al_llm_sse_responses(s, root);
            break;

        default:
            al_llm_sse_anthropic(s, root);
            break;
        }
    }

    json_decref(root);
}


/*
 * {"choices":[{"delta":{"content":"Hi"}}],"usage":null} and, with
 * include_usage, a last {"choices":[],"usage":{...}} before [DONE].
 */

static void
al_llm_sse_chat(al_llm_sse_t *s, json_t *root)
{
    size_t   i;
    json_t  *usage, *choices, *c, *v;

    al_llm_sse_model(s, root);

    v = json_object_get(root, "error");
    if (v != NULL && !json_is_null(v)) {
        s->error = 1;
    }

    usage = json_object_get(root, "usage");
    if (usage != NULL && json_is_object(usage)) {
        al_llm_usage_openai(usage, &s->usage);
        s->usage_seen = 1;

    } else {
        usage = NULL;
    }

    choices = json_object_get(root, "choices");
    if (choices == NULL || !json_is_array(choices)) {
        s->usage_last |= (usage != NULL);
        return;
    }

    json_array_foreach(choices, i, c) {
        if (!json_is_object(c)) {
            continue;
        }

        s->delta_bytes += al_llm_text_bytes(json_object_get(c, "delta"), 0);

        v = json_object_get(c, "text");
        if (v != NULL && json_is_string(v)) {
            s->delta_bytes += json_string_length(v);
        }
    }

    if (usage != NULL && json_array_size(choices) == 0) {
        s->usage_last = 1;
        s->block_drop = s->hide_usage;
    }
}


/* event: response.output_text.delta ... event: response.completed */

static void
al_llm_sse_responses(al_llm_sse_t *s, json_t *root)
{
    size_t       len;
    json_t      *resp, *usage, *v;
    const char  *type;

    type = al_llm_sse_type(s, root, &len);

    resp = json_object_get(root, "response");
    if (resp != NULL && json_is_object(resp)) {
        al_llm_sse_model(s, resp);

    } else {
        resp = NULL;
    }

    if (type == NULL) {
        return;
    }

    if ((len == 18 && memcmp(type, "response.completed", 18) == 0)
        || (len == 19 && memcmp(type, "response.incomplete", 19) == 0)
        || (len == 15 && memcmp(type, "response.failed", 15) == 0))
    {
        s->done = 1;

        if (type[9] == 'f') {
            s->error = 1;
        }

        usage = (resp != NULL) ? json_object_get(resp, "usage") : NULL;
        if (usage != NULL && json_is_object(usage)) {
            al_llm_usage_responses(usage, &s->usage);
            s->usage_seen = 1;
        }

        return;
    }

    if (len == 5 && memcmp(type, "error", 5) == 0) {
        s->error = 1;

        /*
         * A router that bills a call and then fails it may say what it
         * used beside the error: kept for an error answer's charge
         * (not a final usage: a stream cut by it is still charged at
         * least its output cap).
         */

        usage = json_object_get(root, "usage");
        if (usage != NULL && json_is_object(usage)) {
            al_llm_usage_responses(usage, &s->usage);
        }

        return;
    }

    if (len > 6 && memcmp(type + len - 6, ".delta", 6) == 0) {
        v = json_object_get(root, "delta");
        if (v != NULL && json_is_string(v)) {
            s->delta_bytes += json_string_length(v);
        }
    }
}


/*
 * message_start {message:{model, usage:{input_tokens, cache_*,
 * output_tokens}}}, content_block_delta {delta:{text}}, message_delta
 * {usage:{output_tokens}} (cumulative: it replaces), message_stop.
 */

static void
al_llm_sse_anthropic(al_llm_sse_t *s, json_t *root)
{
    size_t       len;
    json_t      *msg, *usage;
    uint64_t     v;
    unsigned     found, lax, error;
    const char  *type;

    type = al_llm_sse_type(s, root, &len);
    if (type == NULL) {
        return;
    }

    error = 0;

    if (len == 13 && memcmp(type, "message_start", 13) == 0) {
        msg = json_object_get(root, "message");
        if (msg == NULL || !json_is_object(msg)) {
            return;
        }

        al_llm_sse_model(s, msg);

        usage = json_object_get(msg, "usage");
        if (usage == NULL || !json_is_object(usage)) {
            return;
        }

        s->started = 1;
        s->in = al_llm_json_u64(usage, "input_tokens", NULL);
        s->cache_read = al_llm_json_u64(usage, "cache_read_input_tokens",
                                        NULL);
        s->cache_write = al_llm_json_u64(usage,
                                         "cache_creation_input_tokens",
                                         NULL);
        s->out = al_llm_json_u64(usage, "output_tokens", NULL);
        al_llm_sse_cache_creation(s, usage);

        /* some count read: the others as a client reads them */

        if ((s->in | s->cache_read | s->cache_write | s->out | s->write_5m
             | s->write_1h)
            != 0)
        {
            s->in = al_llm_json_count(usage, "input_tokens", s->in);
            s->cache_read = al_llm_json_count(usage,
                                              "cache_read_input_tokens",
                                              s->cache_read);
            s->cache_write = al_llm_json_count(usage,
                                               "cache_creation_input_tokens",
                                               s->cache_write);
            s->out = al_llm_json_count(usage, "output_tokens", s->out);
        }

    } else if ((len == 13 && memcmp(type, "message_delta", 13) == 0)
               || (len == 5 && memcmp(type, "error", 5) == 0))
    {
        /*
         * An error may say what the call used, as a router that bills a
         * call and then fails it does: read as a message_delta's, for
         * an error answer's charge, but not a final usage (a stream cut
         * by it is still charged at least its output cap).
         */

        error = (type[0] == 'e');

        if (error) {
            s->error = 1;
        }

        usage = json_object_get(root, "usage");
        if (usage == NULL || !json_is_object(usage)) {
            return;
        }

        /*
         * A count written as a decimal or a string, once the stream has
         * read one or this usage has one as an integer, is the number a
         * client reads.
         */

        lax = (s->in | s->cache_read | s->cache_write | s->out
               | al_llm_json_u64(usage, "output_tokens", NULL)
               | al_llm_json_u64(usage, "input_tokens", NULL)
               | al_llm_json_u64(usage, "cache_read_input_tokens", NULL)
               | al_llm_json_u64(usage, "cache_creation_input_tokens",
                                 NULL))
              != 0;

        v = al_llm_json_u64(usage, "output_tokens", &found);
        if (!found && lax) {
            v = al_llm_json_count(usage, "output_tokens", 0);
            found = (v != 0);
        }

        if (found) {
            s->out = v;
            s->usage_seen |= !error;
        }

        v = al_llm_json_u64(usage, "input_tokens", &found);
        if (!found && lax) {
            v = al_llm_json_count(usage, "input_tokens", 0);
            found = (v != 0);
        }

        if (found) {
            s->in = v;
        }

        v = al_llm_json_u64(usage, "cache_read_input_tokens", &found);
        if (!found && lax) {
            v = al_llm_json_count(usage, "cache_read_input_tokens", 0);
            found = (v != 0);
        }

        if (found) {
            s->cache_read = v;
        }

        v = al_llm_json_u64(usage, "cache_creation_input_tokens", &found);
        if (!found && lax) {
            v = al_llm_json_count(usage, "cache_creation_input_tokens", 0);
            found = (v != 0);
        }

        if (found) {
            s->cache_write = v;
        }

        if (json_is_object(json_object_get(usage, "cache_creation"))) {
            al_llm_sse_cache_creation(s, usage);
        }

    } else if (len == 19 && memcmp(type, "content_block_delta", 19) == 0) {
        s->delta_bytes += al_llm_text_bytes(json_object_get(root, "delta"),
                                            0);
        return;

    } else if (len == 12 && memcmp(type, "message_stop", 12) == 0) {
        s->done = 1;
        return;

    } else {
        return;
    }

    al_llm_usage_anthropic(s->in, s->cache_read, s->cache_write,
                           s->write_5m, s->write_1h, s->out, &s->usage);
}


/* the parts of usage's cache_creation object, 0 without it */

static void
al_llm_sse_cache_creation(al_llm_sse_t *s, const json_t *usage)
{
    json_t  *cc;

    s->write_5m = 0;
    s->write_1h = 0;

    cc = json_object_get(usage, "cache_creation");
    if (cc == NULL || !json_is_object(cc)) {
        return;
    }

    s->write_5m = al_llm_json_u64(cc, "ephemeral_5m_input_tokens", NULL);
    s->write_1h = al_llm_json_u64(cc, "ephemeral_1h_input_tokens", NULL);

    /* some count read: the others as a client reads them */

    if ((s->in | s->cache_read | s->cache_write | s->out) != 0) {
        s->write_5m = al_llm_json_count(cc, "ephemeral_5m_input_tokens",
                                        s->write_5m);
        s->write_1h = al_llm_json_count(cc, "ephemeral_1h_input_tokens",
                                        s->write_1h);
    }
}


/* the first "model" the stream names */

static void
al_llm_sse_model(al_llm_sse_t *s, const json_t *obj)
{
    if (s->model[0] == '\0') {
        (void) al_llm_copy_str(json_object_get(obj, "model"), s->model,
                               sizeof(s->model));
    }
}


/* the data's "type", else the "event:" name */

static const char *
al_llm_sse_type(al_llm_sse_t *s, const json_t *root, size_t *len)
{
    json_t  *v;

    v = json_object_get(root, "type");

    if (v != NULL && json_is_string(v)) {
        *len = json_string_length(v);
        return json_string_value(v);
    }

    if (s->event_len > 0 && !s->event_over) {
        *len = s->event_len;
        return s->event_name;
    }

    return NULL;
}


/*
 * The first piece of an event's data.  The events of a stream mostly
 * repeat one envelope before their text, as in
 *
 *     {"id":"c-1","object":"chat.completion.chunk","created":1,
 *      "model":"m","choices":[{"index":0,"delta":{"content":"
 *
 * and the scan is a function of its bytes alone (and of the protocol,
 * fixed for the stream): after bytes it has read before, from the start
 * of an event, its state is the one it had then.  So a memo keeps the
 * start of the last event scanned in one piece and the scan's state at a
 * few points of it (after each '{' and '[', and at the opening quote of
 * the first counted string, where recording ends): a new event is
 * compared with it (8 bytes a step), the state at the last point inside
 * the bytes both share is taken, and only the rest is scanned.  Points
 * after the bytes shared are replaced by the new event's own.  Only the
 * cost depends on where slices end, never the result.
 *
 * p[0..n) runs to the end of the slice; the line's end, where the scan
 * stops, is returned.  The memo holds only bytes scanned before a line's
 * end, never a CR or LF, so the bytes an event shares with it lie in its
 * line: they are compared, not searched for the line's end.
 */

static size_t
al_llm_scan_first(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    size_t               d, k, m;
    al_llm_sse_point_t  *pt;

    m = s->memo_len;
    k = s->memo_points;

    /*
     * All of it, the usual case, by memcmp(); else how much.  Every point
     * is after the first byte: an event that begins otherwise shares none.
     */

    if (k == 0 || p[0] != s->memo[0]) {
        k = 0;

    } else if (n < m || memcmp(p, s->memo, m) != 0) {
        d = al_llm_scan_common(p, s->memo, n < m ? n : m);

        while (k > 0 && s->memo_point[k - 1].at > d) {
            k--;
        }
    }

    /* the memo changes only when this event records a point */

    s->memo_p = p;
    s->memo_keep = k;

    if (k == 0) {
        /*
         * When events keep sharing nothing with the one before (a
         * counter early in each, as Responses' "sequence_number"),
         * recording costs each of them a copy for nothing: after 4 in a
         * row, only one in 16 records.
         */

        s->memo_misses++;
        s->memo_try = (s->memo_misses <= 4 || s->memo_misses % 16 == 0);

        d = al_llm_scan(s, p, n);

        s->memo_try = 0;
        return d;
    }

    s->memo_misses = 0;

    pt = &s->memo_point[k - 1];
    al_llm_scan_copy(&s->scan, &pt->scan);

    if (k == s->memo_points && s->memo_full) {
        /* all of the memo: on in the text, nothing more to record */
        return pt->at + al_llm_scan_tail(s, p + pt->at, n - pt->at);
    }

    s->memo_try = 1;

    d = pt->at + al_llm_scan(s, p + pt->at, n - pt->at);

    s->memo_try = 0;

    return d;
}


/*
 * The scan from the memo's text point, p[0..n) the bytes after it.  Its
 * state there is the point's: what follows the text is then a function
 * of the bytes after the text alone (the text changes only the count).
 * So when an object ends on its line within 64 bytes after the text, and
 * 8 or more (fewer cost less to scan than to compare), those bytes and
 * the state they lead to are kept as the memo's tail: the next event
 * that ends the same way after its text has them compared, not scanned.
 */

static size_t
al_llm_scan_tail(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    size_t              i, j, t;
    uint64_t            count;
    al_llm_sse_scan_t  *x;

    x = &s->scan;

    i = al_llm_scan_text(x, p, n);

    if (i == n || p[i] != '"') {
        return i;                       /* the line or the slice ends */
    }

    t = i + 1;
    j = t + s->tail_len;

    if (s->tail_ok && j < n && (p[j] == '\n' || p[j] == '\r')
        && memcmp(p + t, s->tail, s->tail_len) == 0)
    {
        count = x->count;
        al_llm_scan_copy(x, &s->tail_scan);
        x->count = count + s->tail_count;

        return j;
    }

    count = x->count;
    j = i + al_llm_scan(s, p + i, n - i);

    if (j < n && x->state == AL_LLM_L_END && j - t >= 1
        && j - t <= sizeof(s->tail))
    {
        memcpy(s->tail, p + t, j - t);
        s->tail_len = j - t;
        s->tail_count = x->count - count;
        al_llm_scan_copy(&s->tail_scan, x);
        s->tail_ok = 1;
    }

    return j;
}


/*
 * What al_llm_scan() does in a counted string (states STR, ESC and HEX,
 * role COUNT) up to its closing quote, the line's end or n: where it
 * stopped.  At the quote the state is still STR, so that al_llm_scan()
 * closes the string from there.
 */

static size_t
al_llm_scan_text(al_llm_sse_scan_t *x, const unsigned char *p, size_t n)
{
    size_t         i, j;
    unsigned char  c;

    i = 0;

    while (i < n) {
        c = p[i];

        switch (x->state) {

        case AL_LLM_L_STR:
            j = al_llm_scan_run(p, i, n);
            x->count += j - i;
            i = j;

            if (i == n || p[i] != '\\') {
                return i;
            }

            x->state = AL_LLM_L_ESC;
            i++;
            break;

        case AL_LLM_L_ESC:
            if (c == '\n' || c == '\r') {
                return i;
            }

            if (c == 'u') {
                x->hex_left = 4;
                x->hex = 0;
                x->state = AL_LLM_L_HEX;

            } else {
                x->count++;
                x->state = AL_LLM_L_STR;
            }

            i++;
            break;

        default:                        /* AL_LLM_L_HEX */
            if (c >= '0' && c <= '9') {
                x->hex = x->hex << 4 | (unsigned) (c - '0');

            } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
                x->hex = x->hex << 4 | (unsigned) ((c | 0x20) - 'a' + 10);

            } else {
                x->state = AL_LLM_L_STR;        /* read again */
                break;
            }

            if (--x->hex_left == 0) {
                x->count += al_llm_utf8_len(x->hex);
                x->state = AL_LLM_L_STR;
            }

            i++;
            break;
        }
    }

    return n;
}


/*
 * How many bytes a and b share at their start, of the first n: sixteen
 * bytes a step with SSE2, then eight.
 */

static size_t
al_llm_scan_common(const unsigned char *a, const unsigned char *b, size_t n)
{
    size_t    i;
    uint64_t  x, y;

    i = 0;

#if (defined __x86_64__ && defined __SSE2__)

    {
        unsigned  m;

        for ( /* void */ ; n - i >= 16; i += 16) {
            m = (unsigned) _mm_movemask_epi8(_mm_cmpeq_epi8(
                    _mm_loadu_si128((const __m128i *) (const void *) (a + i)),
                    _mm_loadu_si128((const __m128i *) (const void *) (b + i))));

            if (m != 0xffff) {
                return i + (size_t) __builtin_ctz(~m);
            }
        }
    }

#endif

    for ( /* void */ ; n - i >= 8; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);

        if (x != y) {
#if defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return i + (size_t) (__builtin_ctzll(x ^ y) >> 3);
#else
            break;
#endif
        }
    }

    while (i < n && a[i] == b[i]) {
        i++;
    }

    return i;
}


/*
 * The scan, from the event's first byte, has read up to end: a point.
 * When all are taken, the deepest replaces the last.  text: end is in
 * counted text, which differs from event to event: the last point.
 */

static void
al_llm_scan_memo(al_llm_sse_t *s, const unsigned char *end, unsigned text)
{
    size_t               at;
    al_llm_sse_point_t  *pt;

    at = (size_t) (end - s->memo_p);

    if (at > sizeof(s->memo)) {
        s->memo_try = 0;
        return;
    }

    /* the tail belongs to the text point */
    s->tail_ok = 0;

    if (s->memo_points > s->memo_keep) {
        /* the points past the bytes shared give way to this event's */
        s->memo_points = s->memo_keep;
        s->memo_len = s->memo_keep ? s->memo_point[s->memo_keep - 1].at : 0;
        s->memo_full = 0;
    }

    memcpy(s->memo + s->memo_len, s->memo_p + s->memo_len,
           at - s->memo_len);
    s->memo_len = at;

    if (s->memo_points == AL_LLM_SSE_POINTS) {
        s->memo_points--;
    }

    pt = &s->memo_point[s->memo_points++];
    pt->at = at;
    al_llm_scan_copy(&pt->scan, &s->scan);
    s->memo_keep = s->memo_points;

    if (text) {
        s->memo_full = 1;
        s->memo_try = 0;
    }
}


/*
 * The scan's state at a point, to or from the memo.  A point is never
 * inside a string, so no key is being read (key_buf is not needed), and
 * the type, read only under AL_LLM_F_TYPE, is complete when that is set:
 * without it the fields before key_buf are the whole state.
 */

static void
al_llm_scan_copy(al_llm_sse_scan_t *to, const al_llm_sse_scan_t *from)
{
    memcpy(to, from, AL_LLM_SCAN_CORE);

    if (from->flags & AL_LLM_F_TYPE) {
        memcpy(to->type, from->type, sizeof(to->type));
        memcpy(to->type_tail, from->type_tail, sizeof(to->type_tail));
    }
}


/*
 * The scan of an event's data, fed piece by piece.  It keeps no bytes
 * but a key being read (up to 10) and the top-level "type" (its first 64
 * bytes and last 6), so its result is the same however the data is
 * sliced.  A piece runs to the end of the slice: the scan stops at the
 * line's first CR or LF and returns where that is (else n), so the line's
 * end is found in the same pass (al_llm_sse_eol() only once the scan has
 * nothing more to follow).
 * It is not a validator: on valid JSON it sees what jansson sees; on
 * anything else jansson refuses the event, and all the scan may have done
 * is count text bytes of an event that then adds nothing (a scan that
 * does not end in L_END adds nothing either).
 */

static size_t
al_llm_scan(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    size_t              i, j, klen;
    unsigned            d;
    unsigned char       c;
    const char         *k;
    al_llm_sse_scan_t  *x;

    x = &s->scan;
    k = NULL;
    klen = 0;

    for (i = 0; i < n; i++) {
        c = p[i];

        switch (x->state) {

        case AL_LLM_L_TOP:
        case AL_LLM_L_END:

            if (c == ' ' || c == '\t') {
                break;
            }

            if (c == '\n' || c == '\r') {
                return i;
            }

            if (c != '{' || x->state == AL_LLM_L_END) {
                x->state = AL_LLM_L_DEAD;
                return al_llm_sse_eol(p, i, n);
            }

            x->state = AL_LLM_L_IN;
            x->depth = 1;
            x->expect = AL_LLM_X_KEY;
            break;

        case AL_LLM_L_IN:
        in:

            switch (al_llm_scan_class[c]) {

            case AL_LLM_B_BLANK:
                break;

            case AL_LLM_B_EOL:
                return i;

            case AL_LLM_B_QUOTE:
                x->role = AL_LLM_R_NONE;

                if (x->expect == AL_LLM_X_KEY) {

                    /*
                     * A key whole in the slice and its colon right after
                     * it, as providers write them: what the string state
                     * and a turn of this switch for the colon do, here.
                     */

                    j = al_llm_scan_run(p, i + 1, n);

                    if (n - j >= 2 && p[j] == '"' && p[j + 1] == ':') {
                        al_llm_scan_key(x, (const char *) p + i + 1,
                                        j - i - 1);
                        x->expect = AL_LLM_X_VALUE;

                        i = j + 2;

                        if (i == n) {
                            return n;
                        }

                        c = p[i];
                        goto in;
                    }

                    x->role = AL_LLM_R_KEY;
                    x->key_len = 0;

                } else if (x->expect == AL_LLM_X_VALUE) {
                    al_llm_scan_value(s, x, c);
                }

                x->expect = AL_LLM_X_NONE;
                x->state = AL_LLM_L_STR;

                if (s->memo_try && x->role == AL_LLM_R_COUNT) {
                    al_llm_scan_memo(s, p + i + 1, 1);
                }

                if (x->role == AL_LLM_R_NONE) {

                    /* a string nothing is read of: the string state's run */

                    i = al_llm_scan_run(p, i + 1, n);

                    if (i == n) {
                        return n;
                    }

                    if (p[i] == '\\') {
                        x->state = AL_LLM_L_ESC;
                        break;
                    }

                    if (p[i] != '"') {
                        return i;                       /* CR or LF */
                    }

                    x->state = AL_LLM_L_IN;

                    if (++i == n) {
                        return n;
                    }

                    c = p[i];
                    goto in;
                }

                /* on into the string, without a turn of the loop */

                if (++i == n) {
                    return n;
                }

                goto str;

            case AL_LLM_B_OPEN:
                if (x->expect == AL_LLM_X_VALUE) {
                    al_llm_scan_value(s, x, c);
                }

                /* as al_json_depth_ok() counts, whatever the grammar */

                if (++x->depth > AL_JSON_DEPTH_MAX) {
                    x->state = AL_LLM_L_DEAD;
                    return al_llm_sse_eol(p, i, n);
                }

                if (c == '[') {
                    x->arrays |= (uint64_t) 1 << x->depth;
                    x->expect = AL_LLM_X_VALUE;

                } else {
                    x->arrays &= ~((uint64_t) 1 << x->depth);
                    x->expect = AL_LLM_X_KEY;
                }

                x->key = AL_LLM_K_OTHER;

                if (s->memo_try) {
                    al_llm_scan_memo(s, p + i + 1, 0);
                }
                break;

            case AL_LLM_B_CLOSE:
                d = x->depth;

                if (x->skip == d) {
                    x->skip = 0;
                }

                if (x->delta == d) {
                    x->delta = 0;
                }

                if (x->choices == d) {
                    x->choices = 0;
                }

                x->depth--;
                x->expect = AL_LLM_X_NONE;

                if (x->depth == 0) {
                    x->state = AL_LLM_L_END;
                }
                break;

            case AL_LLM_B_COMMA:
                x->expect = (x->arrays >> x->depth & 1) ? AL_LLM_X_VALUE
                                                        : AL_LLM_X_KEY;
                x->key = AL_LLM_K_OTHER;
                break;

            case AL_LLM_B_COLON:
                x->expect = AL_LLM_X_VALUE;
                break;

            default:
                /*
                 * A number, true, false, null: its first byte is enough,
                 * and the bytes up to the next one this switch names do
                 * nothing here.
                 */

                if (x->expect == AL_LLM_X_VALUE) {
                    al_llm_scan_value(s, x, c);
                    x->expect = AL_LLM_X_NONE;
                }

                while (i + 1 < n
                       && al_llm_scan_class[p[i + 1]] == AL_LLM_B_OTHER)
                {
                    i++;
                }
                break;
            }

            /* still inside: on to the next byte without a turn */

            if (x->state != AL_LLM_L_IN) {
                break;
            }

            if (++i == n) {
                return n;
            }

            c = p[i];
            goto in;

        case AL_LLM_L_STR:
        str:

            j = al_llm_scan_run(p, i, n);

            switch (x->role) {

            case AL_LLM_R_COUNT:
                x->count += j - i;
                break;

            case AL_LLM_R_KEY:
                if (x->key_len == 0 && j < n && p[j] == '"') {
                    /* all of the key is here: read where it lies */
                    k = (const char *) p + i;
                    klen = j - i;
                    break;
                }

                if (x->key_len + (j - i) <= sizeof(x->key_buf)) {
                    memcpy(x->key_buf + x->key_len, p + i, j - i);
                    x->key_len += j - i;

                } else {
                    x->key_len = sizeof(x->key_buf) + 1;
                }

                k = x->key_buf;
                klen = x->key_len;
                break;

            case AL_LLM_R_TYPE:
                for ( /* void */ ; i < j; i++) {
                    if (x->type_len < sizeof(x->type)) {
                        x->type[x->type_len] = (char) p[i];
                    }

                    x->type_tail[x->type_len % sizeof(x->type_tail)] =
                                                                (char) p[i];
                    x->type_len++;
                }
                break;

            default:
                break;
            }

            i = j;

            if (i == n) {
                return n;
            }

            if (p[i] != '"' && p[i] != '\\') {
                return i;                               /* CR or LF */
            }

            if (p[i] == '\\') {
                if (x->role == AL_LLM_R_KEY || x->role == AL_LLM_R_TYPE) {
                    /* jansson decodes it; the event goes to jansson */
                    x->flags |= AL_LLM_F_ESCAPED;
                }

                x->state = AL_LLM_L_ESC;
                break;
            }

            if (x->role == AL_LLM_R_KEY) {
                al_llm_scan_key(x, k, klen);
            }

            x->role = AL_LLM_R_NONE;
            x->state = AL_LLM_L_IN;

            if (++i == n) {
                return n;
            }

            c = p[i];
            goto in;

        case AL_LLM_L_ESC:

            if (c == '\n' || c == '\r') {
                return i;
            }

            if (c == 'u') {
                x->hex_left = 4;
                x->hex = 0;
                x->state = AL_LLM_L_HEX;
                break;
            }

            if (x->role == AL_LLM_R_COUNT) {
                x->count++;
            }

            x->state = AL_LLM_L_STR;
            break;

        case AL_LLM_L_HEX:

            if (c >= '0' && c <= '9') {
                x->hex = x->hex << 4 | (unsigned) (c - '0');

            } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
                x->hex = x->hex << 4 | (unsigned) ((c | 0x20) - 'a' + 10);

            } else {
                /*
                 * Invalid (jansson refuses it); the byte is read again as
                 * part of the string, where al_json_depth_ok() reads it
                 * (a CR or LF ends the line there).
                 */
                x->state = AL_LLM_L_STR;
                i--;
                break;
            }

            if (--x->hex_left == 0) {
                if (x->role == AL_LLM_R_COUNT) {
                    x->count += al_llm_utf8_len(x->hex);
                }

                x->state = AL_LLM_L_STR;
            }
            break;

        default:
            return al_llm_sse_eol(p, i, n);
        }
    }

    return n;
}


/*
 * The first '"', backslash, CR or LF in p[i..n), else n: al_llm_str_run()
 * that also stops at a line's end.  Sixteen bytes at a time with SSE2;
 * else eight, where a control byte flags its word too (the third test)
 * and one that ends no line is passed over as the plain string byte it is
 * to the scan.
 */

static inline size_t
al_llm_scan_run(const unsigned char *p, size_t i, size_t n)
{
#if (defined __x86_64__ && defined __SSE2__)

    unsigned  m;
    __m128i   v, q, b, lf, cr;

    q = _mm_set1_epi8('"');
    b = _mm_set1_epi8('\\');
    lf = _mm_set1_epi8('\n');
    cr = _mm_set1_epi8('\r');

    while (n - i >= 16) {
        v = _mm_loadu_si128((const __m128i *) (const void *) (p + i));
        m = (unsigned) _mm_movemask_epi8(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q),
                                          _mm_cmpeq_epi8(v, b)),
                             _mm_or_si128(_mm_cmpeq_epi8(v, lf),
                                          _mm_cmpeq_epi8(v, cr))));
        if (m != 0) {
            return i + (size_t) __builtin_ctz(m);
        }

        i += 16;
    }

#elif (defined __BYTE_ORDER__ && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

    uint64_t  w, q, b, m;

    while (n - i >= 8) {
        memcpy(&w, p + i, 8);
        q = w ^ UINT64_C(0x2222222222222222);           /* '"' */
        b = w ^ UINT64_C(0x5c5c5c5c5c5c5c5c);           /* '\\' */
        m = (((q - UINT64_C(0x0101010101010101)) & ~q)
             | ((b - UINT64_C(0x0101010101010101)) & ~b)
             | ((w - UINT64_C(0x2020202020202020)) & ~w))   /* < 0x20 */
            & UINT64_C(0x8080808080808080);

        if (m == 0) {
            i += 8;
            continue;
        }

        i += (size_t) (__builtin_ctzll(m) >> 3);

        if (al_llm_scan_stop[p[i]]) {
            return i;
        }

        i++;                                /* another control byte */
    }

#endif

    while (i < n && !al_llm_scan_stop[p[i]]) {
        i++;
    }

    return i;
}


/*
 * A LF that joins two data lines: what the scan does with the one byte
 * "\n" (blank outside strings, a plain string byte inside one).
 */

static void
al_llm_scan_nl(al_llm_sse_t *s)
{
    al_llm_sse_scan_t  *x;

    x = &s->scan;

    switch (x->state) {

    case AL_LLM_L_ESC:
        if (x->role == AL_LLM_R_COUNT) {
            x->count++;
        }

        x->state = AL_LLM_L_STR;
        return;

    case AL_LLM_L_HEX:
        /* not a hex digit: read again as a string byte */
        x->state = AL_LLM_L_STR;
        break;

    case AL_LLM_L_STR:
        break;

    default:
        return;
    }

    switch (x->role) {

    case AL_LLM_R_COUNT:
        x->count++;
        break;

    case AL_LLM_R_KEY:
        if (x->key_len + 1 <= sizeof(x->key_buf)) {
            x->key_buf[x->key_len++] = '\n';

        } else {
            x->key_len = sizeof(x->key_buf) + 1;
        }
        break;

    case AL_LLM_R_TYPE:
        if (x->type_len < sizeof(x->type)) {
            x->type[x->type_len] = '\n';
        }

        x->type_tail[x->type_len % sizeof(x->type_tail)] = '\n';
        x->type_len++;
        break;

    default:
        break;
    }
}


/*
 * A value begins, with byte c, as a member of the container at the
 * current depth (named by x->key when that is an object).  Decides what
 * the value is to the parser: a flag, text to count, the type.
 */

static void
al_llm_scan_value(al_llm_sse_t *s, al_llm_sse_scan_t *x, unsigned char c)
{
    unsigned  d, key, open;

    d = x->depth;
    key = (x->arrays >> d & 1) ? AL_LLM_K_OTHER : x->key;
    open = (c == '{' || c == '[');

    x->key = AL_LLM_K_OTHER;

    if (d == 1) {

        switch (key) {

        case AL_LLM_K_USAGE:
            if (c == '{') {
                x->flags |= AL_LLM_F_USAGE;
            }
            break;

        case AL_LLM_K_ERROR:
            if (c != 'n') {
                x->flags |= AL_LLM_F_ERROR;
            }
            break;

        case AL_LLM_K_MODEL:
            x->flags |= AL_LLM_F_MODEL;
            break;

        case AL_LLM_K_RESPONSE:
            if (c == '{') {
                x->flags |= AL_LLM_F_RESPONSE;
            }
            break;

        case AL_LLM_K_CHOICES:
            if (s->proto == AL_LLM_P_CHAT && c == '[') {
                x->choices = 2;
            }
            break;

        case AL_LLM_K_TYPE:
            if (s->proto == AL_LLM_P_CHAT) {
                break;
            }

            /* the last "type" wins, as in jansson */

            x->flags &= ~AL_LLM_F_TYPE;

            if (c == '"') {
                x->flags |= AL_LLM_F_TYPE;
                x->role = AL_LLM_R_TYPE;
                x->type_len = 0;
            }
            break;

        case AL_LLM_K_DELTA:
            if (s->proto == AL_LLM_P_CHAT) {
                break;
            }

            /* the last "delta" wins too */

            x->count = 0;

            if (c == '"') {
                x->role = AL_LLM_R_COUNT;

            } else if (open && s->proto == AL_LLM_P_ANTHROPIC) {
                x->delta = 2;
            }
            break;

        default:
            break;
        }

        return;
    }

    if (x->choices == 2 && d == 3 && !(x->arrays >> 3 & 1)) {

        /* a member of choices[i]: its "delta" and (completions) "text" */

        if (key == AL_LLM_K_DELTA) {
            if (c == '"') {
                x->role = AL_LLM_R_COUNT;

            } else if (open) {
                x->delta = 4;
            }

        } else if (key == AL_LLM_K_TEXT && c == '"') {
            x->role = AL_LLM_R_COUNT;
        }

        return;
    }

    /* inside a delta: every string but those al_llm_text_bytes() skips */

    if (x->delta == 0 || d < x->delta || (x->skip != 0 && d >= x->skip)) {
        return;
    }

    if (key >= AL_LLM_K_TYPE) {
        if (open) {
            x->skip = d + 1;
        }

        return;
    }

    if (c == '"') {
        x->role = AL_LLM_R_COUNT;
    }
}


/* a key has been read, its len bytes at k (over 10: not one to know) */

static void
al_llm_scan_key(al_llm_sse_scan_t *x, const char *k, size_t len)
{
    x->key = AL_LLM_K_OTHER;

    if (x->flags & AL_LLM_F_ESCAPED) {
        return;
    }

#define al_llm_key_is(name)                                                   \
    (memcmp(k, name, sizeof(name) - 1) == 0)

    switch (len) {

    case 2:
        x->key = al_llm_key_is("id") ? AL_LLM_K_ID : AL_LLM_K_OTHER;
        break;

    case 4:
        x->key = al_llm_key_is("text") ? AL_LLM_K_TEXT
               : al_llm_key_is("type") ? AL_LLM_K_TYPE
               : al_llm_key_is("role") ? AL_LLM_K_ROLE : AL_LLM_K_OTHER;
        break;

    case 5:
        x->key = al_llm_key_is("delta") ? AL_LLM_K_DELTA
               : al_llm_key_is("usage") ? AL_LLM_K_USAGE
               : al_llm_key_is("model") ? AL_LLM_K_MODEL
               : al_llm_key_is("index") ? AL_LLM_K_INDEX
               : al_llm_key_is("error") ? AL_LLM_K_ERROR : AL_LLM_K_OTHER;
        break;

    case 6:
        x->key = al_llm_key_is("object") ? AL_LLM_K_OBJECT : AL_LLM_K_OTHER;
        break;

    case 7:
        x->key = al_llm_key_is("choices") ? AL_LLM_K_CHOICES
                                          : AL_LLM_K_OTHER;
        break;

    case 8:
        x->key = al_llm_key_is("response") ? AL_LLM_K_RESPONSE
                                           : AL_LLM_K_OTHER;
        break;

    case 9:
        x->key = al_llm_key_is("signature") ? AL_LLM_K_SIGNATURE
                                            : AL_LLM_K_OTHER;
        break;

    default:
        break;
    }

#undef al_llm_key_is
}


/*
 * The event's type is name: the data's top-level "type" when it is a
 * string, else the "event:" field, as al_llm_sse_type() decides.
 */

static int
al_llm_scan_type(al_llm_sse_t *s, const char *name, size_t n)
{
    if (s->scan.flags & AL_LLM_F_TYPE) {
        return s->scan.type_len == n && memcmp(s->scan.type, name, n) == 0;
    }

    return s->event_len == n && !s->event_over
           && memcmp(s->event_name, name, n) == 0;
}


/* the type ends with suffix (n <= 6), and is longer than it */

static int
al_llm_scan_suffix(al_llm_sse_t *s, const char *suffix, size_t n)
{
    size_t              k, len;
    al_llm_sse_scan_t  *x;

    x = &s->scan;

    if (!(x->flags & AL_LLM_F_TYPE)) {
        return s->event_len > n && !s->event_over
               && memcmp(s->event_name + s->event_len - n, suffix, n) == 0;
    }

    len = x->type_len;

    if (len <= n) {
        return 0;
    }

    for (k = 0; k < n; k++) {
        if (x->type_tail[(len - n + k) % sizeof(x->type_tail)] != suffix[k])
        {
            return 0;
        }
    }

    return 1;
}


/*
 * Bytes of a \uXXXX escape in UTF-8; a surrogate pair makes 4 in all, 3
 * for its first half and 1 for its second, which is what a lone half is
 * read as when jansson refuses it (al_llm_json_load(): \ufffd, \u0001).
 */

static size_t
al_llm_utf8_len(unsigned cp)
{
    if (cp < 0x80) {
        return 1;
    }

    if (cp < 0x800) {
        return 2;
    }

    if (cp >= 0xdc00 && cp <= 0xdfff) {
        return 1;
    }

    return 3;
}
