/*
 * airlock-alertd: delivers Airlock's alerts to the operator's systems.
 *
 * The nginx module never waits on a webhook: when a client crosses a deny
 * or quarantine threshold it appends an "alert" line to its journal and
 * goes on.  This daemon follows that journal (ad_journal.c), folds
 * repeats (ad_group.c), queues every alert durably for every sink in the
 * policy's alerts.sinks (ad_outbox.c) and delivers it: signed Standard
 * Webhooks POSTs and Alertmanager API v2 posts, retried with backoff
 * until the sink takes them (ad_deliver.c).  A sink's outbox is bounded
 * (--outbox-max): what a full one does not take is counted, and the
 * count sent to the sink when it has room again.
 *
 * Nothing is lost, whatever stops us when: an alert's outbox file is on
 * disk before the journal offset past its line is saved, and it is
 * removed only after a 2xx.  A crash can make us send an alert twice,
 * always with the same webhook-id, never not at all.
 *
 * One thread, one loop: curl_multi_poll() waits on the transfers, the
 * inotify fd and a signalfd at once, with a timeout that is the nearest
 * of the next retry, the end of a group window and the journal poll.
 * A journal line is read when its write wakes us (inotify); the poll,
 * every --poll-interval, only catches what an event did not tell.
 *
 *   airlock-alertd --policy FILE [--keyring FILE] --journal FILE --state DIR
 *
 * See --help, and docs/alerts.md for the payloads, the state directory
 * and the systemd unit.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "alertd.h"


#define AD_SAVE_LAZY     5000       /* ms an offset past deny lines only
                                       may wait before it is saved */
#define AD_ROUND_LINES   4096       /* journal lines read in one round of
                                       the loop */
#define AD_ROUND_ALERTS  64         /* alerts queued in one round (each a
                                       file written and synced per
                                       sink) */
#define AD_REPEAT_MIN    1000
#define AD_REPEAT_MAX    (24 * 3600 * 1000)
#define AD_POLL_MIN      1000
#define AD_POLL_MAX      (3600 * 1000)
#define AD_GRACE_MIN     1000
#define AD_GRACE_MAX     (3600 * 1000)
#define AD_ATTEMPT_MIN   1000
#define AD_ATTEMPT_MAX   (3600 * 1000)
#define AD_ERR_MAX       (AL_ERR_MAX + 512)


typedef struct {
    char             policy[PATH_MAX];
    char             keyring[PATH_MAX];
    char             journal_path[PATH_MAX];
    char             state_path[PATH_MAX];
    int64_t          repeat_ms;
    int64_t          poll_ms;
    int64_t          grace_ms;
    int64_t          attempt_ms;
    size_t           outbox_max;
    unsigned         once:1;
    unsigned         check:1;
    unsigned         foreground:1;
    unsigned         verbose:1;

    ad_state_t       state;
    ad_outbox_t      outbox;
    ad_groups_t      groups;
    ad_lifts_t       lifts;
    ad_journal_t    *journal;
    ad_deliver_t     deliver;
    int              sfd;

    unsigned         changed:1;         /* alerts or groups: save now */
    unsigned         moved:1;           /* offset moved past other lines */
    unsigned         stopping:1;
    unsigned         more:1;            /* the last round ended with work
                                           left: the next one at once */
    size_t           round_lines;       /* read in this round */
    size_t           round_alerts;      /* emitted in this round */
    int64_t          wall_ms;           /* the wall clock of this round
                                           of ad_work() */
    int64_t          boot_ms;           /* the boot clock then */
    int64_t          clock_off;         /* wall_ms - boot_ms */
    unsigned         clock_known:1;     /* clock_off is set */
    int64_t          saved_at;          /* monotonic */
    int64_t          blocked_until;     /* monotonic: queueing failed */
    ad_fail_t        sync_fail;         /* syncing the outbox */
    ad_fail_t        save_fail;         /* saving the state */
    int64_t          stop_at;
} ad_ctx_t;


static int ad_options(ad_ctx_t *ctx, int argc, char **argv);
static int64_t ad_stamped(const ad_ctx_t *ctx, int64_t t);
static int ad_duration_option(const char *name, const char *value,
    int64_t min, int64_t max, const char *upto, int64_t *ms);
static void ad_usage(FILE *f);
static int ad_absolute(char *buf, size_t size, const char *path,
    const char *what);
static int ad_count_parse(const char *s, size_t min, size_t max,
    size_t *v);
static int ad_daemonize(int *notify, int *code);
static int ad_init(ad_ctx_t *ctx);
static int ad_check(ad_ctx_t *ctx);
static int ad_load_sinks(ad_ctx_t *ctx, ad_sink_t **sinks, size_t *n,
    char *err, size_t errsize);
static void ad_reload(ad_ctx_t *ctx);
static void ad_sinks_log(const ad_sink_t *sinks, size_t n);
static int ad_loop(ad_ctx_t *ctx);
static void ad_signals(ad_ctx_t *ctx);
static void ad_stop(ad_ctx_t *ctx, const char *why);
static void ad_work(ad_ctx_t *ctx);
static int ad_report(ad_ctx_t *ctx);
static int ad_on_line(void *data, const char *line, size_t len,
    int64_t off, int cut);
static int ad_emit(void *data, const ad_alert_t *a);
static int ad_persist(ad_ctx_t *ctx, int force);
static void ad_cleanup(ad_ctx_t *ctx);
static int ad_timeout(ad_ctx_t *ctx);
static void ad_clock(ad_ctx_t *ctx);
static int ad_exit_status(int errnum);


static const struct option  ad_long_options[] = {
    { "policy",          required_argument, NULL, 'p' },
    { "keyring",         required_argument, NULL, 'k' },
    { "journal",         required_argument, NULL, 'j' },
    { "state",           required_argument, NULL, 's' },
    { "repeat-interval", required_argument, NULL, 'r' },
    { "poll-interval",   required_argument, NULL, 'i' },
    { "rotate-grace",    required_argument, NULL, 'g' },
    { "attempt-timeout", required_argument, NULL, 't' },
    { "outbox-max",      required_argument, NULL, 'm' },
    { "boot-id",         required_argument, NULL, 'b' },
    { "once",            no_argument,       NULL, 'o' },
    { "check",           no_argument,       NULL, 'c' },
    { "foreground",      no_argument,       NULL, 'f' },
    { "verbose",         no_argument,       NULL, 'v' },
    { "help",            no_argument,       NULL, 'h' },
    { "version",         no_argument,       NULL, 'V' },
    { NULL, 0, NULL, 0 }
};


int
main(int argc, char **argv)
{
    int        rc, code, notify;
    ad_ctx_t  *ctx;

    ctx = calloc(1, sizeof(ad_ctx_t));
    if (ctx == NULL) {
        (void) fprintf(stderr, "%s: out of memory\n", AD_NAME);
        return 1;
    }

    ctx->sfd = -1;
    ctx->state.fd = -1;
    ctx->state.lock = -1;
    ctx->outbox.fd = -1;

    rc = ad_options(ctx, argc, argv);
    if (rc >= 0) {
        free(ctx);
        return rc;
    }

    notify = -1;

    if (!ctx->foreground && !ctx->once && !ctx->check) {
        if (ad_daemonize(&notify, &code) != 0) {
            free(ctx);
            return code;
        }
    }

    ad_log_init(ctx->verbose);

    /*
     * The keyring and the sinks' secrets are about to be read: no core
     * file with them in it, and no process of the same user reading
     * this one's memory.
     */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        ad_log(AD_LOG_WARN, "cannot make the process not dumpable: %s",
               strerror(errno));
    }

    if (ctx->check) {
        rc = ad_check(ctx);
        free(ctx);
        return rc;
    }

    rc = ad_init(ctx);

    if (notify != -1) {
        /* the parent waits for this byte, or for our exit status */
        if (rc == 0 && write(notify, "1", 1) != 1) {
            ad_log(AD_LOG_ERR, "cannot tell the starting process we run: "
                   "%s", strerror(errno));
            rc = 1;
        }
        (void) close(notify);
    }

    if (rc == 0) {
        rc = ad_loop(ctx);
    }

    ad_cleanup(ctx);
    free(ctx);

    return rc;
}


/* returns the exit status when we are done, -1 to run */

static int
ad_options(ad_ctx_t *ctx, int argc, char **argv)
{
    int          c;
    const char  *policy, *keyring, *journal, *state, *repeat, *poll;
    const char  *grace, *attempt, *max, *boot;

    policy = NULL;
    keyring = NULL;
    journal = NULL;
    state = NULL;
    repeat = "5m";
    poll = "1s";
    grace = "5s";                       /* AD_ROTATE_GRACE */
    attempt = "10s";                    /* AD_ATTEMPT_TIMEOUT */
    max = NULL;
    boot = NULL;

    opterr = 0;

    for ( ;; ) {
        c = getopt_long(argc, argv, ":vh", ad_long_options, NULL);
        if (c == -1) {
            break;
        }

        switch (c) {
        case 'p':
            policy = optarg;
            break;
        case 'k':
            keyring = optarg;
            break;
        case 'j':
            journal = optarg;
            break;
        case 's':
            state = optarg;
            break;
        case 'r':
            repeat = optarg;
            break;
        case 'i':
            poll = optarg;
            break;
        case 'g':
            grace = optarg;
            break;
        case 't':
            attempt = optarg;
            break;
        case 'm':
            max = optarg;
            break;
        case 'b':
            boot = optarg;
            break;
        case 'o':
            ctx->once = 1;
            break;
        case 'c':
            ctx->check = 1;
            break;
        case 'f':
            ctx->foreground = 1;
            break;
        case 'v':
            ctx->verbose = 1;
            break;
        case 'h':
            ad_usage(stdout);
            return 0;
        case 'V':
            (void) printf("%s %s\n", AD_NAME, AL_VERSION);
            return 0;
        case ':':
            (void) fprintf(stderr, "%s: %s needs a value (see --help)\n",
                           AD_NAME, argv[optind - 1]);
            return 2;
        default:
            (void) fprintf(stderr, "%s: unknown option \"%s\" (see "
                           "--help)\n", AD_NAME, argv[optind - 1]);
            return 2;
        }
    }

    if (optind < argc) {
        (void) fprintf(stderr, "%s: unexpected argument \"%s\" (see "
                       "--help)\n", AD_NAME, argv[optind]);
        return 2;
    }

    /* the keyring only opens sealed secrets: see ad_secret_open() */

    if (policy == NULL
        || (!ctx->check && (journal == NULL || state == NULL)))
    {
        (void) fprintf(stderr, "%s: --%s is required (see --help)\n",
                       AD_NAME, policy == NULL ? "policy"
                                : journal == NULL ? "journal" : "state");
        return 2;
    }

    if (ad_duration_option("repeat-interval", repeat, AD_REPEAT_MIN,
                           AD_REPEAT_MAX, "24h (like 90s, 5m, 1h)",
                           &ctx->repeat_ms) != 0
        || ad_duration_option("poll-interval", poll, AD_POLL_MIN,
                              AD_POLL_MAX, "1h (like 1s, 30s, 5m)",
                              &ctx->poll_ms) != 0
        || ad_duration_option("rotate-grace", grace, AD_GRACE_MIN,
                              AD_GRACE_MAX, "1h (like 5s, 30s, 2m)",
                              &ctx->grace_ms) != 0
        || ad_duration_option("attempt-timeout", attempt, AD_ATTEMPT_MIN,
                              AD_ATTEMPT_MAX, "1h (like 10s, 30s, 2m)",
                              &ctx->attempt_ms) != 0)
    {
        return 2;
    }

    ctx->outbox_max = AD_OUTBOX_DEFAULT;

    if (max != NULL
        && ad_count_parse(max, 1, AD_OUTBOX_LIMIT, &ctx->outbox_max) != 0)
    {
        (void) fprintf(stderr, "%s: --outbox-max \"%s\" is not a number "
                       "of alerts from 1 to %d\n", AD_NAME, max,
                       AD_OUTBOX_LIMIT);
        return 2;
    }

    if (boot != NULL && ad_boot_id_set(boot) != 0) {
        (void) fprintf(stderr, "%s: --boot-id \"%s\" is not a boot id (32 "
                       "hex digits, with dashes or not: systemd's %%b, or "
                       "/proc/sys/kernel/random/boot_id)\n", AD_NAME, boot);
        return 2;
    }

    if (ad_absolute(ctx->policy, sizeof(ctx->policy), policy, "--policy")
        != 0
        || (keyring != NULL
            && ad_absolute(ctx->keyring, sizeof(ctx->keyring), keyring,
                           "--keyring") != 0)
        || (journal != NULL
            && ad_absolute(ctx->journal_path, sizeof(ctx->journal_path),
                           journal, "--journal") != 0)
        || (state != NULL
            && ad_absolute(ctx->state_path, sizeof(ctx->state_path), state,
                           "--state") != 0))
    {
        return 2;
    }

    return -1;
}


/*
 * --NAME VALUE: a duration from min (1s) to max, *ms; else it says so
 * (upto: the largest, with examples) and returns -1.
 */

static int
ad_duration_option(const char *name, const char *value, int64_t min,
    int64_t max, const char *upto, int64_t *ms)
{
    if (ad_duration_parse(value, ms) != 0 || *ms < min || *ms > max) {
        (void) fprintf(stderr, "%s: --%s \"%s\" is not a duration from 1s "
                       "to %s\n", AD_NAME, name, value, upto);
        return -1;
    }

    return 0;
}


static void
ad_usage(FILE *f)
{
    (void) fprintf(f,
"usage: airlock-alertd --policy FILE [--keyring FILE] --journal FILE\n"
"                      --state DIR [--repeat-interval 5m]\n"
"                      [--poll-interval 1s] [--rotate-grace 5s]\n"
"                      [--attempt-timeout 10s] [--outbox-max %d]\n"
"                      [--boot-id ID] [--once] [--foreground] [-v]\n"
"       airlock-alertd --check --policy FILE [--keyring FILE]\n"
"\n"
"Delivers the alerts the Airlock nginx module writes to its journal to\n"
"the sinks in the policy's alerts.sinks: Standard Webhooks (signed with\n"
"the sink's hmac_secret, and while its secret changes with its\n"
"hmac_secret_also too) and Alertmanager (API v2).  Every alert is\n"
"queued on disk before it is sent and retried until the sink takes it;\n"
"what a full queue cannot take is counted and reported.\n"
"\n"
"  --policy FILE           the Airlock policy (alerts.sinks, secrets)\n"
"  --keyring FILE          the appliance private key, to open a sealed\n"
"                          webhook hmac_secret; needed only for one:\n"
"                          a file: secret, Alertmanager or no sink\n"
"                          runs without it\n"
"  --journal FILE          the journal nginx appends deny and alert\n"
"                          lines to\n"
"  --state DIR             read position, open groups and the outbox\n"
"  --repeat-interval DUR   repeats of an alert (same kind, client, or\n"
"                          peer without a client, and reason) within\n"
"                          DUR are sent as one folded alert when DUR\n"
"                          ends; 1s to 24h, default 5m\n"
"  --poll-interval DUR     a line is read as soon as it is written (an\n"
"                          inotify event); every DUR the journal is\n"
"                          also looked at without one, for an event\n"
"                          missed or a file that cannot be watched;\n"
"                          1s to 1h, default 1s\n"
"  --rotate-grace DUR      a rotated journal (renamed, a new file under\n"
"                          its name) is still read for DUR, for the\n"
"                          lines a process writes before it reopens\n"
"                          its log; 1s to 1h, default 5s\n"
"  --attempt-timeout DUR   how long one attempt to deliver an alert\n"
"                          may take, connecting included; one without\n"
"                          a 2xx status by then has failed and is\n"
"                          retried; 1s to 1h, default 10s\n"
"  --outbox-max N          the most alerts queued for one sink: 1 to\n"
"                          %d, default %d; each takes a file\n"
"                          and about 2 KiB of memory.  A full sink\n"
"                          keeps its oldest alerts, folds a queued\n"
"                          group's repeats into it and counts the other\n"
"                          new alerts; the count is sent to the sink\n"
"                          first once it has room again.  An\n"
"                          unidentified peer's alert is queued only\n"
"                          while the sink holds fewer than half of N\n"
"                          (rounded up): the rest is kept for the\n"
"                          clients' alerts, a quarantine among them\n"
"  --boot-id ID            this boot's id, where /proc/sys cannot be\n"
"                          read (systemd's ProcSubset=pid: give %%b);\n"
"                          by default /proc/sys/kernel/random/boot_id.\n"
"                          A step of the wall clock while alertd is\n"
"                          stopped is told within one boot only\n"
"  --once                  read the journal to its end, try each queued\n"
"                          alert once and exit: 0 if none is left, 1 if\n"
"                          some are (they stay queued) or if lines of\n"
"                          the journal were lost or left unread (a\n"
"                          file that could not be read or opened: the\n"
"                          next run goes on where this one stopped)\n"
"  --check                 read the policy and its sinks' secrets as a\n"
"                          start or a reload would, and exit: 0 if\n"
"                          alertd would run with them, 2 if it would\n"
"                          refuse them (the reason logged); --journal\n"
"                          and --state are not needed\n"
"  --foreground            do not detach (systemd, tests)\n"
"  -v, --verbose           also log each attempt, each skipped line and\n"
"                          each group closed\n"
"  -h, --help              this text\n"
"      --version           the version\n"
"\n"
"Only the sinks' own secrets are opened.  A file: secret under\n"
"/run/credentials/ (another unit's systemd credential) is read from\n"
"$CREDENTIALS_DIRECTORY/ID when that is set: load it in alertd's unit\n"
"under the same ID, with SetCredential=ID:\\n so that the unit starts\n"
"without the file; that empty line is no secret, and stops alertd only\n"
"if a webhook names it.\n"
"\n"
"Signals: HUP reloads the policy and the keyring (a bad one is logged\n"
"and the running one kept); TERM and INT stop after the attempts in\n"
"flight, waiting at most %d s.\n"
"\n"
"Exit status: 0 done, 1 runtime failure (or --once with alerts left, or\n"
"journal lines lost or unread), 2 usage or configuration error.  Logs\n"
"go to standard error, one line per event.  See docs/alerts.md.\n",
                   AD_OUTBOX_DEFAULT, AD_OUTBOX_LIMIT, AD_OUTBOX_DEFAULT,
                   AD_STOP_GRACE / 1000);
}


/* a decimal number from min to max: digits only, no sign, no suffix */

static int
ad_count_parse(const char *s, size_t min, size_t max, size_t *v)
{
    size_t  n;

    if (*s == '\0') {
        return -1;
    }

    n = 0;

    for ( /* void */ ; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') {
            return -1;
        }

        n = n * 10 + (size_t) (*s - '0');

        if (n > max) {
            return -1;
        }
    }

    if (n < min) {
        return -1;
    }

    *v = n;

    return 0;
}


static int
ad_absolute(char *buf, size_t size, const char *path, const char *what)
{
    char  cwd[PATH_MAX];

    if (path[0] == '\0') {
        (void) fprintf(stderr, "%s: %s is empty\n", AD_NAME, what);
        return -1;
    }

    if (path[0] == '/') {
        if ((size_t) snprintf(buf, size, "%s", path) >= size) {
            goto long_path;
        }
        return 0;
    }

    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        (void) fprintf(stderr, "%s: %s %s: cannot tell the current "
                       "directory: %s\n", AD_NAME, what, path,
                       strerror(errno));
        return -1;
    }

    if ((size_t) snprintf(buf, size, "%s/%s", cwd, path) >= size) {
        goto long_path;
    }

    return 0;

long_path:

    (void) fprintf(stderr, "%s: %s is too long\n", AD_NAME, what);

    return -1;
}


/*
 * Detaches.  The parent waits until the child says it is running, so a
 * configuration error still reaches the terminal and the exit status.
 * Returns 0 in the child, -1 in the parent (or on failure) with *code.
 */

static int
ad_daemonize(int *notify, int *code)
{
    int      p[2], status, fd;
    char     c;
    pid_t    pid;
    ssize_t  n;

    *code = 1;

    if (pipe2(p, O_CLOEXEC) != 0) {
        (void) fprintf(stderr, "%s: pipe: %s\n", AD_NAME, strerror(errno));
        return -1;
    }

    pid = fork();

    if (pid == -1) {
        (void) fprintf(stderr, "%s: fork: %s\n", AD_NAME, strerror(errno));
        return -1;
    }

    if (pid > 0) {
        (void) close(p[1]);

        do {
            n = read(p[0], &c, 1);
        } while (n == -1 && errno == EINTR);

        if (n == 1) {
            *code = 0;
            return -1;
        }

        if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
            *code = WEXITSTATUS(status);
        }

        return -1;
    }

    (void) close(p[0]);
    (void) setsid();

    if (chdir("/") != 0) {
        /* our paths are absolute: the directory does not matter */
    }

    fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd != -1) {
        (void) dup2(fd, STDIN_FILENO);
        (void) dup2(fd, STDOUT_FILENO);
        if (fd > STDERR_FILENO) {
            (void) close(fd);
        }
    }

    *notify = p[1];

    return 0;
}


static int
ad_init(ad_ctx_t *ctx)
{
    int         rc;
    size_t      nsinks;
    sigset_t    set;
    ad_pos_t    pos;
    ad_sink_t  *sinks;
    char        err[AD_ERR_MAX];

    /*
     * Signals arrive on a signalfd, read in the loop like any event;
     * they are blocked before libcurl can start a resolver thread.
     */

    (void) signal(SIGPIPE, SIG_IGN);

    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);

    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        ad_log(AD_LOG_ERR, "sigprocmask: %s", strerror(errno));
        return 1;
    }

    ctx->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (ctx->sfd == -1) {
        ad_log(AD_LOG_ERR, "signalfd: %s", strerror(errno));
        return 1;
    }

    if (sodium_init() < 0) {
        ad_log(AD_LOG_ERR, "libsodium failed to initialize");
        return 1;
    }

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        ad_log(AD_LOG_ERR, "libcurl failed to initialize");
        return 1;
    }

    if (ad_load_sinks(ctx, &sinks, &nsinks, err, sizeof(err)) != 0) {
        ad_log(AD_LOG_ERR, "%s", err);
        return 2;
    }

    ctx->groups.interval_ms = ctx->repeat_ms;

    /* the outbox first: the state file holds its drop counts */

    if (ad_state_open(&ctx->state, ctx->state_path, err, sizeof(err)) != 0
        || ad_outbox_open(&ctx->outbox, ctx->state.fd, ctx->outbox_max, err,
                          sizeof(err)) != 0
        || ad_state_load(&ctx->state, ctx->journal_path, &pos, &ctx->groups,
                         &ctx->outbox, err, sizeof(err)) != 0)
    {
        ad_sinks_free(sinks, nsinks);
        ad_log(AD_LOG_ERR, "%s", err);
        return ad_exit_status(ctx->state.errnum != 0 ? ctx->state.errnum
                                                     : ctx->outbox.errnum);
    }

    ctx->outbox.once = ctx->once;

    if (ad_lift_load(&ctx->lifts, ctx->state.fd) != 0) {
        ad_sinks_free(sinks, nsinks);
        return 1;
    }

    ctx->journal = malloc(sizeof(ad_journal_t));
    if (ctx->journal == NULL) {
        ad_sinks_free(sinks, nsinks);
        ad_log(AD_LOG_ERR, "out of memory");
        return 1;
    }

    if (ad_journal_open(ctx->journal, ctx->journal_path, !ctx->once,
                        ctx->poll_ms, ctx->grace_ms, &pos, err, sizeof(err))
        != 0)
    {
        /*
         * A path that names no file, a directory missing or not one: 2;
         * the directory's I/O error (EIO, ENOMEM) goes away by itself: 1
         */

        rc = (ctx->journal->errnum != 0)
             ? ad_exit_status(ctx->journal->errnum) : 2;

        free(ctx->journal);
        ctx->journal = NULL;
        ad_sinks_free(sinks, nsinks);
        ad_log(AD_LOG_ERR, "%s", err);
        return rc;
    }

    if (ad_deliver_init(&ctx->deliver, &ctx->outbox, ctx->repeat_ms,
                        ctx->attempt_ms, ctx->once, err, sizeof(err)) != 0)
    {
        ad_sinks_free(sinks, nsinks);
        ad_log(AD_LOG_ERR, "%s", err);
        return 1;
    }

    ad_deliver_set_sinks(&ctx->deliver, sinks, nsinks);

    if (nsinks == 0) {
        ad_log(AD_LOG_WARN, "%s has no alerts.sinks: alerts stay in the "
               "journal and are not delivered", ctx->policy);
    }

    ad_sinks_log(sinks, nsinks);

    ad_log(AD_LOG_INFO, "started %s: journal %s at offset %lld, state %s, "
           "%zu alert(s) queued, %zu group(s) open, repeat interval %lld s, "
           "poll interval %lld ms, rotation grace %lld ms, attempt timeout "
           "%lld ms, at most %zu alert(s) queued per sink", AL_VERSION,
           ctx->journal_path, (long long) pos.cur.off, ctx->state_path,
           ctx->outbox.n, ctx->groups.n, (long long) (ctx->repeat_ms / 1000),
           (long long) ctx->poll_ms, (long long) ctx->grace_ms,
           (long long) ctx->attempt_ms, ctx->outbox_max);

    ad_deliver_orphans(&ctx->deliver);
    ad_outbox_pending(&ctx->outbox);

    ctx->saved_at = ad_mono_ms();

    return 0;
}


/*
 * The state directory could not be opened or loaded, or the journal's
 * directory looked at (its stat() failed): 2, which the unit
 * does not restart, for what an operator must fix (a path, a mode, a
 * damaged state file, another alertd on it); 1, which it restarts, for
 * what goes away by itself (a full disk, a file or memory limit).
 */

static int
ad_exit_status(int errnum)
{
    switch (errnum) {
    case ENOSPC:
    case EDQUOT:
    case EIO:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case EAGAIN:
    case EINTR:
    case EBUSY:
        return 1;
    default:
        return 2;
    }
}


/*
 * Reads the keyring and the policy and takes what alertd needs from them:
 * copies of the sink URLs and the HMAC keys, in guarded memory.  The
 * keyring only when --keyring was given: a sealed secret needs it, and
 * ad_secret_open() says so when it is missing.  The
 * policy is loaded without the keyring, so none of its secrets is opened;
 * only the sinks' own are (ad_secret.c).  The policy and the keyring are
 * freed at once.
 */

static int
ad_load_sinks(ad_ctx_t *ctx, ad_sink_t **sinks, size_t *n, char *err,
    size_t errsize)
{
    int            rc;
    al_error_t     e;
    al_policy_t   *p;
    al_keyring_t  *kr;

    kr = NULL;

    if (ctx->keyring[0] != '\0') {
        kr = al_keyring_load(ctx->keyring, &e);
        if (kr == NULL) {
            (void) al_error_format(&e, err, errsize);
            return -1;
        }
    }

    p = al_policy_load(ctx->policy, NULL, &e);

    if (p == NULL) {
        al_keyring_free(kr);
        (void) al_error_format(&e, err, errsize);
        return -1;
    }

    rc = ad_sinks_from_policy(p, kr, sinks, n, err, errsize);
    al_keyring_free(kr);
    al_policy_free(p);

    return rc;
}


/*
 * --check: the policy and the sinks' secrets read as a start or a reload
 * reads them (ad_load_sinks(), in the same sandbox when systemd runs it
 * from the unit), then freed: 0 when alertd would run with them, 2 (the
 * reason logged) when it would refuse them.  The appliance image's
 * reload of alertd runs it first: a policy alertd would refuse fails the
 * reload, before the egress rule's record of alertd's sinks is written
 * and before the SIGHUP.
 */

static int
ad_check(ad_ctx_t *ctx)
{
    size_t      n;
    ad_sink_t  *sinks;
    char        err[AD_ERR_MAX];

    if (sodium_init() < 0) {
        ad_log(AD_LOG_ERR, "libsodium failed to initialize");
        return 1;
    }

    if (ad_load_sinks(ctx, &sinks, &n, err, sizeof(err)) != 0) {
        ad_log(AD_LOG_ERR, "check failed, %s would be refused: %s",
               ctx->policy, err);
        return 2;
    }

    ad_sinks_free(sinks, n);
    ad_log(AD_LOG_INFO, "checked %s: %zu sink(s), alertd would run with "
           "them", ctx->policy, n);

    return 0;
}


static void
ad_reload(ad_ctx_t *ctx)
{
    size_t      n;
    ad_sink_t  *sinks;
    char        err[AD_ERR_MAX];

    if (ad_load_sinks(ctx, &sinks, &n, err, sizeof(err)) != 0) {
        ad_log(AD_LOG_ERR, "reload failed, the running policy is kept: %s",
               err);
        return;
    }

    ad_deliver_set_sinks(&ctx->deliver, sinks, n);
    ad_log(n > 0 ? AD_LOG_INFO : AD_LOG_WARN, "reloaded %s: %zu sink(s)%s",
           ctx->policy, n, n > 0 ? "" : "; alerts stay in the journal and "
                                        "are not delivered");
    ad_sinks_log(sinks, n);
    ad_deliver_orphans(&ctx->deliver);
}


/*
 * One line per sink; a webhook signed with a second key says so by the
 * secret's name (never more of it), so that the end of a change of
 * secret shows in the log as well.
 */

static void
ad_sinks_log(const ad_sink_t *sinks, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (sinks[i].hmac_also_name != NULL) {
            ad_log(AD_LOG_INFO, "sink %zu: webhook %s, each alert also "
                   "signed with secret \"%s\" (hmac_secret_also)", i + 1,
                   sinks[i].label, sinks[i].hmac_also_name);
            continue;
        }

        ad_log(AD_LOG_INFO, "sink %zu: %s %s", i + 1,
               ad_sink_kind_name(sinks[i].kind), sinks[i].label);
    }
}


static int
ad_loop(ad_ctx_t *ctx)
{
    int      fds[2], ready[2], rc, unread;
    size_t   i;
    int64_t  next_poll, dropped;

    rc = 0;
    next_poll = ad_mono_ms() + ctx->poll_ms;

    ad_work(ctx);
    ad_deliver_start(&ctx->deliver);

    for ( ;; ) {
        if (ctx->stopping
            && (ctx->deliver.busy == 0 || ad_mono_ms() >= ctx->stop_at))
        {
            break;
        }

        if (ctx->once && !ctx->stopping && !ctx->more
            && ad_deliver_idle(&ctx->deliver))
        {
            break;
        }

        fds[0] = ctx->sfd;
        fds[1] = ctx->journal->ifd;
        ready[0] = 0;
        ready[1] = 0;

        if (ad_deliver_poll(&ctx->deliver, fds, ctx->journal->ifd != -1
                                                ? 2 : 1,
                            ready, ad_timeout(ctx)) != 0)
        {
            rc = 1;
            break;
        }

        if (ready[0]) {
            ad_signals(ctx);
        }

        if (ready[1]) {
            ad_journal_events(ctx->journal);
        }

        if (ad_mono_ms() >= next_poll) {
            ctx->journal->check = 1;
            next_poll = ad_mono_ms() + ctx->poll_ms;
        }

        ad_deliver_collect(&ctx->deliver);

        /* --once reads the journal to its end, then only delivers */

        if (!ctx->stopping && (!ctx->once || ctx->more)) {
            ad_work(ctx);
        }

        ad_deliver_start(&ctx->deliver);
    }

    ad_deliver_abort(&ctx->deliver);

    /* a stop leaves one file, the snapshot, and an empty log */

    if (ctx->state.log_size > 0) {
        ctx->state.snapshot = 1;
        ctx->changed = 1;
    }

    if (ad_persist(ctx, 1) != 0 && rc == 0) {
        rc = 1;
    }

    if (rc == 0 && ctx->once && ctx->outbox.n > 0) {
        ad_log(AD_LOG_WARN, "%zu alert(s) still queued; the next run tries "
               "them again", ctx->outbox.n);
        rc = 1;
    }

    /*
     * --once is done only if it read the whole journal: lines it said
     * lost, or left unread (a read that failed, a file waited for, an
     * alert that could not be queued), make it a failure too.
     */

    if (ctx->once) {
        unread = ad_journal_unread(ctx->journal);

        if (ctx->blocked_until != 0) {
            unread |= AD_JOURNAL_LEFT;
        }

        if (unread & AD_JOURNAL_LOST) {
            ad_log(AD_LOG_WARN, "lines of the journal were lost in this run "
                   "(said above); exit status 1");
        }

        if (unread & AD_JOURNAL_LEFT) {
            ad_log(AD_LOG_WARN, "lines of the journal are left unread (said "
                   "above); the next run goes on from where this one "
                   "stopped; exit status 1");
        }

        if (unread != 0) {
            rc = 1;
        }
    }

    ad_group_stop(&ctx->groups);

    dropped = 0;
    for (i = 0; i < ctx->outbox.nq; i++) {
        dropped += ctx->outbox.q[i].dropped;
    }

    ad_log(AD_LOG_INFO, "stopped: %zu alert(s) queued, %zu group(s) open, "
           "%lld alert(s) dropped by a full outbox not reported yet",
           ctx->outbox.n, ctx->groups.n, (long long) dropped);

    return rc;
}


/*
 * The nearest of: a retry, a group window's end, the journal poll; no
 * wait while a round left work to do.
 */

static int
ad_timeout(ad_ctx_t *ctx)
{
    int64_t  now, wait, t, timeout;

    if (ctx->more && !ctx->stopping) {
        return 0;
    }

    now = ad_mono_ms();
    timeout = ctx->poll_ms;

    t = ad_deliver_next(&ctx->deliver);
    if (t != -1 && !ctx->stopping && t - now < timeout) {
        timeout = t - now;
    }

    /*
     * A window's end is in wall time, as of the round's wall clock: the
     * wait to it is measured from the round by the boot clock, which a
     * step of the wall clock since does not move (the next round moves
     * the windows with the step).
     */

    t = ad_group_next(&ctx->groups);
    if (t != -1 && !ctx->once) {
        wait = (t - ctx->wall_ms) - (ad_boot_ms() - ctx->boot_ms);

        if (wait < timeout) {
            timeout = wait;
        }
    }

    /*
     * A rotated journal's grace ends in ad_work(), which does nothing
     * while blocked: its deadline, passed, would make the wait 0 and the
     * loop spin until the block's retry.
     */

    t = ad_journal_next(ctx->journal);
    if (t != -1 && ctx->blocked_until == 0 && t - now < timeout) {
        timeout = t - now;
    }

    if (ctx->blocked_until != 0 && ctx->blocked_until - now < timeout) {
        timeout = ctx->blocked_until - now;
    }

    if (ctx->stopping && ctx->stop_at - now < timeout) {
        timeout = ctx->stop_at - now;
    }

    return (timeout < 0) ? 0 : (int) timeout;
}


static void
ad_signals(ad_ctx_t *ctx)
{
    ssize_t                   n;
    struct signalfd_siginfo   si;

    for ( ;; ) {
        n = read(ctx->sfd, &si, sizeof(si));
        if (n != (ssize_t) sizeof(si)) {
            break;
        }

        switch (si.ssi_signo) {
        case SIGHUP:
            if (!ctx->stopping) {
                ad_log(AD_LOG_INFO, "SIGHUP: reloading %s", ctx->policy);
                ad_reload(ctx);
            }
            break;

        case SIGTERM:
            ad_stop(ctx, "SIGTERM");
            break;

        case SIGUSR1:
        case SIGUSR2:
            /*
             * What nginx takes as "reopen the logs" or "upgrade", sent to
             * every process after a rotation: alertd has no file of its
             * own to reopen (it logs to stderr), and must not die of it.
             */
            ad_log(AD_LOG_INFO, "%s: nothing to do (alertd logs to "
                   "stderr)", si.ssi_signo == SIGUSR1 ? "SIGUSR1"
                                                      : "SIGUSR2");
            break;

        default:
            ad_stop(ctx, "SIGINT");
            break;
        }
    }
}


static void
ad_stop(ad_ctx_t *ctx, const char *why)
{
    if (ctx->stopping) {
        return;
    }

    ctx->stopping = 1;
    ctx->deliver.stopping = 1;
    ctx->stop_at = ad_mono_ms() + AD_STOP_GRACE;

    ad_log(AD_LOG_INFO, "%s: stopping, %zu attempt(s) in flight get up to "
           "%d ms", why, ctx->deliver.busy, AD_STOP_GRACE);
}


/*
 * One round: the reports of dropped alerts, then the journal, then the
 * group windows, then the state on disk.  A report goes first: it takes
 * the room a delivery made before a new alert can.  The wall clock is
 * read once: the alerts read and the windows ended see one time, so
 * that a window opened by a line of this round is saved open.
 *
 * A round is bounded (AD_ROUND_LINES, AD_ROUND_ALERTS): a backlog of
 * thousands of new groups is thousands of files written and fsync()ed,
 * during which no signal would be taken and no delivery made.  What is
 * left is read in the next rounds, at once, in order.  The windows are
 * ended only once the journal is read to its end, as they were when a
 * round read it all: a backlog folds in its alerts' own time, not in
 * the rounds it took.
 */

static void
ad_work(ad_ctx_t *ctx)
{
    int      rc;
    int64_t  now;

    now = ad_mono_ms();
    ad_clock(ctx);
    ctx->more = 0;
    ctx->round_lines = 0;
    ctx->round_alerts = 0;

    if (ctx->blocked_until != 0) {
        if (now < ctx->blocked_until) {
            return;
        }
        ctx->blocked_until = 0;
    }

    rc = ad_report(ctx);

    if (rc == 0) {
        rc = ad_journal_read(ctx->journal, ad_on_line, ctx);
    }

    if (rc == 0) {
        rc = ad_group_expire(&ctx->groups, ctx->wall_ms,
                             ctx->round_alerts < AD_ROUND_ALERTS
                             ? AD_ROUND_ALERTS - ctx->round_alerts : 0,
                             ad_emit, ctx);
    }

    if (rc < 0) {
        /* queueing failed (logged): what was read stays unread */
        ctx->blocked_until = now + AD_BLOCKED_WAIT;

    } else if (rc > 0) {
        ctx->more = 1;
    }

    if (ad_persist(ctx, 0) != 0) {
        ctx->blocked_until = now + AD_BLOCKED_WAIT;
        ctx->more = 0;
    }
}


/*
 * The round's wall clock, and a step of it since the last round: the
 * wall clock moved apart from the boot clock (which counts a suspend
 * too, so a resume is no step) by AD_CLOCK_STEP or more.  The group
 * windows move with it: they are in wall time, as the alerts are, but
 * each must last its interval of elapsed time.  A step forward
 * would otherwise end every window at once, and an alert stamped after
 * it would end its group's window and be sent, not folded; a step back
 * would hold a storm's repeats until the clock is back where it was.
 *
 * The first round compares with the clock the loaded state was saved
 * by, if it was saved in this boot (ad_state.c): a step while alertd
 * was stopped moves the saved windows as one while it runs.  A state
 * of another boot cannot tell a step from the time the machine was
 * down: its windows are taken on the wall clock, as they are.
 */

static void
ad_clock(ad_ctx_t *ctx)
{
    size_t       n;
    int64_t      off, by, last;
    const char  *when;
    char         from[AD_TIME_MAX], to[AD_TIME_MAX];

    last = ctx->boot_ms;
    ctx->boot_ms = ad_boot_ms();
    ctx->wall_ms = ad_now_ms();
    off = ctx->wall_ms - ctx->boot_ms;

    ctx->state.clock_off = off;
    ctx->state.clock_boot = ctx->boot_ms;
    ctx->state.clock = 1;
    when = "";

    if (!ctx->clock_known) {
        ctx->clock_known = 1;

        if (!ctx->state.saved_clock) {
            ctx->clock_off = off;
            return;
        }

        ctx->clock_off = ctx->state.saved_off;
        last = ctx->state.saved_at ? ctx->state.saved_boot : -1;
        when = " while alertd was stopped";
    }

    by = off - ctx->clock_off;

    if (by > -AD_CLOCK_STEP && by < AD_CLOCK_STEP) {
        ctx->clock_off = off;
        return;
    }

    /*
     * The lines read from now on may have been stamped before it, or
     * before one of the steps before it, if a backlog was not read
     * meanwhile.  A step not told from the time the machine was down
     * (a state of another boot) leaves no clock before it to tell.
     */

    if (last < 0) {
        ctx->state.nsteps = 0;

    } else {
        if (ctx->state.nsteps == AD_CLOCK_STEPS) {
            memmove(&ctx->state.steps[0], &ctx->state.steps[1],
                    (AD_CLOCK_STEPS - 1) * sizeof(ad_step_t));
            ctx->state.nsteps--;
        }

        ctx->state.steps[ctx->state.nsteps].off = ctx->clock_off;
        ctx->state.steps[ctx->state.nsteps].boot = last;
        ctx->state.steps[ctx->state.nsteps].seen = ctx->boot_ms;
        ctx->state.nsteps++;
    }

    /* saved with the position: a restart still tells those lines */
    ctx->changed = 1;

    ctx->clock_off = off;

    n = ad_group_shift(&ctx->groups, by);
    if (n > 0) {
        ctx->changed = 1;
    }

    ad_time_format(from, sizeof(from), ctx->wall_ms - by);
    ad_time_format(to, sizeof(to), ctx->wall_ms);

    ad_log(AD_LOG_WARN, "the wall clock stepped %s by %lld.%03lld s%s "
           "(from %s to %s): %zu alert group window(s) open moved with it, "
           "each ends one repeat interval after it started all the same",
           by > 0 ? "forward" : "back",
           (long long) ((by > 0 ? by : -by) / 1000),
           (long long) ((by > 0 ? by : -by) % 1000), when, from, to, n);
}


/*
 * The wall - boot clock a journal line stamped t (ms) was stamped by:
 * the round's, or the one before one of the last steps.  nginx stamps
 * a line when it writes it, alertd reads it later: a line written
 * before a step and read after it (a backlog, alertd stopped, the
 * journal unreadable for a while, or the step came between the write
 * and the read) holds a time of the clock before.  Taken on the
 * round's clock, it would be as far off as the step: after a step
 * forward, an alert opening a group would open a window that ended
 * long ago, and a quarantine would be sent to Alertmanager ending as
 * much early.  A second step before such a line is read must not lose
 * the first: each clock is kept with the span it was read in.
 *
 * A line stamped by the round's clock was written after the last
 * round that read the clock before the latest step (its boot: the
 * state's save, for a step while alertd was stopped) and not after
 * now: on the boot clock, t - clock_off is in that span (AD_CLOCK_STEP
 * earlier, for nginx's cached time; AD_CLOCK_SLACK later, for the
 * reading of the round).  One that is not was stamped by the clock
 * before a step if on it, t - off is in the span that clock was read
 * in: from the last round before the step before it (none, for the
 * oldest kept) to the round that told the step.  The latest such clock
 * wins; a line no clock could have stamped is taken on the round's.
 * A line both the round's clock and one before could have stamped is
 * taken on the round's clock: one written less than the step after
 * the last read before it, before a step forward (a step while alertd
 * was stopped longer than the step), or one written the step or more
 * before it, before a step back (a backlog).  While alertd runs, a
 * round reads the clock at least every poll interval: a step forward
 * of more than that leaves no such line.
 */

static int64_t
ad_stamped(const ad_ctx_t *ctx, int64_t t)
{
    size_t            i, n;
    int64_t           m;
    const ad_step_t  *steps;

    steps = ctx->state.steps;
    n = ctx->state.nsteps;

    if (n == 0) {
        return ctx->clock_off;
    }

    m = t - ctx->clock_off;

    if (m >= steps[n - 1].boot - AD_CLOCK_STEP
        && m <= ctx->boot_ms + AD_CLOCK_SLACK)
    {
        return ctx->clock_off;
    }

    for (i = n; i > 0; i--) {
        m = t - steps[i - 1].off;

        if (m <= steps[i - 1].seen + AD_CLOCK_SLACK
            && (i == 1 || m >= steps[i - 2].boot - AD_CLOCK_STEP))
        {
            return steps[i - 1].off;
        }
    }

    return ctx->clock_off;
}


/* a few sinks: looking at each on every turn costs nothing */

static int
ad_report(ad_ctx_t *ctx)
{
    int               rc;
    size_t            i;
    const ad_sink_t  *s;

    for (i = 0; i < ctx->deliver.nsinks; i++) {
        s = &ctx->deliver.sinks[i];

        rc = ad_outbox_report(&ctx->outbox, s->kind, s->key, s->url);
        if (rc < 0) {
            return -1;
        }

        if (rc > 0) {
            ctx->changed = 1;
        }
    }

    return 0;
}


static int
ad_on_line(void *data, const char *line, size_t len, int64_t off, int cut)
{
    size_t       skip;
    ad_ctx_t    *ctx;
    ad_line_t    rc;
    ad_alert_t   a;
    char         why[256], zone[AD_SHOW_MAX];

    ctx = data;

    if (ctx->round_lines >= AD_ROUND_LINES
        || ctx->round_alerts >= AD_ROUND_ALERTS)
    {
        return 1;
    }

    ctx->round_lines++;

    rc = ad_alert_parse_line(line, len, &a, why, sizeof(why));

    /* a line cut short, and the line after it glued on: that one is read */

    skip = (rc == AD_LINE_BAD) ? ad_alert_resync(line, len) : 0;

    if (cut) {
        if (rc == AD_LINE_BAD && skip == 0) {
            /* no whole line at its end: the journal says it skipped it */
            ctx->moved = 1;
            return 0;
        }

        ad_log(AD_LOG_WARN, "journal %s: a line longer than %d bytes, "
               "cut short, ends at offset %lld with a whole line glued "
               "to it at offset %lld, which is read", ctx->journal_path,
               AD_READ_MAX, (long long) off + (long long) len,
               (long long) off + (long long) skip);

        line += skip;
        len -= skip;
        off += (int64_t) skip;

        if (skip > 0) {
            rc = ad_alert_parse_line(line, len, &a, why, sizeof(why));
        }

    } else if (skip > 0) {
        ad_log(AD_LOG_WARN, "journal %s offset %lld: skipped %zu bytes of "
               "a malformed line (%s), a line cut short: the line glued "
               "to it at offset %lld is read", ctx->journal_path,
               (long long) off, skip, why, (long long) off + (long long) skip);

        line += skip;
        len -= skip;
        off += (int64_t) skip;
        rc = ad_alert_parse_line(line, len, &a, why, sizeof(why));
    }

    /*
     * Read by the round's clock, or stamped by the clock before a step:
     * see ad_stamped() and ad_am_stepped()
     */

    a.clock_off = (rc == AD_LINE_ALERT || rc == AD_LINE_ZONE)
                  ? ad_stamped(ctx, a.time_ms) : ctx->clock_off;
    a.clock_known = 1;

    if (a.clock_off != ctx->clock_off) {
        ad_log(AD_LOG_DEBUG, "journal offset %lld: %s stamped %s, by the "
               "wall clock before it stepped by %lld ms", (long long) off,
               rc == AD_LINE_ALERT ? a.id : "zone line", a.time,
               (long long) (ctx->clock_off - a.clock_off));
    }

    switch (rc) {

    case AD_LINE_ALERT:
        a.folded = 0;

        ad_log(AD_LOG_DEBUG, "journal offset %lld: alert %s", (long long) off,
               a.id);

        if (ad_group_add(&ctx->groups, &a, ctx->wall_ms,
                         ctx->clock_off - a.clock_off, ad_emit, ctx)
            != 0)
        {
            return -1;
        }

        ctx->changed = 1;
        break;

    case AD_LINE_ZONE:
        ad_log(AD_LOG_INFO, "journal offset %lld: nginx made its deny zone "
               "%s anew at %s: the quarantines it held are lifted",
               (long long) off, ad_field_show(zone, sizeof(zone), a.reason,
                                              a.reason_len), a.time);

        if (ad_lift_zone(&ctx->lifts, &a, ad_emit, ctx) != 0) {
            return -1;
        }

        ctx->changed = 1;
        break;

    case AD_LINE_DENY:
        break;

    case AD_LINE_OTHER:
        ad_log(AD_LOG_DEBUG, "journal offset %lld: skipped a line of %s",
               (long long) off, why);
        break;

    default:
        ad_log(AD_LOG_WARN, "journal %s offset %lld: skipped a malformed "
               "line: %s", ctx->journal_path, (long long) off, why);
        break;
    }

    ctx->moved = 1;

    return 0;
}


static int
ad_emit(void *data, const ad_alert_t *a)
{
    int               rc;
    size_t            i, n[4], am;
    ad_ctx_t         *ctx;
    const char       *what;
    const ad_sink_t  *s;
    char              but[128];
    char              client[AD_SHOW_MAX], peer[AD_SHOW_MAX];
    char              reason[AD_SHOW_MAX];

    ctx = data;
    n[AD_OUTBOX_QUEUED] = 0;
    n[AD_OUTBOX_FOLDED] = 0;
    n[AD_OUTBOX_DROPPED] = 0;
    n[AD_OUTBOX_BLOCKED] = 0;
    am = 0;

    for (i = 0; i < ctx->deliver.nsinks; i++) {
        s = &ctx->deliver.sinks[i];

        if (s->kind == AL_SINK_ALERTMANAGER) {
            am++;

        } else if (a->lifted) {
            /* a webhook is told of alerts raised only */
            continue;
        }

        rc = ad_outbox_add(&ctx->outbox, a, s->kind, s->key, s->url);
        if (rc < 0) {
            /* tried again as a whole: no sink counts it yet */
            ad_outbox_count(&ctx->outbox, a, 0);
            return -1;
        }

        n[rc]++;
    }

    ad_outbox_count(&ctx->outbox, a, 1);

    /* resolved early if nginx makes its deny zone anew (ad_lift.c) */

    if (am > 0) {
        ad_lift_add(&ctx->lifts, a, ctx->wall_ms, ctx->clock_off);
    }

    ctx->changed = 1;
    ctx->round_alerts++;

    if (ctx->deliver.nsinks == 0) {
        what = "no sinks for";
    } else if (a->lifted && am == 0) {
        what = "no Alertmanager sink for";
    } else if (n[AD_OUTBOX_QUEUED] > 0) {
        what = "queued";
    } else if (n[AD_OUTBOX_FOLDED] > 0) {
        what = "folded into a queued alert:";
    } else if (n[AD_OUTBOX_DROPPED] > 0) {
        what = "dropped (outbox full):";
    } else {
        what = "not queued (a damaged outbox file holds its name):";
    }

    but[0] = '\0';

    if (n[AD_OUTBOX_QUEUED] > 0
        && n[AD_OUTBOX_FOLDED] + n[AD_OUTBOX_DROPPED] > 0)
    {
        (void) snprintf(but, sizeof(but), "; outbox full for %zu of %zu "
                        "sinks: folded for %zu, dropped for %zu",
                        n[AD_OUTBOX_FOLDED] + n[AD_OUTBOX_DROPPED],
                        ctx->deliver.nsinks, n[AD_OUTBOX_FOLDED],
                        n[AD_OUTBOX_DROPPED]);
    }

    ad_log(AD_LOG_INFO, "%s %salert %s: %s, client %s%s%s, reason %s, "
           "count %lld%s", what,
           a->lifted ? "lifted " : (a->folded ? "folded " : ""), a->id,
           ad_alert_kind_name(a->kind),
           a->has_client
           ? ad_field_show(client, sizeof(client), a->client, a->client_len)
           : "(none)",
           a->has_peer ? ", peer " : "",
           ad_field_show(peer, sizeof(peer), a->peer,
                         a->has_peer ? a->peer_len : 0),
           ad_field_show(reason, sizeof(reason), a->reason, a->reason_len),
           (long long) a->count, but);

    return 0;
}


/*
 * The outbox files are made durable first, then the offset past their
 * lines is saved.  An offset moved past deny lines only is saved lazily:
 * reading them again after a crash costs nothing.
 */

static int
ad_persist(ad_ctx_t *ctx, int force)
{
    size_t    dirty, closed;
    ad_pos_t  pos;

    if (ctx->journal == NULL) {
        return 0;
    }

    if (ad_outbox_sync(&ctx->outbox) != 0) {
        if (ctx->once) {
            /*
             * No later try: the next run reads the lines again, and
             * queues again an alert this run delivered meanwhile.
             */
            ad_fail(&ctx->sync_fail, AD_LOG_ERR, "cannot sync %s/outbox: "
                    "%s; the journal position is not saved in this run, "
                    "the next run reads the journal again from the last "
                    "one saved (an alert delivered meanwhile is sent "
                    "again, with the same id)", ctx->state_path,
                    strerror(errno));
            return -1;
        }

        ad_fail(&ctx->sync_fail, AD_LOG_ERR, "cannot sync %s/outbox: %s; "
                "the journal position is saved once it works",
                ctx->state_path, strerror(errno));
        return -1;
    }

    ad_fail_over(&ctx->sync_fail, "syncing %s/outbox", ctx->state_path);

    /* before the position: a crash reads the quarantine lines again */

    if (ad_lift_save(&ctx->lifts, ctx->state.fd) != 0) {
        ad_fail(&ctx->lifts.save_fail, AD_LOG_ERR, "cannot save %s/lifts: "
                "%s", ctx->state_path, strerror(errno));
        return -1;
    }

    ad_fail_over(&ctx->lifts.save_fail, "saving %s/lifts", ctx->state_path);

    if (!ctx->changed
        && !(ctx->moved
             && (force || ad_mono_ms() - ctx->saved_at >= AD_SAVE_LAZY)))
    {
        return 0;
    }

    ad_journal_pos(ctx->journal, &pos);

    if (ad_state_save(&ctx->state, ctx->journal_path, &pos, &ctx->groups,
                      &ctx->outbox) != 0)
    {
        ad_fail(&ctx->save_fail, AD_LOG_ERR, "cannot save %s/offset: %s",
                ctx->state_path, strerror(errno));

        ad_group_held(&ctx->groups, &dirty, &closed);

        if (ctx->groups.whole) {
            ad_log(AD_LOG_DEBUG, "held for the next save: %zu alert "
                   "group(s) open, %zu changed; it writes them all, the "
                   "keys of those closed are let go", ctx->groups.n,
                   dirty);
        } else {
            ad_log(AD_LOG_DEBUG, "held for the next save: %zu alert "
                   "group(s) open, %zu changed, %zu closed", ctx->groups.n,
                   dirty, closed);
        }

        return -1;
    }

    ad_fail_over(&ctx->save_fail, "saving %s/offset", ctx->state_path);
    ad_outbox_saved(&ctx->outbox);

    ctx->changed = 0;
    ctx->moved = 0;
    ctx->saved_at = ad_mono_ms();

    return 0;
}


static void
ad_cleanup(ad_ctx_t *ctx)
{
    if (ctx->deliver.multi != NULL) {
        ad_deliver_free(&ctx->deliver);
    }

    if (ctx->journal != NULL) {
        ad_journal_close(ctx->journal);
        free(ctx->journal);
        ctx->journal = NULL;
    }

    ad_outbox_close(&ctx->outbox);
    ad_group_free(&ctx->groups);
    ad_lift_free(&ctx->lifts);
    ad_state_close(&ctx->state);

    if (ctx->sfd != -1) {
        (void) close(ctx->sfd);
        ctx->sfd = -1;
    }

    curl_global_cleanup();
}
