/*
 * libFuzzer target: the worker's JSON check (aw_json_valid,
 * worker/aw_json.c), which decides without a tree whether an input's body
 * goes to the script as JSON, against the parse it stands for,
 * json_loadb() with JSON_REJECT_DUPLICATES | JSON_DECODE_ANY |
 * JSON_ALLOW_NUL.  Invariants: no crash and nothing read past the length;
 * what the check takes for JSON jansson parses; what jansson parses the
 * check takes, but for one known difference: jansson drops a raw NUL
 * byte after a number or a literal ("[1\0]" read as [1]), which the
 * check refuses (the body then goes as a string).
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../worker/aw_json.c"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int      valid;
    char    *raw;
    json_t  *root;

    raw = malloc(size ? size : 1);
    if (raw == NULL) {
        return 0;
    }

    memcpy(raw, data, size);

    valid = aw_json_valid(raw, size);

    root = json_loadb(raw, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY
                                 | JSON_ALLOW_NUL, NULL);

    if (valid && root == NULL) {
        abort();
    }

    if (!valid && root != NULL && memchr(raw, '\0', size) == NULL) {
        abort();
    }

    json_decref(root);
    free(raw);

    return 0;
}
