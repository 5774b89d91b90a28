/*
 * The worker's configuration file: one "key value" per line, '#' starts a
 * comment.  Every key has a default (conf/worker.conf lists them all); an
 * unknown key, a bad number or a limit default above its maximum is an
 * error naming the file and line.
 */

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <sodium.h>

#include "aw.h"
#include "ar_auth.h"


#define AW_MACHINE_ID  "/etc/machine-id"


typedef enum {
    AW_CF_STR = 0,
    AW_CF_NUM,
    AW_CF_INT
} aw_cf_type_e;

typedef struct {
    const char      *key;
    aw_cf_type_e     type;
    size_t           off;
    long             min;
    long             max;
} aw_cf_key_t;


static int aw_conf_set(aw_conf_t *conf, const char *key, const char *val,
    char *err, size_t n);
static int aw_conf_redis(aw_conf_t *conf, const char *path, char *err,
    size_t n);
static char *aw_strdup(const char *s);


#define AW_OFF(f)  offsetof(aw_conf_t, f)

static const aw_cf_key_t  aw_keys[] = {
    { "redis_host", AW_CF_STR, AW_OFF(redis_host), 0, 0 },
    { "redis_port", AW_CF_INT, AW_OFF(redis_port), 1, 65535 },
    { "redis_unix", AW_CF_STR, AW_OFF(redis_unix), 0, 0 },
    { "redis_user", AW_CF_STR, AW_OFF(redis_user), 0, 0 },
    { "redis_password_file", AW_CF_STR, AW_OFF(redis_password_file), 0, 0 },
    { "stream", AW_CF_STR, AW_OFF(stream), 0, 0 },
    { "group", AW_CF_STR, AW_OFF(group), 0, 0 },
    { "consumer", AW_CF_STR, AW_OFF(consumer), 0, 0 },
    { "dead_letter", AW_CF_STR, AW_OFF(dead_letter), 0, 0 },
    { "dead_letter_maxlen", AW_CF_NUM, AW_OFF(dead_letter_maxlen), 1,
      100000000 },
    { "errors_key", AW_CF_STR, AW_OFF(errors_key), 0, 0 },
    { "visibility_timeout_ms", AW_CF_NUM, AW_OFF(visibility_ms),
      100, 86400000 },
    { "block_ms", AW_CF_NUM, AW_OFF(block_ms), 10, 60000 },
    { "max_deliveries", AW_CF_NUM, AW_OFF(max_deliveries), 1, 100 },
    { "result_ttl", AW_CF_NUM, AW_OFF(result_ttl), 1, 86400 * 30 },
    { "proxy_socket", AW_CF_STR, AW_OFF(proxy_socket), 0, 0 },
    { "policy", AW_CF_STR, AW_OFF(policy), 0, 0 },
    { "user", AW_CF_STR, AW_OFF(user), 0, 0 },
    { "fetch_timeout_ms", AW_CF_NUM, AW_OFF(fetch_timeout_ms), 100, 600000 },
    { "fetch_max_bytes", AW_CF_NUM, AW_OFF(fetch_max_bytes), 1024,
      64L << 20 },
    { "max_inputs", AW_CF_NUM, AW_OFF(max_inputs), 0, 64 },
    { "max_script_bytes", AW_CF_NUM, AW_OFF(max_script_bytes), 1, 4L << 20 },
    { "max_envelope_bytes", AW_CF_NUM, AW_OFF(max_envelope_bytes), 1024,
      16L << 20 },
    { "backend", AW_CF_STR, 0, 0, 0 },
    { "runsc", AW_CF_STR, AW_OFF(runsc), 0, 0 },
    { "runsc_platform", AW_CF_STR, AW_OFF(platform), 0, 0 },
    { "bwrap", AW_CF_STR, AW_OFF(bwrap), 0, 0 },
    { "rootfs", AW_CF_STR, AW_OFF(rootfs), 0, 0 },
    { "workdir", AW_CF_STR, AW_OFF(workdir), 0, 0 },
    { "cgroup_root", AW_CF_STR, AW_OFF(cgroup_root), 0, 0 },
    { "cgroup_name", AW_CF_STR, AW_OFF(cgroup_name), 0, 0 },
    { "scratch_mb", AW_CF_NUM, AW_OFF(scratch_mb), 1, 4096 },
    { "sandbox_uid", AW_CF_NUM, AW_OFF(sandbox_uid), 1000, 4000000 },
    { "bwrap_uids", AW_CF_NUM, AW_OFF(bwrap_uids), 1, 65536 },
    { "cpus", AW_CF_NUM, AW_OFF(cpus), 0, 256 },

    { "wall_ms", AW_CF_NUM, AW_OFF(defaults.wall_ms), 100, 3600000 },
    { "cpu_ms", AW_CF_NUM, AW_OFF(defaults.cpu_ms), 1000, 3600000 },
    { "memory_mb", AW_CF_NUM, AW_OFF(defaults.memory_mb), 16, 65536 },
    { "pids", AW_CF_NUM, AW_OFF(defaults.pids), 8, 65536 },
    { "stdout_bytes", AW_CF_NUM, AW_OFF(defaults.stdout_bytes), 0,
      16L << 20 },
    { "stderr_bytes", AW_CF_NUM, AW_OFF(defaults.stderr_bytes), 0,
      16L << 20 },
    { "max_wall_ms", AW_CF_NUM, AW_OFF(maxima.wall_ms), 100, 3600000 },
    { "max_cpu_ms", AW_CF_NUM, AW_OFF(maxima.cpu_ms), 1000, 3600000 },
    { "max_memory_mb", AW_CF_NUM, AW_OFF(maxima.memory_mb), 16, 65536 },
    { "max_pids", AW_CF_NUM, AW_OFF(maxima.pids), 8, 65536 },
    { "max_stdout_bytes", AW_CF_NUM, AW_OFF(maxima.stdout_bytes), 0,
      16L << 20 },
    { "max_stderr_bytes", AW_CF_NUM, AW_OFF(maxima.stderr_bytes), 0,
      16L << 20 },
    { NULL, 0, 0, 0, 0 }
};


const char *
aw_backend_name(aw_backend_e b)
{
    return b == AW_BACKEND_BWRAP ? "bwrap" : "gvisor";
}


static char *
aw_strdup(const char *s)
{
    char  *p;

    p = strdup(s);
    if (p == NULL) {
        abort();
    }

    return p;
}


void
aw_conf_defaults(aw_conf_t *conf)
{
    memset(conf, 0, sizeof(*conf));

    conf->redis_host = aw_strdup("127.0.0.1");
    conf->redis_port = 6379;
    conf->stream = aw_strdup("airlock:jobs");
    conf->group = aw_strdup("airlock-workers");
    conf->dead_letter = aw_strdup("airlock:jobs:dead");
    conf->dead_letter_maxlen = 10000;
    conf->errors_key = aw_strdup("airlock:jobs:errors");
    conf->visibility_ms = 60000;
    conf->block_ms = 2000;
    conf->max_deliveries = 3;
    conf->result_ttl = 3600;

    /* consumer: aw_conf_consumer() after the file, unless it names one */

    conf->proxy_socket = aw_strdup("/run/airlock/airlock.sock");
    conf->policy = aw_strdup("/etc/airlock/policy.yaml");
    conf->user = aw_strdup("airlock-worker");
    conf->fetch_timeout_ms = 15000;
    conf->fetch_max_bytes = 1L << 20;
    conf->max_inputs = 16;
    conf->max_script_bytes = 64L << 10;
    conf->max_envelope_bytes = 1L << 20;

    conf->backend = AW_BACKEND_GVISOR;
    conf->runsc = aw_strdup("/usr/bin/runsc");
    conf->platform = aw_strdup("ptrace");
    conf->bwrap = aw_strdup("/usr/bin/bwrap");
    conf->rootfs = aw_strdup("/usr/lib/airlock/sandbox-rootfs");
    conf->workdir = aw_strdup("/var/lib/airlock-worker");
    conf->cgroup_root = aw_strdup("/sys/fs/cgroup");
    conf->cgroup_name = aw_strdup("airlock-worker");
    conf->scratch_mb = 64;
    conf->sandbox_uid = 10001;
    conf->bwrap_uids = 64;
    conf->host_uid = 10001;
    conf->host_uid_fd = -1;
    conf->cpus = 0;

    conf->defaults.wall_ms = 10000;
    conf->defaults.cpu_ms = 5000;
    conf->defaults.memory_mb = 128;
    conf->defaults.pids = 64;
    conf->defaults.stdout_bytes = 65536;
    conf->defaults.stderr_bytes = 65536;

    conf->maxima.wall_ms = 60000;
    conf->maxima.cpu_ms = 30000;
    conf->maxima.memory_mb = 512;
    conf->maxima.pids = 256;
    conf->maxima.stdout_bytes = 1L << 20;
    conf->maxima.stderr_bytes = 1L << 20;
}


static int
aw_conf_set(aw_conf_t *conf, const char *key, const char *val, char *err,
    size_t n)
{
    char               *end, **sp;
    long                v;
    const aw_cf_key_t  *k;

    for (k = aw_keys; k->key != NULL; k++) {
        if (strcmp(k->key, key) == 0) {
            break;
        }
    }

    if (k->key == NULL) {
        snprintf(err, n, "unknown key \"%s\"", key);
        return -1;
    }

    if (strcmp(key, "backend") == 0) {
        if (strcmp(val, "gvisor") == 0) {
            conf->backend = AW_BACKEND_GVISOR;

        } else if (strcmp(val, "bwrap") == 0) {
            conf->backend = AW_BACKEND_BWRAP;

        } else {
            snprintf(err, n, "backend must be gvisor or bwrap, not \"%s\"",
                     val);
            return -1;
        }

        return 0;
    }

    if (k->type == AW_CF_STR) {
        if (*val == '\0' || strlen(val) > 512) {
            snprintf(err, n, "%s needs a value of 1 to 512 bytes", key);
            return -1;
        }

        sp = (char **) ((char *) conf + k->off);
        free(*sp);
        *sp = aw_strdup(val);
        return 0;
    }

    errno = 0;
    v = strtol(val, &end, 10);
    if (errno != 0 || end == val || *end != '\0' || v < k->min
        || v > k->max)
    {
        snprintf(err, n, "%s must be a number from %ld to %ld, not \"%s\"",
                 key, k->min, k->max, val);
        return -1;
    }

    if (k->type == AW_CF_INT) {
        *(int *) ((char *) conf + k->off) = (int) v;

    } else {
        *(long *) ((char *) conf + k->off) = v;
    }

    return 0;
}


int
aw_conf_load(aw_conf_t *conf, const char *path, char *err, size_t n)
{
    FILE           *f;
    char            line[1024], msg[AW_ERRLEN], *p, *key, *val, *e;
    unsigned        lineno;
    size_t          len;
    struct passwd  *pw;
    long           *d, *m;
    static const char  *lnames[] = { "wall_ms", "cpu_ms", "memory_mb",
                                     "pids", "stdout_bytes", "stderr_bytes" };
    static const char  *kn[3][2] = { { "stream", "dead_letter" },
                                     { "stream", "errors_key" },
                                     { "dead_letter", "errors_key" } };
    const char     *kv[3][2];
    int             i;

    f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, n, "%s: %s", path, strerror(errno));
        return -1;
    }

    lineno = 0;

    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        len = strlen(line);

        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            snprintf(err, n, "%s:%u: line too long", path, lineno);
            fclose(f);
            return -1;
        }

        p = strchr(line, '#');
        if (p != NULL) {
            *p = '\0';
        }

        for (key = line; isspace((unsigned char) *key); key++) { }

        if (*key == '\0') {
            continue;
        }

        for (val = key; *val != '\0' && !isspace((unsigned char) *val);
             val++)
        { }

        if (*val != '\0') {
            *val++ = '\0';
        }

        while (isspace((unsigned char) *val)) {
            val++;
        }

        e = val + strlen(val);
        while (e > val && isspace((unsigned char) e[-1])) {
            *--e = '\0';
        }

        if (aw_conf_set(conf, key, val, msg, sizeof(msg)) != 0) {
            snprintf(err, n, "%s:%u: %s", path, lineno, msg);
            fclose(f);
            return -1;
        }
    }

    fclose(f);

    kv[0][0] = conf->stream;
    kv[0][1] = conf->dead_letter;
    kv[1][0] = conf->stream;
    kv[1][1] = conf->errors_key;
    kv[2][0] = conf->dead_letter;
    kv[2][1] = conf->errors_key;

    d = &conf->defaults.wall_ms;
    m = &conf->maxima.wall_ms;

    for (i = 0; i < 6; i++) {
        if (d[i] > m[i]) {
            snprintf(err, n, "%s: %s %ld is above max_%s %ld", path,
                     lnames[i], d[i], lnames[i], m[i]);
            return -1;
        }
    }

    /*
     * Three keys: a dead-letter stream that is the job stream feeds what
     * it takes back to the workers, for ever, and trims it (MAXLEN);
     * errors_key on either is a hash command on a stream, refused at
     * every try
     */
    for (i = 0; i < 3; i++) {
        if (strcmp(kv[i][0], kv[i][1]) == 0) {
            snprintf(err, n, "%s: %s and %s are one key, \"%s\": give "
                     "each its own", path, kn[i][0], kn[i][1], kv[i][0]);
            return -1;
        }
    }

    if (aw_conf_redis(conf, path, err, n) != 0) {
        return -1;
    }

    pw = getpwnam(conf->user);
    if (pw == NULL) {
        snprintf(err, n, "%s: user \"%s\" does not exist (auto/deps adds "
                 "airlock-worker)", path, conf->user);
        return -1;
    }

    /*
     * The fetch child would stay root, with every capability the unit
     * keeps (or root's group, and what it may read), while it reads
     * answers from upstreams.  Other system accounts are the operator's
     * choice: airlock-worker is one (adduser --system), and the proxy
     * knows the fetches by this uid alone.
     */
    if (pw->pw_uid == 0 || pw->pw_gid == 0) {
        snprintf(err, n, "%s: user \"%s\" has %s 0: fetches may not run "
                 "as root (auto/deps adds airlock-worker)", path, conf->user,
                 pw->pw_uid == 0 ? "uid" : "gid");
        return -1;
    }

    conf->uid = pw->pw_uid;
    conf->gid = pw->pw_gid;

    return 0;
}


/*
 * redis_host as the agent's --redis takes a host: a name, an IPv4
 * address, or an IPv6 one in brackets ("[::1]", copied without them:
 * hiredis looks "[::1]" up as a host name and fails); a bare IPv6
 * address too, redis_port being apart.  No control character or space
 * (the host is logged).  redis_user and redis_password_file go
 * together (the file: aw_conf_password()).
 */

static int
aw_conf_redis(aw_conf_t *conf, const char *path, char *err, size_t n)
{
    char             msg[AW_ERRLEN];
    char            *h;
    size_t           i, len;
    struct in6_addr  a6;

    h = conf->redis_host;
    len = strlen(h);

    for (i = 0; i < len; i++) {
        if ((unsigned char) h[i] <= 0x20 || h[i] == 0x7f) {
            snprintf(err, n, "%s: redis_host: no control character or "
                     "space", path);
            return -1;
        }
    }

    if (h[0] == '[') {
        if (len < 3 || h[len - 1] != ']' || len - 2 >= INET6_ADDRSTRLEN) {
            snprintf(err, n, "%s: redis_host \"%s\": an IPv6 address in "
                     "brackets is [::1], the port apart (redis_port)",
                     path, h);
            return -1;
        }

        memmove(h, h + 1, len - 2);
        h[len - 2] = '\0';

        if (inet_pton(AF_INET6, h, &a6) != 1) {
            snprintf(err, n, "%s: redis_host \"[%s]\": not an IPv6 address",
                     path, h);
            return -1;
        }

    } else if (len > 255) {
        snprintf(err, n, "%s: redis_host: a host of 1 to 255 bytes", path);
        return -1;
    }

    if ((conf->redis_user == NULL) != (conf->redis_password_file == NULL)) {
        snprintf(err, n, "%s: redis_user and redis_password_file go "
                 "together", path);
        return -1;
    }

    if (conf->redis_user == NULL) {
        return 0;
    }

    if (ar_user_check(conf->redis_user, msg, sizeof(msg)) != 0) {
        snprintf(err, n, "%s: redis_user \"%s\": want %s", path,
                 conf->redis_user, msg);
        return -1;
    }

    return 0;
}


/*
 * redis_password_file, read once at start (and by -t), while the worker
 * is still root: the file is root's alone, and the process that talks
 * to Redis then runs as the worker's user (aw_priv.c); the password is
 * kept for every connect (aw_redis_open()), a new one taken at the next
 * start.  0; 1 when the file is missing (an image root before its first
 * boot, when airlock-redis-users writes it: -t says so and passes); -1
 * otherwise.
 */

int
aw_conf_password(aw_conf_t *conf, char *err, size_t n)
{
    char  pass[AR_PASS_MAX + 1];
    int   missing;

    if (conf->redis_user == NULL) {
        return 0;
    }

    missing = access(conf->redis_password_file, F_OK) != 0
              && errno == ENOENT;

    if (ar_password_read(conf->redis_password_file, pass, sizeof(pass), err,
                         n) != 0)
    {
        explicit_bzero(pass, sizeof(pass));
        return missing ? 1 : -1;
    }

    conf->redis_password = aw_strdup(pass);
    explicit_bzero(pass, sizeof(pass));

    return 0;
}


/*
 * The default consumer name: "<host name>-<16 hex digits>" from the
 * machine id.  The host name alone is not enough: every appliance image
 * is called "airlock", and two workers with one name share a pending
 * list, so a starting one resumes (and runs again) the other's running
 * job.  /etc/machine-id is unique per installation (the image ships it
 * empty and systemd makes it on the first boot) and stable across
 * restarts (a disk copied after its first boot keeps it: such a copy
 * needs its own "consumer").  machine-id(5) asks for it to be hashed with an
 * application-specific key before it is shown, and consumer names are
 * visible to every Redis client, hence the keyed hash.  Without a machine
 * id there is nothing safe to fall back to: the operator names it.
 */

int
aw_conf_consumer(aw_conf_t *conf, char *err, size_t n)
{
    FILE           *f;
    char            line[64], host[128], name[128 + 1 + 16 + 1];
    size_t          i, len;
    unsigned char   id[16], mac[8];
    static const char  app[] = "airlock-worker consumer name";

    if (conf->consumer != NULL) {
        return 0;
    }

    f = fopen(AW_MACHINE_ID, "r");
    len = 0;

    if (f != NULL) {
        if (fgets(line, sizeof(line), f) != NULL) {
            len = strcspn(line, "\n");
        }
        fclose(f);
    }

    if (len != 32
        || sodium_hex2bin(id, sizeof(id), line, len, NULL, NULL, NULL) != 0)
    {
        snprintf(err, n, "no machine id in %s to make a consumer name "
                 "from (systemd writes it on the first boot); set "
                 "\"consumer\", unique per worker and stable across its "
                 "restarts", AW_MACHINE_ID);
        return -1;
    }

    if (sodium_init() < 0
        || crypto_generichash(mac, sizeof(mac), (const unsigned char *) app,
                              sizeof(app) - 1, id, sizeof(id)) != 0)
    {
        snprintf(err, n, "libsodium failed to initialize");
        return -1;
    }

    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
        strcpy(host, "worker");
    }
    host[sizeof(host) - 1] = '\0';

    len = (size_t) snprintf(name, sizeof(name), "%s-", host);
    for (i = 0; i < sizeof(mac); i++) {
        len += (size_t) snprintf(name + len, sizeof(name) - len, "%02x",
                                 mac[i]);
    }

    conf->consumer = aw_strdup(name);

    return 0;
}


void
aw_conf_free(aw_conf_t *conf)
{
    const aw_cf_key_t  *k;

    for (k = aw_keys; k->key != NULL; k++) {
        if (k->type == AW_CF_STR && k->off != 0) {
            free(*(char **) ((char *) conf + k->off));
        }
    }

    free(conf->redis_host);

    if (conf->redis_password != NULL) {
        explicit_bzero(conf->redis_password, strlen(conf->redis_password));
        free(conf->redis_password);
        conf->redis_password = NULL;
    }

    if (conf->host_uid_fd >= 0) {
        close(conf->host_uid_fd);
        conf->host_uid_fd = -1;
    }
}
