/* fuzz_t7.c: libFuzzer target for mt_t7_parse (csrc/io/t7.c), the Torch7 .t7 reader.
 * The first input byte picks the mode (bit 0: ascii, bit 1: 4-byte longs), the rest is the file.
 * What must hold, whatever the bytes:
 *  - a failure returns MT_ERR_FORMAT (or MT_ERR_MEMORY) with a message "t7: fuzz: ..." and no
 *    handle;
 *  - a success gives nodes whose every index (children, references, dims, byte ranges) is in
 *    range, references point to tables, torch objects or functions started earlier, a function has
 *    one upvalue table, and every tensor lies
 *    inside its storage (each storage byte is read, so ASan sees a stray one);
 *  - the parsed file written back in binary (by the small writer below) parses again to the
 *    same nodes, numbers bit for bit, strings and storage bytes equal;
 *  - nothing crashes, leaks (every tensor byte is freed at the end) or trips the sanitizers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "moontorch.h"

static void fail(const char *what) {
  fprintf(stderr, "fuzz_t7: %s; last error: %s\n", what, mt_last_error());
  abort();
}

/* ---- invariants of a parsed file ---- */
static void check_nodes(const mt_t7 *f, const uint8_t *p, size_t len) {
  int64_t n = mt_t7_count(f);
  const mt_t7_node *nd = mt_t7_nodes(f);
  const int64_t *kids = mt_t7_children(f), *dims = mt_t7_dims(f);
  if (n < 1 || mt_t7_end(f) > (int64_t)len) fail("bad count or end");
  volatile uint8_t sink = 0;
  for (int64_t i = 0; i < n; i++) {
    const mt_t7_node *x = &nd[i];
    if (x->offset < 0 || x->offset >= (int64_t)len) fail("offset out of range");
    if (x->kind == MT_T7_STRING || x->kind == MT_T7_OBJECT || x->kind == MT_T7_TENSOR || x->kind == MT_T7_STORAGE ||
        x->kind == MT_T7_FUNCTION) {
      if (x->str < 0 || x->len < 0 || x->str + x->len > (int64_t)len) fail("string range");
      for (int64_t b = 0; b < x->len; b++) sink ^= p[x->str + b];
    }
    switch (x->kind) {
      case MT_T7_TABLE:
      case MT_T7_OBJECT:
      case MT_T7_FUNCTION:
        for (int64_t c = 0; c < x->count; c++)
          if (kids[x->first + c] <= i || kids[x->first + c] >= n) fail("child index");
        if (x->kind != MT_T7_TABLE && (x->count != 1 || nd[kids[x->first]].kind != MT_T7_TABLE)) fail("object fields");
        if (x->kind == MT_T7_FUNCTION && x->number != 6 && x->number != 7 && x->number != 8) fail("function tag");
        break;
      case MT_T7_REF: {
        const mt_t7_node *t = &nd[x->first];
        if (x->first < 0 || x->first >= i) fail("reference target");
        if (t->kind != MT_T7_TABLE && t->kind != MT_T7_OBJECT && t->kind != MT_T7_TENSOR && t->kind != MT_T7_STORAGE &&
            (t->kind != MT_T7_FUNCTION || t->number == 6))
          fail("reference to a non-object");
        break;
      }
      case MT_T7_STORAGE: {
        mt_tensor *s = mt_t7_storage(f, i);
        if (!s || mt_tensor_numel(s) != x->numel || mt_tensor_dtype(s) != x->dtype) fail("storage tensor");
        const uint8_t *d = mt_tensor_data(s);
        for (int64_t b = 0; b < x->numel * (int64_t)mt_dtype_size(x->dtype); b++) sink ^= d[b];
        break;
      }
      case MT_T7_TENSOR: {
        if (x->ndim < 0 || x->ndim > 8 || x->count < 0 || x->count > 1) fail("tensor header");
        if (x->count == 0) break;
        int64_t s = kids[x->first];
        if (s <= i || s >= n) fail("tensor storage index");
        if (nd[s].kind == MT_T7_REF) s = nd[s].first;
        if (nd[s].kind != MT_T7_STORAGE || nd[s].dtype != x->dtype) fail("tensor storage kind");
        int64_t last = x->storage_offset, empty = 0;
        for (int d = 0; d < x->ndim; d++) {
          if (dims[x->dims + d] < 0 || dims[x->dims + x->ndim + d] < 0) fail("negative size or stride");
          empty |= dims[x->dims + d] == 0;
        }
        for (int d = 0; d < x->ndim && !empty; d++) last += (dims[x->dims + d] - 1) * dims[x->dims + x->ndim + d];
        if (!empty && (last < 0 || last >= nd[s].numel)) fail("tensor outside its storage");
        if (!empty) sink ^= ((const uint8_t *)mt_tensor_data(mt_t7_storage(f, s)))[last * mt_dtype_size(x->dtype)];
        break;
      }
      default: break;
    }
  }
  (void)sink;
}

/* ---- writing the nodes back (binary, 8-byte longs) ---- */
typedef struct {
  uint8_t *b;
  size_t n, cap;
  int64_t *index;
  int32_t next;
} out;

static void put(out *o, const void *d, size_t n) {
  if (o->n + n > o->cap) {
    while (o->n + n > o->cap) o->cap = o->cap ? 2 * o->cap : 256;
    o->b = realloc(o->b, o->cap);
    if (!o->b) fail("realloc");
  }
  if (n) memcpy(o->b + o->n, d, n);
  o->n += n;
}
static void put_int(out *o, int32_t v) { put(o, &v, 4); }
static void put_long(out *o, int64_t v) { put(o, &v, 8); }
static void put_str(out *o, const uint8_t *p, int64_t off, int64_t len) {
  put_int(o, (int32_t)len);
  put(o, p + off, (size_t)len);
}

static void emit(out *o, const mt_t7 *f, const uint8_t *p, int64_t i) {
  const mt_t7_node *nd = mt_t7_nodes(f), *x = &nd[i];
  const int64_t *kids = mt_t7_children(f), *dims = mt_t7_dims(f);
  switch (x->kind) {
    case MT_T7_NIL: put_int(o, 0); return;
    case MT_T7_NUMBER:
      put_int(o, 1);
      put(o, &x->number, 8);
      return;
    case MT_T7_BOOLEAN:
      put_int(o, 5);
      put_int(o, x->number != 0);
      return;
    case MT_T7_STRING:
      put_int(o, 2);
      put_str(o, p, x->str, x->len);
      return;
    case MT_T7_REF: {
      int k = nd[x->first].kind;
      put_int(o, k == MT_T7_TABLE ? 3 : k == MT_T7_FUNCTION ? (int32_t)nd[x->first].number : 4);
      put_int(o, (int32_t)o->index[x->first]);
      return;
    }
    case MT_T7_FUNCTION:
      if (x->number != 6) break;
      put_int(o, 6); /* no reference index */
      put_str(o, p, x->str, x->len);
      emit(o, f, p, kids[x->first]);
      return;
    default: break;
  }
  o->index[i] = ++o->next;
  put_int(o, x->kind == MT_T7_TABLE ? 3 : x->kind == MT_T7_FUNCTION ? (int32_t)x->number : 4);
  put_int(o, o->next);
  if (x->kind == MT_T7_FUNCTION) {
    put_str(o, p, x->str, x->len);
    emit(o, f, p, kids[x->first]);
    return;
  }
  if (x->kind == MT_T7_TABLE) {
    put_int(o, (int32_t)(x->count / 2));
    for (int64_t c = 0; c < x->count; c++) emit(o, f, p, kids[x->first + c]);
    return;
  }
  put_str(o, (const uint8_t *)"V 1", 0, 3);
  put_str(o, p, x->str, x->len);
  if (x->kind == MT_T7_OBJECT) {
    emit(o, f, p, kids[x->first]);
  } else if (x->kind == MT_T7_STORAGE) {
    put_long(o, x->numel);
    put(o, mt_tensor_data(mt_t7_storage(f, i)), (size_t)x->numel * mt_dtype_size(x->dtype));
  } else { /* tensor */
    put_int(o, x->ndim);
    for (int d = 0; d < 2 * x->ndim; d++) put_long(o, dims[x->dims + d]);
    put_long(o, x->storage_offset + 1);
    if (x->count) emit(o, f, p, kids[x->first]);
    else put_int(o, 0);
  }
}

/* the second parse must match the first, node by node */
static void check_same(const mt_t7 *a, const uint8_t *pa, const mt_t7 *b, const uint8_t *pb) {
  int64_t n = mt_t7_count(a);
  if (mt_t7_count(b) != n) fail("round trip: other node count");
  const mt_t7_node *x = mt_t7_nodes(a), *y = mt_t7_nodes(b);
  const int64_t *ka = mt_t7_children(a), *kb = mt_t7_children(b), *da = mt_t7_dims(a), *db = mt_t7_dims(b);
  for (int64_t i = 0; i < n; i++) {
    if (x[i].kind != y[i].kind || x[i].dtype != y[i].dtype || x[i].ndim != y[i].ndim || x[i].count != y[i].count ||
        x[i].len != y[i].len || memcmp(&x[i].number, &y[i].number, 8))
      fail("round trip: other node");
    if (x[i].len && memcmp(pa + x[i].str, pb + y[i].str, (size_t)x[i].len)) fail("round trip: other string");
    if (x[i].kind == MT_T7_REF && x[i].first != y[i].first) fail("round trip: other reference");
    if (x[i].kind == MT_T7_TABLE || x[i].kind == MT_T7_OBJECT || x[i].kind == MT_T7_FUNCTION ||
        (x[i].kind == MT_T7_TENSOR && x[i].count))
      for (int64_t c = 0; c < x[i].count; c++)
        if (ka[x[i].first + c] != kb[y[i].first + c]) fail("round trip: other child");
    if (x[i].kind == MT_T7_TENSOR) {
      if (x[i].storage_offset != y[i].storage_offset) fail("round trip: other offset");
      for (int d = 0; d < 2 * x[i].ndim; d++)
        if (da[x[i].dims + d] != db[y[i].dims + d]) fail("round trip: other sizes");
    }
    if (x[i].kind == MT_T7_STORAGE) {
      if (x[i].numel != y[i].numel) fail("round trip: other storage size");
      size_t bytes = (size_t)x[i].numel * mt_dtype_size(x[i].dtype);
      if (bytes && memcmp(mt_tensor_data(mt_t7_storage(a, i)), mt_tensor_data(mt_t7_storage(b, i)), bytes))
        fail("round trip: other storage bytes");
    }
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  mt_set_num_threads(1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int ascii = data[0] & 1, long_size = (data[0] & 2) ? 4 : 8;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  mt_t7 *f = (mt_t7 *)1;
  mt_status st = mt_t7_parse(&f, p, n, 0, ascii, long_size, "fuzz");
  if (st != MT_OK) {
    if (st != MT_ERR_FORMAT && st != MT_ERR_MEMORY) fail("unexpected status");
    if (f) fail("a handle came back with an error");
    if (strncmp(mt_last_error(), "t7: fuzz: ", 10)) fail("message does not name the input");
  } else {
    check_nodes(f, p, n);
    out o = {0};
    o.index = calloc((size_t)mt_t7_count(f), sizeof *o.index);
    if (!o.index) fail("calloc");
    emit(&o, f, p, 0);
    mt_t7 *g = NULL;
    if (mt_t7_parse(&g, o.b, o.n, 0, 0, 8, "fuzz") != MT_OK) fail("the file written back does not parse");
    if (mt_t7_end(g) != (int64_t)o.n) fail("the file written back has bytes left over");
    check_same(f, p, g, o.b);
    mt_t7_free(g);
    free(o.b);
    free(o.index);
    mt_t7_free(f);
  }
  if (mt_memory_allocated(-1) != 0) fail("tensor memory still allocated");
  return 0;
}
