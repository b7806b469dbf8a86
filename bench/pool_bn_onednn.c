/* pool_bn_onednn.c: oneDNN's own time for the pooling and batch normalization of the ResNet
 * shapes, on NCHW float32 tensors as moontorch holds them, for bench/pool_bn_onednn.lua (which
 * compiles and runs this and prints it beside moontorch's time). Threads: OMP_NUM_THREADS.
 *   usage: pool_bn_onednn REPS kind:NxCxHxW ...   (kind: bn or maxpool, 3x3 stride 2 pad 1;
 *          bn8 and maxpool8: the same on oneDNN's blocked nChw8c layout, reorders not counted)
 * Prints "kind:NxCxHxW forward_ms backward_ms" (medians; backward of BN: gradInput, gradScale and
 * gradShift from the forward's batch statistics; of max pooling: from the forward's indices). */
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x)                                                           \
  do {                                                                  \
    dnnl_status_t s_ = (x);                                             \
    if (s_ != dnnl_success) {                                           \
      fprintf(stderr, "pool_bn_onednn: %s failed (%d)\n", #x, (int)s_); \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

static dnnl_engine_t eng;
static dnnl_stream_t strm;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* every argument a primitive takes: memories from `shared` where given, else new ones filled with
 * random numbers in [0.5, 1.5) (positive: a valid variance) */
static const int ARGS[] = {DNNL_ARG_SRC,       DNNL_ARG_DST,        DNNL_ARG_DIFF_SRC,   DNNL_ARG_DIFF_DST,
                           DNNL_ARG_WORKSPACE, DNNL_ARG_MEAN,       DNNL_ARG_VARIANCE,   DNNL_ARG_SCALE,
                           DNNL_ARG_SHIFT,     DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT, DNNL_ARG_SCRATCHPAD};
#define NARGS (int)(sizeof ARGS / sizeof ARGS[0])

static int bind(dnnl_primitive_desc_t pd, dnnl_memory_t *shared, dnnl_exec_arg_t *a) {
  int n = 0;
  for (int i = 0; i < NARGS; i++) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, ARGS[i]);
    if (!md || md->ndims == 0) continue;
    if (!shared[i]) {
      CK(dnnl_memory_create(&shared[i], md, eng, DNNL_MEMORY_ALLOCATE));
      void *p;
      CK(dnnl_memory_get_data_handle(shared[i], &p));
      size_t sz = dnnl_memory_desc_get_size(md);
      if (md->data_type == dnnl_f32)
        for (size_t k = 0; k < sz / 4; k++) ((float *)p)[k] = 0.5f + (float)rand() / RAND_MAX;
      else memset(p, 0, sz);
    }
    a[n].arg = ARGS[i], a[n].memory = shared[i], n++;
  }
  return n;
}

static double timed(dnnl_primitive_desc_t pd, dnnl_memory_t *shared, int reps) {
  dnnl_primitive_t p;
  CK(dnnl_primitive_create(&p, pd));
  dnnl_exec_arg_t a[NARGS];
  int n = bind(pd, shared, a);
  double *t = malloc(sizeof(double) * reps);
  CK(dnnl_primitive_execute(p, strm, n, a)); /* warm-up; fills a forward's workspace */
  CK(dnnl_stream_wait(strm));
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    CK(dnnl_primitive_execute(p, strm, n, a));
    CK(dnnl_stream_wait(strm));
    t[r] = (now() - t0) * 1000;
  }
  qsort(t, reps, sizeof *t, cmp);
  double m = t[reps / 2];
  free(t);
  dnnl_primitive_destroy(p);
  return m;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: pool_bn_onednn REPS kind:NxCxHxW ...\n");
    return 2;
  }
  int reps = atoi(argv[1]);
  CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
  CK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
  for (int i = 2; i < argc; i++) {
    char kind[16];
    long long N, C, H, W;
    if (sscanf(argv[i], "%15[a-z8]:%lldx%lldx%lldx%lld", kind, &N, &C, &H, &W) != 5) {
      fprintf(stderr, "pool_bn_onednn: cannot read %s\n", argv[i]);
      return 2;
    }
    dnnl_memory_t shared[NARGS] = {NULL};
    dnnl_dims_t xd = {N, C, H, W};
    dnnl_memory_desc_t x, y;
    const dnnl_format_tag_t tag =
        strchr(argv[i], '8') && strchr(argv[i], '8') < strchr(argv[i], ':') ? dnnl_nChw8c : dnnl_nchw;
    CK(dnnl_memory_desc_init_by_tag(&x, 4, xd, dnnl_f32, tag));
    dnnl_primitive_desc_t fpd, bpd;
    if (!strncmp(kind, "bn", 2)) {
      const unsigned fl = dnnl_use_scale | dnnl_use_shift;
      dnnl_batch_normalization_desc_t f, b;
      CK(dnnl_batch_normalization_forward_desc_init(&f, dnnl_forward_training, &x, 1e-5f, fl));
      CK(dnnl_primitive_desc_create(&fpd, &f, NULL, eng, NULL));
      CK(dnnl_batch_normalization_backward_desc_init(&b, dnnl_backward, &x, &x, 1e-5f, fl));
      CK(dnnl_primitive_desc_create(&bpd, &b, NULL, eng, fpd));
    } else {
      dnnl_dims_t yd = {N, C, (H + 2 - 3) / 2 + 1, (W + 2 - 3) / 2 + 1}, k = {3, 3}, s = {2, 2}, d = {0, 0}, p = {1, 1};
      dnnl_dims_t pr = {(yd[2] - 1) * 2 + 3 - H - 1, (yd[3] - 1) * 2 + 3 - W - 1};
      CK(dnnl_memory_desc_init_by_tag(&y, 4, yd, dnnl_f32, tag));
      dnnl_pooling_v2_desc_t f, b;
      CK(dnnl_pooling_v2_forward_desc_init(&f, dnnl_forward_training, dnnl_pooling_max, &x, &y, s, k, d, p, pr));
      CK(dnnl_primitive_desc_create(&fpd, &f, NULL, eng, NULL));
      CK(dnnl_pooling_v2_backward_desc_init(&b, dnnl_pooling_max, &x, &y, s, k, d, p, pr));
      CK(dnnl_primitive_desc_create(&bpd, &b, NULL, eng, fpd));
    }
    double tf = timed(fpd, shared, reps), tb = timed(bpd, shared, reps);
    printf("%s %.3f %.3f\n", argv[i], tf, tb);
    for (int k = 0; k < NARGS; k++)
      if (shared[k]) dnnl_memory_destroy(shared[k]);
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bpd);
  }
  return 0;
}
