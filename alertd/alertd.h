/*
 * airlock-alertd internals: the types and calls its files share.
 *
 *   alertd.c      command line, the event loop, signals, reload
 *   ad_log.c      one line per event on stderr; time helpers
 *   ad_alert.c    journal lines in, webhook and Alertmanager bodies out
 *   ad_group.c    folding repeats of one (kind, client or peer, reason)
 *   ad_journal.c  following the journal across rotation and truncation
 *   ad_state.c    the state directory: lock, atomic files, the
 *                 position and groups (a snapshot and a change log)
 *   ad_outbox.c   one durable file per pending (alert, sink), bounded
 *                 per sink; what a full one drops is counted
 *   ad_lift.c     the quarantines sent to Alertmanager that still run,
 *                 resolved when nginx's deny zone is made anew
 *   ad_deliver.c  sinks, signing, libcurl multi transfers, backoff
 *
 * See docs/alerts.md for what goes over the wire and what is on disk.
 */

#ifndef ALERTD_H
#define ALERTD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "airlock.h"


#define AD_NAME                "airlock-alertd"

#define AD_ID_MAX              64       /* alert id from the journal */
#define AD_FID_MAX             (AD_ID_MAX + 12)     /* "<id>~<seq>" */
#define AD_FID_SEP             '~'      /* in the ids alertd makes (a
                                           folded alert, a report of
                                           drops), never in a journal
                                           id: none can be another's */
#define AD_FIELD_MAX           128      /* client, reason, route, peer */
#define AD_SAMPLE_MAX          512      /* longer samples are cut */
#define AD_TIME_MAX            40       /* RFC 3339 text */
#define AD_TIME_LAST_MS        INT64_C(253402300799999)  /* the last ms
                                           of 9999: the latest time
                                           written */
#define AD_READ_MAX            65536    /* the longest journal line, its
                                           newline not counted; a longer
                                           one is malformed */
#define AD_STATE_FILE_MAX      (16 * 1024 * 1024)
#define AD_STATE_LOG_MIN       (64 * 1024)  /* the change log may grow to
                                               this, or to the snapshot's
                                               size if larger */
#define AD_ENTRY_FILE_MAX      (64 * 1024)
#define AD_GROUPS_MAX          4096
#define AD_GROUPS_LOW          (AD_GROUPS_MAX / 4 * 3)  /* fewer open:
                                           the cap is over */
#define AD_GROUPS_TELL         60000    /* ms, at least, between counts
                                           of alerts not grouped */
#define AD_NAME_MAX            128      /* outbox file name */
#define AD_KEY_HEX             16       /* sink key: hex chars */
#define AD_LABEL_MAX           512      /* a URL as logged */
#define AD_SECRET_MAX          65536    /* a file: secret's bytes */

#define AD_BACKOFF_BASE        1000     /* ms */
#define AD_BACKOFF_CAP         300000   /* ms, 5 minutes */
#define AD_FAILS_PROBE         3        /* failures of one alert in a
                                           row that the receiver had:
                                           the sink, while it waits,
                                           tries the next alert (see
                                           ad_deliver.c) */
#define AD_CONNECT_TIMEOUT     5000     /* ms */
#define AD_ATTEMPT_TIMEOUT     10000    /* ms, connect included: the
                                           default --attempt-timeout */
#define AD_STOP_GRACE          3000     /* ms an in-flight attempt gets
                                           after SIGTERM */
#define AD_ROTATE_GRACE        5000     /* ms a rotated journal is still
                                           read for late lines: the
                                           default --rotate-grace */
#define AD_BLOCKED_WAIT        1000     /* ms before queueing or a save
                                           that failed is tried again */
#define AD_FAIL_TELL           5000     /* ms, at least, between the
                                           first line of a failure that
                                           repeats and the next; then
                                           twice as long each time */
#define AD_FAIL_TELL_MAX       300000   /* ms, 5 minutes: the longest */
#define AD_CLOCK_SLACK         5000     /* ms an alert may be ahead of
                                           our clock: more, and it is
                                           taken at our clock */
#define AD_CLOCK_STEP          1000     /* ms the wall clock may move
                                           apart from the boot clock
                                           between two rounds: more is
                                           a step (or a slew as long
                                           as a step, chrony's 83 ms a
                                           second slept through), and
                                           the windows follow it */
#define AD_CLOCK_STEPS         8        /* steps of the wall clock
                                           kept, to tell the clock a
                                           line read after them was
                                           stamped by */
#define AD_BOOT_ID_MAX         32       /* a boot id's hex digits */
#define AD_PRINT_MAX           4096     /* journal bytes before the
                                           position that identify it */
#define AD_PRINT_HASH          32       /* SHA-256 of those bytes */
#define AD_OUTBOX_DEFAULT      10000    /* alerts queued per sink */
#define AD_OUTBOX_LIMIT        1000000  /* the most --outbox-max takes */
#define AD_LIFT_MAX            1024     /* quarantines kept to resolve
                                           when the deny zone goes */
#define AD_LIFT_KEEP           (24 * 3600 * 1000)  /* ms one is kept
                                           after its quarantine_until */


/* logging and time (ad_log.c) */

enum {
    AD_LOG_ERR = 3,
    AD_LOG_WARN = 4,
    AD_LOG_INFO = 6,
    AD_LOG_DEBUG = 7
};

void ad_log_init(int verbose);
void ad_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * A failure that repeats, as long as it lasts (a save tried again every
 * AD_BLOCKED_WAIT ms on a full disk): ad_fail() for each failure,
 * ad_fail_over() for each success.  See ad_log.c.
 */

typedef struct {
    int64_t          count;                 /* in a row; 0: none */
    int64_t          untold;                /* since the last line */
    int64_t          since_ms;              /* monotonic: the first */
    int64_t          told_ms;               /* monotonic: the last line */
    int64_t          wait_ms;               /* from it to the next */
    uint64_t         causes;                /* the errnos said, a bit
                                               each (63: any above) */
} ad_fail_t;

void ad_fail(ad_fail_t *f, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ad_fail_over(ad_fail_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * the URL without userinfo, and "/...#" and a 24-bit hash for its path,
 * query and fragment (a webhook's path may be its secret): safe to log
 */
void ad_url_label(char *buf, size_t size, const char *url);

int64_t ad_now_ms(void);                    /* wall clock */
int64_t ad_mono_ms(void);                   /* monotonic */
int64_t ad_boot_ms(void);                   /* monotonic, and counts a
                                               suspend */
const char *ad_boot_id(void);               /* this boot's; "" unknown */
int ad_boot_id_set(const char *s);          /* --boot-id; 0 or -1 */
int ad_clock_read(const json_t *o, json_int_t *off, char *why,
    size_t whysize);                        /* 1 this boot's, 0, -1 */

/* "2026-11-30T03:40:00.123Z", "...+01:00"; returns 0 or -1 */
int ad_time_parse(const char *s, int64_t *ms);
void ad_time_format(char *buf, size_t size, int64_t ms);

/* "5m", "90s", "1h", "250ms", "30" (seconds); returns 0 or -1 */
int ad_duration_parse(const char *s, int64_t *ms);


/* alerts (ad_alert.c) */

typedef enum {
    AD_KIND_DENY_THRESHOLD = 0,
    AD_KIND_QUARANTINE,
    AD_KIND_DROPPED                         /* alertd's own: alerts a full
                                               outbox did not take */
} ad_kind_t;

/* what an AD_KIND_DROPPED alert reports, see ad_outbox_report() */

typedef struct {
    int64_t          critical;              /* of count */
    char             since[AD_TIME_MAX];    /* dropping began, our clock */
    char             first_id[AD_FID_MAX + 1];
    char             first_time[AD_TIME_MAX];
    char             last_id[AD_FID_MAX + 1];
    char             last_time[AD_TIME_MAX];
} ad_dropped_t;

typedef struct {
    char             id[AD_FID_MAX + 1];
    char             time[AD_TIME_MAX];     /* as written */
    int64_t          time_ms;
    ad_kind_t        kind;
    unsigned         critical:1;            /* else warning */
    unsigned         has_client:1;
    unsigned         has_route:1;
    unsigned         has_until:1;
    unsigned         has_peer:1;
    unsigned         folded:1;
    unsigned         lifted:1;              /* a quarantine resolved at
                                               lifted_ms: its zone was
                                               made anew (ad_lift.c);
                                               never from the journal */
    int64_t          lifted_ms;
    char             lifted_time[AD_TIME_MAX];
    unsigned         clock_known:1;         /* clock_off is of this boot */
    int64_t          clock_off;             /* wall - boot clock when
                                               alertd read it (or made
                                               it): a step since moves
                                               its times as Alertmanager
                                               is sent them; never in
                                               its webhook body */
    /*
     * client, peer, reason, route and sample are the journal's bytes and
     * may hold a NUL (\u0000): each has its length, and is compared and
     * written by it, never as a C string
     */
    char             client[AD_FIELD_MAX + 1];
    size_t           client_len;
    char             peer[AD_FIELD_MAX + 1]; /* an unidentified client's
                                               address, as nginx wrote it */
    size_t           peer_len;
    char             reason[AD_FIELD_MAX + 1];
    size_t           reason_len;
    char             route[AD_FIELD_MAX + 1];
    size_t           route_len;
    int64_t          count;
    int64_t          window;                /* seconds */
    char             sample[AD_SAMPLE_MAX + 1];
    size_t           sample_len;
    char             until[AD_TIME_MAX];
    ad_dropped_t     dropped;               /* AD_KIND_DROPPED only */
} ad_alert_t;

typedef enum {
    AD_LINE_ALERT = 0,
    AD_LINE_DENY,
    AD_LINE_ZONE,                           /* nginx made its deny zone
                                               anew: a->time is when */
    AD_LINE_OTHER,                          /* a type we do not deliver */
    AD_LINE_BAD
} ad_line_t;

ad_line_t ad_alert_parse_line(const char *line, size_t len, ad_alert_t *a,
    char *why, size_t whysize);
size_t ad_alert_resync(const char *line, size_t len);  /* 0: none */
int ad_alert_from_json(const json_t *o, ad_alert_t *a, char *why,
    size_t whysize);

/* the webhook body; also how an alert is kept on disk */
json_t *ad_alert_to_json(const ad_alert_t *a);
json_t *ad_alert_to_alertmanager(const ad_alert_t *a, int64_t repeat_ms);
const char *ad_alert_kind_name(ad_kind_t kind);

/* a field of len bytes as text to show, a NUL as "\u0000"; returns buf */
const char *ad_field_show(char *buf, size_t size, const char *s,
    size_t len);
int ad_field_eq(const char *a, size_t alen, const char *b, size_t blen);

#define AD_SHOW_MAX            (AD_FIELD_MAX * 6 + 1)   /* a field shown */


/* grouping (ad_group.c) */

typedef struct {
    ad_alert_t       last;                  /* the latest alert seen */
    char             first_id[AD_FID_MAX + 1];
    unsigned         seq;                   /* folded alerts sent */
    int64_t          start_ms;              /* window, alert time */
    int64_t          end_ms;
    int64_t          count;                 /* folded in this window */
    unsigned         dirty:1;               /* changed since the last
                                               save */
} ad_group_t;

/*
 * Alerts sent but not grouped since the cap was reached (count > 0):
 * the warning says the first, a count says the others (untold).
 */

typedef struct {
    int64_t          count;
    int64_t          untold;                /* since the last line */
    int64_t          since_ms;              /* wall clock: reached */
    int64_t          told_ms;               /* monotonic: the last line */
    char             first_id[AD_FID_MAX + 1];  /* of the untold */
    char             first_time[AD_TIME_MAX];
    char             last_id[AD_FID_MAX + 1];
    char             last_time[AD_TIME_MAX];
} ad_ungrouped_t;

typedef struct {
    ad_group_t      *g;
    size_t           n;
    size_t           cap;
    int64_t          interval_ms;
    ad_ungrouped_t   ungrouped;
    json_t          *closed;                /* keys of the groups closed
                                               since the last save; at
                                               most as many as are open,
                                               or AD_CLOSED_MIN */
    unsigned         whole:1;               /* closed is let go: the next
                                               save is a snapshot */
} ad_groups_t;

/* called for each alert to send now; returns 0, or -1 to stop */
typedef int (*ad_emit_pt)(void *data, const ad_alert_t *a);

int ad_group_add(ad_groups_t *gs, const ad_alert_t *a, int64_t now_ms,
    int64_t by, ad_emit_pt emit, void *data);
int ad_group_expire(ad_groups_t *gs, int64_t now_ms, size_t max,
    ad_emit_pt emit, void *data);       /* 1: max emitted, more ended */
int64_t ad_group_next(const ad_groups_t *gs);   /* -1: none */
size_t ad_group_shift(ad_groups_t *gs, int64_t by);
void ad_group_stop(ad_groups_t *gs);
json_t *ad_group_to_json(const ad_groups_t *gs);
int ad_group_from_json(ad_groups_t *gs, const json_t *a, char *why,
    size_t whysize);
int ad_group_apply_json(ad_groups_t *gs, const json_t *a,
    const json_t *closed, char *why, size_t whysize);
int ad_group_delta_to_json(const ad_groups_t *gs, json_t **groups,
    json_t **closed);
void ad_group_held(const ad_groups_t *gs, size_t *dirty, size_t *closed);
void ad_group_saved(ad_groups_t *gs);
void ad_group_free(ad_groups_t *gs);


/* quarantines to resolve when the deny zone goes (ad_lift.c) */

typedef struct {
    ad_alert_t      *a;                     /* the latest sent of each
                                               (client, peer, route,
                                               reason, severity) */
    size_t           n;
    unsigned         dirty:1;               /* changed since the last
                                               save */
    ad_fail_t        save_fail;
} ad_lifts_t;

int ad_lift_load(ad_lifts_t *ls, int dirfd);
void ad_lift_add(ad_lifts_t *ls, const ad_alert_t *a, int64_t now_ms,
    int64_t now_off);
int ad_lift_zone(ad_lifts_t *ls, const ad_alert_t *zone, ad_emit_pt emit,
    void *data);
int ad_lift_save(ad_lifts_t *ls, int dirfd);
void ad_lift_free(ad_lifts_t *ls);


/* the state directory (ad_state.c) */

/*
 * Where one journal file was left.  The inode says which file it was
 * only while the file exists: a copytruncate keeps the inode and a
 * deleted file's inode is used again.  The fingerprint, a hash of the
 * plen bytes just before off, says that the bytes we read are still
 * there.
 */

typedef struct {
    uint64_t         dev;
    uint64_t         ino;
    int64_t          off;
    size_t           plen;                  /* 0: no fingerprint (off 0,
                                               or an older state file) */
    unsigned char    print[AD_PRINT_HASH];
    unsigned         valid:1;
} ad_fpos_t;

typedef struct {
    ad_fpos_t        cur;                   /* the file under the name */
    ad_fpos_t        old;                   /* a rotated file still read
                                               for late lines */
} ad_pos_t;

/* a step of the wall clock, as alertd told it (alertd.c, ad_clock()) */

typedef struct {
    int64_t          off;                   /* the clock before it
                                               (wall - boot) */
    int64_t          boot;                  /* the boot clock when that
                                               was last read */
    int64_t          seen;                  /* the boot clock when the
                                               step was told */
} ad_step_t;


typedef struct {
    const char      *path;
    int              fd;                    /* the directory */
    int              lock;
    int              log;                   /* STATE/offset.log */
    int64_t          gen;                   /* of the snapshot */
    size_t           snap_size;             /* its bytes */
    size_t           log_size;
    unsigned         snapshot:1;            /* the next save writes one */
    unsigned         clock:1;               /* clock_off is set */
    unsigned         saved_clock:1;         /* the loaded state has
                                               saved_off, of this boot */
    unsigned         saved_at:1;            /* and saved_boot */
    int64_t          clock_off;             /* wall - boot clock of the
                                               windows saved */
    int64_t          clock_boot;            /* the boot clock then */
    int64_t          saved_off;             /* the loaded state's */
    int64_t          saved_boot;            /* its boot clock */
    ad_step_t        steps[AD_CLOCK_STEPS]; /* the last steps of the
                                               wall clock, the latest
                                               last: saved, and loaded
                                               when of this boot */
    size_t           nsteps;
    ad_fail_t        append_fail;           /* appending to the log */
    ad_fail_t        empty_fail;            /* emptying it */
    int              errnum;                /* why opening or loading
                                               failed, if the system said
                                               (else 0) */
} ad_state_t;

int ad_state_open(ad_state_t *st, const char *path, char *err,
    size_t errsize);
void ad_state_close(ad_state_t *st);
int ad_file_replace(int dirfd, const char *name, const char *data,
    size_t len);
int ad_file_read(int dirfd, const char *name, size_t max, char **buf,
    size_t *len);
const char *ad_file_strerror(int err);  /* EINVAL: "not a regular file" */
int ad_fsync_dir(int dirfd);

typedef struct ad_outbox_s  ad_outbox_t;

int ad_state_load(ad_state_t *st, const char *journal, ad_pos_t *pos,
    ad_groups_t *gs, ad_outbox_t *ob, char *err, size_t errsize);
int ad_state_save(ad_state_t *st, const char *journal, const ad_pos_t *pos,
    ad_groups_t *gs, const ad_outbox_t *ob);


/* the journal (ad_journal.c) */

typedef struct {
    int              fd;
    uint64_t         dev;
    uint64_t         ino;
    int64_t          off;                   /* first unconsumed byte */
    int              wd;
    unsigned         skipping:1;            /* inside an over-long line */
    unsigned         failing:1;             /* its last read failed */
    unsigned         moved:1;               /* no longer under path: a
                                               rotation took it away */
    unsigned         copy:1;                /* a copytruncate's copy */
    size_t           tlen;                  /* min(off, AD_PRINT_MAX) */
    char             tail[AD_PRINT_MAX];    /* the bytes before off */
    char             path[4096];            /* the path it was opened
                                               by, for the log */
    ad_fail_t        read_fail;             /* reading it */
} ad_jfile_t;

/*
 * A position whose file cannot be told yet among the files beside the
 * name (one that may be it cannot be read or opened): tried again at
 * every wake-up and poll for --rotate-grace, then given up, its lines
 * said lost.
 */
typedef struct {
    ad_fpos_t        fp;
    int64_t          until;                 /* monotonic ms */
    ad_fail_t        fail;                  /* reading that file */
} ad_jwait_t;

typedef struct {
    char             path[4096];
    char             dir[4096];
    char             base[256];
    int              ifd;                   /* inotify; -1 with --once */
    int              dwd;
    int              errnum;                /* ad_journal_open() failed:
                                               the directory's stat()
                                               errno, 0 for a path */
    ad_jfile_t       cur;
    ad_jfile_t       old;                   /* rotated away, read a
                                               while longer */
    int64_t          old_until;             /* monotonic ms */
    ad_fail_t        open_fail;             /* opening the name */
    ad_fail_t        watch_fail;            /* inotify, the dir's watch */
    ad_fail_t        read_fail;             /* reading the journal at
                                               its saved position */
    ad_fpos_t        pending;               /* where to go on in a
                                               journal that could not be
                                               opened at start */
    ad_jwait_t       seek;                  /* the journal's position
                                               (saved, or before a
                                               truncation): the journal
                                               waits for it */
    ad_jwait_t       seek_old;              /* the rotated file's, still
                                               read: it does not wait */
    int64_t          poll_ms;               /* --poll-interval */
    int64_t          grace_ms;              /* --rotate-grace */
    unsigned         check:1;               /* the name may point to a
                                               new file */
    unsigned         seek_copy:1;           /* seek is a copytruncate's
                                               copy, cur the journal it
                                               truncated, at 0 */
    unsigned         old_copy:1;            /* old is such a copy, read
                                               before cur */
    unsigned         old_waits:1;           /* its read failed: tried
                                               again until old_until */
    unsigned         watch:1;               /* following it (not --once);
                                               ifd is -1 while inotify
                                               fails: polled instead */
    unsigned         lost:1;                /* lines were said lost
                                               since it was opened */
    unsigned         old_left:1;            /* --once: old's read failed,
                                               it stays in the position
                                               for the next run (said) */
    char             buf[AD_PRINT_MAX + AD_READ_MAX + 1];   /* the
                                               tail, then what follows it:
                                               a longest line and its
                                               newline */
} ad_journal_t;

/*
 * Returns 0; -1 to stop reading, it failed; 1 to stop reading for this
 * round of the loop.  Either way the line is read again later, and
 * ad_journal_read() returns what the handler did.  With cut, line is the
 * end of a line longer than AD_READ_MAX (at most its last AD_READ_MAX
 * bytes), which is skipped: only a whole line glued to its end may be
 * taken from it.
 */
typedef int (*ad_line_pt)(void *data, const char *line, size_t len,
    int64_t off, int cut);

int ad_journal_open(ad_journal_t *j, const char *path, int watch,
    int64_t poll_ms, int64_t grace_ms, const ad_pos_t *saved, char *err,
    size_t errsize);
void ad_journal_close(ad_journal_t *j);
void ad_journal_events(ad_journal_t *j);
int ad_journal_read(ad_journal_t *j, ad_line_pt handler, void *data);
void ad_journal_pos(const ad_journal_t *j, ad_pos_t *pos);

#define AD_JOURNAL_LOST        1        /* ad_journal_unread(): lines
                                           said lost */
#define AD_JOURNAL_LEFT        2        /* lines left where the
                                           position is */

int ad_journal_unread(const ad_journal_t *j);
int64_t ad_journal_next(const ad_journal_t *j);


/* the outbox (ad_outbox.c) */

typedef struct ad_entry_s  ad_entry_t;

struct ad_entry_s {
    ad_entry_t      *next;
    ad_entry_t      *prev;
    char             name[AD_NAME_MAX];     /* file in STATE/outbox */
    char             key[AD_KEY_HEX + 1];   /* the sink */
    al_sink_kind_t   kind;
    char            *url;                   /* as queued, for orphans */
    ad_alert_t       alert;
    int64_t          queued_ms;
    uint64_t         seq;
    unsigned         attempts;
    int64_t          next_ms;               /* monotonic; not before */
    unsigned         busy:1;
    unsigned         tried:1;               /* an attempt sent it (in
                                               flight, or failed): not
                                               folded into; --once */
    unsigned         first:1;               /* sent before the others */
    unsigned         fresh:1;               /* queued by this process: a
                                               sink cannot have it yet */
    char             merged[AD_FID_MAX + 1];    /* the last alert folded
                                               into it (ad_outbox_add) */
    unsigned         unsaved:1;             /* folded into since the last
                                               state save: not sent */
    unsigned         refused:1;             /* its sink refused it (a
                                               4xx), or failed on it
                                               alone (fails): sent after
                                               the entries it did not */
    unsigned         fails;                 /* failures in a row that
                                               the receiver had it for
                                               (a 5xx, no answer after
                                               the request), no other
                                               alert failing between */
};

/*
 * One per sink key with queued alerts or dropped ones: how many are
 * queued, and what a full outbox did not take since dropping began
 * (dropped > 0) and the sink was not told yet.
 */

typedef struct {
    char             key[AD_KEY_HEX + 1];
    al_sink_kind_t   kind;
    char             label[AD_LABEL_MAX];   /* loggable URL */
    size_t           n;                     /* entries queued */
    int64_t          dropped;
    int64_t          peers;                 /* of dropped, unidentified
                                               peers' alerts: only those,
                                               and the report waits for
                                               the sink to be below
                                               their share */
    int64_t          since_ms;              /* wall clock */
    ad_dropped_t     d;
    unsigned         pending:1;             /* the alert being queued is
                                               dropped for it: counted
                                               once every sink took it */
    unsigned         pending_peer:1;        /* at the share of an
                                               unidentified peer's alert,
                                               not at --outbox-max */
} ad_sinkq_t;

struct ad_outbox_s {
    ad_entry_t      *head;
    ad_entry_t      *tail;
    size_t           n;
    size_t           max;                   /* queued per sink */
    ad_sinkq_t      *q;
    size_t           nq;
    int              fd;                    /* STATE/outbox */
    uint64_t         seq;
    int              errnum;                /* why ad_outbox_open() failed,
                                               if the system said */
    size_t           unsaved;               /* entries marked unsaved */
    ad_fail_t        queue_fail;            /* writing an entry */
    char           **damaged;               /* files that are no entry
                                               and could not be renamed
                                               *.bad: not queued alerts */
    size_t           ndamaged;
    unsigned         dirty:1;               /* added since the last sync */
    unsigned         once:1;                /* --once: what cannot be
                                               queued waits for the next
                                               run, not AD_BLOCKED_WAIT */
};

typedef enum {
    AD_OUTBOX_QUEUED = 0,                   /* or queued already */
    AD_OUTBOX_FOLDED,                       /* into a queued alert */
    AD_OUTBOX_DROPPED,                      /* ad_outbox_count() counts
                                               it, see ad_sinkq_t */
    AD_OUTBOX_BLOCKED                       /* a damaged file that
                                               cannot be replaced holds
                                               its name: not queued, said */
} ad_outbox_rc_t;

int ad_outbox_open(ad_outbox_t *ob, int statefd, size_t max, char *err,
    size_t errsize);
void ad_outbox_close(ad_outbox_t *ob);
int ad_outbox_add(ad_outbox_t *ob, const ad_alert_t *a, al_sink_kind_t kind,
    const char *key, const char *url);
void ad_outbox_count(ad_outbox_t *ob, const ad_alert_t *a, int taken);
int ad_outbox_report(ad_outbox_t *ob, al_sink_kind_t kind, const char *key,
    const char *url);
void ad_outbox_pending(const ad_outbox_t *ob);
json_t *ad_outbox_drops_to_json(const ad_outbox_t *ob);
int ad_outbox_drops_from_json(ad_outbox_t *ob, const json_t *a, char *why,
    size_t whysize);
int ad_outbox_sync(ad_outbox_t *ob);
void ad_outbox_saved(ad_outbox_t *ob);
void ad_outbox_done(ad_outbox_t *ob, ad_entry_t *e);
const char *ad_sink_kind_name(al_sink_kind_t kind);


/* delivery (ad_deliver.c) */

typedef struct ad_xfer_s  ad_xfer_t;

typedef struct {
    al_sink_kind_t   kind;
    char            *url;
    char             key[AD_KEY_HEX + 1];
    char             label[AD_LABEL_MAX];   /* loggable URL */
    unsigned char   *hmac;                  /* guarded memory */
    size_t           hmac_len;
    unsigned char   *hmac_also;             /* hmac_secret_also: a second
                                               signature; guarded, or
                                               NULL */
    size_t           hmac_also_len;
    char            *hmac_also_name;        /* its secret's name, logged */
    unsigned         failures;              /* in a row */
    int64_t          next_ms;               /* monotonic; not before */
    unsigned         busy:1;
    unsigned         failed:1;              /* --once: stop for this run */
    unsigned         refused:1;             /* its last answer refused an
                                               alert */
} ad_sink_t;

typedef struct {
    void            *multi;                 /* CURLM */
    ad_sink_t       *sinks;
    size_t           nsinks;
    ad_outbox_t     *outbox;
    ad_xfer_t       *xfers;                 /* running */
    size_t           busy;
    int64_t          repeat_ms;
    int64_t          attempt_ms;            /* --attempt-timeout */
    unsigned         once:1;
    unsigned         stopping:1;
} ad_deliver_t;

void ad_sink_key(al_sink_kind_t kind, const char *url, char *key);
int ad_sinks_from_policy(const al_policy_t *p, const al_keyring_t *kr,
    ad_sink_t **sinks, size_t *n, char *err, size_t errsize);
void ad_sinks_free(ad_sink_t *sinks, size_t n);

/* ad_secret.c: opens one secret of a policy loaded without a keyring */
int ad_secret_open(const al_policy_t *p, const al_secret_t *sec,
    const al_keyring_t *kr, unsigned char **out, size_t *outlen, char *err,
    size_t errsize);

int ad_deliver_init(ad_deliver_t *d, ad_outbox_t *ob, int64_t repeat_ms,
    int64_t attempt_ms, int once, char *err, size_t errsize);
void ad_deliver_free(ad_deliver_t *d);
void ad_deliver_set_sinks(ad_deliver_t *d, ad_sink_t *sinks, size_t n);
void ad_deliver_orphans(ad_deliver_t *d);
void ad_deliver_start(ad_deliver_t *d);
void ad_deliver_collect(ad_deliver_t *d);
int64_t ad_deliver_next(const ad_deliver_t *d);   /* monotonic, -1 */
int ad_deliver_poll(ad_deliver_t *d, int *fds, size_t nfds, int *ready,
    int timeout_ms);
void ad_deliver_abort(ad_deliver_t *d);
int ad_deliver_idle(const ad_deliver_t *d);       /* --once: done */


#endif /* ALERTD_H */
