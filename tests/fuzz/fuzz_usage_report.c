/*
 * libFuzzer target for the usage log summary (al_llm_report.c), what
 * "airlockctl usage" reads: any bytes, as lines one at a time and as a
 * stream through al_llm_report_read() (fmemopen), then printed as a
 * table and as JSON.  Byte 0 picks the grouping.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"
#include "al_llm_report.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE              *f, *null;
    size_t             i, start;
    al_error_t         err;
    al_llm_report_t   *a, *b;

    if (size < 1) {
        return 0;
    }

    a = al_llm_report_create((al_llm_report_by_t) (data[0] % 4));
    b = al_llm_report_create((al_llm_report_by_t) (data[0] % 4));

    if (a == NULL || b == NULL) {
        al_llm_report_free(a);
        al_llm_report_free(b);
        return 0;
    }

    data++;
    size--;

    for (start = 0, i = 0; i <= size; i++) {
        if (i == size || data[i] == '\n') {
            if (i > start || i < size) {
                (void) al_llm_report_line(a, (const char *) data + start,
                                          i - start);
            }
            start = i + 1;
        }
    }

    f = fmemopen((void *) data, size ? size : 1, "r");
    if (f != NULL) {
        if (size == 0) {
            (void) fgetc(f);
        }
        (void) al_llm_report_read(b, f, "fuzz", &err);
        fclose(f);
    }

    null = fopen("/dev/null", "w");
    if (null != NULL) {
        (void) al_llm_report_print(a, null, 0);
        (void) al_llm_report_print(a, null, 1);
        (void) al_llm_report_print(b, null, 1);
        fclose(null);
    }

    al_llm_report_free(a);
    al_llm_report_free(b);

    return 0;
}
