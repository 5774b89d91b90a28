/*
 * airlock-agent: options, the unix-socket HTTP server, and the two
 * endpoints.  One process per connection (forked): a run holds nothing
 * another run needs, and whatever a run does, it cannot take the server
 * down with it.  At most --max-connections of them at once,
 * --max-user-connections of one peer uid's, and --max-api-connections
 * of the --api-peer's (all its users' together; root has no cap): a
 * connection past that gets 503 from the server itself, and a process is
 * counted until it is reaped.  Otherwise one local user who opened them
 * all, again as each ran out its 30 s, kept every other out; and so did
 * /api/'s users together, each within nginx's limit_conn.
 *
 * Who asks is the socket's peer, as the kernel tells it (SO_PEERCRED):
 * its uid, or for --api-peer (nginx's workers, which publish the socket
 * at /api/) the person nginx authenticated, named in X-Airlock-User.
 * A session is its first asker's; to anyone else but root it is a
 * session that does not exist (404).  Root asks in another's only when
 * it says so (X-Airlock-Others-Session: yes), else 409 session_owner.
 *
 *   airlock-agent --listen PATH --gateway PATH
 *                 --redis unix:PATH|HOST:PORT|[IPV6]:PORT|[IPV6]
 *                 [--redis-user NAME --redis-password-file FILE]
 *                 --policy FILE [options]     (--help lists them)
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <curl/curl.h>

#include "agent.h"
#include "al_llm.h"
#include "ar_auth.h"


#define AG_REQUEST_MS      30000  /* a request's whole read, from accept */
#define AG_LOADS_FULL      "the agent holds as many sessions in memory " \
                           "as --max-loaded-sessions lets it: try again " \
                           "shortly"
#define AG_LOADS_MINE      "your requests hold as many sessions in " \
                           "memory as one user's may, half of what " \
                           "--max-loaded-sessions lets the agent hold: " \
                           "try again once one of them is done"
#define AG_NO_SESSION      "no such session (or it expired)"
#define AG_NO_SESSION_NEW  AG_NO_SESSION "; a new session is the " \
                           "agent's to make: POST /v1/sessions (airlock " \
                           "ask without --session asks for one)"


volatile sig_atomic_t  ag_stopping;
volatile sig_atomic_t  ag_left;

/*
 * The memory sessions take as they are read, all connections together
 * (--max-loaded-sessions, ag_load_take()): one slot per connection's
 * process in a map they all share, the bytes of the session that process
 * holds (0: none).  The server gives each new process a free slot and
 * empties it once it has reaped the process, so one killed while it held
 * memory (the OOM killer, a crash) leaves nothing held.  Beside each
 * slot, whose request it is (ag_owner_tag() of the asker), so that one
 * asker holds at most half of the bound.
 */
static uint64_t       *ag_loads;            /* max_connections slots */
static uint64_t       *ag_load_owners;      /* and as many owners' tags */
static long           *ag_slots_free;       /* the server's: free slots */
static long            ag_slots_nfree;
static long            ag_load_slot = -1;   /* a connection's own */


/* a connection's process, its peer's uid, and its slot in ag_loads */
typedef struct {
    pid_t            pid;
    uid_t            uid;
    long             slot;
} ag_child_t;


typedef struct {
    char            *buf;
    size_t           len;
    char             method[16];
    char             path[512];
    char            *body;
    size_t           body_len;
    char             user[AG_API_USER_MAX + 1];  /* X-Airlock-User, or "" */
    int              others;        /* X-Airlock-Others-Session: yes */
} ag_request_t;


static int ag_parse_options(int argc, char **argv, ag_conf_t *conf);
static void ag_usage(FILE *f);
static int ag_load_tools(ag_conf_t *conf);
static int ag_listen(const ag_conf_t *conf);
static void ag_sigchld(int signo);
static void ag_sigterm(int signo);
static void ag_sigleft(int signo);
static long ag_reap(ag_child_t *kids, long children);
static long ag_user_children(const ag_child_t *kids, long children, int fd,
    uid_t *uid);
static void ag_refuse(int fd, const char *msg);
static void ag_serve(ag_conf_t *conf, int fd);
static int ag_read_request(int fd, ag_request_t *req, const char **why);
static int ag_request_line(const char *line, ag_request_t *req);
static int ag_content_length(const char *v, size_t *clen);
static ssize_t ag_read_until(int fd, char *buf, size_t len,
    int64_t deadline);
static void ag_respond(int fd, int status, const char *ctype,
    const char *body, int64_t deadline, int retry);
static void ag_quota_refuse(int fd, const char *session, int over,
    const char *msg, const char *err);
static void ag_respond_error(int fd, int status, const char *code,
    const char *message);
static int ag_load_take(const ag_conf_t *conf, size_t need,
    const char *owner);
static uint64_t ag_owner_tag(const char *owner);
static void ag_load_done(void);
static json_t *ag_session_read(const ag_conf_t *conf, redisContext *c,
    const char *id, const char *owner, int *damaged, int *busy, char **raw,
    size_t *raw_len, char *version, char *err, size_t size);
static int ag_peer(ag_conf_t *conf, int fd, const ag_request_t *req,
    ag_peer_t *peer, char *why, size_t size);
static int ag_api_user_ok(const char *s, size_t len);
static int ag_session_mine(json_t *s, const ag_peer_t *peer);
static const char *ag_no_session(const ag_conf_t *conf);
static int ag_session_hidden(const ag_conf_t *conf, redisContext *c,
    const char *session, const ag_peer_t *peer);
static int ag_session_whole_hidden(const ag_conf_t *conf, redisContext *c,
    const char *session, const ag_peer_t *peer);
static int ag_session_foreign(const ag_conf_t *conf, redisContext *c,
    const char *session, const ag_peer_t *peer, int none_hidden);
static void ag_handle_ask(ag_conf_t *conf, int fd, const char *session,
    const ag_peer_t *peer, ag_request_t *req);
static void ag_handle_new(ag_conf_t *conf, int fd, const ag_peer_t *peer);
static void ag_handle_session(ag_conf_t *conf, int fd, const char *session,
    const ag_peer_t *peer);
static int ag_api_peer(ag_conf_t *conf);
static int ag_listen_group(ag_conf_t *conf);
static int ag_write_all(int fd, const char *p, size_t len,
    int64_t deadline);
static long ag_long_option(const char *name, const char *v, long min,
    long max);
static int ag_text_option(const char *name, const char *v, size_t max,
    int lines, const char *want);
static void ag_option_error(const char *name, const char *v,
    const char *want);
static const al_llm_t *ag_llm_prefix(ag_conf_t *conf);
static int ag_llm_model(ag_conf_t *conf, const al_llm_t *l);
static void ag_llm_models(const al_llm_t *l, const al_llm_client_t *lc,
    char *buf, size_t size);


static const struct option  ag_options[] = {
    { "listen",          required_argument, NULL, 'l' },
    { "gateway",         required_argument, NULL, 'g' },
    { "redis",           required_argument, NULL, 'r' },
    { "redis-user",      required_argument, NULL, 'u' },
    { "redis-password-file", required_argument, NULL, 'P' },
    { "policy",          required_argument, NULL, 'p' },
    { "client",          required_argument, NULL, 'c' },
    { "sandbox",         required_argument, NULL, 's' },
    { "llm-prefix",      required_argument, NULL, 'L' },
    { "model",           required_argument, NULL, 'm' },
    { "system",          required_argument, NULL, 'S' },
    { "max-steps",       required_argument, NULL, 1 },
    { "max-tokens",      required_argument, NULL, 2 },
    { "max-tool-bytes",  required_argument, NULL, 3 },
    { "max-wall",        required_argument, NULL, 4 },
    { "max-denials",     required_argument, NULL, 5 },
    { "job-wall",        required_argument, NULL, 6 },
    { "session-ttl",     required_argument, NULL, 7 },
    { "history-bytes",   required_argument, NULL, 8 },
    { "max-connections", required_argument, NULL, 9 },
    { "max-user-connections", required_argument, NULL, 12 },
    { "max-api-connections", required_argument, NULL, 16 },
    { "max-loaded-sessions", required_argument, NULL, 15 },
    { "send-timeout",    required_argument, NULL, 10 },
    { "max-queued-jobs", required_argument, NULL, 11 },
    { "max-user-jobs",   required_argument, NULL, 18 },
    { "max-user-bytes",  required_argument, NULL, 13 },
    { "max-user-tokens", required_argument, NULL, 14 },
    { "max-user-tokens-per-minute", required_argument, NULL, 19 },
    { "max-user-denials", required_argument, NULL, 17 },
    { "api-peer",        required_argument, NULL, 'A' },
    { "listen-group",    required_argument, NULL, 'G' },
    { "random-session-ids", no_argument,    NULL, 'R' },
    { "help",            no_argument,       NULL, 'h' },
    { "version",         no_argument,       NULL, 'V' },
    { NULL, 0, NULL, 0 }
};


int
main(int argc, char **argv)
{
    int                 lfd, cfd, full;
    long                children, mine, slot;
    char                msg[200];
    uid_t               uid;
    pid_t               pid;
    ag_child_t         *kids;
    sigset_t            chld, unblocked;
    ag_conf_t           conf;
    struct pollfd       pfd;
    struct sigaction    sa;

    if (ag_parse_options(argc, argv, &conf) != 0) {
        return 2;
    }

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "airlock-agent: libcurl failed to initialize\n");
        return 1;
    }

    if (ag_load_tools(&conf) != 0) {
        al_policy_free(conf.policy);        /* a policy --client or
                                               --llm-prefix does not fit */
        return 1;
    }

    /*
     * A connection's process is counted until it is reaped, here.
     * SIGCHLD is blocked but in ppoll(), so an exit either wakes the wait
     * or is already reaped before it: none is missed.
     */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = ag_sigchld;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &unblocked);
    sigdelset(&unblocked, SIGCHLD);

    kids = calloc(conf.max_connections, sizeof(ag_child_t));
    ag_slots_free = calloc(conf.max_connections, sizeof(long));
    ag_loads = mmap(NULL, 2 * conf.max_connections * sizeof(uint64_t),
                    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
                    0);
    if (kids == NULL || ag_slots_free == NULL || ag_loads == MAP_FAILED) {
        fprintf(stderr, "airlock-agent: out of memory\n");
        return 1;
    }

    ag_load_owners = ag_loads + conf.max_connections;

    for (ag_slots_nfree = 0; ag_slots_nfree < conf.max_connections;
         ag_slots_nfree++)
    {
        ag_slots_free[ag_slots_nfree] = conf.max_connections - 1
                                        - ag_slots_nfree;
    }

    lfd = ag_listen(&conf);
    if (lfd == -1) {
        return 1;
    }

    fprintf(stderr, "airlock-agent: listening on unix:%s, gateway "
            "unix:%s, redis %s%s%s, %zu tools\n", conf.listen, conf.gateway,
            conf.redis, conf.redis_user != NULL ? " as " : "",
            conf.redis_user != NULL ? conf.redis_user : "",
            json_array_size(conf.tools));

    children = 0;
    full = 0;

    pfd.fd = lfd;
    pfd.events = POLLIN;

    for ( ;; ) {
        children = ag_reap(kids, children);

        if (ppoll(&pfd, 1, NULL, &unblocked) == -1) {
            if (errno != EINTR) {
                fprintf(stderr, "airlock-agent: poll: %s\n",
                        strerror(errno));
                sleep(1);
            }
            continue;
        }

        cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd == -1) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN
                || errno == EWOULDBLOCK)
            {
                continue;
            }
            fprintf(stderr, "airlock-agent: accept: %s\n", strerror(errno));
            sleep(1);
            continue;
        }

        children = ag_reap(kids, children);

        if (children >= conf.max_connections) {
            if (!full) {
                fprintf(stderr, "airlock-agent: %ld connections, the most "
                        "--max-connections allows: more get 503\n",
                        children);
                full = 1;
            }
            snprintf(msg, sizeof(msg), "the agent serves %ld connections "
                     "at once (--max-connections), all busy: try again "
                     "later", conf.max_connections);
            ag_refuse(cfd, msg);
            close(cfd);
            continue;
        }

        full = 0;

        mine = ag_user_children(kids, children, cfd, &uid);

        if (mine >= 0 && conf.api_peer != NULL && uid == conf.api_uid) {

            if (mine >= conf.max_api_connections) {
                snprintf(msg, sizeof(msg), "the agent serves %ld "
                         "connections of /api/ at once, all its users' "
                         "together, the most it may "
                         "(--max-api-connections): try again once one "
                         "ends", mine);
                ag_refuse(cfd, msg);
                close(cfd);
                continue;
            }

        } else if (mine >= conf.max_user_connections) {
            snprintf(msg, sizeof(msg), "you have %ld connections to the "
                     "agent at once, the most one user may have "
                     "(--max-user-connections): try again once one ends",
                     mine);
            ag_refuse(cfd, msg);
            close(cfd);
            continue;
        }

        /* a free one: children < max_connections */
        slot = ag_slots_free[--ag_slots_nfree];

        pid = fork();

        if (pid == 0) {
            ag_load_slot = slot;
            signal(SIGCHLD, SIG_DFL);

            /*
             * A stop (systemd signals every process of the unit) ends
             * a run early but whole: its job withdrawn, its question
             * stored, its lock let go.  No SA_RESTART: a wait it is in
             * returns.
             */
            sa.sa_handler = ag_sigterm;
            sa.sa_flags = 0;
            sigaction(SIGTERM, &sa, NULL);

            /* its client hung up (the lock's keeper watches): the same */
            sa.sa_handler = ag_sigleft;
            sigaction(SIGUSR1, &sa, NULL);

            sigprocmask(SIG_UNBLOCK, &chld, NULL);
            close(lfd);
            ag_serve(&conf, cfd);
            close(cfd);
            _exit(0);
        }

        if (pid == -1) {
            fprintf(stderr, "airlock-agent: fork: %s\n", strerror(errno));
            ag_respond_error(cfd, 503, "busy", "cannot start a run now");
            ag_slots_free[ag_slots_nfree++] = slot;

        } else {
            kids[children].pid = pid;
            kids[children].uid = uid;
            kids[children].slot = slot;
            children++;
        }

        close(cfd);
    }
}


/* only wakes ppoll(): the loop reaps */

static void
ag_sigchld(int signo)
{
    (void) signo;
}


/* a connection's process: its run ends at the next step it takes */

static void
ag_sigterm(int signo)
{
    (void) signo;

    ag_stopping = 1;
}


/*
 * A run's client hung up (ag_session_keep() tells): the run ends as at a
 * stop, at once, not when what it waits for comes or its wall time runs
 * out.  Its process held one of --max-connections meanwhile, and the
 * --api-peer's users, whom nginx counts only while they are connected,
 * could ask and hang up until they held every one.
 */

static void
ag_sigleft(int signo)
{
    (void) signo;

    ag_left = 1;
    ag_stopping = 1;
}


/*
 * children, less those that have exited (reaped now, and left kids: their
 * slots of ag_loads emptied and free again)
 */

static long
ag_reap(ag_child_t *kids, long children)
{
    long   i;
    pid_t  pid;

    while (children > 0) {
        pid = waitpid(-1, NULL, WNOHANG);
        if (pid <= 0) {
            break;
        }

        for (i = 0; i < children; i++) {
            if (kids[i].pid == pid) {
                __atomic_store_n(&ag_loads[kids[i].slot], 0,
                                 __ATOMIC_SEQ_CST);
                ag_slots_free[ag_slots_nfree++] = kids[i].slot;
                kids[i] = kids[--children];
                break;
            }
        }
    }

    return children;
}


/*
 * The connections the peer of fd has open now (its uid into *uid, as
 * SO_PEERCRED tells), or -1 for one no cap is for: root (the operator
 * always gets in, even when root is the --api-peer), or a peer the
 * kernel did not name (refused when it asks).  The --api-peer's (nginx,
 * for all its users: it limits each itself) are counted, for
 * --max-api-connections.
 */

static long
ag_user_children(const ag_child_t *kids, long children, int fd,
    uid_t *uid)
{
    long          i, n;
    socklen_t     len;
    struct ucred  uc;

    *uid = (uid_t) -1;

    len = sizeof(uc);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == -1
        || len != sizeof(uc))
    {
        return -1;
    }

    *uid = uc.uid;

    if (uc.uid == 0) {
        return -1;
    }

    for (i = 0, n = 0; i < children; i++) {
        n += (kids[i].uid == uc.uid);
    }

    return n;
}


/*
 * A connection past --max-connections, answered by the server itself,
 * never blocking it: the answer is short and the socket new.  What the
 * client has already sent is read first, so closing does not reset the
 * connection before the client reads the answer.
 */

static void
ag_refuse(int fd, const char *msg)
{
    char  buf[4096];
    int   i, flags;

    flags = fcntl(fd, F_GETFL);
    if (flags == -1 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1) {
        return;
    }

    for (i = 0; i < AG_REQUEST_MAX / (int) sizeof(buf); i++) {
        if (read(fd, buf, sizeof(buf)) <= 0) {
            break;
        }
    }

    ag_respond_error(fd, 503, "busy", msg);

    for (i = 0; i < AG_REQUEST_MAX / (int) sizeof(buf); i++) {
        if (read(fd, buf, sizeof(buf)) <= 0) {
            break;
        }
    }
}


static void
ag_usage(FILE *f)
{
    fprintf(f,
"usage: airlock-agent --listen PATH --gateway PATH --redis WHERE\n"
"                     --policy FILE [options]\n"
"\n"
"  --listen PATH        our unix socket (HTTP; nginx publishes it at /api/)\n"
"  --listen-group GROUP the socket is 0660, this group's: only its members\n"
"                       (nginx's www-data, operators) and root connect\n"
"                       (airlock-api on the appliance); the agent is a\n"
"                       member, or the directory set-group-ID and the\n"
"                       group's.  None: 0666, every local user\n"
"  --gateway PATH       Airlock's unix socket (LLM gateway, named routes)\n"
"  --redis WHERE        unix:/path/redis.sock, host:port, [ipv6]:port\n"
"                       or [ipv6] (port 6379)\n"
"  --redis-user NAME    AUTH as this Redis user (airlock-agent on the\n"
"                       appliance: conf/redis-acl.conf); with\n"
"  --redis-password-file FILE  its password, one line, a file its owner\n"
"                       alone may read (mode 0400 or 0600); read again\n"
"                       at each connect, checked at start\n"
"  --policy FILE        the policy: the tools are its routes for --client\n"
"  --client NAME        the agent's policy client (agent)\n"
"  --sandbox NAME       run_python's client (worker; none: no run_python)\n"
"  --llm-prefix PATH    the gateway's prefix, one of the policy's llm\n"
"                       prefixes (/v1/proxy/openai)\n"
"  --model NAME         the model (gpt-4o-mini): one the --llm-prefix\n"
"                       entry lets --client use, or an alias of one\n"
"  --system TEXT        operator text added to the system prompt\n"
"limits per question:\n"
"  --max-steps N        model calls (8)\n"
"  --max-tokens N       tokens, as the gateway reports them (20000)\n"
"  --max-tool-bytes N   bytes of tool output (262144)\n"
"  --max-wall MS        wall time (120000)\n"
"  --max-denials N      proxy denials (3)\n"
"  --job-wall MS        a sandbox job's wall time (10000), 100 to the\n"
"                       worker's max_wall_ms (60000): it refuses more\n"
"  --max-queued-jobs N  jobs in the stream (all agents'), at most, for a\n"
"                       run_python to add one (1024)\n"
"  --max-user-jobs N    jobs one asker's questions await at once, all\n"
"                       together, for a run_python to add one (4; 0: no\n"
"                       limit); root's too\n"
"  --session-ttl S      how long an idle session is kept (86400)\n"
"  --history-bytes N    earlier questions' messages kept, as JSON; the\n"
"                       oldest questions go first, whole (262144)\n"
"  --max-user-bytes N   bytes one owner's sessions hold in Redis, all\n"
"                       together (each its text and 1024), for a question\n"
"                       to be taken; at or over it, 429 \"quota\" until\n"
"                       some expire (268435456; 0: no limit); root's too\n"
"  --max-user-tokens N  tokens one owner's questions use a UTC day, all\n"
"                       together, as the gateway reports them, for a\n"
"                       model call to be made; at or over it, 429\n"
"                       \"quota\" (a run going on ends: \"limit\") until\n"
"                       the day ends (2000000; 0: no limit); root's too\n"
"  --max-user-tokens-per-minute N  tokens one owner's questions' model\n"
"                       calls hold and use in a UTC minute, all\n"
"                       together; a call that finds none left waits for\n"
"                       the next minute (half the --client's\n"
"                       tokens_per_minute for the --llm-prefix entry; 0,\n"
"                       as without one: no limit); root's too\n"
"  --max-user-denials N proxy denials one owner's questions cause within\n"
"                       the policy's quarantine window (60 s without\n"
"                       one), all together, for a tool call to be made;\n"
"                       at it, 429 \"quota\" (a run going on ends:\n"
"                       \"limit\") until the oldest is out of the window\n"
"                       (less than half the quarantine's threshold; 0:\n"
"                       no limit, as without a quarantine); root's too\n"
"server:\n"
"  --max-connections N  connections served at once, each a process of\n"
"                       its own; more get 503 \"busy\" (64)\n"
"  --max-user-connections N  of those, one peer uid's at once (half of\n"
"                       --max-connections, rounded up); more get 503\n"
"                       \"busy\"; root and the --api-peer have none\n"
"  --max-api-connections N  of those, the --api-peer's at once, all its\n"
"                       users together (nginx limits each: limit_conn;\n"
"                       half of --max-connections, rounded up); more get\n"
"                       503 \"busy\"; root has none, even as --api-peer\n"
"  --max-loaded-sessions N  sessions of 16 MiB (the most one holds) read\n"
"                       into memory at once, all connections together\n"
"                       (each 60 to 350 MB); a smaller session counts as\n"
"                       its size; one asker's at most half, rounded up.\n"
"                       A read past it waits up to 5 s, then 503\n"
"                       \"busy\" with Retry-After (2)\n"
"  --send-timeout MS    how long a client has to take an answer: a\n"
"                       question's events past its wall time, a\n"
"                       session whole (30000)\n"
"  --api-peer USER      the front end that publishes the socket (nginx's\n"
"                       workers: www-data on the appliance): each of its\n"
"                       requests names who nginx authenticated in\n"
"                       X-Airlock-User, and is refused (403) without;\n"
"                       none: every peer is its uid\n"
"  --random-session-ids a question makes no session: a new one is the\n"
"                       agent's to make (POST /v1/sessions: an id of its\n"
"                       128 random bits and their MAC for the asker,\n"
"                       nothing stored until its first question, the\n"
"                       key airlock:session:!key, shared by the agents\n"
"                       on that Redis), and a question in one not\n"
"                       stored is 404, as for another's, so no one\n"
"                       takes an id someone chose first; root's not\n"
"sessions are their first asker's, by the peer's uid (SO_PEERCRED) or\n"
"the --api-peer's X-Airlock-User; to others but root they do not exist;\n"
"an id POST /v1/sessions made is its asker's alone, to root too; root's\n"
"question in another's stored session is 409 \"session_owner\" unless\n"
"it sends X-Airlock-Others-Session: yes (airlock ask --others-session)\n"
"\n"
"a value is refused whole, never cut: empty, too long, or with a control\n"
"character (--system may hold newlines and tabs).  Exit status 2: a bad\n"
"option; 1: the policy does not fit them, or the socket\n");
}


/* a bad value, on one line (ag_show_value()) */

static void
ag_option_error(const char *name, const char *v, const char *want)
{
    fprintf(stderr, "airlock-agent: --%s wants %s, not ", name, want);
    ag_show_value(stderr, v);
}


/* digits alone: strtol() also takes leading spaces and a sign */

static long
ag_long_option(const char *name, const char *v, long min, long max)
{
    long   n;
    char  *end, want[64];

    errno = 0;
    n = (*v >= '0' && *v <= '9') ? strtol(v, &end, 10) : -1;

    if (n == -1 || errno != 0 || *end != '\0' || n < min || n > max) {
        snprintf(want, sizeof(want), "a number from %ld to %ld", min, max);
        ag_option_error(name, v, want);
        return -1;
    }

    return n;
}


/*
 * 1 to max bytes, and no control character (but newline and tab with
 * lines): each of these values is logged, and the names and the prefix
 * are sent, the prefix in the request target.  Never cut to fit.
 */

static int
ag_text_option(const char *name, const char *v, size_t max, int lines,
    const char *want)
{
    size_t          i, len;
    unsigned char   c;

    len = strlen(v);

    for (i = 0; i < len; i++) {
        c = (unsigned char) v[i];

        if ((c < 0x20 || c == 0x7f)
            && !(lines && (c == '\n' || c == '\t')))
        {
            break;
        }
    }

    if (len == 0 || len > max || i < len) {
        ag_option_error(name, v, want);
        return -1;
    }

    return 0;
}


static int
ag_parse_options(int argc, char **argv, ag_conf_t *conf)
{
    int          c, idx;
    char         host[256], err[512], pass[AR_PASS_MAX + 1];
    long        *slot, n, min, max, port;
    const char  *why;

    memset(conf, 0, sizeof(*conf));
    conf->client = "agent";
    conf->sandbox = "worker";
    conf->llm_prefix = "/v1/proxy/openai";
    conf->model = "gpt-4o-mini";
    conf->max_steps = 8;
    conf->max_tokens = 20000;
    conf->max_tool_bytes = 256 * 1024;
    conf->max_wall_ms = 120000;
    conf->max_denials = 3;
    conf->job_wall_ms = 10000;
    conf->session_ttl = 86400;
    conf->history_bytes = 256 * 1024;
    conf->max_connections = 64;
    conf->max_loaded_sessions = 2;
    conf->send_timeout_ms = 30000;
    conf->max_queued_jobs = 1024;
    conf->max_user_jobs = 4;
    conf->max_user_bytes = 256L << 20;
    conf->max_user_tokens = 2000000;
    conf->max_user_tpm = -1;                /* from the policy */
    conf->max_user_denials = -1;            /* from the policy */

    for ( ;; ) {
        idx = 0;
        c = getopt_long(argc, argv, "", ag_options, &idx);
        if (c == -1) {
            break;
        }

        slot = NULL;
        min = 1;
        max = 1000000000L;

        switch (c) {
        case 'l': conf->listen = optarg; break;
        case 'g': conf->gateway = optarg; break;
        case 'r': conf->redis = optarg; break;
        case 'u': conf->redis_user = optarg; break;
        case 'P': conf->redis_password_file = optarg; break;
        case 'p': conf->policy_file = optarg; break;
        case 'c': conf->client = optarg; break;
        case 's':
            conf->sandbox = strcmp(optarg, "none") == 0 ? NULL : optarg;
            break;
        case 'L': conf->llm_prefix = optarg; break;
        case 'm': conf->model = optarg; break;
        case 'S': conf->system_prompt = optarg; break;
        case 'A': conf->api_peer = optarg; break;
        case 'G': conf->listen_group = optarg; break;
        case 'R': conf->random_ids = 1; break;
        case 1: slot = &conf->max_steps; max = 1000; break;
        case 2: slot = &conf->max_tokens; break;
        case 3: slot = &conf->max_tool_bytes; max = 64L << 20; break;
        case 4: slot = &conf->max_wall_ms; max = 3600000; break;
        case 5: slot = &conf->max_denials; max = 1000; break;
        case 6:
            slot = &conf->job_wall_ms;
            min = AG_JOB_WALL_MIN;
            max = 3600000;
            break;
        case 7: slot = &conf->session_ttl; max = 366L * 86400; break;
        case 8:
            slot = &conf->history_bytes;
            min = 0;
            max = 64L << 20;
            break;
        case 9: slot = &conf->max_connections; max = 100000; break;
        case 12: slot = &conf->max_user_connections; max = 100000; break;
        case 16: slot = &conf->max_api_connections; max = 100000; break;
        case 15: slot = &conf->max_loaded_sessions; max = 1000; break;
        case 10: slot = &conf->send_timeout_ms; max = 3600000; break;
        case 11: slot = &conf->max_queued_jobs; max = 1000000; break;
        case 18:
            slot = &conf->max_user_jobs;
            min = 0;
            max = 1000000;
            break;
        case 13:
            slot = &conf->max_user_bytes;
            min = 0;
            max = 1L << 40;
            break;
        case 14:
            slot = &conf->max_user_tokens;
            min = 0;
            max = 1L << 40;
            break;
        case 19:
            slot = &conf->max_user_tpm;
            min = 0;
            max = 4294967295L;
            break;
        case 17:
            slot = &conf->max_user_denials;
            min = 0;
            max = 1000000;
            break;
        case 'h': ag_usage(stdout); exit(0);
        case 'V': printf("airlock-agent %s\n", AL_VERSION); exit(0);
        default: ag_usage(stderr); return -1;
        }

        if (slot != NULL) {
            n = ag_long_option(ag_options[idx].name, optarg, min, max);
            if (n < 0) {
                return -1;
            }
            *slot = n;
        }
    }

    if (conf->max_user_connections == 0) {
        conf->max_user_connections = (conf->max_connections + 1) / 2;
    }

    if (conf->max_api_connections == 0) {
        conf->max_api_connections = (conf->max_connections + 1) / 2;
    }

    if (optind != argc) {
        fprintf(stderr, "airlock-agent: an argument that is no option: "
                "each value follows its --option\n");
        ag_usage(stderr);
        return -1;
    }

    if (conf->listen == NULL || conf->gateway == NULL
        || conf->redis == NULL || conf->policy_file == NULL)
    {
        fprintf(stderr, "airlock-agent: --listen, --gateway, --redis and "
                "--policy are required\n");
        ag_usage(stderr);
        return -1;
    }

    /*
     * Every value whole, or refused here: an empty socket path is an
     * abstract socket (anyone in the namespace may bind it), a long one
     * is cut by the kernel's address, a prefix with '?', '#', a space or
     * a newline would make another request target.
     */

    if (ag_text_option("listen", conf->listen, AG_SOCKET_MAX, 0,
                       "a socket path of 1 to 107 bytes") != 0
        || ag_text_option("gateway", conf->gateway, AG_SOCKET_MAX, 0,
                          "a socket path of 1 to 107 bytes") != 0
        || ag_text_option("policy", conf->policy_file, 4096, 0,
                          "a file of 1 to 4096 bytes") != 0
        || ag_text_option("client", conf->client, AG_NAME_MAX, 0,
                          "a client's name of 1 to 256 bytes") != 0
        || (conf->sandbox != NULL
            && ag_text_option("sandbox", conf->sandbox, AG_NAME_MAX, 0,
                              "a client's name of 1 to 256 bytes, or "
                              "none") != 0)
        || ag_text_option("llm-prefix", conf->llm_prefix, AG_PREFIX_MAX, 0,
                          "the path of an llm entry's prefix, 1 to 256 "
                          "bytes") != 0
        || ag_text_option("model", conf->model, AG_NAME_MAX, 0,
                          "a model's name of 1 to 256 bytes") != 0
        || (conf->system_prompt != NULL
            && ag_text_option("system", conf->system_prompt, AG_PROMPT_MAX,
                              1, "text of 1 to 65536 bytes") != 0))
    {
        return -1;
    }

    if (conf->llm_prefix[0] != '/'
        || conf->llm_prefix[strcspn(conf->llm_prefix, "?#% ")] != '\0')
    {
        ag_option_error("llm-prefix", conf->llm_prefix, "a path: '/' "
                        "first, no '?', '#', '%' or space");
        return -1;
    }

    if (ag_redis_where(conf->redis, host, sizeof(host), &port, &why) != 0) {
        ag_option_error("redis", conf->redis, why);
        return -1;
    }

    if (ag_api_peer(conf) != 0 || ag_listen_group(conf) != 0) {
        return -1;
    }

    /*
     * Both or neither; the file is read here once, so that a missing or
     * unreadable one stops the agent at start, not its first question
     */
    if ((conf->redis_user == NULL) != (conf->redis_password_file == NULL)) {
        fprintf(stderr, "airlock-agent: --redis-user and "
                "--redis-password-file go together\n");
        return -1;
    }

    if (conf->redis_user != NULL) {
        if (ar_user_check(conf->redis_user, err, sizeof(err)) != 0) {
            ag_option_error("redis-user", conf->redis_user, err);
            return -1;
        }

        if (ar_password_read(conf->redis_password_file, pass, sizeof(pass),
                             err, sizeof(err)) != 0)
        {
            explicit_bzero(pass, sizeof(pass));
            fprintf(stderr, "airlock-agent: --redis-password-file: %s\n",
                    err);
            return -1;
        }

        explicit_bzero(pass, sizeof(pass));
    }

    return 0;
}


/*
 * --api-peer: a user's name or a uid, that exists (nginx's user, which a
 * typo would leave every /api/ client sharing its uid's sessions).  And
 * the uid a peer has when the kernel could not map it into the agent's
 * user namespace (systemd's PrivateUsers=, unshare -U): that is no one
 * in particular, and is refused.
 */

static int
ag_api_peer(ag_conf_t *conf)
{
    long            n;
    FILE           *f;
    char           *end;
    struct passwd  *pw;

    conf->overflow_uid = 65534;

    f = fopen("/proc/sys/kernel/overflowuid", "re");
    if (f != NULL) {
        if (fscanf(f, "%ld", &n) == 1 && n >= 0) {
            conf->overflow_uid = (uid_t) n;
        }
        fclose(f);
    }

    if (conf->api_peer == NULL) {
        return 0;
    }

    if (ag_text_option("api-peer", conf->api_peer, AG_NAME_MAX, 0,
                       "a user's name or uid") != 0)
    {
        return -1;
    }

    pw = getpwnam(conf->api_peer);

    if (pw != NULL) {
        conf->api_uid = pw->pw_uid;

    } else {
        errno = 0;
        n = (*conf->api_peer >= '0' && *conf->api_peer <= '9')
            ? strtol(conf->api_peer, &end, 10) : -1;

        if (n < 0 || errno != 0 || *end != '\0' || n > 0x7fffffffL) {
            ag_option_error("api-peer", conf->api_peer, "the name of a "
                            "user that exists, or a uid: nginx's");
            return -1;
        }

        conf->api_uid = (uid_t) n;
    }

    if (conf->api_uid == conf->overflow_uid) {
        ag_option_error("api-peer", conf->api_peer, "a user other than "
                        "the kernel's overflow uid");
        return -1;
    }

    return 0;
}


/*
 * --listen-group: a group's name or a gid, that exists by name or is
 * given as digits (as --api-peer), so that a typo stops the agent here
 * rather than leaving the socket to a group no one is in.  Whether the
 * socket can be that group's (made so in a set-group-ID directory of the
 * group, or given to it by a member or root) is known when it binds.
 */

static int
ag_listen_group(ag_conf_t *conf)
{
    long           n;
    char          *end;
    struct group  *gr;

    if (conf->listen_group == NULL) {
        return 0;
    }

    if (ag_text_option("listen-group", conf->listen_group, AG_NAME_MAX, 0,
                       "a group's name or gid") != 0)
    {
        return -1;
    }

    gr = getgrnam(conf->listen_group);

    if (gr != NULL) {
        conf->listen_gid = gr->gr_gid;
        return 0;
    }

    errno = 0;
    n = (*conf->listen_group >= '0' && *conf->listen_group <= '9')
        ? strtol(conf->listen_group, &end, 10) : -1;

    if (n < 0 || errno != 0 || *end != '\0' || n > 0x7fffffffL) {
        ag_option_error("listen-group", conf->listen_group, "the name of "
                        "a group that exists, or a gid");
        return -1;
    }

    conf->listen_gid = (gid_t) n;

    return 0;
}


/*
 * --llm-prefix is one of the policy's llm prefixes, exactly: the policy
 * has checked those (a path of its own characters, no '?', '#', '%', no
 * "." or ".." segment, no trailing '/'), and a prefix it has not is
 * refused by the gateway on every call.  Its entry, or NULL.
 */

static const al_llm_t *
ag_llm_prefix(ag_conf_t *conf)
{
    size_t           i, len;
    const al_llm_t  *l;

    len = strlen(conf->llm_prefix);

    for (i = 0; i < conf->policy->nllm; i++) {
        l = &conf->policy->llm[i];

        if (l->prefix.len == len
            && memcmp(l->prefix.data, conf->llm_prefix, len) == 0)
        {
            return l;
        }
    }

    ag_option_error("llm-prefix", conf->llm_prefix, "the prefix of one "
                    "of the policy's llm entries");

    return NULL;
}


/*
 * --model is one the gateway lets --client use under the entry l, as it
 * decides on each call: an alias of the entry's is its model (the
 * gateway maps it before anything looks at the body), and that model is
 * one of the client's models, its own list or else the entry's.  A
 * client the entry does not list may use none.  Otherwise the first
 * question's first call would be refused (403 "model"), after the agent
 * had started.
 */

static int
ag_llm_model(ag_conf_t *conf, const al_llm_t *l)
{
    int                     ok;
    char                    want[AG_MODELS_SHOWN + 2 * AG_NAME_MAX + 64];
    char                    list[AG_MODELS_SHOWN];
    size_t                  len;
    const al_llm_alias_t   *a;
    const al_llm_client_t  *lc;

    lc = al_llm_find_client(l, conf->pclient);

    if (lc == NULL) {
        fprintf(stderr, "airlock-agent: the llm entry \"%.*s\" of %s "
                "(--llm-prefix) has no client \"%s\" (--client): the "
                "gateway would refuse its every call\n", (int) l->name.len,
                l->name.data, conf->policy_file, conf->client);
        return -1;
    }

    len = strlen(conf->model);
    a = al_llm_alias_find(l, conf->model, len);

    ok = (a != NULL)
         ? al_llm_model_allowed(l, lc, a->model.data, a->model.len)
         : al_llm_model_allowed(l, lc, conf->model, len);

    if (ok) {
        return 0;
    }

    ag_llm_models(l, lc, list, sizeof(list));

    snprintf(want, sizeof(want), "a model the llm entry \"%.*s\" allows "
             "client \"%s\" (%s)", (int) l->name.len, l->name.data,
             conf->client, list);

    ag_option_error("model", conf->model, want);

    return -1;
}


/*
 * The names ag_llm_model() takes, in the policy's order (the models,
 * then the aliases of those), ", " between them, into buf: those that
 * fit, then how many more there are, so the error stays one short line
 * however many the policy lists.  A model is any YAML string: its
 * control characters are written as \xNN, so the line stays one.
 */

static void
ag_llm_models(const al_llm_t *l, const al_llm_client_t *lc, char *buf,
    size_t size)
{
    size_t           i, k, n, used, more, total, shown;
    unsigned char    c;
    const al_str_t  *name, *models;

    models = (lc->nmodels > 0) ? lc->models : l->models;
    n = (lc->nmodels > 0) ? lc->nmodels : l->nmodels;

    used = 0;
    more = 0;
    buf[0] = '\0';

    for (i = 0, total = n + l->naliases; i < total; i++) {
        if (i < n) {
            name = &models[i];

        } else {
            name = &l->aliases[i - n].model;

            if (!al_llm_model_allowed(l, lc, name->data, name->len)) {
                continue;
            }

            name = &l->aliases[i - n].name;
        }

        shown = 0;

        for (k = 0; k < name->len; k++) {
            c = (unsigned char) name->data[k];
            shown += (c < 0x20 || c == 0x7f) ? 4 : 1;
        }

        /* room for ", ", the name, and ", and 18446744073709551615 more" */
        if (more > 0 || used + 2 + shown + 32 >= size) {
            more++;
            continue;
        }

        if (used > 0) {
            buf[used++] = ',';
            buf[used++] = ' ';
        }

        for (k = 0; k < name->len; k++) {
            c = (unsigned char) name->data[k];

            if (c < 0x20 || c == 0x7f) {
                used += snprintf(buf + used, size - used, "\\x%02x", c);
            } else {
                buf[used++] = (char) c;
            }
        }

        buf[used] = '\0';
    }

    if (more > 0) {
        snprintf(buf + used, size - used, "%sand %zu more",
                 used > 0 ? ", " : "", more);
    }
}


static int
ag_load_tools(ag_conf_t *conf)
{
    char                msg[AL_ERR_MAX + 300], *text;
    uint64_t            cap, tpm;
    al_error_t          err;
    json_error_t        jerr;
    const al_llm_t     *llm;
    const al_client_t  *sandbox;

    conf->policy = al_policy_load(conf->policy_file, NULL, &err);
    if (conf->policy == NULL) {
        al_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "airlock-agent: %s\n", msg);
        return -1;
    }

    conf->pclient = al_policy_client(conf->policy, conf->client,
                                     strlen(conf->client));
    if (conf->pclient == NULL) {
        fprintf(stderr, "airlock-agent: %s has no client \"%s\" (--client)\n",
                conf->policy_file, conf->client);
        return -1;
    }

    sandbox = NULL;
    if (conf->sandbox != NULL) {
        sandbox = al_policy_client(conf->policy, conf->sandbox,
                                   strlen(conf->sandbox));
        if (sandbox == NULL) {
            fprintf(stderr, "airlock-agent: %s has no client \"%s\" "
                    "(--sandbox; none for no run_python)\n",
                    conf->policy_file, conf->sandbox);
            return -1;
        }
    }

    conf->psandbox = sandbox;

    llm = ag_llm_prefix(conf);

    if (llm == NULL || ag_llm_model(conf, llm) != 0) {
        return -1;
    }

    /*
     * Each model call names its output cap (ag_request()), where the
     * gateway would write its own: the run's tokens left, or the
     * gateway's cap for the client when that is less, so that a call
     * never asks for more than the gateway would let it (a client that
     * is refused over max_tokens), nor reserves more of its budgets.
     */

    /*
     * --max-user-denials: every denial counts against the agent's
     * client, whoever asked, and at the policy's quarantine threshold
     * within its window the proxy refuses that client outright, every
     * user's tool calls and model calls.  By default one owner may
     * cause less than half of it within that window, so no one user's
     * questions cut off every other's; without a quarantine, no limit.
     */

    conf->denials_window_ms = (conf->policy->quarantine.threshold > 0
                               && conf->policy->quarantine.window > 0)
                              ? (long) conf->policy->quarantine.window * 1000
                              : 60000;

    if (conf->max_user_denials < 0) {
        conf->max_user_denials =
            (conf->policy->quarantine.threshold == 0) ? 0
            : (conf->policy->quarantine.threshold < 3) ? 1
            : (long) (conf->policy->quarantine.threshold - 1) / 2;
    }

    /*
     * --max-user-tokens-per-minute: the gateway's tokens_per_minute for
     * the agent's client is every user's together, a fixed UTC minute,
     * and one user's question could take all of it, every other's model
     * calls refused ("budget") until the minute ended.  By default one
     * owner's calls hold and use half of it at most, so no one user's
     * questions take the whole minute; without one, no limit.
     */

    if (conf->max_user_tpm < 0) {
        tpm = (al_llm_find_client(llm, conf->pclient) != NULL)
              ? al_llm_find_client(llm, conf->pclient)->tokens_per_minute
              : 0;
        conf->max_user_tpm = (tpm == 0) ? 0
                             : (tpm < 2) ? 1 : (long) (tpm / 2);
    }

    conf->out_member = (llm->kind == AL_LLM_OPENAI) ? "max_completion_tokens"
                                                    : "max_tokens";
    cap = al_llm_default_max_tokens(al_llm_find_client(llm, conf->pclient));
    conf->out_cap = (cap > LONG_MAX) ? LONG_MAX : (long) cap;

    text = al_tools_json(conf->policy, conf->pclient, sandbox,
                         AL_TOOLS_OPENAI, &err);
    if (text == NULL) {
        al_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "airlock-agent: %s\n", msg);
        return -1;
    }

    conf->tools = json_loads(text, 0, &jerr);
    free(text);

    if (conf->tools == NULL) {
        fprintf(stderr, "airlock-agent: tool definitions: %s\n", jerr.text);
        return -1;
    }

    return 0;
}


/*
 * The socket is made 0600 (its umask for bind(), the one call that
 * decides a unix socket's mode), so that no one but the agent and root
 * connects before it has its group and mode: 0660 and --listen-group's,
 * or 0666 without one.  In a set-group-ID directory of that group (the
 * appliance's /run/airlock/agent) the socket is the group's as it is
 * made; elsewhere the agent gives it to the group (chown(), which the
 * unit's system call filter refuses).  The directory is the agent's own,
 * so the path still names the socket it bound.
 */

static int
ag_listen(const ag_conf_t *conf)
{
    int                 fd, rc;
    mode_t              mask;
    const char         *path;
    struct stat         st;
    struct sockaddr_un  sun;

    path = conf->listen;

    /* a stale socket from an earlier process; never anything else */
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            fprintf(stderr, "airlock-agent: %s exists and is not a socket\n",
                    path);
            return -1;
        }
        unlink(path);
    }

    /* non-blocking: a connection gone between poll and accept */
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd == -1) {
        fprintf(stderr, "airlock-agent: socket: %s\n", strerror(errno));
        return -1;
    }

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, path, strlen(path));

    mask = umask(0177);
    rc = bind(fd, (struct sockaddr *) &sun, sizeof(sun));
    umask(mask);

    if (rc == -1 || listen(fd, 64) == -1) {
        fprintf(stderr, "airlock-agent: listen on %s: %s\n", path,
                strerror(errno));
        close(fd);
        return -1;
    }

    if (conf->listen_group != NULL) {
        rc = stat(path, &st);

        if (rc == 0 && st.st_gid != conf->listen_gid) {
            rc = chown(path, (uid_t) -1, conf->listen_gid);
        }

        if (rc == -1) {
            fprintf(stderr, "airlock-agent: --listen-group %s: the socket "
                    "%s cannot be given to gid %lu: %s (the agent must be "
                    "a member of the group, or the socket's directory "
                    "set-group-ID and the group's)\n", conf->listen_group,
                    path, (unsigned long) conf->listen_gid,
                    strerror(errno));
            unlink(path);
            close(fd);
            return -1;
        }

        rc = chmod(path, 0660);

    } else {
        rc = chmod(path, 0666);
    }

    if (rc == -1) {
        fprintf(stderr, "airlock-agent: chmod %s: %s\n", path,
                strerror(errno));
        unlink(path);
        close(fd);
        return -1;
    }

    return fd;
}


static void
ag_serve(ag_conf_t *conf, int fd)
{
    int              rc;
    char            *p, session[AG_ID_MAX + 1], who[256];
    size_t           n;
    const char      *why;
    ag_peer_t        peer;
    ag_request_t     req;
    struct timeval   tv;

    /* a client that stops reading ends its run instead of holding it */
    tv.tv_sec = 30;
    tv.tv_usec = 0;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

    rc = ag_read_request(fd, &req, &why);
    if (rc != 0) {
        if (rc == -2) {
            ag_respond_error(fd, 408, "request_timeout", why);
        } else {
            ag_respond_error(fd, 400, "bad_request", why);
        }
        free(req.buf);
        return;
    }

    if (strcmp(req.path, "/healthz") == 0) {
        ag_respond(fd, 200, "text/plain", "ok\n", 0, 0);
        free(req.buf);
        return;
    }

    if (strcmp(req.path, "/v1/sessions") == 0) {
        if (strcmp(req.method, "POST") != 0) {
            ag_respond_error(fd, 405, "method", "a new session is POST");

        } else if (ag_peer(conf, fd, &req, &peer, who, sizeof(who)) != 0) {
            ag_respond_error(fd, 403, "peer", who);

        } else {
            ag_handle_new(conf, fd, &peer);
        }

        free(req.buf);
        return;
    }

    if (strncmp(req.path, "/v1/sessions/", 13) != 0) {
        ag_respond_error(fd, 404, "not_found",
                         "POST /v1/sessions, POST /v1/sessions/{id}/ask or "
                         "GET /v1/sessions/{id}");
        free(req.buf);
        return;
    }

    p = req.path + 13;
    n = strcspn(p, "/");

    if (!ag_id_ok(p, n)) {
        ag_respond_error(fd, 400, "bad_session",
                         "a session id is 1 to 64 of A-Z a-z 0-9 _ -");
        free(req.buf);
        return;
    }

    memcpy(session, p, n);
    session[n] = '\0';
    p += n;

    if (ag_peer(conf, fd, &req, &peer, who, sizeof(who)) != 0) {
        ag_respond_error(fd, 403, "peer", who);
        free(req.buf);
        return;
    }

    if (strcmp(p, "/ask") == 0 && strcmp(req.method, "POST") == 0) {
        ag_handle_ask(conf, fd, session, &peer, &req);

    } else if (*p == '\0' && strcmp(req.method, "GET") == 0) {
        ag_handle_session(conf, fd, session, &peer);

    } else if (strcmp(p, "/ask") == 0 || *p == '\0') {
        ag_respond_error(fd, 405, "method", "ask is POST, a session GET");

    } else {
        ag_respond_error(fd, 404, "not_found",
                         "POST /v1/sessions, POST /v1/sessions/{id}/ask or "
                         "GET /v1/sessions/{id}");
    }

    free(req.buf);
}


/*
 * 0, -1 a bad request, or -2 when it did not all come within
 * AG_REQUEST_MS: a client that sends a byte now and then would otherwise
 * hold its process, one of --max-connections, for as long as it likes.
 */

static int
ag_read_request(int fd, ag_request_t *req, const char **why)
{
    char     *end, *line, *h, *v, *q;
    size_t    hlen, clen, want, ulen, from;
    ssize_t   n;
    int       chunked, have_clen;
    int64_t   deadline;

    memset(req, 0, sizeof(*req));
    deadline = ag_now_ms() + AG_REQUEST_MS;

    req->buf = malloc(AG_REQUEST_MAX + 1);
    if (req->buf == NULL) {
        *why = "out of memory";
        return -1;
    }

    end = NULL;

    while (end == NULL) {
        if (req->len == AG_REQUEST_MAX) {
            *why = "request header too large";
            return -1;
        }

        n = ag_read_until(fd, req->buf + req->len,
                          AG_REQUEST_MAX - req->len, deadline);
        if (n == -2) {
            *why = "the request did not come whole within 30 s";
            return -2;
        }
        if (n <= 0) {
            *why = "connection closed before the request ended";
            return -1;
        }

        /*
         * What is new, and the 3 bytes before it: the whole of it each
         * time was quadratic in a header sent a byte at a time, and
         * strstr() stopped at a NUL, so a header with one never ended
         * (its connection held for its 30 s)
         */
        from = (req->len > 3) ? req->len - 3 : 0;
        req->len += n;
        req->buf[req->len] = '\0';
        end = memmem(req->buf + from, req->len - from, "\r\n\r\n", 4);
    }

    /* every string function below would stop at one */
    if (memchr(req->buf, '\0', end - req->buf) != NULL) {
        *why = "a NUL in the request header";
        return -1;
    }

    *end = '\0';
    hlen = end + 4 - req->buf;

    line = req->buf;
    h = strstr(line, "\r\n");
    if (h != NULL) {
        *h = '\0';
        h += 2;
    }

    if (ag_request_line(line, req) != 0) {
        *why = "bad request line: METHOD TARGET HTTP/1.1 (or 1.0), one "
               "space between, a method of 1 to 15 bytes, a target of 1 "
               "to 511";
        return -1;
    }

    q = strchr(req->path, '?');
    if (q != NULL) {
        *q = '\0';
    }

    clen = 0;
    chunked = 0;
    have_clen = 0;

    while (h != NULL && *h != '\0') {
        line = h;
        h = strstr(line, "\r\n");
        if (h != NULL) {
            *h = '\0';
            h += 2;
        }

        v = strchr(line, ':');
        if (v == NULL) {
            *why = "bad header line";
            return -1;
        }
        *v++ = '\0';
        v += strspn(v, " \t");

        if (strcasecmp(line, "Content-Length") == 0) {

            /* one, digits alone: two could frame two bodies */
            if (have_clen || ag_content_length(v, &clen) != 0) {
                *why = "Content-Length is one header, digits alone";
                return -1;
            }
            have_clen = 1;

        } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
            chunked = 1;

        } else if (strcasecmp(line, "X-Airlock-User") == 0) {

            /* one, whole: two, or one cut to fit, could name another */
            ulen = strcspn(v, " \t");
            if (req->user[0] != '\0' || !ag_api_user_ok(v, ulen)
                || v[ulen + strspn(v + ulen, " \t")] != '\0')
            {
                *why = "X-Airlock-User is one name of 1 to 64 of A-Z a-z "
                       "0-9 . _ @ -";
                return -1;
            }
            memcpy(req->user, v, ulen);
            req->user[ulen] = '\0';

        } else if (strcasecmp(line, "X-Airlock-Others-Session") == 0) {

            /* one, "yes" alone: root's consent, never guessed at */
            if (req->others || strncmp(v, "yes", 3) != 0
                || v[3 + strspn(v + 3, " \t")] != '\0')
            {
                *why = "X-Airlock-Others-Session is one header, \"yes\"";
                return -1;
            }
            req->others = 1;
        }
    }

    if (chunked) {
        *why = "send the body with a Content-Length";
        return -1;
    }

    if (clen > AG_REQUEST_MAX - hlen) {
        *why = "request body too large";
        return -1;
    }

    want = hlen + clen;

    while (req->len < want) {
        n = ag_read_until(fd, req->buf + req->len, want - req->len,
                          deadline);
        if (n == -2) {
            *why = "the request did not come whole within 30 s";
            return -2;
        }
        if (n <= 0) {
            *why = "connection closed before the body ended";
            return -1;
        }
        req->len += n;
    }

    req->buf[want] = '\0';
    req->body = req->buf + hlen;
    req->body_len = clen;

    return 0;
}


/*
 * "METHOD TARGET HTTP/1.1" (or 1.0) into req: one space between, the
 * method 1 to 15 bytes, the target 1 to 511, nothing after.  0, or -1.
 * Never cut to fit: sscanf()'s widths cut a long target to a shorter
 * one, served as that, and took a line with no version, or more after.
 */

static int
ag_request_line(const char *line, ag_request_t *req)
{
    size_t       mlen, plen;
    const char  *target, *version;

    mlen = strcspn(line, " ");
    target = line + mlen;

    if (mlen == 0 || mlen >= sizeof(req->method) || *target != ' ') {
        return -1;
    }

    target++;
    plen = strcspn(target, " ");
    version = target + plen;

    if (plen == 0 || plen >= sizeof(req->path) || *version != ' ') {
        return -1;
    }

    version++;

    if (strcmp(version, "HTTP/1.1") != 0
        && strcmp(version, "HTTP/1.0") != 0)
    {
        return -1;
    }

    memcpy(req->method, line, mlen);
    req->method[mlen] = '\0';
    memcpy(req->path, target, plen);
    req->path[plen] = '\0';

    return 0;
}


/*
 * A Content-Length value (its leading blanks already skipped): digits,
 * then blanks alone; one over AG_REQUEST_MAX is read as some number
 * over it, never wrapped.  0, or -1.
 */

static int
ag_content_length(const char *v, size_t *clen)
{
    size_t  n, digits;

    n = 0;

    for (digits = 0; v[digits] >= '0' && v[digits] <= '9'; digits++) {
        /* past the bound it stays past it: "request body too large" */
        n = (n > AG_REQUEST_MAX) ? n : n * 10 + (v[digits] - '0');
    }

    if (digits == 0 || v[digits + strspn(v + digits, " \t")] != '\0') {
        return -1;
    }

    *clen = n;

    return 0;
}


/*
 * Who asks, from the connection itself: the peer's uid as the kernel
 * gives it (SO_PEERCRED, taken at its connect()).  The --api-peer's
 * requests are nginx's for the people it authenticated: each names one
 * in X-Airlock-User (nginx sets it, over whatever its client sent), and
 * one that names none is refused, or every /api/ client would share the
 * sessions of nginx's uid.  That header from any other peer is refused
 * too: it is the sign of a front end the agent was not told of.  -1
 * (why set): refused, 403.
 */

static int
ag_peer(ag_conf_t *conf, int fd, const ag_request_t *req, ag_peer_t *peer,
    char *why, size_t size)
{
    struct ucred  uc;
    socklen_t     len;

    memset(peer, 0, sizeof(*peer));

    len = sizeof(uc);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == -1
        || len != sizeof(uc))
    {
        snprintf(why, size, "the agent cannot tell who you are (no peer "
                 "credentials: %s)", strerror(errno));
        return -1;
    }

    if (uc.uid == conf->overflow_uid) {
        snprintf(why, size, "the agent cannot tell who you are: your uid "
                 "is not mapped in its user namespace (it shows as %lu); "
                 "run the agent in the host's", (unsigned long) uc.uid);
        return -1;
    }

    if (conf->api_peer != NULL && uc.uid == conf->api_uid) {
        if (req->user[0] == '\0') {
            snprintf(why, size, "a request from --api-peer %s names the "
                     "user its front end authenticated in X-Airlock-User: "
                     "this one names none", conf->api_peer);
            return -1;
        }

        snprintf(peer->owner, sizeof(peer->owner), "api:%s", req->user);
        return 0;
    }

    if (req->user[0] != '\0') {
        snprintf(why, size, "X-Airlock-User comes from the --api-peer "
                 "alone, not from uid %lu", (unsigned long) uc.uid);
        return -1;
    }

    snprintf(peer->owner, sizeof(peer->owner), "uid:%lu",
             (unsigned long) uc.uid);
    peer->admin = (uc.uid == 0);

    return 0;
}


/* an X-Airlock-User name: 1 to AG_API_USER_MAX of A-Z a-z 0-9 . _ @ - */

static int
ag_api_user_ok(const char *s, size_t len)
{
    size_t  i;
    char    c;

    if (len == 0 || len > AG_API_USER_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '.' || c == '_'
              || c == '@' || c == '-'))
        {
            return 0;
        }
    }

    return 1;
}


/*
 * Whether peer may read s and ask in it: its owner's, and root's on the
 * socket.  A session stored before sessions had owners has none: root's
 * alone, since anyone might have asked in it.
 */

static int
ag_session_mine(json_t *s, const ag_peer_t *peer)
{
    const char  *owner;

    if (peer->admin) {
        return 1;
    }

    owner = json_string_value(json_object_get(s, "owner"));

    return owner != NULL && strcmp(owner, peer->owner) == 0;
}


/* the answer for a session that is not there, or not the asker's */

static const char *
ag_no_session(const ag_conf_t *conf)
{
    return conf->random_ids ? AG_NO_SESSION_NEW : AG_NO_SESSION;
}


/*
 * Whether the session is one peer may not know of: 1 stored, and another
 * owner's (or none's, or damaged, whose owner cannot be read); or not
 * stored yet, and its lock another asker's (its first question runs).
 * A question refused busy or damaged is 404 to such a peer, as a
 * session that is not there; Redis failing is not "hidden" (503 says
 * nothing).  -1: not known now, the memory to read it whole is taken
 * (ag_session_read()).
 *
 * Told from the session's head (ag_session_owner()) where it says: a
 * question refused busy in its own session read it whole, each of them
 * at once.  Whole when the head says nothing sure (no owner there), or
 * Redis refused the look at it (a Redis user without GETRANGE).
 */

static int
ag_session_hidden(const ag_conf_t *conf, redisContext *c,
    const char *session, const ag_peer_t *peer)
{
    int          hidden;
    char         owner[AG_OWNER_MAX];
    const char  *asker;
    redisReply  *r;

    if (peer->admin) {
        return 0;
    }

    switch (ag_session_owner(c, session, owner, sizeof(owner))) {

    case 1:
        return strcmp(owner, peer->owner) != 0;

    case 3:
        return 1;

    case 0:
        /* none stored: hidden when its lock is another asker's */
        hidden = 0;

        r = redisCommand(c, "GET airlock:session:%s:lock", session);

        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            asker = strchr(r->str, ' ');
            hidden = (asker != NULL && strcmp(asker + 1, peer->owner) != 0);
        }

        freeReplyObject(r);

        return hidden;

    default:
        return ag_session_whole_hidden(conf, c, session, peer);
    }
}


/* ag_session_hidden(), the session read whole: its head did not tell */

static int
ag_session_whole_hidden(const ag_conf_t *conf, redisContext *c,
    const char *session, const ag_peer_t *peer)
{
    int          damaged, busy, hidden;
    char         err[256];
    json_t      *s;
    const char  *asker;
    redisReply  *r;

    s = ag_session_read(conf, c, session, peer->owner, &damaged, &busy,
                        NULL, NULL, NULL, err, sizeof(err));
    if (s == NULL) {
        return busy ? -1 : damaged;
    }

    hidden = !ag_session_mine(s, peer);

    /* none stored (a stored one has its question's messages) */
    if (!hidden && json_array_size(json_object_get(s, "messages")) == 0
        && json_array_size(json_object_get(s, "runs")) == 0)
    {
        r = redisCommand(c, "GET airlock:session:%s:lock", session);

        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            asker = strchr(r->str, ' ');
            hidden = (asker != NULL && strcmp(asker + 1, peer->owner) != 0);
        }

        freeReplyObject(r);
    }

    json_decref(s);
    ag_load_done();

    return hidden;
}


/*
 * Whether a question's session is one peer may not know of, as told
 * before its lock is taken: a stored session of another owner's (its
 * head read alone; the whole of it when its head says nothing sure or
 * Redis refused the look at the head), or one stored damaged.
 * A session not stored yet is left to its lock, which names the asker
 * of its first question, unless none_hidden: one the asker may not
 * start (--random-session-ids, an id not theirs from POST
 * /v1/sessions) is refused on the same look, as another's is.  It took
 * the lock, read the session and let the lock go first: three more
 * round trips, so the time told an id stored from one not, and a full
 * Redis refused the lock (503, not 404).  The check after the lock
 * stays: it is the one that holds should the session be stored between
 * the two.  -1: not known now (ag_session_hidden()).
 */

static int
ag_session_foreign(const ag_conf_t *conf, redisContext *c,
    const char *session, const ag_peer_t *peer, int none_hidden)
{
    char  owner[AG_OWNER_MAX];

    if (peer->admin) {
        return 0;
    }

    switch (ag_session_owner(c, session, owner, sizeof(owner))) {

    case 1:
        return strcmp(owner, peer->owner) != 0;

    case 3:
        return 1;

    case 0:
        /* none stored: the lock tells, when the asker may start it */
        return none_hidden;

    default:
        /*
         * its head says nothing sure, or Redis refused the look at it (a
         * Redis user without GETRANGE): the whole session
         */
        return ag_session_whole_hidden(conf, c, session, peer);
    }
}


/*
 * Memory for a session of need bytes read (--max-loaded-sessions): 0
 * held, in this process's slot until ag_load_done(), -1 not within
 * AG_LOAD_WAIT_MS (or the agent is stopping), -2 the same, the owner's
 * share being what was full.  Each connection's process reads, parses
 * and keeps its own copy of a session: a session at 16 MiB takes 60 to
 * 350 MB as it is read and stored (one planted, up to 80 times its
 * size), so 32 questions in one user's large session, or GETs of it, at
 * once (--max-user-connections), took gigabytes, and the unit's
 * MemoryMax had the OOM killer end every other user's runs with them.
 *
 * One owner (the asker) holds at most half of it, rounded up to a
 * session at the bound: one user's GETs of a large session, held
 * unread, or questions in two, held every other user's read to 503
 * "busy" for as long as they liked, as a user's connections once held
 * every place.
 *
 * The slot is set first (its owner, then its bytes), then every slot
 * summed: of two processes that do so at once, the one that sums last
 * sees the other's, so the sum each one that goes on saw is never less
 * than what is held.  One over lets its slot go and tries again a little
 * later, never holding what it waits for, so no reader waits on
 * another's wait; a session's own size is at most AG_SESSION_MAX, which
 * always fits.
 */

static int
ag_load_take(const ag_conf_t *conf, size_t need, const char *owner)
{
    long             i;
    int64_t          until;
    uint64_t         sum, own, max, share, tag, v;
    struct timespec  ts;

    if (ag_load_slot < 0 || need == 0) {
        return 0;
    }

    max = (uint64_t) conf->max_loaded_sessions * AG_SESSION_MAX;
    share = (uint64_t) ((conf->max_loaded_sessions + 1) / 2)
            * AG_SESSION_MAX;
    tag = ag_owner_tag(owner);
    until = ag_now_ms() + AG_LOAD_WAIT_MS;

    for ( ;; ) {
        __atomic_store_n(&ag_load_owners[ag_load_slot], tag,
                         __ATOMIC_SEQ_CST);
        __atomic_store_n(&ag_loads[ag_load_slot], (uint64_t) need,
                         __ATOMIC_SEQ_CST);

        sum = 0;
        own = 0;

        for (i = 0; i < conf->max_connections; i++) {
            v = __atomic_load_n(&ag_loads[i], __ATOMIC_SEQ_CST);
            sum += v;

            if (v != 0
                && __atomic_load_n(&ag_load_owners[i], __ATOMIC_SEQ_CST)
                   == tag)
            {
                own += v;
            }
        }

        if (sum <= max && own <= share) {
            return 0;
        }

        __atomic_store_n(&ag_loads[ag_load_slot], 0, __ATOMIC_SEQ_CST);

        if (ag_stopping || ag_now_ms() >= until) {
            return (own > share) ? -2 : -1;
        }

        /* 10 to 49 ms, each process its own: no two in step */
        ts.tv_sec = 0;
        ts.tv_nsec = (10 + (long) ((uint64_t) (ag_now_ms() + getpid())
                                   % 40)) * 1000000L;
        nanosleep(&ts, NULL);
    }
}


/* an owner as a number for the slots' map (FNV-1a), never 0 */

static uint64_t
ag_owner_tag(const char *owner)
{
    uint64_t              h;
    const unsigned char  *p;

    h = 0xcbf29ce484222325ULL;

    for (p = (const unsigned char *) owner; *p != '\0'; p++) {
        h = (h ^ *p) * 0x100000001b3ULL;
    }

    return h | 1;
}


/* the memory ag_load_take() held, let go: the session is freed */

static void
ag_load_done(void)
{
    if (ag_load_slot >= 0) {
        __atomic_store_n(&ag_loads[ag_load_slot], 0, __ATOMIC_SEQ_CST);
    }
}


/*
 * ag_session_load() within --max-loaded-sessions: the session's size is
 * looked at first (the same script, which reads none larger than what is
 * held), that memory held (ag_load_take()), and the session read; one
 * that grew meanwhile is held for again, a few times.  The memory is
 * held on return of a session, until ag_load_done(); *busy when it was
 * not to be had (err set): 503 "busy".
 */

static json_t *
ag_session_read(const ag_conf_t *conf, redisContext *c, const char *id,
    const char *owner, int *damaged, int *busy, char **raw,
    size_t *raw_len, char *version, char *err, size_t size)
{
    int      i, rc;
    size_t   held, need;
    json_t  *s;

    *busy = 0;
    held = 0;
    rc = -1;

    ag_load_done();

    for (i = 0; i < 4; i++) {
        s = ag_session_load(c, id, owner, held, &need, damaged, raw,
                            raw_len, version, err, size);
        if (s != NULL) {
            return s;
        }

        ag_load_done();

        if (need == 0) {
            return NULL;                    /* damaged, or Redis failed */
        }

        rc = ag_load_take(conf, need, owner);
        if (rc != 0) {
            break;
        }

        held = need;
    }

    ag_load_done();

    *busy = 1;
    snprintf(err, size, "%s", rc == -2 ? AG_LOADS_MINE : AG_LOADS_FULL);

    return NULL;
}


/* read(), once something came before deadline; -2 when nothing did */

static ssize_t
ag_read_until(int fd, char *buf, size_t len, int64_t deadline)
{
    int             rc;
    int64_t         left;
    struct pollfd   pfd;

    for ( ;; ) {
        left = deadline - ag_now_ms();
        if (left <= 0) {
            return -2;
        }

        pfd.fd = fd;
        pfd.events = POLLIN;
        pfd.revents = 0;

        rc = poll(&pfd, 1, (int) left);

        if (rc == -1 && errno == EINTR) {
            if (ag_stopping) {
                return -1;
            }
            continue;
        }

        if (rc == 0) {
            return -2;
        }

        if (rc == -1) {
            return -1;
        }

        return read(fd, buf, len);
    }
}


static const char *
ag_status_text(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default:  return "Error";
    }
}


/*
 * deadline: when the client must have taken the answer (it is cut
 * then), or 0 for a short one, which the socket's buffer takes at once;
 * retry: a Retry-After in seconds, or 0 for none
 */

static void
ag_respond(int fd, int status, const char *ctype, const char *body,
    int64_t deadline, int retry)
{
    char  head[256], after[32];
    int   n;

    after[0] = '\0';

    if (retry > 0) {
        snprintf(after, sizeof(after), "Retry-After: %d\r\n", retry);
    }

    n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                 "Content-Length: %zu\r\n%sConnection: close\r\n\r\n",
                 status, ag_status_text(status), ctype, strlen(body), after);

    if (ag_write_all(fd, head, n, deadline) == 0) {
        ag_write_all(fd, body, strlen(body), deadline);
    }
}


/*
 * A question refused before its run by one of its payer's quotas: over
 * it (msg, the quota's word: whose, how much, the option, when it
 * frees), 429 "quota" and the log's line; else Redis failed (err), 503
 * "redis".
 */

static void
ag_quota_refuse(int fd, const char *session, int over, const char *msg,
    const char *err)
{
    if (over) {
        fprintf(stderr, "airlock-agent: session %s: a question refused: "
                "%s\n", session, msg);
        ag_respond_error(fd, 429, "quota", msg);
        return;
    }

    ag_respond_error(fd, 503, "redis", err);
}


static void
ag_respond_error(int fd, int status, const char *code, const char *message)
{
    char    *text;
    json_t  *j;

    j = json_pack("{s:s, s:s}", "error", code, "message", message);
    text = (j != NULL) ? json_dumps(j, JSON_COMPACT) : NULL;

    ag_respond(fd, status, "application/json",
               text != NULL ? text : "{\"error\":\"internal\"}", 0,
               status == 503 && strcmp(code, "busy") == 0 ? 1 : 0);

    free(text);
    json_decref(j);
}

static void
ag_handle_ask(ag_conf_t *conf, int fd, const char *session,
    const ag_peer_t *peer, ag_request_t *req)
{
    int              damaged, rc, made, busy, hidden;
    char             err[256], lock[AG_BOUNDARY_LEN + 1 + AG_OWNER_MAX],
                     payer[AG_OWNER_MAX], msg[512];
    pid_t            keeper;
    json_t          *body, *prompt;
    int64_t          until, stored;
    long long        used, left;
    const char      *owner, *other;
    ag_run_t         run;
    json_error_t     jerr;
    struct timeval   tv;
    static const char  head[] =
        "HTTP/1.1 200 OK\r\n"
        "Content-Type: text/event-stream\r\n"
        "Cache-Control: no-cache\r\n"
        "X-Accel-Buffering: no\r\n"
        "Connection: close\r\n\r\n";

    body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES,
                      &jerr);
    prompt = (body != NULL) ? json_object_get(body, "prompt") : NULL;

    if (!json_is_string(prompt) || json_string_length(prompt) == 0
        || json_string_length(prompt) > AG_PROMPT_MAX)
    {
        ag_respond_error(fd, 400, "bad_prompt", "the body is {\"prompt\": "
                         "\"...\"}, a prompt of 1 to 65536 bytes");
        json_decref(body);
        return;
    }

    if (ag_stopping) {
        ag_respond_error(fd, 503, "stopping", "the agent is stopping: ask "
                         "again once it is back");
        json_decref(body);
        return;
    }

    memset(&run, 0, sizeof(run));
    run.conf = conf;
    run.fd = fd;
    memcpy(run.session, session, strlen(session) + 1);

    if (ag_random_hex(run.run_id, AG_BOUNDARY_LEN) != 0
        || ag_random_hex(run.boundary, AG_BOUNDARY_LEN) != 0)
    {
        ag_respond_error(fd, 503, "random", "no random bytes");
        json_decref(body);
        return;
    }

    run.redis = ag_redis_connect(conf, err, sizeof(err));
    if (run.redis == NULL) {
        ag_respond_error(fd, 503, "redis", err);
        json_decref(body);
        return;
    }

    /*
     * An id of the agent's (POST /v1/sessions) is its asker's by its
     * tag: one whose tag is another's (or forged) is refused here, for
     * all but root before anything of the session is read, so the
     * answer and its time are the same whether it is stored or not, and
     * it never takes the lock its owner's question would wait on.
     */
    made = ag_session_made(run.redis, session, peer->owner, err,
                           sizeof(err));
    if (made == -1) {
        ag_respond_error(fd, 503, "redis", err);
        redisFree(run.redis);
        json_decref(body);
        return;
    }

    /*
     * Another's session is refused before its lock is taken: taken first,
     * a question in it held the lock for the time of a read of the
     * session, and its owner's questions meanwhile were refused busy.
     */
    rc = (made == 2 && !peer->admin)
         ? 1 : ag_session_foreign(conf, run.redis, session, peer,
                                  conf->random_ids && made != 1);
    if (rc != 0) {
        if (rc == 1) {
            ag_respond_error(fd, 404, "no_session", ag_no_session(conf));
        } else {
            ag_respond_error(fd, 503, "busy", AG_LOADS_FULL);
        }
        redisFree(run.redis);
        json_decref(body);
        return;
    }

    /*
     * The lock names the run and its asker: a session's first question
     * is not stored until it ends, and its lock is what tells another
     * asker, meanwhile, that the session is not theirs.
     */
    snprintf(lock, sizeof(lock), "%s %s", run.run_id, peer->owner);

    rc = ag_session_lock(run.redis, session, lock, AG_LOCK_TTL, err,
                         sizeof(err));
    if (rc != 0) {
        hidden = (rc == 1 || rc == 2)
                 ? ag_session_hidden(conf, run.redis, session, peer) : 0;

        if (hidden == 1) {
            ag_respond_error(fd, 404, "no_session", ag_no_session(conf));
        } else if (hidden == -1) {
            ag_respond_error(fd, 503, "busy", AG_LOADS_FULL);
        } else if (rc == 1) {
            ag_respond_error(fd, 409, "session_busy",
                             "another question is running in this "
                             "session");
        } else if (rc == 2) {
            ag_respond_error(fd, 409, "session_damaged", err);
        } else {
            ag_respond_error(fd, 503, "redis", err);
        }
        redisFree(run.redis);
        json_decref(body);
        return;
    }

    /*
     * A new session is the asker's.  The memory it takes is held until
     * the run ends (--max-loaded-sessions): without it a user's questions
     * in their own large session, at once, had the OOM killer end every
     * user's runs.
     */
    run.session_obj = ag_session_read(conf, run.redis, session,
                                      peer->owner, &damaged, &busy,
                                      &run.loaded, &run.loaded_len,
                                      run.version, err, sizeof(err));
    if (run.session_obj == NULL
        || !ag_session_mine(run.session_obj, peer))
    {
        if (run.session_obj != NULL || (damaged && !peer->admin)) {
            ag_respond_error(fd, 404, "no_session", ag_no_session(conf));
        } else if (busy) {
            ag_respond_error(fd, 503, "busy", err);
        } else {
            ag_respond_error(fd, damaged ? 409 : 503,
                             damaged ? "session_damaged" : "redis", err);
        }
        goto refused;
    }

    /*
     * --random-session-ids: a question makes no session but in an id of
     * the agent's for its asker (POST /v1/sessions: a nonce of 128
     * random bits and its tag); another not stored is 404, whatever its
     * id, so no id can be taken first: one a person chose could be, by
     * any asker, and then it was theirs, and so could one of the CLI's
     * form picked by hand ("0000...").  An id of the agent's form whose
     * tag is not the asker's is 404 with or without the option, to
     * root too.  The answer is another's session's, word for word, so
     * it tells nothing of whether one is stored under that id.
     */
    if (run.loaded == NULL
        && (made == 2 || (conf->random_ids && !peer->admin && made != 1)))
    {
        ag_respond_error(fd, 404, "no_session", ag_no_session(conf));
        goto refused;
    }

    /*
     * --max-user-bytes: the session is counted against its owner's
     * quota (root's question in another's too; one stored before owners
     * is root's alone, counted as root's), and a question is refused
     * while the owner's sessions, those not expired, hold as much:
     * before the model is called, so nothing is spent.  Questions
     * running meanwhile store theirs all the same: an owner is over by
     * what those add, at most.  Without it one user's questions (each
     * stored, the model's failures too, kept --session-ttl), in as many
     * sessions as they liked, filled Redis, which holds every user's.
     */
    owner = json_string_value(json_object_get(run.session_obj, "owner"));
    if (owner == NULL || strlen(owner) >= sizeof(payer)
        || strspn(owner, AG_OWNER_CHARS) != strlen(owner))
    {
        owner = peer->owner;                /* none, or not an agent's */
    }
    memcpy(payer, owner, strlen(owner) + 1);

    /*
     * Root asks in every session, but not unknowingly in another's: a
     * question and its answer are stored in the session, for its owner
     * to read, and root's runs see routes its owner's may not.  Without
     * this, a user who took an id first (one root would choose, without
     * --random-session-ids) read what root asked and was told there.
     * Root says so (X-Airlock-Others-Session: yes, airlock ask
     * --others-session) to ask in it all the same; a session not stored
     * is root's, and one stored before owners is root's alone.
     */
    other = json_string_value(json_object_get(run.session_obj, "owner"));
    if (peer->admin && !req->others && run.loaded != NULL && other != NULL
        && strcmp(other, peer->owner) != 0)
    {
        snprintf(msg, sizeof(msg), "session %s is %s's, not yours: your "
                 "question and its answer would be stored in it, for its "
                 "owner to read; ask in a session of your own, or send "
                 "X-Airlock-Others-Session: yes (airlock ask "
                 "--others-session) to ask in it all the same", session,
                 owner != peer->owner ? payer : "another owner");
        ag_respond_error(fd, 409, "session_owner", msg);
        goto refused;
    }

    if (conf->max_user_bytes > 0) {
        rc = ag_quota_check(run.redis, payer, conf->max_user_bytes, &used,
                            &left, err, sizeof(err));
        if (rc != 0) {
            if (rc == 1) {
                snprintf(msg, sizeof(msg), "the sessions of %s hold %lld "
                         "bytes in Redis, at or over --max-user-bytes "
                         "(%ld): no question is taken until some expire "
                         "(--session-ttl), the oldest in %lld s", payer,
                         used, conf->max_user_bytes,
                         left > 0 ? (left + 999) / 1000 : 0);
            }
            ag_quota_refuse(fd, session, rc == 1, msg, err);
            goto refused;
        }
    }

    /*
     * --max-user-tokens: the tokens of the payer's questions this UTC
     * day, counted after each model call (ag_run_ask()), and a question
     * refused while they are as many, before the model is called.
     * Without it one user (a uid, or one of the --api-peer's) spent the
     * gateway's budget for every user: the gateway sees one client, the
     * agent, however many ask.
     */
    run.payer = payer;
    run.asker = peer->owner;

    if (conf->max_user_tokens > 0) {
        rc = ag_tokens_charge(run.redis, payer, AG_COUNT_DAY, 0, NULL, 0,
                              &used, &left, err, sizeof(err));
        if (rc != 0 || used >= conf->max_user_tokens) {
            if (rc == 0) {
                ag_tokens_over(conf, payer, used, left, msg, sizeof(msg));
            }
            ag_quota_refuse(fd, session, rc == 0, msg, err);
            goto refused;
        }
    }

    /*
     * --max-user-denials: the proxy denials the payer's questions caused
     * within the policy's quarantine window, and a question refused
     * while they are as many, before the model is called.  Every denial
     * counts against the agent's client, whoever asked, and at the
     * quarantine's threshold the proxy cut that client off, every
     * user's tool calls and model calls: one user's questions, each
     * within --max-denials, did it for all.
     */

    if (conf->max_user_denials > 0) {
        rc = ag_denials_charge(run.redis, payer, AG_DENIALS_LOOK, NULL,
                               conf->max_user_denials,
                               conf->denials_window_ms, &used, &left, err,
                               sizeof(err));
        if (rc != 0 || used >= conf->max_user_denials) {
            if (rc == 0) {
                ag_denials_over(conf, payer, used, left, msg, sizeof(msg));
            }
            ag_quota_refuse(fd, session, rc == 0, msg, err);
            goto refused;
        }
    }

    /* the lock holds as long as this process lives, past the lease */
    keeper = ag_session_keep(conf, session, lock, fd);

    if (conf->sandbox != NULL) {
        ag_jobs_sweep(&run);
    }

    /*
     * The client takes the events by the end of the run's wall time and
     * --send-timeout: one that reads a byte now and then would otherwise
     * hold its process, one of --max-connections, and the session's
     * lock, for as long as it likes.
     */
    run.send_deadline_ms = ag_now_ms() + conf->max_wall_ms
                           + conf->send_timeout_ms;

    if (ag_write_all(fd, head, sizeof(head) - 1, run.send_deadline_ms)
        != 0)
    {
        run.client_gone = 1;
    }

    ag_run_ask(&run, json_string_value(prompt));

    /*
     * Redis may have restarted during the run, or be restarting: the
     * question is stored on a new connection once it is back and has
     * loaded its data (it answers LOADING until then: that is no
     * failure either), for a while.  The store is the same however
     * often it is sent.
     */

    stored = ag_now_ms();
    until = stored + AG_STORE_RETRY_MS;

    for ( ;; ) {
        rc = ag_redis_revive(&run, err, sizeof(err));
        if (rc == 0) {
            rc = ag_session_store(run.redis, session, lock, payer,
                                  run.session_obj, conf->session_ttl,
                                  run.loaded, run.loaded_len,
                                  run.version, run.run_id, err,
                                  sizeof(err));
        }

        if (rc == 0 || rc == 1
            || (rc == -1 && run.redis != NULL && run.redis->err == 0)
            || ag_now_ms() >= until)
        {
            break;
        }

        tv.tv_sec = 0;
        tv.tv_usec = 100000;
        select(0, NULL, NULL, NULL, &tv);
    }

    if (rc != 0) {
        fprintf(stderr, "airlock-agent: session %s not stored: %s\n",
                session, err);
    }

    /*
     * the calls not counted yet, and a hold not let go (ag_run_ask()
     * does both after each call, Redis permitting), once Redis is back
     */
    if ((run.unpaid > 0 || run.hold > 0)
        && (conf->max_user_tokens > 0 || conf->max_user_tpm > 0)
        && run.redis != NULL && run.redis->err == 0
        && ag_tokens_charge(run.redis, payer, ag_tokens_counted(conf),
                            run.unpaid, run.run_id, run.hold, &used, &left,
                            msg, sizeof(msg))
           != 0)
    {
        fprintf(stderr, "airlock-agent: session %s: %lld tokens not "
                "counted: %s\n", session, run.unpaid, msg);
    }

    ag_session_keep_end(keeper);

    if (run.redis != NULL) {
        ag_session_unlock(run.redis, session, lock);
    }

    /*
     * "done" last, once the session is stored and free: a client that
     * asks again as soon as it sees it used to find the lock still
     * taken (409), the longer while Redis was restarting.  The store's
     * time is not the client's to take its events in.
     */

    run.send_deadline_ms += ag_now_ms() - stored;

    if (rc != 0) {
        ag_event(&run, "error", json_pack("{s:s, s:s, s:s}", "code",
                                          "not_stored", "message",
                                          "the question was not stored "
                                          "in the session", "reason",
                                          err));
    }

    ag_run_done(&run);

    redisFree(run.redis);
    free(run.loaded);
    json_decref(run.session_obj);
    json_decref(body);

    /* on the ways out above, the process's end lets it go (ag_reap()) */
    ag_load_done();

    return;

refused:

    /* answered before the run: the session's lock let go, nothing stored */

    ag_session_unlock(run.redis, session, lock);
    redisFree(run.redis);
    free(run.loaded);
    json_decref(run.session_obj);
    json_decref(body);
}


/*
 * POST /v1/sessions: a new session of the asker's, under an id of the
 * agent's (ag_session_new(): a nonce and its MAC for the asker), {"id":
 * ID}, 201.  Nothing is stored until its first question: the id is the
 * asker's by its tag alone (ag_session_made()), so a caller asking for
 * ids in a loop fills nothing (each used to be stored, kept an hour).
 * With --random-session-ids no other session is made (a question in one
 * not stored is 404), so an id someone chose, by hand or not, can never
 * be taken first by another asker.
 */

static void
ag_handle_new(ag_conf_t *conf, int fd, const ag_peer_t *peer)
{
    char           err[256], id[AG_NEW_ID_LEN + 1], *text;
    json_t        *j;
    redisContext  *c;

    c = ag_redis_connect(conf, err, sizeof(err));
    if (c == NULL) {
        ag_respond_error(fd, 503, "redis", err);
        return;
    }

    if (ag_session_new(c, peer->owner, id, err, sizeof(err)) != 0) {
        redisFree(c);
        ag_respond_error(fd, 503, "redis", err);
        return;
    }

    redisFree(c);

    j = json_pack("{s:s}", "id", id);
    text = (j != NULL) ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);

    if (text == NULL) {
        ag_respond_error(fd, 503, "internal", "out of memory");
        return;
    }

    ag_respond(fd, 201, "application/json", text, 0, 0);
    free(text);
}


/*
 * GET /v1/sessions/{id}.  Another's session is told from its head alone
 * (ag_session_owner(), or its id's tag) before it is read: read whole
 * first, up to 16 MiB, its 404 came as much later than one for a
 * session not there as it was large, and told whether it was stored.
 */

static void
ag_handle_session(ag_conf_t *conf, int fd, const char *session,
    const ag_peer_t *peer)
{
    int            damaged, hidden, busy;
    char           err[256], owner[AG_OWNER_MAX], *text;
    redisContext  *c;
    json_t        *s;

    c = ag_redis_connect(conf, err, sizeof(err));
    if (c == NULL) {
        ag_respond_error(fd, 503, "redis", err);
        return;
    }

    if (!peer->admin) {
        hidden = ag_session_made(c, session, peer->owner, err,
                                 sizeof(err));
        if (hidden == -1) {
            redisFree(c);
            ag_respond_error(fd, 503, "redis", err);
            return;
        }

        hidden = (hidden == 2);

        if (!hidden) {
            switch (ag_session_owner(c, session, owner, sizeof(owner))) {
            case 1:
                hidden = (strcmp(owner, peer->owner) != 0);
                break;
            case 0:
            case 3:
                hidden = 1;             /* none, or damaged: 404 to all
                                           but root */
                break;
            default:
                break;                  /* read whole: it says */
            }
        }

        if (hidden) {
            redisFree(c);
            ag_respond_error(fd, 404, "no_session", ag_no_session(conf));
            return;
        }
    }

    /* held until the answer is taken (--max-loaded-sessions) */
    s = ag_session_read(conf, c, session, peer->owner, &damaged, &busy,
                        NULL, NULL, NULL, err, sizeof(err));
    redisFree(c);

    if (s == NULL && busy) {
        ag_respond_error(fd, 503, "busy", err);
        return;
    }

    if (s == NULL && !(damaged && !peer->admin)) {
        ag_respond_error(fd, damaged ? 409 : 503,
                         damaged ? "session_damaged" : "redis", err);
        return;
    }

    /* another's is answered as one that is not there, word for word */
    if (s == NULL || !ag_session_mine(s, peer)
        || json_array_size(json_object_get(s, "messages")) == 0)
    {
        ag_respond_error(fd, 404, "no_session", ag_no_session(conf));
        json_decref(s);
        return;
    }

    text = json_dumps(s, JSON_COMPACT);
    json_decref(s);

    if (text == NULL) {
        ag_respond_error(fd, 503, "memory", "out of memory");
        return;
    }

    ag_respond(fd, 200, "application/json", text,
               ag_now_ms() + conf->send_timeout_ms, 0);
    free(text);
    ag_load_done();
}


/*
 * All of p, or -1.  With a deadline, each write waits only until then
 * (however little the client takes each time); without, it is the
 * socket's own timeout (SO_SNDTIMEO) for each write.  Once the run is
 * stopping (SIGTERM), a second at most from then: a client that reads
 * nothing would otherwise hold the stop until the deadline, past the
 * run's wall time.
 */

static int
ag_write_all(int fd, const char *p, size_t len, int64_t deadline)
{
    int            rc;
    ssize_t        n;
    int64_t        left, now, stop_by;
    struct pollfd  pfd;

    stop_by = 0;

    while (len) {
        if (deadline != 0) {
            now = ag_now_ms();

            if (ag_stopping) {
                if (stop_by == 0) {
                    stop_by = now + 1000;
                }

                if (deadline > stop_by) {
                    deadline = stop_by;
                }
            }

            left = deadline - now;
            if (left <= 0) {
                return -1;
            }

            pfd.fd = fd;
            pfd.events = POLLOUT;
            pfd.revents = 0;

            rc = poll(&pfd, 1, (int) left);
            if (rc == -1 && errno == EINTR) {
                continue;
            }
            if (rc <= 0) {
                return -1;
            }

            n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                continue;
            }

        } else {
            n = write(fd, p, len);
        }

        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= n;
    }

    return 0;
}


int
ag_write_fd(int fd, const char *p, size_t len, int64_t deadline)
{
    return ag_write_all(fd, p, len, deadline);
}


int64_t
ag_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


int
ag_random_hex(char *out, size_t hexlen)
{
    size_t          i;
    unsigned char   raw[64];
    static const char  hex[] = "0123456789abcdef";

    if (hexlen / 2 > sizeof(raw)
        || getrandom(raw, hexlen / 2, 0) != (ssize_t) (hexlen / 2))
    {
        return -1;
    }

    for (i = 0; i < hexlen / 2; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 0x0f];
    }

    out[hexlen] = '\0';

    return 0;
}


/*
 * The first k elements of a removed, in time linear in its size: one
 * json_array_remove(a, 0) moves all the others, and k of them were
 * quadratic (a session planted with a million runs held its process's
 * CPU for minutes).
 */

void
ag_array_drop(json_t *a, size_t k)
{
    size_t  i, n;

    n = json_array_size(a);
    k = (k < n) ? k : n;

    if (k == 0) {
        return;
    }

    for (i = k; i < n; i++) {
        json_array_set(a, i - k, json_array_get(a, i));
    }

    for (i = n; i > n - k; i--) {
        json_array_remove(a, i - 1);        /* the last: nothing moves */
    }
}
