/*
 * libFuzzer target for the scanner that reads a session's owner from its
 * text a piece at a time (agent/ag_redis.c, ag_session_owner_scan()):
 * the text is whatever is in Redis, a session of before owners, one
 * planted or damaged.
 *
 * Input: the text.  Besides the sanitizers it checks, against jansson's
 * reading of the same text (as ag_session_load() reads it):
 *
 *   - an owner found in a text jansson takes is jansson's top-level
 *     "owner", a string, byte for byte;
 *   - a top-level "owner" jansson reads, a string of printable ASCII
 *     shorter than AG_OWNER_MAX, is found: a session found another's,
 *     or none's, by the scanner is so to jansson too.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ag_redis.c"


/* what the agent's ag_main.c gives ag_redis.c; none of it is reached */

volatile sig_atomic_t  ag_stopping;
volatile sig_atomic_t  ag_left;


int64_t
ag_now_ms(void)
{
    return 0;
}


int
ag_random_hex(char *out, size_t hexlen)
{
    memset(out, '0', hexlen);
    out[hexlen] = '\0';
    return 0;
}


int
ag_id_ok(const char *s, size_t len)
{
    (void) s;
    return len > 0;
}


void
ag_array_drop(json_t *a, size_t k)
{
    while (k-- > 0 && json_array_size(a) > 0) {
        json_array_remove(a, 0);
    }
}


int
ag_write_fd(int fd, const char *p, size_t len, int64_t deadline)
{
    (void) fd;
    (void) p;
    (void) len;
    (void) deadline;
    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t        i;
    json_t       *s, *o;
    ag_scan_t     a;
    const char   *v;
    json_error_t  jerr;

    /* as ag_session_owner_scan() does, a piece at a time */
    memset(&a, 0, sizeof(a));

    for (i = 0; i < size; i++) {
        ag_scan_char(&a, data[i]);
    }

    s = json_loadb((const char *) data, size, 0, &jerr);
    if (s == NULL || !json_is_object(s)) {
        json_decref(s);
        return 0;
    }

    o = json_object_get(s, "owner");
    v = json_string_value(o);

    if (a.found && (v == NULL || strcmp(v, a.owner) != 0)) {
        abort();
    }

    if (v != NULL && !a.found && json_string_length(o) < AG_OWNER_MAX) {
        for (i = 0; i < json_string_length(o); i++) {
            if (v[i] < 0x20 || v[i] > 0x7e) {
                break;
            }
        }
        if (i == json_string_length(o)) {
            abort();
        }
    }

    json_decref(s);

    return 0;
}
