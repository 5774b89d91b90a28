/*
 * airlockctl: the operator's tool for Airlock policies.
 *
 *   check FILE             validate a policy (exit 0 ok, 1 invalid)
 *   explain FILE ...       what the proxy does with one request
 *   routes FILE            the compiled route table
 *   sinks FILE             the alert sinks' hosts and ports
 *   diff OLD NEW           semantic diff; exit 1 when NEW grants more
 *   keygen PATH            the appliance keypair (PATH, PATH.pub)
 *   seal --pub PATH.pub    seal a secret read from standard input
 *   tools FILE --client C  the tool definitions a model is offered
 *   edit                   edit the installed policy, test, install, reload
 *   rollback               reinstall the policy edit replaced
 *   usage LOG              summarise the LLM gateway's usage log
 *
 * explain runs the same library calls as the nginx module, so its answer
 * is the proxy's answer.  Exit status 2 means the tool was misused (one
 * line naming what is wrong, then the usage) or an input could not be
 * read.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <signal.h>
#include <sodium.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>

#include "airlock.h"
#include "al_llm.h"
#include "al_llm_report.h"


#define AL_CTL_BODY_MAX  (16 * 1024 * 1024)
#define AL_CTL_SEAL_MAX  65536
#define AL_CTL_PATH_MAX  4096

#define AL_CTL_POLICY    "/etc/airlock/policy.yaml"
#define AL_CTL_TEST      "nginx -t -q"
#define AL_CTL_RELOAD    "nginx -s reload"

/* what explain was not given of a request's peer */
#define AL_CTL_UNSEEN_UID   0x01
#define AL_CTL_UNSEEN_GID   0x02
#define AL_CTL_UNSEEN_ADDR  0x04


typedef struct {
    const char  *name;
    int        (*run)(int argc, char **argv);
    const char  *usage;
    const char  *help;
} al_ctl_cmd_t;


typedef struct {
    const char  *policy;
    const char  *given;                         /* --policy, as given */
    const char  *key;
    const char  *test;
    const char  *reload;
    int          dirfd;
    int          lockfd;                        /* holds POLICY.lock */
    char         real[PATH_MAX];                /* the policy, resolved */
    char         dir[AL_CTL_PATH_MAX];
    char         candidate[AL_CTL_PATH_MAX];    /* POLICY.edit */
    char         mark[AL_CTL_PATH_MAX];         /* POLICY.edit.open */
    char         prev[AL_CTL_PATH_MAX];         /* POLICY.prev */
    char         old[AL_CTL_PATH_MAX];          /* POLICY.old, transient */
    char         next[AL_CTL_PATH_MAX];         /* POLICY.new, transient */
    char         lock[AL_CTL_PATH_MAX];         /* POLICY.lock, held */
} al_ctl_edit_t;


static int al_ctl_written(int rc);
static int al_ctl_check(int argc, char **argv);
static void al_ctl_check_scrub(const al_policy_t *p, const al_route_t *r);
static int al_ctl_same_host(const al_upstream_t *a, const al_upstream_t *b);
static int al_ctl_explain(int argc, char **argv);
static void al_ctl_check_clear(const al_policy_t *p);
static void al_ctl_explain_clear(const al_upstream_t *u);
static int al_ctl_routes(int argc, char **argv);
static int al_ctl_sinks(int argc, char **argv);
static int al_ctl_diff(int argc, char **argv);
static int al_ctl_keygen(int argc, char **argv);
static int al_ctl_seal(int argc, char **argv);
static int al_ctl_tools(int argc, char **argv);
static void al_ctl_tools_print(const char *text);
static int al_ctl_edit(int argc, char **argv);
static int al_ctl_rollback(int argc, char **argv);
static int al_ctl_llm_usage(int argc, char **argv);
static void al_ctl_routes_count(uint64_t n, const char *sep);
static void al_ctl_routes_limits(const al_llm_client_t *lc);
static void al_ctl_explain_limits(const al_llm_t *l,
    const al_client_t *client, const al_llm_client_t *lc,
    const al_llm_req_t *req, const char *alias, size_t alias_len);
static int al_ctl_usage(FILE *f, const al_ctl_cmd_t *cmd);
static int al_ctl_bad(const al_ctl_cmd_t *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int al_ctl_option(const char *arg);
static int al_ctl_twice(const al_ctl_cmd_t *cmd, const char *opt);
static int al_ctl_help_only(int argc, char **argv, const al_ctl_cmd_t *cmd);
static al_policy_t *al_ctl_load(const char *path, const char *key,
    int *rc);
static al_policy_t *al_ctl_load_only(int argc, char **argv, const char *name,
    int *rc);
static al_policy_t *al_ctl_load_bytes(const char *path, const char *key,
    unsigned char **bytes, size_t *len, int strict, int *rc);
static void al_ctl_explain_tools(const al_llm_t *l);
static void al_ctl_explain_peer(const al_policy_t *p,
    const al_client_t *client, unsigned unseen, int token);
static void al_ctl_explain_fallback(const al_llm_t *l,
    const al_client_t *client, const al_llm_route_t *rt,
    const al_llm_req_t *req, const char *alias, size_t alias_len);
static int al_ctl_explain_llm(const al_llm_t *l, const al_client_t *client,
    const char *method, const char *target, const unsigned char *body,
    size_t body_len, const char *ctype);
static char *al_ctl_token(const char *env, int stdin_token,
    size_t *len);
static char *al_ctl_token_read(const char *env, int stdin_token,
    size_t *plen);
static unsigned char *al_ctl_read(int fd, size_t max, size_t *len,
    int secure);
static unsigned char *al_ctl_read_secret(const char *what, size_t max,
    size_t *len);
static void al_ctl_tty_signal(int signo);
static void al_ctl_out(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void al_ctl_err(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void al_ctl_shown(FILE *f, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void al_ctl_print_line(void *data, const char *line);
static int al_ctl_edit_args(int argc, char **argv, const al_ctl_cmd_t *cmd,
    al_ctl_edit_t *e);
static int al_ctl_edit_paths(al_ctl_edit_t *e);
static int al_ctl_lock(al_ctl_edit_t *e);
static void al_ctl_unlock(al_ctl_edit_t *e);
static void al_ctl_lock_signal(int signo);
static int al_ctl_copy(const char *from, const char *to,
    const struct stat *st);
static int al_ctl_write(const char *to, const unsigned char *buf,
    size_t len, const struct stat *st);
static void al_ctl_part_done(void);
static int al_ctl_edit_copy(al_ctl_edit_t *e);
static int al_ctl_same(const char *a, const char *b);
static int al_ctl_sh(const char *what, const char *cmd, const char *arg);
static int al_ctl_sh_status(const char *what, const char *cmd, int status,
    int shell);
static int al_ctl_mark(al_ctl_edit_t *e);
static void al_ctl_unmark(al_ctl_edit_t *e);
static unsigned char *al_ctl_snap(const char *path, struct stat *st,
    size_t *len);
static int al_ctl_saved(const char *path, const struct stat *st,
    const unsigned char *bytes, size_t len);
static int al_ctl_install(al_ctl_edit_t *e, const char *candidate);
static int al_ctl_trusted(const char *path, const struct stat *policy);
static int al_ctl_path_trusted(const char *path, const char *real);
static int al_ctl_again(const char *question);


static const al_ctl_cmd_t  al_ctl_cmds[] = {

    { "check", al_ctl_check,
      "check FILE [--key PRIVATE_KEY]",
      "Validates a policy file.  Prints \"FILE: ok\" and a summary, or the\n"
      "first error as FILE:LINE:COLUMN: message.  With --key, sealed and\n"
      "file: secrets are opened too, as nginx will open them; without it,\n"
      "they are not, and check says so, but each file: secret's file is\n"
      "held to nginx's checks of it but the read (mode, owner, one hard\n"
      "link, a path no other user may change), where it can be reached.\n"
      "A valid policy may get warnings:\n"
      "a route of scrub: false whose upstream (host and port) another\n"
      "route or an llm entry sends a secret to.  A policy another user\n"
      "could replace (the file, or a directory of its path, symbolic\n"
      "links followed, writable by others) is refused, as nginx refuses\n"
      "it.\n"
      "Exit status: 0 valid, 1 invalid, 2 usage error, a file that\n"
      "cannot be read, or a policy or key refused for who can reach it." },

    { "explain", al_ctl_explain,
      "explain FILE (--client NAME | [--uid N] [--gid N] [--addr IP]\n"
      "              [--token-stdin | --token-env VAR]) METHOD TARGET\n"
      "              [--body FILE] [--content-type TYPE]",
      "Shows what the proxy does with one request: the route or LLM\n"
      "provider it matches and the upstream request it sends, or the deny\n"
      "reason.  The client is named directly with --client, or identified\n"
      "from a peer uid, gid, address and token exactly as the proxy\n"
      "identifies it; what is not given of the peer (all of it with a\n"
      "token alone, the gid with --uid alone) is taken to name no client,\n"
      "and the clients whose peer there the proxy would refuse are named.\n"
      "The token is read from standard input\n"
      "(--token-stdin) or from the environment variable VAR\n"
      "(--token-env), never from the command line.  TARGET is the raw\n"
      "request target, e.g. '/logs/api?since=5m'.  On an LLM prefix the\n"
      "body (--body, '-' for standard input) is checked as the gateway\n"
      "checks it: model, client permission, max_tokens clamp or reject.\n"
      "Request headers other than the token and Content-Type are not\n"
      "seen: an allow here can still be refused by nginx on headers alone\n"
      "(a method-override header, two Content-Types, a token header sent\n"
      "twice, anthropic-beta for a client with a dollar budget), or on\n"
      "spent budgets and quarantine; docs/airlockctl.md lists them.\n"
      "Exit status: 0 allowed, 1 denied, 2 usage error or an input that\n"
      "cannot be read." },

    { "routes", al_ctl_routes,
      "routes FILE",
      "Prints the compiled route table (name, methods, path, clients,\n"
      "body limit, upstream target) and the LLM providers with each\n"
      "client's budgets.\n"
      "Exit status: 0 printed, 2 usage error or a policy that cannot be\n"
      "read or is invalid." },

    { "sinks", al_ctl_sinks,
      "sinks FILE",
      "Prints the policy's alert sinks (alerts.sinks), one a line: the\n"
      "kind (webhook or alertmanager), the URL's host (a name, or an\n"
      "address: IPv6 without its brackets) and port (443 or 80 when the\n"
      "URL has none), never the rest of the URL, a webhook's path being\n"
      "its secret.  The appliance's egress rule lets airlock-alertd reach\n"
      "these alone.\n"
      "Exit status: 0 printed, 2 usage error or a policy that cannot be\n"
      "read or is invalid." },

    { "diff", al_ctl_diff,
      "diff OLD NEW",
      "Compares two policies by meaning.  Lines start with '+' for what NEW\n"
      "grants that OLD did not, '-' for what it takes away and '~' for\n"
      "other changes.  Exit status: 0 when NEW grants nothing new, 1 when\n"
      "it does, 2 usage error or a policy that cannot be read or is\n"
      "invalid.  Use it in CI to gate policy changes against a\n"
      "known-good baseline." },

    { "keygen", al_ctl_keygen,
      "keygen PATH",
      "Writes a new X25519 keypair for sealing secrets: the private key to\n"
      "PATH (mode 0600) and the public key to PATH.pub.  Refuses to\n"
      "overwrite an existing file, and a PATH in a directory another\n"
      "user can change.  One keygen of PATH at a time (it holds\n"
      "PATH.lock).\n"
      "Exit status: 0 written, 1 a file exists already or cannot be\n"
      "written, or its directory is not safe, 2 usage error." },

    { "seal", al_ctl_seal,
      "seal --pub PUBLIC_KEY [--keep-newline] < SECRET",
      "Reads a secret from standard input (never from the command line),\n"
      "seals it to the public key and prints the sealed value to put in\n"
      "the policy as secrets: { NAME: { sealed: \"...\" } }.  One trailing\n"
      "newline is dropped unless --keep-newline is given.  A public key\n"
      "another user can replace is refused: one others may write, one\n"
      "owned by neither root nor you, or one its group may write when\n"
      "another user is in that group.\n"
      "Exit status: 0 sealed, 1 the public key cannot be read or is\n"
      "refused, 2 usage error or a secret that cannot be read, is empty\n"
      "or is over 64 KiB." },

    { "tools", al_ctl_tools,
      "tools FILE --client NAME [--format openai|mcp] [--sandbox CLIENT]",
      "Prints the tool definitions a model is offered for client NAME: one\n"
      "tool per route granted to it, its argument schema built from the\n"
      "route's path params, query and body rules, and run_python, whose\n"
      "inputs are fetched as the sandbox client (\"worker\" by default when\n"
      "the policy has it; --sandbox none leaves run_python out).  This is\n"
      "what airlock-agent gives its model.  --format openai (default):\n"
      "chat completions \"tools\"; mcp: an MCP tools/list result.\n"
      "Exit status: 0 printed, 1 an unknown client or a route name that\n"
      "cannot be a tool name, 2 usage error or a policy that cannot be\n"
      "read or is invalid." },

    { "edit", al_ctl_edit,
      "edit [--policy FILE] [--key PRIVATE_KEY] [--test CMD] [--reload CMD]",
      "Opens FILE.edit, a copy of the installed policy FILE (default\n"
      AL_CTL_POLICY "), in $VISUAL or $EDITOR.  When the editor\n"
      "exits, the copy is checked as check does (--key opens secrets too),\n"
      "put in place of FILE by rename and tested with the real nginx\n"
      "configuration (--test, default \"" AL_CTL_TEST "\"), then nginx\n"
      "is reloaded (--reload, default \"" AL_CTL_RELOAD "\").  The\n"
      "replaced policy is kept as FILE.prev for rollback.  On any error\n"
      "FILE is put back as it was, and on a terminal edit offers to\n"
      "reopen the same copy; otherwise the copy is kept and the next edit\n"
      "resumes it, unless others can write it.  A copy whose editor did\n"
      "not exit cleanly (killed, failed, the machine stopped: marked by\n"
      "FILE.edit.open) may be cut short: the next edit says so and\n"
      "installs it only if it is saved in its editor, else exits 1.\n"
      "A FILE check refuses for its path (another user may change it\n"
      "or a directory above) is refused before the editor runs.  One\n"
      "run at a time holds FILE.lock.  A reload killed by a signal may\n"
      "have reloaded nginx: the new FILE stays, and edit says so.\n"
      "Exit status: 0 installed (or no changes), 1 refused or an\n"
      "interrupted editor's copy not saved, 2 usage error, a file that\n"
      "cannot be read or written, or a reload killed." },

    { "rollback", al_ctl_rollback,
      "rollback [--policy FILE] [--key PRIVATE_KEY] [--test CMD] "
      "[--reload CMD]",
      "Reinstalls FILE.prev, the policy the last edit or rollback\n"
      "replaced, with the same checks, test and reload as edit; the\n"
      "replaced policy becomes FILE.prev, so a second rollback undoes the\n"
      "first.  A FILE.prev that others than FILE's writers can write, or\n"
      "a symbolic link, is refused, as is a FILE check refuses for its\n"
      "path.  Exit status: 0 restored, 1 refused,\n"
      "2 usage error, no previous policy or one refused so." },

    { "usage", al_ctl_llm_usage,
      "usage LOG [--by client|model|day] [--json]",
      "Summarises the LLM gateway's usage log (airlock_llm_log): requests,\n"
      "errors (answers other than 2xx) and the statuses seen, prompt,\n"
      "cached, completion and total tokens, and the cost in USD of the\n"
      "calls to priced models (UNPRICED counts the others), in total or by\n"
      "client, model or UTC day.  LOG is a file, or - for standard input;\n"
      "it is read as a stream.  Lines that are not usage lines (cut short,\n"
      "garbage) are skipped, counted and the first few named.  A\n"
      "compressed log is refused: zcat LOG | airlockctl usage -.  --json\n"
      "prints one JSON object.  Exit status: 0 summarised, 2 usage error\n"
      "or a log that cannot be read (compressed included)." },

    { NULL, NULL, NULL, NULL }
};


/* the terminal's settings while a secret is typed without echo, and the
   signals that give them back */
static struct termios  al_ctl_tty;
static const int       al_ctl_tty_sigs[4] = {
    SIGINT, SIGTERM, SIGHUP, SIGQUIT
};

/* edit's and rollback's lock, removed by the run that holds it when a
   fatal signal ends it (al_ctl_lock_signal()) */
static char                   al_ctl_lock_path[AL_CTL_PATH_MAX];
static volatile sig_atomic_t  al_ctl_lock_pid;
static const int              al_ctl_lock_sigs[5] = {
    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE
};

/* the file al_ctl_write() made and is not yet in place (FILE.new,
   FILE.edit.part): removed with the lock by such a signal */
static char                   al_ctl_part_path[AL_CTL_PATH_MAX
                                               + sizeof(".part")];
static volatile sig_atomic_t  al_ctl_part_set;


int
main(int argc, char **argv)
{
    FILE                *f;
    const al_ctl_cmd_t  *cmd;

    if (argc < 2 || strcmp(argv[1], "--help") == 0
        || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0)
    {
        if (argc >= 3 && strcmp(argv[1], "help") == 0) {
            for (cmd = al_ctl_cmds; cmd->name != NULL; cmd++) {
                if (strcmp(cmd->name, argv[2]) == 0) {
                    al_ctl_usage(stdout, cmd);
                    printf("\n%s\n", cmd->help);
                    return al_ctl_written(0);
                }
            }

            al_ctl_err("airlockctl: unknown command \"%s\"; see "
                       "airlockctl --help\n", argv[2]);
            return 2;
        }

        /* no command is a usage error: the list goes to stderr */

        f = argc < 2 ? stderr : stdout;

        if (argc < 2) {
            fprintf(f, "airlockctl: no command given\n");
        }

        fprintf(f, "usage: airlockctl COMMAND [ARGS]\n\ncommands:\n");
        for (cmd = al_ctl_cmds; cmd->name != NULL; cmd++) {
            fprintf(f, "  %s\n", cmd->usage);
        }
        fprintf(f, "\n'airlockctl COMMAND --help' describes one command; "
                "'airlockctl --version' prints the version.\n");
        return argc < 2 ? 2 : al_ctl_written(0);
    }

    if (strcmp(argv[1], "--version") == 0) {
        printf("airlockctl %s\n", AL_VERSION);
        return al_ctl_written(0);
    }

    if (sodium_init() < 0) {
        fprintf(stderr, "airlockctl: libsodium failed to initialize\n");
        return 2;
    }

    for (cmd = al_ctl_cmds; cmd->name != NULL; cmd++) {
        if (strcmp(cmd->name, argv[1]) == 0) {
            return al_ctl_written(cmd->run(argc - 1, argv + 1));
        }
    }

    al_ctl_err("airlockctl: unknown command \"%s\"; see airlockctl "
               "--help\n", argv[1]);

    return 2;
}


/*
 * What a command prints is its result (a table, a report, a diff): output
 * that could not be written (a full disk under "> routes.txt", a write
 * error) is not a success, whatever the command decided.
 */

static int
al_ctl_written(int rc)
{
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc < 2) {

        /* a failed command (2 and over) has said why already */

        al_ctl_err("airlockctl: cannot write the output: %s\n",
                   strerror(errno));
        return 2;
    }

    return rc;
}


static int
al_ctl_usage(FILE *f, const al_ctl_cmd_t *cmd)
{
    fprintf(f, "usage: airlockctl %s\n", cmd->usage);
    return 2;
}


/*
 * A command misused (an unknown option, an option without its value, an
 * argument missing or one too many): one line naming what is wrong, then
 * the command's usage, on standard error; exit status 2.
 */

static int
al_ctl_bad(const al_ctl_cmd_t *cmd, const char *fmt, ...)
{
    char     msg[1024];
    va_list  ap;

    va_start(ap, fmt);
    (void) vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    al_ctl_err("airlockctl %s: %s\n", cmd->name, msg);

    return al_ctl_usage(stderr, cmd);
}


/*
 * An option given a second time is a misuse: which of the two counts is
 * not guessed.  The last one did, and explain --client agent ...
 * --client tools answered for tools in words that do not name the
 * client; edit --policy A --policy B edited B.
 */

static int
al_ctl_twice(const al_ctl_cmd_t *cmd, const char *opt)
{
    return al_ctl_bad(cmd, "%s is given twice", opt);
}


/* an option, not an operand: "-" alone names standard input */

static int
al_ctl_option(const char *arg)
{
    return arg[0] == '-' && arg[1] != '\0';
}


static const al_ctl_cmd_t *
al_ctl_cmd(const char *name)
{
    const al_ctl_cmd_t  *cmd;

    for (cmd = al_ctl_cmds; cmd->name != NULL; cmd++) {
        if (strcmp(cmd->name, name) == 0) {
            return cmd;
        }
    }

    return NULL;
}


/* --help anywhere prints the command's help; returns 1 if it did */

static int
al_ctl_help_only(int argc, char **argv, const al_ctl_cmd_t *cmd)
{
    int  i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            al_ctl_usage(stdout, cmd);
            printf("\n%s\n", cmd->help);
            return 1;
        }
    }

    return 0;
}


/*
 * A line with text of the policy or of the request in it (names,
 * patterns, models, query and member names, the loader's messages, which
 * quote the policy): shown as al_shown() shows text, so that a YAML
 * escape in a policy under review cannot rewrite what a terminal shows
 * (an error turned into "ok", a deny into an allow), and a backslash as
 * \\, so that no name reads as another.  A newline ending the format
 * is kept; any other is shown as \x0a.
 */

static void
al_ctl_out(const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    al_ctl_shown(stdout, fmt, ap);
    va_end(ap);
}


static void
al_ctl_err(const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    al_ctl_shown(stderr, fmt, ap);
    va_end(ap);
}


static void
al_ctl_shown(FILE *f, const char *fmt, va_list ap)
{
    int       n;
    char      small[1024], *text, *shown;
    size_t    len, size, nl;
    va_list   again;

    va_copy(again, ap);
    n = vsnprintf(small, sizeof(small), fmt, ap);

    if (n < 0) {
        va_end(again);
        return;
    }

    text = small;
    len = (size_t) n;

    if (len >= sizeof(small)) {
        text = malloc(len + 1);
        if (text == NULL) {
            va_end(again);
            fprintf(stderr, "airlockctl: out of memory\n");
            return;
        }
        (void) vsnprintf(text, len + 1, fmt, again);
    }

    va_end(again);

    nl = (len > 0 && text[len - 1] == '\n');
    size = 4 * (len - nl) + 1;

    shown = malloc(size);
    if (shown == NULL) {
        fprintf(stderr, "airlockctl: out of memory\n");

    } else {
        (void) al_shown(shown, size, text, len - nl);
        fprintf(f, "%s%s", shown, nl ? "\n" : "");
        free(shown);
    }

    if (text != small) {
        free(text);
    }
}


/*
 * Loads a policy; on failure *rc is 2 when the policy or key file cannot
 * be read at all, 1 when the policy is invalid.
 */

static al_policy_t *
al_ctl_load(const char *path, const char *key, int *rc)
{
    size_t          len;
    al_policy_t    *p;
    unsigned char  *bytes;

    p = al_ctl_load_bytes(path, key, &bytes, &len, 0, rc);

    free(bytes);

    return p;
}


/*
 * For a command that takes one FILE and no option: the policy it names,
 * or NULL with *rc the exit status (0 after --help, 2 on a usage error
 * or a policy that cannot be read).
 */

static al_policy_t *
al_ctl_load_only(int argc, char **argv, const char *name, int *rc)
{
    int                  a;
    al_policy_t         *p;
    const al_ctl_cmd_t  *cmd;

    cmd = al_ctl_cmd(name);
    if (al_ctl_help_only(argc, argv, cmd)) {
        *rc = 0;
        return NULL;
    }

    for (a = 1; a < argc; a++) {
        if (al_ctl_option(argv[a])) {
            *rc = al_ctl_bad(cmd, "unknown option \"%s\"", argv[a]);
            return NULL;
        }
    }

    if (argc != 2) {
        *rc = al_ctl_bad(cmd, argc < 2 ? "no FILE given" : "one FILE only");
        return NULL;
    }

    p = al_ctl_load(argv[1], NULL, rc);
    if (p == NULL) {
        *rc = 2;
    }

    return p;
}


/*
 * As al_ctl_load(), from the file's bytes read once, which are returned
 * in *bytes (malloc()ed) for the caller to write as they are: what edit
 * installs is then the policy it checked and showed, whatever writes the
 * file after the check (a backgrounded editor saving, another process).
 * strict: the file is refused as nginx refuses it (any user may write
 * it), for check; the others read a policy, whoever may write it.
 */

static al_policy_t *
al_ctl_load_bytes(const char *path, const char *key, unsigned char **bytes,
    size_t *len, int strict, int *rc)
{
    int             fd;
    char            msg[AL_ERR_MAX + 300];
    struct stat     st;
    al_error_t      err;
    al_policy_t    *p;
    al_keyring_t   *kr;
    unsigned char  *buf;

    kr = NULL;
    *rc = 2;
    *bytes = NULL;

    /* O_NONBLOCK: a FIFO in place of the policy must not hang us */

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        al_ctl_err("%s: cannot open: %s\n", path, strerror(errno));
        return NULL;
    }

    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
        al_ctl_err("%s: cannot read: not a regular file\n", path);
        close(fd);
        return NULL;
    }

    if (strict && al_policy_trusted(path, fd, &err) != 0) {
        al_error_format(&err, msg, sizeof(msg));
        al_ctl_err("%s\n", msg);
        close(fd);
        return NULL;
    }

    /* one byte over the limit, for the library to refuse by name */

    errno = 0;
    buf = al_ctl_read(fd, AL_POLICY_FILE_MAX + 1, len, 0);

    close(fd);

    if (buf == NULL) {
        al_ctl_err("%s: cannot read: %s\n", path,
                   (errno != 0 && errno != EFBIG)
                   ? strerror(errno) : "larger than the policy limit");
        return NULL;
    }

    if (key != NULL) {
        kr = al_keyring_load(key, &err);
        if (kr == NULL) {
            al_error_format(&err, msg, sizeof(msg));
            al_ctl_err("%s\n", msg);
            free(buf);
            return NULL;
        }
    }

    *rc = 1;

    /*
     * check without the key: each file: secret's file held to every
     * check nginx makes when it opens it, but the read, so that a policy
     * nginx refuses for a secret's path is refused here too
     */

    p = al_policy_parse_open(path, (const char *) buf, *len, kr,
                             kr != NULL ? 1
                             : strict ? AL_POLICY_SECRET_PATHS : 0, &err);

    al_keyring_free(kr);

    if (p == NULL) {
        al_error_format(&err, msg, sizeof(msg));
        al_ctl_err("%s\n", msg);
        free(buf);
        return NULL;
    }

    *bytes = buf;

    return p;
}


static int
al_ctl_check(int argc, char **argv)
{
    int                  i, rc;
    size_t               k, j, nsealed, len;
    const char          *file, *key;
    al_policy_t         *p;
    unsigned char       *bytes;
    const al_route_t    *r;
    const al_ctl_cmd_t  *cmd;

    cmd = al_ctl_cmd("check");
    if (al_ctl_help_only(argc, argv, cmd)) {
        return 0;
    }

    file = NULL;
    key = NULL;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--key") == 0) {
            if (i + 1 >= argc) {
                return al_ctl_bad(cmd, "--key needs a PRIVATE_KEY");
            }
            if (key != NULL) {
                return al_ctl_twice(cmd, argv[i]);
            }
            key = argv[++i];

        } else if (al_ctl_option(argv[i])) {
            return al_ctl_bad(cmd, "unknown option \"%s\"", argv[i]);

        } else if (file != NULL) {
            return al_ctl_bad(cmd, "one FILE only, not \"%s\" too",
                              argv[i]);

        } else {
            file = argv[i];
        }
    }

    if (file == NULL) {
        return al_ctl_bad(cmd, "no FILE given");
    }

    p = al_ctl_load_bytes(file, key, &bytes, &len, 1, &rc);
    free(bytes);

    if (p == NULL) {
        return rc;
    }

    al_ctl_out("%s: ok (%zu clients, %zu routes, %zu llm providers, "
               "%zu secrets%s, %zu alert sinks)\n", file, p->nclients,
               p->nroutes, p->nllm, p->nsecrets, key ? " opened" : "",
               p->nsinks);

    /* each param that takes a drive: its upstream is no Windows one */

    for (k = 0; k < p->nroutes; k++) {
        r = &p->routes[k];

        for (j = 0; j < r->nparams; j++) {
            if (r->params[j].drive) {
                al_ctl_out("route \"%s\" (line %u): param {%s} takes a "
                           "drive (drive: true)\n", r->name.data, r->line,
                           r->params[j].name.data);
            }
        }
    }

    /* each scrub: false route whose upstream is sent a credential */

    for (k = 0; k < p->nroutes && p->nsecrets > 0; k++) {
        if (p->routes[k].no_scrub) {
            al_ctl_check_scrub(p, &p->routes[k]);
        }
    }

    al_ctl_check_clear(p);

    if (key == NULL && p->nsecrets > 0) {
        nsealed = 0;
        for (k = 0; k < p->nsecrets; k++) {
            nsealed += p->secrets[k].sealed;
        }

        printf("secrets NOT opened: %zu sealed secret%s checked for shape "
               "only, %zu file: secret%s not read; run check --key "
               "PRIVATE_KEY to open them as nginx will\n", nsealed,
               nsealed == 1 ? "" : "s", p->nsecrets - nsealed,
               p->nsecrets - nsealed == 1 ? "" : "s");

        for (k = 0; k < p->nsecrets; k++) {
            if (p->secrets[k].unreached) {
                al_ctl_out("secret \"%s\" (line %u): %s cannot be reached "
                           "here (no such file, or a directory you may not "
                           "search): its file and path are NOT checked\n",
                           p->secrets[k].name.data, p->secrets[k].line,
                           p->secrets[k].source.data);
            }
        }
    }

    al_policy_free(p);

    return 0;
}


/*
 * A route of "scrub: false" is the operator's word that its upstream holds
 * no credential; one that another route or an llm entry sends a secret to
 * (the same host and port) may have it in a log or a record of requests,
 * and serve it unscrubbed.  A warning: the policy is valid.
 */

static void
al_ctl_check_scrub(const al_policy_t *p, const al_route_t *r)
{
    size_t             i, j;
    const al_llm_t    *l;
    const al_route_t  *o;

    for (i = 0; i < p->nroutes; i++) {
        o = &p->routes[i];

        if (o == r || !al_ctl_same_host(o->upstream, r->upstream)) {
            continue;
        }

        for (j = 0; j < o->ninject; j++) {
            if (memchr(o->inject[j].tmpl.data, '{', o->inject[j].tmpl.len)
                != NULL)
            {
                al_ctl_out("warning: route \"%s\" (line %u) has scrub: "
                           "false, but route \"%s\" (line %u) sends a "
                           "secret to its upstream %s: its answers are not "
                           "scrubbed of it\n", r->name.data, r->line,
                           o->name.data, o->line, r->upstream->host.data);
                return;
            }
        }
    }

    for (i = 0; i < p->nllm; i++) {
        l = &p->llm[i];

        if (l->secret != NULL && al_ctl_same_host(&l->upstream, r->upstream))
        {
            al_ctl_out("warning: route \"%s\" (line %u) has scrub: false, "
                       "but llm entry \"%s\" (line %u) sends a secret to "
                       "its upstream %s: its answers are not scrubbed of "
                       "it\n", r->name.data, r->line, l->name.data, l->line,
                       r->upstream->host.data);
            return;
        }
    }
}


/*
 * Each secret sent over http:// past what the loader could place: a
 * host name without a port is nginx's to place (an upstream block of
 * servers on this host loads, anything else fails the load), and check
 * sees no nginx configuration: a warning, the policy is valid.  And each
 * one allow_insecure_http lets cross the network in clear.
 */

static void
al_ctl_check_clear(const al_policy_t *p)
{
    char        who[256], fix[128];
    size_t      i;
    al_clear_t  c;

    i = 0;

    while (al_policy_clear(p, &i, &c)) {
        if (c.local) {
            continue;
        }

        if (c.llm != NULL) {
            snprintf(who, sizeof(who), "llm \"%s\" (line %u) sends its "
                     "secret", c.llm->name.data, c.llm->line);
            snprintf(fix, sizeof(fix), "llm \"%s\"", c.llm->name.data);

        } else {
            snprintf(who, sizeof(who), "route \"%s\" (line %u) sends a "
                     "secret to upstream \"%s\"", c.route->name.data,
                     c.route->line, c.upstream->name.data);
            snprintf(fix, sizeof(fix), "upstream \"%s\"",
                     c.upstream->name.data);
        }

        if (c.insecure) {
            al_ctl_out("%s over http:// to \"%s\", in clear: "
                       "allow_insecure_http: true\n", who,
                       c.upstream->host.data);
            continue;
        }

        al_ctl_out("warning: %s over http:// to \"%s\": nginx loads this "
                   "policy only if it has an upstream block \"%s\" whose "
                   "servers are all on this host (loopback addresses or "
                   "unix sockets), checked when it loads; otherwise use "
                   "https://, or set allow_insecure_http: true on %s\n",
                   who, c.upstream->hostname.data,
                   c.upstream->hostname.data, fix);
    }
}


/* a secret allow_insecure_http sends over http://, maybe in clear */

static void
al_ctl_explain_clear(const al_upstream_t *u)
{
    if (!u->https && u->insecure_http) {
        al_ctl_out("  clear:    the secret goes over http:// to %s without "
                   "TLS (allow_insecure_http: true)\n", u->host.data);
    }
}


static int
al_ctl_same_host(const al_upstream_t *a, const al_upstream_t *b)
{
    return a->port == b->port && a->hostname.len == b->hostname.len
           && strncasecmp(a->hostname.data, b->hostname.data,
                          a->hostname.len) == 0;
}


static int
al_ctl_explain(int argc, char **argv)
{
    int                  i, rc, have_peer, token_stdin;
    char                 m[64], *token;
    unsigned             unseen;
    size_t               body_len, k, np, token_len, tok_at;
    uint64_t             v;
    const char          *file, *client, *token_env, *method, *target, *why;
    const char          *body_file, *ctype;
    al_peer_t            peer;
    al_policy_t         *p;
    al_request_t         req;
    al_decision_t       *d;
    unsigned char       *body;
    const al_route_t    *r;
    const al_llm_t      *l;
    const al_ctl_cmd_t  *cmd;
    struct in_addr       a4;

    cmd = al_ctl_cmd("explain");
    if (al_ctl_help_only(argc, argv, cmd)) {
        return 0;
    }

    file = client = token_env = method = target = body_file = ctype = NULL;
    memset(&peer, 0, sizeof(peer));

    /*
     * A unix peer has both ids; the one not given is an id no policy
     * can name (at most 4294967294), not 0, which would make the peer
     * root or the root group as well
     */

    peer.uid = (uid_t) -1;
    peer.gid = (gid_t) -1;
    have_peer = 0;
    token_stdin = 0;

    for (i = 1; i < argc; i++) {
        const char  *a = argv[i];

        if (strcmp(a, "--token") == 0 || strncmp(a, "--token=", 8) == 0) {
            /* a token in argv sits in ps and in the shell history */
            return al_ctl_bad(cmd, "explain does not take a token on the "
                              "command line; use --token-stdin (and write "
                              "it to standard input) or --token-env VAR");
        }

        if (strcmp(a, "--token-stdin") == 0) {
            if (token_stdin) {
                return al_ctl_twice(cmd, a);
            }
            token_stdin = 1;
            continue;
        }

        if (al_ctl_option(a) && i + 1 >= argc
            && (strcmp(a, "--client") == 0 || strcmp(a, "--token-env") == 0
                || strcmp(a, "--uid") == 0 || strcmp(a, "--gid") == 0
                || strcmp(a, "--addr") == 0 || strcmp(a, "--body") == 0
                || strcmp(a, "--content-type") == 0))
        {
            return al_ctl_bad(cmd, "%s needs a value", a);
        }

        if (strcmp(a, "--client") == 0) {
            if (client != NULL) {
                return al_ctl_twice(cmd, a);
            }
            client = argv[++i];

        } else if (strcmp(a, "--token-env") == 0) {
            if (token_env != NULL) {
                return al_ctl_twice(cmd, a);
            }
            token_env = argv[++i];

        } else if (strcmp(a, "--uid") == 0 || strcmp(a, "--gid") == 0) {
            char  *end;

            if (a[2] == 'u' ? peer.uid != (uid_t) -1
                            : peer.gid != (gid_t) -1)
            {
                return al_ctl_twice(cmd, a);
            }

            errno = 0;
            v = strtoull(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || v > 0xfffffffe) {
                return al_ctl_bad(cmd, "%s needs a number, not \"%s\"", a,
                                  argv[i]);
            }
            peer.unix_peer = 1;
            if (a[2] == 'u') {
                peer.uid = (uid_t) v;
            } else {
                peer.gid = (gid_t) v;
            }
            have_peer = 1;

        } else if (strcmp(a, "--addr") == 0) {
            if (peer.has_addr) {
                return al_ctl_twice(cmd, a);
            }
            i++;
            if (inet_pton(AF_INET, argv[i], &a4) == 1) {
                peer.addr[10] = 0xff;
                peer.addr[11] = 0xff;
                memcpy(&peer.addr[12], &a4, 4);

            } else if (inet_pton(AF_INET6, argv[i], peer.addr) != 1) {
                return al_ctl_bad(cmd, "--addr needs an IPv4 or IPv6 "
                                  "address, not \"%s\"", argv[i]);
            }
            peer.has_addr = 1;
            have_peer = 1;

        } else if (strcmp(a, "--body") == 0) {
            if (body_file != NULL) {
                return al_ctl_twice(cmd, a);
            }
            body_file = argv[++i];

        } else if (strcmp(a, "--content-type") == 0) {
            if (ctype != NULL) {
                return al_ctl_twice(cmd, a);
            }
            ctype = argv[++i];

        } else if (al_ctl_option(a)) {
            return al_ctl_bad(cmd, "unknown option \"%s\"", a);

        } else if (file == NULL) {
            file = a;

        } else if (method == NULL) {
            method = a;

        } else if (target == NULL) {
            target = a;

        } else {
            return al_ctl_bad(cmd, "one FILE, METHOD and TARGET only, not "
                              "\"%s\" too", a);
        }
    }

    if (token_stdin && token_env != NULL) {
        return al_ctl_bad(cmd, "--token-stdin and --token-env are "
                          "exclusive");
    }

    /* nginx sees a unix socket's peer (ids) or a TCP peer (an address) */

    if (peer.unix_peer && peer.has_addr) {
        return al_ctl_bad(cmd, "--addr (a TCP peer) cannot be given with "
                          "--uid or --gid (a unix socket peer): a request "
                          "comes from one or the other");
    }

    if (token_stdin && body_file != NULL && strcmp(body_file, "-") == 0) {
        return al_ctl_bad(cmd, "the token and the body cannot both come "
                          "from standard input");
    }

    if (file == NULL || method == NULL || target == NULL) {
        return al_ctl_bad(cmd, "no %s given", file == NULL ? "FILE"
                          : method == NULL ? "METHOD" : "TARGET");
    }

    if (client != NULL && (have_peer || token_stdin || token_env)) {
        return al_ctl_bad(cmd, "--client names the client: it cannot be "
                          "given with --uid, --gid, --addr, --token-stdin "
                          "or --token-env");
    }

    if (client == NULL && !have_peer && !token_stdin && !token_env) {
        return al_ctl_bad(cmd, "no client: give --client NAME, or the "
                          "peer (--uid, --gid, --addr) and/or a token");
    }

    token = NULL;
    token_len = 0;
    tok_at = 0;

    if (token_stdin || token_env != NULL) {
        token = al_ctl_token(token_env, token_stdin, &token_len);
        if (token == NULL) {
            return 2;
        }

        /*
         * what the proxy compares: the header's value without the spaces
         * around it, which nginx and the module drop
         */

        while (tok_at < token_len && token[tok_at] == ' ') {
            tok_at++;
        }

        while (token_len > tok_at && token[token_len - 1] == ' ') {
            token_len--;
        }

        if (token_len == tok_at) {
            fprintf(stderr, "airlockctl: the token is only spaces, which "
                    "the proxy drops: it would be an empty token\n");
            al_secure_free(token);
            return 2;
        }
    }

    p = al_ctl_load(file, NULL, &rc);
    if (p == NULL) {
        al_secure_free(token);
        return 2;
    }

    d = calloc(1, sizeof(al_decision_t));
    if (d == NULL) {
        al_secure_free(token);
        al_policy_free(p);
        return 2;
    }

    memset(&req, 0, sizeof(req));
    req.method = method;
    req.method_len = strlen(method);
    req.target = target;
    req.target_len = strlen(target);
    rc = 1;
    body = NULL;
    body_len = 0;

    if (body_file != NULL) {
        int  fd;

        fd = strcmp(body_file, "-") == 0
             ? 0 : open(body_file, O_RDONLY | O_CLOEXEC);
        if (fd == -1) {
            al_ctl_err("airlockctl: cannot open %s: %s\n", body_file,
                       strerror(errno));
            rc = 2;
            goto done;
        }
        body = al_ctl_read(fd, AL_CTL_BODY_MAX, &body_len, 0);
        if (fd != 0) {
            close(fd);
        }
        if (body == NULL) {
            al_ctl_err("airlockctl: cannot read %s: %s\n", body_file,
                       errno == EFBIG ? "larger than the body limit"
                                      : strerror(errno));
            rc = 2;
            goto done;
        }
    }

    if (client != NULL) {
        req.client = al_policy_client(p, client, strlen(client));
        if (req.client == NULL) {
            al_ctl_err("airlockctl: the policy has no client \"%s\"\n",
                       client);
            rc = 2;
            goto done;
        }

    } else {
        req.client = al_client_identify(p, have_peer ? &peer : NULL,
                                        token ? token + tok_at : NULL,
                                        token_len - tok_at, &why);
        if (req.client == NULL) {
            al_ctl_out("deny: client_unknown (%s)\n", why);
            goto done;
        }
        al_ctl_out("client: %s\n", req.client->name.data);

        /*
         * a token alone: any peer; a unix peer: its other id if not
         * given, which is (uid_t) -1 or (gid_t) -1, an id no client has
         */

        unseen = !have_peer ? AL_CTL_UNSEEN_UID | AL_CTL_UNSEEN_GID
                              | AL_CTL_UNSEEN_ADDR
                 : !peer.unix_peer ? 0
                 : peer.uid == (uid_t) -1 ? AL_CTL_UNSEEN_UID
                 : peer.gid == (gid_t) -1 ? AL_CTL_UNSEEN_GID : 0;

        /*
         * refused as a token of one client from a peer of another, or,
         * when the id given names a client itself, as a peer naming two
         */

        if (unseen) {
            al_ctl_explain_peer(p, req.client, unseen,
                                token != NULL
                                && (!have_peer
                                    || al_client_identify(p, &peer, NULL, 0,
                                                          &why)
                                       == NULL));
        }
    }

    for (k = 0; k < p->nllm; k++) {
        l = &p->llm[k];
        if (strncmp(target, l->prefix.data, l->prefix.len) == 0
            && (target[l->prefix.len] == '/' || target[l->prefix.len] == '?'
                || target[l->prefix.len] == '\0'))
        {
            rc = al_ctl_explain_llm(l, req.client, method, target, body,
                                    body_len, ctype);
            goto done;
        }
    }

    if (al_decide(p, &req, d) != AL_REASON_NONE) {
        al_ctl_out("deny: %s (%s)\n", al_reason_name(d->reason), d->detail);
        if (d->route != NULL) {
            al_ctl_out("route: %s (line %u)\n", d->route->name.data,
                       d->route->line);
        }
        goto done;
    }

    r = d->route;

    if (al_decide_body(r, ctype, ctype ? strlen(ctype) : 0, body, body_len,
                       d) != AL_REASON_NONE)
    {
        al_ctl_out("deny: %s (%s)\n", al_reason_name(d->reason), d->detail);
        al_ctl_out("route: %s (line %u)\n", r->name.data, r->line);
        goto done;
    }

    al_methods_format(m, sizeof(m), r->methods);

    al_ctl_out("allow: route \"%s\" (line %u)\n", r->name.data, r->line);
    al_ctl_out("  upstream: %s (%s)\n", r->upstream->name.data,
               r->upstream->url.data);
    al_ctl_out("  forward:  %s %.*s%s\n", method,
               (int) (r->upstream->url.len - r->upstream->base_path.len),
               r->upstream->url.data, d->uri);
    al_ctl_out("  host:     %s\n", r->upstream->host.data);

    for (k = 0, np = 0; k < r->nsegs; k++) {
        if (!r->seg_is_param[k]) {
            continue;
        }

        if (d->path.drive & ((uint64_t) 1 << k)) {
            al_ctl_out("  drive:    {%s} \"%s\" starts with a drive, taken "
                       "(drive: true)\n", r->params[np].name.data,
                       d->path.seg[k].data);
        }

        np++;
    }

    for (k = 0; k < r->ninject; k++) {
        al_ctl_out("  inject:   %s: %s\n", r->inject[k].name.data,
                   r->inject[k].tmpl.data);
    }

    if (r->inject_secret) {
        al_ctl_explain_clear(r->upstream);
    }

    if (body_len) {
        al_ctl_out("  body:     %zu bytes, checked\n", body_len);
    }

    rc = 0;

done:

    if (token != NULL) {
        al_secure_free(token);
    }

    free(body);
    free(d);
    al_policy_free(p);

    return rc;
}


/*
 * What explain was not given of the peer: the proxy always has all of
 * it (a unix socket's uid and gid, or a TCP peer's address) and refuses
 * a request whose peer names another client than its token or its other
 * id does (client_unknown).  The request is decided for a peer whose
 * part not given names no client; the clients whose uid, gid or address
 * there would have it refused are named, so that an allow is not read as
 * an allow from any peer.
 */

static void
al_ctl_explain_peer(const al_policy_t *p, const al_client_t *client,
    unsigned unseen, int token)
{
    size_t              i, n;
    unsigned            has;
    const char         *what;
    const al_client_t  *c;

    what = (unseen == AL_CTL_UNSEEN_GID) ? "no --gid given"
           : (unseen == AL_CTL_UNSEEN_UID) ? "no --uid given"
           : "not given (--uid, --gid or --addr)";

    for (i = 0, n = 0; i < p->nclients; i++) {
        c = &p->clients[i];

        has = (c->nuids ? AL_CTL_UNSEEN_UID : 0)
              | (c->ngids ? AL_CTL_UNSEEN_GID : 0)
              | (c->ncidrs ? AL_CTL_UNSEEN_ADDR : 0);

        if (c == client || (has & unseen) == 0) {
            continue;
        }

        has &= unseen;

        if (n == 0) {
            al_ctl_out("  peer:     %s: decided for a peer that names no "
                       "client there; the proxy refuses it (client_unknown: "
                       "%s) from a peer of ", what,
                       token ? "token and peer name different clients"
                             : "peer matches more than one client");
        }

        if (n == 8) {
            al_ctl_out(", ...");
            n++;
            continue;
        }

        if (n > 8) {
            continue;
        }

        al_ctl_out("%s%s (%s%s%s%s%s)", n ? ", " : "", c->name.data,
                   (has & AL_CTL_UNSEEN_UID) ? "unix_uid" : "",
                   (has & AL_CTL_UNSEEN_UID)
                   && (has & ~AL_CTL_UNSEEN_UID) ? ", " : "",
                   (has & AL_CTL_UNSEEN_GID) ? "unix_gid" : "",
                   (has & AL_CTL_UNSEEN_GID)
                   && (has & AL_CTL_UNSEEN_ADDR) ? ", " : "",
                   (has & AL_CTL_UNSEEN_ADDR) ? "cidr" : "");
        n++;
    }

    if (n) {
        al_ctl_out("\n");
    }
}


/*
 * An LLM prefix, decided by the gateway's own library calls in the
 * gateway's order: the client's entry, the endpoint and query
 * (al_llm_route()), then the body (al_llm_request()): model, stream,
 * max_tokens clamp or reject.  Budgets depend on what was spent and are
 * not decided here.  Returns 0 allowed, 1 denied.
 */

static int
al_ctl_explain_llm(const al_llm_t *l, const al_client_t *client,
    const char *method, const char *target, const unsigned char *body,
    size_t body_len, const char *ctype)
{
    int                     rc;
    size_t                  tlen, at, raw, alias_len;
    al_str_t                named;
    const char             *alias;
    al_reason_t             reason;
    al_llm_req_t            req;
    al_llm_map_t            map;
    al_llm_route_t         *rt;
    const al_llm_client_t  *lc;

    al_ctl_out("llm: provider \"%s\" (line %u), prefix %s\n", l->name.data,
               l->line, l->prefix.data);

    lc = al_llm_find_client(l, client);
    if (lc == NULL) {
        al_ctl_out("deny: %s (this client may not use this provider)\n",
                   al_reason_name(AL_REASON_NO_ROUTE));
        return 1;
    }

    tlen = strlen(target);

    if (target[l->prefix.len] != '/') {
        al_ctl_out("deny: %s (the request target is not under the provider's "
                   "prefix)\n", al_reason_name(AL_REASON_NO_ROUTE));
        return 1;
    }

    memset(&map, 0, sizeof(map));

    rt = calloc(1, sizeof(al_llm_route_t));
    if (rt == NULL) {
        return 2;
    }

    reason = al_llm_route(l, lc, al_method_bit(method, strlen(method)),
                          target + l->prefix.len, tlen - l->prefix.len, rt);
    if (reason != AL_REASON_NONE) {
        al_ctl_out("deny: %s (%s)\n", al_reason_name(reason), rt->detail);
        free(rt);
        return 1;
    }

    rc = 1;

    if (!al_llm_endpoint_has_body(rt->endpoint)) {
        if (body_len > 0) {
            al_ctl_out("deny: %s (this endpoint takes no request body)\n",
                       al_reason_name(AL_REASON_BODY));
            goto done;
        }

        al_ctl_out("allow: %s %s\n", method,
                   al_llm_endpoint_name(rt->endpoint));
        al_ctl_out("  forward:  %s %.*s%s\n", method,
                   (int) (l->upstream.url.len - l->upstream.base_path.len),
                   l->upstream.url.data, rt->uri);
        al_ctl_out("  inject:   the key of secret \"%s\"\n",
                   l->secret->name.data);
        al_ctl_explain_clear(&l->upstream);
        al_ctl_explain_limits(l, client, lc, NULL, NULL, 0);
        rc = 0;
        goto done;
    }

    if (body_len > l->body_max) {
        al_ctl_out("deny: %s (request body of %zu bytes is over the limit of "
                   "%zu bytes)\n", al_reason_name(AL_REASON_BODY_TOO_LARGE),
                   body_len, l->body_max);
        goto done;
    }

    /* as the gateway does: the alias or the deployment into "model" */

    switch (al_llm_model_map(l, (l->kind == AL_LLM_AZURE && rt->model.len)
                                ? &rt->model : NULL,
                             body ? body : (const unsigned char *) "",
                             body_len, &map))
    {
    case 0:
        break;

    case 1:
        al_ctl_out("deny: %s (" AL_LLM_MAP_ESCAPED ")\n",
                   al_reason_name(AL_REASON_BODY));
        goto done;

    default:
        fprintf(stderr, "airlockctl: out of memory\n");
        rc = 2;
        goto done;
    }

    if (rt->alias.len) {
        al_ctl_out("  alias:    %.*s -> deployment %.*s\n", (int) rt->alias.len,
                   rt->alias.data, (int) rt->model.len, rt->model.data);
    }

    if (map.body != NULL) {
        if (map.alias_len) {
            al_ctl_out("  alias:    %s -> model ", map.alias);
        } else {
            al_ctl_out("  model:    set to the deployment ");
        }

        if (al_llm_model_locate(map.body, map.body_len, &at, &raw) == 1) {
            al_ctl_out("%.*s", (int) raw, (const char *) map.body + at);
        }

        al_ctl_out(" before the body is checked\n");

        body = map.body;
        body_len = map.body_len;
    }

    /* the alias the client asked for: a deployment's, or the body's */

    alias = rt->alias.len ? rt->alias.data : map.alias;
    alias_len = rt->alias.len ? rt->alias.len : map.alias_len;

    named.data = alias;
    named.len = alias_len;

    memset(&req, 0, sizeof(req));

    reason = al_llm_request_with(l, lc, rt->endpoint, &named, ctype,
                                 ctype ? strlen(ctype) : 0,
                                 body ? body : (const unsigned char *) "",
                                 body_len, NULL, NULL, &req);

    if (reason != AL_REASON_NONE) {
        al_ctl_out("deny: %s (%s)\n", al_reason_name(reason), req.detail);
        if (body == NULL) {
            al_ctl_out("  (this endpoint takes a JSON body: give it with "
                       "--body FILE and --content-type application/json)\n");
        }
        al_llm_request_free(&req);
        goto done;
    }

    al_ctl_out("allow: %s %s, model %.*s%s\n", method,
               al_llm_endpoint_name(rt->endpoint), (int) req.model_len,
               req.model, req.stream ? ", streamed" : "");
    al_ctl_out("  forward:  %s %.*s%s\n", method,
               (int) (l->upstream.url.len - l->upstream.base_path.len),
               l->upstream.url.data, rt->uri);
    al_ctl_out("  inject:   the key of secret \"%s\" as %s\n",
               l->secret->name.data,
               l->kind == AL_LLM_AZURE ? "api-key"
               : l->kind == AL_LLM_ANTHROPIC ? "x-api-key"
               : "Authorization: Bearer");
    al_ctl_explain_clear(&l->upstream);

    if (req.clamped) {
        al_ctl_out("  max_tokens: clamped to %llu (over_max_tokens: clamp)\n",
                   (unsigned long long) lc->max_tokens);
    } else if (req.capped) {
        al_ctl_out("  max_tokens: %llu added (the request named none)\n",
                   (unsigned long long) al_llm_default_max_tokens(lc));
    }

    if (req.body != NULL) {
        al_ctl_out("  body:     rewritten: %.*s\n", (int) req.body_len,
                   req.body);
    } else {
        al_ctl_out("  body:     %zu bytes, checked, forwarded as sent\n",
                   body_len);
    }

    al_ctl_explain_tools(l);

    al_ctl_explain_fallback(l, client, rt, &req, alias, alias_len);

    if (lc->tokens_per_minute || lc->tokens_per_day) {
        al_ctl_out("  budget:   reserves %llu tokens against %llu/min, "
                   "%llu/day (0 = unlimited)\n",
                   (unsigned long long) al_llm_request_need(&req),
                   (unsigned long long) lc->tokens_per_minute,
                   (unsigned long long) lc->tokens_per_day);
    }

    al_ctl_explain_limits(l, client, lc, &req, alias, alias_len);

    al_llm_request_free(&req);
    rc = 0;

done:

    free(map.body);
    free(rt);

    return rc;
}


/* the tools the provider may run for a request (al_llm.h) */

static void
al_ctl_explain_tools(const al_llm_t *l)
{
    unsigned  i, n;

    al_ctl_out("  tools:    client tools pass; provider tools allowed: ");

    for (i = 0, n = 0; i < AL_LLM_PT_NAMED; i++) {
        if (l->provider_tools & (UINT32_C(1) << i)) {
            al_ctl_out("%s%s", n++ ? ", " : "", al_llm_tool_names[i]);
        }
    }

    al_ctl_out("%s\n", n ? "" : "none (provider_tools)");

    al_ctl_out("  members:  the ones the providers document; also allowed: ");

    for (i = 0; i < l->nallow_members; i++) {
        al_ctl_out("%s%s", i ? ", " : "", l->allow_members[i].data);
    }

    al_ctl_out("%s\n", l->nallow_members ? "" : "none (allow_members)");
}


/* where the call goes when the provider fails (al_llm_fallback_*()) */

static void
al_ctl_explain_fallback(const al_llm_t *l, const al_client_t *client,
    const al_llm_route_t *rt, const al_llm_req_t *req, const char *alias,
    size_t alias_len)
{
    size_t                  len;
    al_str_t                model;
    const al_llm_t         *b;
    const al_llm_client_t  *lc;
    char                    uri[1024];

    b = l->fallback;

    if (b == NULL) {
        return;
    }

    lc = al_llm_find_client(b, client);

    if (lc == NULL
        || al_llm_fallback_model(b, lc, req->model, req->model_len,
                                 alias, alias_len, &model)
           != 0
        || al_llm_fallback_uri(b, rt->endpoint, &model, uri, sizeof(uri),
                               &len)
           != 0)
    {
        al_ctl_out("  fallback: none for this call (llm \"%s\" does not serve "
                   "it to this client)\n", b->name.data);
        return;
    }

    al_ctl_out("  fallback: on 429, 5xx or no connection, llm \"%s\": POST "
               "%.*s%.*s, model %.*s\n", b->name.data,
               (int) (b->upstream.url.len - b->upstream.base_path.len),
               b->upstream.url.data, (int) len, uri, (int) model.len,
               model.data);
}


/*
 * A bearer token from standard input (one line; its newline dropped) or
 * from an environment variable, in guarded memory, *len bytes.  A NUL, CR
 * or LF in it is refused: no request header carries one (nginx refuses
 * the request), and a NUL would end the token short.  NULL after a
 * message.
 */

static char *
al_ctl_token(const char *env, int stdin_token, size_t *len)
{
    char  *t;

    t = al_ctl_token_read(env, stdin_token, len);

    if (t != NULL
        && (memchr(t, '\0', *len) != NULL || memchr(t, '\r', *len) != NULL
            || memchr(t, '\n', *len) != NULL))
    {
        fprintf(stderr, "airlockctl: the token has a NUL, CR or LF byte "
                "in it, which cannot be sent in a header: nginx refuses "
                "such a request\n");
        al_secure_free(t);
        return NULL;
    }

    return t;
}


static char *
al_ctl_token_read(const char *env, int stdin_token, size_t *plen)
{
    size_t          len;
    char           *t;
    const char     *e;
    unsigned char  *buf;

    if (stdin_token) {

        /* room for the newline echo adds to a token of the largest size */

        buf = al_ctl_read_secret("token", AL_CTL_SEAL_MAX + 2, &len);
        if (buf == NULL) {
            if (errno == EFBIG) {
                fprintf(stderr, "airlockctl: the token on standard input "
                        "is over %d bytes\n", AL_CTL_SEAL_MAX);
            } else {
                al_ctl_err("airlockctl: cannot read the token from "
                           "standard input: %s\n", strerror(errno));
            }
            return NULL;
        }
        if (len > 0 && buf[len - 1] == '\n') {
            buf[--len] = '\0';
            if (len > 0 && buf[len - 1] == '\r') {
                buf[--len] = '\0';
            }
        }
        if (len > AL_CTL_SEAL_MAX) {
            al_secure_free(buf);
            fprintf(stderr, "airlockctl: the token on standard input is "
                    "over %d bytes\n", AL_CTL_SEAL_MAX);
            return NULL;
        }
        if (len == 0) {
            al_secure_free(buf);
            fprintf(stderr, "airlockctl: the token on standard input is "
                    "empty\n");
            return NULL;
        }
        *plen = len;
        return (char *) buf;
    }

    e = getenv(env);
    if (e == NULL || e[0] == '\0') {
        al_ctl_err("airlockctl: the environment variable %s is not "
                   "set or empty\n", env);
        return NULL;
    }

    len = strlen(e);

    t = al_secure_alloc(len + 1);
    if (t == NULL) {
        fprintf(stderr, "airlockctl: out of memory\n");
        return NULL;
    }

    memcpy(t, e, len + 1);
    *plen = len;

    return t;
}


static int
al_ctl_routes(int argc, char **argv)
{
    int                  rc;
    char                 m[64], body[32];
    size_t               i, k, n;
    al_policy_t         *p;
    const al_route_t    *r;
    const al_llm_t      *l;

    p = al_ctl_load_only(argc, argv, "routes", &rc);
    if (p == NULL) {
        return rc;
    }

    printf("%-24s %-10s %-32s %-20s %-8s %s\n", "ROUTE", "METHODS", "PATH",
           "CLIENTS", "BODY", "FORWARDS TO");

    for (i = 0; i < p->nroutes; i++) {
        r = &p->routes[i];

        al_methods_format(m, sizeof(m), r->methods);

        if (r->has_body) {
            snprintf(body, sizeof(body), "%zu%s", r->body_max,
                     r->json ? "+json" : "");
        } else {
            snprintf(body, sizeof(body), "-");
        }

        printf("%-24s %-10s %-32s ", r->name.data, m, r->path.data);

        /* every client the route grants, however long the list */

        n = 0;
        for (k = 0; k < p->nclients; k++) {
            if (r->client_ok[k]) {
                printf("%s%s", n ? "," : "", p->clients[k].name.data);
                n += (n ? 1 : 0) + p->clients[k].name.len;
            }
        }

        printf("%*s %-8s %s%s\n", n < 20 ? (int) (20 - n) : 0, "", body,
               r->upstream->url.data, r->to.data);
    }

    if (p->nllm) {
        printf("\n%-24s %-18s %-32s %s\n", "LLM", "PROVIDER", "PREFIX",
               "CLIENTS (tokens/min, tokens/day, max_tokens[; limits]; "
               "- unlimited)");
    }

    for (i = 0; i < p->nllm; i++) {
        l = &p->llm[i];

        printf("%-24s %-18s %-32s", l->name.data,
               l->kind == AL_LLM_ANTHROPIC ? "anthropic"
               : l->kind == AL_LLM_AZURE ? "azure"
               : l->kind == AL_LLM_OPENAI ? "openai" : "openai-compatible",
               l->prefix.data);

        for (k = 0; k < l->nclients; k++) {
            printf(" %s(", l->clients[k].client->name.data);
            al_ctl_routes_count(l->clients[k].tokens_per_minute, ",");
            al_ctl_routes_count(l->clients[k].tokens_per_day, ",");
            al_ctl_routes_count(l->clients[k].max_tokens, "");
            al_ctl_routes_limits(&l->clients[k]);
            printf(")");
        }
        printf("\n");
    }

    al_policy_free(p);

    return 0;
}


/*
 * The sinks' hosts and ports, for the appliance's egress rule (its
 * airlock-alertd-egress fills the sets alertd's user may connect to).
 * Not their URLs: a webhook's path is its secret.
 */

static int
al_ctl_sinks(int argc, char **argv)
{
    int                  rc;
    size_t               i;
    al_str_t             h;
    al_policy_t         *p;
    const al_sink_t     *s;

    p = al_ctl_load_only(argc, argv, "sinks", &rc);
    if (p == NULL) {
        return rc;
    }

    for (i = 0; i < p->nsinks; i++) {
        s = &p->sinks[i];
        h = s->hostname;

        if (h.len >= 2 && h.data[0] == '[' && h.data[h.len - 1] == ']') {
            h.data++;
            h.len -= 2;
        }

        printf("%s %.*s %u\n",
               s->kind == AL_SINK_WEBHOOK ? "webhook" : "alertmanager",
               (int) h.len, h.data, s->port);
    }

    al_policy_free(p);

    return 0;
}


static void
al_ctl_print_line(void *data, const char *line)
{
    (void) data;
    printf("%s\n", line);
}


static int
al_ctl_diff(int argc, char **argv)
{
    int                  grants, rc, i;
    al_policy_t         *o, *n;
    const al_ctl_cmd_t  *cmd;

    cmd = al_ctl_cmd("diff");
    if (al_ctl_help_only(argc, argv, cmd)) {
        return 0;
    }

    for (i = 1; i < argc; i++) {
        if (al_ctl_option(argv[i])) {
            return al_ctl_bad(cmd, "unknown option \"%s\"", argv[i]);
        }
    }

    if (argc != 3) {
        return al_ctl_bad(cmd, argc < 3 ? "OLD and NEW are needed"
                                        : "OLD and NEW only");
    }

    o = al_ctl_load(argv[1], NULL, &rc);
    if (o == NULL) {
        return 2;
    }

    n = al_ctl_load(argv[2], NULL, &rc);
    if (n == NULL) {
        al_policy_free(o);
        return 2;
    }

    grants = al_policy_diff(o, n, al_ctl_print_line, NULL);

    if (grants) {
        printf("%d change%s grant%s access the old policy did not\n", grants,
               grants == 1 ? "" : "s", grants == 1 ? "s" : "");
    }

    al_policy_free(o);
    al_policy_free(n);

    return grants ? 1 : 0;
}


static int
al_ctl_keygen(int argc, char **argv)
{
    char                 msg[AL_ERR_MAX + 300];
    al_error_t           err;
    const al_ctl_cmd_t  *cmd;

    cmd = al_ctl_cmd("keygen");
    if (al_ctl_help_only(argc, argv, cmd)) {
        return 0;
    }

    /* "" would be the pair ".tmp" and ".pub" in the current directory */

    if (argc < 2) {
        return al_ctl_bad(cmd, "no PATH given");
    }

    if (al_ctl_option(argv[1])) {
        return al_ctl_bad(cmd, "unknown option \"%s\"", argv[1]);
    }

    if (argc != 2) {
        return al_ctl_bad(cmd, "one PATH only");
    }

    if (argv[1][0] == '\0' || strcmp(argv[1], "-") == 0) {
        return al_ctl_bad(cmd, "PATH is %s", argv[1][0] == '\0'
                          ? "empty" : "\"-\"");
    }

    if (al_keygen(argv[1], &err) != 0) {
        al_error_format(&err, msg, sizeof(msg));
        al_ctl_err("airlockctl: %s\n", msg);
        return 1;
    }

    al_ctl_err("wrote %s (private, 0600) and %s.pub\n", argv[1],
               argv[1]);

    return 0;
}


static int
al_ctl_seal(int argc, char **argv)
{
    int                  i, keep;
    char                 msg[AL_ERR_MAX + 300], *out;
    size_t               len;
    al_error_t           err;
    const char          *pub;
    unsigned char       *secret;
    const al_ctl_cmd_t  *cmd;

    cmd = al_ctl_cmd("seal");
    if (al_ctl_help_only(argc, argv, cmd)) {
        return 0;
    }

    pub = NULL;
    keep = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pub") == 0) {
            if (i + 1 >= argc) {
                return al_ctl_bad(cmd, "--pub needs a PUBLIC_KEY");
            }
            if (pub != NULL) {
                return al_ctl_twice(cmd, argv[i]);
            }
            pub = argv[++i];

        } else if (strcmp(argv[i], "--keep-newline") == 0) {
            if (keep) {
                return al_ctl_twice(cmd, argv[i]);
            }
            keep = 1;

        } else if (al_ctl_option(argv[i])) {
            return al_ctl_bad(cmd, "unknown option \"%s\"", argv[i]);

        } else {
            /*
             * a secret on the command line would sit in ps and history:
             * the argument is not shown, it may be one
             */
            return al_ctl_bad(cmd, "an argument that is not an option; "
                              "seal reads the secret from standard input "
                              "only");
        }
    }

    if (pub == NULL) {
        return al_ctl_bad(cmd, "--pub PUBLIC_KEY is needed");
    }

    /* room for the newline echo adds to a secret of the largest size */

    secret = al_ctl_read_secret("secret", AL_CTL_SEAL_MAX + 2, &len);
    if (secret == NULL) {
        if (errno == EFBIG) {
            fprintf(stderr, "airlockctl: the secret is over %d bytes\n",
                    AL_CTL_SEAL_MAX);
        } else {
            al_ctl_err("airlockctl: cannot read the secret: %s\n",
                       strerror(errno));
        }
        return 2;
    }

    if (!keep && len > 0 && secret[len - 1] == '\n') {
        len--;
        if (len > 0 && secret[len - 1] == '\r') {
            len--;
        }
    }

    if (len > AL_CTL_SEAL_MAX) {
        al_secure_free(secret);
        fprintf(stderr, "airlockctl: the secret is over %d bytes\n",
                AL_CTL_SEAL_MAX);
        return 2;
    }

    if (len == 0) {
        al_secure_free(secret);
        fprintf(stderr, "airlockctl: the secret is empty\n");
        return 2;
    }

    if (al_seal(pub, secret, len, &out, &err) != 0) {
        al_secure_free(secret);
        al_error_format(&err, msg, sizeof(msg));
        al_ctl_err("airlockctl: %s\n", msg);
        return 1;
    }

    al_secure_free(secret);

    /* the value is the command's whole result: a write that failed (a
       full disk under "> sealed.txt") is not a success */

    if (printf("%s\n", out) < 0 || fflush(stdout) != 0 || ferror(stdout)) {
        free(out);
        al_ctl_err("airlockctl: cannot write the sealed value: %s\n",
                   strerror(errno));
        return 2;
    }

    free(out);

    return 0;
}


/*
 * Reads at most max bytes; NULL when there are more (errno EFBIG) or on
 * an error (errno says which), so that the caller can tell the two.
 */

static unsigned char *
al_ctl_read(int fd, size_t max, size_t *len, int secure)
{
    int             err;
    ssize_t         n;
    unsigned char  *buf;

    buf = secure ? al_secure_alloc(max + 1) : malloc(max + 1);
    if (buf == NULL) {
        return NULL;
    }

    *len = 0;

    for ( ;; ) {
        n = read(fd, buf + *len, max + 1 - *len);
        if (n == 0) {
            break;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            err = errno;
            goto failed;
        }
        *len += (size_t) n;
        if (*len > max) {
            err = EFBIG;
            goto failed;
        }
    }

    buf[*len] = '\0';

    return buf;

failed:

    if (secure) {
        al_secure_free(buf);
    } else {
        free(buf);
    }

    errno = err;

    return NULL;
}


/*
 * A secret or a token from standard input, in guarded memory.  On a
 * terminal, a prompt, and what is typed is not echoed: it would stay on
 * the screen, in the scrollback and in any recording of the session.  The
 * terminal is given its settings back however the read ends, a fatal
 * signal included.
 */

static unsigned char *
al_ctl_read_secret(const char *what, size_t max, size_t *len)
{
    int               i, tty, err;
    unsigned char    *buf;
    struct termios    quiet;
    struct sigaction  sa, old[4];

    tty = (isatty(0) && tcgetattr(0, &al_ctl_tty) == 0);

    if (tty) {
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = al_ctl_tty_signal;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);

        /* a signal that is ignored (nohup) stays ignored */

        for (i = 0; i < 4; i++) {
            sigaction(al_ctl_tty_sigs[i], NULL, &old[i]);

            if (old[i].sa_handler != SIG_IGN) {
                sigaction(al_ctl_tty_sigs[i], &sa, NULL);
            }
        }

        /* the line ends still show, so the prompt's line is closed */

        quiet = al_ctl_tty;
        quiet.c_lflag &= ~(tcflag_t) ECHO;
        quiet.c_lflag |= ECHONL;
        (void) tcsetattr(0, TCSAFLUSH, &quiet);

        al_ctl_err("enter the %s (it is not shown), then Ctrl-D:\n",
                   what);
    }

    buf = al_ctl_read(0, max, len, 1);
    err = errno;

    if (tty) {
        (void) tcsetattr(0, TCSAFLUSH, &al_ctl_tty);

        for (i = 0; i < 4; i++) {
            sigaction(al_ctl_tty_sigs[i], &old[i], NULL);
        }
    }

    /* why the read failed, for the caller to say */
    errno = err;

    return buf;
}


/* a fatal signal while a secret is typed: the terminal echoes again */

static void
al_ctl_tty_signal(int signo)
{
    (void) tcsetattr(0, TCSANOW, &al_ctl_tty);

    /* SA_RESETHAND: the default action, once this handler returns */
    (void) raise(signo);
}


static int
al_ctl_tools(int argc, char **argv)
{
    int                  i, rc, fmt_given;
    char                *text, msg[AL_ERR_MAX + 300];
    const char          *file, *client, *sandbox;
    al_error_t           err;
    al_policy_t         *p;
    al_tools_format_t    fmt;
    const al_client_t   *c, *sc;
    const al_ctl_cmd_t  *cmd;

    cmd = al_ctl_cmd("tools");
    if (al_ctl_help_only(argc, argv, cmd)) {
        return 0;
    }

    file = NULL;
    client = NULL;
    sandbox = NULL;
    fmt = AL_TOOLS_OPENAI;
    fmt_given = 0;

    for (i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--client") == 0
             || strcmp(argv[i], "--sandbox") == 0
             || strcmp(argv[i], "--format") == 0)
            && i + 1 >= argc)
        {
            return al_ctl_bad(cmd, "%s needs a value", argv[i]);
        }

        if (strcmp(argv[i], "--client") == 0) {
            if (client != NULL) {
                return al_ctl_twice(cmd, argv[i]);
            }
            client = argv[++i];

        } else if (strcmp(argv[i], "--sandbox") == 0) {
            if (sandbox != NULL) {
                return al_ctl_twice(cmd, argv[i]);
            }
            sandbox = argv[++i];

        } else if (strcmp(argv[i], "--format") == 0) {
            if (fmt_given) {
                return al_ctl_twice(cmd, argv[i]);
            }
            fmt_given = 1;
            i++;
            if (strcmp(argv[i], "openai") == 0) {
                fmt = AL_TOOLS_OPENAI;
            } else if (strcmp(argv[i], "mcp") == 0) {
                fmt = AL_TOOLS_MCP;
            } else {
                return al_ctl_bad(cmd, "unknown format \"%s\" (openai "
                                  "or mcp)", argv[i]);
            }

        } else if (al_ctl_option(argv[i])) {
            return al_ctl_bad(cmd, "unknown option \"%s\"", argv[i]);

        } else if (file != NULL) {
            return al_ctl_bad(cmd, "one FILE only, not \"%s\" too",
                              argv[i]);

        } else {
            file = argv[i];
        }
    }

    if (file == NULL) {
        return al_ctl_bad(cmd, "no FILE given");
    }

    if (client == NULL) {
        return al_ctl_bad(cmd, "--client NAME is needed");
    }

    p = al_ctl_load(file, NULL, &rc);
    if (p == NULL) {
        return 2;
    }

    c = al_policy_client(p, client, strlen(client));
    if (c == NULL) {
        al_ctl_err("airlockctl tools: %s has no client \"%s\"\n", file,
                   client);
        al_policy_free(p);
        return 1;
    }

    sc = NULL;
    if (sandbox == NULL) {
        sc = al_policy_client(p, "worker", 6);
    } else if (strcmp(sandbox, "none") != 0) {
        sc = al_policy_client(p, sandbox, strlen(sandbox));
        if (sc == NULL) {
            al_ctl_err("airlockctl tools: %s has no client \"%s\"\n",
                       file, sandbox);
            al_policy_free(p);
            return 1;
        }
    }

    text = al_tools_json(p, c, sc, fmt, &err);
    al_policy_free(p);

    if (text == NULL) {
        al_error_format(&err, msg, sizeof(msg));
        al_ctl_err("%s\n", msg);
        return 1;
    }

    al_ctl_tools_print(text);
    free(text);

    return 0;
}


/*
 * The tools' JSON with every character outside printable ASCII as a
 * \uXXXX escape, the same JSON to a reader.  A route's description (and
 * a pattern, a field's name) may hold any character: jansson escapes the
 * C0 controls, but wrote DEL, the C1 controls (0x9b is a CSI to some
 * terminals) and U+202E RIGHT-TO-LEFT OVERRIDE as they are, to the
 * operator's terminal.  Outside strings jansson writes ASCII alone.
 */

static void
al_ctl_tools_print(const char *text)
{
    int                   n, k;
    uint32_t              c, lo;
    const unsigned char  *s;

    for (s = (const unsigned char *) text; *s != '\0'; s += n) {
        n = 1;

        if (*s >= 0x20 && *s < 0x7f) {
            putchar(*s);
            continue;
        }

        /* jansson writes valid UTF-8; anything else is U+FFFD */

        c = 0xfffd;
        k = *s >= 0xf0 && *s < 0xf5 ? 4 : *s >= 0xe0 ? 3
            : *s >= 0xc2 && *s < 0xe0 ? 2 : 1;

        if (*s < 0x80) {
            c = *s;

        } else if (k > 1 && (*s < 0xf0 || k == 4)) {
            lo = *s & (0x7f >> k);

            for (n = 1; n < k && (s[n] & 0xc0) == 0x80; n++) {
                lo = (lo << 6) | (s[n] & 0x3f);
            }

            if (n == k && !(k == 3 && lo < 0x800)
                && !(k == 4 && (lo < 0x10000 || lo > 0x10ffff))
                && !(lo >= 0xd800 && lo < 0xe000))
            {
                c = lo;

            } else {
                n = 1;
            }
        }

        if (c > 0xffff) {
            c -= 0x10000;
            printf("\\u%04x\\u%04x", (unsigned) (0xd800 + (c >> 10)),
                   (unsigned) (0xdc00 + (c & 0x3ff)));

        } else if (c == '\n') {
            putchar('\n');

        } else {
            printf("\\u%04x", (unsigned) c);
        }
    }

    putchar('\n');
}


/*
 * edit and rollback.  The policy is replaced only by rename(2) in its own
 * directory, so nginx (and any reader) sees the old file or the new one,
 * never a partial one.  "nginx -t" reads the policy from the path in the
 * real configuration, so the candidate is put at that path for the test
 * and the old file renamed back if the test fails; the old file is kept
 * as a hard link (POLICY.old) for the whole time, fatal signals are held
 * off and POLICY.lock is held (al_ctl_lock()), so no other edit or
 * rollback runs at the same time.
 */

static int
al_ctl_edit_args(int argc, char **argv, const al_ctl_cmd_t *cmd,
    al_ctl_edit_t *e)
{
    int  i, k;

    memset(e, 0, sizeof(al_ctl_edit_t));
    e->policy = AL_CTL_POLICY;
    e->test = AL_CTL_TEST;
    e->reload = AL_CTL_RELOAD;
    e->dirfd = -1;
    e->lockfd = -1;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--policy") != 0 && strcmp(argv[i], "--key") != 0
            && strcmp(argv[i], "--test") != 0
            && strcmp(argv[i], "--reload") != 0)
        {
            return al_ctl_bad(cmd, al_ctl_option(argv[i])
                                   ? "unknown option \"%s\""
                                   : "no arguments but options, not \"%s\"",
                              argv[i]);
        }

        if (i + 1 >= argc) {
            return al_ctl_bad(cmd, "%s needs a value", argv[i]);
        }

        for (k = 1; k < i; k++) {
            if (strcmp(argv[k], argv[i]) == 0) {
                return al_ctl_twice(cmd, argv[i]);
            }

            k++;    /* an option's value is not an option */
        }

        if (strcmp(argv[i], "--policy") == 0) {
            e->policy = argv[++i];

        } else if (strcmp(argv[i], "--key") == 0) {
            e->key = argv[++i];

        } else if (strcmp(argv[i], "--test") == 0) {
            e->test = argv[++i];

        } else {
            e->reload = argv[++i];
        }
    }

    return al_ctl_edit_paths(e);
}


static int
al_ctl_edit_paths(al_ctl_edit_t *e)
{
    char        *slash;
    size_t       len;
    struct stat  st;

    /* a symbolic link is followed: the file nginx reads is replaced */

    e->given = e->policy;

    if (realpath(e->policy, e->real) == NULL) {
        al_ctl_err("%s: cannot open: %s\n", e->policy, strerror(errno));
        return 2;
    }

    e->policy = e->real;
    len = strlen(e->policy);

    if (len == 0 || len + sizeof(".edit.open") > AL_CTL_PATH_MAX
        || e->policy[len - 1] == '/')
    {
        al_ctl_err("airlockctl: invalid policy path \"%s\"\n",
                   e->policy);
        return 2;
    }

    snprintf(e->dir, sizeof(e->dir), "%s", e->policy);
    slash = strrchr(e->dir, '/');
    if (slash == NULL) {
        e->dir[0] = '.';
        e->dir[1] = '\0';
    } else if (slash == e->dir) {
        e->dir[1] = '\0';
    } else {
        *slash = '\0';
    }

    snprintf(e->candidate, sizeof(e->candidate), "%s.edit", e->policy);
    snprintf(e->mark, sizeof(e->mark), "%s.edit.open", e->policy);
    snprintf(e->prev, sizeof(e->prev), "%s.prev", e->policy);
    snprintf(e->old, sizeof(e->old), "%s.old", e->policy);
    snprintf(e->next, sizeof(e->next), "%s.new", e->policy);
    snprintf(e->lock, sizeof(e->lock), "%s.lock", e->policy);

    errno = 0;

    if (stat(e->policy, &st) == -1 || !S_ISREG(st.st_mode)) {
        al_ctl_err("%s: cannot open: %s\n", e->policy,
                   errno ? strerror(errno) : "not a regular file");
        return 2;
    }

    /*
     * refused as check and nginx refuse it, before the editor runs or
     * anything is made in the directory (al_ctl_install() asks again)
     */

    if (al_ctl_path_trusted(e->given, e->policy) != 0) {
        return 2;
    }

    e->dirfd = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (e->dirfd == -1) {
        al_ctl_err("%s: cannot open: %s\n", e->dir, strerror(errno));
        return 2;
    }

    /* one edit or rollback at a time on this policy */

    e->lockfd = al_ctl_lock(e);
    if (e->lockfd == -1) {
        al_ctl_unlock(e);
        return 2;
    }

    /* left by an edit that was killed between two renames */

    if (access(e->old, F_OK) == 0 || access(e->next, F_OK) == 0) {
        al_ctl_err("airlockctl: %s or %s exists: an earlier edit was "
                   "interrupted; compare them with %s, keep the right one as "
                   "%s and remove them\n", e->old, e->next, e->policy,
                   e->policy);
        al_ctl_unlock(e);
        return 2;
    }

    return 0;
}


/*
 * Takes POLICY.lock, made 0600 by the run that holds it and removed by
 * it before it lets it go (al_ctl_unlock()): no one who cannot write the
 * directory can open it, let alone hold it.  The lock used to be
 * flock(2) on the directory, which anyone who may open the directory
 * may take (/etc/airlock is 0755), and keep every edit and rollback
 * refused.  One opened before its removal is locked then, but no
 * longer the file at POLICY.lock, and is opened again; one left by a
 * run that was killed is locked as any other.
 */

static int
al_ctl_lock(al_ctl_edit_t *e)
{
    int               fd, tries, i;
    struct stat       fst, lst;
    struct sigaction  sa, old;

    for (tries = 0; tries < 100; tries++) {
        /* O_NONBLOCK: a FIFO put in its place must not hang us */

        fd = open(e->lock, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK
                           | O_CLOEXEC, 0600);
        if (fd == -1) {
            al_ctl_err("airlockctl: cannot create the lock %s: %s\n",
                       e->lock, strerror(errno));
            return -1;
        }

        if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
            if (errno == EWOULDBLOCK) {
                al_ctl_err("airlockctl: %s: another airlockctl edit or "
                           "rollback is running (it holds %s)\n", e->policy,
                           e->lock);
            } else {
                al_ctl_err("airlockctl: cannot lock %s: %s\n",
                           e->lock, strerror(errno));
            }

            close(fd);
            return -1;
        }

        if (fstat(fd, &fst) == 0 && lstat(e->lock, &lst) == 0
            && fst.st_dev == lst.st_dev && fst.st_ino == lst.st_ino)
        {
            break;
        }

        close(fd);
        fd = -1;
    }

    if (fd != -1) {
        /*
         * A fatal signal removes it too (install holds them off until
         * the policy file is consistent); one that is ignored (nohup)
         * stays ignored
         */

        snprintf(al_ctl_lock_path, sizeof(al_ctl_lock_path), "%s",
                 e->lock);
        al_ctl_lock_pid = (sig_atomic_t) getpid();

        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = al_ctl_lock_signal;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);

        for (i = 0; i < 5; i++) {
            if (sigaction(al_ctl_lock_sigs[i], NULL, &old) == 0
                && old.sa_handler != SIG_IGN)
            {
                sigaction(al_ctl_lock_sigs[i], &sa, NULL);
            }
        }

        return fd;
    }

    al_ctl_err("airlockctl: cannot lock %s: it keeps being replaced\n",
               e->lock);

    return -1;
}


/*
 * A fatal signal: the lock removed by the process that holds it (not by
 * a command's child between its fork and its exec), and the file it was
 * writing, then the signal's default action (SA_RESETHAND).  A FILE.new
 * left behind by a Ctrl-C while it was written (its fsync can take a
 * while) stopped every later edit and rollback as one interrupted
 * between two renames, FILE untouched.
 */

static void
al_ctl_lock_signal(int signo)
{
    if (al_ctl_lock_pid != 0 && al_ctl_lock_pid == (sig_atomic_t) getpid())
    {
        if (al_ctl_part_set) {
            (void) unlink(al_ctl_part_path);
        }

        (void) unlink(al_ctl_lock_path);
    }

    (void) raise(signo);
}


/* the lock removed, then let go; the directory closed */

static void
al_ctl_unlock(al_ctl_edit_t *e)
{
    if (e->lockfd != -1) {
        al_ctl_lock_pid = 0;
        (void) unlink(e->lock);
        close(e->lockfd);
        e->lockfd = -1;
    }

    if (e->dirfd != -1) {
        close(e->dirfd);
        e->dirfd = -1;
    }
}


/* copies a file to a new file with the mode and owner of st */

static int
al_ctl_copy(const char *from, const char *to, const struct stat *st)
{
    int             fd, rc;
    size_t          len;
    unsigned char  *buf;

    fd = open(from, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        al_ctl_err("%s: cannot open: %s\n", from, strerror(errno));
        return -1;
    }

    errno = 0;
    buf = al_ctl_read(fd, AL_POLICY_FILE_MAX + 1, &len, 0);

    close(fd);

    if (buf == NULL) {
        al_ctl_err("%s: read: %s\n", from,
                   (errno != 0 && errno != EFBIG)
                   ? strerror(errno) : "larger than the policy limit");
        return -1;
    }

    rc = al_ctl_write(to, buf, len, st);

    free(buf);

    return rc;
}


/* writes len bytes to a new file with the mode and owner of st */

static int
al_ctl_write(const char *to, const unsigned char *buf, size_t len,
    const struct stat *st)
{
    int      out, rc;
    size_t   off;
    ssize_t  w;

    out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out == -1) {
        al_ctl_err("%s: cannot create: %s\n", to, strerror(errno));
        return -1;
    }

    /* ours until the caller puts it in place (al_ctl_part_done()) */

    snprintf(al_ctl_part_path, sizeof(al_ctl_part_path), "%s", to);
    al_ctl_part_set = 1;

    rc = -1;

    for (off = 0; off < len; off += (size_t) w) {
        w = write(out, buf + off, len - off);
        if (w < 0) {
            if (errno == EINTR) {
                w = 0;
                continue;
            }
            al_ctl_err("%s: write: %s\n", to, strerror(errno));
            goto done;
        }
    }

    /*
     * Run by another user than root, the owner cannot be given away, but
     * the group must still be the file's own: the mode's group bits
     * would otherwise give the user's own group what they gave the
     * file's.  A group the user is not in is refused when the mode gives
     * it anything.
     */

    if (fchown(out, st->st_uid, st->st_gid) == -1) {
        if (geteuid() == 0) {
            al_ctl_err("%s: cannot set owner: %s\n", to,
                       strerror(errno));
            goto done;
        }

        if (fchown(out, (uid_t) -1, st->st_gid) == -1
            && (st->st_mode & 0070) != 0)
        {
            al_ctl_err("%s: cannot give it the policy's group (gid "
                       "%lu), which its mode gives access: %s; run airlockctl "
                       "as root or as a member of that group\n", to,
                       (unsigned long) st->st_gid, strerror(errno));
            goto done;
        }

        if (st->st_uid != geteuid()) {
            al_ctl_err("airlockctl: %s: its owner is you (uid %lu), "
                       "not the policy's owner (uid %lu): only root can give "
                       "a file away\n", to, (unsigned long) geteuid(),
                       (unsigned long) st->st_uid);
        }
    }

    if (fchmod(out, st->st_mode & 07777) == -1) {
        al_ctl_err("%s: cannot set mode: %s\n", to, strerror(errno));
        goto done;
    }

    if (fsync(out) == -1) {
        al_ctl_err("%s: fsync: %s\n", to, strerror(errno));
        goto done;
    }

    rc = 0;

done:

    if (close(out) == -1 && rc == 0) {
        al_ctl_err("%s: write: %s\n", to, strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        unlink(to);
        al_ctl_part_done();
    }

    return rc;
}


/*
 * The file al_ctl_write() made is in place, or removed, or no signal can
 * come before it is: a fatal signal no longer removes it
 */

static void
al_ctl_part_done(void)
{
    al_ctl_part_set = 0;
}


/*
 * The first copy of an edit, FILE.edit, comes whole or not at all: it is
 * written as FILE.edit.part and renamed.  A copy cut short (a signal, a
 * file size limit) would otherwise be resumed by the next edit as a
 * refused one, and installed a policy short.
 */

static int
al_ctl_edit_copy(al_ctl_edit_t *e)
{
    char         part[AL_CTL_PATH_MAX + sizeof(".part")];
    struct stat  st;

    if (stat(e->policy, &st) == -1) {
        al_ctl_err("%s: cannot stat: %s\n", e->policy, strerror(errno));
        return -1;
    }

    snprintf(part, sizeof(part), "%s.part", e->candidate);

    if (unlink(part) == -1 && errno != ENOENT) {
        al_ctl_err("%s: cannot remove: %s\n", part, strerror(errno));
        return -1;
    }

    if (al_ctl_copy(e->policy, part, &st) != 0) {
        return -1;
    }

    if (rename(part, e->candidate) == -1) {
        al_ctl_err("%s: cannot rename to %s: %s\n", part, e->candidate,
                   strerror(errno));
        unlink(part);
        al_ctl_part_done();
        return -1;
    }

    al_ctl_part_done();

    (void) fsync(e->dirfd);

    return 0;
}


/* 1 when the two files have the same bytes */

static int
al_ctl_same(const char *a, const char *b)
{
    int             same, fa, fb;
    size_t          la, lb;
    unsigned char  *da, *db;

    fa = open(a, O_RDONLY | O_CLOEXEC);
    fb = open(b, O_RDONLY | O_CLOEXEC);
    da = fa == -1 ? NULL : al_ctl_read(fa, AL_CTL_BODY_MAX, &la, 0);
    db = fb == -1 ? NULL : al_ctl_read(fb, AL_CTL_BODY_MAX, &lb, 0);

    same = da != NULL && db != NULL && la == lb && memcmp(da, db, la) == 0;

    free(da);
    free(db);
    if (fa != -1) {
        close(fa);
    }
    if (fb != -1) {
        close(fb);
    }

    return same;
}


/*
 * runs "CMD [ARG]" with /bin/sh; 0 when it exits 0, -1 when it exits
 * otherwise, -2 when it was killed by a signal (or could not be waited
 * for): then it may have done part of its work, and what is not known.
 *
 * With ARG, CMD is the editor: a Ctrl-C there (SIGINT to the whole
 * foreground process group) is the editor's to take, as vi does, or to
 * die of.  As system(3) does, airlockctl ignores SIGINT and SIGQUIT
 * while it waits, and the shell traps them (its children get them as
 * they were): either used to die of it, the edit over and its lock let
 * go while the editor went on writing the copy for no one.
 */

static int
al_ctl_sh(const char *what, const char *cmd, const char *arg)
{
    int               status, rc;
    pid_t             pid;
    sigset_t          none;
    struct sigaction  ign, saved_int, saved_quit;

    fflush(stdout);
    fflush(stderr);

    if (arg != NULL) {
        memset(&ign, 0, sizeof(ign));
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGINT, &ign, &saved_int);
        sigaction(SIGQUIT, &ign, &saved_quit);
    }

    pid = fork();
    if (pid == -1) {
        al_ctl_err("airlockctl: fork: %s\n", strerror(errno));
        rc = -1;
        goto restore;
    }

    if (pid == 0) {
        /* install holds off fatal signals; the command gets them */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);

        if (arg != NULL) {
            sigaction(SIGINT, &saved_int, NULL);
            sigaction(SIGQUIT, &saved_quit, NULL);

            /* "$0" "$1": CMD may carry its own arguments, ARG is quoted */
            execl("/bin/sh", "sh", "-c", "trap : INT QUIT; "
                  "eval \"$0\" '\"$1\"'", cmd, arg, (char *) NULL);
        } else {
            execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
        }
        _exit(127);
    }

    while (waitpid(pid, &status, 0) == -1) {
        if (errno != EINTR) {
            al_ctl_err("airlockctl: waitpid: %s\n", strerror(errno));
            rc = -2;
            goto restore;
        }
    }

    rc = al_ctl_sh_status(what, cmd, status, arg != NULL);

restore:

    if (arg != NULL) {
        sigaction(SIGINT, &saved_int, NULL);
        sigaction(SIGQUIT, &saved_quit, NULL);
    }

    return rc;
}


/*
 * al_ctl_sh()'s result from the command's wait status, told.  shell: the
 * shell outlived the command (the editor's, which traps SIGINT and
 * SIGQUIT and so cannot exec it), and says a command killed by signal N
 * by exiting 128 + N: an editor killed was told as "exited with status
 * 137"
 */

static int
al_ctl_sh_status(const char *what, const char *cmd, int status, int shell)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return 0;
    }

    if (shell && WIFEXITED(status) && WEXITSTATUS(status) > 128
        && WEXITSTATUS(status) - 128 < NSIG)
    {
        al_ctl_err("airlockctl: %s (%s) was killed by signal %d\n",
                   what, cmd, WEXITSTATUS(status) - 128);
        return -2;
    }

    if (WIFEXITED(status)) {
        al_ctl_err("airlockctl: %s (%s) exited with status %d\n", what,
                   cmd, WEXITSTATUS(status));
    } else {
        al_ctl_err("airlockctl: %s (%s) was killed by signal %d\n",
                   what, cmd, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        return -2;
    }

    return -1;
}


/*
 * Checks candidate, puts it in place of the policy, runs the nginx test
 * and the reload; the replaced policy becomes POLICY.prev.  The candidate
 * is read once: the bytes checked and shown as a diff are the bytes
 * installed, whatever writes the candidate meanwhile.  On any error
 * the policy file is what it was, but for a reload killed by a signal:
 * it may have told nginx to reload, and nginx then reads the new file,
 * so the new file stays.  Returns 0, 1 refused, 2 broken, 3 installed
 * and the reload's outcome not known, 4 installed and reloaded but the
 * replaced policy left as POLICY.old (it cannot be renamed to
 * POLICY.prev).
 */

static int
al_ctl_install(al_ctl_edit_t *e, const char *candidate)
{
    int             rc, n, failed, reload, kept;
    size_t          len;
    sigset_t        block, saved;
    al_policy_t    *p, *o;
    struct stat     st;
    unsigned char  *bytes;

    if (stat(e->policy, &st) == -1) {
        al_ctl_err("%s: cannot open: %s\n", e->policy, strerror(errno));
        return 2;
    }

    /*
     * The new file gets the policy's mode, at the policy's path: one
     * nginx would refuse (any user may write it, or its directory) is
     * refused now, before anything is renamed.  A --test that does not
     * run nginx (true) used to install it, and nginx refused it only at
     * its next reload or start.  Asked again here as the directories
     * may have changed while the editor ran.
     */

    if (al_ctl_path_trusted(e->given, e->policy) != 0) {
        return 2;
    }

    if (al_ctl_trusted(candidate, &st) != 0) {
        return 2;
    }

    p = al_ctl_load_bytes(candidate, e->key, &bytes, &len, 0, &rc);
    if (p == NULL) {
        return rc;
    }

    o = al_ctl_load(e->policy, NULL, &rc);
    if (o != NULL) {
        n = al_policy_diff(o, p, al_ctl_print_line, NULL);
        if (n) {
            printf("%d change%s grant%s access the installed policy did "
                   "not\n", n, n == 1 ? "" : "s", n == 1 ? "s" : "");
        }
        al_policy_free(o);

    } else {
        /* its error above names FILE, not the candidate: say whose */

        al_ctl_err("airlockctl: %s, the policy %s replaces, does not "
                   "load (above): what %s grants is not compared with it, "
                   "and no change is shown\n", e->policy,
                   candidate == e->candidate ? "this edit" : "the rollback",
                   candidate);
    }

    al_policy_free(p);

    if (stat(e->policy, &st) == -1) {
        al_ctl_err("%s: cannot open: %s\n", e->policy, strerror(errno));
        free(bytes);
        return 2;
    }

    /*
     * the bytes checked, with the installed file's mode and owner:
     * "POLICY.new"
     */

    rc = al_ctl_write(e->next, bytes, len, &st);

    free(bytes);

    if (rc != 0) {
        return 2;
    }

    /*
     * No interruption between here and a consistent policy file: SIGPIPE
     * too, which the first write to an output no one reads any more (an
     * ssh session without a terminal that dropped) would bring in the
     * middle; the held signals come after the last rename
     */

    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigaddset(&block, SIGPIPE);
    sigprocmask(SIG_BLOCK, &block, &saved);

    /* renamed into place or removed below, before a signal comes */
    al_ctl_part_done();

    rc = 2;
    failed = 0;

    if (link(e->policy, e->old) == -1) {
        al_ctl_err("%s: cannot link to %s: %s\n", e->policy, e->old,
                   strerror(errno));
        unlink(e->next);
        goto done;
    }

    if (rename(e->next, e->policy) == -1) {
        al_ctl_err("%s: cannot rename to %s: %s\n", e->next,
                   e->policy, strerror(errno));
        unlink(e->next);
        unlink(e->old);
        goto done;
    }

    fsync(e->dirfd);

    if (al_ctl_sh("the nginx configuration test", e->test, NULL) != 0) {
        al_ctl_err("airlockctl: nginx read %s at %s: the lines and "
                   "columns above are those of %s\n", candidate, e->policy,
                   candidate);
        failed = 1;

    } else {
        reload = al_ctl_sh("the reload", e->reload, NULL);

        /*
         * Killed (Ctrl-C reaches the whole foreground process group, the
         * reload command as well as us), the reload may have signalled
         * nginx already, and nginx reads the file when it gets to it: the
         * old file put back now could be read by no one while nginx runs
         * the new policy, until the next reload silently undoes it.  The
         * new file passed the test and stays; the operator is told.
         */

        if (reload == -2) {
            kept = (rename(e->old, e->prev) == 0);
            if (!kept) {
                al_ctl_err("airlockctl: the replaced policy cannot be "
                           "kept as %s: %s\n", e->prev, strerror(errno));
            }

            fsync(e->dirfd);

            al_ctl_err("airlockctl: the reload did not finish: nginx "
                       "may be running the new policy or still the old one; "
                       "%s is the new policy (it passed the test) and the one "
                       "it replaced is %s; run the reload again (%s) to be "
                       "sure nginx runs %s, or ", e->policy,
                       kept ? e->prev : e->old, e->reload, e->policy);

            if (kept) {
                fprintf(stderr, "airlockctl rollback\n");

            } else {
                al_ctl_err("move it to %s and airlockctl rollback "
                           "(edit and rollback refuse to start while it is "
                           "there)\n", e->prev);
            }
            rc = 3;
            goto done;
        }

        failed = (reload != 0);
    }

    if (failed) {
        if (rename(e->old, e->policy) == -1) {
            al_ctl_err("airlockctl: CANNOT RESTORE %s from %s: %s; "
                       "%s is the refused policy, which nginx would load at "
                       "its next reload or start: move %s back to %s\n",
                       e->policy, e->old, strerror(errno), e->policy, e->old,
                       e->policy);
            goto done;
        }
        fsync(e->dirfd);
        rc = 1;
        goto done;
    }

    /*
     * installed and reloaded: the copy goes as on success, whatever
     * becomes of the replaced policy
     */

    if (rename(e->old, e->prev) == -1) {
        al_ctl_err("%s: installed and reloaded, but the replaced "
                   "policy cannot be kept as %s: %s; the one it replaced is "
                   "%s: move it to %s (edit and rollback refuse to start "
                   "while it is there)\n", e->policy, e->prev, strerror(errno),
                   e->old, e->prev);
        rc = 4;
        goto done;
    }

    fsync(e->dirfd);
    rc = 0;

done:

    /*
     * An edit's copy that is installed goes while the signals are still
     * held: a SIGINT that came during the reload ends airlockctl as soon
     * as they are let through, and the copy left would be "resumed" by
     * the next edit as a refused one
     */

    if ((rc == 0 || rc == 3 || rc == 4) && candidate == e->candidate) {
        unlink(e->candidate);
        fsync(e->dirfd);
    }

    sigprocmask(SIG_SETMASK, &saved, NULL);

    return rc;
}


/*
 * The file installed, FILE.prev or FILE.edit, is one no one else can
 * have written: each keeps the mode the policy had when it was made (a
 * policy once world-writable by mistake, fixed since with chmod, left
 * a FILE.prev anyone could write, and rollback installed what was in
 * it).  A regular file, owned by root, the policy's owner or the user
 * running airlockctl, writable by no group (but root's) or others that
 * may not write the policy itself.  The directory is trusted: whoever
 * may write it may replace the policy too.
 */

static int
al_ctl_trusted(const char *path, const struct stat *policy)
{
    struct stat  st;
    const char  *why;

    if (lstat(path, &st) == -1) {
        al_ctl_err("%s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }

    if (S_ISLNK(st.st_mode)) {
        why = "it is a symbolic link";

    } else if (!S_ISREG(st.st_mode)) {
        why = "it is not a regular file";

    } else if (st.st_uid != 0 && st.st_uid != policy->st_uid
               && st.st_uid != geteuid())
    {
        why = "its owner is another user than root, the policy's owner "
              "or you";

    } else if ((st.st_mode & S_IWOTH) && !(policy->st_mode & S_IWOTH)) {
        why = "others can write it";

    } else if ((st.st_mode & S_IWGRP) && st.st_gid != 0
               && !((policy->st_mode & S_IWGRP)
                    && st.st_gid == policy->st_gid))
    {
        why = "its group can write it, and may not write the policy";

    } else {
        return 0;
    }

    al_ctl_err("airlockctl: %s is not installed: %s; the policy is "
               "unchanged (look at it, then make it the policy's owner's "
               "alone, or remove it)\n", path, why);

    return -1;
}


/*
 * The policy at path (as given: its links are followed) as check, nginx
 * and the daemons take it: no user but its writers may change the file
 * or its path (al_policy_trusted()).  Check's message when not.  It
 * must still be the file real, the one installed over: a link
 * retargeted while the editor ran would otherwise be checked, and
 * another file replaced.
 */

static int
al_ctl_path_trusted(const char *path, const char *real)
{
    int          fd, rc;
    char         msg[AL_ERR_MAX + 300];
    struct stat  st, rst;
    al_error_t   err;

    /* O_NONBLOCK: a FIFO in place of the policy must not hang us */

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        al_ctl_err("%s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }

    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
        al_ctl_err("%s: cannot read: not a regular file\n", path);
        close(fd);
        return -1;
    }

    if (stat(real, &rst) == -1 || rst.st_dev != st.st_dev
        || rst.st_ino != st.st_ino)
    {
        al_ctl_err("airlockctl: %s no longer leads to %s, the policy this "
                   "run replaces; nothing installed, the policy is "
                   "unchanged: run it again\n", path, real);
        close(fd);
        return -1;
    }

    rc = al_policy_trusted(path, fd, &err);

    close(fd);

    if (rc != 0) {
        al_error_format(&err, msg, sizeof(msg));
        al_ctl_err("%s\n", msg);
        al_ctl_err("airlockctl: nothing installed; the policy is "
                   "unchanged\n");
        return -1;
    }

    return 0;
}


/*
 * POLICY.edit.open is there while an editor has the copy open, and stays
 * when it does not exit cleanly (killed, failed, the machine stopped):
 * the next edit then knows its copy may be cut short, and installs it
 * only if it is saved again.  Made before the editor runs, removed after
 * it exits 0; its name is all it says, made or removed by one call.
 */

static int
al_ctl_mark(al_ctl_edit_t *e)
{
    int  fd;

    fd = open(e->mark, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd == -1) {
        al_ctl_err("%s: cannot create: %s\n", e->mark, strerror(errno));
        return -1;
    }

    close(fd);

    /* there before the editor writes a byte, a power cut or not */
    (void) fsync(e->dirfd);

    return 0;
}


static void
al_ctl_unmark(al_ctl_edit_t *e)
{
    if (unlink(e->mark) == 0) {
        (void) fsync(e->dirfd);
    }
}


/* the copy's bytes and stat, before an editor that must save it runs */

static unsigned char *
al_ctl_snap(const char *path, struct stat *st, size_t *len)
{
    int             fd;
    unsigned char  *bytes;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        al_ctl_err("%s: cannot open: %s\n", path, strerror(errno));
        return NULL;
    }

    bytes = NULL;

    if (fstat(fd, st) == 0) {
        bytes = al_ctl_read(fd, AL_CTL_BODY_MAX, len, 0);
    }

    if (bytes == NULL) {
        al_ctl_err("%s: cannot read: %s\n", path, strerror(errno));
    }

    close(fd);

    return bytes;
}


/*
 * 1 when the file was saved since al_ctl_snap(): its bytes, or its
 * modification time, size or inode (an editor that writes a new file and
 * renames it) changed.  A ":w" that writes the same bytes counts.
 */

static int
al_ctl_saved(const char *path, const struct stat *st,
    const unsigned char *bytes, size_t len)
{
    int             fd, saved;
    size_t          nlen;
    struct stat     now;
    unsigned char  *nbytes;

    if (stat(path, &now) == -1) {
        return 1;
    }

    if (now.st_dev != st->st_dev || now.st_ino != st->st_ino
        || now.st_size != st->st_size
        || now.st_mtim.tv_sec != st->st_mtim.tv_sec
        || now.st_mtim.tv_nsec != st->st_mtim.tv_nsec)
    {
        return 1;
    }

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        return 1;
    }

    nbytes = al_ctl_read(fd, AL_CTL_BODY_MAX, &nlen, 0);
    close(fd);

    saved = nbytes == NULL || nlen != len || memcmp(nbytes, bytes, len) != 0;

    free(nbytes);

    return saved;
}


/* asks on a terminal; 1 for yes */

static int
al_ctl_again(const char *question)
{
    char  line[64];

    if (!isatty(0)) {
        return 0;
    }

    al_ctl_err("%s [Y/n] ", question);

    if (fgets(line, sizeof(line), stdin) == NULL) {
        fprintf(stderr, "\n");
        return 0;
    }

    return line[0] == '\n' || line[0] == 'y' || line[0] == 'Y';
}


static int
al_ctl_edit(int argc, char **argv)
{
    int                  rc, cut;
    size_t               len;
    const char          *editor;
    struct stat          st, snap;
    al_ctl_edit_t        e;
    unsigned char       *bytes;
    const al_ctl_cmd_t  *cmd;

    cmd = al_ctl_cmd("edit");
    if (al_ctl_help_only(argc, argv, cmd)) {
        return 0;
    }

    rc = al_ctl_edit_args(argc, argv, cmd, &e);
    if (rc != 0) {
        return rc;
    }

    editor = getenv("VISUAL");
    if (editor == NULL || editor[0] == '\0') {
        editor = getenv("EDITOR");
    }
    if (editor == NULL || editor[0] == '\0') {
        editor = "vi";
    }

    /*
     * A copy kept is resumed only if no one else can have written it,
     * nor made it a link to another file: the editor runs as the
     * operator, often root
     */

    if (lstat(e.candidate, &st) == 0) {
        if (stat(e.policy, &st) == -1) {
            al_ctl_err("%s: cannot open: %s\n", e.policy,
                       strerror(errno));
            rc = 2;
            goto done;
        }

        if (al_ctl_trusted(e.candidate, &st) != 0) {
            rc = 2;
            goto done;
        }

        cut = (lstat(e.mark, &st) == 0);

        if (cut) {
            al_ctl_err("airlockctl: %s is the copy of an editor that did "
                       "not exit cleanly (killed, failed, or the machine "
                       "stopped): it may be cut short.  It is reopened; "
                       "it is installed only if you save it in this "
                       "editor (remove it to start from %s)\n", e.candidate,
                       e.policy);

        } else {
            al_ctl_err("airlockctl: resuming the refused edit in %s "
                       "(remove it to start from %s)\n", e.candidate,
                       e.policy);
        }

    } else {
        /* left by a run stopped before its copy was made */
        al_ctl_unmark(&e);

        if (al_ctl_edit_copy(&e) != 0) {
            rc = 2;
            goto done;
        }

        cut = 0;
    }

    for ( ;; ) {
        bytes = NULL;

        if (cut) {
            bytes = al_ctl_snap(e.candidate, &snap, &len);
            if (bytes == NULL) {
                rc = 2;
                goto done;
            }
        }

        if (al_ctl_mark(&e) != 0) {
            free(bytes);
            rc = 2;
            goto done;
        }

        if (al_ctl_sh("the editor", editor, e.candidate) != 0) {
            free(bytes);
            al_ctl_err("airlockctl: nothing installed; your copy is "
                       "in %s, and the next edit reopens it as an "
                       "interrupted editor's, installed only if saved "
                       "then\n", e.candidate);
            rc = 2;
            goto done;
        }

        if (al_ctl_same(e.candidate, e.policy)) {
            free(bytes);
            fprintf(stderr, "airlockctl: no changes\n");
            unlink(e.candidate);
            al_ctl_unmark(&e);
            rc = 0;
            goto done;
        }

        if (cut && !al_ctl_saved(e.candidate, &snap, bytes, len)) {
            free(bytes);
            al_ctl_err("airlockctl: %s, an interrupted editor's copy, was "
                       "not saved in this editor: nothing installed, the "
                       "running policy is unchanged; save it in the editor "
                       "to install it, or remove it to start from %s\n",
                       e.candidate, e.policy);
            rc = 1;
            goto done;
        }

        free(bytes);

        /* the editor exited cleanly: a copy kept now is a refused one */

        al_ctl_unmark(&e);
        cut = 0;

        rc = al_ctl_install(&e, e.candidate);

        if (rc == 0) {
            al_ctl_out("%s: installed and reloaded; the previous policy is "
                       "%s (airlockctl rollback)\n", e.policy, e.prev);
            goto done;
        }

        if (rc == 3 || rc == 4) {
            /*
             * installed, the reload's outcome unknown, or the replaced
             * policy not kept as FILE.prev: nothing to resume
             */
            rc = 2;
            goto done;
        }

        if (rc == 1) {
            fprintf(stderr, "airlockctl: refused; the running policy is "
                    "unchanged\n");
        }

        if (rc != 1 || !al_ctl_again("edit again?")) {
            break;
        }
    }

    if (access(e.old, F_OK) == 0) {

        /* the next edit refuses to start beside it: not "resumes it" */

        al_ctl_err("airlockctl: your copy is kept in %s; airlockctl "
                   "edit resumes it once %s is gone (see above)\n",
                   e.candidate, e.old);

    } else {
        al_ctl_err("airlockctl: your copy is kept in %s; airlockctl "
                   "edit resumes it\n", e.candidate);
    }

done:

    al_ctl_unlock(&e);

    return rc;
}


static int
al_ctl_rollback(int argc, char **argv)
{
    int                  rc;
    al_ctl_edit_t        e;
    const al_ctl_cmd_t  *cmd;

    cmd = al_ctl_cmd("rollback");
    if (al_ctl_help_only(argc, argv, cmd)) {
        return 0;
    }

    rc = al_ctl_edit_args(argc, argv, cmd, &e);
    if (rc != 0) {
        return rc;
    }

    if (access(e.prev, F_OK) != 0) {
        al_ctl_err("%s: no previous policy to roll back to: %s\n",
                   e.prev, strerror(errno));
        al_ctl_unlock(&e);
        return 2;
    }

    rc = al_ctl_install(&e, e.prev);

    if (rc == 3 || rc == 4) {
        rc = 2;
    }

    if (rc == 1) {
        fprintf(stderr, "airlockctl: refused; the running policy is "
                "unchanged\n");
    }

    if (rc == 0) {
        al_ctl_out("%s: rolled back and reloaded; the replaced policy is "
                   "%s\n", e.policy, e.prev);
    }

    al_ctl_unlock(&e);

    return rc;
}


/* airlockctl usage: the reading and counting are al_llm_report.c's */

static int
al_ctl_llm_usage(int argc, char **argv)
{
    int                   i, json, by_given, rc;
    FILE                 *f;
    char                  msg[AL_ERR_MAX + 300];
    const char           *path;
    al_error_t            err;
    al_llm_report_t      *rep;
    al_llm_report_by_t    by;
    const al_ctl_cmd_t   *cmd;

    cmd = al_ctl_cmd("usage");

    if (al_ctl_help_only(argc, argv, cmd)) {
        return 0;
    }

    path = NULL;
    json = 0;
    by_given = 0;
    by = AL_LLM_REPORT_BY_NONE;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            if (json) {
                return al_ctl_twice(cmd, argv[i]);
            }
            json = 1;

        } else if (strcmp(argv[i], "--by") == 0) {
            if (i + 1 >= argc) {
                return al_ctl_bad(cmd, "--by needs client, model or day");
            }
            if (by_given) {
                return al_ctl_twice(cmd, argv[i]);
            }
            by_given = 1;
            i++;
            if (strcmp(argv[i], "client") == 0) {
                by = AL_LLM_REPORT_BY_CLIENT;
            } else if (strcmp(argv[i], "model") == 0) {
                by = AL_LLM_REPORT_BY_MODEL;
            } else if (strcmp(argv[i], "day") == 0) {
                by = AL_LLM_REPORT_BY_DAY;
            } else {
                return al_ctl_bad(cmd, "--by takes client, model or day, "
                                  "not \"%s\"", argv[i]);
            }

        } else if (al_ctl_option(argv[i])) {
            return al_ctl_bad(cmd, "unknown option \"%s\"", argv[i]);

        } else if (path != NULL) {
            return al_ctl_bad(cmd, "one LOG only, not \"%s\" too",
                              argv[i]);

        } else {
            path = argv[i];
        }
    }

    if (path == NULL) {
        return al_ctl_bad(cmd, "no LOG given (- for standard input)");
    }

    if (strcmp(path, "-") == 0) {
        f = stdin;
        path = "(stdin)";

    } else {
        f = fopen(path, "re");
        if (f == NULL) {
            al_ctl_err("%s: cannot open: %s\n", path, strerror(errno));
            return 2;
        }
    }

    rep = al_llm_report_create(by);
    if (rep == NULL) {
        fprintf(stderr, "airlockctl usage: out of memory\n");
        if (f != stdin) {
            fclose(f);
        }
        return 2;
    }

    memset(&err, 0, sizeof(err));
    rc = al_llm_report_read(rep, f, path, &err);

    if (f != stdin) {
        fclose(f);
    }

    if (rc != 0) {
        al_error_format(&err, msg, sizeof(msg));
        al_ctl_err("%s\n", msg);
        al_llm_report_free(rep);
        return 2;
    }

    rc = al_llm_report_print(rep, stdout, json);

    al_llm_report_free(rep);

    if (rc != 0 || fflush(stdout) != 0) {
        fprintf(stderr, "airlockctl usage: cannot write the summary\n");
        return 2;
    }

    return 0;
}


/*
 * What admission counts besides tokens: places in flight, the request
 * rate and, for a request with a body, its price and the worst case a
 * dollar budget reserves for it: as the gateway reserves it, the higher
 * of the worst case here and at the fallback's price, when the entry has
 * a fallback that would serve the call (and charge it there).
 */

static void
al_ctl_explain_limits(const al_llm_t *l, const al_client_t *client,
    const al_llm_client_t *lc, const al_llm_req_t *req, const char *alias,
    size_t alias_len)
{
    uint64_t                need, fneed;
    al_str_t                model;
    const al_llm_t         *fb;
    const al_llm_price_t   *pr, *lp;
    const al_llm_client_t  *flc;
    char                    a[AL_LLM_USD_MAX], b[AL_LLM_USD_MAX];
    char                    c[AL_LLM_USD_MAX];

    if (lc->max_concurrent || lc->requests_per_minute) {
        al_ctl_out("  requests: counts against %llu in flight, %llu/min "
                   "(0 = unlimited)\n",
                   (unsigned long long) lc->max_concurrent,
                   (unsigned long long) lc->requests_per_minute);
    }

    if (req == NULL) {
        return;
    }

    pr = al_llm_price(l, req->model, req->model_len);

    if (pr == NULL) {
        al_ctl_out("  price:    none for %.*s: cost_usd null in the usage "
                   "log\n", (int) req->model_len, req->model);
        return;
    }

    /* microdollars per million tokens, shown as dollars */
    (void) al_llm_usd_format(pr->input * 1000000, a, sizeof(a));
    (void) al_llm_usd_format(pr->cached_input * 1000000, b, sizeof(b));
    (void) al_llm_usd_format(pr->output * 1000000, c, sizeof(c));

    al_ctl_out("  price:    $%s input, $%s cached input, $%s output per "
               "million tokens\n", a, b, c);

    if (l->kind == AL_LLM_ANTHROPIC) {
        (void) al_llm_usd_format(pr->cache_write * 1000000, a, sizeof(a));
        (void) al_llm_usd_format(pr->cache_write_1h * 1000000, b,
                                 sizeof(b));

        al_ctl_out("  price:    $%s cache write (5 minutes), $%s (1 hour) per "
                   "million tokens\n", a, b);
    }

    if (pr->long_context != NULL) {
        lp = pr->long_context;

        (void) al_llm_usd_format(lp->input * 1000000, a, sizeof(a));
        (void) al_llm_usd_format(lp->cached_input * 1000000, b, sizeof(b));
        (void) al_llm_usd_format(lp->output * 1000000, c, sizeof(c));

        al_ctl_out("  price:    above %llu input tokens, for all tokens: $%s "
                   "input, $%s cached input, $%s output per million "
                   "tokens\n",
                   (unsigned long long) pr->above_input_tokens, a, b, c);

        if (l->kind == AL_LLM_ANTHROPIC) {
            (void) al_llm_usd_format(lp->cache_write * 1000000, a,
                                     sizeof(a));
            (void) al_llm_usd_format(lp->cache_write_1h * 1000000, b,
                                     sizeof(b));

            al_ctl_out("  price:    above %llu input tokens: $%s cache "
                       "write (5 minutes), $%s (1 hour) per million "
                       "tokens\n",
                       (unsigned long long) pr->above_input_tokens, a, b);
        }
    }

    if (!al_llm_client_priced(lc)) {
        return;
    }

    need = al_llm_cost_need(pr, req->cache_control, req->prompt_estimate,
                            req->max_output);

    fb = NULL;
    model.data = NULL;
    model.len = 0;

    if (l->fallback != NULL) {
        flc = al_llm_find_client(l->fallback, client);

        if (flc != NULL
            && al_llm_fallback_model(l->fallback, flc, req->model,
                                     req->model_len, alias, alias_len,
                                     &model)
               == 0)
        {
            fneed = al_llm_cost_need(al_llm_price(l->fallback, model.data,
                                                  model.len),
                                     req->cache_control,
                                     req->prompt_estimate, req->max_output);

            if (fneed > need) {
                need = fneed;
                fb = l->fallback;
            }
        }
    }

    (void) al_llm_usd_format(need, a, sizeof(a));
    (void) al_llm_usd_format(lc->cost_per_day, b, sizeof(b));
    (void) al_llm_usd_format(lc->cost_per_month, c, sizeof(c));

    al_ctl_out("  cost:     reserves up to $%s against $%s/day, $%s/month "
               "(0 = unlimited)\n", a, b, c);

    if (fb != NULL) {
        al_ctl_out("  cost:     at the price of fallback llm \"%s\", model "
                   "%.*s, which may serve the call and charge it\n",
                   fb->name.data, (int) model.len, model.data);
    }

    if (pr->long_context != NULL) {
        /* as al_llm_cost_need(): the prompt may be four times it */
        al_ctl_out("  cost:     at the prices %s %llu input tokens (the "
                   "prompt estimate is %llu, the prompt may be up to "
                   "four times it)\n",
                   req->prompt_estimate > pr->above_input_tokens / 4
                   ? "above" : "up to",
                   (unsigned long long) pr->above_input_tokens,
                   (unsigned long long) req->prompt_estimate);
    }

    if (l->kind == AL_LLM_ANTHROPIC) {
        al_ctl_out("  cost:     input at the %s price (%s)\n",
                   req->cache_control ? "highest cache-write" : "input",
                   req->cache_control ? "the body names cache_control"
                                      : "no cache_control in the body");
    }
}


/*
 * A budget or cap of the routes table, then sep: "-" when unset.  An
 * unset one is 0 in the policy, and was printed so: "ops(0,0,0)" read
 * as a client that may spend no tokens, for one that has no limit.
 */

static void
al_ctl_routes_count(uint64_t n, const char *sep)
{
    if (n == 0) {
        printf("-%s", sep);

    } else {
        printf("%llu%s", (unsigned long long) n, sep);
    }
}


/* ";60 req/min,4 in flight,$2.5/day,$40/month": the limits set */

static void
al_ctl_routes_limits(const al_llm_client_t *lc)
{
    char         usd[AL_LLM_USD_MAX];
    const char  *sep;

    sep = ";";

    if (lc->requests_per_minute) {
        printf("%s%llu req/min", sep,
               (unsigned long long) lc->requests_per_minute);
        sep = ",";
    }

    if (lc->max_concurrent) {
        printf("%s%llu in flight", sep,
               (unsigned long long) lc->max_concurrent);
        sep = ",";
    }

    if (lc->cost_per_day) {
        (void) al_llm_usd_format(lc->cost_per_day, usd, sizeof(usd));
        printf("%s$%s/day", sep, usd);
        sep = ",";
    }

    if (lc->cost_per_month) {
        (void) al_llm_usd_format(lc->cost_per_month, usd, sizeof(usd));
        printf("%s$%s/month", sep, usd);
    }
}
