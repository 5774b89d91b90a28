/*
 * LLM gateway: the state a provider keeps for the account, and whose it
 * is.
 *
 * The Responses API stores each response (unless "store": false), and a
 * later request may name one by its id, "previous_response_id": the
 * provider then continues that conversation, its context read from what
 * it stored.  Every client of an entry shares the entry's key, so to the
 * provider they are one account: a client that learns another's response
 * id (from a log, a trace, a shared file) could continue that client's
 * conversation and read what it held.  The gateway binds each response id
 * to the client whose call it answered, and lets a request name only a
 * response of its own client (the module keeps the bindings in
 * airlock_llm_zone).
 *
 *   al_llm_state_request()  the id a Responses request body names
 *   al_llm_state_resp_*()   the id of a Responses answer, from a JSON
 *                           body ("id" of the top-level object) or an
 *                           event stream ("response.id" of the first
 *                           "response.*" event: response.created,
 *                           whose id the others repeat), read as it
 *                           arrives and no further than that id
 *
 * An id is kept only as printable ASCII without escapes, at most
 * AL_LLM_STATE_ID_MAX bytes (the providers' are "resp_" and some 50 hex
 * digits): an answer whose id is otherwise binds nothing, and a request
 * naming such an id names one that is bound to no client.
 */

#include <string.h>

#include "al_llm_internal.h"


enum {
    AL_LLM_ST_LINE = 0,                 /* at a line's start */
    AL_LLM_ST_FIELD,                    /* in a field's name */
    AL_LLM_ST_VALUE,                    /* after "data:", a space may
                                           follow */
    AL_LLM_ST_DATA,                     /* in a data line's value */
    AL_LLM_ST_SKIP                      /* in any other line */
};

/* the keys the reader tells apart */
enum {
    AL_LLM_SK_OTHER = 0,
    AL_LLM_SK_ID,
    AL_LLM_SK_TYPE,
    AL_LLM_SK_RESPONSE
};

/* what the open string is */
enum {
    AL_LLM_SS_OTHER = 0,
    AL_LLM_SS_KEY,
    AL_LLM_SS_ID,
    AL_LLM_SS_TYPE
};

#define AL_LLM_STATE_TYPE  "response."

/* nesting past this is not followed: the answer binds nothing */
#define AL_LLM_STATE_DEPTH  (1u << 20)


static void al_llm_state_json(al_llm_state_resp_t *s, unsigned char c);
static void al_llm_state_json_reset(al_llm_state_resp_t *s);
static void al_llm_state_event_end(al_llm_state_resp_t *s);
static unsigned al_llm_state_key(const al_llm_state_resp_t *s);


static const char *const  al_llm_state_names[] = {
    "previous_response_id", NULL
};

static const al_str_t  al_llm_state_keys[] = {
    { "previous_response_id", sizeof("previous_response_id") - 1 },
    { NULL, 0 }
};

static const al_llm_scan_spec_t  al_llm_state_spec = {
    al_llm_state_names, -1, -1, NULL, 0, 0, al_llm_state_keys, NULL
};


int
al_llm_state_request(const unsigned char *body, size_t len,
    al_llm_state_ref_t *ref)
{
    size_t                  i;
    const unsigned char    *v;
    const al_llm_jfield_t  *f;
    char                    detail[AL_DETAIL_MAX];
    al_llm_body_t           b;

    ref->len = 0;
    ref->id[0] = '\0';

    if (al_llm_json_read(&al_llm_state_spec, body, len, &b, detail,
                         sizeof(detail))
        != 0)
    {
        return -1;
    }

    f = &b.f[0];

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL) {
        return 0;
    }

    /* a value of another type, or an escape, is named but bound to none */

    if (f->type != AL_LLM_JT_STRING || f->esc || f->len < 2
        || f->len - 2 > AL_LLM_STATE_ID_MAX)
    {
        return 1;
    }

    v = body + f->at + 1;

    for (i = 0; i < f->len - 2; i++) {
        if (v[i] < 0x21 || v[i] > 0x7e) {
            return 1;
        }
    }

    memcpy(ref->id, v, f->len - 2);
    ref->id[f->len - 2] = '\0';
    ref->len = f->len - 2;

    return 1;
}


void
al_llm_state_resp_init(al_llm_state_resp_t *s, unsigned stream)
{
    memset(s, 0, offsetof(al_llm_state_resp_t, id));
    s->id[0] = '\0';
    s->stream = stream ? 1 : 0;
}


int
al_llm_state_resp_feed(al_llm_state_resp_t *s, const unsigned char *p,
    size_t len)
{
    size_t         i;
    unsigned char  c;

    if (s->done) {
        return s->id_len > 0;
    }

    if (!s->stream) {
        for (i = 0; i < len && !s->done; i++) {
            al_llm_state_json(s, p[i]);
        }

        return s->id_len > 0;
    }

    for (i = 0; i < len && !s->done; i++) {
        c = p[i];

        if (s->cr) {
            s->cr = 0;

            if (c == '\n') {
                continue;                       /* the LF of a CRLF */
            }
        }

        switch (s->line) {

        case AL_LLM_ST_LINE:
            if (c == '\r' || c == '\n') {
                s->cr = (c == '\r');
                al_llm_state_event_end(s);
                continue;
            }

            s->field_len = 0;
            s->line = AL_LLM_ST_FIELD;

            /* fall through */

        case AL_LLM_ST_FIELD:
            if (c == ':') {
                s->line = (s->field_len == 4
                           && memcmp(s->field, "data", 4) == 0)
                          ? AL_LLM_ST_VALUE : AL_LLM_ST_SKIP;
                continue;
            }

            if (c == '\r' || c == '\n') {
                s->cr = (c == '\r');
                s->line = AL_LLM_ST_LINE;
                continue;
            }

            if (s->field_len < sizeof(s->field)) {
                s->field[s->field_len] = (char) c;
            }

            if (s->field_len <= sizeof(s->field)) {
                s->field_len++;
            }

            continue;

        case AL_LLM_ST_VALUE:
            s->line = AL_LLM_ST_DATA;

            if (c == ' ') {
                continue;
            }

            /* fall through */

        case AL_LLM_ST_DATA:
            if (c == '\r' || c == '\n') {
                s->cr = (c == '\r');
                s->line = AL_LLM_ST_LINE;

                /* the event's data lines are joined by a line feed */
                al_llm_state_json(s, '\n');
                continue;
            }

            al_llm_state_json(s, c);
            continue;

        default: /* AL_LLM_ST_SKIP */
            if (c == '\r' || c == '\n') {
                s->cr = (c == '\r');
                s->line = AL_LLM_ST_LINE;
            }

            continue;
        }
    }

    return s->id_len > 0;
}


/*
 * An event ends: its "response.id" is the response's when its "type"
 * is one of the response's own events ("response.created" and the
 * like, not "response.output_text.delta"'s item ids, which are not at
 * that path).
 */

static void
al_llm_state_event_end(al_llm_state_resp_t *s)
{
    if (!s->bad && s->ended && s->depth == 0 && s->type_ok
        && s->cand_len > 0)
    {
        memcpy(s->id, s->cand, s->cand_len);
        s->id[s->cand_len] = '\0';
        s->id_len = s->cand_len;
        s->done = 1;
        return;
    }

    al_llm_state_json_reset(s);
}


static void
al_llm_state_json_reset(al_llm_state_resp_t *s)
{
    s->depth = 0;
    s->ended = 0;
    s->in_str = 0;
    s->esc = 0;
    s->bad = 0;
    s->expect_key = 0;
    s->obj1 = 0;
    s->obj2 = 0;
    s->key1 = AL_LLM_SK_OTHER;
    s->key2 = AL_LLM_SK_OTHER;
    s->str = AL_LLM_SS_OTHER;
    s->type_ok = 0;
    s->cand_len = 0;
}


/*
 * One byte of JSON: only the nesting, strings, and which key a value at
 * depth 1 or 2 is of.  A document it cannot follow binds nothing.
 */

static void
al_llm_state_json(al_llm_state_resp_t *s, unsigned char c)
{
    size_t  n;

    if (s->bad) {
        return;
    }

    if (s->in_str) {
        if (s->esc) {
            s->esc = 0;
            s->str_bad = 1;                     /* kept only unescaped */
            return;
        }

        if (c == '\\') {
            s->esc = 1;
            return;
        }

        if (c == '"') {
            s->in_str = 0;

            switch (s->str) {

            case AL_LLM_SS_KEY:
                if (s->depth == 1) {
                    s->key1 = al_llm_state_key(s);

                } else {
                    s->key2 = al_llm_state_key(s);
                }

                break;

            case AL_LLM_SS_ID:
                if (s->str_bad || s->str_len == 0) {
                    s->cand_len = 0;
                    break;
                }

                if (!s->stream) {
                    memcpy(s->id, s->cand, s->str_len);
                    s->id[s->str_len] = '\0';
                    s->id_len = s->str_len;
                    s->done = 1;
                    break;
                }

                s->cand_len = s->str_len;
                break;

            case AL_LLM_SS_TYPE:
                s->type_ok = (!s->str_bad
                              && s->str_len > sizeof(AL_LLM_STATE_TYPE) - 1);
                break;
            }

            return;
        }

        n = s->str_len;

        switch (s->str) {

        case AL_LLM_SS_KEY:
            if (n < sizeof(s->key)) {
                s->key[n] = (char) c;
            }

            break;

        case AL_LLM_SS_ID:
            if (n >= AL_LLM_STATE_ID_MAX || c < 0x21 || c > 0x7e) {
                s->str_bad = 1;

            } else {
                s->cand[n] = (char) c;
            }

            break;

        case AL_LLM_SS_TYPE:
            if (n < sizeof(AL_LLM_STATE_TYPE) - 1
                && (char) c != AL_LLM_STATE_TYPE[n])
            {
                s->str_bad = 1;
            }

            break;
        }

        if (n < AL_LLM_STATE_ID_MAX + 1) {
            s->str_len = n + 1;
        }

        return;
    }

    switch (c) {

    case '{':
    case '[':
        if ((s->depth == 0 && s->ended) || s->depth >= AL_LLM_STATE_DEPTH) {
            s->bad = 1;             /* a second document, or too deep */
            return;
        }

        s->depth++;

        if (s->depth == 1) {
            s->obj1 = (c == '{');
            s->key1 = AL_LLM_SK_OTHER;

        } else if (s->depth == 2) {
            s->obj2 = (c == '{');
            s->key2 = AL_LLM_SK_OTHER;
        }

        s->expect_key = (c == '{');
        return;

    case '}':
    case ']':
        if (s->depth == 0) {
            s->bad = 1;
            return;
        }

        s->depth--;
        s->expect_key = 0;

        if (s->depth == 0) {
            s->ended = 1;

            if (!s->stream) {
                s->done = 1;                    /* an answer of no id */
            }
        }

        return;

    case ',':
        s->expect_key = (s->depth == 1 && s->obj1)
                        || (s->depth == 2 && s->obj2);
        return;

    case ':':
        s->expect_key = 0;
        return;

    case '"':
        s->in_str = 1;
        s->str_len = 0;
        s->str_bad = 0;
        s->str = AL_LLM_SS_OTHER;

        if (s->depth == 1 && s->obj1) {
            if (s->expect_key) {
                s->str = AL_LLM_SS_KEY;

            } else if (s->key1 == AL_LLM_SK_ID && !s->stream) {
                s->str = AL_LLM_SS_ID;

            } else if (s->key1 == AL_LLM_SK_TYPE && s->stream) {
                s->str = AL_LLM_SS_TYPE;
            }

        } else if (s->depth == 2 && s->obj2) {
            if (s->expect_key) {
                s->str = AL_LLM_SS_KEY;

            } else if (s->stream && s->key1 == AL_LLM_SK_RESPONSE
                       && s->key2 == AL_LLM_SK_ID)
            {
                s->str = AL_LLM_SS_ID;
            }
        }

        return;

    default:
        return;
    }
}


static unsigned
al_llm_state_key(const al_llm_state_resp_t *s)
{
    if (s->str_bad) {
        return AL_LLM_SK_OTHER;
    }

    if (s->str_len == 2 && memcmp(s->key, "id", 2) == 0) {
        return AL_LLM_SK_ID;
    }

    if (s->str_len == 4 && memcmp(s->key, "type", 4) == 0) {
        return AL_LLM_SK_TYPE;
    }

    if (s->str_len == 8 && memcmp(s->key, "response", 8) == 0) {
        return AL_LLM_SK_RESPONSE;
    }

    return AL_LLM_SK_OTHER;
}
