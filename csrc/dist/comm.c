/* comm.c: the communicator's life: MPI start-up under a launcher (or one process without one),
 * the node communicators the hierarchical algorithm needs, every rank's pid and host (so a
 * waiting rank can tell a dead or stopped peer on its host), the fault channel, the SIGTERM
 * report, and the two ways out: mt_dist_finalize, or mt_dist_free without it, which tells the
 * peers this rank left instead of blocking in MPI_Finalize. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <unistd.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include "dist.h"

/* MPI is initialised once per process and a signal handler needs to find the communicator:
 * the one live communicator is process state by nature. */
static mt_dist *mt__live;
static struct sigaction mt__old_term;
static char mt__current[256] = "idle";

const char *mt__dist_current(const mt_dist *d) {
  (void)d;
  return mt__current;
}

void mt__dist_set_current(mt_dist *d, const char *fmt, ...) {
  (void)d;
  char buf[sizeof mt__current];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  memcpy(mt__current, buf, sizeof buf);
}

mt_status mt__dist_fault(mt_dist *d, const char *fmt, ...) {
  char buf[sizeof d->broken_msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (!d->broken) {
    memcpy(d->broken_msg, buf, sizeof buf);
    d->broken = 1;
  }
  return mt__error(MT_ERR_DIST, "%s", buf);
}

/* ---- async-signal-safe formatting for the diagnosis and the SIGTERM report ---- */
static size_t put(char *buf, size_t len, size_t at, const char *s) {
  while (*s && at + 1 < len) buf[at++] = *s++;
  if (len) buf[at < len ? at : len - 1] = '\0';
  return at;
}
static size_t put_int(char *buf, size_t len, size_t at, long v) {
  char tmp[24];
  int i = 0, neg = v < 0;
  unsigned long u = neg ? (unsigned long)(-v) : (unsigned long)v;
  do {
    tmp[i++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (neg) tmp[i++] = '-';
  char out[24];
  int j = 0;
  while (i) out[j++] = tmp[--i];
  out[j] = '\0';
  return put(buf, len, at, out);
}

/* the state letter of /proc/<pid>/stat ('R', 'S', 'T' stopped, 'Z' zombie), 0 if gone */
static char proc_state(int pid) {
  char path[48];
  size_t n = put(path, sizeof path, 0, "/proc/");
  n = put_int(path, sizeof path, n, pid);
  put(path, sizeof path, n, "/stat");
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  char st[512];
  ssize_t got = read(fd, st, sizeof st - 1);
  close(fd);
  if (got <= 0) return 0;
  st[got] = '\0';
  char *p = strrchr(st, ')'); /* the command name may hold spaces and parentheses */
  return (p && p[1] == ' ') ? p[2] : '?';
}

void mt__dist_diagnose(const mt_dist *d, char *buf, size_t len) {
  size_t at = put(buf, len, 0, "");
  if (!d || !d->pids) return;
  for (int r = 0; r < d->size; r++) {
    if (r == d->rank || !d->same_host[r]) continue;
    char s = proc_state(d->pids[r]);
    const char *what = s == 0                   ? " has died"
                       : s == 'Z'               ? " has died"
                       : (s == 'T' || s == 't') ? " is stopped (SIGSTOP or a debugger)"
                                                : NULL;
    if (!what) continue;
    at = put(buf, len, at, " rank ");
    at = put_int(buf, len, at, r);
    at = put(buf, len, at, " (pid ");
    at = put_int(buf, len, at, d->pids[r]);
    at = put(buf, len, at, ")");
    at = put(buf, len, at, what);
    at = put(buf, len, at, ";");
  }
}

/* mpirun terminates every rank when one dies; say what this one was doing, and which peer on
 * this host is gone, before the default action ends the process. */
static void on_term(int sig) {
  char buf[1024], diag[600];
  const mt_dist *d = mt__live;
  size_t at = put(buf, sizeof buf, 0, "moontorch.dist: rank ");
  at = put_int(buf, sizeof buf, at, d ? d->rank : -1);
  at = put(buf, sizeof buf, at, " was terminated by the launcher while in ");
  at = put(buf, sizeof buf, at, mt__current);
  mt__dist_diagnose(d, diag, sizeof diag);
  if (diag[0]) {
    at = put(buf, sizeof buf, at, ";");
    at = put(buf, sizeof buf, at, diag);
  }
  at = put(buf, sizeof buf, at, "\n");
  ssize_t w = write(2, buf, at);
  (void)w;
  sigaction(SIGTERM, &mt__old_term, NULL);
  raise(sig);
}

/* the names and facts of MT_DIST_REDS and MT_DIST_ALGS (csrc/moontorch.h), indexed by id */
#define RED_NAME(E, NAME, ...) [E] = NAME,
#define ALG_NAME(E, NAME, ...) [E] = NAME,
#define ALG_ON(E, NAME, TUNED, ON, ...) [E] = ALG_ON_##ON,
enum { ALG_ON_ANY = 0, ALG_ON_MPI = MT_DIST_MPI, ALG_ON_NCCL = MT_DIST_NCCL };
static const char *const red_names[] = {MT_DIST_REDS(RED_NAME, ~)};
static const char *const alg_names[] = {MT_DIST_ALGS(ALG_NAME, ~)};
static const int alg_on[] = {MT_DIST_ALGS(ALG_ON, ~)};
_Static_assert(sizeof red_names / sizeof red_names[0] == MT_NUM_RED, "one name per reduction op");
_Static_assert(sizeof alg_names / sizeof alg_names[0] == MT_NUM_ALG, "one name per algorithm");
_Static_assert(sizeof alg_on / sizeof alg_on[0] == MT_NUM_ALG, "one transport per algorithm");

const char *mt_dist_red_name(int op) { return (op >= 0 && op < MT_NUM_RED) ? red_names[op] : NULL; }
const char *mt_dist_alg_name(int alg) { return (alg >= 0 && alg < MT_NUM_ALG) ? alg_names[alg] : NULL; }
int mt__dist_alg_transport(int alg) { return (alg >= 0 && alg < MT_NUM_ALG) ? alg_on[alg] : 0; }

int mt_dist_rank(const mt_dist *d) { return d ? d->rank : 0; }
int mt_dist_size(const mt_dist *d) { return d ? d->size : 1; }
int mt_dist_local_rank(const mt_dist *d) { return d ? d->local_rank : 0; }
int mt_dist_local_size(const mt_dist *d) { return d ? d->local_size : 1; }
int mt_dist_node(const mt_dist *d) { return d ? d->node : 0; }
int mt_dist_nodes(const mt_dist *d) { return d ? d->nodes : 1; }
int mt_dist_launched(const mt_dist *d) { return d ? d->launched : 0; }
void mt_dist_set_check(mt_dist *d, int on) {
  if (d) d->check = on != 0;
}

mt_status mt_dist_set_timeout(mt_dist *d, double seconds) {
  if (!d) return mt__error(MT_ERR_ARG, "dist.setTimeout: not initialised");
  if (!(seconds > 0)) return mt__error(MT_ERR_ARG, "dist.setTimeout: need seconds > 0, got %g", seconds);
  d->timeout = seconds;
  return MT_OK;
}

mt_status mt_dist_set_chunk_bytes(mt_dist *d, int64_t bytes) {
  if (!d) return mt__error(MT_ERR_ARG, "dist.setChunkBytes: not initialised");
  if (bytes < 64 || bytes > ((int64_t)1 << 30))
    return mt__error(MT_ERR_ARG, "dist.setChunkBytes: need 64 <= bytes <= 1 GB, got %lld", (long long)bytes);
  d->chunk_bytes = bytes; /* read by the communication thread at its next collective */
  return MT_OK;
}

/* the variable a launcher sets, or NULL when this process was started on its own */
static const char *launcher_var(void) {
  static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
    if (getenv(vars[i])) return vars[i];
  return NULL;
}

#ifdef MT_WITH_MPI
/* Where this process's pids mean something, for telling whether a peer's pid can be inspected
 * here: the running kernel (boot_id: no two machines share it, whatever their host names) and
 * the pid namespace (containers on one kernel). "" when boot_id cannot be read: the host name
 * then decides alone. */
static void pid_space(char *out, size_t len) {
  char boot[64] = "", ns[64] = "";
  out[0] = '\0';
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof boot, f)) boot[0] = '\0';
    fclose(f);
  }
  boot[strcspn(boot, "\n")] = '\0';
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  ns[n > 0 ? n : 0] = '\0';
  if (boot[0]) snprintf(out, len, "%s %s", boot, ns);
}
#endif

static mt_dist *alloc_dist(double timeout) {
  mt_dist *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->size = d->local_size = d->nodes = 1;
  d->timeout = timeout > 0 ? timeout : 300;
  d->check = 1;
#ifdef MT_WITH_MPI
  d->left_rank = -1; /* the fault channel's state exists only with MPI */
  d->ctrl_req = MPI_REQUEST_NULL;
#endif
  /* 256 KB. 1 MB chunks gain 10-20% on 2 ranks at 4-16 MB, but on 4 ranks sharing 2 cores
   * 512 KB and 1 MB chunks collapse to a tenth of the bandwidth above 4 MB (bench/allreduce.lua
   * -chunkKB, 2026-11-26), so the safe size is the default and -chunkKB/chunkBytes tunes */
  d->chunk_bytes = (int64_t)256 << 10;
  for (int a = 0; a < MT_NUM_ALG; a++)
    for (int i = 0; i < MT_DIST_MODEL_SIZES; i++) d->model[a][i] = -1;
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  pthread_cond_init(&d->done_cv, NULL);
  return d;
}

mt_status mt__dist_start_thread(mt_dist *d); /* queue.c */
void mt__dist_stop_thread(mt_dist *d, int join);
void mt__dist_nccl_free(mt_dist *d); /* nccl.c */

#ifdef MT_WITH_MPI
static mt_status mpi_fail(const char *what, int code) {
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(code, s, &n);
  return mt__error(MT_ERR_DIST, "dist.init: %s failed: %.*s", what, n, s);
}
#define MPI_TRY(what, call)                                   \
  do {                                                        \
    int mt__rc = (call);                                      \
    if (mt__rc != MPI_SUCCESS) return mpi_fail(what, mt__rc); \
  } while (0)

static mt_status init_mpi(mt_dist *d, int group_size) {
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return mt__error(MT_ERR_DIST, "dist.init: MPI_Init_thread failed (is the launcher, mpirun, still alive?)");
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE)
    return mt__error(MT_ERR_DIST,
                     "dist.init: this MPI gives thread level %d, the communication thread needs "
                     "MPI_THREAD_MULTIPLE (%d)",
                     provided, MPI_THREAD_MULTIPLE);
  d->launched = 1;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_TRY("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &d->world));
  MPI_TRY("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &d->ctrl));
  MPI_Comm_rank(d->world, &d->rank);
  MPI_Comm_size(d->world, &d->size);
  if (group_size < 0 || group_size > d->size)
    return mt__error(MT_ERR_ARG, "dist.init: groupSize %d is not in 0..%d (the number of ranks)", group_size, d->size);
  if (group_size > 0) {
    MPI_TRY("MPI_Comm_split", MPI_Comm_split(d->world, d->rank / group_size, d->rank, &d->local));
  } else {
    MPI_TRY("MPI_Comm_split_type",
            MPI_Comm_split_type(d->world, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &d->local));
  }
  MPI_Comm_rank(d->local, &d->local_rank);
  MPI_Comm_size(d->local, &d->local_size);
  MPI_TRY("MPI_Comm_split", MPI_Comm_split(d->world, d->local_rank == 0 ? 0 : MPI_UNDEFINED, d->rank, &d->leaders));
  int node_nodes[2] = {0, 0};
  if (d->leaders != MPI_COMM_NULL) {
    MPI_Comm_rank(d->leaders, &node_nodes[0]);
    MPI_Comm_size(d->leaders, &node_nodes[1]);
  }
  MPI_TRY("MPI_Bcast", MPI_Bcast(node_nodes, 2, MPI_INT, 0, d->local));
  d->node = node_nodes[0];
  d->nodes = node_nodes[1];
  /* every rank's pid and host, so a wait can inspect the peers on its own host */
  struct {
    int pid;
    char host[64];
    char space[128]; /* pid_space() */
  } me, *all = calloc((size_t)d->size, sizeof *all);
  d->pids = calloc((size_t)d->size, sizeof *d->pids);
  d->same_host = calloc((size_t)d->size, sizeof *d->same_host);
  d->hosts = calloc((size_t)d->size, sizeof *d->hosts);
  if (!all || !d->pids || !d->same_host || !d->hosts) {
    free(all);
    return mt__error(MT_ERR_MEMORY, "dist.init: out of memory");
  }
  memset(&me, 0, sizeof me);
  me.pid = (int)getpid();
  gethostname(me.host, sizeof me.host - 1);
  pid_space(me.space, sizeof me.space);
  int rc = MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, d->world);
  if (rc != MPI_SUCCESS) {
    free(all);
    return mpi_fail("MPI_Allgather", rc);
  }
  for (int r = 0; r < d->size; r++) {
    d->pids[r] = all[r].pid;
    memcpy(d->hosts[r], all[r].host, 64);
    /* a host name alone can be shared (clones of one image, containers named alike) */
    d->same_host[r] =
        strcmp(all[r].host, me.host) == 0 && (!me.space[0] || !all[r].space[0] || strcmp(all[r].space, me.space) == 0);
  }
  free(all);
  MPI_TRY("MPI_Irecv",
          MPI_Irecv(d->ctrl_buf, sizeof d->ctrl_buf, MPI_CHAR, MPI_ANY_SOURCE, MT_TAG_FAULT, d->ctrl, &d->ctrl_req));
  return MT_OK;
}
#endif

mt_status mt_dist_init(mt_dist **out, double timeout, int group_size) {
  if (!out) return mt__error(MT_ERR_ARG, "dist.init: out is NULL");
  *out = NULL;
  if (mt__live) return mt__error(MT_ERR_ARG, "dist.init: already initialised in this process");
  const char *var = launcher_var();
#ifndef MT_WITH_MPI
  if (var && getenv(var) && !(strcmp(var, "OMPI_COMM_WORLD_SIZE") == 0 && strcmp(getenv(var), "1") == 0))
    return mt__error(MT_ERR_UNSUPPORTED,
                     "dist.init: started by a launcher (%s=%s) but this build of moontorch has no "
                     "MPI: install Open MPI (tools/deps.sh) and rebuild with -DMT_MPI=ON",
                     var, getenv(var));
#endif
  mt_dist *d = alloc_dist(timeout);
  if (!d) return mt__error(MT_ERR_MEMORY, "dist.init: out of memory");
  if (group_size < 0) {
    free(d);
    return mt__error(MT_ERR_ARG, "dist.init: groupSize must be >= 0, got %d", group_size);
  }
#ifdef MT_WITH_MPI
  if (var) {
    mt_status st = init_mpi(d, group_size);
    if (st != MT_OK) {
      free(d->pids);
      free(d->same_host);
      free(d->hosts);
      free(d);
      return st;
    }
  }
#endif
  if (d->size > 1) {
    mt_status st = mt__dist_start_thread(d);
    if (st != MT_OK) {
      free(d);
      return st;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &mt__old_term);
  }
  mt__live = d;
  *out = d;
  return MT_OK;
}

/* Send `kind` ('F': failed, 'L': left) and msg to every peer on the fault channel. */
static void announce(mt_dist *d, char kind, const char *msg) {
#ifdef MT_WITH_MPI
  if (!d->launched || d->size < 2) return;
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "%c%s", kind, msg);
  if (n >= (int)sizeof buf) n = (int)sizeof buf - 1;
  MPI_Request *reqs = calloc((size_t)d->size, sizeof *reqs);
  if (!reqs) return;
  for (int r = 0; r < d->size; r++) {
    reqs[r] = MPI_REQUEST_NULL;
    if (r != d->rank) MPI_Isend(buf, n + 1, MPI_CHAR, r, MT_TAG_FAULT, d->ctrl, &reqs[r]);
  }
  /* small messages go eagerly; give the transport a moment, never the whole timeout */
  for (int spin = 0; spin < 2000; spin++) {
    int done = 0;
    MPI_Testall(d->size, reqs, &done, MPI_STATUSES_IGNORE);
    if (done) break;
    usleep(1000);
  }
  for (int r = 0; r < d->size; r++)
    if (reqs[r] != MPI_REQUEST_NULL) MPI_Request_free(&reqs[r]);
  free(reqs);
#else
  (void)d;
  (void)kind;
  (void)msg;
#endif
}

mt_status mt_dist_fail(mt_dist *d, const char *msg) {
  if (!d) return mt__error(MT_ERR_ARG, "dist.fail: not initialised");
  if (!msg) msg = "(no message)";
  /* already broken: the fault came from a peer (or was announced), and every peer hears of it
   * from its own wait; forwarding it would only repeat it */
  if (d->broken) return MT_OK;
  snprintf(d->broken_msg, sizeof d->broken_msg, "this rank failed: %s", msg);
  d->broken = 1;
  announce(d, 'F', msg);
  return MT_OK;
}

/* this communicator is no longer the process's live one: the SIGTERM report stops naming it */
static void forget_live(mt_dist *d) {
  if (mt__live != d) return;
  mt__live = NULL;
  if (d->size > 1) sigaction(SIGTERM, &mt__old_term, NULL);
}

static void free_fields(mt_dist *d) {
  free(d->pids);
  free(d->same_host);
  free(d->hosts);
  free(d->scratch);
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  pthread_cond_destroy(&d->done_cv);
  forget_live(d);
  free(d);
}

mt_status mt_dist_finalize(mt_dist *d) {
  if (!d) return mt__error(MT_ERR_ARG, "dist.finalize: not initialised");
  if (d->finalized) return MT_OK;
  if (d->ps_open > 0)
    return mt__error(MT_ERR_ARG, "dist.finalize: %d parameter server table%s still open: close %s first (ps:close())",
                     d->ps_open, d->ps_open == 1 ? " is" : "s are", d->ps_open == 1 ? "it" : "them");
  if (d->broken)
    return mt__error(MT_ERR_DIST,
                     "dist.finalize: the communicator is broken (%s); MPI is not finalised, "
                     "so this process does not wait for peers that may be gone",
                     d->broken_msg);
#ifdef MT_WITH_MPI
  /* MPI_Finalize waits for every peer with no deadline: meet them first in a barrier that has
   * one, so that a peer stopped or gone after the last collective is named instead of a hang
   * (the communicator is then broken and MPI is not finalised, as above) */
  if (d->launched && d->size > 1 && mt_dist_barrier(d, NULL) != MT_OK) {
    char why[sizeof d->broken_msg]; /* (mt__error formats into the buffer mt_last_error reads) */
    snprintf(why, sizeof why, "%s", mt_last_error());
    size_t n = strlen(why);
    while (n > 0 && (why[n - 1] == ';' || why[n - 1] == ' ')) why[--n] = '\0';
    return mt__error(MT_ERR_DIST, "dist.finalize: %s; MPI is not finalised, so this process does not wait for it", why);
  }
#endif
  mt__dist_stop_thread(d, 1);
  mt__dist_nccl_free(d);
#ifdef MT_WITH_MPI
  if (d->launched) {
    if (d->ctrl_req != MPI_REQUEST_NULL) { /* NULL once a fault message was taken */
      MPI_Cancel(&d->ctrl_req);
      MPI_Wait(&d->ctrl_req, MPI_STATUS_IGNORE);
    }
    MPI_Comm_free(&d->ctrl);
    if (d->leaders != MPI_COMM_NULL) MPI_Comm_free(&d->leaders);
    MPI_Comm_free(&d->local);
    MPI_Comm_free(&d->world);
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
  }
#endif
  d->finalized = 1;
  return MT_OK;
}

void mt_dist_free(mt_dist *d) {
  if (!d) return;
  if (!d->finalized) {
    /* ending without finalize: an error unwound the program. Tell the peers, so none of them
     * waits out its timeout, and leave MPI as it is: MPI_Finalize could wait for a peer that
     * will never come, and the launcher ends the job when it sees a rank exit unfinalised. */
    if (d->size > 1 && !d->broken) announce(d, 'L', "it exited without dist.finalize() (an uncaught error?)");
    mt__dist_stop_thread(d, 0);
    forget_live(d);
    return; /* the thread may still be inside a wait: its state stays until the process ends */
  }
  free_fields(d);
}
