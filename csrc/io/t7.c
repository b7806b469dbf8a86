/* t7.c: a safe reader for Torch7's serialization format (File:writeObject, torch.save).
 *
 * An object is a 32-bit type tag and its body: nil 0 (nothing), number 1 (a double), string 2
 * (int length, bytes), table 3 and torch object 4 (int reference index, then: a table's int
 * pair count and its key/value objects; a torch object's "V <version>" string, class name
 * string and the class's own data), boolean 5 (an int, 1 is true), functions 6 (bytecode
 * string, upvalue table) and 7/8 (reference index, bytecode string, upvalue table). Functions
 * are only recorded here as byte ranges: loading one runs code, so the Lua side does it only
 * when the caller asks (lua/moontorch/io/serialize.lua). A reference index seen before means
 * "the same object again". Tensors write int ndim, long sizes, long strides, a 1-based long
 * storage offset, then their storage as an object (or nil); storages write a long element
 * count and their raw elements. Other classes (nn modules) write their field table.
 * Binary files are little-endian with 8-byte longs (4 on request); ascii files print each
 * value followed by a newline (arrays space-separated), with chars and bytes written raw.
 *
 * Nothing here trusts the bytes: every count is checked against what is left before anything
 * is allocated, nesting is limited, references must name an object already started, tensor
 * extents must fit their storage. The result is a flat list of checked nodes that the Lua
 * side (lua/moontorch/serialize.lua) turns into objects. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/tensor.h"
#include "../core/error.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "t7.c assumes a little-endian host (binary .t7 files are little-endian)"
#endif

#define T7_MAX_DEPTH 200       /* nested tables/objects; deeper files are refused */
#define T7_MAX_NODES (1 << 24) /* items in one file */
#define T7_MAX_CLASS 256       /* bytes in a class name */
enum {
  TAG_NIL = 0,
  TAG_NUMBER,
  TAG_STRING,
  TAG_TABLE,
  TAG_TORCH,
  TAG_BOOLEAN,
  TAG_FUNCTION,
  TAG_LEGACY_RECUR_FUNCTION,
  TAG_RECUR_FUNCTION
};

struct mt_t7 {
  mt_t7_node *nodes;
  int64_t n, cap;
  int64_t *kids, nkids, capkids;
  int64_t *dims, ndims, capdims;
  int64_t *objs, nobjs, capobjs; /* reference index - 1 -> node */
  mt_tensor **stores;            /* storage tensors, by STORAGE node's `first` */
  int64_t nstores, capstores;
  int64_t end;
};

typedef struct reader {
  const uint8_t *p;
  int64_t len, pos;
  int ascii, long_size;
  const char *what;
  mt_t7 *f;
} reader;

#define FAIL(r, off, ...) t7_fail((r), (off), __VA_ARGS__)
static mt_status t7_fail(const reader *r, int64_t off, const char *fmt, ...) MT_PRINTF(3, 4);
static mt_status t7_fail(const reader *r, int64_t off, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mt__error(MT_ERR_FORMAT, "t7: %s: byte %lld: %s", r->what, (long long)off, msg);
}

static int64_t left(const reader *r) { return r->len - r->pos; }

/* grow *arr (elements of `size` bytes) to hold `need`; 0 on failure */
static int grow(void **arr, int64_t *cap, int64_t need, size_t size) {
  if (need <= *cap) return 1;
  int64_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *p = realloc(*arr, (size_t)c * size);
  if (!p) return 0;
  *arr = p;
  *cap = c;
  return 1;
}

/* ------------------------------------------------------------------------------------------
 * scalars and arrays, binary or ascii */

static int is_space(uint8_t c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* ascii: one whitespace-separated token (as fscanf reads it) into buf */
static mt_status ascii_token(reader *r, char *buf, size_t cap, const char *what) {
  while (r->pos < r->len && is_space(r->p[r->pos])) r->pos++;
  int64_t start = r->pos;
  size_t n = 0;
  while (r->pos < r->len && !is_space(r->p[r->pos])) {
    if (n + 1 >= cap) return FAIL(r, start, "%s is not a number (token too long)", what);
    buf[n++] = (char)r->p[r->pos++];
  }
  if (n == 0) return FAIL(r, start, "the file ends where %s should be", what);
  buf[n] = 0;
  return MT_OK;
}

/* ascii files put a newline after each value or array (Torch7's auto-spacing) */
static void ascii_newline(reader *r) {
  if (r->ascii && r->pos < r->len && r->p[r->pos] == '\n') r->pos++;
}

static mt_status ascii_integer(reader *r, int64_t *out, const char *what) {
  char buf[64], *end;
  int64_t at = r->pos;
  MT_TRY(ascii_token(r, buf, sizeof buf, what));
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (*end || end == buf || errno) return FAIL(r, at, "%s is not an integer: '%s'", what, buf);
  *out = v;
  return MT_OK;
}

static mt_status ascii_double(reader *r, double *out, const char *what) {
  char buf[80], *end;
  int64_t at = r->pos;
  MT_TRY(ascii_token(r, buf, sizeof buf, what));
  *out = strtod(buf, &end);
  if (*end || end == buf) return FAIL(r, at, "%s is not a number: '%s'", what, buf);
  return MT_OK;
}

static mt_status need(reader *r, int64_t bytes, const char *what) {
  if (bytes > left(r))
    return FAIL(r, r->pos, "%s needs %lld bytes, %lld are left", what, (long long)bytes, (long long)left(r));
  return MT_OK;
}

static mt_status rd_int(reader *r, int32_t *out, const char *what) {
  if (r->ascii) {
    int64_t v, at = r->pos;
    MT_TRY(ascii_integer(r, &v, what));
    if (v < INT32_MIN || v > INT32_MAX) return FAIL(r, at, "%s %lld is out of range", what, (long long)v);
    *out = (int32_t)v;
    ascii_newline(r);
    return MT_OK;
  }
  MT_TRY(need(r, 4, what));
  memcpy(out, r->p + r->pos, 4);
  r->pos += 4;
  return MT_OK;
}

/* n longs (8 or 4 bytes each in binary) */
static mt_status rd_longs(reader *r, int64_t *out, int64_t n, const char *what) {
  if (r->ascii) {
    for (int64_t i = 0; i < n; i++) MT_TRY(ascii_integer(r, &out[i], what));
    if (n > 0) ascii_newline(r);
    return MT_OK;
  }
  MT_TRY(need(r, n * r->long_size, what));
  for (int64_t i = 0; i < n; i++) {
    if (r->long_size == 8) {
      memcpy(&out[i], r->p + r->pos, 8);
    } else {
      int32_t v;
      memcpy(&v, r->p + r->pos, 4);
      out[i] = v;
    }
    r->pos += r->long_size;
  }
  return MT_OK;
}

static mt_status rd_double(reader *r, double *out, const char *what) {
  if (r->ascii) {
    MT_TRY(ascii_double(r, out, what));
    ascii_newline(r);
    return MT_OK;
  }
  MT_TRY(need(r, 8, what));
  memcpy(out, r->p + r->pos, 8);
  r->pos += 8;
  return MT_OK;
}

/* a length-prefixed string: its offset and length in the input */
static mt_status rd_string(reader *r, int64_t *off, int64_t *len, const char *what) {
  int32_t n = 0;
  int64_t at = r->pos;
  MT_TRY(rd_int(r, &n, what));
  if (n < 0) return FAIL(r, at, "%s has a negative length %d", what, n);
  MT_TRY(need(r, n, what));
  *off = r->pos;
  *len = n;
  r->pos += n;
  if (n > 0) ascii_newline(r);
  return MT_OK;
}

/* ------------------------------------------------------------------------------------------
 * nodes */

static mt_status new_node(reader *r, int kind, int64_t off, int64_t *idx) {
  mt_t7 *f = r->f;
  if (f->n >= T7_MAX_NODES) return FAIL(r, off, "more than %d items", T7_MAX_NODES);
  if (!grow((void **)&f->nodes, &f->cap, f->n + 1, sizeof *f->nodes))
    return mt__error(MT_ERR_MEMORY, "t7: %s: out of memory", r->what);
  mt_t7_node *nd = &f->nodes[f->n];
  memset(nd, 0, sizeof *nd);
  nd->kind = kind;
  nd->offset = off;
  nd->dtype = -1;
  *idx = f->n++;
  return MT_OK;
}

static mt_status reserve_kids(reader *r, int64_t count, int64_t *first) {
  mt_t7 *f = r->f;
  if (!grow((void **)&f->kids, &f->capkids, f->nkids + count, sizeof *f->kids))
    return mt__error(MT_ERR_MEMORY, "t7: %s: out of memory", r->what);
  *first = f->nkids;
  for (int64_t i = 0; i < count; i++) f->kids[f->nkids + i] = -1;
  f->nkids += count;
  return MT_OK;
}

/* the dtype of 'torch.<Name>Tensor' / 'torch.<Name>Storage' (cutorch's torch.Cuda<Name>... and
 * torch.CudaTensor, torch.CudaStorage as float); *kind: MT_T7_TENSOR, MT_T7_STORAGE or
 * MT_T7_OBJECT (any other class). -1 for a torch tensor/storage class with no moontorch dtype. */
#define T7_TORCH_NAME(E, N, T, CT, NAME, TORCH, ST, FL, ...) TORCH,
static const char *const t7_names[MT_NUM_DTYPES] = {MT_DTYPES(T7_TORCH_NAME, ~)};

static int class_dtype(const char *name, int *kind, int *cuda) {
  size_t n = strlen(name);
  *kind = MT_T7_OBJECT;
  *cuda = 0;
  int k;
  size_t suffix;
  if (strncmp(name, "torch.", 6)) return 0;
  if (n > 12 && !strcmp(name + n - 6, "Tensor")) k = MT_T7_TENSOR, suffix = 6;
  else if (n > 13 && !strcmp(name + n - 7, "Storage")) k = MT_T7_STORAGE, suffix = 7;
  else return 0;
  *kind = k;
  const char *base = name + 6;
  size_t blen = n - 6 - suffix;
  if (blen >= 4 && !strncmp(base, "Cuda", 4)) {
    *cuda = 1;
    base += 4;
    blen -= 4;
    if (blen == 0) return MT_F32;
  }
  for (int d = 0; d < MT_NUM_DTYPES; d++)
    if (strlen(t7_names[d]) == blen && !strncmp(base, t7_names[d], blen)) return d;
  return -1;
}

static mt_status t7_object(reader *r, int depth, int64_t *out);

/* a storage's count and elements, into a new 1-d CPU tensor */
static mt_status t7_storage(reader *r, int64_t idx, int dtype) {
  int64_t at = r->pos, n;
  MT_TRY(rd_longs(r, &n, 1, "storage size"));
  if (n < 0) return FAIL(r, at, "storage size %lld is negative", (long long)n);
  int64_t esize = (int64_t)mt_dtype_size(dtype);
  int raw = dtype == MT_U8 || dtype == MT_BOOL; /* bytes are written raw in ascii files too */
  if (n > left(r) || (!r->ascii || raw ? n * esize > left(r) : 0))
    return FAIL(r, at, "storage of %lld %s elements, but %lld bytes are left", (long long)n, mt_dtype_name(dtype),
                (long long)left(r));
  mt_t7 *f = r->f;
  if (!grow((void **)&f->stores, &f->capstores, f->nstores + 1, sizeof *f->stores))
    return mt__error(MT_ERR_MEMORY, "t7: %s: out of memory", r->what);
  mt_tensor *t = NULL;
  MT_TRY(mt_tensor_new(&t, dtype, -1, 1, &n));
  f->stores[f->nstores] = t;
  f->nodes[idx].first = f->nstores++;
  f->nodes[idx].numel = n;
  uint8_t *dst = mt_tensor_data(t);
  int64_t data_at = r->pos;
  if (!r->ascii || raw) {
    if (n > 0) memcpy(dst, r->p + r->pos, (size_t)(n * esize));
    r->pos += n * esize;
    if (r->ascii && n > 0) ascii_newline(r);
  } else if (dtype == MT_I64 || dtype == MT_I32) {
    for (int64_t i = 0; i < n; i++) {
      int64_t v, vat = r->pos;
      MT_TRY(ascii_integer(r, &v, "storage element"));
      if (dtype == MT_I64) {
        memcpy(dst + 8 * i, &v, 8);
      } else {
        if (v < INT32_MIN || v > INT32_MAX) return FAIL(r, vat, "int element %lld is out of range", (long long)v);
        int32_t w = (int32_t)v;
        memcpy(dst + 4 * i, &w, 4);
      }
    }
    if (n > 0) ascii_newline(r);
  } else { /* floating: read as double, round once into the dtype */
    mt_tensor *tmp = NULL;
    MT_TRY(mt_tensor_new(&tmp, MT_F64, -1, 1, &n));
    double *d = mt_tensor_data(tmp);
    mt_status st = MT_OK;
    for (int64_t i = 0; i < n && st == MT_OK; i++) st = ascii_double(r, &d[i], "storage element");
    if (st == MT_OK) st = mt_copy(t, tmp);
    mt_tensor_release(tmp);
    MT_TRY(st);
    if (n > 0) ascii_newline(r);
  }
  if (dtype == MT_BOOL)
    for (int64_t i = 0; i < n; i++)
      if (dst[i] > 1) return FAIL(r, data_at, "bool storage element %lld is %d (not 0 or 1)", (long long)i + 1, dst[i]);
  return MT_OK;
}

/* a tensor's header and its storage object; the extent must lie inside the storage */
static mt_status t7_tensor(reader *r, int64_t idx, int depth, int dtype) {
  int64_t at = r->pos;
  int32_t nd = 0;
  MT_TRY(rd_int(r, &nd, "tensor dimension count"));
  if (nd < 0 || nd > MT_MAX_DIMS) return FAIL(r, at, "tensor with %d dimensions (0 to %d supported)", nd, MT_MAX_DIMS);
  mt_t7 *f = r->f;
  if (!grow((void **)&f->dims, &f->capdims, f->ndims + 2 * nd + 1, sizeof *f->dims)) /* never NULL */
    return mt__error(MT_ERR_MEMORY, "t7: %s: out of memory", r->what);
  int64_t dims = f->ndims, off;
  f->ndims += 2 * nd;
  int64_t sizes_at = r->pos;
  MT_TRY(rd_longs(r, f->dims + dims, nd, "tensor sizes"));
  MT_TRY(rd_longs(r, f->dims + dims + nd, nd, "tensor strides"));
  int64_t off_at = r->pos;
  MT_TRY(rd_longs(r, &off, 1, "tensor storage offset"));
  const int64_t *sz = f->dims + dims, *st = f->dims + dims + nd;
  /* the last element's position, 0-based: offset-1 + sum (size-1)*stride, all < 2^62 */
  const int64_t lim = (int64_t)1 << 62;
  int empty = 0;
  for (int d = 0; d < nd; d++) {
    if (sz[d] < 0 || sz[d] >= lim || st[d] < 0 || st[d] >= lim)
      return FAIL(r, sizes_at, "tensor size %lld or stride %lld of dimension %d is out of range", (long long)sz[d],
                  (long long)st[d], d + 1);
    empty |= sz[d] == 0;
  }
  if (off < 0 || off > lim) return FAIL(r, off_at, "tensor storage offset %lld is out of range", (long long)off);
  int64_t last = off - 1;
  for (int d = 0; d < nd && !empty; d++) {
    __int128 span = (__int128)(sz[d] - 1) * st[d] + last;
    if (span >= lim) return FAIL(r, sizes_at, "tensor extent overflows");
    last = (int64_t)span;
  }
  int64_t first = 0;
  MT_TRY(reserve_kids(r, 1, &first));
  int64_t child = 0, child_at = r->pos;
  MT_TRY(t7_object(r, depth + 1, &child));
  f->kids[first] = child;
  mt_t7_node *nd_ = &f->nodes[idx];
  nd_->first = first;
  nd_->count = 1;
  nd_->ndim = nd;
  nd_->dims = dims;
  nd_->storage_offset = off > 0 ? off - 1 : 0;
  const mt_t7_node *s = &f->nodes[child];
  if (s->kind == MT_T7_REF) s = &f->nodes[s->first];
  if (s->kind == MT_T7_NIL) { /* Torch7's empty tensor (0 dimensions) or one with a size 0 */
    if (!empty && nd > 0) return FAIL(r, child_at, "a tensor with elements has no storage");
    nd_->count = 0;
    return MT_OK;
  }
  if (s->kind != MT_T7_STORAGE) return FAIL(r, child_at, "a tensor's storage is not a storage object");
  if (s->dtype != dtype)
    return FAIL(r, child_at, "a %s tensor has a %s storage", mt_dtype_name(dtype), mt_dtype_name(s->dtype));
  if (off < 1 && !empty) return FAIL(r, off_at, "tensor storage offset %lld is below 1", (long long)off);
  if (!empty && last >= s->numel)
    return FAIL(r, at, "tensor reaches element %lld of a storage of %lld", (long long)last + 1, (long long)s->numel);
  return MT_OK;
}

/* a torch object: version, class name and the class's data */
static mt_status t7_torch(reader *r, int64_t idx, int depth) {
  int64_t voff, vlen, coff, clen, at = r->pos;
  MT_TRY(rd_string(r, &voff, &vlen, "class version"));
  if (vlen >= 2 && r->p[voff] == 'V' && r->p[voff + 1] == ' ') {
    at = r->pos;
    MT_TRY(rd_string(r, &coff, &clen, "class name"));
  } else { /* files from before versions: the first string is the class name */
    coff = voff;
    clen = vlen;
  }
  char name[T7_MAX_CLASS + 1];
  if (clen < 1 || clen > T7_MAX_CLASS) return FAIL(r, at, "class name of %lld bytes", (long long)clen);
  for (int64_t i = 0; i < clen; i++) {
    uint8_t c = r->p[coff + i];
    /* printable ASCII, no spaces: torch.class takes any string ('class.<uuid>' has dashes) */
    if (c <= ' ' || c > '~') return FAIL(r, at, "class name has a byte %d that no class name has", c);
    name[i] = (char)c;
  }
  name[clen] = 0;
  mt_t7_node *nd = &r->f->nodes[idx];
  nd->str = coff;
  nd->len = clen;
  int kind, cuda, dtype = class_dtype(name, &kind, &cuda);
  if (dtype < 0) return FAIL(r, at, "class %s is not supported: moontorch has no such dtype", name);
  nd->kind = kind;
  nd->cuda = cuda;
  if (kind == MT_T7_STORAGE) {
    nd->dtype = dtype;
    return t7_storage(r, idx, dtype);
  }
  if (kind == MT_T7_TENSOR) {
    nd->dtype = dtype;
    return t7_tensor(r, idx, depth, dtype);
  }
  /* any other class wrote its field table (a new table object) */
  int64_t first = 0, child = 0, child_at = r->pos;
  MT_TRY(reserve_kids(r, 1, &first));
  MT_TRY(t7_object(r, depth + 1, &child));
  if (r->f->nodes[child].kind != MT_T7_TABLE)
    return FAIL(r, child_at, "object of class %s has no field table (classes with their own format are not loaded)",
                name);
  r->f->kids[first] = child;
  r->f->nodes[idx].first = first;
  r->f->nodes[idx].count = 1;
  return MT_OK;
}

/* a function: its bytecode (kept as a byte range, never loaded here) and its upvalue table */
static mt_status t7_function(reader *r, int64_t idx, int32_t tag, int depth) {
  int64_t off = 0, len = 0, first = 0, child = 0, at;
  MT_TRY(rd_string(r, &off, &len, "function bytecode"));
  mt_t7_node *nd = &r->f->nodes[idx];
  nd->str = off;
  nd->len = len;
  nd->number = tag;
  MT_TRY(reserve_kids(r, 1, &first));
  at = r->pos;
  MT_TRY(t7_object(r, depth + 1, &child));
  if (r->f->nodes[child].kind != MT_T7_TABLE) return FAIL(r, at, "a function's upvalues are not a table");
  r->f->kids[first] = child;
  r->f->nodes[idx].first = first;
  r->f->nodes[idx].count = 1;
  return MT_OK;
}

static mt_status t7_object(reader *r, int depth, int64_t *out) {
  int64_t at = r->pos;
  if (depth > T7_MAX_DEPTH) return FAIL(r, at, "objects nested deeper than %d", T7_MAX_DEPTH);
  int32_t tag = 0;
  MT_TRY(rd_int(r, &tag, "type tag"));
  mt_t7 *f = r->f;
  int64_t idx;
  switch (tag) {
    case TAG_NIL: return new_node(r, MT_T7_NIL, at, out);
    case TAG_NUMBER: {
      double v;
      MT_TRY(rd_double(r, &v, "number"));
      MT_TRY(new_node(r, MT_T7_NUMBER, at, out));
      f->nodes[*out].number = v;
      return MT_OK;
    }
    case TAG_BOOLEAN: {
      int32_t v;
      MT_TRY(rd_int(r, &v, "boolean"));
      MT_TRY(new_node(r, MT_T7_BOOLEAN, at, out));
      f->nodes[*out].number = v == 1;
      return MT_OK;
    }
    case TAG_STRING: {
      int64_t off, len;
      MT_TRY(rd_string(r, &off, &len, "string"));
      MT_TRY(new_node(r, MT_T7_STRING, at, out));
      f->nodes[*out].str = off;
      f->nodes[*out].len = len;
      return MT_OK;
    }
    case TAG_FUNCTION: MT_TRY(new_node(r, MT_T7_FUNCTION, at, out)); return t7_function(r, *out, tag, depth);
    case TAG_LEGACY_RECUR_FUNCTION:
    case TAG_RECUR_FUNCTION:
    case TAG_TABLE:
    case TAG_TORCH: break;
    default: return FAIL(r, at, "unknown type tag %d", tag);
  }
  int is_fn = tag == TAG_LEGACY_RECUR_FUNCTION || tag == TAG_RECUR_FUNCTION;
  int32_t ref = 0;
  int64_t ref_at = r->pos;
  MT_TRY(rd_int(r, &ref, "reference index"));
  if (ref >= 1 && ref <= f->nobjs) { /* an object seen before */
    MT_TRY(new_node(r, MT_T7_REF, at, out));
    f->nodes[*out].first = f->objs[ref - 1];
    int k = f->nodes[f->objs[ref - 1]].kind;
    if ((k == MT_T7_TABLE) != (tag == TAG_TABLE) || (k == MT_T7_FUNCTION) != is_fn)
      return FAIL(r, ref_at, "reference %d names an object of another type", ref);
    return MT_OK;
  }
  if (ref != f->nobjs + 1)
    return FAIL(r, ref_at, "bad reference index %d (%lld objects so far)", ref, (long long)f->nobjs);
  MT_TRY(new_node(r, tag == TAG_TABLE ? MT_T7_TABLE : is_fn ? MT_T7_FUNCTION : MT_T7_OBJECT, at, &idx));
  if (!grow((void **)&f->objs, &f->capobjs, f->nobjs + 1, sizeof *f->objs))
    return mt__error(MT_ERR_MEMORY, "t7: %s: out of memory", r->what);
  f->objs[f->nobjs++] = idx;
  *out = idx;
  if (tag == TAG_TORCH) return t7_torch(r, idx, depth);
  if (is_fn) return t7_function(r, idx, tag, depth);

  int32_t pairs = 0;
  int64_t size_at = r->pos;
  MT_TRY(rd_int(r, &pairs, "table size"));
  /* every key and value takes at least a 4-byte tag (a 1-byte digit in ascii) */
  if (pairs < 0 || (int64_t)pairs * 2 * (r->ascii ? 1 : 4) > left(r))
    return FAIL(r, size_at, "table of %d pairs, but %lld bytes are left", pairs, (long long)left(r));
  int64_t first = 0;
  MT_TRY(reserve_kids(r, 2 * (int64_t)pairs, &first));
  f->nodes[idx].first = first;
  f->nodes[idx].count = 2 * (int64_t)pairs;
  for (int64_t i = 0; i < 2 * (int64_t)pairs; i++) {
    int64_t child = 0, kat = r->pos;
    MT_TRY(t7_object(r, depth + 1, &child));
    int k = f->nodes[child].kind;
    if (i % 2 == 0 && (k == MT_T7_NIL || (k == MT_T7_NUMBER && f->nodes[child].number != f->nodes[child].number)))
      return FAIL(r, kat, "a table key is %s", k == MT_T7_NIL ? "nil" : "NaN");
    f->kids[first + i] = child;
  }
  return MT_OK;
}

/* ------------------------------------------------------------------------------------------
 * public */

void mt_t7_free(mt_t7 *f) {
  if (!f) return;
  for (int64_t i = 0; i < f->nstores; i++) mt_tensor_release(f->stores[i]);
  free(f->stores);
  free(f->nodes);
  free(f->kids);
  free(f->dims);
  free(f->objs);
  free(f);
}

mt_status mt_t7_parse(mt_t7 **out, const void *buf, size_t len, size_t start, int ascii, int long_size,
                      const char *what) {
  if (!out) return mt__error(MT_ERR_ARG, "t7: out is NULL");
  *out = NULL;
  if (!what) what = "input";
  if (!buf && len) return mt__error(MT_ERR_ARG, "t7: %s: buffer is NULL", what);
  if (long_size != 4 && long_size != 8) return mt__error(MT_ERR_ARG, "t7: %s: long size %d (4 or 8)", what, long_size);
  if (start > len) return mt__error(MT_ERR_ARG, "t7: %s: start %zu is past the end (%zu bytes)", what, start, len);
  mt_t7 *f = calloc(1, sizeof *f);
  if (!f) return mt__error(MT_ERR_MEMORY, "t7: %s: out of memory", what);
  reader r = {.p = buf,
              .len = (int64_t)len,
              .pos = (int64_t)start,
              .ascii = ascii != 0,
              .long_size = long_size,
              .what = what,
              .f = f};
  int64_t root;
  mt_status st = t7_object(&r, 0, &root);
  if (st != MT_OK) {
    mt_t7_free(f);
    return st;
  }
  f->end = r.pos;
  *out = f;
  return MT_OK;
}

int64_t mt_t7_count(const mt_t7 *f) { return f ? f->n : 0; }
int64_t mt_t7_end(const mt_t7 *f) { return f ? f->end : 0; }
const mt_t7_node *mt_t7_nodes(const mt_t7 *f) { return f ? f->nodes : NULL; }
const int64_t *mt_t7_children(const mt_t7 *f) { return f ? f->kids : NULL; }
const int64_t *mt_t7_dims(const mt_t7 *f) { return f ? f->dims : NULL; }

mt_tensor *mt_t7_storage(const mt_t7 *f, int64_t node) {
  if (!f || node < 0 || node >= f->n || f->nodes[node].kind != MT_T7_STORAGE) return NULL;
  return f->stores[f->nodes[node].first];
}
