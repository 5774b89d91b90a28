/*
 * LLM gateway: the state a provider keeps for the account, and whose it
 * is.
 *
 * The Responses API stores each response (unless "store": false), and a
 * later request may name one by its id, "previous_response_id": the
 * provider then continues that conversation, its context read from what
 * it stored.  It stores the response's output items too, each with an id
 * of its own, and a request's "input" may name them: an item_reference
 * ({"type": "item_reference", "id": ...}, or {"id": ...} alone), or an
 * item that carries its "id" (a reasoning item given by its id, whose
 * reasoning the provider reads from storage).  Every client of an entry
 * shares the entry's key, so to the provider they are one account: a
 * client that learns another's ids (from a log, a trace, a shared file)
 * could continue that client's conversation, or pull its items into a
 * call of its own, and read what they held.  The gateway binds each
 * response id and each output item id to the client whose call it
 * answered, and lets a request name only ids of its own client (the
 * module keeps the bindings in airlock_llm_zone).
 *
 *   al_llm_state_request()  the id a Responses request body names as
 *                           its previous response, and where its
 *                           "input" is
 *   al_llm_state_item()     the "id" of each element of that "input",
 *                           and an mcp_approval_response's
 *                           "approval_request_id"
 *   al_llm_state_resp_*()   the ids of a Responses answer, from a JSON
 *                           body (the top-level "id", and the "id" of
 *                           each element of "output") or an event
 *                           stream ("response.id" of the first
 *                           "response.*" event that has one, and
 *                           "item.id" of each "response.output_item.*"
 *                           event), read as it arrives
 *
 * An id is kept only as printable ASCII without escapes, at most
 * AL_LLM_STATE_ID_MAX bytes (the providers' are "resp_", "msg_", "rs_",
 * "fc_" and the like and some 50 hex digits): an answer's id that is
 * otherwise binds nothing, and a request naming such an id names one
 * that is bound to no client.
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
    AL_LLM_SK_RESPONSE,
    AL_LLM_SK_ITEM,
    AL_LLM_SK_OUTPUT
};

/* what the open string is */
enum {
    AL_LLM_SS_OTHER = 0,
    AL_LLM_SS_KEY,
    AL_LLM_SS_RID,                      /* the response's id */
    AL_LLM_SS_ITEM,                     /* an output item's id */
    AL_LLM_SS_TYPE
};

#define AL_LLM_STATE_TYPE  "response."

/* nesting past this is not followed: the answer binds nothing */
#define AL_LLM_STATE_DEPTH  (1u << 20)


static void al_llm_state_ref(const unsigned char *p,
    const al_llm_jfield_t *f, al_llm_state_ref_t *ref);
static size_t al_llm_state_bound(const unsigned char *p,
    const al_llm_jfield_t *f);
static void al_llm_state_id(al_llm_req_t *req, const unsigned char *body,
    const al_llm_jfield_t *f, size_t index);
static size_t al_llm_state_skip(const unsigned char *p, size_t i,
    size_t end);
static void al_llm_state_json(al_llm_state_resp_t *s, unsigned char c);
static void al_llm_state_str_end(al_llm_state_resp_t *s);
static unsigned al_llm_state_what(const al_llm_state_resp_t *s);
static void al_llm_state_give(al_llm_state_resp_t *s, size_t len,
    unsigned item);
static void al_llm_state_json_reset(al_llm_state_resp_t *s);
static void al_llm_state_event_end(al_llm_state_resp_t *s);
static unsigned al_llm_state_key(const al_llm_state_resp_t *s);


static const char *const  al_llm_state_names[] = {
    "previous_response_id", "input", NULL
};

static const al_str_t  al_llm_state_keys[] = {
    { "previous_response_id", sizeof("previous_response_id") - 1 },
    { "input", sizeof("input") - 1 },
    { NULL, 0 }
};

static const al_llm_scan_spec_t  al_llm_state_spec = {
    al_llm_state_names, -1, -1, NULL, 0, 0, al_llm_state_keys, NULL
};

/*
 * an element of "input": its "id", and the "approval_request_id" of an
 * mcp_approval_response, which names the mcp_approval_request output item
 * it answers (approving another client's would run that client's MCP
 * call); the member is read whatever the element's "type", as a server
 * may take it without one
 */

static const char *const  al_llm_state_item_names[] = {
    "id", "approval_request_id", NULL
};

static const al_str_t  al_llm_state_item_keys[] = {
    { "id", sizeof("id") - 1 },
    { "approval_request_id", sizeof("approval_request_id") - 1 },
    { NULL, 0 }
};

static const al_llm_scan_spec_t  al_llm_state_item_spec = {
    al_llm_state_item_names, -1, -1, NULL, 0, 0, al_llm_state_item_keys,
    NULL
};


int
al_llm_state_request(const unsigned char *body, size_t len,
    al_llm_state_req_t *req)
{
    const al_llm_jfield_t  *f;
    char                    detail[AL_DETAIL_MAX];
    al_llm_body_t           b;

    memset(req, 0, sizeof(al_llm_state_req_t));

    if (al_llm_json_read(&al_llm_state_spec, body, len, &b, detail,
                         sizeof(detail))
        != 0)
    {
        return -1;
    }

    f = &b.f[0];

    if (f->type != AL_LLM_JT_NONE && f->type != AL_LLM_JT_NULL) {
        req->named = 1;
        al_llm_state_ref(body, f, &req->prev);
    }

    f = &b.f[1];

    if (f->type == AL_LLM_JT_ARRAY && f->len >= 2) {
        req->at = f->at + 1;                    /* after '[' */
        req->end = f->at + f->len - 1;          /* at ']' */
    }

    return 0;
}


/*
 * The next element of "input" that names an id.  The body is one
 * al_llm_state_request() read whole, so the array is valid JSON; each
 * object element is read by the same strict scan (an escaped "id" is the
 * same member).
 */

int
al_llm_state_item(al_llm_state_req_t *req, const unsigned char *body,
    al_llm_state_ref_t *ref)
{
    size_t                  start, index;
    unsigned                named;
    const al_llm_jfield_t  *f, *a;
    char                    detail[AL_DETAIL_MAX];
    al_llm_body_t           b;

    ref->len = 0;
    ref->id[0] = '\0';

    if (req->more) {
        req->more = 0;
        *ref = req->ref2;
        return 1;
    }

    for ( ;; ) {
        while (req->at < req->end
               && (body[req->at] == ' ' || body[req->at] == '\t'
                   || body[req->at] == '\r' || body[req->at] == '\n'
                   || body[req->at] == ','))
        {
            req->at++;
        }

        if (req->at >= req->end) {
            return 0;
        }

        start = req->at;
        req->at = al_llm_state_skip(body, start, req->end);
        index = req->next++;

        if (req->at == start) {
            req->at = req->end;                 /* not JSON: no more */
            return -1;
        }

        if (body[start] != '{') {
            continue;
        }

        if (al_llm_json_read(&al_llm_state_item_spec, body + start,
                             req->at - start, &b, detail, sizeof(detail))
            != 0)
        {
            req->at = req->end;
            return -1;
        }

        f = &b.f[0];
        a = &b.f[1];

        named = (f->type != AL_LLM_JT_NONE && f->type != AL_LLM_JT_NULL);

        if (a->type != AL_LLM_JT_NONE && a->type != AL_LLM_JT_NULL) {
            if (!named) {
                f = a;
                named = 1;

            } else {
                al_llm_state_ref(body + start, a, &req->ref2);
                req->more = 1;
            }
        }

        if (!named) {
            continue;
        }

        al_llm_state_ref(body + start, f, ref);
        req->index = index;

        return 1;
    }
}


/*
 * The ids the body scan kept as it read a Responses body (al_llm_scan.c:
 * "previous_response_id", and the "id" and "approval_request_id" of
 * each element of "input", which it reads as al_llm_state_request() and
 * al_llm_state_item() do), the same ids in the same order, so the body
 * is not read again.  Only a body the flat scan read whole, naming at
 * most AL_LLM_STATE_REFS ids: otherwise state_read stays 0.
 */

void
al_llm_state_collect(const al_llm_body_t *b, const unsigned char *body,
    al_llm_req_t *req)
{
    size_t  i;

    if (!b->state_flat || b->nstate > AL_LLM_STATE_REFS) {
        return;
    }

    al_llm_state_id(req, body, &b->state_prev, AL_LLM_STATE_PREV);

    for (i = 0; i < b->nstate; i++) {
        al_llm_state_id(req, body, &b->state[i], b->state_index[i]);
    }

    req->state_read = 1;
}


static void
al_llm_state_id(al_llm_req_t *req, const unsigned char *body,
    const al_llm_jfield_t *f, size_t index)
{
    al_llm_state_id_t  *id;

    if (f->type == AL_LLM_JT_NONE || f->type == AL_LLM_JT_NULL) {
        return;                                 /* names none */
    }

    id = &req->state[req->nstate++];
    id->at = f->at + 1;
    id->len = al_llm_state_bound(body, f);
    id->index = index;
}


/* an id as it is bound: a string without escapes, of printable ASCII */

static void
al_llm_state_ref(const unsigned char *p, const al_llm_jfield_t *f,
    al_llm_state_ref_t *ref)
{
    size_t  n;

    n = al_llm_state_bound(p, f);

    memcpy(ref->id, p + f->at + 1, n);
    ref->id[n] = '\0';
    ref->len = n;
}


/*
 * The length of the id a value is, between its quotes, or 0: a value
 * of another type, or an escape, is named but bound to none
 */

static size_t
al_llm_state_bound(const unsigned char *p, const al_llm_jfield_t *f)
{
    size_t                i;
    const unsigned char  *v;

    if (f->type != AL_LLM_JT_STRING || f->esc || f->len < 2
        || f->len - 2 > AL_LLM_STATE_ID_MAX)
    {
        return 0;
    }

    v = p + f->at + 1;

    for (i = 0; i < f->len - 2; i++) {
        if (v[i] < 0x21 || v[i] > 0x7e) {
            return 0;
        }
    }

    return f->len - 2;
}


/* after the JSON value at p[i] (valid JSON), at most end */

static size_t
al_llm_state_skip(const unsigned char *p, size_t i, size_t end)
{
    size_t    depth;
    unsigned  in_str;

    depth = 0;
    in_str = 0;

    for ( ; i < end; i++) {

        if (in_str) {
            if (p[i] == '\\') {
                i++;

            } else if (p[i] == '"') {
                in_str = 0;

                if (depth == 0) {
                    return i + 1;
                }
            }

            continue;
        }

        switch (p[i]) {

        case '"':
            in_str = 1;
            break;

        case '{':
        case '[':
            depth++;
            break;

        case '}':
        case ']':
            if (depth == 0) {
                return i;
            }

            if (--depth == 0) {
                return i + 1;
            }

            break;

        case ',':
            if (depth == 0) {
                return i;
            }

            break;

        default:
            break;
        }
    }

    return end;
}


void
al_llm_state_resp_init(al_llm_state_resp_t *s, unsigned stream)
{
    memset(s, 0, offsetof(al_llm_state_resp_t, id));
    s->id[0] = '\0';
    s->stream = stream ? 1 : 0;
}


size_t
al_llm_state_resp_feed(al_llm_state_resp_t *s, const unsigned char *p,
    size_t len)
{
    size_t         i;
    unsigned char  c;

    s->id_len = 0;

    if (s->done) {
        return len;
    }

    if (!s->stream) {
        for (i = 0; i < len; i++) {
            al_llm_state_json(s, p[i]);

            if (s->id_len > 0 || s->done) {
                return i + 1;
            }
        }

        return len;
    }

    for (i = 0; i < len; i++) {
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

                if (s->id_len > 0) {
                    return i + 1;
                }

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

    return len;
}


/*
 * An event ends: its one id is given when its "type" is one of the
 * response's own events ("response.created", "response.output_item.added"
 * and the like): "response.id" (until the response's is known) or
 * "item.id"; "response.output_text.delta"'s "item_id" is not at those
 * paths, and repeats an id given before.
 */

static void
al_llm_state_event_end(al_llm_state_resp_t *s)
{
    if (!s->bad && s->ended && s->depth == 0 && s->type_ok
        && s->cand_len > 0 && !s->cand_two)
    {
        memcpy(s->id, s->cand, s->cand_len);
        s->id[s->cand_len] = '\0';
        s->id_len = s->cand_len;
        s->item = s->cand_item;

        if (!s->cand_item) {
            s->rid = 1;
        }
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
    s->str = AL_LLM_SS_OTHER;
    s->type_ok = 0;
    s->cand_len = 0;
    s->cand_item = 0;
    s->cand_two = 0;
    memset(s->obj, 0, sizeof(s->obj));
    memset(s->key, 0, sizeof(s->key));
}


/*
 * One byte of JSON: only the nesting, strings, and which key a value at
 * depth 1 to AL_LLM_STATE_KEYS - 1 is of.  A document it cannot follow
 * binds nothing more.
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
            al_llm_state_str_end(s);
            return;
        }

        n = s->str_len;

        switch (s->str) {

        case AL_LLM_SS_KEY:
            if (n < sizeof(s->keybuf)) {
                s->keybuf[n] = (char) c;
            }

            break;

        case AL_LLM_SS_RID:
        case AL_LLM_SS_ITEM:
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

        if (s->depth < AL_LLM_STATE_KEYS) {
            s->obj[s->depth] = (c == '{');
            s->key[s->depth] = AL_LLM_SK_OTHER;
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
                s->done = 1;                    /* the answer's end */
            }
        }

        return;

    case ',':
        s->expect_key = (s->depth > 0 && s->depth < AL_LLM_STATE_KEYS
                         && s->obj[s->depth]);
        return;

    case ':':
        s->expect_key = 0;
        return;

    case '"':
        s->in_str = 1;
        s->str_len = 0;
        s->str_bad = 0;
        s->str = AL_LLM_SS_OTHER;

        if (s->depth == 0 || s->depth >= AL_LLM_STATE_KEYS
            || !s->obj[s->depth])
        {
            return;
        }

        s->str = s->expect_key ? AL_LLM_SS_KEY : al_llm_state_what(s);
        return;

    default:
        return;
    }
}


/* a string closed */

static void
al_llm_state_str_end(al_llm_state_resp_t *s)
{
    switch (s->str) {

    case AL_LLM_SS_KEY:
        s->key[s->depth] = (unsigned char) al_llm_state_key(s);
        return;

    case AL_LLM_SS_RID:
    case AL_LLM_SS_ITEM:
        if (!s->stream) {
            if (!s->str_bad && s->str_len > 0) {
                al_llm_state_give(s, s->str_len, s->str == AL_LLM_SS_ITEM);
            }

            return;
        }

        /* an event gives one id: with a second, or a bad one, none */

        if (s->str_bad || s->str_len == 0 || s->cand_len > 0) {
            s->cand_two = 1;
            return;
        }

        s->cand_len = s->str_len;
        s->cand_item = (s->str == AL_LLM_SS_ITEM);
        return;

    case AL_LLM_SS_TYPE:
        s->type_ok = (!s->str_bad
                      && s->str_len > sizeof(AL_LLM_STATE_TYPE) - 1);
        return;

    default:
        return;
    }
}


/* what a string value at the depth, of the key it is of, is */

static unsigned
al_llm_state_what(const al_llm_state_resp_t *s)
{
    if (!s->stream) {

        /* {"id": ...}, {"output": [{"id": ...}]} */

        if (s->depth == 1 && s->key[1] == AL_LLM_SK_ID) {
            return AL_LLM_SS_RID;
        }

        if (s->depth == 3 && s->key[3] == AL_LLM_SK_ID
            && s->key[1] == AL_LLM_SK_OUTPUT && !s->obj[2])
        {
            return AL_LLM_SS_ITEM;
        }

        return AL_LLM_SS_OTHER;
    }

    /* {"type": ..., "response": {"id": ...}}, {"item": {"id": ...}} */

    if (s->depth == 1) {
        return (s->key[1] == AL_LLM_SK_TYPE) ? AL_LLM_SS_TYPE
                                             : AL_LLM_SS_OTHER;
    }

    if (s->depth == 2 && s->key[2] == AL_LLM_SK_ID) {
        if (s->key[1] == AL_LLM_SK_RESPONSE && !s->rid) {
            return AL_LLM_SS_RID;
        }

        if (s->key[1] == AL_LLM_SK_ITEM) {
            return AL_LLM_SS_ITEM;
        }
    }

    return AL_LLM_SS_OTHER;
}


static void
al_llm_state_give(al_llm_state_resp_t *s, size_t len, unsigned item)
{
    memcpy(s->id, s->cand, len);
    s->id[len] = '\0';
    s->id_len = len;
    s->item = item ? 1 : 0;
}


static unsigned
al_llm_state_key(const al_llm_state_resp_t *s)
{
    if (s->str_bad) {
        return AL_LLM_SK_OTHER;
    }

    switch (s->str_len) {

    case 2:
        return memcmp(s->keybuf, "id", 2) == 0 ? AL_LLM_SK_ID
                                               : AL_LLM_SK_OTHER;

    case 4:
        if (memcmp(s->keybuf, "type", 4) == 0) {
            return AL_LLM_SK_TYPE;
        }

        return memcmp(s->keybuf, "item", 4) == 0 ? AL_LLM_SK_ITEM
                                                 : AL_LLM_SK_OTHER;

    case 6:
        return memcmp(s->keybuf, "output", 6) == 0 ? AL_LLM_SK_OUTPUT
                                                   : AL_LLM_SK_OTHER;

    case 8:
        return memcmp(s->keybuf, "response", 8) == 0 ? AL_LLM_SK_RESPONSE
                                                     : AL_LLM_SK_OTHER;

    default:
        return AL_LLM_SK_OTHER;
    }
}
