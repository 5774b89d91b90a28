/*
 * al_llm_state_*: the response id a Responses request names, and the id
 * of a Responses answer, read as it arrives.  Answers are fed whole, split
 * at every byte boundary and a byte at a time, streams in LF, CRLF and CR
 * form; the id must come out the same every time.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "tap.h"


static void test_request(void);
static void test_json(void);
static void test_stream(void);
static const char *req_id(const char *body, int *rc);
static int resp_id(const char *p, size_t len, unsigned stream, size_t split,
    char *id);
static void check(const char *body, unsigned stream, const char *want,
    const char *name);
static char *line_ends(const char *s, const char *eol);


int
main(void)
{
    test_request();
    test_json();
    test_stream();

    return tap_done();
}


static void
test_request(void)
{
    int  rc;

    tap_is_str(req_id("{\"model\":\"m\",\"previous_response_id\":"
                      "\"resp_1\"}", &rc), "resp_1", "request: the id");
    tap_is_int(rc, 1, "request: named");

    tap_is_str(req_id("{\"model\":\"m\"}", &rc), "", "request: none");
    tap_is_int(rc, 0, "request: none named");

    (void) req_id("{\"previous_response_id\":null}", &rc);
    tap_is_int(rc, 0, "request: null names none");

    tap_is_str(req_id("{\"previous\\u005fresponse_id\":\"resp_2\"}", &rc),
               "resp_2", "request: the member's name escaped");
    tap_is_int(rc, 1, "request: ... is named");

    tap_is_str(req_id("{\"previous_response_id\":\"resp\\u005f3\"}", &rc),
               "", "request: an escaped id binds none");
    tap_is_int(rc, 1, "request: ... but is named");

    (void) req_id("{\"previous_response_id\":5}", &rc);
    tap_is_int(rc, 1, "request: a number is named");

    tap_is_str(req_id("{\"previous_response_id\":\"a b\"}", &rc), "",
               "request: a space: no id");

    tap_is_str(req_id("{\"input\":{\"previous_response_id\":\"r\"}}", &rc),
               "", "request: only the top level");
    tap_is_int(rc, 0, "request: ... names none");

    (void) req_id("{\"previous_response_id\":", &rc);
    tap_is_int(rc, -1, "request: a broken body");
}


static void
test_json(void)
{
    char  *big;
    size_t n;

    check("{\"id\":\"resp_abc\",\"object\":\"response\"}", 0, "resp_abc",
          "json: the id");
    check("{\"object\":\"response\",\"output\":[{\"id\":\"msg_1\"}],"
          "\"id\":\"resp_x\"}", 0, "resp_x", "json: not an item's id");
    check("{\"object\":\"response\",\"output\":\"{\\\"id\\\":\\\"no\\\"}\","
          "\"id\":\"resp_y\"}", 0, "resp_y", "json: not in a string");
    check("{\"id\":\"resp\\u005fz\"}", 0, "", "json: an escaped id: none");
    check("{\"id\":5}", 0, "", "json: a number: none");
    check("[{\"id\":\"r\"}]", 0, "", "json: not an object: none");
    check("{\"error\":{\"id\":\"r\"}}", 0, "", "json: nested: none");

    n = AL_LLM_STATE_ID_MAX;
    big = malloc(n + 16);

    memcpy(big, "{\"id\":\"", 7);
    memset(big + 7, 'a', n);
    memcpy(big + 7 + n, "\"}", 3);
    check(big, 0, big + 7, "json: an id at the bound is kept");

    big = realloc(big, n + 17);
    memmove(big + 8, big + 7, n + 3);
    big[7] = 'a';
    check(big, 0, "", "json: one over the bound: none");

    free(big);
}


static void
test_stream(void)
{
    const char  *s;
    char        *v;

    s = "event: response.created\n"
        "data: {\"type\":\"response.created\",\"sequence_number\":0,"
        "\"response\":{\"id\":\"resp_s1\",\"object\":\"response\"}}\n\n"
        "event: response.output_text.delta\n"
        "data: {\"type\":\"response.output_text.delta\",\"item_id\":"
        "\"msg_1\",\"delta\":\"Hi\"}\n\n"
        "event: response.completed\n"
        "data: {\"type\":\"response.completed\",\"response\":"
        "{\"id\":\"resp_s1\"}}\n\n";

    check(s, 1, "resp_s1", "stream: response.created's id");

    v = line_ends(s, "\r\n");
    check(v, 1, "resp_s1", "stream: CRLF");
    free(v);

    v = line_ends(s, "\r");
    check(v, 1, "resp_s1", "stream: CR");
    free(v);

    check("data: {\"type\":\"response.output_item.added\",\"item\":"
          "{\"id\":\"msg_1\"}}\n\n"
          "data: {\"type\":\"response.in_progress\",\"response\":"
          "{\"id\":\"resp_s2\"}}\n\n", 1, "resp_s2",
          "stream: an item's id is not the response's");

    check("data: {\"type\":\"error\",\"response\":{\"id\":\"r\"}}\n\n", 1,
          "", "stream: an event of another type: none");

    check("data: {\"response\":{\"id\":\"resp_s3\"},\n"
          "data: \"type\":\"response.created\"}\n\n", 1, "resp_s3",
          "stream: data on two lines, the type last");

    check("data: {\"type\":\"response.created\",\"response\":"
          "{\"id\":\"resp_s4\"}}\n", 1, "",
          "stream: an event not ended: none");

    check(": comment\nid: 7\nretry: 10\n"
          "data:{\"type\":\"response.created\",\"response\":"
          "{\"id\":\"resp_s5\"}}\n\n", 1, "resp_s5",
          "stream: other lines; no space after the colon");

    check("data: {\"type\":\"response.created\",\"response\":"
          "{\"id\":\"resp_s6\"}}{}\n\n", 1, "",
          "stream: two documents in one event: none");

    check("datax: {\"type\":\"response.created\",\"response\":"
          "{\"id\":\"resp_s7\"}}\n\n", 1, "",
          "stream: another field: none");
}


static const char *
req_id(const char *body, int *rc)
{
    static al_llm_state_ref_t  ref;

    *rc = al_llm_state_request((const unsigned char *) body, strlen(body),
                               &ref);

    return ref.id;
}


/* the id read from p fed in pieces of split bytes (0: whole) */

static int
resp_id(const char *p, size_t len, unsigned stream, size_t split, char *id)
{
    int                  found;
    size_t               i, n;
    al_llm_state_resp_t  s;

    al_llm_state_resp_init(&s, stream);
    found = 0;

    for (i = 0; i < len; i += n) {
        n = (split == 0 || len - i < split) ? len - i : split;
        found = al_llm_state_resp_feed(&s, (const unsigned char *) p + i, n);
    }

    if (!found) {
        id[0] = '\0';
        return 0;
    }

    if (s.id_len != strlen(s.id)) {
        return -1;
    }

    memcpy(id, s.id, s.id_len + 1);
    return 1;
}


/* want: the id, to its NUL or its closing quote */

static void
check(const char *body, unsigned stream, const char *want, const char *name)
{
    int     ok;
    char    id[AL_LLM_STATE_ID_MAX + 1], first[AL_LLM_STATE_ID_MAX + 1];
    char    expect[AL_LLM_STATE_ID_MAX + 1];
    size_t  len, split;

    len = strcspn(want, "\"");
    len = len > AL_LLM_STATE_ID_MAX ? AL_LLM_STATE_ID_MAX : len;
    memcpy(expect, want, len);
    expect[len] = '\0';

    len = strlen(body);
    ok = (resp_id(body, len, stream, 0, first) >= 0);

    tap_is_str(first, expect, name);

    for (split = 1; split < len && ok; split++) {
        ok = (resp_id(body, len, stream, split, id) >= 0
              && strcmp(id, first) == 0);
    }

    tap_ok(ok, "... the same in pieces of every size");
}


static char *
line_ends(const char *s, const char *eol)
{
    char    *out, *q;
    size_t   n;

    n = strlen(eol);
    out = malloc(strlen(s) * n + 1);
    q = out;

    for ( ; *s; s++) {
        if (*s == '\n') {
            memcpy(q, eol, n);
            q += n;

        } else {
            *q++ = *s;
        }
    }

    *q = '\0';
    return out;
}
