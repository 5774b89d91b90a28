/*
 * al_llm_state_*: the response id a Responses request names and the ids
 * of the items of its input, and the ids of a Responses answer (the
 * response's, its output items'), read as it arrives.  Answers are fed
 * whole, split at every byte boundary and a byte at a time, streams in
 * LF, CRLF and CR form; the ids must come out the same every time.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm.h"
#include "tap.h"


static void test_request(void);
static void test_items(void);
static void test_json(void);
static void test_stream(void);
static const char *req_id(const char *body, int *rc);
static const char *req_items(const char *body);
static int resp_id(const char *p, size_t len, unsigned stream, size_t split,
    char *id);
static void check(const char *body, unsigned stream, const char *want,
    const char *name);
static char *line_ends(const char *s, const char *eol);


int
main(void)
{
    test_request();
    test_items();
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
test_items(void)
{
    tap_is_str(req_items("{\"input\":\"Hi\"}"), "", "input: a string");
    tap_is_str(req_items("{\"model\":\"m\"}"), "", "input: none");
    tap_is_str(req_items("{\"input\":[]}"), "", "input: empty");

    tap_is_str(req_items("{\"input\":[{\"role\":\"user\",\"content\":"
                         "\"Hi\"},{\"type\":\"item_reference\",\"id\":"
                         "\"msg_1\"}]}"),
               "1:msg_1", "input: an item_reference");

    tap_is_str(req_items("{\"input\":[ {\"id\":\"msg_2\"} , \"x\", 5,"
                         "[{\"id\":\"no\"}], {\"type\":\"reasoning\","
                         "\"summary\":[{\"id\":\"no\"}],\"id\":\"rs_3\"},"
                         "{\"type\":\"message\",\"content\":[{\"id\":"
                         "\"no\",\"text\":\"{\\\"id\\\":\\\"no\\\"}]\"}],"
                         "\"id\":\"msg_4\"}]}"),
               "0:msg_2 4:rs_3 5:msg_4",
               "input: each element's own id, by its index");

    tap_is_str(req_items("{\"input\":[{\"type\":\"reasoning\",\"id\":null,"
                         "\"summary\":[]},{\"role\":\"user\","
                         "\"content\":\"Hi\"}]}"),
               "", "input: id null, no id: none named");

    tap_is_str(req_items("{\"input\":[{\"i\\u0064\":\"msg_5\"}]}"),
               "0:msg_5", "input: the member's name escaped");

    tap_is_str(req_items("{\"input\":[{\"id\":\"msg\\u005f6\"},"
                         "{\"id\":7},{\"id\":{\"a\":1}},{\"id\":\"a b\"}]}"),
               "0: 1: 2: 3:", "input: ids bound to none, but named");

    tap_is_str(req_items("{\"input\":[{\"id\":\"msg_8\"}],"
                         "\"previous_response_id\":\"resp_9\"}"),
               "0:msg_8", "input: beside previous_response_id");

    tap_is_str(req_items("{\"input\":[{\"id\":\"msg_8\"}"), "!",
               "input: a broken body");

    tap_is_str(req_items("{\"input\":[{\"type\":\"mcp_approval_response\","
                         "\"approval_request_id\":\"mcpr_1\","
                         "\"approve\":true},{\"type\":"
                         "\"mcp_approval_response\",\"id\":\"mcpa_2\","
                         "\"approval_request_id\":\"mcpr_3\","
                         "\"approve\":false},{\"approval_request_id\":"
                         "null},{\"approval_request_id\":4}]}"),
               "0:mcpr_1 1:mcpa_2 1:mcpr_3 3:",
               "input: an mcp_approval_response's approval_request_id");
}


static void
test_json(void)
{
    char  *big;
    size_t n;

    check("{\"id\":\"resp_abc\",\"object\":\"response\"}", 0, "resp_abc",
          "json: the id");
    check("{\"object\":\"response\",\"output\":[{\"id\":\"msg_1\"}],"
          "\"id\":\"resp_x\"}", 0, "+msg_1 resp_x",
          "json: an item's id, then the response's");
    check("{\"id\":\"resp_o\",\"output\":[{\"type\":\"reasoning\","
          "\"id\":\"rs_1\",\"summary\":[{\"id\":\"no\"}]},"
          "{\"type\":\"message\",\"content\":[{\"type\":\"output_text\","
          "\"text\":\"\\\"id\\\":\\\"no\\\"\",\"id\":\"no\"}],"
          "\"id\":\"msg_2\"},"
          "{\"type\":\"function_call\",\"call_id\":\"call_1\","
          "\"id\":\"fc_3\"}],\"usage\":{\"id\":\"no\"}}", 0,
          "resp_o +rs_1 +msg_2 +fc_3",
          "json: each output item's id, no deeper one");
    check("{\"id\":\"resp_p\",\"output\":[{\"id\":\"msg\\u005f4\"},"
          "{\"id\":5},\"x\",[{\"id\":\"no\"}],{\"id\":\"msg_5\"}]}", 0,
          "resp_p +msg_5", "json: an escaped item id, a number: none");
    check("{\"id\":\"resp_q\",\"output\":{\"a\":{\"id\":\"no\"}},"
          "\"x\":[{\"id\":\"no\"}]}", 0, "resp_q",
          "json: an output of another shape: none");
    check("{\"id\":\"resp_r\"}{\"id\":\"no\"}", 0, "resp_r",
          "json: nothing after the answer's end");
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

    s = "event: response.created\n"
        "data: {\"type\":\"response.created\",\"sequence_number\":0,"
        "\"response\":{\"id\":\"resp_s1\",\"object\":\"response\"}}\n\n"
        "event: response.output_item.added\n"
        "data: {\"type\":\"response.output_item.added\",\"output_index\":0,"
        "\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\","
        "\"summary\":[]}}\n\n"
        "event: response.output_item.done\n"
        "data: {\"type\":\"response.output_item.done\",\"output_index\":0,"
        "\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\","
        "\"summary\":[{\"id\":\"no\"}]}}\n\n"
        "event: response.output_item.added\n"
        "data: {\"type\":\"response.output_item.added\",\"output_index\":1,"
        "\"item\":{\"id\":\"msg_2\",\"type\":\"message\"}}\n\n"
        "event: response.output_text.delta\n"
        "data: {\"type\":\"response.output_text.delta\",\"item_id\":"
        "\"msg_2\",\"delta\":\"Hi\"}\n\n"
        "event: response.completed\n"
        "data: {\"type\":\"response.completed\",\"response\":"
        "{\"id\":\"resp_s1\",\"output\":[{\"id\":\"rs_1\"},"
        "{\"id\":\"msg_2\"}]}}\n\n";

    check(s, 1, "resp_s1 +rs_1 +rs_1 +msg_2",
          "stream: the response's id, then each item's as it comes");

    v = line_ends(s, "\r\n");
    check(v, 1, "resp_s1 +rs_1 +rs_1 +msg_2", "stream: CRLF");
    free(v);

    v = line_ends(s, "\r");
    check(v, 1, "resp_s1 +rs_1 +rs_1 +msg_2", "stream: CR");
    free(v);

    check("data: {\"type\":\"response.output_item.added\",\"item\":"
          "{\"id\":\"msg_1\"}}\n\n"
          "data: {\"type\":\"response.in_progress\",\"response\":"
          "{\"id\":\"resp_s2\"}}\n\n", 1, "+msg_1 resp_s2",
          "stream: an item's id is not the response's");

    check("data: {\"item\":{\"id\":\"msg_t\"},\"type\":\"error\"}\n\n"
          "data: {\"item\":{\"id\":\"msg_u\"},\n"
          "data: \"type\":\"response.output_item.done\"}\n\n", 1, "+msg_u",
          "stream: an item of another type of event: none; the type last");

    check("data: {\"type\":\"response.output_item.added\",\"item\":"
          "{\"id\":\"msg_v\"},\"response\":{\"id\":\"resp_v\"}}\n\n",
          1, "", "stream: an event of two ids: none");

    check("data: {\"type\":\"response.output_item.added\",\"item\":"
          "{\"id\":\"msg\\u005fw\"}}\n\n", 1, "",
          "stream: an escaped item id: none");

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
    static al_llm_state_req_t  req;

    *rc = al_llm_state_request((const unsigned char *) body, strlen(body),
                               &req);

    if (*rc == 0) {
        *rc = req.named;
    }

    return req.prev.id;
}


/*
 * The ids the elements of a request's "input" name: "index:id" each,
 * space-separated ("index:" alone for a value bound to none), "!" for
 * a body that cannot be read
 */

static const char *
req_items(const char *body)
{
    int                        rc;
    size_t                     n;
    al_llm_state_req_t         req;
    al_llm_state_ref_t         ref;
    static char                out[1024];

    out[0] = '\0';
    n = 0;

    if (al_llm_state_request((const unsigned char *) body, strlen(body),
                             &req)
        != 0)
    {
        return "!";
    }

    for ( ;; ) {
        rc = al_llm_state_item(&req, (const unsigned char *) body, &ref);

        if (rc <= 0) {
            if (rc < 0) {
                snprintf(out + n, sizeof(out) - n, "%s!", n ? " " : "");
            }

            return out;
        }

        if (ref.len != strlen(ref.id)) {
            return "?";
        }

        n += snprintf(out + n, sizeof(out) - n, "%s%zu:%s", n ? " " : "",
                      req.index, ref.id);

        if (n >= sizeof(out)) {
            return "?";
        }
    }
}


/*
 * The ids read from p fed in pieces of split bytes (0: whole), into ids:
 * space-separated, an output item's as "+id"
 */

static int
resp_id(const char *p, size_t len, unsigned stream, size_t split,
    char *ids)
{
    size_t               i, n, k, at, out;
    al_llm_state_resp_t  s;

    al_llm_state_resp_init(&s, stream);
    out = 0;
    ids[0] = '\0';

    for (i = 0; i < len; i += n) {
        n = (split == 0 || len - i < split) ? len - i : split;

        for (at = 0; at < n; at += k) {
            k = al_llm_state_resp_feed(&s, (const unsigned char *) p + i + at,
                                       n - at);

            if (k == 0 || k > n - at) {
                return -1;
            }

            if (s.id_len == 0) {
                continue;
            }

            if (s.id_len != strlen(s.id) || out + s.id_len + 3 > 1024) {
                return -1;
            }

            out += sprintf(ids + out, "%s%s%s", out ? " " : "",
                           s.item ? "+" : "", s.id);
        }
    }

    return 1;
}


/* want: the ids, to its NUL or a quote */

static void
check(const char *body, unsigned stream, const char *want, const char *name)
{
    int     ok;
    char    ids[1024], first[1024], expect[1024];
    size_t  len, split;

    len = strcspn(want, "\"");
    memcpy(expect, want, len);
    expect[len] = '\0';

    len = strlen(body);
    ok = (resp_id(body, len, stream, 0, first) >= 0);

    tap_is_str(first, expect, name);

    for (split = 1; split < len && ok; split++) {
        ok = (resp_id(body, len, stream, split, ids) >= 0
              && strcmp(ids, first) == 0);
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
