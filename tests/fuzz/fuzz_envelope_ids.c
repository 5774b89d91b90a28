/*
 * libFuzzer target: the ids of a job envelope too large to parse
 * (aw_envelope_ids, worker/aw_scan.c), on a buffer of exactly the input's
 * length.  Invariants: no crash and nothing read past the length; an id
 * found is a string of at most AW_ID_MAX bytes; and when jansson reads
 * the input as one object (duplicate keys refused), an id found is that
 * object's "job_id" or "session_id", and one it lacks is never found.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../worker/aw_scan.c"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_same(json_t *root, const char *key, const char *found);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char    *raw, jid[AW_ID_MAX + 1], sid[AW_ID_MAX + 1];
    json_t  *root;

    raw = malloc(size ? size : 1);
    if (raw == NULL) {
        return 0;
    }

    memcpy(raw, data, size);

    aw_envelope_ids(raw, size, jid, sid);

    if (strlen(jid) > AW_ID_MAX || strlen(sid) > AW_ID_MAX) {
        abort();
    }

    root = json_loadb(raw, size, JSON_REJECT_DUPLICATES, NULL);

    if (json_is_object(root)) {
        fuzz_same(root, "job_id", jid);
        fuzz_same(root, "session_id", sid);
    }

    json_decref(root);
    free(raw);

    return 0;
}


static void
fuzz_same(json_t *root, const char *key, const char *found)
{
    json_t  *v;

    if (found[0] == '\0') {
        return;
    }

    v = json_object_get(root, key);

    if (!json_is_string(v) || strcmp(json_string_value(v), found) != 0) {
        abort();
    }
}
