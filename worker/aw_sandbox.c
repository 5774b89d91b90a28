/*
 * Throw-away sandboxes.  Each job gets a directory under
 * <workdir>/jobs/aw-<worker pid>-<its start time>-<a random number>
 * holding the bundle (config.json for gVisor), <workdir>/in/<the
 * random number> holding code/script.py and data/data.json, and a
 * cgroup of its own (<cgroup_root>/<controller>/<cgroup_name>/ and the
 * same name) whose limits
 * the worker writes itself before the runtime starts, so a limit is
 * never left to a runtime's defaults.
 *
 *   gvisor  `runsc run` on the bundle: read-only root (the dedicated
 *           rootfs), code and data bind-mounted read-only (each an
 *           overlay of the child's, aw_layers()), /scratch,
 *           /tmp and /dev/shm tmpfs of scratch_mb each, noexec
 *           (nothing else writable), uid/gid 10001, no capabilities,
 *           noNewPrivileges,
 *           PATH only, --network=none.
 *   bwrap   bubblewrap started as the worker's own host uid
 *           (aw_sandbox_lease()), 10001 inside, in the job's cgroup, with
 *           the same mounts (its root, code and data overlays of
 *           their own, aw_layers(), its /dev a small read-only
 *           tmpfs of its own, aw_bwrap_dev(), of its /proc only
 *           an allow list shown, aw_proc_shown), every namespace
 *           unshared (no network), no further user namespaces, no
 *           capabilities; pid 1 inside is a small Python init
 *           (aw_bwrap_init) that sets the job's rlimits
 *           (AW_BWRAP_SIGPENDING), runs the script and reports its
 *           wait status.
 *
 * Two processes share the work (aw_priv.c).  The launcher, root, makes
 * the directory and the cgroup (aw_sandbox_launch()), and the job's
 * keeper (aw_keeper()), its child, starts the runtime and holds the
 * sandbox to its wall and CPU time whatever the worker does (stopped,
 * hung).  The worker, unprivileged, hands the launcher the script,
 * data.json and its output pipes, and reads the output and the status
 * (aw_sandbox_run()).  Whatever happens, the sandbox is deleted, the
 * cgroup removed and the files wiped afterwards.  A sandbox dies with
 * its worker (the launcher's kill, the keeper's and the runtime's
 * parent-death signals); a worker that starts removes the
 * rest of what a crashed worker left (directories, cgroups and runsc's
 * state whose worker, by pid and start time, is gone), never through
 * runsc, which would signal the pids its state names (aw_runsc_forget()).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"
#include "aw.h"


#define AW_GVISOR_OVERHEAD_MB  64       /* the sentry and gofer */

/*
 * gVisor: the host tasks the job's cgroup allows (aw_host_pids()), a
 * backstop, as the job's own pids limit is the sentry's RLIMIT_NPROC:
 * the sentry's and gofer's threads, and, on the ptrace platform, for
 * each address space inside a stub process with a traced thread for
 * every sentry thread that has run it, kept for reuse.  Measured on 2
 * CPUs: a script forking and reaping 3000 children, at most 5 at once,
 * 270 tasks; 63 sleeping children, 386; 63 children all making system
 * calls at once, 68 each, 4357 (past this bound: killed/pids).
 */
#define AW_GVISOR_PIDS         256
#define AW_GVISOR_PIDS_EACH    16

/*
 * bwrap: the limits a script reads (getrlimit()) that the kernel sizes
 * from the host's memory (RLIMIT_NPROC and RLIMIT_SIGPENDING, half of
 * threads-max, 96367 on one host) or that the host's set-up sets
 * (RLIMIT_MEMLOCK), which the sandbox's init (aw_bwrap_init) lowers to
 * these, and RLIMIT_NPROC to the cgroup's pids.max (the argument after
 * its code), before it starts the script.  Set inside the user
 * namespace, not on bwrap: the kernel counts these per user namespace
 * and uid, the namespace's creator's limits at its creation bounding
 * the host uid's count of every namespace.  Set on bwrap, they were
 * those too: the host uid's tasks, jobs of a shared uid (bwrap_uids 1,
 * a worker not root, a uid range two workdirs share) all counted
 * against one job's number, and one job's tasks refused another's
 * forks.  Inside, the namespace's count is the init and the script's
 * tasks, the cgroup's less bwrap's own process, so a fork past the
 * limit is still refused by the cgroup (EAGAIN), whose pids.events tell
 * killed/pids.  Queued signals: a kill() of a standard signal is never
 * refused for them, a sigqueue() past them is (EAGAIN).  Message queue
 * bytes: the kernel's default.  Locked memory: gVisor's.
 */
#define AW_BWRAP_SIGPENDING    128
#define AW_BWRAP_MSGQUEUE      819200
#define AW_BWRAP_MEMLOCK       65536

/*
 * `runsc run`'s own log, in the job's directory: its last line is the
 * script's wait status ("Exiting with status: 35072"), which tells an
 * exit from a signal where runsc's exit code (128 + N) cannot
 */
#define AW_RUNSC_LOG           "runsc.log"
#define AW_RUNSC_EXITING       "] Exiting with status: "

/*
 * What `runsc run` logs when its wait for the script fails because the
 * sandbox process (the sentry) is gone, just before it waits on that
 * process and logs the process's exit status as the script's: a sentry
 * that could not start a thread (the job's pids.max) exits with Go's
 * status 2, which the script could have chosen too.  runsc's own line,
 * on the host, where the sandbox cannot write.
 */
#define AW_RUNSC_LOST          "Will try waiting on the sandbox process instead"

/*
 * bwrap: the descriptor the sandbox's init reports the script's wait
 * status on ("status 35072\n"), bwrap's own exit code being 128 + N for
 * a signal N, like an exit the script chose; and what the init costs
 * the job's cgroup (one more interpreter, mostly shared pages).
 */
#define AW_STATUS_FD           4
#define AW_STATUS_LINE         "status "
#define AW_BWRAP_OVERHEAD_MB   8

/*
 * The keeper (aw_keeper()) reads the job's cgroup every AW_KEEP_MS; the
 * worker reads what is left in the output pipes for at most
 * AW_DRAIN_MS once the keeper has reported the runtime gone.
 */
#define AW_KEEP_MS             200
#define AW_DRAIN_MS            2000

/*
 * bwrap's arguments: the fixed ones and aw_proc_sys_cover()'s, and three
 * for each entry of /proc covered (aw_proc_cover()), of which there are
 * at most AW_PROC_COVERS
 */
#define AW_PROC_COVERS         160
#define AW_BWRAP_ARGS          (96 + 3 * AW_PROC_COVERS)

#define AW_STR(x)              #x
#define AW_XSTR(x)             AW_STR(x)


typedef struct {
    char             slot[64];
    char             dir[2048];
    char             in[2048];          /* code/ and data/ (aw_box_in()) */
    char             cg[4][2048];       /* memory, pids, cpu, cpuacct
                                           (v1); one (v2) */
    int              ncg;
    int              v2;
} aw_box_t;


/*
 * What the keeper tells the worker once the runtime is gone: whether it
 * ended the sandbox for a limit, and the runtime's wait status
 */
typedef enum {
    AW_END_RAN = 0,                     /* the runtime ended by itself */
    AW_END_WALL,
    AW_END_CPU
} aw_end_e;


typedef struct {
    int              end;               /* aw_end_e */
    int              status;
} aw_report_t;


/* bwrap's command line, and the paths of the /proc entries it covers */
typedef struct {
    const char      *av[AW_BWRAP_ARGS];
    size_t           na;
    char             path[AW_PROC_COVERS][64];
    size_t           np;
} aw_bwrap_argv_t;


typedef struct {
    char            *buf;
    size_t           len;
    size_t           max;
    int              trunc;
    int              fd;
} aw_stream_t;


static int aw_cg_write(const char *dir, const char *file, const char *val);
static int aw_host_swap(void);
static long aw_cg_read_key(const char *dir, const char *file,
    const char *key);
static int aw_cg_create(const aw_conf_t *conf, aw_box_t *box,
    const aw_limits_t *lim, char *err, size_t n);
static void aw_cg_destroy(aw_box_t *box);
static void aw_cg_sweep(const aw_conf_t *conf, const char *slot);
static void aw_cg_stale(const aw_conf_t *conf, const char *hier);
static long aw_cg_oom_kills(const aw_box_t *box);
static long aw_cg_cpu_ms(const aw_box_t *box);
static long aw_host_pids(const aw_conf_t *conf, const aw_limits_t *lim);
static int aw_cg_join(const aw_box_t *box, pid_t pid);
static int aw_box_prepare(const aw_conf_t *conf, const aw_job_t *job,
    int script_fd, int data_fd, aw_box_t *box, char *err, size_t n);
static int aw_copy_fd(const char *path, int fd, size_t max, int mode);
static int aw_bundle_write(const aw_conf_t *conf, const aw_job_t *job,
    const aw_box_t *box);
static void aw_runtime_exec(const aw_conf_t *conf, const aw_job_t *job,
    const aw_box_t *box, pid_t keeper, int out, int err, int fail,
    int status);
static void aw_keeper(const aw_conf_t *conf, const aw_job_t *job,
    const aw_box_t *box, pid_t worker, long start, const int fds[4],
    int report) __attribute__((noreturn));
static long aw_cg_memory_mb(const aw_conf_t *conf, const aw_limits_t *lim);
static int aw_layers(const aw_conf_t *conf, const aw_box_t *box,
    const char *base, int fail);
static int aw_layers_top(const aw_box_t *box, int own, int fail);
static int aw_bwrap_dev(const aw_box_t *box, int bound, int fail);
static int aw_bwrap_mounts(const aw_conf_t *conf, const aw_job_t *job,
    const aw_box_t *box, int top, int fail);
static void aw_proc_cover(aw_bwrap_argv_t *a, const char *dir,
    const char *const *shown, const char *empty, const char *null,
    int fail);
static void aw_bwrap_cover(aw_bwrap_argv_t *a, const char *cover,
    const char *path, int fail);
static void aw_proc_sys_cover(aw_bwrap_argv_t *a,
    const char (*dirs)[2304], int fail);
static void aw_proc_stat(const char *path, int fail);
static void aw_proc_cpuinfo(const char *path, int fail);
static void aw_proc_meminfo(const char *path, long total_mb, long free_mb,
    int fail);
static void aw_proc_uptime(const char *path, int fail);
static void aw_proc_file(const char *path, const char *text, size_t len,
    int fail);
static void aw_bwrap_args(aw_bwrap_argv_t *a, const char *op,
    const char *src, const char *dst, int fail);
static void aw_die_with_parent(pid_t parent, int fail);
static void aw_child_fail(int fail, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
static void aw_child_failure(int fd, char *buf, size_t size);
static int aw_run_cmd(char *const argv[], long timeout_ms);
static void aw_runsc_delete(const aw_conf_t *conf, const char *slot,
    int kill_first);
static void aw_runsc_forget(const aw_conf_t *conf, const char *slot);
static int aw_box_in(const aw_conf_t *conf, const char *slot, char *buf,
    size_t n);
static void aw_box_teardown(const aw_conf_t *conf, aw_box_t *box,
    int killed);
static void aw_stream_read(aw_stream_t *s);
static int aw_owner_alive(const char *name, pid_t *owner);
static int aw_status_parse(const char *buf, const char *prefix,
    int *status);
static int aw_runsc_status(const aw_box_t *box, int *status, int *lost);
static int aw_init_status(int fd, int *status);
static int aw_cpu_spent(long cpu, long limit);
static long aw_rlimit_cpu(long cpu_ms);
static int aw_end_signal(const aw_conf_t *conf, const char *slot, int st,
    int rc, int ws, int *code);
static size_t aw_seccomp_program(struct sock_filter *f, size_t cap);
static int aw_write_fd(int fd, const char *buf, size_t len);


/*
 * System calls refused inside every sandbox (EPERM), on top of what no
 * capability already refuses: a script has no business debugging or
 * looking into other processes (kcmp compares two processes' files and
 * memory, pidfd_getfd takes another's descriptor), mounting (the new
 * mount API too), opening files by handle, entering or making
 * namespaces, reading the kernel's log, or loading kernel programs or
 * modules, nor with io_uring, a second way into the kernel that seccomp
 * does not see into (what a ring submits is not a system call), nor with
 * ustat() and sysfs(), which answer about the host whatever the
 * namespaces: the free blocks and inodes of any file system mounted
 * anywhere on it, by device number (another job's /scratch too), and
 * its kernel's file system types (/proc/filesystems, covered); nor
 * with inotify or fanotify watches, which report every open and read of
 * an inode whoever makes it: under bwrap the rootfs's inodes are every
 * sandbox's and the host's, so a watch saw other jobs' imports as they
 * happened (inotify_init answers, and its watches are refused); nor
 * memfd_create(): a memory file is on no mount of the sandbox's, so not
 * noexec, and a program a script wrote into one ran (execve of
 * /proc/self/fd/N), past the noexec of every place it can write.  Python
 * and its standard library call none of them (libffi tries a memory
 * file for its closures only where it cannot map memory writable and
 * executable, which it can here).  Nor modify_ldt() and vmsplice(),
 * which no Python program needs and which under bwrap reach the host's
 * kernel, each with its history of holes (a process's own descriptor
 * table; pages mapped straight into a pipe).
 */
static const struct {
    const char  *name;
    int          nr;
} aw_denied[] = {
    { "ptrace", __NR_ptrace },
    { "mount", __NR_mount },
    { "umount2", __NR_umount2 },
    { "pivot_root", __NR_pivot_root },
    { "unshare", __NR_unshare },
    { "setns", __NR_setns },
    { "keyctl", __NR_keyctl },
    { "add_key", __NR_add_key },
    { "request_key", __NR_request_key },
    { "bpf", __NR_bpf },
    { "perf_event_open", __NR_perf_event_open },
    { "process_vm_readv", __NR_process_vm_readv },
    { "process_vm_writev", __NR_process_vm_writev },
    { "kexec_load", __NR_kexec_load },
    { "init_module", __NR_init_module },
    { "finit_module", __NR_finit_module },
    { "open_by_handle_at", __NR_open_by_handle_at },
    { "userfaultfd", __NR_userfaultfd },
    { "io_uring_setup", __NR_io_uring_setup },
    { "io_uring_enter", __NR_io_uring_enter },
    { "io_uring_register", __NR_io_uring_register },
    { "chroot", __NR_chroot },
    { "kcmp", __NR_kcmp },
    { "pidfd_getfd", __NR_pidfd_getfd },
    { "name_to_handle_at", __NR_name_to_handle_at },
    { "open_tree", __NR_open_tree },
    { "move_mount", __NR_move_mount },
    { "fsopen", __NR_fsopen },
    { "fsconfig", __NR_fsconfig },
    { "fsmount", __NR_fsmount },
    { "fspick", __NR_fspick },
    { "mount_setattr", __NR_mount_setattr },
    { "kexec_file_load", __NR_kexec_file_load },
    { "delete_module", __NR_delete_module },
    { "syslog", __NR_syslog },
    { "ustat", __NR_ustat },
    { "sysfs", __NR_sysfs },
    { "inotify_add_watch", __NR_inotify_add_watch },
    { "fanotify_init", __NR_fanotify_init },
    { "fanotify_mark", __NR_fanotify_mark },
    { "memfd_create", __NR_memfd_create },
    { "modify_ldt", __NR_modify_ldt },
    { "vmsplice", __NR_vmsplice },
};

#define AW_NDENIED  (sizeof(aw_denied) / sizeof(aw_denied[0]))


/*
 * The socket families a script may open under bwrap: any other socket()
 * fails with EAFNOSUPPORT.  A network namespace holds the IP and netlink
 * families, not every family: an AF_VSOCK socket reaches the
 * hypervisor's host (CID 2) and listens on the VM's own address,
 * whatever the namespace.  Netlink is left out too: what its sockets
 * queue (NETLINK_ROUTE replies never read, NETLINK_USERSOCK datagrams,
 * up to twice rmem_max a socket) is charged to no memory cgroup, v1 or
 * v2, so a script could pin the host's memory past its own limit.
 */
static const int  aw_families[] = { AF_UNIX, AF_INET, AF_INET6 };

#define AW_NFAMILIES  (sizeof(aw_families) / sizeof(aw_families[0]))


/* bwrap: the device nodes of the sandbox's /dev (aw_bwrap_dev()) */
static const char *const  aw_dev_nodes[] = {
    "null", "zero", "full", "random", "urandom", "tty"
};

#define AW_NDEV_NODES  (sizeof(aw_dev_nodes) / sizeof(aw_dev_nodes[0]))


/* the only places a script can write, each a tmpfs of scratch_mb */
static const char *const  aw_writable[] = { "/scratch", "/tmp",
                                            "/dev/shm" };

#define AW_NWRITABLE  (sizeof(aw_writable) / sizeof(aw_writable[0]))


/*
 * bwrap: what of its /proc (the kernel's, mounted for the sandbox's own
 * pid and network namespaces) a script sees, an allow list: the pid
 * directories (its own processes), self and thread-self, mounts and net
 * (links into self), sys (read-only; below), and the few files Python
 * and the C library read: version (what it says of the host's kernel,
 * uname() says too), cpuinfo, stat, meminfo, loadavg and uptime (the
 * worker's, aw_proc_own, not the host's; cpuinfo the host's CPUs, less
 * their microcode, bugs and clock), and sysvipc (its own IPC namespace).
 * Every other entry the kernel has is covered, read-only, with an empty
 * directory or an empty file: whatever names the host (its kernel's
 * symbols, configuration and command line, its devices, interrupts,
 * memory, disks, keys, log, locks, its cgroups' counts, the pressure on
 * its CPU, memory and I/O), and whatever a later kernel adds.  A deny
 * list of those names left such an entry visible (a kernel's
 * program_cpu, the host's cgroups and filesystems).  Of sys, net (its
 * own namespace), kernel and vm are shown, the rest covered the same
 * way; kernel and vm are the host's settings (its taint flags, core
 * pattern, pointer and perf restrictions, panic, watchdog and memory
 * tuning, the boot id), so each is a read-only directory of the job's
 * (aw_proc_sys_cover()) with only what glibc reads bound back in
 * (aw_proc_sys_files: kernel/ngroups_max, vm/overcommit_memory); each
 * file bound costs bwrap some 25 system calls a job.  gVisor's /proc is
 * its sentry's own.
 */
static const char *const  aw_proc_shown[] = {
    "self", "thread-self", "mounts", "net", "sys", "cpuinfo", "meminfo",
    "stat", "loadavg", "uptime", "version", "sysvipc", NULL
};

/*
 * bwrap: the files of its /proc the worker writes for each job
 * (aw_bwrap_mounts()), which bwrap binds over the host's: theirs are
 * live and host-wide (its processes, interrupts, memory, dirty pages,
 * load, idle time, its CPUs' clock), and read twice they tell how busy
 * the host and the other jobs are, a channel between jobs; and the
 * host's cpuinfo also names its CPUs' microcode revision and known bugs
 */
static const char *const  aw_proc_own[] = {
    "stat", "meminfo", "loadavg", "uptime", "cpuinfo"
};

/*
 * bwrap: the fields of the host's /proc/cpuinfo (x86-64: the seccomp
 * program allows no other) its own keeps, what gVisor's sentry shows:
 * not the microcode revision and the CPU's known bugs (how far the host
 * is patched against what), nor the clock ("cpu MHz"), live
 */
static const char *const  aw_cpuinfo_keys[] = {
    "processor", "vendor_id", "cpu family", "model", "model name",
    "stepping", "cache size", "physical id", "siblings", "core id",
    "cpu cores", "apicid", "initial apicid", "fpu", "fpu_exception",
    "cpuid level", "wp", "flags", "bogomips", "TLB size", "clflush size",
    "cache_alignment", "address sizes", "power management", NULL
};

#define AW_NPROC_OWN  (sizeof(aw_proc_own) / sizeof(aw_proc_own[0]))

/*
 * bwrap: the sandbox's /proc/meminfo, the fields the kernel's has that
 * psutil, free and the like read, in its order, each T (what the job's
 * cgroup allows), F (the job's own memory_mb), U (T less F, the share
 * of the sandbox's init, as anonymous memory in use) or 0: nothing of
 * the host's.  Beside them the kernel's has its own sizes (vmalloc,
 * direct map, huge pages), which no job's limit bounds.
 */
static const struct {
    const char  *name;
    char         val;
} aw_meminfo[] = {
    { "MemTotal", 'T' }, { "MemFree", 'F' }, { "MemAvailable", 'F' },
    { "Buffers", 0 }, { "Cached", 0 }, { "SwapCached", 0 },
    { "Active", 'U' }, { "Inactive", 0 }, { "Active(anon)", 'U' },
    { "Inactive(anon)", 0 }, { "Active(file)", 0 },
    { "Inactive(file)", 0 }, { "Unevictable", 0 }, { "Mlocked", 0 },
    { "SwapTotal", 0 }, { "SwapFree", 0 }, { "Dirty", 0 },
    { "Writeback", 0 }, { "AnonPages", 'U' }, { "Mapped", 0 },
    { "Shmem", 0 }, { "KReclaimable", 0 }, { "Slab", 0 },
    { "SReclaimable", 0 }, { "SUnreclaim", 0 }, { "KernelStack", 0 },
    { "PageTables", 0 }, { "CommitLimit", 'T' }, { "Committed_AS", 'U' }
};

#define AW_NMEMINFO  (sizeof(aw_meminfo) / sizeof(aw_meminfo[0]))

/* bwrap: the sandbox's /proc/loadavg, no load (gVisor's says as much) */
static const char  aw_loadavg[] = "0.00 0.00 0.00 0/0 0\n";

static const char *const  aw_proc_sys_shown[] = {
    "kernel", "net", "vm", NULL
};

static const char *const  aw_proc_sys_dirs[] = {
    "/proc/sys/kernel", "/proc/sys/vm"
};

#define AW_NPROC_SYS_DIRS                                                    \
    (sizeof(aw_proc_sys_dirs) / sizeof(aw_proc_sys_dirs[0]))

static const char *const  aw_proc_sys_files[] = {
    "/proc/sys/kernel/ngroups_max", "/proc/sys/vm/overcommit_memory"
};

#define AW_NPROC_SYS_FILES                                                   \
    (sizeof(aw_proc_sys_files) / sizeof(aw_proc_sys_files[0]))

/*
 * bwrap's pid 1 (python3 -I -S -c): starts the script as its child, with
 * the signal dispositions bwrap would have left it (Python's own
 * SIG_IGNs reset) and without the status descriptor, reaps whatever is
 * orphaned to it, and writes the script's wait status when the script
 * ends.  bwrap itself only passes on 128 + N.  Nothing inside can end
 * it: pid 1 gets no signal from its namespace that it does not handle,
 * and it handles none (SIGINT, Python's one, is ignored).  Nor can the
 * script reach into it: the init makes itself undumpable first, so its
 * /proc entries (mem, maps, fd, environ) are the kernel's root's and the
 * script, same uid, no capability, opens none of them; it used to write
 * the init's memory through /proc/1/mem (its report, or its parent-death
 * signal, which takes the sandbox along when bwrap dies).  The script
 * stays dumpable (its exec resets the flag).  What the init reports is
 * still the script's word about the script, which chooses how it ends
 * anyway; the limits are the worker's evidence (aw_sandbox_run()).
 * It starts nothing when the status pipe has no reader left (POLLERR):
 * the worker and the keeper are gone, and bwrap with them, which kills
 * the sandbox only once its setup is done (--die-with-parent is set just
 * before the exec): a worker killed while bwrap set the sandbox up left
 * the script running for good.
 */
static const char  aw_bwrap_init[] =
    "import ctypes, os, resource, select, signal, sys\n"
    "if ctypes.CDLL(None).prctl(" AW_XSTR(PR_SET_DUMPABLE) ", 0, 0, 0, 0):\n"
    "    os._exit(1)\n"
    "for r, v in ((resource.RLIMIT_NPROC, int(sys.argv[1])),\n"
    "             (resource.RLIMIT_SIGPENDING, "
    AW_XSTR(AW_BWRAP_SIGPENDING) "),\n"
    "             (resource.RLIMIT_MSGQUEUE, " AW_XSTR(AW_BWRAP_MSGQUEUE) "),\n"
    "             (resource.RLIMIT_MEMLOCK, " AW_XSTR(AW_BWRAP_MEMLOCK) ")):\n"
    "    h = resource.getrlimit(r)[1]\n"
    "    if h != resource.RLIM_INFINITY:\n"
    "        v = min(v, h)\n"
    "    resource.setrlimit(r, (v, v))\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "w = select.poll()\n"
    "w.register(" AW_XSTR(AW_STATUS_FD) ", select.POLLOUT)\n"
    "if dict(w.poll(0)).get(" AW_XSTR(AW_STATUS_FD) ", 0) & select.POLLERR:\n"
    "    os._exit(1)\n"
    "os.set_inheritable(" AW_XSTR(AW_STATUS_FD) ", False)\n"
    "p = os.posix_spawn('/usr/bin/python3',\n"
    "    ['/usr/bin/python3', '-I', '/app/code/script.py'], os.environ,\n"
    "    setsigdef=(signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ))\n"
    "while True:\n"
    "    q, s = os.waitpid(-1, 0)\n"
    "    if q == p:\n"
    "        break\n"
    "os.write(" AW_XSTR(AW_STATUS_FD) ", b'" AW_STATUS_LINE "%d\\n' % s)\n"
    "os._exit(128 + (s & 0x7f) if s & 0x7f else s >> 8)\n";

/* what a runtime is started with: nothing of the worker's environment */
static char *const  aw_runtime_env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                         NULL };

static pid_t               aw_self;     /* the worker's, which names jobs */
static uint64_t            aw_start;    /* its start time, from /proc */
static uint32_t            aw_req_seq;  /* the worker's launcher requests */


static int
aw_cg_write(const char *dir, const char *file, const char *val)
{
    int      fd;
    char     path[2304];
    ssize_t  n;

    snprintf(path, sizeof(path), "%s/%s", dir, file);

    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }

    n = write(fd, val, strlen(val));
    close(fd);

    return n == (ssize_t) strlen(val) ? 0 : -1;
}


static long
aw_cg_read_key(const char *dir, const char *file, const char *key)
{
    long   v;
    FILE  *f;
    char   path[2304], line[256], name[128];

    snprintf(path, sizeof(path), "%s/%s", dir, file);

    f = fopen(path, "re");
    if (f == NULL) {
        return -1;
    }

    v = -1;

    while (fgets(line, sizeof(line), f) != NULL) {
        if (key == NULL) {
            v = strtol(line, NULL, 10);
            break;
        }

        if (sscanf(line, "%127s %ld", name, &v) == 2
            && strcmp(name, key) == 0)
        {
            break;
        }

        v = -1;
    }

    fclose(f);

    return v;
}


/* whether the host has swap in use: any device or file /proc/swaps lists */

static int
aw_host_swap(void)
{
    int    lines;
    FILE  *f;
    char   line[512];

    f = fopen("/proc/swaps", "re");
    if (f == NULL) {
        return 1;
    }

    lines = 0;

    while (fgets(line, sizeof(line), f) != NULL) {
        lines++;
    }

    fclose(f);

    /* the first line is the header */
    return lines > 1;
}


/*
 * What the job's cgroup allows, in MiB: the job's memory_mb and the
 * runtime's own share (gVisor's sentry and gofer, bwrap's init)
 */

static long
aw_cg_memory_mb(const aw_conf_t *conf, const aw_limits_t *lim)
{
    return lim->memory_mb + (conf->backend == AW_BACKEND_GVISOR
                             ? AW_GVISOR_OVERHEAD_MB : AW_BWRAP_OVERHEAD_MB);
}


static int
aw_cg_create(const aw_conf_t *conf, aw_box_t *box, const aw_limits_t *lim,
    char *err, size_t n)
{
    int          i;
    long         mem;
    char         val[64], parent[2048], probe[2304], slot[64];
    const char  *ctl[4] = { "memory", "pids", "cpu", "cpuacct" };
    struct stat  st;

    /* a copy: the compiler cannot see slot and cg[] do not overlap */
    memcpy(slot, box->slot, sizeof(slot));

    mem = aw_cg_memory_mb(conf, lim);

    snprintf(probe, sizeof(probe), "%s/cgroup.controllers",
             conf->cgroup_root);
    box->v2 = stat(probe, &st) == 0;

    if (box->v2) {
        snprintf(parent, sizeof(parent), "%s/%s", conf->cgroup_root,
                 conf->cgroup_name);
        if (mkdir(parent, 0755) != 0 && errno != EEXIST) {
            snprintf(err, n, "mkdir %s: %s", parent, strerror(errno));
            return -1;
        }

        /*
         * One controller per write: a write enabling several fails
         * whole when one is not available here (systemd enables cpu at
         * the root only when some unit asks for CPU accounting); memory
         * and pids are then checked by the limits' own writes.
         */
        (void) aw_cg_write(parent, "cgroup.subtree_control", "+memory");
        (void) aw_cg_write(parent, "cgroup.subtree_control", "+pids");
        (void) aw_cg_write(parent, "cgroup.subtree_control", "+cpu");

        snprintf(box->cg[0], sizeof(box->cg[0]), "%s/%s", parent,
                 slot);
        if (mkdir(box->cg[0], 0755) != 0) {
            snprintf(err, n, "mkdir %s: %s", box->cg[0], strerror(errno));
            return -1;
        }
        box->ncg = 1;

        snprintf(val, sizeof(val), "%ld", mem << 20);
        if (aw_cg_write(box->cg[0], "memory.max", val) != 0
            || aw_cg_write(box->cg[0], "memory.swap.max", "0") != 0)
        {
            snprintf(err, n, "cannot set memory.max in %s", box->cg[0]);
            return -1;
        }

        snprintf(val, sizeof(val), "%ld", aw_host_pids(conf, lim));
        if (aw_cg_write(box->cg[0], "pids.max", val) != 0) {
            snprintf(err, n, "cannot set pids.max in %s", box->cg[0]);
            return -1;
        }

        /*
         * The quota is the operator's limit like the others: a job is
         * not started without it (no cpu.max where the cpu controller
         * is not enabled above; it used to run with every CPU)
         */
        if (conf->cpus > 0) {
            snprintf(val, sizeof(val), "%ld 100000", conf->cpus * 100000);
            if (aw_cg_write(box->cg[0], "cpu.max", val) != 0) {
                snprintf(err, n, "cannot set cpu.max in %s (cpus %ld; is "
                         "the cpu controller enabled in %s's "
                         "cgroup.subtree_control?)", box->cg[0],
                         conf->cpus, conf->cgroup_root);
                return -1;
            }
        }
        return 0;
    }

    for (i = 0; i < 4; i++) {
        snprintf(parent, sizeof(parent), "%s/%s/%s", conf->cgroup_root,
                 ctl[i], conf->cgroup_name);
        if (mkdir(parent, 0755) != 0 && errno != EEXIST) {
            snprintf(err, n, "mkdir %s: %s (is the %s controller mounted "
                     "under %s?)", parent, strerror(errno), ctl[i],
                     conf->cgroup_root);
            return -1;
        }

        snprintf(box->cg[i], sizeof(box->cg[i]), "%s/%s", parent,
                 slot);
        if (mkdir(box->cg[i], 0755) != 0) {
            snprintf(err, n, "mkdir %s: %s", box->cg[i], strerror(errno));
            return -1;
        }
        box->ncg = i + 1;
    }

    snprintf(val, sizeof(val), "%ld", mem << 20);
    if (aw_cg_write(box->cg[0], "memory.limit_in_bytes", val) != 0
        || aw_cg_read_key(box->cg[0], "memory.limit_in_bytes", NULL)
           != (mem << 20))
    {
        snprintf(err, n, "cannot set memory.limit_in_bytes in %s",
                 box->cg[0]);
        return -1;
    }

    /*
     * No swap to spill into: memory and swap together held to the same
     * limit.  Where the kernel does not account swap (no memsw files,
     * swapaccount=0) the job is not started if the host has swap (it
     * used to run past memory_mb into it); without swap, the job's
     * cgroup is kept from swapping should swap be enabled later.
     */
    if (aw_cg_write(box->cg[0], "memory.memsw.limit_in_bytes", val) != 0) {
        if (aw_host_swap()) {
            snprintf(err, n, "cannot set memory.memsw.limit_in_bytes in %s "
                     "and the host has swap (boot with swapaccount=1, or "
                     "swapoff)", box->cg[0]);
            return -1;
        }

        if (aw_cg_write(box->cg[0], "memory.swappiness", "0") != 0
            || aw_cg_read_key(box->cg[0], "memory.swappiness", NULL) != 0)
        {
            snprintf(err, n, "cannot set memory.memsw.limit_in_bytes nor "
                     "memory.swappiness in %s", box->cg[0]);
            return -1;
        }
    }

    /*
     * Socket buffers (TCP, and UDP, on a bwrap sandbox's own loopback)
     * are charged to a v1 memory cgroup only once its kmem.tcp limit is
     * set, on a counter of their own (v2 charges them to memory.max): a
     * script queued 600 MB and more with 64 MB of memory.  gVisor's
     * network stack is the sandbox's own memory, so there it may fail.
     */
    if (aw_cg_write(box->cg[0], "memory.kmem.tcp.limit_in_bytes", val) != 0
        && conf->backend != AW_BACKEND_GVISOR)
    {
        snprintf(err, n, "cannot set memory.kmem.tcp.limit_in_bytes in %s "
                 "(socket buffers would escape the memory limit)",
                 box->cg[0]);
        return -1;
    }

    snprintf(val, sizeof(val), "%ld", aw_host_pids(conf, lim));
    if (aw_cg_write(box->cg[1], "pids.max", val) != 0) {
        snprintf(err, n, "cannot set pids.max in %s", box->cg[1]);
        return -1;
    }

    /*
     * At most conf->cpus CPUs at a time, or the job is not started (the
     * kernel refuses a quota over its parent's, and a hierarchy without
     * CFS bandwidth has none; it used to run with every CPU)
     */
    if (conf->cpus > 0) {
        snprintf(val, sizeof(val), "%ld", conf->cpus * 100000);
        if (aw_cg_write(box->cg[2], "cpu.cfs_period_us", "100000") != 0
            || aw_cg_write(box->cg[2], "cpu.cfs_quota_us", val) != 0
            || aw_cg_read_key(box->cg[2], "cpu.cfs_quota_us", NULL)
               != conf->cpus * 100000)
        {
            snprintf(err, n, "cannot set cpu.cfs_quota_us in %s (cpus %ld)",
                     box->cg[2], conf->cpus);
            return -1;
        }
    }

    return 0;
}


static int
aw_cg_join(const aw_box_t *box, pid_t pid)
{
    int   i;
    char  val[32];

    snprintf(val, sizeof(val), "%d", (int) pid);

    for (i = 0; i < box->ncg; i++) {
        if (aw_cg_write(box->cg[i], "cgroup.procs", val) != 0) {
            return -1;
        }
    }

    return 0;
}


static long
aw_cg_oom_kills(const aw_box_t *box)
{
    long  v;

    if (box->ncg == 0) {
        return 0;
    }

    if (box->v2) {
        v = aw_cg_read_key(box->cg[0], "memory.events", "oom_kill");

    } else {
        v = aw_cg_read_key(box->cg[0], "memory.oom_control", "oom_kill");
    }

    return v < 0 ? 0 : v;
}


/* CPU time the job's cgroup has used, all its processes together. */

static long
aw_cg_cpu_ms(const aw_box_t *box)
{
    long  v;

    if (box->ncg == 0) {
        return 0;
    }

    if (box->v2) {
        v = aw_cg_read_key(box->cg[0], "cpu.stat", "usage_usec");
        return v < 0 ? 0 : v / 1000;
    }

    v = aw_cg_read_key(box->cg[3], "cpuacct.usage", NULL);

    return v < 0 ? 0 : v / 1000000;
}


/*
 * The task count the host allows the job's cgroup.  bwrap: the job's,
 * plus its own process (outside the sandbox's pid namespace) and the
 * sandbox's init.  gVisor: the job's limit is the sentry's own
 * (RLIMIT_NPROC, aw_bundle_write()); this one bounds what the runtime
 * takes of the host, its threads (about 35 when a script sleeps) and,
 * on the ptrace platform, the stubs of the processes inside, which grow
 * with the sentry's threads (AW_GVISOR_PIDS_EACH).  Past it the sentry
 * cannot start a thread and the sandbox ends.
 */

static long
aw_host_pids(const aw_conf_t *conf, const aw_limits_t *lim)
{
    if (conf->backend == AW_BACKEND_GVISOR) {
        return AW_GVISOR_PIDS + lim->pids * AW_GVISOR_PIDS_EACH;
    }

    return lim->pids + 2;
}


static void
aw_cg_destroy(aw_box_t *box)
{
    int    i, round, any, err;
    long   pid;
    FILE  *f;
    char   path[2304], line[64];

    err = 0;

    for (i = box->ncg - 1; i >= 0; i--) {
        for (round = 0; round < 50; round++) {
            if (rmdir(box->cg[i]) == 0 || errno == ENOENT) {
                break;
            }

            err = errno;

            /* whatever is still in the cgroup is killed first */

            snprintf(path, sizeof(path), "%s/cgroup.procs", box->cg[i]);
            f = fopen(path, "re");
            any = 0;

            while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
                pid = strtol(line, NULL, 10);
                if (pid > 1) {
                    kill((pid_t) pid, SIGKILL);
                    any = 1;
                }
            }

            if (f != NULL) {
                fclose(f);
            }

            usleep(any ? 20000 : 5000);
        }

        if (round == 50) {
            /* found again by the next worker to start (aw_cg_stale()) */
            aw_log("error", "cannot remove cgroup %s: %s", box->cg[i],
                   strerror(err));
        }
    }

    box->ncg = 0;
}


/*
 * runsc makes the job's cgroup in every v1 hierarchy it finds (cpuset,
 * devices, freezer, ...) and removes them when it ends normally; after a
 * crash they stay.  Whatever of the slot is under any hierarchy goes.
 */

static void
aw_cg_sweep(const aw_conf_t *conf, const char *slot)
{
    DIR            *d;
    aw_box_t        one;
    struct dirent  *e;

    d = opendir(conf->cgroup_root);
    if (d == NULL) {
        return;
    }

    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }

        memset(&one, 0, sizeof(one));
        snprintf(one.cg[0], sizeof(one.cg[0]), "%s/%s/%s/%s",
                 conf->cgroup_root, e->d_name, conf->cgroup_name, slot);

        if (access(one.cg[0], F_OK) == 0) {
            one.ncg = 1;
            aw_cg_destroy(&one);
        }
    }

    closedir(d);
}


/*
 * The job cgroups under <hier>/<cgroup_name> whose worker is gone, found
 * with no job directory: one whose removal failed (a process that would
 * not die) while its directory went, or one left past its directory by
 * a crash.  Each goes in every hierarchy, what is in it killed first.
 */

static void
aw_cg_stale(const aw_conf_t *conf, const char *hier)
{
    DIR            *d;
    char            path[2304];
    pid_t           pid;
    aw_box_t        one;
    struct dirent  *e;

    snprintf(path, sizeof(path), "%s/%s", hier, conf->cgroup_name);

    d = opendir(path);
    if (d == NULL) {
        return;
    }

    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "aw-", 3) != 0 || e->d_type != DT_DIR
            || aw_owner_alive(e->d_name, &pid) != 0)
        {
            continue;
        }

        aw_log("notice", "removing cgroup %s, left by worker %d", e->d_name,
               (int) pid);

        memset(&one, 0, sizeof(one));
        snprintf(one.cg[0], sizeof(one.cg[0]), "%s/%s", path, e->d_name);
        one.ncg = 1;
        aw_cg_destroy(&one);
        aw_cg_sweep(conf, e->d_name);
    }

    closedir(d);
}


static int
aw_box_prepare(const aw_conf_t *conf, const aw_job_t *job, int script_fd,
    int data_fd, aw_box_t *box, char *err, size_t n)
{
    char           path[2304];
    unsigned long  nonce;

    /*
     * The worker's pid and start time name the job: a pid alone names
     * any process that gets it later (aw_owner_alive()).  The worker's,
     * not the launcher's (aw_sandbox_owner()).  The last part is a
     * random number, not a count, which alone names the directory of
     * the job's code and data (aw_box_in()): under bwrap that one's
     * path is in the sandbox's /proc/self/mountinfo (the code and data
     * bind mounts' source), where the worker's pid and start time said
     * which worker ran the job and since when, and a count how many
     * jobs it had run, other sessions' too.
     */
    if (aw_self == 0) {
        aw_sandbox_owner();
    }

    if (aw_start == 0) {
        snprintf(err, n, "cannot read this worker's start time from "
                 "/proc/%d/stat", (int) aw_self);
        return -1;
    }

    if (getrandom(&nonce, sizeof(nonce), 0) != (ssize_t) sizeof(nonce)) {
        snprintf(err, n, "getrandom: %s", strerror(errno));
        return -1;
    }

    snprintf(box->slot, sizeof(box->slot), "aw-%d-%llu-%lu",
             (int) aw_self, (unsigned long long) aw_start, nonce);
    snprintf(box->dir, sizeof(box->dir), "%s/jobs/%s", conf->workdir,
             box->slot);

    snprintf(path, sizeof(path), "%s/jobs", conf->workdir);
    if (mkdir(conf->workdir, 0711) != 0 && errno != EEXIST) {
        snprintf(err, n, "mkdir %s: %s", conf->workdir, strerror(errno));
        return -1;
    }

    if (mkdir(path, 0711) != 0 && errno != EEXIST) {
        snprintf(err, n, "mkdir %s: %s", path, strerror(errno));
        return -1;
    }

    if (mkdir(box->dir, 0711) != 0) {
        snprintf(err, n, "mkdir %s: %s", box->dir, strerror(errno));
        return -1;
    }

    /*
     * Made after the job's directory and removed before it
     * (aw_box_teardown()), so that a worker that died in between
     * leaves none without the other (aw_sandbox_cleanup_stale()).  The
     * box names it only once it is this job's: a random number another
     * job has too is refused (EEXIST), not shared.
     */
    snprintf(path, sizeof(path), "%s/in", conf->workdir);
    if (mkdir(path, 0711) != 0 && errno != EEXIST) {
        goto fail;
    }

    if (aw_box_in(conf, box->slot, path, sizeof(path)) != 0
        || mkdir(path, 0711) != 0)
    {
        goto fail;
    }

    snprintf(box->in, sizeof(box->in), "%s", path);

    snprintf(path, sizeof(path), "%s/code", box->in);
    if (mkdir(path, 0755) != 0) {
        goto fail;
    }

    snprintf(path, sizeof(path), "%s/code/script.py", box->in);
    if (aw_copy_fd(path, script_fd, (size_t) conf->max_script_bytes, 0444)
        != 0)
    {
        goto fail;
    }

    snprintf(path, sizeof(path), "%s/data", box->in);
    if (mkdir(path, 0755) != 0) {
        goto fail;
    }

    snprintf(path, sizeof(path), "%s/data/data.json", box->in);
    if (aw_copy_fd(path, data_fd, AW_DATA_MAX(conf), 0444) != 0) {
        goto fail;
    }

    snprintf(path, sizeof(path), "%s/code", box->in);
    if (chmod(path, 0555) != 0) {
        goto fail;
    }

    /*
     * bwrap: the places of the small tmpfs aw_bwrap_mounts() mounts
     * (and in it aw_layers()'s), of the sandbox's /dev (aw_bwrap_dev());
     * both: of the layers' top (aw_layers_top()); gVisor: of
     * aw_layers()'s tmpfs, whose root, code and data the bundle names
     */
    snprintf(path, sizeof(path), "%s/empty", box->dir);
    if (conf->backend == AW_BACKEND_BWRAP && mkdir(path, 0555) != 0) {
        goto fail;
    }

    snprintf(path, sizeof(path), "%s/top", box->dir);
    if (mkdir(path, 0555) != 0) {
        goto fail;
    }

    snprintf(path, sizeof(path), "%s/layers", box->dir);
    if (conf->backend == AW_BACKEND_GVISOR && mkdir(path, 0555) != 0) {
        goto fail;
    }

    snprintf(path, sizeof(path), "%s/dev", box->dir);
    if (conf->backend == AW_BACKEND_BWRAP && mkdir(path, 0555) != 0) {
        goto fail;
    }

    snprintf(path, sizeof(path), "%s/data", box->in);
    if (chmod(path, 0555) != 0) {
        goto fail;
    }

    if (conf->backend == AW_BACKEND_GVISOR
        && aw_bundle_write(conf, job, box) != 0)
    {
        snprintf(err, n, "cannot write the OCI bundle in %s: %s", box->dir,
                 strerror(errno));
        return -1;
    }

    return aw_cg_create(conf, box, &job->limits, err, n);

fail:

    snprintf(err, n, "%s: %s", path, strerror(errno));
    return -1;
}


/*
 * The launcher's: a file of the job's directory from a descriptor the
 * worker passed (aw_priv_serve()), read from offset 0, at most max
 * bytes (EFBIG past it): bytes copied, never read as anything.
 */

static int
aw_copy_fd(const char *path, int fd, size_t max, int mode)
{
    int      out;
    char     buf[65536];
    off_t    off;
    size_t   w;
    ssize_t  n, k;

    out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
               mode);
    if (out < 0) {
        return -1;
    }

    off = 0;

    for ( ;; ) {
        n = pread(fd, buf, sizeof(buf), off);
        if (n < 0 && errno == EINTR) {
            continue;
        }

        if (n <= 0) {
            break;
        }

        if ((size_t) off + (size_t) n > max) {
            n = -1;
            errno = EFBIG;
            break;
        }

        for (w = 0; w < (size_t) n; w += (size_t) k) {
            k = write(out, buf + w, (size_t) n - w);
            if (k < 0 && errno == EINTR) {
                k = 0;
                continue;
            }

            if (k <= 0) {
                close(out);
                return -1;
            }
        }

        off += n;
    }

    if (n < 0 || fchmod(out, mode) != 0) {
        k = errno;
        close(out);
        errno = (int) k;
        return -1;
    }

    return close(out);
}


/* The OCI runtime spec gVisor runs (runtime-spec 1.0). */

static int
aw_bundle_write(const aw_conf_t *conf, const aw_job_t *job,
    const aw_box_t *box)
{
    int          rc;
    char        *s, path[2304], opt[64];
    long         cpu_s;
    json_t      *spec, *proc, *caps, *mounts, *m, *linux, *res, *ns, *rl;
    json_t      *sc;
    const char  *capsets[5] = { "bounding", "effective", "inheritable",
                                "permitted", "ambient" };
    const char  *nss[5] = { "pid", "network", "ipc", "uts", "mount" };
    int          i;

    cpu_s = aw_rlimit_cpu(job->limits.cpu_ms);

    spec = json_object();
    json_object_set_new(spec, "ociVersion", json_string("1.0.0"));

    proc = json_object();
    json_object_set_new(proc, "terminal", json_false());
    json_object_set_new(proc, "user",
                        json_pack("{s:I,s:I}", "uid",
                                  (json_int_t) conf->sandbox_uid, "gid",
                                  (json_int_t) conf->sandbox_uid));
    json_object_set_new(proc, "args",
                        json_pack("[s,s,s]", "/usr/bin/python3", "-I",
                                  "/app/code/script.py"));
    json_object_set_new(proc, "env", json_pack("[s]", "PATH=/usr/bin:/bin"));
    json_object_set_new(proc, "cwd", json_string("/scratch"));

    caps = json_object();
    for (i = 0; i < 5; i++) {
        json_object_set_new(caps, capsets[i], json_array());
    }
    json_object_set_new(proc, "capabilities", caps);

    rl = json_array();
    json_array_append_new(rl, json_pack("{s:s,s:I,s:I}", "type",
                                        "RLIMIT_CPU", "soft",
                                        (json_int_t) cpu_s, "hard",
                                        (json_int_t) cpu_s));
    json_array_append_new(rl, json_pack("{s:s,s:I,s:I}", "type",
                                        "RLIMIT_CORE", "soft",
                                        (json_int_t) 0, "hard",
                                        (json_int_t) 0));
    json_array_append_new(rl, json_pack("{s:s,s:I,s:I}", "type",
                                        "RLIMIT_NOFILE", "soft",
                                        (json_int_t) 256, "hard",
                                        (json_int_t) 256));
    /*
     * The job's pids limit: gVisor counts the sandbox user's tasks
     * itself and refuses a fork or thread past it (EAGAIN), as the
     * host's pids.max does under bwrap.  The host's, a backstop far
     * above it (aw_host_pids()), refused the sentry a thread instead
     * and so ended the whole sandbox, some 20 processes into a limit
     * of 64 on the ptrace platform.
     */
    json_array_append_new(rl, json_pack("{s:s,s:I,s:I}", "type",
                                        "RLIMIT_NPROC", "soft",
                                        (json_int_t) job->limits.pids,
                                        "hard",
                                        (json_int_t) job->limits.pids));
    json_object_set_new(proc, "rlimits", rl);
    json_object_set_new(proc, "noNewPrivileges", json_true());
    json_object_set_new(spec, "process", proc);

    /* aw_layers()'s overlays, which the runtime's child mounts */
    snprintf(path, sizeof(path), "%s/layers/root", box->dir);
    json_object_set_new(spec, "root",
                        json_pack("{s:s,s:b}", "path", path,
                                  "readonly", 1));
    json_object_set_new(spec, "hostname", json_string("sandbox"));

    mounts = json_array();
    json_array_append_new(mounts,
        json_pack("{s:s,s:s,s:s,s:[s,s,s]}", "destination", "/proc",
                  "type", "proc", "source", "proc", "options", "nosuid",
                  "noexec", "nodev"));
    /*
     * /dev root's and 0755, so not the sandbox user's to write; not
     * "ro": gVisor then refuses a write to /dev/null too (EROFS)
     */
    json_array_append_new(mounts,
        json_pack("{s:s,s:s,s:s,s:[s,s,s]}", "destination", "/dev",
                  "type", "tmpfs", "source", "tmpfs", "options", "nosuid",
                  "mode=755", "size=64k"));

    snprintf(path, sizeof(path), "%s/layers/code", box->dir);
    json_array_append_new(mounts,
        json_pack("{s:s,s:s,s:s,s:[s,s,s,s]}", "destination", "/app/code",
                  "type", "bind", "source", path, "options", "rbind", "ro",
                  "nosuid", "nodev"));

    snprintf(path, sizeof(path), "%s/layers/data", box->dir);
    json_array_append_new(mounts,
        json_pack("{s:s,s:s,s:s,s:[s,s,s,s,s]}", "destination", "/app/data",
                  "type", "bind", "source", path, "options", "rbind", "ro",
                  "nosuid", "nodev", "noexec"));

    /*
     * Every writable place is a tmpfs of scratch_mb, noexec (what a
     * script writes is data, never a program).  /tmp and /dev/shm
     * are named here because gVisor mounts an unbounded tmpfs of its own
     * at a /tmp the bundle leaves out, and Python's tempfile and
     * multiprocessing expect both to be writable.
     */
    snprintf(opt, sizeof(opt), "size=%ldm", conf->scratch_mb);
    for (i = 0; i < (int) AW_NWRITABLE; i++) {
        m = json_pack("{s:s,s:s,s:s,s:[s,s,s,s,s]}", "destination",
                      aw_writable[i], "type", "tmpfs", "source", "tmpfs",
                      "options", "nosuid", "nodev", "noexec", "mode=1777",
                      opt);
        json_array_append_new(mounts, m);
    }
    json_object_set_new(spec, "mounts", mounts);

    linux = json_object();
    ns = json_array();
    for (i = 0; i < 5; i++) {
        json_array_append_new(ns, json_pack("{s:s}", "type", nss[i]));
    }
    json_object_set_new(linux, "namespaces", ns);

    res = json_pack("{s:{s:I},s:{s:I}}",
                    "memory", "limit",
                    (json_int_t) job->limits.memory_mb << 20,
                    "pids", "limit", (json_int_t) job->limits.pids);
    json_object_set_new(linux, "resources", res);

    /* the cgroup the worker made and limited (v1: one name in each) */
    snprintf(path, sizeof(path), "/%s/%s", conf->cgroup_name, box->slot);
    json_object_set_new(linux, "cgroupsPath", json_string(path));
    json_object_set_new(linux, "maskedPaths", json_pack("[s,s,s]",
                        "/proc/kcore", "/proc/keys", "/sys/firmware"));
    json_object_set_new(linux, "readonlyPaths", json_pack("[s,s]",
                        "/proc/sys", "/proc/sysrq-trigger"));
    sc = json_array();
    for (i = 0; i < (int) AW_NDENIED; i++) {
        json_array_append_new(sc, json_string(aw_denied[i].name));
    }
    json_object_set_new(linux, "seccomp",
        json_pack("{s:s,s:[s],s:[{s:o,s:s,s:I}]}",
                  "defaultAction", "SCMP_ACT_ALLOW",
                  "architectures", "SCMP_ARCH_X86_64",
                  "syscalls", "names", sc, "action", "SCMP_ACT_ERRNO",
                  "errnoRet", (json_int_t) EPERM));

    json_object_set_new(spec, "linux", linux);

    s = json_dumps(spec, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(spec);

    if (s == NULL) {
        errno = ENOMEM;
        return -1;
    }

    snprintf(path, sizeof(path), "%s/config.json", box->dir);
    rc = aw_write_file(path, s, strlen(s), 0400);
    free(s);

    return rc;
}


/*
 * The classic BPF program bwrap loads: x86-64 only, aw_denied -> EPERM,
 * socket() of a family not in aw_families -> EAFNOSUPPORT, clone() with
 * a namespace flag -> EPERM, clone3() -> ENOSYS (its flags are in
 * memory seccomp cannot read; the C library then uses clone()),
 * personality() but its query (0xffffffff) -> EPERM (a new personality
 * turns off address space randomisation for what the process runs), and
 * statmount(), listmount() and statx() asking for STATX_MNT_ID_UNIQUE ->
 * EPERM: a mount's unique id comes from one counter for the whole host,
 * and the sandbox's mounts, made as it starts, say how many the host has
 * made since boot (about 150 a bwrap job: how many jobs ran).  gVisor
 * has none of the three (its statx gives 0).  And setsid() -> EPERM: a
 * new session is a new scheduler autogroup, numbered from one counter
 * for the whole host (/proc/<pid>/autogroup, a file of each process no
 * cover reaches), and a script that made sessions read it live: every
 * session the host and the other jobs started, a channel between
 * concurrent jobs.  bwrap's own --new-session comes before the filter;
 * gVisor's sessions are its sentry's.
 */

#define AW_NR_STATMOUNT        457
#define AW_NR_LISTMOUNT        458
#define AW_STATX_MNT_ID_UNIQUE 0x4000

static size_t
aw_seccomp_program(struct sock_filter *f, size_t cap)
{
    size_t  n, i, afn, allow, enosys, eperm;

    /* the last four instructions; every jump is relative to the next */
    afn = AW_NDENIED + AW_NFAMILIES + 20;
    allow = afn + 1;
    enosys = afn + 2;
    eperm = afn + 3;

    if (cap < eperm + 1) {
        return 0;
    }

    n = 0;
    f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, arch));
    f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                 AUDIT_ARCH_X86_64, 1, 0);
    f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K,
                 SECCOMP_RET_KILL_PROCESS);
    f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, nr));

    /* the x32 ABI numbers alias the same calls */
    f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
               0x40000000, (unsigned char) (eperm - n - 1), 0);
    n++;

    for (i = 0; i < AW_NDENIED; i++) {
        f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                   (unsigned) aw_denied[i].nr,
                   (unsigned char) (eperm - n - 1), 0);
        n++;
    }

    f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
               __NR_clone3, (unsigned char) (enosys - n - 1), 0);
    n++;

    f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
               AW_NR_STATMOUNT, (unsigned char) (eperm - n - 1), 0);
    n++;
    f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
               AW_NR_LISTMOUNT, (unsigned char) (eperm - n - 1), 0);
    n++;
    f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
               __NR_setsid, (unsigned char) (eperm - n - 1), 0);
    n++;

    /* clone(flags, ...) and personality(persona): the low word */
    f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                 __NR_clone, 0, 2);
    f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[0]));
    f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
               CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC
               | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET,
               (unsigned char) (eperm - n - 1),
               (unsigned char) (allow - n - 1));
    n++;

    f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                 __NR_personality, 0, 2);
    f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[0]));
    f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
               0xffffffff, (unsigned char) (allow - n - 1),
               (unsigned char) (eperm - n - 1));
    n++;

    /* statx(dirfd, path, flags, mask, buf): the mask, an int */
    f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                 __NR_statx, 0, 2);
    f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[3]));
    f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
               AW_STATX_MNT_ID_UNIQUE, (unsigned char) (eperm - n - 1),
               (unsigned char) (allow - n - 1));
    n++;

    f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
               __NR_socket, 0, (unsigned char) (allow - n - 1));
    n++;

    /* socket(family, ...): the family, an int, is the low word */
    f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[0]));

    for (i = 0; i < AW_NFAMILIES; i++) {
        f[n] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                   (unsigned) aw_families[i],
                   (unsigned char) (allow - n - 1), 0);
        n++;
    }

    f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K,
                 SECCOMP_RET_ERRNO | (EAFNOSUPPORT & SECCOMP_RET_DATA));
    f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K,
                 SECCOMP_RET_ALLOW);
    f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K,
                 SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
    f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K,
                 SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));

    return n;
}


/*
 * The sandbox's root, code and data, each an overlay of its own with
 * the host's directory as its lower layer, in a small tmpfs on base,
 * whose root, code and data the runtime is given instead of the host's
 * directories.  Made by the runtime's child in a mount namespace of its
 * own: under bwrap the user and mount namespace of aw_bwrap_mounts()
 * (so as the worker's host uid, not root: the overlay reaches its lower
 * layer with its mounter's credentials), base the job's empty/layers,
 * which bwrap binds read-only; under gVisor the child's, root's, which
 * runsc's gofer copies, base the job's layers, named by the bundle
 * (aw_bundle_write()).
 * statfs() of an overlay answers for its top layer: with the host's
 * directory on top it gave the host's file system's size and free
 * blocks and inodes, live, which what the host and other jobs write
 * moves.  gVisor's gofer answers the sandbox's statfs() with the host's
 * fstatfs() of the file, so the same holds there.  So e, an empty
 * directory, is on top, aw_layers_top()'s tmpfs bound on it: its root
 * directory is the sandbox's root's and code's and data's, owned by
 * root, as the host directories' were, when the child was root; by
 * the sandbox user, mode 0555, read-only, when a bwrap child never was
 * (it used to leave the host's directory on top, "r:e", and its
 * numbers).
 * Under bwrap, more: the kernel shows a bind mount's root as its path
 * in its file system, and its file system's device and options: so
 * /proc/self/mountinfo showed the rootfs's path on the host, the job's
 * code and data directories' under workdir, the host's block device
 * and its file system's type and mount options.  An overlay's root is
 * "/", its source "none", its device one of its own; its options name
 * its layers as they were given, here relative to the tmpfs ("e:r",
 * the host's directory bound on r).  (gVisor's mountinfo is its
 * sentry's own, whatever the host's.)
 * -1 when the kernel refuses an overlay (no overlay module loaded, a
 * rootfs already two overlays deep): the host's directory bound where
 * the overlay was refused, the others kept (under bwrap all three used
 * to be bound as they are when one was refused: a rootfs two overlays
 * deep left code and data with the host's statfs() and paths).  The
 * namespace ends with the sandbox's last process: nothing to remove.
 */

static int
aw_layers(const aw_conf_t *conf, const aw_box_t *box, const char *base,
    int fail)
{
    int          cwd, rc;
    size_t       i;
    char         code[2304], data[2304], opt[32], empty[2304];
    const char  *src[3];
    const char  *const lower[3] = { "r", "c", "d" };
    const char  *const at[3] = { "root", "code", "data" };

    snprintf(empty, sizeof(empty), "%s/top", box->dir);
    snprintf(code, sizeof(code), "%s/code", box->in);
    snprintf(data, sizeof(data), "%s/data", box->in);
    src[0] = conf->rootfs;
    src[1] = code;
    src[2] = data;

    cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);

    if (cwd < 0
        || mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 "size=4k,nr_inodes=16,mode=755") != 0
        || chdir(base) != 0
        || mkdir("e", 0555) != 0
        || mount(empty, "e", NULL, MS_BIND, NULL) != 0)
    {
        aw_child_fail(fail, "layers in %s: %s", base, strerror(errno));
    }

    rc = 0;

    for (i = 0; i < 3; i++) {
        if (mkdir(lower[i], 0555) != 0 || mkdir(at[i], 0555) != 0
            || mount(src[i], lower[i], NULL, MS_BIND, NULL) != 0)
        {
            aw_child_fail(fail, "%s in %s: %s", src[i], base,
                          strerror(errno));
        }

        snprintf(opt, sizeof(opt), "lowerdir=e:%s", lower[i]);

        if (mount("none", at[i], "overlay",
                  MS_RDONLY | MS_NOSUID | MS_NODEV, opt) == 0)
        {
            continue;
        }

        rc = -1;

        if (mount(src[i], at[i], NULL, MS_BIND, NULL) != 0) {
            aw_child_fail(fail, "bind %s: %s", src[i], strerror(errno));
        }
    }

    if (fchdir(cwd) != 0) {
        aw_child_fail(fail, "fchdir: %s", strerror(errno));
    }

    close(cwd);

    return rc;
}


/*
 * The empty top layer of the sandbox's root, code and data
 * (aw_layers()), made by the runtime's child while still root, in its
 * own mount namespace (aw_runtime_exec()): a read-only tmpfs of one
 * block and one inode, its root directory, owned by root, mode 0755, on
 * the job's top.  statfs() of any file of the sandbox's root, code or
 * data answers with its numbers, fixed, not the host file system's.
 * own: a bwrap child that never was root mounts it in its user
 * namespace (aw_bwrap_mounts()), owned by the worker's uid, which is
 * the sandbox user inside: mode 0555, and read-only, mounted and bound,
 * so its owner can change nothing of it either (EROFS).
 */

static int
aw_layers_top(const aw_box_t *box, int own, int fail)
{
    char  path[2304];

    snprintf(path, sizeof(path), "%s/top", box->dir);

    if (mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV
              | MS_NOEXEC, own ? "size=4k,nr_inodes=1,mode=555"
                               : "size=4k,nr_inodes=1,mode=755") != 0)
    {
        aw_child_fail(fail, "mount %s: %s", path, strerror(errno));
    }

    return 0;
}


/*
 * bwrap: the sandbox's /dev, made by the runtime's child while still
 * root, in its own mount namespace (aw_runtime_exec()): a tmpfs of its
 * own, 4 KiB, with the device nodes bwrap's --dev binds from the
 * host's /dev (null, zero, full, random, urandom, tty), the links to
 * /proc/self/fd it makes, and empty shm and pts, which bwrap binds on
 * /dev as it is.  --dev's nodes were bind mounts of the host's
 * devtmpfs, whose size (half the host's memory) and inode count each of
 * their lines of /proc/self/mountinfo and /proc/mounts shows.  A user
 * namespace makes no device node, so bwrap's --dev, run as the
 * worker's uid, could do no other; nor can a worker started as another
 * user than root, nor one without CAP_MKNOD: the shipped unit's
 * PrivateDevices= takes it (its /dev is a tmpfs of systemd's, with the
 * same nodes, not the host's devtmpfs).  -1 when the node is refused
 * (EPERM), the tmpfs unmounted.  Then, bound, in the user namespace of
 * aw_bwrap_mounts(), the same tmpfs with the worker's nodes bound on
 * it one by one, as --dev does: --dev's own tmpfs had no size and no
 * inode bound (statvfs() of /dev told half the host's memory; bwrap's
 * --size is for --tmpfs only), and a devpts of the host kernel's, whose
 * ptys count against kernel.pty.max for the whole host, was mounted on
 * /dev/pts (and covered).  The namespace ends with the sandbox's last
 * process: nothing to remove.
 */

static int
aw_bwrap_dev(const aw_box_t *box, int bound, int fail)
{
    int          fd;
    size_t       i;
    char         base[2304], path[2400], node[32];
    const dev_t  devs[] = { makedev(1, 3), makedev(1, 5), makedev(1, 7),
                            makedev(1, 8), makedev(1, 9), makedev(5, 0) };
    const char  *const links[][2] = {
        { "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
        { "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" } };
    const char  *const dirs[] = { "shm", "pts" };

    snprintf(base, sizeof(base), "%s/dev", box->dir);

    if (mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NOEXEC,
              "size=4k,nr_inodes=16,mode=755") != 0)
    {
        aw_child_fail(fail, "mount %s: %s", base, strerror(errno));
    }

    for (i = 0; i < AW_NDEV_NODES; i++) {
        snprintf(path, sizeof(path), "%s/%s", base, aw_dev_nodes[i]);

        if (!bound && mknod(path, S_IFCHR | 0666, devs[i]) != 0) {
            if (errno == EPERM && umount2(base, MNT_DETACH) == 0) {
                return -1;
            }

            aw_child_fail(fail, "mknod %s: %s", path, strerror(errno));
        }

        if (!bound && chmod(path, 0666) != 0) {
            aw_child_fail(fail, "chmod %s: %s", path, strerror(errno));
        }

        if (!bound) {
            continue;
        }

        snprintf(node, sizeof(node), "/dev/%s", aw_dev_nodes[i]);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);

        if (fd < 0 || close(fd) != 0
            || mount(node, path, NULL, MS_BIND, NULL) != 0)
        {
            aw_child_fail(fail, "%s on %s: %s", node, path,
                          strerror(errno));
        }
    }

    for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", base, links[i][0]);

        if (symlink(links[i][1], path) != 0) {
            aw_child_fail(fail, "symlink %s: %s", path, strerror(errno));
        }
    }

    for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", base, dirs[i]);

        if (mkdir(path, 0755) != 0) {
            aw_child_fail(fail, "mkdir %s: %s", path, strerror(errno));
        }
    }

    /*
     * Read-only here, where the flag is locked for the namespaces below:
     * bwrap's --remount-ro would add nodev too, and the nodes are on
     * this mount, not on mounts of their own as --dev's
     */
    if (mount(NULL, base, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY
              | MS_NOSUID | MS_NOEXEC, NULL) != 0)
    {
        aw_child_fail(fail, "remount %s: %s", base, strerror(errno));
    }

    return 0;
}


/*
 * bwrap: the writable places, made in the child before bwrap starts,
 * and the layers of its root, code and data (aw_layers(), whose
 * answer this is), under the top layer the child mounted while root
 * (top), or else under one it mounts here (aw_layers_top()).
 * bwrap mounts a tmpfs nosuid and nodev, never noexec, and a bind mount
 * keeps the flags of its source (in a user namespace, locked): so the
 * child takes a user and mount namespace of its own (its uid mapped to
 * itself, nothing shared with the host's mounts), covers the job's
 * empty directory with a small tmpfs and mounts in it one tmpfs of
 * scratch_mb each, noexec, nosuid, nodev, which bwrap binds on
 * /scratch, /tmp and /dev/shm.  Each tmpfs has its size and its
 * inodes set (nr_inodes: 1024 a MiB of scratch_mb, 64 for the small
 * one): the kernel's defaults, each half the host's memory in pages,
 * are what statvfs() answers a script, and what mountinfo's leaving
 * them out tells.  A file written there is not run
 * (execve fails with EACCES, a library there is not mapped executable).
 * Beside them, an empty directory (void) and an empty file (null), the
 * read-only covers of /dev/pts and of /proc (aw_proc_cover()), the
 * directories bound on /proc/sys/kernel and vm (aw_proc_sys_cover()),
 * and the
 * sandbox's own /proc files (aw_proc_own): stat, meminfo, loadavg,
 * uptime and cpuinfo (some 1.5 KiB a CPU: the small tmpfs is 4 MiB,
 * charged to the job as written).  The namespace ends with the
 * sandbox's last process: nothing to remove.
 */

static int
aw_bwrap_mounts(const aw_conf_t *conf, const aw_job_t *job,
    const aw_box_t *box, int top, int fail)
{
    int          fd, i;
    char         base[2304], path[2400], map[64], opt[64];
    uid_t        uid;
    gid_t        gid;
    const char  *const files[3] = { "setgroups", "uid_map", "gid_map" };
    const char  *const dirs[3] = { "scratch", "tmp", "shm" };

    uid = getuid();
    gid = getgid();

    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        aw_child_fail(fail, "unshare: %s", strerror(errno));
    }

    /* the new namespace's capabilities made the process undumpable */
    if (prctl(PR_SET_DUMPABLE, 1) != 0) {
        aw_child_fail(fail, "prctl: %s", strerror(errno));
    }

    for (i = 0; i < 3; i++) {
        if (i == 0) {
            snprintf(map, sizeof(map), "deny");
        } else {
            snprintf(map, sizeof(map), "%lu %lu 1",
                     i == 1 ? (unsigned long) uid : (unsigned long) gid,
                     i == 1 ? (unsigned long) uid : (unsigned long) gid);
        }

        snprintf(path, sizeof(path), "/proc/self/%s", files[i]);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t) strlen(map)
            || close(fd) != 0)
        {
            aw_child_fail(fail, "%s: %s", path, strerror(errno));
        }
    }

    snprintf(base, sizeof(base), "%s/empty", box->dir);

    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0
        || mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 "size=4m,nr_inodes=64,mode=755") != 0)
    {
        aw_child_fail(fail, "mount %s: %s", base, strerror(errno));
    }

    snprintf(path, sizeof(path), "%s/void", base);
    if (mkdir(path, 0555) != 0) {
        aw_child_fail(fail, "mkdir %s: %s", path, strerror(errno));
    }

    for (i = 0; i < (int) AW_NPROC_SYS_DIRS; i++) {
        snprintf(path, sizeof(path), "%s/%s", base,
                 strrchr(aw_proc_sys_dirs[i], '/') + 1);

        if (mkdir(path, 0755) != 0) {
            aw_child_fail(fail, "mkdir %s: %s", path, strerror(errno));
        }
    }

    snprintf(path, sizeof(path), "%s/null", base);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (fd < 0 || close(fd) != 0) {
        aw_child_fail(fail, "%s: %s", path, strerror(errno));
    }

    snprintf(path, sizeof(path), "%s/stat", base);
    aw_proc_stat(path, fail);

    snprintf(path, sizeof(path), "%s/cpuinfo", base);
    aw_proc_cpuinfo(path, fail);

    snprintf(path, sizeof(path), "%s/meminfo", base);
    aw_proc_meminfo(path, aw_cg_memory_mb(conf, &job->limits),
                    job->limits.memory_mb, fail);

    snprintf(path, sizeof(path), "%s/loadavg", base);
    aw_proc_file(path, aw_loadavg, sizeof(aw_loadavg) - 1, fail);

    snprintf(path, sizeof(path), "%s/uptime", base);
    aw_proc_uptime(path, fail);

    snprintf(opt, sizeof(opt), "size=%ldm,nr_inodes=%ldk,mode=1777",
             conf->scratch_mb, conf->scratch_mb);

    for (i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", base, dirs[i]);

        if (mkdir(path, 0755) != 0
            || mount("tmpfs", path, "tmpfs",
                     MS_NOSUID | MS_NODEV | MS_NOEXEC, opt) != 0)
        {
            aw_child_fail(fail, "tmpfs %s: %s", path, strerror(errno));
        }
    }

    snprintf(path, sizeof(path), "%s/layers", base);
    if (mkdir(path, 0755) != 0) {
        aw_child_fail(fail, "mkdir %s: %s", path, strerror(errno));
    }

    /*
     * a child that never was root: a top layer of its own, or the
     * host's directories would be on top (statfs(): the host's disk)
     */
    if (!top) {
        (void) aw_layers_top(box, 1, fail);
    }

    return aw_layers(conf, box, path, fail);
}


/*
 * bwrap: the sandbox's /proc/stat, written at path.  The host's has,
 * beside the CPU lines the C library counts CPUs by (there is no /sys
 * inside), its forks since boot, context switches, interrupts line by
 * line (what /proc/interrupts, covered, says without the names),
 * softirqs, boot time and running processes, all live: read twice, they
 * tell how busy the host and the other jobs are.  This one has a line
 * for each of the host's CPUs and no time counted, and the boot time
 * ("btime", fixed; psutil's boot_time() reads it).
 */

static void
aw_proc_stat(const char *path, int fail)
{
    int       fd, n;
    char     *line, out[64];
    FILE     *f;
    size_t    cap, len;

    f = fopen("/proc/stat", "re");
    if (f == NULL) {
        aw_child_fail(fail, "/proc/stat: %s", strerror(errno));
    }

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (fd < 0) {
        aw_child_fail(fail, "%s: %s", path, strerror(errno));
    }

    line = NULL;
    cap = 0;

    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, "btime ", 6) == 0) {
            /* the boot time, fixed: /proc/uptime tells it already */
            len = strlen(line);

            if (write(fd, line, len) != (ssize_t) len) {
                aw_child_fail(fail, "%s: %s", path, strerror(errno));
            }

            continue;
        }

        if (strncmp(line, "cpu", 3) != 0) {
            continue;
        }

        len = strspn(line + 3, "0123456789");
        if (len > 8 || line[3 + len] != ' ') {
            continue;
        }

        n = snprintf(out, sizeof(out), "cpu%.*s%s 0 0 0 0 0 0 0 0 0 0\n",
                     (int) len, line + 3, len == 0 ? " " : "");

        if (n <= 0 || write(fd, out, (size_t) n) != n) {
            aw_child_fail(fail, "%s: %s", path, strerror(errno));
        }
    }

    free(line);
    fclose(f);

    if (close(fd) != 0) {
        aw_child_fail(fail, "%s: %s", path, strerror(errno));
    }
}


/*
 * bwrap: the sandbox's /proc/cpuinfo, written at path: the host's, line
 * by line, but for the fields not in aw_cpuinfo_keys (a field is its
 * name, tabs, a colon); blank lines, which end each CPU, are kept.
 */

static void
aw_proc_cpuinfo(const char *path, int fail)
{
    int       fd;
    char     *line;
    FILE     *f;
    size_t    cap, len, key, i;
    ssize_t   n;

    f = fopen("/proc/cpuinfo", "re");
    if (f == NULL) {
        aw_child_fail(fail, "/proc/cpuinfo: %s", strerror(errno));
    }

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (fd < 0) {
        aw_child_fail(fail, "%s: %s", path, strerror(errno));
    }

    line = NULL;
    cap = 0;

    while ((n = getline(&line, &cap, f)) > 0) {
        len = (size_t) n;

        if (line[0] != '\n') {
            key = strcspn(line, "\t:");

            for (i = 0; aw_cpuinfo_keys[i] != NULL; i++) {
                if (strlen(aw_cpuinfo_keys[i]) == key
                    && strncmp(aw_cpuinfo_keys[i], line, key) == 0)
                {
                    break;
                }
            }

            if (aw_cpuinfo_keys[i] == NULL) {
                continue;
            }
        }

        if (write(fd, line, len) != (ssize_t) len) {
            aw_child_fail(fail, "%s: %s", path, strerror(errno));
        }
    }

    free(line);
    fclose(f);

    if (close(fd) != 0) {
        aw_child_fail(fail, "%s: %s", path, strerror(errno));
    }
}


/*
 * bwrap: the sandbox's /proc/meminfo (aw_meminfo), written at path.
 * The host's is its memory, live: what is free, cached, dirty and under
 * writeback, which another job moves at will, and a MemTotal no job may
 * use.  This one's MemTotal is what the job's cgroup allows, as
 * gVisor's sentry shows it, and MemFree and MemAvailable the job's
 * memory_mb.
 */

static void
aw_proc_meminfo(const char *path, long total_mb, long free_mb, int fail)
{
    int     n;
    char    buf[2048];
    long    v;
    size_t  i, len;

    len = 0;

    for (i = 0; i < AW_NMEMINFO; i++) {
        switch (aw_meminfo[i].val) {
        case 'T':
            v = total_mb << 10;
            break;
        case 'F':
            v = free_mb << 10;
            break;
        case 'U':
            v = (total_mb - free_mb) << 10;
            break;
        default:
            v = 0;
        }

        /* the kernel's layout: the name and colon in 16, the kB in 8 */
        n = snprintf(buf + len, sizeof(buf) - len, "%s:%*s%8ld kB\n",
                     aw_meminfo[i].name,
                     (int) (15 - strlen(aw_meminfo[i].name)), "", v);
        if (n <= 0 || (size_t) n >= sizeof(buf) - len) {
            aw_child_fail(fail, "%s: too long", path);
        }

        len += (size_t) n;
    }

    aw_proc_file(path, buf, len, fail);
}


/*
 * bwrap: the sandbox's /proc/uptime, written at path: the host's
 * uptime at the job's start (what CLOCK_BOOTTIME and sysinfo() tell
 * the sandbox anyway, and its processes' start times in /proc/<pid>/stat
 * count from the host's boot) and no idle time.  The host's idle time
 * is its CPUs', live: read twice, it tells how busy the host is.
 */

static void
aw_proc_uptime(const char *path, int fail)
{
    int              n;
    char             buf[64];
    struct timespec  ts;

    if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0) {
        aw_child_fail(fail, "clock_gettime: %s", strerror(errno));
    }

    n = snprintf(buf, sizeof(buf), "%lld.%02ld 0.00\n",
                 (long long) ts.tv_sec, ts.tv_nsec / 10000000);
    if (n <= 0 || (size_t) n >= sizeof(buf)) {
        aw_child_fail(fail, "%s: too long", path);
    }

    aw_proc_file(path, buf, (size_t) n, fail);
}


/* bwrap: a read-only file at path that holds text */

static void
aw_proc_file(const char *path, const char *text, size_t len, int fail)
{
    int  fd;

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (fd < 0 || write(fd, text, len) != (ssize_t) len || close(fd) != 0) {
        aw_child_fail(fail, "%s: %s", path, strerror(errno));
    }
}


/*
 * In the child, just before the exec: the runtime gets SIGKILL when its
 * parent, the keeper, dies, and the keeper when the worker dies
 * (aw_keeper()).  A runtime that outlived them would run its sandbox
 * on, unwatched, until a worker started again on the workdir.  `runsc
 * run` takes its sandbox and gofer with it (it starts them attached,
 * with their own parent-death signal); bwrap's --die-with-parent does
 * the same inside.  Set after any change of credentials, which clears
 * it; a parent that died before this ends the child here.
 */

static void
aw_die_with_parent(pid_t parent, int fail)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
        aw_child_fail(fail, "the worker went away");
    }
}


/*
 * The keeper: a child of the worker that starts the runtime as its own
 * child and holds the job to its limits, the wall time from start and
 * the job cgroup's CPU time, read every AW_KEEP_MS.  The worker itself
 * only reads the output: a worker that is stopped (SIGSTOP) or hung no
 * longer leaves a sandbox unbounded, which, under gVisor, nothing else
 * ended (Debian 12's runsc does not enforce the bundle's RLIMIT_CPU),
 * nor, under bwrap, a script that starts a new busy process before each
 * reaches its RLIMIT_CPU (a per-process limit).  It dies with the worker
 * and the runtime with it, so a killed worker still takes its sandbox
 * along.  When the runtime is gone it writes an aw_report_t on the
 * report pipe and exits.  fds: the runtime's stdout, stderr, failure
 * and status pipes (-1 for none).
 */

static void
aw_keeper(const aw_conf_t *conf, const aw_job_t *job, const aw_box_t *box,
    pid_t worker, long start, const int fds[4], int report)
{
    int            i, pidfd, st;
    long           deadline, left;
    pid_t          keeper, pid, r;
    aw_report_t    rep;
    struct pollfd  pfd;

    /*
     * The worker's SIGTERM ends the job in hand first: not the keeper;
     * nor does a stop of the worker's process group (a terminal's ^Z)
     * stop it
     */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    setsid();

    aw_die_with_parent(worker, fds[2]);

    keeper = getpid();
    pid = fork();
    if (pid < 0) {
        aw_child_fail(fds[2], "fork: %s", strerror(errno));
    }

    if (pid == 0) {
        aw_runtime_exec(conf, job, box, keeper, fds[0], fds[1], fds[2],
                        fds[3]);
    }

    /* nothing of the worker's stays open here: only the report pipe */

    for (i = 0; i < 4; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }

    (void) close_range(3, (unsigned) report - 1, 0);
    (void) close_range((unsigned) report + 1, ~0U, 0);

    pidfd = pidfd_open(pid, 0);
    deadline = start + job->limits.wall_ms;
    rep.end = AW_END_RAN;
    st = 0;

    for ( ;; ) {
        r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            break;
        }

        left = deadline - aw_now_ms();
        if (left <= 0) {
            rep.end = AW_END_WALL;
            break;
        }

        if (aw_cpu_spent(aw_cg_cpu_ms(box), job->limits.cpu_ms)) {
            rep.end = AW_END_CPU;
            break;
        }

        /* the runtime's end wakes it at once (5 ms polls without pidfd) */

        pfd.fd = pidfd;
        pfd.events = POLLIN;
        pfd.revents = 0;

        if (pidfd < 0 && left > 5) {
            left = 5;
        }

        (void) poll(&pfd, pidfd >= 0 ? 1 : 0,
                    (int) (left < AW_KEEP_MS ? left : AW_KEEP_MS));
    }

    if (rep.end != AW_END_RAN) {
        if (conf->backend == AW_BACKEND_GVISOR) {
            aw_runsc_delete(conf, box->slot, 1);
        }

        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) { }
    }

    rep.status = st;
    (void) !write(report, &rep, sizeof(rep));

    _exit(0);
}


/*
 * In the child, before the exec: why the runtime could not be started,
 * on the failure pipe, whose write end the exec closes.  The worker
 * tells a sandbox that did not start by what it finds there, never by
 * an exit code, which the script is free to choose (125 and 127 were
 * such codes).
 */

static void
aw_child_fail(int fail, const char *fmt, ...)
{
    int      n;
    char     buf[256];
    va_list  ap;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);

    if (n > 0) {
        (void) !write(fail, buf, (size_t) n < sizeof(buf) ? (size_t) n
                                                          : sizeof(buf) - 1);
    }

    _exit(125);
}


/*
 * In the worker, once the runtime is gone: what the child wrote on the
 * failure pipe, as a string ("" when the exec succeeded)
 */

static void
aw_child_failure(int fd, char *buf, size_t size)
{
    ssize_t  n;
    size_t   len;

    len = 0;

    while (len < size - 1) {
        n = read(fd, buf + len, size - 1 - len);
        if (n > 0) {
            len += (size_t) n;
            continue;
        }

        if (n < 0 && errno == EINTR) {
            continue;
        }

        break;
    }

    buf[len] = '\0';
}


/* In the child: become the runtime.  Never returns. */

static void
aw_runtime_exec(const aw_conf_t *conf, const aw_job_t *job,
    const aw_box_t *box, pid_t keeper, int out, int err, int fail,
    int status)
{
    int            fd, own_dev, own_top;
    char           root[2304], code[2304], data[2304], uid[32], nproc[32];
    char           runsc_root[2304], platform[64], log[2304];
    char           layers[2304];
    char           empty[2304], scratch[2304], tmp[2304], shm[2304];
    char           null[2304], dev[2304], own[AW_NPROC_OWN][2304];
    char           own_dst[AW_NPROC_OWN][32];
    char           sys[AW_NPROC_SYS_DIRS][2304];
    int            sp[2];
    long           cpu_s;
    size_t         nf, i;
    struct rlimit  rl;
    aw_bwrap_argv_t  a;
    struct sock_filter  filter[128];

    fd = open("/dev/null", O_RDONLY);
    if (fd < 0 || dup2(fd, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) {
        aw_child_fail(fail, "cannot set up the runtime's standard streams");
    }

    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    setsid();

    if (conf->backend == AW_BACKEND_GVISOR) {
        snprintf(runsc_root, sizeof(runsc_root), "--root=%s/runsc",
                 conf->workdir);
        snprintf(platform, sizeof(platform), "--platform=%s",
                 conf->platform);
        snprintf(root, sizeof(root), "--bundle=%s", box->dir);
        snprintf(log, sizeof(log), "--debug-log=%s/" AW_RUNSC_LOG,
                 box->dir);

        /*
         * The root, code and data the bundle names: overlays under an
         * empty top layer (aw_layers()), whose numbers the gofer's
         * fstatfs() answers, in a mount namespace of the child's own,
         * which runsc's gofer copies and nothing of which reaches the
         * host's mounts
         */
        snprintf(layers, sizeof(layers), "%s/layers", box->dir);
        if (unshare(CLONE_NEWNS) != 0
            || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        {
            aw_child_fail(fail, "a mount namespace for runsc: %s",
                          strerror(errno));
        }

        (void) aw_layers_top(box, 0, fail);
        (void) aw_layers(conf, box, layers, fail);

        /*
         * Nothing of the worker's (the Redis connection) goes along: all
         * closed by the exec, the failure pipe's too
         */
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
            aw_child_fail(fail, "close_range: %s", strerror(errno));
        }

        aw_die_with_parent(keeper, fail);
        execle(conf->runsc, "runsc", runsc_root, platform, "--network=none",
               "--oci-seccomp", log, "--debug-command=run", "run", root,
               box->slot, (char *) NULL, aw_runtime_env);
        aw_child_fail(fail, "exec %s: %s", conf->runsc, strerror(errno));
    }

    /* bwrap: in the job's cgroup, with rlimits, as the sandbox user */

    if (aw_cg_join(box, getpid()) != 0) {
        aw_child_fail(fail, "cannot join the job's cgroup");
    }

    cpu_s = aw_rlimit_cpu(job->limits.cpu_ms);
    rl.rlim_cur = (rlim_t) cpu_s;
    rl.rlim_max = (rlim_t) cpu_s;
    setrlimit(RLIMIT_CPU, &rl);
    rl.rlim_cur = rl.rlim_max = 0;
    setrlimit(RLIMIT_CORE, &rl);
    rl.rlim_cur = rl.rlim_max = 256;
    setrlimit(RLIMIT_NOFILE, &rl);

    /*
     * A proc of its own under bwrap's.  The unit's ProtectKernelTunables=
     * and ProtectKernelLogs= mount over parts of its /proc, and the
     * kernel mounts no new proc in a user namespace (bwrap's --proc)
     * where every proc it could show is partly covered: every job failed
     * "Can't mount proc on /newroot/proc: Operation not permitted".  So
     * the child, while root, takes a mount namespace of its own and mounts
     * a fresh proc over /proc there, with nothing on it; the unit's /proc
     * stays as it is.  Inside, bwrap makes sys, sysrq-trigger, irq and
     * bus read-only, and aw_proc_cover() empties all but aw_proc_shown.
     */

    if (getuid() == 0
        && (unshare(CLONE_NEWNS) != 0
            || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0
            || mount("proc", "/proc", "proc",
                     MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0))
    {
        aw_child_fail(fail, "a proc for bwrap: %s", strerror(errno));
    }

    /* the sandbox's /dev, of its own (root makes device nodes) */

    own_dev = getuid() == 0 && aw_bwrap_dev(box, 0, fail) == 0;

    /* the top of the sandbox's layers, owned by root (aw_layers()) */

    own_top = getuid() == 0 && aw_layers_top(box, 0, fail) == 0;

    /* this worker's own host uid (aw_sandbox_lease()), sandbox_uid inside */

    if (getuid() == 0
        && (setgroups(0, NULL) != 0
            || setgid((gid_t) conf->host_uid) != 0
            || setuid((uid_t) conf->host_uid) != 0))
    {
        aw_child_fail(fail, "cannot switch to uid %ld: %s",
                      conf->host_uid, strerror(errno));
    }

    /*
     * The seccomp program, on a pipe bwrap reads as fd 3; the status
     * pipe, which bwrap passes on to the init, as AW_STATUS_FD
     */

    nf = aw_seccomp_program(filter, sizeof(filter) / sizeof(filter[0]));
    if (nf == 0 || pipe(sp) != 0
        || write(sp[1], filter, nf * sizeof(filter[0]))
           != (ssize_t) (nf * sizeof(filter[0]))
        || close(sp[1]) != 0 || dup2(sp[0], 3) != 3)
    {
        aw_child_fail(fail, "cannot pass the seccomp program");
    }

    if (dup2(status, AW_STATUS_FD) != AW_STATUS_FD) {
        aw_child_fail(fail, "cannot pass the status pipe");
    }

    if (close_range(AW_STATUS_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        aw_child_fail(fail, "close_range: %s", strerror(errno));
    }

    snprintf(empty, sizeof(empty), "%s/empty/void", box->dir);
    snprintf(scratch, sizeof(scratch), "%s/empty/scratch", box->dir);
    snprintf(tmp, sizeof(tmp), "%s/empty/tmp", box->dir);
    snprintf(shm, sizeof(shm), "%s/empty/shm", box->dir);
    snprintf(null, sizeof(null), "%s/empty/null", box->dir);
    snprintf(dev, sizeof(dev), "%s/dev", box->dir);

    for (i = 0; i < AW_NPROC_OWN; i++) {
        snprintf(own[i], sizeof(own[i]), "%s/empty/%s", box->dir,
                 aw_proc_own[i]);
        snprintf(own_dst[i], sizeof(own_dst[i]), "/proc/%s",
                 aw_proc_own[i]);
    }

    for (i = 0; i < AW_NPROC_SYS_DIRS; i++) {
        snprintf(sys[i], sizeof(sys[i]), "%s/empty/%s", box->dir,
                 strrchr(aw_proc_sys_dirs[i], '/') + 1);
    }

    snprintf(uid, sizeof(uid), "%ld", conf->sandbox_uid);
    snprintf(nproc, sizeof(nproc), "%ld", aw_host_pids(conf, &job->limits));

    /*
     * The environment bwrap itself gets matters as much as the one it
     * sets: its own processes are visible inside (/proc/<pid>/environ).
     * --as-pid-1 leaves none of them in the sandbox's pid namespace:
     * pid 1 is the init, aw_bwrap_init, with the environment set here.
     * The writable places are aw_bwrap_mounts()'s, and so are the
     * covers of /proc (aw_proc_cover(), aw_proc_sys_cover()), after
     * --proc.
     * /dev is aw_bwrap_dev()'s, read-only, with the bounded /dev/shm
     * on it; no devpts, so no pty.  Under a worker without CAP_MKNOD
     * (not root; the unit's PrivateDevices=) its nodes are the worker's,
     * bound on it, as bwrap's --dev would, whose own tmpfs had no bound
     * and whose devpts's ptys counted against kernel.pty.max for the
     * whole host.
     */
    (void) aw_bwrap_mounts(conf, job, box, own_top, fail);

    /* no device node made: the worker's bound in, in the user namespace */

    if (!own_dev) {
        (void) aw_bwrap_dev(box, 1, fail);
    }

    /*
     * root, code and data as overlays: no host path, device or options
     * (each the host's directory bound where the kernel refused one)
     */

    snprintf(root, sizeof(root), "%s/empty/layers/root", box->dir);
    snprintf(code, sizeof(code), "%s/empty/layers/code", box->dir);
    snprintf(data, sizeof(data), "%s/empty/layers/data", box->dir);

    {
        const char  *head[] = {
            "bwrap",
            "--unshare-all", "--unshare-user", "--disable-userns",
            "--as-pid-1",
            "--uid", uid, "--gid", uid,
            "--die-with-parent", "--new-session",
            "--ro-bind", root, "/",
            "--ro-bind", code, "/app/code",
            "--ro-bind", data, "/app/data",
            "--bind", scratch, "/scratch",
            "--bind", tmp, "/tmp",
            "--proc", "/proc" };
        const char  *tail[] = {
            "--hostname", "sandbox",
            "--cap-drop", "ALL", "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin",
            "--chdir", "/scratch", "--seccomp", "3",
            "--", "/usr/bin/python3", "-I", "-S", "-c", aw_bwrap_init,
            nproc, NULL };

        a.na = 0;
        a.np = 0;
        for (i = 0; i < sizeof(head) / sizeof(head[0]); i++) {
            a.av[a.na++] = head[i];
        }

        aw_bwrap_args(&a, "--dev-bind", dev, "/dev", fail);
        aw_bwrap_args(&a, "--bind", shm, "/dev/shm", fail);

        aw_proc_cover(&a, "/proc", aw_proc_shown, empty, null, fail);

        for (i = 0; i < AW_NPROC_OWN; i++) {
            aw_bwrap_args(&a, "--ro-bind", own[i], own_dst[i], fail);
        }

        aw_proc_cover(&a, "/proc/sys", aw_proc_sys_shown, empty, null,
                      fail);

        aw_proc_sys_cover(&a, (const char (*)[2304]) sys, fail);

        if (a.na + sizeof(tail) / sizeof(tail[0]) > AW_BWRAP_ARGS) {
            aw_child_fail(fail, "too many arguments for bwrap");
        }

        for (i = 0; i < sizeof(tail) / sizeof(tail[0]); i++) {
            a.av[a.na++] = tail[i];
        }
    }

    aw_die_with_parent(keeper, fail);
    execve(conf->bwrap, (char *const *) a.av, aw_runtime_env);
    aw_child_fail(fail, "exec %s: %s", conf->bwrap, strerror(errno));
}


/*
 * bwrap: covers each entry of the directory dir of the host's /proc (the
 * same kernel's, so the same entries but the pid directories) that is
 * neither a pid directory nor in shown: a directory with the empty one,
 * a file with the empty file, read-only.  A link is left: it leads into
 * /proc, where what it names is shown or covered.  A directory the
 * worker cannot read (its /proc mounted subset=pid: no sys) fails the
 * job's start, and bwrap refuses such a /proc anyway.  It reads at each
 * job's start, not once: a module loaded later adds entries (sunrpc's
 * /proc/sys/sunrpc when the host first mounts NFS, md's /proc/mdstat),
 * which a list made earlier would leave shown until the worker
 * restarts; and the reading is cheap, 10 system calls (two of openat,
 * fstat, getdents64 twice, close) of some 3000 a job start makes.
 */

static void
aw_proc_cover(aw_bwrap_argv_t *a, const char *dir, const char *const *shown,
    const char *empty, const char *null, int fail)
{
    int             n;
    DIR            *d;
    char           *path;
    unsigned char   type;
    size_t          i;
    struct stat     st;
    const char     *name;
    struct dirent  *de;

    d = opendir(dir);
    if (d == NULL) {
        aw_child_fail(fail, "%s: %s", dir, strerror(errno));
    }

    while ((de = readdir(d)) != NULL) {
        name = de->d_name;

        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0
            || name[strspn(name, "0123456789")] == '\0')
        {
            continue;
        }

        for (i = 0; shown[i] != NULL; i++) {
            if (strcmp(shown[i], name) == 0) {
                break;
            }
        }

        if (shown[i] != NULL) {
            continue;
        }

        if (a->np == AW_PROC_COVERS) {
            aw_child_fail(fail, "%s: more than %d entries to cover", dir,
                          AW_PROC_COVERS);
        }

        path = a->path[a->np];
        n = snprintf(path, sizeof(a->path[0]), "%s/%s", dir, name);
        if (n < 0 || (size_t) n >= sizeof(a->path[0])) {
            aw_child_fail(fail, "%s: a name too long to cover", dir);
        }

        /* the entry's own type (readdir's), not that of a mount on it */
        type = de->d_type;
        if (type == DT_UNKNOWN) {
            if (lstat(path, &st) != 0) {
                continue;
            }

            type = S_ISDIR(st.st_mode) ? DT_DIR
                   : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
        }

        if (type != DT_DIR && type != DT_REG) {
            continue;
        }

        a->np++;
        aw_bwrap_cover(a, type == DT_DIR ? empty : null, path, fail);
    }

    closedir(d);
}


static void
aw_bwrap_cover(aw_bwrap_argv_t *a, const char *cover, const char *path,
    int fail)
{
    aw_bwrap_args(a, "--ro-bind", cover, path, fail);
}


/*
 * bwrap: /proc/sys/kernel and /proc/sys/vm become read-only directories
 * with only aw_proc_sys_files in them, bound from the host's /proc/sys
 * (a sysctl is read for the namespaces of the process that reads it:
 * the sandbox's).  A file the kernel does not have is left out.  The
 * directories are aw_bwrap_mounts()'s (dirs), on its bounded tmpfs:
 * bwrap's --tmpfs has no inode bound (--size sets only the size), and
 * a tmpfs's default size and inode count are half the host's memory,
 * which statvfs() told.
 */

static void
aw_proc_sys_cover(aw_bwrap_argv_t *a, const char (*dirs)[2304], int fail)
{
    size_t       i;
    struct stat  st;

    for (i = 0; i < AW_NPROC_SYS_DIRS; i++) {
        aw_bwrap_args(a, "--bind", dirs[i], aw_proc_sys_dirs[i], fail);
    }

    for (i = 0; i < AW_NPROC_SYS_FILES; i++) {
        if (lstat(aw_proc_sys_files[i], &st) != 0
            || !S_ISREG(st.st_mode))
        {
            continue;
        }

        aw_bwrap_args(a, "--ro-bind", aw_proc_sys_files[i],
                      aw_proc_sys_files[i], fail);
    }

    for (i = 0; i < AW_NPROC_SYS_DIRS; i++) {
        aw_bwrap_args(a, "--remount-ro", aw_proc_sys_dirs[i], NULL, fail);
    }
}


/* bwrap: one option with its one or two arguments (dst NULL: one) */

static void
aw_bwrap_args(aw_bwrap_argv_t *a, const char *op, const char *src,
    const char *dst, int fail)
{
    if (a->na + 3 > AW_BWRAP_ARGS) {
        aw_child_fail(fail, "too many arguments for bwrap");
    }

    a->av[a->na++] = op;
    a->av[a->na++] = src;

    if (dst != NULL) {
        a->av[a->na++] = dst;
    }
}


/* Runs a helper command (runsc kill/delete) to completion, bounded. */

static int
aw_run_cmd(char *const argv[], long timeout_ms)
{
    int    st, fd;
    long   deadline;
    pid_t  pid, r;

    pid = fork();
    if (pid < 0) {
        return -1;
    }

    if (pid == 0) {
        fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(argv[0], argv);
        _exit(127);
    }

    deadline = aw_now_ms() + timeout_ms;

    for ( ;; ) {
        r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }

        if (r < 0 && errno != EINTR) {
            return -1;
        }

        if (aw_now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }

        usleep(2000);
    }
}


static void
aw_runsc_delete(const aw_conf_t *conf, const char *slot, int kill_first)
{
    char   root[2304];
    char  *kill_argv[] = { conf->runsc, root, "kill", (char *) slot,
                           "KILL", NULL };
    char  *del_argv[] = { conf->runsc, root, "delete", "-force",
                          (char *) slot, NULL };

    snprintf(root, sizeof(root), "--root=%s/runsc", conf->workdir);

    if (kill_first) {
        (void) aw_run_cmd(kill_argv, 10000);
    }

    (void) aw_run_cmd(del_argv, 10000);
}


/*
 * runsc's files for a sandbox whose processes are gone, in its state
 * directory (<workdir>/runsc): <slot>_sandbox:<slot>.state and .lock,
 * removed without runsc.  The state names the sandbox's and the
 * gofer's pids, and `runsc delete` (and `kill`) send SIGKILL to them
 * whatever process has them now: after a crash or a reboot they are free
 * and reused.  What of a sandbox was still alive is found by its
 * cgroups, which the kernel keeps exact (aw_cg_destroy()), before this.
 *
 * slot NULL: the files of every slot whose worker is gone, with or
 * without its job directory (a directory went while the state stayed
 * when a `runsc delete` failed, before this), once the slots' cgroups
 * are emptied.
 */

static void
aw_runsc_forget(const aw_conf_t *conf, const char *slot)
{
    DIR            *d;
    char            path[2304], name[64], *us;
    pid_t           pid;
    size_t          len;
    struct dirent  *e;

    snprintf(path, sizeof(path), "%s/runsc", conf->workdir);

    d = opendir(path);
    if (d == NULL) {
        return;
    }

    while ((e = readdir(d)) != NULL) {
        us = strstr(e->d_name, "_sandbox:");
        if (strncmp(e->d_name, "aw-", 3) != 0 || us == NULL) {
            continue;
        }

        len = (size_t) (us - e->d_name);
        if (len >= sizeof(name)) {
            continue;
        }

        memcpy(name, e->d_name, len);
        name[len] = '\0';

        /* <slot>_sandbox:<slot>.state: the container is the sandbox */
        us += sizeof("_sandbox:") - 1;

        if (strncmp(us, name, len) != 0 || us[len] != '.') {
            continue;
        }

        if (slot != NULL) {
            if (strcmp(name, slot) != 0) {
                continue;
            }

        } else if (aw_owner_alive(name, &pid) != 0) {
            continue;

        } else if (strcmp(us + len, ".state") == 0) {
            aw_log("notice", "removing runsc state of %s, left by worker %d",
                   name, (int) pid);
        }

        snprintf(path, sizeof(path), "%s/runsc/%s", conf->workdir,
                 e->d_name);

        if (unlink(path) != 0 && errno != ENOENT) {
            aw_log("alert", "cannot remove %s: %s", path, strerror(errno));
        }
    }

    closedir(d);
}


static void
aw_box_teardown(const aw_conf_t *conf, aw_box_t *box, int killed)
{
    char  state[2304];
    struct stat  st;

    aw_cg_destroy(box);

    if (box->slot[0] != '\0') {
        aw_cg_sweep(conf, box->slot);
    }

    /*
     * `runsc run` deletes what it ran, and the keeper what it killed.
     * State left (the keeper died, and `runsc run` with it) names the
     * sandbox's and gofer's pids, which `runsc delete` would SIGKILL
     * whoever holds them now: what was still in the job's cgroups is
     * dead (above), and the state files are only removed.
     */
    if (conf->backend == AW_BACKEND_GVISOR && box->slot[0] != '\0') {
        snprintf(state, sizeof(state), "%s/runsc/%s_sandbox:%s.state",
                 conf->workdir, box->slot, box->slot);
        if (killed || stat(state, &st) == 0) {
            aw_runsc_forget(conf, box->slot);
        }
    }

    if (box->in[0] != '\0' && aw_rmtree(box->in) != 0) {
        aw_log("alert", "cannot remove %s: %s", box->in, strerror(errno));
    }

    if (box->dir[0] != '\0' && aw_rmtree(box->dir) != 0) {
        aw_log("alert", "cannot remove %s: %s", box->dir, strerror(errno));
    }
}


/*
 * The directory of a job's code/ and data/, by its slot's name:
 * <workdir>/in/<n> for aw-<pid>-<start>-<n>, named by the random
 * number alone (aw_box_prepare()).  -1 for a name of another form (the
 * old aw-<pid>-<n> held its code and data in the job's directory).
 */

static int
aw_box_in(const aw_conf_t *conf, const char *slot, char *buf, size_t n)
{
    int                 pid, len, k;
    unsigned long       nonce;
    unsigned long long  start;

    len = 0;

    if (sscanf(slot, "aw-%d-%llu-%lu%n", &pid, &start, &nonce, &len) != 3
        || slot[len] != '\0')
    {
        errno = EINVAL;
        return -1;
    }

    k = snprintf(buf, n, "%s/in/%lu", conf->workdir, nonce);
    if (k < 0 || (size_t) k >= n) {
        errno = ENAMETOOLONG;
        return -1;
    }

    return 0;
}


static void
aw_stream_read(aw_stream_t *s)
{
    char     tmp[16384];
    size_t   keep;
    ssize_t  n;

    n = read(s->fd, tmp, sizeof(tmp));

    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }

    if (n <= 0) {
        close(s->fd);
        s->fd = -1;
        return;
    }

    keep = (size_t) n;
    if (s->len + keep > s->max) {
        keep = s->max - s->len;
        s->trunc = 1;
    }

    if (keep > 0) {
        memcpy(s->buf + s->len, tmp, keep);
        s->len += keep;
    }
}


/*
 * Whether the worker that made a job directory is still running, by the
 * directory's name: aw-<pid>-<start>-<n>.  The pid alone would keep a
 * dead worker's directory for as long as another process has that pid
 * (pids are reused; the start time is not).  1 for alive, 0 for gone,
 * -1 for a name that is not a job directory's.  A name of the old form,
 * aw-<pid>-<n>, is a live worker's only while its pid is an
 * airlock-worker.  Our own pid is ours: this runs before any job.
 */

static int
aw_owner_alive(const char *name, pid_t *owner)
{
    int                 pid, len, fd;
    char                path[64], comm[32];
    ssize_t             k;
    unsigned long       seq;
    unsigned long long  start, now;

    len = 0;

    if (sscanf(name, "aw-%d-%llu-%lu%n", &pid, &start, &seq, &len) == 3
        && name[len] == '\0' && pid > 0)
    {
        *owner = pid;

        if (pid == getpid()) {
            return 0;
        }

        now = al_proc_started(pid, 0);

        return now != 0 && now == start;
    }

    len = 0;

    if (sscanf(name, "aw-%d-%lu%n", &pid, &seq, &len) != 2
        || name[len] != '\0' || pid <= 0)
    {
        return -1;
    }

    *owner = pid;

    if (pid == getpid()) {
        return 0;
    }

    snprintf(path, sizeof(path), "/proc/%d/comm", pid);

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }

    k = read(fd, comm, sizeof(comm) - 1);
    close(fd);

    if (k <= 0) {
        return 0;
    }

    comm[k] = '\0';

    return strcmp(comm, "airlock-worker\n") == 0;
}


/*
 * The last wait status in buf, at the end of a line after prefix
 * ("...<prefix>35072\n", or the end of buf): 0 with *status set, or -1
 * when there is none.  A status is at most 0xffff.
 */

static int
aw_status_parse(const char *buf, const char *prefix, int *status)
{
    int          found;
    long         v;
    char        *end;
    size_t       plen;
    const char  *p, *q;

    found = -1;
    plen = strlen(prefix);

    for (p = buf; (q = strstr(p, prefix)) != NULL; p = q + 1) {
        if (q[plen] < '0' || q[plen] > '9') {
            continue;
        }

        errno = 0;
        v = strtol(q + plen, &end, 10);

        if (errno == 0 && v <= 0xffff && (*end == '\n' || *end == '\0')) {
            *status = (int) v;
            found = 0;
        }
    }

    return found;
}


/*
 * The script's wait status as `runsc run` logged it just before it
 * exited: 0 with *status set, or -1 when the log has no such line (runsc
 * was killed, or failed before the container ran).  runsc writes the
 * line last; the tail of the file is enough.  *lost is set when runsc
 * logged that the sandbox was gone (AW_RUNSC_LOST): the status is then
 * the sentry's, not the script's.
 */

static int
aw_runsc_status(const aw_box_t *box, int *status, int *lost)
{
    int      fd;
    char     path[2304], buf[4097];
    off_t    size;
    ssize_t  n;

    *lost = 0;

    snprintf(path, sizeof(path), "%s/" AW_RUNSC_LOG, box->dir);

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return -1;
    }

    size = lseek(fd, 0, SEEK_END);
    n = -1;

    if (size >= 0
        && lseek(fd, size > 4096 ? size - 4096 : 0, SEEK_SET) >= 0)
    {
        n = read(fd, buf, sizeof(buf) - 1);
    }

    close(fd);

    if (n <= 0) {
        return -1;
    }

    buf[n] = '\0';

    *lost = memmem(buf, (size_t) n, AW_RUNSC_LOST,
                   sizeof(AW_RUNSC_LOST) - 1) != NULL;

    return aw_status_parse(buf, AW_RUNSC_EXITING, status);
}


/*
 * The script's wait status as bwrap's init reported it on the status
 * pipe (fd, non-blocking, every writer gone): 0 with *status set, or -1
 * when it reported none (the sandbox was killed, or the init could not
 * start the script).  The init's line is the last thing written; what
 * came before is read and dropped (a script could make the init write
 * anything there through its memory while the init was dumpable; the
 * pipe itself, the worker's, is not the sandbox user's to open through
 * /proc/1/fd).
 */

static int
aw_init_status(int fd, int *status)
{
    char     chunk[4096], tail[64], line[sizeof(tail) + 1];
    size_t   tl, keep, i;
    ssize_t  n;

    tl = 0;

    for ( ;; ) {
        n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR) {
            continue;
        }

        if (n <= 0) {
            break;
        }

        /* the stream's last sizeof(tail) bytes */

        if ((size_t) n >= sizeof(tail)) {
            memcpy(tail, chunk + n - sizeof(tail), sizeof(tail));
            tl = sizeof(tail);
            continue;
        }

        keep = tl < sizeof(tail) - (size_t) n ? tl
                                               : sizeof(tail) - (size_t) n;
        memmove(tail, tail + tl - keep, keep);
        memcpy(tail + keep, chunk, (size_t) n);
        tl = keep + (size_t) n;
    }

    if (tl == 0 || tail[tl - 1] != '\n') {
        return -1;
    }

    for (i = tl - 1; i > 0 && tail[i - 1] != '\n'; i--) { }

    if (i == 0 && tl == sizeof(tail)) {
        /* longer than any status line */
        return -1;
    }

    memcpy(line, tail + i, tl - i);
    line[tl - i] = '\0';

    if (strncmp(line, AW_STATUS_LINE, sizeof(AW_STATUS_LINE) - 1) != 0) {
        return -1;
    }

    return aw_status_parse(line, AW_STATUS_LINE, status);
}


/*
 * The signal the script died of, 0 when it exited; *code is its exit
 * code as the result reports it (128 + N for signal N).  Both runtimes
 * fold a signal into the exit code 128 + N, a code any script can also
 * choose, so the code alone does not say; each tells the script's real
 * wait status on the side, ws when rc is 0:
 *
 *   gvisor  runsc logs it (aw_runsc_status(), read by the launcher);
 *   bwrap   the sandbox's init reports it on the status pipe
 *           (aw_init_status(), read by the worker: the sandbox can
 *           write there too).
 *
 * A runtime that died itself was signalled in the keeper's waitpid().
 * With no status reported (the sandbox was killed: the caller tells the
 * keeper's kills and the OOM killer's apart) a code above 128 is taken
 * for a signal, with a warn.
 */

static int
aw_end_signal(const aw_conf_t *conf, const char *slot, int st, int rc,
    int ws, int *code)
{
    if (WIFSIGNALED(st)) {
        /* the runtime itself died of it */
        *code = 128 + WTERMSIG(st);
        return WTERMSIG(st);
    }

    *code = WEXITSTATUS(st);

    if (rc != 0) {
        if (*code > 128) {
            aw_log("warn", "%s: %s reported no wait status; exit code %d "
                   "taken for signal %d", slot,
                   conf->backend == AW_BACKEND_GVISOR ? "runsc"
                                                      : "the sandbox's init",
                   *code, *code - 128);
            return *code - 128;
        }
        return 0;
    }

    if (WIFSIGNALED(ws)) {
        *code = 128 + WTERMSIG(ws);
        return WTERMSIG(ws);
    }

    *code = WEXITSTATUS(ws);
    return 0;
}


/*
 * Whether the job's cgroup has used up its CPU time (cpu of limit, in
 * ms): the keeper's test, and the worker's for a script that died of
 * SIGXCPU or SIGKILL.  RLIMIT_CPU (aw_rlimit_cpu()) is set so far above
 * the limit that while the keeper runs its poll always comes first, so
 * such a signal with the cgroup under the limit is never the limit's:
 * it is the script's own (a kill(), a lower limit of its own) or
 * another's.  One with the cgroup over it came after the time was used
 * up: RLIMIT_CPU's, with the keeper stopped, or the script's own in the
 * moment before the keeper's next read.
 */

static int
aw_cpu_spent(long cpu, long limit)
{
    return cpu > limit;
}


/*
 * RLIMIT_CPU, soft and hard, in seconds, for a limit of cpu_ms: a
 * backstop for a keeper that is stopped, never the limit itself.  The
 * clock the kernel keeps for it (ticks) runs ahead of the cgroup's (a
 * 1 s limit's SIGXCPU came with 964 ms in the cgroup under bwrap, 860 ms
 * under gVisor for a limit set inside), which made its signals indistinct
 * from a script's own: twice the limit and a second more is beyond any
 * such lead and the keeper's 200 ms between reads.  Soft and hard alike:
 * the kernel sends SIGKILL at the hard limit and no SIGXCPU before it.
 */

static long
aw_rlimit_cpu(long cpu_ms)
{
    return 2 * ((cpu_ms + 999) / 1000) + 1;
}


/*
 * The launcher's part of a job (aw_priv_serve()): the job's directory,
 * from the script and data descriptors the worker passed (closed once
 * copied, -1 in fds), and its cgroup; the keeper and the runtime, on
 * the worker's stdout, stderr and status pipes; then the teardown.  It
 * waits for the keeper's report, or for the worker's end of sock to
 * close (the keeper is then killed, and the sandbox with it), and fills
 * rep with what it saw of the runtime and the cgroup.  What the sandbox
 * writes it never reads: the worker does (aw_sandbox_run()).
 */

void
aw_sandbox_launch(const aw_conf_t *conf, const aw_limits_t *lim,
    int fds[AW_LAUNCH_NFDS], int sock, aw_launch_rep_t *rep)
{
    int            p[2][2], kfds[4], io[3], st, i, fd, npipes, killed;
    int            ws, lost, watch;
    char           err[AW_ERRLEN];
    long           t0, t1;
    pid_t          pid, launcher;
    ssize_t        n;
    aw_box_t       box;
    aw_job_t       job;
    aw_report_t    kr;
    struct pollfd  pfd[2];

    memset(&box, 0, sizeof(box));
    memset(&job, 0, sizeof(job));
    memset(&kr, 0, sizeof(kr));
    job.limits = *lim;
    io[0] = io[1] = io[2] = -1;
    killed = 0;
    npipes = 0;

    t0 = aw_now_ms();

    i = aw_box_prepare(conf, &job, fds[0], fds[1], &box, err, sizeof(err));

    /* copied: the memory files go now, not with the job */
    close(fds[0]);
    close(fds[1]);
    fds[0] = fds[1] = -1;

    if (i != 0) {
        rep->result = AW_LAUNCH_SETUP;
        snprintf(rep->text, sizeof(rep->text), "%s", err);
        goto teardown;
    }

    /*
     * The failure pipe (aw_child_fail()) and the keeper's report, and
     * the worker's three.  Every write end is above the fds the
     * runtime's child sets up (0 to AW_STATUS_FD), so that none
     * replaces another.
     */

    for (npipes = 0; npipes < 2; npipes++) {
        if (pipe2(p[npipes], O_CLOEXEC | (npipes == 0 ? O_NONBLOCK : 0))
            != 0)
        {
            break;
        }

        fd = fcntl(p[npipes][1], F_DUPFD_CLOEXEC, 10);
        close(p[npipes][1]);
        p[npipes][1] = fd;

        if (fd < 0) {
            close(p[npipes][0]);
            break;
        }
    }

    for (i = 0; npipes == 2 && i < 3; i++) {
        io[i] = fcntl(fds[2 + i], F_DUPFD_CLOEXEC, 10);
        if (io[i] < 0) {
            break;
        }
    }

    if (npipes < 2 || i < 3) {
        rep->result = AW_LAUNCH_INTERNAL;
        snprintf(rep->text, sizeof(rep->text), "pipe: %s", strerror(errno));

        for (i = 0; i < npipes; i++) {
            close(p[i][1]);
        }
        goto teardown;
    }

    kfds[0] = io[0];
    kfds[1] = io[1];
    kfds[2] = p[0][1];
    kfds[3] = conf->backend == AW_BACKEND_BWRAP ? io[2] : -1;

    t1 = aw_now_ms();
    rep->prepare_ms = t1 - t0;

    /* the keeper (aw_keeper()) starts the runtime, holds it to the limits */

    launcher = getpid();
    pid = fork();
    if (pid == 0) {
        aw_keeper(conf, &job, &box, launcher, t1, kfds, p[1][1]);
    }

    for (i = 0; i < 3; i++) {
        close(io[i]);
        io[i] = -1;
    }

    close(p[0][1]);
    close(p[1][1]);

    if (pid < 0) {
        rep->result = AW_LAUNCH_INTERNAL;
        snprintf(rep->text, sizeof(rep->text), "fork: %s", strerror(errno));
        goto teardown;
    }

    /* the keeper's report; a worker gone meanwhile ends the job */

    watch = 1;

    for ( ;; ) {
        pfd[0].fd = p[1][0];
        pfd[0].events = POLLIN;
        pfd[0].revents = 0;
        pfd[1].fd = sock;
        pfd[1].events = 0;
        pfd[1].revents = 0;

        if (poll(pfd, watch ? 2 : 1, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }

        if (pfd[0].revents != 0) {
            break;
        }

        if (watch && (pfd[1].revents & (POLLHUP | POLLERR)) != 0) {
            aw_log("notice", "launcher: the worker is gone, ending %s",
                   box.slot);
            kill(pid, SIGKILL);
            watch = 0;
        }
    }

    do {
        n = read(p[1][0], &kr, sizeof(kr));
    } while (n < 0 && errno == EINTR);

    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) { }

    rep->run_ms = aw_now_ms() - t1;

    aw_child_failure(p[0][0], rep->text, sizeof(rep->text));

    if (n != (ssize_t) sizeof(kr)) {
        /* the keeper died, and the runtime with it */
        killed = 1;
        rep->result = AW_LAUNCH_NOREPORT;
        rep->status = st;
        goto teardown;
    }

    killed = kr.end != AW_END_RAN;

    rep->result = AW_LAUNCH_RAN;
    rep->end = kr.end;
    rep->status = kr.status;
    rep->cpu_ms = aw_cg_cpu_ms(&box);
    rep->ooms = aw_cg_oom_kills(&box);
    rep->pids_max = box.ncg == 0 ? 0
                    : aw_cg_read_key(box.cg[box.v2 ? 0 : 1], "pids.events",
                                     "max");
    rep->runsc_rc = -1;
    rep->runsc_lost = 0;

    if (conf->backend == AW_BACKEND_GVISOR) {
        ws = 0;
        lost = 0;
        rep->runsc_rc = aw_runsc_status(&box, &ws, &lost);
        rep->runsc_status = ws;
        rep->runsc_lost = lost;
    }

teardown:

    for (i = 0; i < 3; i++) {
        if (io[i] >= 0) {
            close(io[i]);
        }
    }

    for (i = 0; i < npipes; i++) {
        close(p[i][0]);
    }

    snprintf(rep->slot, sizeof(rep->slot), "%s", box.slot);

    t1 = aw_now_ms();
    aw_box_teardown(conf, &box, killed);
    rep->teardown_ms = aw_now_ms() - t1;
}


/*
 * The worker's part of a job: the script and data.json in memory files
 * and three pipes, handed to the launcher (aw_priv_send()).  The worker
 * reads stdout and stderr, bounded, until the launcher has answered
 * and the pipes have closed (at most AW_DRAIN_MS after the answer), and
 * tells the result from the answer and, under bwrap, the status pipe.
 */

void
aw_sandbox_run(const aw_conf_t *conf, const aw_job_t *job, const char *data,
    size_t data_len, aw_result_t *res)
{
    int              p[3][2], fds[AW_LAUNCH_NFDS], mf[2], i, nfd, npipes;
    int              code, sig, reported, rc, ws, timed_out, cpu_out;
    long             drain, left;
    aw_stream_t      s[2];
    aw_launch_req_t  req;
    aw_launch_rep_t  rep;
    struct pollfd    pfd[3];

    memset(s, 0, sizeof(s));
    memset(&req, 0, sizeof(req));
    memset(&rep, 0, sizeof(rep));
    s[0].fd = s[1].fd = -1;
    mf[0] = mf[1] = -1;
    npipes = 0;

    s[0].max = (size_t) job->limits.stdout_bytes;
    s[1].max = (size_t) job->limits.stderr_bytes;
    s[0].buf = malloc(s[0].max + 1);
    s[1].buf = malloc(s[1].max + 1);

    if (s[0].buf == NULL || s[1].buf == NULL) {
        aw_result_fail(res, AW_ST_ERROR, "internal", "out of resources");
        goto done;
    }

    mf[0] = memfd_create("script.py", MFD_CLOEXEC);
    mf[1] = memfd_create("data.json", MFD_CLOEXEC);

    if (mf[0] < 0 || mf[1] < 0
        || aw_write_fd(mf[0], job->script, job->script_len) != 0
        || aw_write_fd(mf[1], data, data_len) != 0)
    {
        aw_result_fail(res, AW_ST_ERROR, "internal", "memfd: %s",
                       strerror(errno));
        goto done;
    }

    /* stdout, stderr and the status pipe (bwrap: aw_bwrap_init) */

    for (npipes = 0; npipes < 3; npipes++) {
        if (pipe2(p[npipes], O_CLOEXEC | (npipes == 2 ? O_NONBLOCK : 0))
            != 0)
        {
            break;
        }
    }

    if (npipes < 3) {
        aw_result_fail(res, AW_ST_ERROR, "internal", "pipe: %s",
                       strerror(errno));
        goto done;
    }

    req.magic = AW_LAUNCH_MAGIC;
    req.seq = ++aw_req_seq;
    req.wall_ms = job->limits.wall_ms;
    req.cpu_ms = job->limits.cpu_ms;
    req.memory_mb = job->limits.memory_mb;
    req.pids = job->limits.pids;

    fds[0] = mf[0];
    fds[1] = mf[1];

    for (i = 0; i < 3; i++) {
        fds[2 + i] = p[i][1];
    }

    if (aw_priv_send(&req, fds) != 0) {
        goto lost;
    }

    for (i = 0; i < 3; i++) {
        close(p[i][1]);
        p[i][1] = -1;
    }

    for (i = 0; i < 2; i++) {
        close(mf[i]);
        mf[i] = -1;
    }

    s[0].fd = p[0][0];
    s[1].fd = p[1][0];
    p[0][0] = p[1][0] = -1;
    reported = 0;
    drain = 0;

    while (!reported || s[0].fd >= 0 || s[1].fd >= 0) {
        left = -1;

        if (reported) {
            /* the runtime is gone: what is still in the pipes, bounded */
            left = drain - aw_now_ms();
            if (left <= 0) {
                break;
            }
        }

        nfd = 0;
        for (i = 0; i < 2; i++) {
            if (s[i].fd >= 0) {
                pfd[nfd].fd = s[i].fd;
                pfd[nfd].events = POLLIN;
                pfd[nfd].revents = 0;
                nfd++;
            }
        }

        if (!reported) {
            pfd[nfd].fd = aw_priv_fd();
            pfd[nfd].events = POLLIN;
            pfd[nfd].revents = 0;
            nfd++;
        }

        if (poll(pfd, (nfds_t) nfd, (int) left) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }

        nfd = 0;
        for (i = 0; i < 2; i++) {
            if (s[i].fd >= 0) {
                if (pfd[nfd].revents != 0) {
                    aw_stream_read(&s[i]);
                }
                nfd++;
            }
        }

        if (!reported && pfd[nfd].revents != 0) {
            if (aw_priv_recv(req.seq, &rep) != 0) {
                goto lost;
            }
            reported = 1;
            drain = aw_now_ms() + AW_DRAIN_MS;
        }
    }

    if (!reported && aw_priv_recv(req.seq, &rep) != 0) {
        goto lost;
    }

    res->timing.prepare = (long) rep.prepare_ms;
    res->timing.run = (long) rep.run_ms;
    res->timing.teardown = (long) rep.teardown_ms;

    switch (rep.result) {

    case AW_LAUNCH_RAN:
        break;

    case AW_LAUNCH_SETUP:
        aw_result_fail(res, AW_ST_ERROR, "sandbox", "%s", rep.text);
        goto done;

    case AW_LAUNCH_NOREPORT:
        if (rep.text[0] != '\0') {
            aw_result_fail(res, AW_ST_ERROR, "sandbox",
                           "the sandbox could not start: %s", rep.text);

        } else {
            aw_result_fail(res, AW_ST_ERROR, "internal",
                           "the sandbox's keeper ended without a report "
                           "(wait status %d)", (int) rep.status);
        }
        goto done;

    case AW_LAUNCH_REFUSED:
        aw_result_fail(res, AW_ST_ERROR, "internal",
                       "the launcher refused the job: %s", rep.text);
        goto done;

    default:
        aw_result_fail(res, AW_ST_ERROR, "internal", "%s", rep.text);
        goto done;
    }

    timed_out = rep.end == AW_END_WALL;
    cpu_out = rep.end == AW_END_CPU;

    if (conf->backend == AW_BACKEND_GVISOR) {
        rc = rep.runsc_rc;
        ws = rep.runsc_status;

    } else {
        ws = 0;
        rc = aw_init_status(p[2][0], &ws);
    }

    sig = aw_end_signal(conf, rep.slot, (int) rep.status, rc, ws, &code);

    res->ran = 1;
    res->exit_code = code;
    res->out = s[0].buf;
    res->out_len = s[0].len;
    res->out_trunc = s[0].trunc;
    res->err = s[1].buf;
    res->err_len = s[1].len;
    res->err_trunc = s[1].trunc;
    s[0].buf = s[1].buf = NULL;

    if (timed_out) {
        aw_result_fail(res, AW_ST_TIMEOUT, "wall_time",
                       "the script ran past its wall time of %ld ms",
                       job->limits.wall_ms);

    } else if (rep.text[0] != '\0') {
        aw_result_fail(res, AW_ST_ERROR, "sandbox",
                       "the sandbox could not start: %s", rep.text);

    } else if (cpu_out
               || ((sig == SIGXCPU || (sig == SIGKILL && rep.ooms == 0))
                   && aw_cpu_spent((long) rep.cpu_ms, job->limits.cpu_ms)))
    {
        /*
         * The keeper's poll, or a SIGXCPU or SIGKILL (not the OOM
         * killer's) with the cgroup's CPU time used up
         * (aw_cpu_spent()): under it, either is the script's own
         */
        aw_result_fail(res, AW_ST_TIMEOUT, "cpu_time",
                       "the script used up its CPU time of %ld ms",
                       job->limits.cpu_ms);

    } else if (rep.ooms > 0) {
        aw_result_fail(res, AW_ST_OOM, "memory",
                       "the script went over its memory limit of %ld MiB",
                       job->limits.memory_mb);

    } else if (code == 0) {
        res->status = AW_ST_OK;

    } else if (rep.pids_max > 0 && (sig != 0 || rc != 0 || rep.runsc_lost))
    {
        /*
         * The limit was hit and ended the sandbox: a script dead of a
         * signal, or with no status reported (bwrap's init, runsc), or,
         * under gVisor, a sentry that could not start a thread and
         * exited (status 2, a code a script could choose too), which
         * runsc logged as the sandbox gone (aw_runsc_status()).  A fork
         * past the job's limit fails inside (under gVisor the sentry's
         * RLIMIT_NPROC, which the host's count does not see): a script
         * that met a refused fork and exited with a code of its
         * choosing, its sandbox alive, is reported by that code, below.
         * Under gVisor the host's limit is the runtime's backstop.
         */
        if (conf->backend == AW_BACKEND_GVISOR) {
            aw_result_fail(res, AW_ST_KILLED, "pids",
                           "the sandbox's runtime reached its host task "
                           "limit of %ld (its own threads and each "
                           "process's host stubs): too many processes "
                           "at once (exit code %d)",
                           aw_host_pids(conf, &job->limits), code);

        } else {
            aw_result_fail(res, AW_ST_KILLED, "pids",
                           "the sandbox reached its process limit of %ld "
                           "(exit code %d)", job->limits.pids, code);
        }

    } else if (sig != 0) {
        aw_result_fail(res, AW_ST_KILLED, "signal",
                       "the script was killed by signal %d", sig);

    } else {
        aw_result_fail(res, AW_ST_ERROR, "exit",
                       "the script exited with code %d", code);
    }

    goto done;

lost:

    aw_result_fail(res, AW_ST_ERROR, "internal", "the launcher is gone");
    res->lost = 1;

done:

    for (i = 0; i < 2; i++) {
        if (s[i].fd >= 0) {
            close(s[i].fd);
        }

        if (mf[i] >= 0) {
            close(mf[i]);
        }
    }

    for (i = 0; i < npipes; i++) {
        if (p[i][0] >= 0) {
            close(p[i][0]);
        }

        if (p[i][1] >= 0) {
            close(p[i][1]);
        }
    }

    free(s[0].buf);
    free(s[1].buf);
}


/* The worker's: all of buf on fd, rewound to 0 for the launcher. */

static int
aw_write_fd(int fd, const char *buf, size_t len)
{
    size_t   off;
    ssize_t  n;

    for (off = 0; off < len; off += (size_t) n) {
        n = write(fd, buf + off, len - off);
        if (n < 0 && errno == EINTR) {
            n = 0;
            continue;
        }

        if (n <= 0) {
            return -1;
        }
    }

    return lseek(fd, 0, SEEK_SET) == 0 ? 0 : -1;
}


/*
 * Names the jobs after this process (the worker that stays): called
 * before the split (aw_priv_split()), so that the launcher's job
 * directories and cgroups carry the worker's pid and start time, which
 * aw_owner_alive() finds and the worker's end takes with it.
 */

void
aw_sandbox_owner(void)
{
    aw_self = getpid();
    aw_start = al_proc_started(aw_self, 1);
}


int
aw_sandbox_check(const aw_conf_t *conf, char *err, size_t n)
{
    char         path[2304];
    const char  *bin;

    bin = conf->backend == AW_BACKEND_GVISOR ? conf->runsc : conf->bwrap;

    /* its jobs would all fail, each as the script's exit code 128 */
    if (conf->backend == AW_BACKEND_GVISOR && geteuid() != 0) {
        snprintf(err, n, "backend gvisor needs root (runsc makes each "
                 "sandbox's namespaces, mounts and cgroups), started as "
                 "uid %d: start it as root (the unit does) or use backend "
                 "bwrap", (int) geteuid());
        return -1;
    }

    if (access(bin, X_OK) != 0) {
        snprintf(err, n, "%s: %s (apt-get install %s)", bin,
                 strerror(errno),
                 conf->backend == AW_BACKEND_GVISOR ? "runsc" : "bubblewrap");
        return -1;
    }

    snprintf(path, sizeof(path), "%s/usr/bin/python3", conf->rootfs);
    if (access(path, X_OK) != 0) {
        snprintf(err, n, "rootfs %s has no usr/bin/python3 (make "
                 "worker-rootfs builds one)", conf->rootfs);
        return -1;
    }

    if (mkdir(conf->workdir, 0711) != 0 && errno != EEXIST) {
        snprintf(err, n, "mkdir %s: %s", conf->workdir, strerror(errno));
        return -1;
    }

    return 0;
}


/*
 * bwrap: the host uid this worker's jobs run as (sandbox_uid inside,
 * bwrap's --uid).  The kernel keeps some limits per user, whatever the
 * namespace: inotify instances (max_user_instances, 128) and watches,
 * POSIX message queue bytes (RLIMIT_MSGQUEUE), queued signals
 * (RLIMIT_SIGPENDING), processes (RLIMIT_NPROC).  Jobs run as one host
 * uid share them, and one could use up what a job of another worker,
 * running at the same time, needs.  So each worker takes one of
 * bwrap_uids uids from sandbox_uid up, the first no other worker on
 * the workdir holds: an flock on <workdir>/uids/<uid>, held for the
 * worker's life (the kernel drops it with the worker's last
 * descriptor; its children, which die with it, close theirs or go with
 * it).  A worker runs one job at a time: one uid a worker is one a job.
 * bwrap_uids 1 is the old way: every job as sandbox_uid, no lock.
 * A worker started as another user than root cannot switch: its jobs
 * run as its own uid, with no lease.
 */

int
aw_sandbox_lease(aw_conf_t *conf, char *err, size_t n)
{
    int   fd, e;
    long  i;
    char  path[2304];

    conf->host_uid = conf->sandbox_uid;

    if (conf->backend != AW_BACKEND_BWRAP) {
        return 0;
    }

    if (getuid() != 0) {
        conf->host_uid = (long) getuid();
        return 0;
    }

    if (conf->bwrap_uids == 1) {
        return 0;
    }

    snprintf(path, sizeof(path), "%s/uids", conf->workdir);
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, n, "mkdir %s: %s", path, strerror(errno));
        return -1;
    }

    for (i = 0; i < conf->bwrap_uids; i++) {
        snprintf(path, sizeof(path), "%s/uids/%ld", conf->workdir,
                 conf->sandbox_uid + i);

        fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            snprintf(err, n, "%s: %s", path, strerror(errno));
            return -1;
        }

        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            conf->host_uid = conf->sandbox_uid + i;
            conf->host_uid_fd = fd;
            return 0;
        }

        e = errno;
        close(fd);

        if (e != EWOULDBLOCK) {
            snprintf(err, n, "flock %s: %s", path, strerror(e));
            return -1;
        }
    }

    snprintf(err, n, "all %ld host uids from %ld (bwrap_uids) are held by "
             "other workers on %s", conf->bwrap_uids, conf->sandbox_uid,
             conf->workdir);
    return -1;
}


/* What a worker that died left: directories, cgroups, runsc state. */

void
aw_sandbox_cleanup_stale(const aw_conf_t *conf)
{
    int             i;
    DIR            *d;
    char            path[2304];
    pid_t           pid;
    aw_box_t        box;
    struct dirent  *e;
    const char     *ctl[4] = { "memory", "pids", "cpu", "cpuacct" };

    snprintf(path, sizeof(path), "%s/jobs", conf->workdir);
    d = opendir(path);

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (aw_owner_alive(e->d_name, &pid) != 0) {
            continue;
        }

        memset(&box, 0, sizeof(box));
        snprintf(box.slot, sizeof(box.slot), "%s", e->d_name);
        snprintf(box.dir, sizeof(box.dir), "%s/%s", path, e->d_name);

        snprintf(path, sizeof(path), "%s/cgroup.controllers",
                 conf->cgroup_root);
        box.v2 = access(path, F_OK) == 0;

        for (i = 0; i < (box.v2 ? 1 : 4); i++) {
            if (box.v2) {
                snprintf(box.cg[i], sizeof(box.cg[i]), "%s/%s/%s",
                         conf->cgroup_root, conf->cgroup_name, e->d_name);
            } else {
                snprintf(box.cg[i], sizeof(box.cg[i]), "%s/%s/%s/%s",
                         conf->cgroup_root, ctl[i], conf->cgroup_name,
                         e->d_name);
            }
        }
        box.ncg = box.v2 ? 1 : 4;

        aw_log("notice", "removing %s, left by worker %d", box.slot,
               (int) pid);

        /* never `runsc delete`: its pids may be others' now */
        aw_cg_destroy(&box);
        aw_cg_sweep(conf, box.slot);
        if (aw_box_in(conf, box.slot, box.in, sizeof(box.in)) == 0
            && aw_rmtree(box.in) != 0)
        {
            aw_log("alert", "cannot remove %s: %s", box.in,
                   strerror(errno));
        }

        if (aw_rmtree(box.dir) != 0) {
            aw_log("alert", "cannot remove %s: %s", box.dir,
                   strerror(errno));
        }

        snprintf(path, sizeof(path), "%s/jobs", conf->workdir);
    }

    if (d != NULL) {
        closedir(d);
    }

    /* cgroups whose directory is gone: v2's one tree, v1's hierarchies */

    aw_cg_stale(conf, conf->cgroup_root);

    d = opendir(conf->cgroup_root);

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.' && e->d_type == DT_DIR) {
            snprintf(path, sizeof(path), "%s/%s", conf->cgroup_root,
                     e->d_name);
            aw_cg_stale(conf, path);
        }
    }

    if (d != NULL) {
        closedir(d);
    }

    /* runsc's state of the slots found dead above, and of any other */

    aw_runsc_forget(conf, NULL);
}
