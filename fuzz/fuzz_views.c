/* fuzz_views.c: libFuzzer target over the public entry points that take sizes, strides, dims
 * and indices. The input is read as a little program: each step takes an opcode and its
 * arguments from the byte stream and calls the C API on a pool of live tensors.
 *
 * What must hold, whatever the bytes:
 *  - every call returns MT_OK, or a valid status with a non-empty message and no handle;
 *  - a tensor that a call hands back only reaches elements inside its storage: its layout is
 *    checked against the storage size, and its elements are read (ASan sees a stray read);
 *  - views keep the shapes the operation promises (narrow, select, transpose, ...);
 *  - nothing crashes, leaks (LeakSanitizer at exit) or trips UBSan.
 * Sizes are mostly tiny, so one input runs many steps quickly; huge and negative values come
 * up too, but only where the library must reject them before allocating. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "moontorch.h"

#define POOL 8
#define MAX_STEPS 96
#define MAX_NEW (1 << 12)  /* elements in a tensor we allocate */
#define MAX_OP (1 << 14)   /* elements an op may produce from pool tensors */
#define MAX_READ (1 << 16) /* views up to this size are read in full, larger ones at corners */

static void fail(const char *what, const char *op) {
  fprintf(stderr, "fuzz_views: %s (%s); last error: %s\n", what, op, mt_last_error());
  abort();
}

/* ---- the byte stream ---- */
typedef struct {
  const uint8_t *p;
  size_t n;
} stream;

static uint8_t u8(stream *s) {
  if (!s->n) return 0;
  s->n--;
  return *s->p++;
}

static int64_t i64(stream *s) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | u8(s);
  return (int64_t)v;
}

/* sizes: mostly 0..7, sometimes larger, -1 (inferred by view/expand), negative or huge */
static int64_t rd_size(stream *s) {
  uint8_t b = u8(s);
  switch (b >> 5) {
    case 0:
    case 1:
    case 2:
    case 3: return b & 7;
    case 4: return b & 31;
    case 5: return -1 - (b & 3);
    case 6: return (int64_t)1 << (32 + (b & 31) % 31);
    default: return i64(s);
  }
}

/* dims: mostly in range for small tensors, sometimes negative or far out */
static int rd_dim(stream *s) {
  uint8_t b = u8(s);
  if (b < 200) return b % 9;
  if (b < 240) return -1 - (b & 3);
  uint32_t hi = u8(s);
  return (int)(int32_t)(hi << 24 | 0xffffu);
}

/* indices and offsets: mostly small, sometimes negative or arbitrary */
static int64_t rd_index(stream *s) {
  uint8_t b = u8(s);
  if (b < 192) return b % 12;
  if (b < 240) return -1 - (b & 7);
  return i64(s);
}

static int64_t rd_stride(stream *s) {
  uint8_t b = u8(s);
  if (b < 160) return b % 9;
  if (b < 224) return -1 - (b & 7);
  return i64(s);
}

static double rd_value(stream *s) {
  static const double special[] = {0.0,   -0.0,   1.0,      -1.0,      0.5, 255.0,        256.0,  -129.0,
                                   1e300, -1e300, INFINITY, -INFINITY, NAN, 2147483648.0, 9.3e18, -9.3e18};
  uint8_t b = u8(s);
  if (b < 128) return (double)(int8_t)u8(s) / 4.0;
  return special[b & 15];
}

/* ---- checks ---- */

/* A failed call: a real status, a message, and no handle returned. */
static void check_error(mt_status st, mt_tensor *out, const char *op) {
  if (st <= MT_OK || st > MT_ERR_INTERNAL) fail("status out of range", op);
  const char *msg = mt_last_error();
  if (!msg || !msg[0]) fail("error without a message", op);
  if (out) fail("a handle came back with an error", op);
  if (st == MT_ERR_INTERNAL) fail("internal error", op);
}

static volatile uint8_t sink;

static void read_element(const mt_tensor *t, const int64_t *idx) {
  int nd = mt_tensor_ndim(t);
  int64_t off = 0;
  for (int d = 0; d < nd; d++) off += idx[d] * mt_tensor_stride(t, d);
  int64_t pos = mt_tensor_offset(t) + off;
  if (pos < 0 || pos >= mt_tensor_storage_numel(t)) fail("element outside its storage", "read");
  size_t es = mt_dtype_size(mt_tensor_dtype(t));
  const uint8_t *p = (const uint8_t *)mt_tensor_data(t) + off * (int64_t)es;
  for (size_t k = 0; k < es; k++) sink ^= p[k];
}

/* Every successful tensor: sane metadata, a layout inside the storage, and its elements read
 * (all of them when few, else the corners, which bound a strided layout's reach). */
static void check_tensor(const mt_tensor *t, const char *op) {
  if (!t) fail("success without a handle", op);
  int nd = mt_tensor_ndim(t);
  if (nd < 0 || nd > 8) fail("ndim out of range", op);
  if (mt_tensor_dtype(t) < 0 || mt_tensor_dtype(t) >= MT_NUM_DTYPES) fail("bad dtype", op);
  int64_t numel = 1, sizes[8];
  int overflow = 0;
  for (int d = 0; d < nd; d++) {
    sizes[d] = mt_tensor_size(t, d);
    if (sizes[d] < 0) fail("negative size", op);
    if (sizes[d] && numel > INT64_MAX / sizes[d]) overflow = 1;
    else numel *= sizes[d];
  }
  if (overflow) {
    for (int d = 0; d < nd; d++)
      if (sizes[d] == 0) overflow = 0;
    if (overflow) fail("element count overflows", op);
    numel = 0;
  }
  if (mt_tensor_numel(t) != numel) fail("numel disagrees with sizes", op);
  if (numel == 0) return;
  if (mt_tensor_offset(t) < 0) fail("negative offset", op);
  int64_t idx[8] = {0};
  if (numel <= MAX_READ) {
    for (int64_t i = 0; i < numel; i++) {
      read_element(t, idx);
      for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < sizes[d]) break;
        idx[d] = 0;
      }
    }
  } else {
    for (unsigned corner = 0; corner < (1u << nd); corner++) {
      for (int d = 0; d < nd; d++) idx[d] = (corner >> d & 1) ? sizes[d] - 1 : 0;
      read_element(t, idx);
    }
  }
}

/* Result of a call that makes a new handle: checked either way; returns it (or NULL). */
static mt_tensor *result(mt_status st, mt_tensor *out, const char *op) {
  if (st != MT_OK) {
    check_error(st, out, op);
    return NULL;
  }
  check_tensor(out, op);
  return out;
}

/* Result of an in-place call on t. */
static void result_inplace(mt_status st, const mt_tensor *t, const char *op) {
  if (st != MT_OK) check_error(st, NULL, op);
  if (t) check_tensor(t, op);
}

/* ---- the pool of live tensors ---- */
static mt_tensor *pool[POOL];

static void put(int slot, mt_tensor *t) {
  if (!t) return;
  mt_tensor_release(pool[slot]);
  pool[slot] = t;
}

/* A pool tensor, or now and then NULL to exercise the argument checks. */
static mt_tensor *pick(stream *s) {
  uint8_t b = u8(s);
  if (b == 255) return NULL;
  return pool[b % POOL];
}

static int64_t numel_of(const mt_tensor *t) { return t ? mt_tensor_numel(t) : 0; }

/* Small enough to feed an op: judged by the product of the nonzero sizes, since an empty
 * tensor of size 0 x 2^40 still makes a reduction over its first dim produce 2^40 elements. */
static int small(const mt_tensor *t) {
  if (!t) return 1;
  int64_t span = 1;
  for (int d = 0; d < mt_tensor_ndim(t); d++) {
    int64_t s = mt_tensor_size(t, d);
    if (s > MAX_OP) return 0;
    if (s) span *= s;
    if (span > MAX_OP) return 0;
  }
  return 1;
}

/* Element count of sizes: -1 when it overflows or a size is negative. */
static int64_t count(int nd, const int64_t *sizes) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) {
    if (sizes[i] < 0) return -1;
    if (sizes[i] && n > INT64_MAX / sizes[i]) return -1;
    n *= sizes[i];
  }
  return n;
}

/* Whether a request for these sizes is worth making: small, or invalid in a way the library
 * must refuse before allocating (an allocation of many gigabytes would only slow the run). */
static int allocatable(int nd, const int64_t *sizes) {
  if (nd < 0 || nd > 8) return 1;
  int64_t n = count(nd, sizes);
  return n < 0 || n <= MAX_NEW || (uint64_t)n > (uint64_t)INT64_MAX / 8;
}

static int rd_sizes(stream *s, int64_t *sizes) {
  int nd = u8(s) % 10; /* 9: one more than the maximum */
  for (int i = 0; i < nd; i++) sizes[i] = rd_size(s);
  return nd;
}

/* A fresh tensor of random dtype and sizes with defined contents. */
static mt_tensor *make_tensor(stream *s, int dtype) {
  int64_t sizes[9];
  int nd = rd_sizes(s, sizes);
  int device = u8(s) == 7 ? 0 : -1; /* a CUDA request must fail cleanly in a CPU build */
  if (!allocatable(nd, sizes)) return NULL;
  mt_tensor *t = NULL;
  mt_status st = mt_tensor_new(&t, dtype, device, nd, sizes);
  if (!result(st, t, "tensor_new")) return NULL;
  if (device != -1) fail("a CUDA tensor in a CPU build", "tensor_new");
  int64_t es = (int64_t)mt_dtype_size(dtype), bytes = mt_tensor_storage_numel(t) * es;
  if (bytes) memset(mt_tensor_data(t), 0, (size_t)bytes);
  /* a few defined values so ops see more than zeros */
  int64_t n = mt_tensor_numel(t), idx[8] = {0};
  for (int k = 0; k < 4 && n > 0; k++) {
    int64_t r = (int64_t)((uint64_t)rd_index(s) % (uint64_t)n);
    for (int d = nd - 1; d >= 0; d--) {
      idx[d] = r % sizes[d];
      r /= sizes[d];
    }
    double v = dtype == MT_BOOL ? (k & 1) : (double)(int8_t)u8(s);
    if (mt_tensor_set_item(t, idx, v) != MT_OK) fail("set_item refused an in-range index", "tensor_new");
  }
  return t;
}

/* An index tensor: usually int64 with small (possibly bad) values, sometimes another dtype. */
static mt_tensor *make_index(stream *s, int nd_want) {
  int dtype = u8(s) < 230 ? MT_I64 : MT_I32 + u8(s) % 4;
  int64_t sizes[8];
  int nd = nd_want >= 0 && nd_want <= 8 && u8(s) < 220 ? nd_want : u8(s) % 3;
  for (int i = 0; i < nd; i++) sizes[i] = u8(s) % 5;
  mt_tensor *t = NULL;
  if (mt_tensor_new(&t, dtype, -1, nd, sizes) != MT_OK) fail("cannot make a small index tensor", "index");
  int64_t n = mt_tensor_numel(t), idx[8] = {0};
  for (int64_t i = 0; i < n; i++) {
    if (mt_tensor_set_item(t, idx, (double)rd_index(s)) != MT_OK) fail("set_item on an index", "index");
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return t;
}

/* An empty output of a's dtype (usually) for ops that resize their result. */
static mt_tensor *make_out(stream *s, const mt_tensor *a) {
  int dtype = a && u8(s) < 224 ? mt_tensor_dtype(a) : u8(s) % MT_NUM_DTYPES;
  int64_t zero = 0;
  mt_tensor *t = NULL;
  if (mt_tensor_new(&t, dtype, -1, 1, &zero) != MT_OK) fail("cannot make an empty tensor", "out");
  return t;
}

static void check_view_shape(const char *op, const mt_tensor *r, const mt_tensor *t, int dim, int64_t a, int64_t b) {
  int nd = mt_tensor_ndim(t);
  if (!strcmp(op, "narrow")) {
    if (mt_tensor_ndim(r) != nd || mt_tensor_size(r, dim) != b) fail("wrong shape", op);
    /* an empty tensor's strides address nothing, so its views keep the offset */
    if (mt_tensor_numel(t) > 0 && mt_tensor_offset(r) != mt_tensor_offset(t) + a * mt_tensor_stride(t, dim))
      fail("wrong offset", op);
  } else if (!strcmp(op, "select")) {
    if (mt_tensor_ndim(r) != nd - 1) fail("wrong ndim", op);
    for (int d = 0; d < nd - 1; d++)
      if (mt_tensor_size(r, d) != mt_tensor_size(t, d < dim ? d : d + 1)) fail("wrong shape", op);
  } else if (!strcmp(op, "transpose")) {
    for (int d = 0; d < nd; d++) {
      int src = d == dim ? (int)a : d == a ? dim : d;
      if (mt_tensor_size(r, d) != mt_tensor_size(t, src) || mt_tensor_stride(r, d) != mt_tensor_stride(t, src))
        fail("wrong layout", op);
    }
  } else if (!strcmp(op, "unsqueeze")) {
    if (mt_tensor_ndim(r) != nd + 1 || mt_tensor_size(r, dim) != 1) fail("wrong shape", op);
  } else if (!strcmp(op, "unfold")) {
    if (mt_tensor_ndim(r) != nd + 1 || mt_tensor_size(r, nd) != a ||
        mt_tensor_size(r, dim) != (mt_tensor_size(t, dim) - a) / b + 1)
      fail("wrong shape", op);
  }
  if (mt_tensor_numel(r) > 0 && mt_tensor_storage_key(r) != mt_tensor_storage_key(t)) fail("view copied", op);
}

/* ---- one step of the program ---- */
static void step(stream *s) {
  uint8_t opcode = u8(s);
  mt_tensor *t = pick(s), *r = NULL;
  int64_t sizes[9], strides[9];
  mt_status st;
  switch (opcode % 24) {
    case 0:
    case 1: { /* new tensor of any dtype (or an invalid one) */
      int slot = u8(s) % POOL;
      int dtype = u8(s) < 248 ? u8(s) % MT_NUM_DTYPES : (int)(int8_t)u8(s);
      put(slot, make_tensor(s, dtype));
      break;
    }
    case 2: { /* view */
      int nd = rd_sizes(s, sizes);
      st = mt_tensor_view(&r, t, nd, sizes);
      if (result(st, r, "view") && mt_tensor_numel(r) != numel_of(t)) fail("view changed numel", "view");
      put(u8(s) % POOL, r);
      break;
    }
    case 3: { /* as_strided */
      int nd = rd_sizes(s, sizes);
      for (int i = 0; i < nd; i++) strides[i] = rd_stride(s);
      st = mt_tensor_as_strided(&r, t, nd, sizes, strides, rd_index(s));
      put(u8(s) % POOL, result(st, r, "as_strided"));
      break;
    }
    case 4: { /* narrow */
      int dim = rd_dim(s);
      int64_t start = rd_index(s), len = rd_index(s);
      st = mt_tensor_narrow(&r, t, dim, start, len);
      if (result(st, r, "narrow")) check_view_shape("narrow", r, t, dim, start, len);
      put(u8(s) % POOL, r);
      break;
    }
    case 5: { /* select */
      int dim = rd_dim(s);
      st = mt_tensor_select(&r, t, dim, rd_index(s));
      if (result(st, r, "select")) check_view_shape("select", r, t, dim, 0, 0);
      put(u8(s) % POOL, r);
      break;
    }
    case 6: { /* transpose */
      int d0 = rd_dim(s), d1 = rd_dim(s);
      st = mt_tensor_transpose(&r, t, d0, d1);
      if (result(st, r, "transpose")) check_view_shape("transpose", r, t, d0, d1, 0);
      put(u8(s) % POOL, r);
      break;
    }
    case 7: { /* permute: a real permutation, sometimes spoiled */
      int nd = t ? mt_tensor_ndim(t) : 0, dims[9];
      for (int i = 0; i < nd; i++) dims[i] = i;
      for (int i = nd - 1; i > 0; i--) {
        int j = u8(s) % (i + 1), x = dims[i];
        dims[i] = dims[j];
        dims[j] = x;
      }
      if (nd && u8(s) > 200) dims[u8(s) % nd] = rd_dim(s);
      if (u8(s) > 230) nd = u8(s) % 10;
      st = mt_tensor_permute(&r, t, nd, dims);
      put(u8(s) % POOL, result(st, r, "permute"));
      break;
    }
    case 8: { /* expand */
      int nd = rd_sizes(s, sizes);
      st = mt_tensor_expand(&r, t, nd, sizes);
      put(u8(s) % POOL, result(st, r, "expand"));
      break;
    }
    case 9: /* squeeze (dim < 0: all) */
      st = mt_tensor_squeeze(&r, t, rd_dim(s));
      put(u8(s) % POOL, result(st, r, "squeeze"));
      break;
    case 10: { /* unsqueeze */
      int dim = rd_dim(s);
      st = mt_tensor_unsqueeze(&r, t, dim);
      if (result(st, r, "unsqueeze")) check_view_shape("unsqueeze", r, t, dim, 0, 0);
      put(u8(s) % POOL, r);
      break;
    }
    case 11: { /* unfold */
      int dim = rd_dim(s);
      int64_t size = rd_index(s), stp = rd_index(s);
      st = mt_tensor_unfold(&r, t, dim, size, stp);
      if (result(st, r, "unfold")) check_view_shape("unfold", r, t, dim, size, stp);
      put(u8(s) % POOL, r);
      break;
    }
    case 12: { /* resize in place */
      int nd = rd_sizes(s, sizes);
      if (!allocatable(nd, sizes)) break;
      result_inplace(mt_tensor_resize(t, nd, sizes), t, "resize");
      break;
    }
    case 13: /* set: t becomes a view of another */ result_inplace(mt_tensor_set(t, pick(s)), t, "set"); break;
    case 14: { /* get_item / set_item with random indices */
      int64_t idx[9];
      int nd = t ? mt_tensor_ndim(t) : 0;
      for (int i = 0; i < nd; i++) idx[i] = rd_index(s);
      double v = 0;
      st = u8(s) & 1 ? mt_tensor_get_item(t, idx, &v) : mt_tensor_set_item(t, idx, rd_value(s));
      if (st != MT_OK) check_error(st, NULL, "get/set_item");
      break;
    }
    case 15: /* fill (not on huge expanded views: that is only slow) */
      if (small(t)) result_inplace(mt_fill(t, rd_value(s)), t, "fill");
      break;
    case 16: { /* copy (src broadcast or same numel; any dtypes) */
      mt_tensor *src = pick(s);
      if (small(t) && small(src)) result_inplace(mt_copy(t, src), t, "copy");
      break;
    }
    case 17: { /* index_select */
      if (!small(t)) break;
      mt_tensor *index = make_index(s, 1), *out = make_out(s, t);
      int dim = rd_dim(s);
      st = mt_index_select(out, t, dim, index, u8(s) & 1);
      result_inplace(st, out, "index_select");
      mt_tensor_release(index);
      mt_tensor_release(out);
      break;
    }
    case 18: { /* gather */
      if (!small(t)) break;
      mt_tensor *index = make_index(s, t ? mt_tensor_ndim(t) : 0), *out = make_out(s, t);
      int dim = rd_dim(s);
      st = mt_gather(out, t, dim, index, u8(s) & 1);
      result_inplace(st, out, "gather");
      mt_tensor_release(index);
      mt_tensor_release(out);
      break;
    }
    case 19: { /* scatter (tensor source) or scatter_fill into a pool tensor */
      mt_tensor *src = pick(s);
      if (!small(t) || !small(src)) break; /* scatter may copy a source that overlaps t */
      mt_tensor *index = make_index(s, t ? mt_tensor_ndim(t) : 0);
      int dim = rd_dim(s);
      int64_t base = u8(s) & 1;
      st = u8(s) & 1 ? mt_scatter(t, dim, index, src, base) : mt_scatter_fill(t, dim, index, rd_value(s), base);
      result_inplace(st, t, "scatter");
      mt_tensor_release(index);
      break;
    }
    case 20: { /* cat of 1..4 pool tensors */
      mt_tensor *in[4];
      int n = 1 + u8(s) % 4, ok = small(t);
      in[0] = t;
      for (int i = 1; i < n; i++) ok &= small(in[i] = pick(s));
      if (!ok) break;
      mt_tensor *out = make_out(s, t);
      if (u8(s) == 0) n = 0;
      result_inplace(mt_cat(out, in, n, rd_dim(s)), out, "cat");
      mt_tensor_release(out);
      break;
    }
    case 21: { /* binary with broadcasting: out is fresh so it never overlaps an input */
      mt_tensor *b = pick(s);
      if (!small(t) || !small(b) || numel_of(t) * numel_of(b) > MAX_OP * 4) break;
      int op = u8(s) % (MT_NUM_BINARY_OPS + 1);
      int cmp = op >= MT_EQ && op <= MT_GE;
      mt_tensor *out = make_out(s, t);
      if (cmp && u8(s) < 200) { /* comparisons write u8 */
        mt_tensor_release(out);
        int64_t zero = 0;
        if (mt_tensor_new(&out, MT_U8, -1, 1, &zero) != MT_OK) fail("cannot make an empty tensor", "binary");
      }
      result_inplace(mt_binary(op, out, t, b, rd_value(s)), out, "binary");
      mt_tensor_release(out);
      break;
    }
    case 22: { /* reduce over one dim or all */
      if (!small(t)) break;
      int op = u8(s) % (MT_NUM_REDUCE_OPS + 1);
      mt_tensor *out = make_out(s, t), *ind = NULL;
      if (u8(s) & 1) {
        int64_t zero = 0;
        if (mt_tensor_new(&ind, MT_I64, -1, 1, &zero) != MT_OK) fail("cannot make an empty tensor", "reduce");
      }
      int dim = rd_dim(s) - 1, keepdim = u8(s) & 1;
      double p = rd_value(s);
      st = mt_reduce(op, out, ind, t, dim, keepdim, p, u8(s) & 1);
      result_inplace(st, out, "reduce");
      mt_tensor_release(out);
      mt_tensor_release(ind);
      break;
    }
    default: { /* drop a pool entry (its views must keep the storage alive) */
      int slot = u8(s) % POOL;
      mt_tensor_release(pool[slot]);
      pool[slot] = NULL;
      break;
    }
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  mt_set_num_threads(1); /* reproducible runs; the sizes here are far below any parallel grain */
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  stream s = {data, size};
  for (int i = 0; i < MAX_STEPS && s.n; i++) step(&s);
  for (int i = 0; i < POOL; i++) {
    mt_tensor_release(pool[i]);
    pool[i] = NULL;
  }
  int64_t live = mt_memory_allocated(-1);
  if (live != 0) {
    fprintf(stderr, "fuzz_views: %lld bytes still allocated after releasing every tensor\n", (long long)live);
    abort();
  }
  return 0;
}
