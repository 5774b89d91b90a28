
/*
 * Airlock logs: the deny log and the journal, one JSON line per event.
 *
 * airlock_deny_log (per server), one line per denied request:
 *
 *   {"time":"2024-05-01T12:00:00+00:00","request_id":"...","client":"agent",
 *    "method":"GET","path":"/x","route":null,"reason":"no_route",
 *    "detail":"no route matches this path"}
 *
 * airlock_journal (http), what airlock-alertd follows: the same deny lines
 * with "type":"deny" and a UTC time in ms, and the alerts:
 *
 *   {"type":"alert","id":"...","time":"2026-11-30T03:40:00.123Z",
 *    "kind":"deny_threshold","severity":"warning","client":"agent",
 *    "reason":"no_route","route":null,"count":5,"window":60,
 *    "sample":"GET /x","request_id":"..."}
 *
 * Files are opened like access_log files (ngx_conf_open_file), so they are
 * reopened on USR1.  A line is built in a buffer of its own, at most
 * NGX_HTTP_AIRLOCK_LINE_MAX bytes with every string field cut to fit, and
 * written with one write() to an O_APPEND file: the lines of several
 * workers never interleave (to a pipe, whole lines of at most PIPE_BUF
 * bytes a write()).  What a full disk will not take is kept in
 * the buffer; a line it stops half-way stays in the file as a line of
 * its own, with no other glued to it, and is written again whole (see
 * ngx_http_airlock_write()).
 *
 * The journal may buffer deny lines the way access_log does (buffer=,
 * flush=): whole lines gather in the worker's buffer, written with one
 * write() when it fills, when the flush timer fires, before an alert,
 * on USR1 and when the worker exits (nginx calls file->flush).  Alerts are
 * never held: the buffer is written first, then the alert, so the journal
 * keeps its order and alertd sees an alert at once.  The usage log
 * (airlock_llm_log ... buffer=) buffers its lines the same way.
 *
 * A buffer is in shared memory: a zone per file with a region per worker.
 * A worker that is killed leaves its lines there; the next worker to start
 * writes them, or another when it next writes its own buffer (it looks at
 * most once a second; see ngx_http_airlock_recover()).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <ngx_md5.h>

#include "ngx_http_airlock_module.h"


#define NGX_HTTP_AIRLOCK_LINE_MAX    4096
#define NGX_HTTP_AIRLOCK_FIELD_MIN   32      /* room a field starts with */
#define NGX_HTTP_AIRLOCK_PATH_MAX    256
#define NGX_HTTP_AIRLOCK_METHOD_MAX  64

/* what a pipe takes in one write() */
#ifdef PIPE_BUF
#define NGX_HTTP_AIRLOCK_PIPE_BUF    PIPE_BUF
#else
#define NGX_HTTP_AIRLOCK_PIPE_BUF    512
#endif

/* U+2026 HORIZONTAL ELLIPSIS: a string was cut */
#define NGX_HTTP_AIRLOCK_CUT         "\xe2\x80\xa6"


/*
 * A file's buffer, in file->data.  nginx's access_log takes whatever it
 * finds in file->data for a buffer of its own, with these fields and a
 * gzip level after them: an access_log naming the same file then writes
 * through this buffer, and gzip must read 0 (not the bytes after the
 * struct) or its flushes would try to compress.
 */

typedef struct ngx_http_airlock_region_s  ngx_http_airlock_region_t;

typedef struct {
    u_char                      *start;
    u_char                      *pos;
    u_char                      *last;
    ngx_event_t                 *event;
    ngx_msec_t                   flush;
    ngx_int_t                    gzip;          /* always 0 */

    /*
     * Our lines, held in shared memory: the fields above stay the
     * process's own buffer, which is all an access_log naming the file
     * sees and writes to.
     */
    ngx_shm_zone_t              *zone;
    ngx_http_airlock_region_t   *own;           /* this worker's */
    size_t                       size;          /* of a region's data */
    ngx_msec_t                   scanned;       /* last look at others' */
    ngx_shm_zone_t              *end;           /* the file's end */
    unsigned                     pipe:1;        /* not a regular file */
} ngx_http_airlock_buf_t;


/*
 * Where a file ends, shared by every process writing it, in a zone of
 * its own (airlock_log_end:FILE): the lines a write() stopped half-way
 * (a full disk), counted, and of those the ones that a newline has
 * followed since.  While they differ the file may end in the middle of
 * a line, and the next write() to it, any process's, starts with a
 * newline.
 */

typedef struct {
    ngx_atomic_t                 cut;
    ngx_atomic_t                 mended;
} ngx_http_airlock_end_t;


/* a log file and its end's zone, in the main configuration's ends */

typedef struct {
    ngx_open_file_t             *file;
    ngx_shm_zone_t              *zone;
} ngx_http_airlock_file_end_t;


/*
 * A worker's region of a file's zone: its lines not yet written.  The
 * owner alone adds lines and writes them; len covers whole lines only and
 * is stored after the bytes it covers, so whatever len says is there even
 * when the owner is killed between two stores.  Another process takes a
 * region over (compare-and-swap of owner) only when its owner is dead, or
 * free (owner 0).
 */

struct ngx_http_airlock_region_s {
    ngx_atomic_t                 owner;
    size_t                       len;
    u_char                       data[1];
};


/*
 * A region's owner is one word, so that a compare-and-swap takes it
 * whole and no process reads half of it: the pid in the low 32 bits and,
 * where the word has 64, the low 32 bits of the process's start time
 * above them (clock ticks since boot; 0 when it could not be read).  The
 * start time tells a dead owner from a process that got its pid since.
 * nginx without atomic operations has a 32-bit word: the pid alone.
 */

#define ngx_http_airlock_owner_pid(o)  ((ngx_pid_t) ((o) & 0xffffffff))

#if (NGX_HAVE_ATOMIC_OPS && NGX_PTR_SIZE == 8)
#define NGX_HTTP_AIRLOCK_OWNER_START  1
#define ngx_http_airlock_owner_start(o)  ((uint32_t) ((o) >> 32))
#else
#define NGX_HTTP_AIRLOCK_OWNER_START  0
#define ngx_http_airlock_owner_start(o)  0
#endif


typedef void (*ngx_http_airlock_shared_pt)(ngx_cycle_t *cycle,
    ngx_open_file_t *file, ngx_http_airlock_buf_t *b);


typedef struct {
    size_t                       size;          /* of each region's data */
    ngx_uint_t                   n;
    ngx_http_airlock_region_t   *region[1];
} ngx_http_airlock_regions_t;


/* what the zone is made for, in zone->data until it is made */

typedef struct {
    size_t                       size;
    ngx_uint_t                   n;
} ngx_http_airlock_layout_t;


typedef struct {
    u_char                      *pos;
    u_char                      *last;          /* less room for "}\n" */
    ngx_uint_t                   fields;
    ngx_uint_t                   full;
    u_char                       buf[NGX_HTTP_AIRLOCK_LINE_MAX];
} ngx_http_airlock_line_t;


/*
 * A log copied for one line of ours, with a handler that escapes the
 * context nginx ends the line with (ngx_http_airlock_log_error_core()).
 * The copy's writer and chain are the log's.
 */
typedef struct {
    ngx_log_t                    log;           /* first: what is written */
    ngx_log_handler_pt           handler;       /* the log's */
} ngx_http_airlock_shown_t;


static u_char *ngx_http_airlock_shown_context(ngx_log_t *log, u_char *buf,
    size_t len);
static u_char *ngx_http_airlock_log_escape(u_char *dst, u_char *end,
    u_char *src, size_t len);
static void ngx_http_airlock_deny_line(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_str_t *id, const char *detail,
    size_t dlen, ngx_uint_t journal, ngx_http_airlock_line_t *l);
static void ngx_http_airlock_line_init(ngx_http_airlock_line_t *l);
static ngx_uint_t ngx_http_airlock_line_key(ngx_http_airlock_line_t *l,
    const char *key);
static void ngx_http_airlock_line_str(ngx_http_airlock_line_t *l,
    const char *key, u_char *s, size_t len, size_t max);
static void ngx_http_airlock_line_esc(ngx_http_airlock_line_t *l, u_char *s,
    size_t len, size_t max);
static void ngx_http_airlock_line_uint(ngx_http_airlock_line_t *l,
    const char *key, ngx_uint_t n);
static void ngx_http_airlock_line_time(ngx_http_airlock_line_t *l,
    const char *key, ngx_msec_t ms);
static void ngx_http_airlock_line_write(ngx_http_airlock_line_t *l,
    ngx_open_file_t *file, ngx_uint_t now, ngx_log_t *log);
static void ngx_http_airlock_write_held(ngx_open_file_t *file,
    ngx_http_airlock_buf_t *b, u_char *line, size_t len, ngx_log_t *log);
static size_t ngx_http_airlock_write(ngx_open_file_t *file, u_char *buf,
    size_t len, ngx_log_t *log);
static ngx_http_airlock_end_t *ngx_http_airlock_end(ngx_open_file_t *file);
static void ngx_http_airlock_mended(ngx_http_airlock_end_t *end,
    ngx_atomic_uint_t cut);
static size_t ngx_http_airlock_flush(ngx_open_file_t *file, ngx_log_t *log);
static void ngx_http_airlock_region_drop(ngx_http_airlock_region_t *r,
    size_t n);
static void ngx_http_airlock_create(ngx_open_file_t *file, ngx_log_t *log);
static void ngx_http_airlock_file_kind(ngx_open_file_t *file,
    ngx_http_airlock_buf_t *b);
static ngx_shm_zone_t *ngx_http_airlock_end_add(ngx_conf_t *cf,
    ngx_open_file_t *file);
static ngx_int_t ngx_http_airlock_end_init(ngx_shm_zone_t *zone, void *data);
static void ngx_http_airlock_reopen(ngx_open_file_t *file, ngx_log_t *log);
static void ngx_http_airlock_flush_handler(ngx_event_t *ev);
static ngx_int_t ngx_http_airlock_regions_init(ngx_shm_zone_t *zone,
    void *data);
static void ngx_http_airlock_each_shared(ngx_cycle_t *cycle,
    ngx_http_airlock_shared_pt handler);
static void ngx_http_airlock_region_take(ngx_cycle_t *cycle,
    ngx_open_file_t *file, ngx_http_airlock_buf_t *b);
static void ngx_http_airlock_region_give(ngx_cycle_t *cycle,
    ngx_open_file_t *file, ngx_http_airlock_buf_t *b);
static void ngx_http_airlock_recover(ngx_open_file_t *file,
    ngx_http_airlock_buf_t *b, ngx_uint_t all, ngx_log_t *log);
static ngx_uint_t ngx_http_airlock_alive(ngx_atomic_uint_t owner);
static ngx_msec_t ngx_http_airlock_wall_ms(void);
static uint64_t ngx_http_airlock_rid_mix(uint64_t x);


/*
 * Airlock's files say who was refused what and how much each client
 * spent: they are created 0640, not with nginx's 0644.  nginx opens them,
 * and reopens them on USR1, itself; the file is created first, when the
 * directive is read and from the file's flush handler, which nginx calls
 * right before each reopen.  An existing file gets no more than 0640.
 */

ngx_open_file_t *
ngx_http_airlock_open_file(ngx_conf_t *cf, ngx_str_t *name)
{
    ngx_open_file_t  *file;

    file = ngx_conf_open_file(cf->cycle, name);
    if (file == NULL) {
        return NULL;
    }

    ngx_http_airlock_create(file, cf->log);

    if (file->flush == NULL) {
        file->flush = ngx_http_airlock_create;
    }

    if (ngx_http_airlock_end_add(cf, file) == NULL) {
        return NULL;
    }

    return file;
}


/*
 * The zone of a file's end (ngx_http_airlock_end_t): one per file name,
 * kept across reloads, so that old workers and new ones see the same.
 * Returns it, made if the file has none yet, or NULL.
 */

static ngx_shm_zone_t *
ngx_http_airlock_end_add(ngx_conf_t *cf, ngx_open_file_t *file)
{
    ngx_str_t                      name;
    ngx_uint_t                     i;
    ngx_shm_zone_t                *zone;
    ngx_http_airlock_file_end_t   *fe;
    ngx_http_airlock_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);

    if (amcf->ends == NULL) {
        amcf->ends = ngx_array_create(cf->pool, 4,
                                      sizeof(ngx_http_airlock_file_end_t));
        if (amcf->ends == NULL) {
            return NULL;
        }
    }

    fe = amcf->ends->elts;

    for (i = 0; i < amcf->ends->nelts; i++) {
        if (fe[i].file == file) {
            return fe[i].zone;
        }
    }

    name.len = sizeof("airlock_log_end:") - 1 + file->name.len;
    name.data = ngx_pnalloc(cf->pool, name.len);
    if (name.data == NULL) {
        return NULL;
    }

    (void) ngx_sprintf(name.data, "airlock_log_end:%V", &file->name);

    zone = ngx_shared_memory_add(cf, &name, 8 * ngx_pagesize,
                                 &ngx_http_airlock_module);
    if (zone == NULL) {
        return NULL;
    }

    zone->init = ngx_http_airlock_end_init;

    fe = ngx_array_push(amcf->ends);
    if (fe == NULL) {
        return NULL;
    }

    fe->file = file;
    fe->zone = zone;

    return zone;
}


static ngx_int_t
ngx_http_airlock_end_init(ngx_shm_zone_t *zone, void *data)
{
    ngx_slab_pool_t         *shpool;
    ngx_http_airlock_end_t  *end;

    if (data != NULL) {
        zone->data = data;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (zone->shm.exists) {
        zone->data = shpool->data;
        return NGX_OK;
    }

    end = ngx_slab_calloc(shpool, sizeof(ngx_http_airlock_end_t));
    if (end == NULL) {
        return NGX_ERROR;
    }

    shpool->data = end;
    zone->data = end;

    return NGX_OK;
}


static void
ngx_http_airlock_create(ngx_open_file_t *file, ngx_log_t *log)
{
    int              fd;
    ngx_file_info_t  fi;

    if (file->name.len == 0) {
        return;
    }

    /* O_NONBLOCK: a FIFO without a reader does not hang nginx -t */

    fd = open((char *) file->name.data,
              O_WRONLY|O_APPEND|O_CREAT|O_NONBLOCK|O_NOCTTY|O_CLOEXEC, 0640);
    if (fd == -1) {
        /* nginx's own open of the file says why */
        return;
    }

    if (ngx_fd_info(fd, &fi) != NGX_FILE_ERROR
        && ngx_is_file(&fi)
        && (fi.st_mode & 0137))
    {
        if (fchmod(fd, fi.st_mode & 0640) == -1) {
            ngx_http_airlock_log_error(NGX_LOG_WARN, log, ngx_errno,
                                       "airlock: fchmod(\"%V\", 0640) failed",
                                       &file->name);
        }
    }

    (void) close(fd);
}


char *
ngx_http_airlock_deny_log(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_srv_conf_t  *ascf = conf;

    ngx_str_t  *value, name;

    if (ascf->deny_log != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        ascf->deny_log = NULL;
        return NGX_CONF_OK;
    }

    name = value[1];

    ascf->deny_log = ngx_http_airlock_open_file(cf, &name);
    if (ascf->deny_log == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


char *
ngx_http_airlock_journal(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_main_conf_t  *amcf = conf;

    ssize_t      size;
    ngx_str_t   *value, name;
    ngx_msec_t   flush;

    if (amcf->journal != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name = value[1];

    if (ngx_http_airlock_log_args(cf, 2, &size, &flush) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    amcf->journal = ngx_http_airlock_open_file(cf, &name);
    if (amcf->journal == NULL) {
        return NGX_CONF_ERROR;
    }

    if (size == 0) {
        return NGX_CONF_OK;
    }

    return ngx_http_airlock_file_buffer(cf, amcf->journal, size,
                                        flush ? flush : 1000);
}


/*
 * A log directive's parameters from args[from]: "buffer=SIZE" (at least
 * NGX_HTTP_AIRLOCK_LINE_MAX, 4k: a line always fits; 0 when absent) and
 * "flush=TIME" (0 when absent), which needs a buffer.  NGX_OK, or
 * NGX_ERROR said.
 */

ngx_int_t
ngx_http_airlock_log_args(ngx_conf_t *cf, ngx_uint_t from, ssize_t *size,
    ngx_msec_t *flush)
{
    ngx_str_t   *value, s;
    ngx_uint_t   i;

    value = cf->args->elts;
    *size = 0;
    *flush = 0;

    for (i = from; i < cf->args->nelts; i++) {

        if (*size == 0 && ngx_strncmp(value[i].data, "buffer=", 7) == 0) {
            s.data = value[i].data + 7;
            s.len = value[i].len - 7;

            *size = ngx_parse_size(&s);

            if (*size == NGX_ERROR || *size < NGX_HTTP_AIRLOCK_LINE_MAX) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid buffer size \"%V\" "
                                   "(at least 4k)", &s);
                return NGX_ERROR;
            }

            continue;
        }

        if (*flush == 0 && ngx_strncmp(value[i].data, "flush=", 6) == 0) {
            s.data = value[i].data + 6;
            s.len = value[i].len - 6;

            *flush = ngx_parse_time(&s, 0);

            if (*flush == (ngx_msec_t) NGX_ERROR || *flush == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid flush time \"%V\"", &s);
                return NGX_ERROR;
            }

            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_ERROR;
    }

    if (*flush && *size == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "flush= needs buffer=");
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A per-worker buffer for a file: lines gather in it and are written
 * whole, with one write(), when it is full, on USR1, at worker exit, and
 * flush ms after the first of them, or with flush 0 at the end of the
 * event loop pass they were added in (a posted event: nginx runs those
 * before it waits for events again).  Every log naming the file writes
 * through the buffer; two logs may share it when they ask for the same.
 *
 * The buffer is a region of a shared memory zone named after the file
 * and the size, taken by each worker when it starts (until then, and in
 * a worker that finds no region free, the buffer is the process's own).
 * The zone has two regions per worker process and two more, so that a
 * reload's new workers find theirs while the old ones finish.
 */

char *
ngx_http_airlock_file_buffer(ngx_conf_t *cf, ngx_open_file_t *file,
    size_t size, ngx_msec_t flush)
{
    size_t                      zsize, pages;
    ngx_str_t                   name;
    ngx_uint_t                  n;
    ngx_core_conf_t            *ccf;
    ngx_http_airlock_buf_t     *buf;
    ngx_http_airlock_layout_t  *lay;

    if (file->data != NULL) {
        buf = file->data;

        if (file->flush == ngx_http_airlock_reopen
            && (size_t) (buf->last - buf->start) == size
            && buf->flush == flush)
        {
            return NGX_CONF_OK;
        }

        return "is buffered by another log using the same file";
    }

    buf = ngx_pcalloc(cf->pool, sizeof(ngx_http_airlock_buf_t));
    if (buf == NULL) {
        return NGX_CONF_ERROR;
    }

    buf->start = ngx_pnalloc(cf->pool, size);
    if (buf->start == NULL) {
        return NGX_CONF_ERROR;
    }

    buf->pos = buf->start;
    buf->last = buf->start + size;
    buf->flush = flush;

    buf->event = ngx_pcalloc(cf->pool, sizeof(ngx_event_t));
    if (buf->event == NULL) {
        return NGX_CONF_ERROR;
    }

    buf->event->data = file;
    buf->event->handler = ngx_http_airlock_flush_handler;
    buf->event->log = &cf->cycle->new_log;
    buf->event->cancelable = 1;

    ccf = (ngx_core_conf_t *) ngx_get_conf(cf->cycle->conf_ctx,
                                           ngx_core_module);

    /* worker_processes may come after http{}: then as many as CPUs */

    n = (ccf->worker_processes != NGX_CONF_UNSET)
        ? (ngx_uint_t) ccf->worker_processes : (ngx_uint_t) ngx_ncpu;
    n = 2 * ngx_max(n, 1) + 2;

    /* the size in the name: a zone of another layout is another zone */

    name.len = sizeof("airlock_log::") - 1 + NGX_SIZE_T_LEN
               + file->name.len;
    name.data = ngx_pnalloc(cf->pool, name.len);
    if (name.data == NULL) {
        return NGX_CONF_ERROR;
    }

    name.len = ngx_sprintf(name.data, "airlock_log:%uz:%V", size,
                           &file->name)
               - name.data;

    /*
     * The slab pool gives each region whole pages, the list of regions
     * a page or more, and keeps an ngx_slab_page_t for every page of
     * the zone; its header, slots and the alignment of its first page
     * take less than the eight pages added.
     */

    pages = n * ((size + sizeof(ngx_http_airlock_region_t)
                  + ngx_pagesize - 1) / ngx_pagesize)
            + (sizeof(ngx_http_airlock_regions_t)
               + n * sizeof(ngx_http_airlock_region_t *)
               + ngx_pagesize - 1) / ngx_pagesize;

    zsize = 8 * ngx_pagesize
            + pages * (ngx_pagesize + sizeof(ngx_slab_page_t));

    buf->zone = ngx_shared_memory_add(cf, &name, zsize,
                                      &ngx_http_airlock_module);
    if (buf->zone == NULL) {
        return NGX_CONF_ERROR;
    }

    lay = ngx_palloc(cf->pool, sizeof(ngx_http_airlock_layout_t));
    if (lay == NULL) {
        return NGX_CONF_ERROR;
    }

    lay->size = size;
    lay->n = n;

    buf->zone->init = ngx_http_airlock_regions_init;
    buf->zone->data = lay;
    buf->size = size;

    ngx_http_airlock_file_kind(file, buf);

    buf->end = ngx_http_airlock_end_add(cf, file);
    if (buf->end == NULL) {
        return NGX_CONF_ERROR;
    }

    file->flush = ngx_http_airlock_reopen;
    file->data = buf;

    return NGX_CONF_OK;
}


/*
 * Whether the file is a pipe (a FIFO, or anything but a regular file),
 * which takes a write() whole, never mixed with another process's, only
 * up to PIPE_BUF bytes: the buffer is then written in whole lines of at
 * most that much a write() (see ngx_http_airlock_write()).  Told by the
 * path when the buffer is made, and again before each reopen (USR1),
 * right before nginx opens the path anew; not by an fstat() per write().
 */

static void
ngx_http_airlock_file_kind(ngx_open_file_t *file, ngx_http_airlock_buf_t *b)
{
    ngx_file_info_t  fi;

    b->pipe = (ngx_file_info(file->name.data, &fi) == NGX_FILE_ERROR
               || !ngx_is_file(&fi));
}


/*
 * The buffer of a log named without buffer= (the usage log's default):
 * called once every log of the configuration has been read, it makes one
 * of size bytes, written at the end of each pass of the event loop,
 * unless the file has a buffer already (a log with buffer=, ours or an
 * access_log's).
 */

char *
ngx_http_airlock_file_buffer_default(ngx_conf_t *cf, ngx_open_file_t *file,
    size_t size)
{
    if (file->data != NULL) {
        return NGX_CONF_OK;
    }

    return ngx_http_airlock_file_buffer(cf, file, size, 0);
}


/* the zone's regions: made once, kept across reloads with the zone */

static ngx_int_t
ngx_http_airlock_regions_init(ngx_shm_zone_t *zone, void *data)
{
    ngx_uint_t                   i;
    ngx_slab_pool_t             *shpool;
    ngx_http_airlock_layout_t   *lay;
    ngx_http_airlock_regions_t  *rs;

    if (data != NULL) {
        zone->data = data;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (zone->shm.exists) {
        zone->data = shpool->data;
        return NGX_OK;
    }

    lay = zone->data;

    rs = ngx_slab_alloc(shpool, sizeof(ngx_http_airlock_regions_t)
                                + lay->n * sizeof(ngx_http_airlock_region_t *));
    if (rs == NULL) {
        goto failed;
    }

    rs->size = lay->size;
    rs->n = lay->n;

    for (i = 0; i < rs->n; i++) {
        rs->region[i] = ngx_slab_calloc(shpool,
                                        sizeof(ngx_http_airlock_region_t)
                                        + rs->size);
        if (rs->region[i] == NULL) {
            goto failed;
        }
    }

    shpool->data = rs;
    zone->data = rs;

    return NGX_OK;

failed:

    ngx_log_error(NGX_LOG_EMERG, zone->shm.log, 0,
                  "airlock: shared memory zone \"%V\" (%uz bytes) is too "
                  "small for %ui buffers of %uz bytes", &zone->shm.name,
                  zone->shm.size, lay->n, lay->size);
    return NGX_ERROR;
}


/*
 * A worker starts: it writes what workers that are gone left in each
 * shared buffer, then takes a free region for its own lines.  Without
 * one (more workers than regions) it keeps the buffer of its own and
 * says so: its lines are then lost if it is killed.
 * Workers alone take regions: the cache manager and loader write no
 * lines, and nginx without a master (master_process off) keeps its
 * lines in its own buffer, as its cycles after a reload share a pid.
 */

static ngx_atomic_uint_t  ngx_http_airlock_me;    /* this process, owner */


void
ngx_http_airlock_logs_init_process(ngx_cycle_t *cycle)
{
    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return;
    }

    /*
     * A file at its size limit (RLIMIT_FSIZE): the write() fails with
     * EFBIG, and the lines wait in the buffer, rather than SIGXFSZ kill
     * the worker, and the next that writes the lines it left, on and on.
     */

    if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR) {
        ngx_log_error(NGX_LOG_ALERT, cycle->log, ngx_errno,
                      "airlock: signal(SIGXFSZ) failed");
    }

    if (ngx_process != NGX_PROCESS_WORKER) {
        return;
    }

    ngx_http_airlock_me = (ngx_atomic_uint_t) ngx_pid;
#if (NGX_HTTP_AIRLOCK_OWNER_START)
    ngx_http_airlock_me |= (ngx_atomic_uint_t)
        (uint32_t) al_proc_started(ngx_pid, 1) << 32;
#endif

    ngx_log_debug2(NGX_LOG_DEBUG_CORE, cycle->log, 0,
                   "airlock: process %P started at %uD", ngx_pid,
                   ngx_http_airlock_owner_start(ngx_http_airlock_me));

    ngx_http_airlock_each_shared(cycle, ngx_http_airlock_region_take);
}


/*
 * A worker that stops gives its region back, written: ngx_conf_module's
 * exit_process has flushed the files (ngx_http_airlock_reopen()) before
 * this one runs, and this flush writes whatever came after.
 */

void
ngx_http_airlock_logs_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_airlock_each_shared(cycle, ngx_http_airlock_region_give);
}


static void
ngx_http_airlock_each_shared(ngx_cycle_t *cycle,
    ngx_http_airlock_shared_pt handler)
{
    ngx_uint_t               i;
    ngx_list_part_t         *part;
    ngx_open_file_t         *file;
    ngx_http_airlock_buf_t  *b;

    part = &cycle->open_files.part;
    file = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            file = part->elts;
            i = 0;
        }

        if (file[i].flush != ngx_http_airlock_reopen) {
            continue;
        }

        b = file[i].data;
        handler(cycle, &file[i], b);
    }
}


static void
ngx_http_airlock_region_take(ngx_cycle_t *cycle, ngx_open_file_t *file,
    ngx_http_airlock_buf_t *b)
{
    ngx_uint_t                   j;
    ngx_atomic_uint_t            owner;
    ngx_http_airlock_region_t   *r;
    ngx_http_airlock_regions_t  *rs;

    ngx_http_airlock_recover(file, b, 1, cycle->log);

    rs = b->zone->data;

    for (j = 0; j < rs->n; j++) {
        r = rs->region[j];

        if (r->owner == 0
            && ngx_atomic_cmp_set(&r->owner, 0, ngx_http_airlock_me))
        {
            r->len = 0;
            b->own = r;
            return;
        }
    }

    /*
     * None free: the file would not take the lines workers that are gone
     * left (recover() gave their regions back to them).  Such a region
     * is taken with its lines, which this worker writes before its own.
     */

    for (j = 0; j < rs->n; j++) {
        r = rs->region[j];
        owner = r->owner;

        if (owner != 0
            && (ngx_http_airlock_owner_pid(owner) == ngx_pid
                || !ngx_http_airlock_alive(owner))
            && ngx_atomic_cmp_set(&r->owner, owner, ngx_http_airlock_me))
        {
            ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                          "airlock: this worker takes %uz bytes of lines "
                          "to \"%V\" that process %P left",
                          r->len, &file->name,
                          ngx_http_airlock_owner_pid(owner));
            b->own = r;
            return;
        }
    }

    ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                  "airlock: no free region in the shared buffer of \"%V\" "
                  "(%ui regions): this worker holds its lines in its own "
                  "memory", &file->name, rs->n);
}


static void
ngx_http_airlock_region_give(ngx_cycle_t *cycle, ngx_open_file_t *file,
    ngx_http_airlock_buf_t *b)
{
    size_t  held;

    held = ngx_http_airlock_flush(file, cycle->log);

    if (b->own == NULL) {
        if (held > 0) {
            ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                          "airlock: %uz bytes of lines to \"%V\" are lost: "
                          "the file cannot be written", held, &file->name);
        }

        return;
    }

    /*
     * Lines the file would not take stay in the region, which stays this
     * process's: once it is gone, another worker writes them.  Lines
     * after this (none are expected) go to the process's buffer.
     */

    if (b->own->len > 0) {
        ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                      "airlock: %uz bytes of lines to \"%V\" are left in "
                      "its shared buffer: the file cannot be written, "
                      "another worker writes them", b->own->len,
                      &file->name);
        b->own = NULL;
        return;
    }

    ngx_memory_barrier();
    b->own->owner = 0;
    b->own = NULL;
}


/*
 * Lines that workers which are gone left in a file's zone are written to
 * the file: every region of a dead owner (see ngx_http_airlock_alive())
 * with all set, when a worker starts; else only regions holding lines,
 * at most once a second, from the flush timer.  The region is taken with
 * a compare-and-swap of its owner, so no two processes write it, and
 * given back empty.  A pid of this process that is not its own region is
 * a dead process's whose pid was used again.
 */

static void
ngx_http_airlock_recover(ngx_open_file_t *file, ngx_http_airlock_buf_t *b,
    ngx_uint_t all, ngx_log_t *log)
{
    ngx_pid_t                    pid;
    ngx_uint_t                   i;
    ngx_atomic_uint_t            owner;
    ngx_http_airlock_region_t   *r;
    ngx_http_airlock_regions_t  *rs;

    rs = b->zone->data;
    b->scanned = ngx_current_msec;

    for (i = 0; i < rs->n; i++) {
        r = rs->region[i];
        owner = r->owner;
        pid = ngx_http_airlock_owner_pid(owner);

        if (owner == 0 || r == b->own || (!all && r->len == 0)) {
            continue;
        }

        if (pid != ngx_pid && ngx_http_airlock_alive(owner)) {
            continue;
        }

        if (!ngx_atomic_cmp_set(&r->owner, owner, ngx_http_airlock_me)) {
            continue;
        }

        if (r->len > 0) {
            ngx_http_airlock_log_error(NGX_LOG_NOTICE, log, 0,
                                       "airlock: writing %uz bytes of lines to "
                                       "\"%V\" that process %P left", r->len,
                                       &file->name, pid);

            ngx_http_airlock_region_drop(r,
                ngx_http_airlock_write(file, r->data,
                                       ngx_min(r->len, rs->size), log));
        }

        /* what the file would not take waits for another look */

        ngx_memory_barrier();
        r->owner = (r->len > 0) ? owner : 0;
    }
}


/*
 * Whether a region's owner lives: kill(pid, 0) fails with ESRCH for a pid
 * no process has.  A process that has it but started at another time
 * than the owner got the pid after the owner died.  When the start time
 * is unknown (not stored, or unreadable now) the process is taken for the
 * owner: its lines wait rather than be written while it may add to them.
 */

static ngx_uint_t
ngx_http_airlock_alive(ngx_atomic_uint_t owner)
{
    uint32_t   start, now;
    ngx_pid_t  pid;

    pid = ngx_http_airlock_owner_pid(owner);

    if (kill(pid, 0) == -1 && ngx_errno == NGX_ESRCH) {
        return 0;
    }

    start = ngx_http_airlock_owner_start(owner);

    if (start != 0) {
        now = (uint32_t) al_proc_started(pid, 0);

        if (now != 0 && now != start) {
            return 0;
        }
    }

    return 1;
}


void
ngx_http_airlock_log_deny(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    const char *detail)
{
    size_t                         dlen;
    ngx_str_t                      id, client, route, esc;
    const char                    *reason;
    ngx_http_airlock_line_t        line;
    ngx_http_airlock_srv_conf_t   *ascf;
    ngx_http_airlock_loc_conf_t   *alcf;
    ngx_http_airlock_main_conf_t  *amcf;
    u_char                         buf[AL_DETAIL_MAX * 6];

    reason = al_reason_name(ctx->reason);

    if (detail == NULL) {
        detail = "";
    }

    dlen = ngx_strlen(detail);

    dlen = al_utf8_cut(detail, dlen, AL_DETAIL_MAX);

    if (ctx->client != NULL) {
        client.data = (u_char *) ctx->client->name.data;
        client.len = ctx->client->name.len;

    } else {
        ngx_str_null(&client);
    }

    if (ctx->route != NULL) {
        route.data = (u_char *) ctx->route->name.data;
        route.len = ctx->route->name.len;

    } else {
        ngx_str_null(&route);
    }

    if (ngx_http_airlock_request_id(r, &id) != NGX_OK) {
        ngx_str_set(&id, "-");
    }

    /* the error log line: the detail never holds a secret */

    esc.data = buf;
    esc.len = (u_char *) al_json_escape((char *) buf, detail, dlen) - buf;

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_airlock_module);

    ngx_http_airlock_log_error(alcf->log_level, r->connection->log, 0,
                               "airlock: denied, reason \"%s\", client \"%V\", "
                               "route \"%V\", request_id \"%V\": %V",
                               reason, &client, &route, &id, &esc);

    ascf = ngx_http_get_module_srv_conf(r, ngx_http_airlock_module);

    if (ascf->deny_log != NULL) {
        ngx_http_airlock_deny_line(r, ctx, &id, detail, dlen, 0, &line);
        ngx_http_airlock_line_write(&line, ascf->deny_log, 1,
                                    r->connection->log);
    }

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    if (amcf->journal != NULL) {
        ngx_http_airlock_deny_line(r, ctx, &id, detail, dlen, 1, &line);
        ngx_http_airlock_line_write(&line, amcf->journal, 0,
                                    r->connection->log);
    }
}


/*
 * nginx ends a request's error log line with its context as the client
 * sent it (ngx_http_log_error(): the request line, the Host, the
 * Referer), and a refused request's may hold any byte nginx takes: the
 * escape sequences of a terminal (ESC ] 0 ; sets a window's title, ESC [
 * 2 J clears the screen, and some terminals answer others with text of
 * their own), a bidi control that shows the line in another order.  Our
 * lines about a request are written at "warn" and above (a refusal at
 * "error" by default), where nginx writes its own refusal of a malformed
 * request at "info", so any client, one the policy does not know too,
 * would have them on an operator's terminal.  Every line of the modules'
 * at run time is written here (ngx_http_airlock_log_error()), through a
 * copy of its log whose handler writes the context with each such byte
 * as \xHH, as nginx's access log writes them; nginx's own lines are left
 * as they are.
 *
 * The copy is made for the line, on the stack: nothing is kept per
 * request, and a request that logs nothing pays nothing.  A copy kept
 * from earlier would write where the log pointed then: the location's
 * error_log and level follow the request (ngx_set_connection_log()), the
 * scrubbing writer is set when the route is known
 * (ngx_http_airlock_scrub_log()), the action changes with each step.
 */

void ngx_cdecl
ngx_http_airlock_log_error_core(ngx_uint_t level, ngx_log_t *log,
    ngx_err_t err, const char *fmt, ...)
{
    u_char                    *p;
    va_list                    args;
    ngx_http_airlock_shown_t   shown;
    u_char                     msg[NGX_MAX_ERROR_STR];

    if (log->log_level < level) {
        return;
    }

    va_start(args, fmt);
    p = ngx_vslprintf(msg, msg + sizeof(msg), fmt, args);
    va_end(args);

    shown.log = *log;
    shown.handler = log->handler;

    if (log->handler != NULL) {
        shown.log.handler = ngx_http_airlock_shown_context;
    }

    ngx_log_error(level, &shown.log, err, "%*s", (size_t) (p - msg), msg);

    log->disk_full_time = shown.log.disk_full_time;
}


static u_char *
ngx_http_airlock_shown_context(ngx_log_t *log, u_char *buf, size_t len)
{
    u_char                    *last;
    ngx_http_airlock_shown_t  *shown;
    u_char                     ctx[NGX_MAX_ERROR_STR];

    shown = (ngx_http_airlock_shown_t *) log;

    last = shown->handler(log, ctx, ngx_min(len, sizeof(ctx)));

    return ngx_http_airlock_log_escape(buf, buf + len, ctx, last - ctx);
}


/*
 * Bytes from outside (a client's, an upstream's) for a line of the error
 * log, as its context is written, into the pool: at most max bytes, cut
 * where an escape would not fit.
 */

ngx_int_t
ngx_http_airlock_log_str(ngx_pool_t *pool, ngx_str_t *dst, ngx_str_t *src,
    size_t max)
{
    u_char  *p;
    size_t   n;

    n = (src->len < max / 4) ? src->len * 4 : max;

    p = ngx_pnalloc(pool, n);
    if (p == NULL) {
        return NGX_ERROR;
    }

    dst->len = ngx_http_airlock_log_escape(p, p + n, src->data, src->len) - p;
    dst->data = p;

    return NGX_OK;
}


/*
 * Each control byte, byte outside ASCII and backslash as \xHH.  Cut where
 * end leaves no room, never within an escape; returns where it stopped.
 */

static u_char *
ngx_http_airlock_log_escape(u_char *dst, u_char *end, u_char *src,
    size_t len)
{
    u_char      *last;
    ngx_uint_t   c;

    static u_char  hex[] = "0123456789ABCDEF";

    for (last = src + len; src < last; src++) {
        c = *src;

        if (c >= 0x20 && c < 0x7f && c != '\\') {
            if (dst == end) {
                break;
            }

            *dst++ = (u_char) c;
            continue;
        }

        if (end - dst < 4) {
            break;
        }

        *dst++ = '\\';
        *dst++ = 'x';
        *dst++ = hex[c >> 4];
        *dst++ = hex[c & 0x0f];
    }

    return dst;
}


/* the deny log's line, or with journal the journal's */

static void
ngx_http_airlock_deny_line(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_str_t *id, const char *detail, size_t dlen, ngx_uint_t journal,
    ngx_http_airlock_line_t *l)
{
    const char  *reason;

    reason = al_reason_name(ctx->reason);

    ngx_http_airlock_line_init(l);

    if (journal) {
        ngx_http_airlock_line_str(l, "type", (u_char *) "deny", 4, 4);
        ngx_http_airlock_line_time(l, "time", ngx_http_airlock_wall_ms());

    } else {
        ngx_http_airlock_line_str(l, "time", ngx_cached_http_log_iso8601.data,
                                  ngx_cached_http_log_iso8601.len,
                                  ngx_cached_http_log_iso8601.len);
    }

    ngx_http_airlock_line_str(l, "request_id", id->data, id->len,
                              NGX_HTTP_AIRLOCK_METHOD_MAX);

    ngx_http_airlock_line_str(l, "client",
                              ctx->client ? (u_char *) ctx->client->name.data
                                          : NULL,
                              ctx->client ? ctx->client->name.len : 0,
                              NGX_HTTP_AIRLOCK_PATH_MAX);

    ngx_http_airlock_line_str(l, "method", r->method_name.data,
                              r->method_name.len,
                              NGX_HTTP_AIRLOCK_METHOD_MAX);

    ngx_http_airlock_line_str(l, "path", r->unparsed_uri.data,
                              r->unparsed_uri.len, NGX_HTTP_AIRLOCK_PATH_MAX);

    ngx_http_airlock_line_str(l, "route",
                              ctx->route ? (u_char *) ctx->route->name.data
                                         : NULL,
                              ctx->route ? ctx->route->name.len : 0,
                              NGX_HTTP_AIRLOCK_PATH_MAX);

    ngx_http_airlock_line_str(l, "reason", (u_char *) reason,
                              ngx_strlen(reason), NGX_HTTP_AIRLOCK_PATH_MAX);

    ngx_http_airlock_line_str(l, "detail", (u_char *) detail, dlen,
                              AL_DETAIL_MAX);
}


/*
 * An alert: one line in the journal, one warning in the error log.  Its
 * id is the MD5 of the kind and the request id: unique per alert, and the
 * same each time the line is read.
 */

void
ngx_http_airlock_log_alert(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_http_airlock_alert_t *alert)
{
    u_char                        *peer_end;
    ngx_str_t                      id, client;
    ngx_md5_t                      md5;
    ngx_uint_t                     quarantine;
    ngx_msec_t                     now;
    const char                    *kind, *reason;
    ngx_http_airlock_line_t        line;
    ngx_http_airlock_main_conf_t  *amcf;
    u_char                         hash[16], hex[32];
    u_char                         peer[NGX_SOCKADDR_STRLEN];

    quarantine = (alert->kind == NGX_HTTP_AIRLOCK_ALERT_QUARANTINE);
    kind = quarantine ? "quarantine" : "deny_threshold";
    reason = al_reason_name(ctx->reason);

    if (ngx_http_airlock_request_id(r, &id) != NGX_OK) {
        ngx_str_set(&id, "-");
    }

    ngx_md5_init(&md5);
    ngx_md5_update(&md5, kind, ngx_strlen(kind));
    ngx_md5_update(&md5, ":", 1);
    ngx_md5_update(&md5, id.data, id.len);
    ngx_md5_final(hash, &md5);

    ngx_hex_dump(hex, hash, 16);

    if (ctx->client != NULL) {
        client.data = (u_char *) ctx->client->name.data;
        client.len = ctx->client->name.len;
        peer_end = peer;

    } else {
        ngx_str_set(&client, "-");
        peer_end = ngx_http_airlock_peer_text(r, ctx, peer,
                                              peer + sizeof(peer));
    }

    ngx_http_airlock_log_error(NGX_LOG_WARN, r->connection->log, 0,
                               "airlock: alert \"%s\", client \"%V\"%s%*s%s, "
                               "reason \"%s\", %ui denials in %uis, id \"%*s\"",
                               kind, &client,
                               (peer_end > peer) ? " peer \"" : "",
                               (size_t) (peer_end - peer), peer,
                               (peer_end > peer) ? "\"" : "",
                               reason, alert->count, alert->window,
                               (size_t) 32, hex);

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    if (amcf->journal == NULL) {
        return;
    }

    now = ngx_http_airlock_wall_ms();

    ngx_http_airlock_line_init(&line);

    ngx_http_airlock_line_str(&line, "type", (u_char *) "alert", 5, 5);
    ngx_http_airlock_line_str(&line, "id", hex, 32, 32);
    ngx_http_airlock_line_time(&line, "time", now);
    ngx_http_airlock_line_str(&line, "kind", (u_char *) kind,
                              ngx_strlen(kind), NGX_HTTP_AIRLOCK_PATH_MAX);
    ngx_http_airlock_line_str(&line, "severity",
                              (u_char *) (quarantine ? "critical"
                                                     : "warning"),
                              quarantine ? 8 : 7, 8);

    ngx_http_airlock_line_str(&line, "client",
                              ctx->client ? client.data : NULL, client.len,
                              NGX_HTTP_AIRLOCK_PATH_MAX);

    ngx_http_airlock_line_str(&line, "reason", (u_char *) reason,
                              ngx_strlen(reason), NGX_HTTP_AIRLOCK_PATH_MAX);

    ngx_http_airlock_line_str(&line, "route",
                              ctx->route ? (u_char *) ctx->route->name.data
                                         : NULL,
                              ctx->route ? ctx->route->name.len : 0,
                              NGX_HTTP_AIRLOCK_PATH_MAX);

    ngx_http_airlock_line_uint(&line, "count", alert->count);
    ngx_http_airlock_line_uint(&line, "window", alert->window);

    /* "GET /x": the request that crossed the threshold */

    if (ngx_http_airlock_line_key(&line, "sample")) {
        *line.pos++ = '"';
        ngx_http_airlock_line_esc(&line, r->method_name.data,
                                  r->method_name.len,
                                  NGX_HTTP_AIRLOCK_METHOD_MAX);
        ngx_http_airlock_line_esc(&line, (u_char *) " ", 1, 1);
        ngx_http_airlock_line_esc(&line, r->unparsed_uri.data,
                                  r->unparsed_uri.len,
                                  NGX_HTTP_AIRLOCK_PATH_MAX);
        *line.pos++ = '"';
    }

    if (quarantine) {
        ngx_http_airlock_line_time(&line, "quarantine_until",
                                   now + alert->left);
    }

    ngx_http_airlock_line_str(&line, "request_id", id.data, id.len,
                              NGX_HTTP_AIRLOCK_METHOD_MAX);

    if (ctx->client == NULL) {
        ngx_http_airlock_line_str(&line, "peer", peer, peer_end - peer,
                                  sizeof(peer));
    }

    ngx_http_airlock_line_write(&line, amcf->journal, 1, r->connection->log);
}


/*
 * airlock_zone was made anew (nginx started, or a reload renamed or
 * resized it): the quarantines of the zone before are lifted, and
 * alertd resolves their alerts.  One line, by the first worker of the
 * cycle that made it:
 *
 *   {"type":"zone","time":"2026-11-30T03:40:00.123Z","zone":"airlock",
 *    "state":"new"}
 */

void
ngx_http_airlock_log_zone(ngx_cycle_t *cycle)
{
    ngx_http_airlock_line_t        line;
    ngx_http_airlock_main_conf_t  *amcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return;
    }

    amcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_airlock_module);

    if (amcf == NULL || amcf->zone == NULL || amcf->journal == NULL
        || !ngx_http_airlock_zone_made(amcf->zone))
    {
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "airlock: airlock_zone \"%V\" is new: no client is "
                  "quarantined", &amcf->zone->shm.name);

    ngx_http_airlock_line_init(&line);

    ngx_http_airlock_line_str(&line, "type", (u_char *) "zone", 4, 4);
    ngx_http_airlock_line_time(&line, "time", ngx_http_airlock_wall_ms());
    ngx_http_airlock_line_str(&line, "zone", amcf->zone->shm.name.data,
                              amcf->zone->shm.name.len,
                              NGX_HTTP_AIRLOCK_PATH_MAX);
    ngx_http_airlock_line_str(&line, "state", (u_char *) "new", 3, 3);

    ngx_http_airlock_line_write(&line, amcf->journal, 1, cycle->log);
}


/* "2026-11-30T03:40:00.123Z" of a wall clock time in ms */

u_char *
ngx_http_airlock_time(u_char *p, ngx_msec_t ms)
{
    ngx_tm_t  tm;

    ngx_gmtime((time_t) (ms / 1000), &tm);

    return ngx_sprintf(p, "%4d-%02d-%02dT%02d:%02d:%02d.%03MZ",
                       tm.ngx_tm_year, tm.ngx_tm_mon, tm.ngx_tm_mday,
                       tm.ngx_tm_hour, tm.ngx_tm_min, tm.ngx_tm_sec,
                       ms % 1000);
}


/* splitmix64's finalizer: a bijection of 64-bit words */

static uint64_t
ngx_http_airlock_rid_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;

    return x ^ (x >> 31);
}


static ngx_msec_t
ngx_http_airlock_wall_ms(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (ngx_msec_t) tp->sec * 1000 + tp->msec;
}


static void
ngx_http_airlock_line_init(ngx_http_airlock_line_t *l)
{
    l->pos = l->buf;
    l->last = l->buf + NGX_HTTP_AIRLOCK_LINE_MAX - 2;
    l->fields = 0;
    l->full = 0;

    *l->pos++ = '{';
}


/*
 * Starts a field, '"key":'.  A field starts only with room for at least
 * a number, a time or a cut string's quotes and mark; past that point
 * fields are left out, so the line stays valid JSON.
 */

static ngx_uint_t
ngx_http_airlock_line_key(ngx_http_airlock_line_t *l, const char *key)
{
    size_t  len;

    len = ngx_strlen(key);

    if (l->full
        || (size_t) (l->last - l->pos) < len + NGX_HTTP_AIRLOCK_FIELD_MIN)
    {
        l->full = 1;
        return 0;
    }

    if (l->fields++) {
        *l->pos++ = ',';
    }

    *l->pos++ = '"';
    l->pos = ngx_cpymem(l->pos, key, len);
    *l->pos++ = '"';
    *l->pos++ = ':';

    return 1;
}


/* a JSON string, or null when s is NULL */

static void
ngx_http_airlock_line_str(ngx_http_airlock_line_t *l, const char *key,
    u_char *s, size_t len, size_t max)
{
    if (!ngx_http_airlock_line_key(l, key)) {
        return;
    }

    if (s == NULL) {
        l->pos = ngx_cpymem(l->pos, "null", 4);
        return;
    }

    *l->pos++ = '"';
    ngx_http_airlock_line_esc(l, s, len, max);
    *l->pos++ = '"';
}


/*
 * The escaped bytes of s (al_json_escape()), cut at max bytes, or earlier
 * where the line ends; a cut string ends with the mark.  A cut never
 * splits a UTF-8 sequence.  What is left always holds the mark and the
 * closing quote.
 */

static void
ngx_http_airlock_line_esc(ngx_http_airlock_line_t *l, u_char *s, size_t len,
    size_t max)
{
    size_t      room, i, k;
    ngx_uint_t  cut;

    if (l->full) {
        return;
    }

    cut = 0;

    if (len > max) {
        len = al_utf8_cut((char *) s, len, max);
        cut = 1;
    }

    room = l->last - l->pos;

    if (room >= len * 6 + sizeof(NGX_HTTP_AIRLOCK_CUT) - 1 + 1) {
        l->pos = (u_char *) al_json_escape((char *) l->pos, (char *) s, len);

    } else {

        /* a character at a time: a valid UTF-8 sequence, or one byte */

        for (i = 0; i < len; i += k) {
            if ((size_t) (l->last - l->pos)
                < 6 + sizeof(NGX_HTTP_AIRLOCK_CUT) - 1 + 1)
            {
                cut = 1;
                l->full = 1;
                break;
            }

            k = (s[i] >= 0x80) ? al_utf8_len(&s[i], len - i) : 0;

            if (k == 0) {
                k = 1;
            }

            l->pos = (u_char *) al_json_escape((char *) l->pos,
                                               (char *) &s[i], k);
        }
    }

    if (cut) {
        l->pos = ngx_cpymem(l->pos, NGX_HTTP_AIRLOCK_CUT,
                            sizeof(NGX_HTTP_AIRLOCK_CUT) - 1);
    }
}


static void
ngx_http_airlock_line_uint(ngx_http_airlock_line_t *l, const char *key,
    ngx_uint_t n)
{
    if (ngx_http_airlock_line_key(l, key)) {
        l->pos = ngx_sprintf(l->pos, "%ui", n);
    }
}


static void
ngx_http_airlock_line_time(ngx_http_airlock_line_t *l, const char *key,
    ngx_msec_t ms)
{
    if (ngx_http_airlock_line_key(l, key)) {
        *l->pos++ = '"';
        l->pos = ngx_http_airlock_time(l->pos, ms);
        *l->pos++ = '"';
    }
}


/* a line to its file: through the file's buffer unless now is set */

static void
ngx_http_airlock_line_write(ngx_http_airlock_line_t *l, ngx_open_file_t *file,
    ngx_uint_t now, ngx_log_t *log)
{
    size_t  len, n;

    *l->pos++ = '}';
    *l->pos++ = LF;

    len = l->pos - l->buf;

    n = 0;

    if (now && file->flush == ngx_http_airlock_reopen
        && ngx_http_airlock_flush(file, log) == 0)
    {
        n = ngx_http_airlock_write(file, l->buf, len, log);

        if (n == len) {
            return;
        }
    }

    /* not buffered, or what the file would not take: kept, in order */

    ngx_http_airlock_file_write(file, l->buf + n, len - n, log);
}


/* a line to a file opened with ngx_http_airlock_open_file(), buffered or
 * not */

void
ngx_http_airlock_file_write(ngx_open_file_t *file, u_char *line, size_t len,
    ngx_log_t *log)
{
    ngx_http_airlock_buf_t     *b;
    ngx_http_airlock_region_t  *r;

    b = (file->flush == ngx_http_airlock_reopen) ? file->data : NULL;

    if (b == NULL) {
        if (ngx_http_airlock_write(file, line, len, log) != len) {
            ngx_http_airlock_log_error(NGX_LOG_ALERT, log, 0,
                                       "airlock: a line to \"%V\" is lost",
                                       &file->name);
        }

        return;
    }

    r = b->own;

    if (r != NULL) {
        if (len > b->size - r->len) {
            (void) ngx_http_airlock_flush(file, log);

            if (len > b->size - r->len) {
                ngx_http_airlock_write_held(file, b, line, len, log);
                return;
            }
        }

        ngx_memcpy(r->data + r->len, line, len);

    } else {
        if (len > (size_t) (b->last - b->pos)) {
            (void) ngx_http_airlock_flush(file, log);

            if (len > (size_t) (b->last - b->pos)) {
                ngx_http_airlock_write_held(file, b, line, len, log);
                return;
            }
        }

        ngx_memcpy(b->pos, line, len);
    }

    ngx_http_airlock_file_commit(file, len);
}


/*
 * Where a line of at most max bytes can be written in the file's buffer
 * as it is, or NULL (no buffer, or not that much room left): the caller
 * then writes it elsewhere and hands it to ngx_http_airlock_file_write().
 * What is written there goes out once ngx_http_airlock_file_commit()
 * is told its length, as file_write()'s copy would.
 */

u_char *
ngx_http_airlock_file_room(ngx_open_file_t *file, size_t max)
{
    ngx_http_airlock_buf_t     *b;
    ngx_http_airlock_region_t  *r;

    b = (file->flush == ngx_http_airlock_reopen) ? file->data : NULL;

    if (b == NULL) {
        return NULL;
    }

    r = b->own;

    if (r != NULL) {
        return (max <= b->size - r->len) ? r->data + r->len : NULL;
    }

    return (max <= (size_t) (b->last - b->pos)) ? b->pos : NULL;
}


void
ngx_http_airlock_file_commit(ngx_open_file_t *file, size_t len)
{
    ngx_http_airlock_buf_t     *b;
    ngx_http_airlock_region_t  *r;

    b = file->data;
    r = b->own;

    if (r != NULL) {
        /* the bytes, then the length that covers them */
        ngx_memory_barrier();
        r->len += len;

    } else {
        b->pos += len;
    }

    if (b->flush == 0) {
        ngx_post_event(b->event, &ngx_posted_events);

    } else if (!b->event->timer_set) {
        ngx_add_timer(b->event, b->flush);
    }
}


/*
 * A line that does not fit in the file's buffer, even written: it is
 * written at once if the buffer holds nothing, so the file keeps the
 * order of the lines; else (the file cannot be written, and its buffer
 * is full) it is lost, and the error log says so.
 */

static void
ngx_http_airlock_write_held(ngx_open_file_t *file, ngx_http_airlock_buf_t *b,
    u_char *line, size_t len, ngx_log_t *log)
{
    if (b->pos == b->start && (b->own == NULL || b->own->len == 0)
        && ngx_http_airlock_write(file, line, len, log) == len)
    {
        return;
    }

    ngx_http_airlock_log_error(NGX_LOG_ALERT, log, 0,
                               "airlock: a line to \"%V\" is lost: the file "
                               "cannot be written and its buffer is full",
                               &file->name);
}


/*
 * Writes buf, whole lines, to the file.  Returns how many of its bytes
 * are in the file: all, or, when the file could not take them all (the
 * disk full, the file size limit), the lines written whole; the caller
 * keeps the rest and writes it later.  A write() that stops in the
 * middle of a line leaves the part written at the end of the file, and
 * the file's end (ngx_http_airlock_end_t) says so at once: the next
 * write() to the file, this process's or another's, starts with a
 * newline.  The part is then a line of its own that does not parse, and
 * the line is written again whole (unless the part lacks only the
 * newline); no other line is glued to the part or cut.  The rest of the
 * line is not written after the part: a line another worker appended
 * meanwhile would be between them.  Nor is the part taken back off the
 * file (ftruncate): whatever another worker appended since would go
 * with it.
 */

static size_t
ngx_http_airlock_write(ngx_open_file_t *file, u_char *buf, size_t len,
    ngx_log_t *log)
{
    u_char                  *p;
    size_t                   done, whole, size, most;
    ssize_t                  n;
    ngx_err_t                err;
    ngx_uint_t               mend;
    struct iovec             iov[2];
    ngx_atomic_uint_t        cut;
    ngx_http_airlock_buf_t  *b;
    ngx_http_airlock_end_t  *end;

    /*
     * To a pipe, whole lines of at most PIPE_BUF bytes a write(), the
     * newline before them included: more than a line only comes from a
     * buffer, which knows what the file is (ngx_http_airlock_file_kind()).
     * 0: no limit.
     */

    most = 0;

    if (len >= NGX_HTTP_AIRLOCK_PIPE_BUF
        && file->flush == ngx_http_airlock_reopen)
    {
        b = file->data;

        if (b->pipe) {
            most = NGX_HTTP_AIRLOCK_PIPE_BUF;
        }
    }

    end = ngx_http_airlock_end(file);

    cut = 0;
    mend = 0;

    if (end != NULL) {
        cut = end->cut;
        mend = (cut != end->mended);
    }

    n = 0;
    done = 0;

    while (done < len) {
        size = len - done;

        if (most != 0 && size + mend > most) {
            for (p = buf + done + most - mend;
                 p > buf + done && p[-1] != LF;
                 p--)
            {
                /* void */
            }

            size = (p > buf + done) ? (size_t) (p - (buf + done))
                                    : most - mend;
        }

        if (mend) {
            /* the file may end in the middle of a line: a newline first */

            iov[0].iov_base = (void *) "\n";
            iov[0].iov_len = 1;
            iov[1].iov_base = (void *) (buf + done);
            iov[1].iov_len = size;

            n = writev(file->fd, iov, 2);

            if (n > 0) {
                mend = 0;
                ngx_http_airlock_mended(end, cut);
                n--;
            }

        } else {
            n = ngx_write_fd(file->fd, buf + done, size);
        }

        if (n >= 0 && (size_t) n == size) {
            done += n;
            continue;
        }

        if (n > 0) {
            /* the file took part: said below */
            done += n;
            break;
        }

        err = (n == -1) ? ngx_errno : 0;

        if (err == NGX_EINTR) {
            continue;
        }

        ngx_http_airlock_log_error(NGX_LOG_ALERT, log, err,
                                   ngx_write_fd_n " to \"%s\" failed: %uz of "
                                   "%uz bytes written",
                                   file->name.data, done, len);
        break;
    }

    if (done == len) {
        return len;
    }

    for (p = buf + done; p > buf && p[-1] != LF; p--) { /* void */ }

    whole = p - buf;

    if (whole == done || end == NULL) {
        if (n > 0) {
            ngx_http_airlock_log_error(NGX_LOG_ALERT, log, 0,
                                       "airlock: a write() to \"%V\" stopped "
                                       "after %uz of %uz bytes: the rest waits",
                                       &file->name, done, len);
        }

        return whole;
    }

    (void) ngx_atomic_fetch_add(&end->cut, 1);

    ngx_http_airlock_log_error(NGX_LOG_ALERT, log, 0,
                               "airlock: a write() to \"%V\" stopped in the "
                               "middle of a line, after %uz of %uz bytes: the "
                               "next starts on a line of its own", &file->name,
                               done, len);

    /*
     * All of the line but its newline: the newline to come ends it, and
     * the line is written (again, it would be there twice).
     */

    return (buf[done] == LF) ? done + 1 : whole;
}


/*
 * The file's end: in its buffer, or else looked for among the files of
 * the cycle (a file without a buffer writes a line at a time).
 */

static ngx_http_airlock_end_t *
ngx_http_airlock_end(ngx_open_file_t *file)
{
    ngx_uint_t                     i;
    ngx_http_airlock_buf_t        *b;
    ngx_http_airlock_file_end_t   *fe;
    ngx_http_airlock_main_conf_t  *amcf;

    if (file->flush == ngx_http_airlock_reopen) {
        b = file->data;
        return b->end->data;
    }

    amcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_airlock_module);

    if (amcf == NULL || amcf->ends == NULL) {
        return NULL;
    }

    fe = amcf->ends->elts;

    for (i = 0; i < amcf->ends->nelts; i++) {
        if (fe[i].file == file) {
            return fe[i].zone->data;
        }
    }

    return NULL;
}


/*
 * A newline is in the file after the lines cut short up to cut: mended
 * becomes cut, unless another process has made it that or more.  A line
 * cut after cut was read keeps the two apart, for the next write().
 */

static void
ngx_http_airlock_mended(ngx_http_airlock_end_t *end, ngx_atomic_uint_t cut)
{
    ngx_atomic_uint_t  m;

    for ( ;; ) {
        m = end->mended;

        if ((ngx_atomic_int_t) (cut - m) <= 0
            || ngx_atomic_cmp_set(&end->mended, m, cut))
        {
            return;
        }
    }
}


/*
 * Writes what the buffer holds: the process's (an access_log's lines),
 * then the region's.  Returns how many bytes it still holds, the file
 * could not take them; they are written by the next flush, the flush
 * timer's at the latest (ngx_http_airlock_flush_handler()).
 */

static size_t
ngx_http_airlock_flush(ngx_open_file_t *file, ngx_log_t *log)
{
    size_t                   n, held;
    ngx_http_airlock_buf_t  *b;

    b = file->data;

    if (b->pos > b->start) {
        held = b->pos - b->start;
        n = ngx_http_airlock_write(file, b->start, held, log);

        if (n < held) {
            ngx_memmove(b->start, b->start + n, held - n);
        }

        b->pos -= n;
    }

    if (b->own != NULL && b->own->len > 0 && b->pos == b->start) {
        n = ngx_http_airlock_write(file, b->own->data, b->own->len, log);
        ngx_http_airlock_region_drop(b->own, n);
    }

    held = (b->pos - b->start) + ((b->own != NULL) ? b->own->len : 0);

    /* a timer set stays while lines are held: it tries again */

    if (held == 0 && b->event->timer_set) {
        ngx_del_timer(b->event);
    }

    return held;
}


/*
 * The first n bytes of a region are written: the rest is moved to its
 * start.  The length is 0 while it moves, so a process killed then loses
 * the rest rather than have it written twice or cut.
 */

static void
ngx_http_airlock_region_drop(ngx_http_airlock_region_t *r, size_t n)
{
    size_t  len;

    len = r->len;

    if (n == 0) {
        return;
    }

    r->len = 0;

    if (n < len) {
        ngx_memory_barrier();
        ngx_memmove(r->data, r->data + n, len - n);
        ngx_memory_barrier();
        r->len = len - n;
    }
}


/* nginx's call before a reopen (and at exit): the buffer, then the file */

static void
ngx_http_airlock_reopen(ngx_open_file_t *file, ngx_log_t *log)
{
    ngx_http_airlock_flush(file, log);
    ngx_http_airlock_create(file, log);
    ngx_http_airlock_file_kind(file, file->data);
}


static void
ngx_http_airlock_flush_handler(ngx_event_t *ev)
{
    ngx_open_file_t         *file;
    ngx_http_airlock_buf_t  *b;

    file = ev->data;
    b = file->data;

    /* what the file would not take is tried again in a second */

    if (ngx_http_airlock_flush(file, ev->log) > 0 && !ev->timer_set) {
        ngx_add_timer(ev, 1000);
    }

    if (b->own != NULL && ngx_current_msec - b->scanned >= 1000) {
        ngx_http_airlock_recover(file, b, 0, ev->log);
    }
}


/*
 * $request_id, 32 hex digits as nginx gives it, but cheaper: nginx draws
 * 16 bytes from OpenSSL's RAND_bytes() for every request, a few per cent
 * of a gateway call.  When the variable has not been read yet in this
 * request, it is filled here from a per-worker generator: two words
 * seeded once per process, a counter, each half mixed by splitmix64 (a
 * bijection, so ids of one worker never repeat; the random seeds keep
 * workers apart).  Ids are unique, not secret.  The state is per process
 * and needs no configuration, so a reload (new workers) is no concern.
 */

static struct {
    uint64_t    seed[2];
    uint64_t    count;
    ngx_uint_t  seeded;
} ngx_http_airlock_rid;


ngx_int_t
ngx_http_airlock_request_id(ngx_http_request_t *r, ngx_str_t *id)
{
    u_char                        *p;
    ngx_http_variable_value_t     *v;
    ngx_http_airlock_main_conf_t  *amcf;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    v = &r->variables[amcf->request_id_index];

    if (!v->valid && !v->not_found) {

        if (!ngx_http_airlock_rid.seeded) {
#if (NGX_OPENSSL)
            if (RAND_bytes((u_char *) ngx_http_airlock_rid.seed,
                           sizeof(ngx_http_airlock_rid.seed)) != 1)
#endif
            {
                ngx_http_airlock_rid.seed[0] =
                    ((uint64_t) ngx_random() << 32) ^ (uint64_t) ngx_random()
                    ^ ((uint64_t) ngx_pid << 16) ^ (uint64_t) ngx_time();
                ngx_http_airlock_rid.seed[1] =
                    ((uint64_t) ngx_random() << 32) ^ (uint64_t) ngx_random();
            }

            ngx_http_airlock_rid.seeded = 1;
        }

        p = ngx_pnalloc(r->pool, 32);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_http_airlock_rid.count++;

        al_hex64((char *) p,
                 ngx_http_airlock_rid_mix(ngx_http_airlock_rid.seed[0]
                                          + ngx_http_airlock_rid.count));
        al_hex64((char *) p + 16,
                 ngx_http_airlock_rid_mix(ngx_http_airlock_rid.seed[1]
                                          ^ ngx_http_airlock_rid.count));

        v->data = p;
        v->len = 32;
        v->valid = 1;
        v->no_cacheable = 0;
        v->not_found = 0;
    }

    /*
     * Valid or not found: what ngx_http_get_indexed_variable() would
     * return for it, without the call.
     */

    if (v->not_found) {
        return NGX_ERROR;
    }

    id->data = v->data;
    id->len = v->len;

    return NGX_OK;
}
