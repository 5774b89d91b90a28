/*
 * A summary of the LLM gateway's usage log (al_llm_report.c), for
 * "airlockctl usage": requests, tokens, cost and errors, in total or by
 * client, model or UTC day.
 *
 * The log is read as a stream, line by line, through a fixed buffer:
 * memory grows with the number of groups, never with the log.  A line
 * that is not a usage line (not JSON, a missing field, cut short by a
 * crash or a rotation, longer than AL_LLM_REPORT_LINE_MAX) is skipped and
 * counted; the first few are remembered with their line numbers.  Costs
 * are summed in picodollars from the decimal text of "cost_usd", so the
 * totals are exact; a sum too large to keep is printed as "overflow"
 * (null in JSON), never as a number.
 */

#ifndef AL_LLM_REPORT_H
#define AL_LLM_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "airlock.h"


#define AL_LLM_REPORT_LINE_MAX    65536   /* a usage line is under 3 KiB */
#define AL_LLM_REPORT_KEY_MAX     256     /* group names cut to this */
#define AL_LLM_REPORT_GROUPS_MAX  100000  /* then "(other)" */
#define AL_LLM_REPORT_BAD_KEPT    5       /* skipped lines named */

typedef enum {
    AL_LLM_REPORT_BY_NONE = 0,
    AL_LLM_REPORT_BY_CLIENT,
    AL_LLM_REPORT_BY_MODEL,
    AL_LLM_REPORT_BY_DAY
} al_llm_report_by_t;

typedef struct al_llm_report_s  al_llm_report_t;

/* NULL when out of memory */
al_llm_report_t *al_llm_report_create(al_llm_report_by_t by);
void al_llm_report_free(al_llm_report_t *rep);

/*
 * One line, without its newline.  Returns 0 when it was counted, -1 when
 * it was skipped (and counted as skipped).
 */
int al_llm_report_line(al_llm_report_t *rep, const char *line,
    size_t len);

/* every line of f; -1 with err set when f cannot be read */
int al_llm_report_read(al_llm_report_t *rep, FILE *f, const char *name,
    al_error_t *err);

/* a table, or with json one JSON object; returns 0, -1 on a write error */
int al_llm_report_print(const al_llm_report_t *rep, FILE *out,
    int json);


#endif /* AL_LLM_REPORT_H */
