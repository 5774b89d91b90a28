/*
 * airlock-agent and airlock: a bad option's value, as their one-line
 * errors show it.
 */

#include <stdio.h>
#include <string.h>

#include "agent.h"


/*
 * v, quoted, then a newline: its control characters, '"' and backslash
 * written as \xNN (a newline in it would start a line of its own in a
 * journal), and only its first 64 bytes, with its length, when it is
 * longer.
 */

void
ag_show_value(FILE *f, const char *v)
{
    size_t         i, len;
    unsigned char  c;

    fputc('"', f);

    len = strlen(v);

    for (i = 0; i < len && i < 64; i++) {
        c = (unsigned char) v[i];

        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') {
            fprintf(f, "\\x%02x", c);
        } else {
            fputc(c, f);
        }
    }

    if (len > 64) {
        fprintf(f, "...\" (%zu bytes)\n", len);
    } else {
        fprintf(f, "\"\n");
    }
}
