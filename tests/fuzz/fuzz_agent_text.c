/*
 * libFuzzer target for what the agent makes of bytes it passes on
 * (agent/ag_run.c): ag_text, the answer of a named route (any bytes an
 * upstream returns) made a string for the model; ag_wrap, the wrapper
 * that marks it as data; ag_target, the request target built from a
 * tool call's JSON arguments, which the model chooses;
 * ag_call_check, the id and name of a tool call the model made.
 *
 * Input: byte 0 the route (bits 0-2 its segments, 0 to 7; bits 3-7 which
 * are parameters, the others literal); the rest is both the tool call's
 * arguments (JSON) and an answer's bytes.  Besides the sanitizers it
 * checks:
 *
 *   - ag_text's result is UTF-8 that jansson takes, without NUL, at most
 *     3 bytes for each byte it came from, and the bytes themselves when
 *     they were UTF-8 without NUL already;
 *   - the wrapped answer holds its boundary (in any case) twice only: in
 *     the lines that open and close it;
 *   - a target is NUL-terminated within its buffer, starts with '/', has
 *     the route's segments and no more, none empty, "." or "..", and
 *     holds no space, control, '#' or byte past ASCII: the arguments
 *     cannot reshape the request;
 *   - a tool call's id is 1 to AG_CALL_ID_MAX of A-Z a-z 0-9 _ -, the
 *     model's when it was one; its name is the model's only when it is
 *     one of the agent's tools (here run_python alone: no policy), else
 *     AG_TOOL_UNKNOWN, its length then in "unknown".
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ag_run.c"


#define FUZZ_SEGS_MAX  7

static const char  fuzz_boundary[] = "0123456789abcdef0123456789abcdef";


/* what the agent's ag_main.c gives ag_run.c; none of it is reached here */

volatile sig_atomic_t  ag_stopping;
volatile sig_atomic_t  ag_left;


int64_t
ag_now_ms(void)
{
    return 0;
}


int
ag_write_fd(int fd, const char *p, size_t len, int64_t deadline)
{
    (void) fd;
    (void) p;
    (void) deadline;

    return (int) len;
}


int
ag_random_hex(char *out, size_t hexlen)
{
    memset(out, 'a', hexlen);
    out[hexlen] = '\0';

    return 0;
}


void
ag_array_drop(json_t *a, size_t k)
{
    json_array_remove(a, k);
}


static void
fuzz_text(const char *p, size_t size)
{
    char          *t, *w, *s;
    size_t         n, count;
    json_t        *j;
    const char    *b;

    t = ag_text(p, size);
    if (t == NULL) {
        abort();
    }

    n = strlen(t);

    if (n > size * 3) {
        abort();
    }

    j = json_stringn(t, n);
    if (j == NULL) {
        abort();                            /* not UTF-8 */
    }
    json_decref(j);

    j = json_stringn(p, size);
    if (j != NULL && memchr(p, '\0', size) == NULL
        && (n != size || memcmp(t, p, size) != 0))
    {
        abort();
    }
    json_decref(j);

    w = ag_wrap(fuzz_boundary, t, n);
    if (w == NULL) {
        abort();
    }

    count = 0;
    for (b = strcasestr(w, fuzz_boundary); b != NULL;
         b = strcasestr(b + 1, fuzz_boundary))
    {
        count++;
    }

    if (count != 2
        || strncmp(w, "<<<DATA ", 8) != 0
        || strncmp(w + 8, fuzz_boundary, sizeof(fuzz_boundary) - 1) != 0)
    {
        abort();
    }

    /* the last line: "<<<END DATA " boundary ">>>" */
    s = strrchr(w, '\n');
    if (s == NULL
        || strncmp(s, "\n<<<END DATA ", 13) != 0
        || strncmp(s + 13, fuzz_boundary, sizeof(fuzz_boundary) - 1) != 0
        || strcmp(s + 13 + sizeof(fuzz_boundary) - 1, ">>>") != 0)
    {
        abort();
    }

    free(w);
    free(t);
}


static void
fuzz_target(unsigned route_byte, const char *p, size_t size)
{
    char          out[2048], why[256];
    size_t        i, k, n, slashes;
    uint8_t       is_param[FUZZ_SEGS_MAX];
    json_t       *args, *sent;
    al_str_t      segs[FUZZ_SEGS_MAX];
    al_route_t    route;
    unsigned char c;

    static char  *names[FUZZ_SEGS_MAX] = {
        "a", "b", "c", "d", "e", "f", "g"
    };

    args = json_loadb(p, size, JSON_REJECT_DUPLICATES, NULL);
    if (args == NULL || !json_is_object(args)) {
        json_decref(args);
        return;
    }

    memset(&route, 0, sizeof(route));
    route.nsegs = route_byte & 7;
    route.segs = segs;
    route.seg_is_param = is_param;

    for (i = 0; i < route.nsegs; i++) {
        is_param[i] = (route_byte >> (3 + i % 5)) & 1;
        segs[i].data = (is_param[i] ? names[i] : "v1");
        segs[i].len = is_param[i] ? 1 : 2;
    }

    memset(out, 0x55, sizeof(out));

    /* with the strings a run_python input would carry, every other run */

    sent = (route_byte & 0x80) ? json_object() : NULL;

    if (ag_target(&route, args, sent, out, sizeof(out), why, sizeof(why))
        != 0)
    {
        if (memchr(why, '\0', sizeof(why)) == NULL) {
            abort();
        }
        json_decref(sent);
        json_decref(args);
        return;
    }

    if (sent != NULL && !json_is_object(json_object_get(sent, "params"))
        && json_object_get(sent, "params") != NULL)
    {
        abort();
    }

    json_decref(sent);

    n = strnlen(out, sizeof(out));
    if (n == sizeof(out) || n == 0 || out[0] != '/') {
        abort();
    }

    slashes = 0;

    for (i = 0; i < n; i++) {
        c = (unsigned char) out[i];

        if (c <= 0x20 || c >= 0x7f || c == '#') {
            abort();
        }

        if (c == '?') {
            break;
        }

        slashes += (c == '/');
    }

    if (slashes != (route.nsegs ? route.nsegs : 1)) {
        abort();
    }

    /* and none of them empty (but "/" alone), "." or ".." */

    for (i = 0; route.nsegs && i < n && out[i] != '?'; i = k) {
        for (k = i + 1; k < n && out[k] != '/' && out[k] != '?'; k++) {
            /* void */
        }

        if (k - i == 1 || (k - i == 2 && out[i + 1] == '.')
            || (k - i == 3 && out[i + 1] == '.' && out[i + 2] == '.'))
        {
            abort();
        }
    }

    json_decref(args);
}


/* a tool call's id and name, as the model sent them, kept or replaced */

static void
fuzz_call(const char *p, size_t size)
{
    int          known;
    json_t      *calls, *call, *v;
    ag_run_t     run;
    ag_conf_t    conf;
    const char  *id, *name;

    /* the model's stream has no NUL in a string (no JSON_ALLOW_NUL) */
    if (memchr(p, '\0', size) != NULL) {
        return;
    }

    v = json_stringn(p, size);
    if (v == NULL) {
        return;                             /* not UTF-8: nor is a name */
    }

    memset(&conf, 0, sizeof(conf));
    conf.sandbox = "worker";

    memset(&run, 0, sizeof(run));
    run.conf = &conf;
    memcpy(run.run_id, fuzz_boundary, AG_BOUNDARY_LEN);

    calls = json_pack("[{s:O, s:o}]", "id", v, "name", v);
    if (calls == NULL) {
        abort();
    }

    ag_call_check(&run, calls, 0);

    call = json_array_get(calls, 0);
    id = json_string_value(json_object_get(call, "id"));
    name = json_string_value(json_object_get(call, "name"));

    if (id == NULL || strlen(id) > AG_CALL_ID_MAX
        || !ag_id_ok(id, strlen(id))
        || (size <= AG_CALL_ID_MAX && ag_id_ok(p, size)
            && (strlen(id) != size || memcmp(id, p, size) != 0)))
    {
        abort();
    }

    known = (size == sizeof(AL_TOOL_RUN_PYTHON) - 1
             && memcmp(p, AL_TOOL_RUN_PYTHON, size) == 0);

    if (name == NULL
        || strcmp(name, known ? AL_TOOL_RUN_PYTHON : AG_TOOL_UNKNOWN) != 0
        || (!known
            && json_integer_value(json_object_get(call, "unknown"))
               != (json_int_t) size))
    {
        abort();
    }

    json_decref(calls);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }

    fuzz_text((const char *) data + 1, size - 1);
    fuzz_target(data[0], (const char *) data + 1, size - 1);
    fuzz_call((const char *) data + 1, size - 1);

    return 0;
}
