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
 * Memory: only the data lines of the open event are kept, in a buffer that
 * grows to at most AL_LLM_EVENT_MAX + 1 bytes.  A block over that bound
 * stops the parser; from then on bytes are counted and settled, nothing
 * else.
 */

#include <stdlib.h>
#include <string.h>
#include <jansson.h>

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

#define AL_LLM_DATA_MIN   4096


static void al_llm_sse_field(al_llm_sse_t *s);
static void al_llm_sse_value(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static int al_llm_sse_append(al_llm_sse_t *s, const unsigned char *p,
    size_t n);
static void al_llm_sse_dispatch(al_llm_sse_t *s);
static void al_llm_sse_block(al_llm_sse_t *s, al_llm_sse_block_t *blk);
static void al_llm_sse_stop(al_llm_sse_t *s);
static void al_llm_sse_chat(al_llm_sse_t *s, json_t *root);
static void al_llm_sse_responses(al_llm_sse_t *s, json_t *root);
static void al_llm_sse_anthropic(al_llm_sse_t *s, json_t *root);
static void al_llm_sse_model(al_llm_sse_t *s, const json_t *obj);
static const char *al_llm_sse_type(al_llm_sse_t *s, const json_t *root,
    size_t *len);


void
al_llm_sse_init(al_llm_sse_t *s, al_llm_kind_t kind, al_llm_endpoint_t ep,
    unsigned hide_usage)
{
    memset(s, 0, sizeof(*s));

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
        *used = i;

        return 1;
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
                *used = i;

                return 1;
            }

            if (c == ':') {
                if (base + i + 1 - s->block_start > AL_LLM_EVENT_MAX) {
                    goto stop;
                }

                i++;
                s->state = AL_LLM_S_COMMENT;
                break;
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
        case AL_LLM_S_COMMENT:

            for (j = i; j < len && p[j] != '\r' && p[j] != '\n'; j++) {
                /* void */
            }

            if (base + j + (j < len) - s->block_start > AL_LLM_EVENT_MAX) {
                goto stop;
            }

            if (s->state == AL_LLM_S_VALUE) {
                al_llm_sse_value(s, p + i, j - i);

                if (s->stopped) {
                    goto stop;
                }
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
        (void) al_llm_sse_feed(s, p + off, len - off, &used, &blk);
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
al_llm_sse_result(const al_llm_sse_t *s, uint64_t prompt_estimate,
    al_llm_usage_t *u)
{
    uint64_t  est;

    *u = s->usage;

    if (s->done && s->usage_seen && !s->stopped
        && (s->proto != AL_LLM_P_ANTHROPIC || s->started))
    {
        return AL_LLM_SOURCE_STREAM;
    }

    est = s->delta_bytes / 4 + (s->delta_bytes % 4 != 0);

    if (u->completion_tokens < est) {
        u->completion_tokens = est;
    }

    if (u->prompt_tokens == 0) {
        u->prompt_tokens = prompt_estimate;
    }

    u->total_tokens = u->prompt_tokens + u->completion_tokens;

    return AL_LLM_SOURCE_ESTIMATED;
}


/* a field name is complete: where does its value go */

static void
al_llm_sse_field(al_llm_sse_t *s)
{
    static const unsigned char  nl = '\n';

    s->target = AL_LLM_T_NONE;

    if (s->field_len == 4 && memcmp(s->field, "data", 4) == 0) {
        s->target = AL_LLM_T_DATA;

        if (s->data_lines > 0) {
            (void) al_llm_sse_append(s, &nl, 1);
        }

        s->data_lines++;

    } else if (s->field_len == 5 && memcmp(s->field, "event", 5) == 0) {
        s->target = AL_LLM_T_EVENT;
        s->event_len = 0;
        s->event_over = 0;
    }
}


static void
al_llm_sse_value(al_llm_sse_t *s, const unsigned char *p, size_t n)
{
    switch (s->target) {

    case AL_LLM_T_DATA:
        (void) al_llm_sse_append(s, p, n);
        break;

    case AL_LLM_T_EVENT:
        if (n > sizeof(s->event_name) - s->event_len) {
            s->event_over = 1;
            break;
        }
        memcpy(s->event_name + s->event_len, p, n);
        s->event_len += n;
        break;

    default:
        break;
    }
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
    json_t        *root;
    json_error_t   err;

    if (s->data_lines > 0) {
        s->block_event = 1;
        s->events++;

        if (s->proto == AL_LLM_P_CHAT && s->data_len == 6
            && memcmp(s->data, "[DONE]", 6) == 0)
        {
            s->done = 1;

        } else if (s->data_len > 0
                   && al_json_depth_ok(s->data, s->data_len))
        {
            root = json_loadb((const char *) s->data, s->data_len, 0, &err);

            if (root != NULL) {
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
        }
    }

    s->data_len = 0;
    s->data_lines = 0;
    s->event_len = 0;
    s->event_over = 0;
    s->target = AL_LLM_T_NONE;
    s->state = AL_LLM_S_LINE;
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

    if (s->hide_usage && usage != NULL && json_array_size(choices) == 0) {
        s->block_drop = 1;
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
    unsigned     found;
    const char  *type;

    type = al_llm_sse_type(s, root, &len);
    if (type == NULL) {
        return;
    }

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

    } else if (len == 13 && memcmp(type, "message_delta", 13) == 0) {
        usage = json_object_get(root, "usage");
        if (usage == NULL || !json_is_object(usage)) {
            return;
        }

        v = al_llm_json_u64(usage, "output_tokens", &found);
        if (found) {
            s->out = v;
            s->usage_seen = 1;
        }

        v = al_llm_json_u64(usage, "input_tokens", &found);
        if (found) {
            s->in = v;
        }

        v = al_llm_json_u64(usage, "cache_read_input_tokens", &found);
        if (found) {
            s->cache_read = v;
        }

        v = al_llm_json_u64(usage, "cache_creation_input_tokens", &found);
        if (found) {
            s->cache_write = v;
        }

    } else if (len == 19 && memcmp(type, "content_block_delta", 19) == 0) {
        s->delta_bytes += al_llm_text_bytes(json_object_get(root, "delta"),
                                            0);
        return;

    } else if (len == 12 && memcmp(type, "message_stop", 12) == 0) {
        s->done = 1;
        return;

    } else {
        if (len == 5 && memcmp(type, "error", 5) == 0) {
            s->error = 1;
        }
        return;
    }

    al_llm_usage_anthropic(s->in, s->cache_read, s->cache_write, s->out,
                           &s->usage);
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
