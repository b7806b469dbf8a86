/* safetensors.c: checkpoint files in the safetensors layout
 *   [8-byte little-endian header length N][N bytes of JSON header][raw little-endian data]
 * The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
 * (offsets relative to the data section) plus an optional "__metadata__" object of strings.
 * The header is parsed with cJSON; every offset and size is checked against the file size and
 * against dtype*shape before any data is read. Files are written atomically: a temporary
 * file beside the target, fsync, rename; a save first removes the temporaries of writers that
 * died mid-save (st_sweep_stale). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "../core/tensor.h"
#include "../core/error.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host (the format stores little-endian data)"
#endif

#define ST_MAX_HEADER (100u << 20)    /* the reference implementation's limit */
#define ST_MAX_INT 9007199254740992.0 /* 2^53: JSON numbers beyond this are not exact in a double */

#define ST_NAME(E, N, T, CT, NAME, TORCH, ST, FL, ...) [E] = ST,
static const char *const st_dtype_names[MT_NUM_DTYPES] = {MT_DTYPES(ST_NAME, ~)};

typedef struct st_entry {
  char *name;
  int dtype, ndim;
  int64_t sizes[MT_MAX_DIMS];
  int64_t begin, end; /* byte range within the data section */
} st_entry;

struct mt_safetensors {
  char *path;
  int fd;
  int64_t data_start, data_len;
  int n, nmeta;
  st_entry *entries;
  char **meta_keys, **meta_values;
};

/* ------------------------------------------------------------------------------------------
 * reading */

void mt_safetensors_close(mt_safetensors *f) {
  if (!f) return;
  if (f->fd >= 0) close(f->fd);
  for (int i = 0; i < f->n; i++) free(f->entries[i].name);
  for (int i = 0; i < f->nmeta; i++) {
    free(f->meta_keys[i]);
    free(f->meta_values[i]);
  }
  free(f->entries);
  free(f->meta_keys);
  free(f->meta_values);
  free(f->path);
  free(f);
}

/* a JSON number that is an exact non-negative integer below 2^53 */
static int st_get_uint(const cJSON *j, int64_t *out) {
  if (!cJSON_IsNumber(j)) return 0;
  double d = j->valuedouble;
  if (!(d >= 0 && d <= ST_MAX_INT) || d != (double)(int64_t)d) return 0;
  *out = (int64_t)d;
  return 1;
}

static mt_status st_parse_metadata(mt_safetensors *f, const cJSON *meta) {
  const char *p = f->path;
  if (cJSON_IsNull(meta)) return MT_OK;
  if (!cJSON_IsObject(meta)) return mt__error(MT_ERR_IO, "safetensors: %s: __metadata__ is not a JSON object", p);
  int n = cJSON_GetArraySize(meta);
  f->meta_keys = calloc(n ? n : 1, sizeof(char *));
  f->meta_values = calloc(n ? n : 1, sizeof(char *));
  if (!f->meta_keys || !f->meta_values) return mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", p);
  const cJSON *c;
  cJSON_ArrayForEach(c, meta) {
    if (!cJSON_IsString(c))
      return mt__error(MT_ERR_IO, "safetensors: %s: __metadata__ value of '%s' is not a string", p, c->string);
    f->meta_keys[f->nmeta] = strdup(c->string);
    f->meta_values[f->nmeta] = strdup(c->valuestring);
    f->nmeta++;
    if (!f->meta_keys[f->nmeta - 1] || !f->meta_values[f->nmeta - 1])
      return mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", p);
  }
  return MT_OK;
}

/* one tensor entry: dtype, shape and offsets, checked against each other and the file */
static mt_status st_parse_entry(mt_safetensors *f, const cJSON *j, st_entry *e) {
  const char *p = f->path, *name = j->string;
  if (!cJSON_IsObject(j)) return mt__error(MT_ERR_IO, "safetensors: %s: entry '%s' is not a JSON object", p, name);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
  const cJSON *of = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
  if (!cJSON_IsString(dt)) return mt__error(MT_ERR_IO, "safetensors: %s: tensor '%s' has no dtype string", p, name);
  e->dtype = -1;
  for (int d = 0; d < MT_NUM_DTYPES; d++)
    if (strcmp(dt->valuestring, st_dtype_names[d]) == 0) e->dtype = d;
  if (e->dtype < 0)
    return mt__error(MT_ERR_DTYPE, "safetensors: %s: tensor '%s' has unsupported dtype '%s'", p, name, dt->valuestring);
  if (!cJSON_IsArray(sh)) return mt__error(MT_ERR_IO, "safetensors: %s: tensor '%s' has no shape array", p, name);
  e->ndim = cJSON_GetArraySize(sh);
  if (e->ndim > MT_MAX_DIMS)
    return mt__error(MT_ERR_IO, "safetensors: %s: tensor '%s' has %d dimensions; at most %d are supported", p, name,
                     e->ndim, MT_MAX_DIMS);
  /* numel * element size, refusing overflow: the size must fit in the file anyway */
  int64_t bytes = (int64_t)mt__dtype_size(e->dtype);
  int zero = 0;
  for (int d = 0; d < e->ndim; d++) {
    if (!st_get_uint(cJSON_GetArrayItem(sh, d), &e->sizes[d]))
      return mt__error(MT_ERR_IO,
                       "safetensors: %s: tensor '%s' has a shape entry %d that is not a non-negative integer", p, name,
                       d);
    if (e->sizes[d] == 0) zero = 1;
    else if (!zero && bytes > INT64_MAX / e->sizes[d])
      return mt__error(MT_ERR_IO, "safetensors: %s: tensor '%s' shape is too large", p, name);
    else if (!zero) bytes *= e->sizes[d];
  }
  if (zero) bytes = 0;
  if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2 || !st_get_uint(cJSON_GetArrayItem(of, 0), &e->begin) ||
      !st_get_uint(cJSON_GetArrayItem(of, 1), &e->end))
    return mt__error(MT_ERR_IO, "safetensors: %s: tensor '%s' data_offsets is not a pair of non-negative integers", p,
                     name);
  if (e->begin > e->end)
    return mt__error(MT_ERR_IO, "safetensors: %s: tensor '%s' data_offsets [%lld, %lld] end before they begin", p, name,
                     (long long)e->begin, (long long)e->end);
  if (e->end > f->data_len)
    return mt__error(MT_ERR_IO,
                     "safetensors: %s: tensor '%s' data_offsets [%lld, %lld] exceed the %lld bytes after the header", p,
                     name, (long long)e->begin, (long long)e->end, (long long)f->data_len);
  if (e->end - e->begin != bytes) {
    char sb[128];
    return mt__error(MT_ERR_IO,
                     "safetensors: %s: tensor '%s' data_offsets [%lld, %lld] hold %lld bytes but %s %s needs %lld", p,
                     name, (long long)e->begin, (long long)e->end, (long long)(e->end - e->begin),
                     st_dtype_names[e->dtype], mt__sizes_str(e->ndim, e->sizes, sb, sizeof sb), (long long)bytes);
  }
  e->name = strdup(name);
  if (!e->name) return mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", p);
  return MT_OK;
}

static int st_cmp_begin(const void *a, const void *b) {
  const st_entry *x = *(st_entry *const *)a, *y = *(st_entry *const *)b;
  return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* no two non-empty data ranges may share a byte */
static mt_status st_check_overlap(mt_safetensors *f) {
  if (f->n < 2) return MT_OK;
  st_entry **order = malloc(sizeof(st_entry *) * f->n);
  if (!order) return mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", f->path);
  for (int i = 0; i < f->n; i++) order[i] = &f->entries[i];
  qsort(order, f->n, sizeof *order, st_cmp_begin);
  const st_entry *prev = NULL;
  mt_status st = MT_OK;
  for (int i = 0; i < f->n && st == MT_OK; i++) {
    const st_entry *e = order[i];
    if (e->begin == e->end) continue;
    if (prev && e->begin < prev->end)
      st = mt__error(
          MT_ERR_IO, "safetensors: %s: tensor '%s' data_offsets [%lld, %lld] overlap tensor '%s' [%lld, %lld]", f->path,
          e->name, (long long)e->begin, (long long)e->end, prev->name, (long long)prev->begin, (long long)prev->end);
    prev = e;
  }
  free(order);
  return st;
}

static mt_status st_parse_header(mt_safetensors *f, const char *text, size_t len) {
  const char *p = f->path, *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    long long off = at && at >= text && at <= text + len ? (long long)(at - text) + 8 : 8;
    return mt__error(MT_ERR_IO, "safetensors: %s: header is not valid JSON (error near byte %lld)", p, off);
  }
  mt_status st = MT_OK;
  for (const char *q = end; q && q < text + len && st == MT_OK; q++)
    if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r' && *q != '\0')
      st = mt__error(MT_ERR_IO, "safetensors: %s: unexpected data after the JSON header at byte %lld", p,
                     (long long)(q - text) + 8);
  if (st == MT_OK && !cJSON_IsObject(root))
    st = mt__error(MT_ERR_IO, "safetensors: %s: header is not a JSON object", p);
  if (st == MT_OK) {
    int n = cJSON_GetArraySize(root);
    f->entries = calloc(n ? n : 1, sizeof(st_entry));
    if (!f->entries) st = mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", p);
    const cJSON *c;
    int seen_meta = 0;
    cJSON_ArrayForEach(c, root) {
      if (st != MT_OK) break;
      if (strcmp(c->string, "__metadata__") == 0) {
        if (seen_meta++) st = mt__error(MT_ERR_IO, "safetensors: %s: __metadata__ appears twice", p);
        else st = st_parse_metadata(f, c);
        continue;
      }
      for (int i = 0; i < f->n && st == MT_OK; i++)
        if (strcmp(f->entries[i].name, c->string) == 0)
          st = mt__error(MT_ERR_IO, "safetensors: %s: tensor '%s' appears twice in the header", p, c->string);
      if (st == MT_OK) st = st_parse_entry(f, c, &f->entries[f->n]);
      if (st == MT_OK) f->n++;
    }
  }
  cJSON_Delete(root);
  if (st == MT_OK) st = st_check_overlap(f);
  return st;
}

static mt_status st_pread(int fd, void *buf, int64_t len, int64_t off, const char *path) {
  char *b = buf;
  while (len > 0) {
    ssize_t r = pread(fd, b, (size_t)(len > (1 << 30) ? (1 << 30) : len), (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return mt__error(MT_ERR_IO, "safetensors: %s: read failed at byte %lld: %s", path, (long long)off,
                       strerror(errno));
    if (r == 0)
      return mt__error(MT_ERR_IO, "safetensors: %s: file ends at byte %lld (was it truncated while open?)", path,
                       (long long)off);
    b += r;
    len -= r;
    off += r;
  }
  return MT_OK;
}

mt_status mt_safetensors_open(mt_safetensors **out, const char *path) {
  if (!out || !path) return mt__error(MT_ERR_ARG, "safetensors: open: NULL argument");
  *out = NULL;
  mt_safetensors *f = calloc(1, sizeof *f);
  if (!f) return mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", path);
  f->fd = -1;
  f->path = strdup(path);
  if (!f->path) {
    free(f);
    return mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", path);
  }
  mt_status st = MT_OK;
  char *header = NULL;
  struct stat sb;
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0) st = mt__error(MT_ERR_IO, "safetensors: %s: cannot open: %s", path, strerror(errno));
  else if (fstat(f->fd, &sb) != 0) st = mt__error(MT_ERR_IO, "safetensors: %s: cannot stat: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode)) st = mt__error(MT_ERR_IO, "safetensors: %s: not a regular file", path);
  else if (sb.st_size < 8)
    st = mt__error(MT_ERR_IO, "safetensors: %s: file is %lld bytes, too short for the 8-byte header length", path,
                   (long long)sb.st_size);
  if (st == MT_OK) {
    unsigned char lenb[8];
    st = st_pread(f->fd, lenb, 8, 0, path);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | lenb[i];
    int64_t avail = (int64_t)sb.st_size - 8;
    if (st == MT_OK && hl > (uint64_t)avail)
      st = mt__error(MT_ERR_IO, "safetensors: %s: header length %llu at byte 0 exceeds the %lld bytes that follow it",
                     path, (unsigned long long)hl, (long long)avail);
    else if (st == MT_OK && hl > ST_MAX_HEADER)
      st = mt__error(MT_ERR_IO, "safetensors: %s: header length %llu exceeds the %u-byte limit", path,
                     (unsigned long long)hl, ST_MAX_HEADER);
    else if (st == MT_OK && hl < 2)
      st = mt__error(MT_ERR_IO, "safetensors: %s: header length %llu is too short for a JSON object", path,
                     (unsigned long long)hl);
    if (st == MT_OK) {
      f->data_start = 8 + (int64_t)hl;
      f->data_len = (int64_t)sb.st_size - f->data_start;
      header = malloc(hl + 1);
      if (!header)
        st = mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory for a %llu-byte header", path,
                       (unsigned long long)hl);
      else st = st_pread(f->fd, header, (int64_t)hl, 8, path);
      if (st == MT_OK) {
        header[hl] = '\0';
        if (header[0] != '{')
          st = mt__error(MT_ERR_IO, "safetensors: %s: header at byte 8 does not start with '{'", path);
        else st = st_parse_header(f, header, hl);
      }
    }
  }
  free(header);
  if (st != MT_OK) {
    mt_safetensors_close(f);
    return st;
  }
  *out = f;
  return MT_OK;
}

int mt_safetensors_count(const mt_safetensors *f) { return f ? f->n : 0; }
const char *mt_safetensors_name(const mt_safetensors *f, int i) {
  return f && i >= 0 && i < f->n ? f->entries[i].name : NULL;
}
int mt_safetensors_find(const mt_safetensors *f, const char *name) {
  if (!f || !name) return -1;
  for (int i = 0; i < f->n; i++)
    if (strcmp(f->entries[i].name, name) == 0) return i;
  return -1;
}
int mt_safetensors_meta_count(const mt_safetensors *f) { return f ? f->nmeta : 0; }
const char *mt_safetensors_meta_key(const mt_safetensors *f, int i) {
  return f && i >= 0 && i < f->nmeta ? f->meta_keys[i] : NULL;
}
const char *mt_safetensors_meta_value(const mt_safetensors *f, int i) {
  return f && i >= 0 && i < f->nmeta ? f->meta_values[i] : NULL;
}

mt_status mt_safetensors_info(const mt_safetensors *f, int i, int *dtype, int *ndim, int64_t *sizes) {
  if (!f) return mt__error(MT_ERR_ARG, "safetensors: info: NULL file");
  if (i < 0 || i >= f->n)
    return mt__error(MT_ERR_INDEX, "safetensors: %s: tensor index %d out of range for %d tensors", f->path, i, f->n);
  const st_entry *e = &f->entries[i];
  if (dtype) *dtype = e->dtype;
  if (ndim) *ndim = e->ndim;
  if (sizes) memcpy(sizes, e->sizes, sizeof(int64_t) * (size_t)e->ndim);
  return MT_OK;
}

mt_status mt_safetensors_read(mt_safetensors *f, int i, mt_tensor **out) {
  MT_TRY(mt_safetensors_info(f, i, NULL, NULL, NULL));
  if (!out) return mt__error(MT_ERR_ARG, "safetensors: %s: read: NULL output", f->path);
  const st_entry *e = &f->entries[i];
  mt_tensor *t = NULL;
  MT_TRY(mt_tensor_new(&t, e->dtype, MT_CPU, e->ndim, e->sizes));
  mt_status st = MT_OK;
  if (e->end > e->begin) st = st_pread(f->fd, mt__data(t), e->end - e->begin, f->data_start + e->begin, f->path);
  if (st == MT_OK && e->dtype == MT_BOOL) { /* any non-zero byte is true; our bools are 0/1 */
    uint8_t *b = (uint8_t *)mt__data(t);
    for (int64_t k = 0; k < e->end - e->begin; k++) b[k] = b[k] != 0;
  }
  if (st != MT_OK) {
    mt_tensor_release(t);
    return st;
  }
  *out = t;
  return MT_OK;
}

/* ------------------------------------------------------------------------------------------
 * writing */

static mt_status st_add_raw_int(cJSON *arr, int64_t v, const char *path) {
  char num[32];
  snprintf(num, sizeof num, "%lld", (long long)v); /* exact integers, never 1e+15 */
  cJSON *r = cJSON_CreateRaw(num);
  if (!r || !cJSON_AddItemToArray(arr, r)) {
    cJSON_Delete(r);
    return mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", path);
  }
  return MT_OK;
}

/* the JSON header text, padded with spaces to a multiple of 8 so the data stays aligned */
static mt_status st_build_header(const char *path, int n, const char *const *names, mt_tensor *const *tensors,
                                 int nmeta, const char *const *keys, const char *const *values, char **text,
                                 size_t *len) {
  cJSON *root = cJSON_CreateObject();
  mt_status st = root ? MT_OK : mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", path);
  if (st == MT_OK && nmeta > 0) {
    cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
    for (int i = 0; i < nmeta && st == MT_OK; i++) {
      if (!keys[i] || !values[i]) st = mt__error(MT_ERR_ARG, "safetensors: %s: metadata entry %d is NULL", path, i + 1);
      else if (!meta || !cJSON_AddStringToObject(meta, keys[i], values[i]))
        st = mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", path);
    }
  }
  int64_t off = 0;
  for (int i = 0; i < n && st == MT_OK; i++) {
    const mt_tensor *t = tensors[i];
    cJSON *e = cJSON_AddObjectToObject(root, names[i]);
    cJSON *shape = e ? cJSON_AddArrayToObject(e, "shape") : NULL;
    cJSON *offs = e ? cJSON_AddArrayToObject(e, "data_offsets") : NULL;
    if (!e || !shape || !offs || !cJSON_AddStringToObject(e, "dtype", st_dtype_names[t->dtype])) {
      st = mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", path);
      break;
    }
    for (int d = 0; d < t->ndim && st == MT_OK; d++) st = st_add_raw_int(shape, t->sizes[d], path);
    int64_t bytes = mt__numel(t) * (int64_t)mt__dtype_size(t->dtype);
    if (st == MT_OK) st = st_add_raw_int(offs, off, path);
    if (st == MT_OK) st = st_add_raw_int(offs, off + bytes, path);
    off += bytes;
  }
  char *json = st == MT_OK ? cJSON_PrintUnformatted(root) : NULL;
  if (st == MT_OK && !json) st = mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", path);
  cJSON_Delete(root);
  if (st != MT_OK) return st;
  size_t jl = strlen(json), padded = (jl + 7) / 8 * 8;
  char *buf = malloc(padded);
  if (!buf) {
    cJSON_free(json);
    return mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", path);
  }
  memcpy(buf, json, jl);
  memset(buf + jl, ' ', padded - jl);
  cJSON_free(json);
  *text = buf;
  *len = padded;
  return MT_OK;
}

static mt_status st_write_all(FILE *fp, const void *p, size_t n, const char *tmp) {
  if (n && fwrite(p, 1, n, fp) != n)
    return mt__error(MT_ERR_IO, "safetensors: %s: write failed: %s", tmp, strerror(errno));
  return MT_OK;
}

/* tensor data as contiguous CPU bytes, written straight from the tensor when it already is */
static mt_status st_write_tensor(FILE *fp, const mt_tensor *t, const char *tmp) {
  int64_t n = mt__numel(t);
  if (n == 0) return MT_OK;
  size_t bytes = (size_t)n * mt__dtype_size(t->dtype);
  if (t->device == MT_CPU && mt__is_contiguous(t)) return st_write_all(fp, mt__data(t), bytes, tmp);
  mt_tensor *c = NULL;
  MT_TRY(mt__tensor_empty(&c, t->dtype, MT_CPU, t->ndim, t->sizes));
  mt_status st = mt_copy(c, t);
  if (st == MT_OK) st = st_write_all(fp, mt__data(c), bytes, tmp);
  mt_tensor_release(c);
  return st;
}

/* Remove the temporaries of writers killed mid-save (path.tmp.<pid>, left by kill -9 or a
 * crash), so repeated kills do not pile up checkpoint-sized files. One is stale only when its
 * pid is gone on this host (kill: ESRCH) and nobody holds its lock: every writer flocks its temp
 * while writing, which also guards a live writer on another host sharing the folder (its pid
 * means nothing here). Best effort: anything unexpected leaves the file alone. */
static void st_sweep_stale(const char *path) {
  char *copy = strdup(path);
  if (!copy) return;
  char *slash = strrchr(copy, '/');
  const char *dirname = slash ? (slash == copy ? "/" : copy) : ".", *base = slash ? slash + 1 : copy;
  if (slash && slash != copy) *slash = '\0';
  size_t blen = strlen(base);
  DIR *dir = opendir(dirname);
  if (!dir) {
    free(copy);
    return;
  }
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    const char *name = e->d_name;
    if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0) continue;
    const char *digits = name + blen + 5;
    char *end = NULL;
    errno = 0;
    long pid = strtol(digits, &end, 10);
    if (errno || end == digits || *end || *digits < '1' || *digits > '9' || pid > 0x7fffffffL) continue;
    if ((pid_t)pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    int fd = openat(dirfd(dir), name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0) unlinkat(dirfd(dir), name, 0);
    close(fd);
  }
  closedir(dir);
  free(copy);
}

/* the temporary, created afresh (a file of our pid's name is a dead process's or our own failed
 * save's) and locked while written so that st_sweep_stale leaves it alone */
static FILE *st_create_temp(const char *tmp) {
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return NULL;
  (void)flock(fd, LOCK_EX | LOCK_NB); /* a file system without locks still gets the save */
  FILE *fp = fdopen(fd, "wb");
  if (!fp) {
    int e = errno;
    close(fd);
    unlink(tmp);
    errno = e;
  }
  return fp;
}

mt_status mt_safetensors_save(const char *path, int n, const char *const *names, mt_tensor *const *tensors, int nmeta,
                              const char *const *meta_keys, const char *const *meta_values) {
  if (!path) return mt__error(MT_ERR_ARG, "safetensors: save: path is NULL");
  if (n < 0 || nmeta < 0) return mt__error(MT_ERR_ARG, "safetensors: %s: negative tensor or metadata count", path);
  if ((n > 0 && (!names || !tensors)) || (nmeta > 0 && (!meta_keys || !meta_values)))
    return mt__error(MT_ERR_ARG, "safetensors: %s: NULL name, tensor or metadata array", path);
  for (int i = 0; i < n; i++) {
    if (!names[i] || !names[i][0])
      return mt__error(MT_ERR_ARG, "safetensors: %s: tensor %d has an empty name", path, i + 1);
    if (!tensors[i]) return mt__error(MT_ERR_ARG, "safetensors: %s: tensor '%s' is NULL", path, names[i]);
    if (strcmp(names[i], "__metadata__") == 0)
      return mt__error(MT_ERR_ARG, "safetensors: %s: '__metadata__' is reserved and cannot name a tensor", path);
    for (int j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return mt__error(MT_ERR_ARG, "safetensors: %s: tensor name '%s' is used twice", path, names[i]);
  }
  for (int i = 0; i < nmeta; i++)
    for (int j = 0; j < i; j++)
      if (meta_keys[i] && meta_keys[j] && strcmp(meta_keys[i], meta_keys[j]) == 0)
        return mt__error(MT_ERR_ARG, "safetensors: %s: metadata key '%s' is used twice", path, meta_keys[i]);

  char *header = NULL;
  size_t hlen = 0;
  MT_TRY(st_build_header(path, n, names, tensors, nmeta, meta_keys, meta_values, &header, &hlen));
  size_t tl = strlen(path) + 32;
  char *tmp = malloc(tl);
  if (!tmp) {
    free(header);
    return mt__error(MT_ERR_MEMORY, "safetensors: %s: out of memory", path);
  }
  snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
  mt_status st = MT_OK;
  st_sweep_stale(path);
  FILE *fp = st_create_temp(tmp);
  if (!fp) st = mt__error(MT_ERR_IO, "safetensors: %s: cannot create %s: %s", path, tmp, strerror(errno));
  if (st == MT_OK) {
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    st = st_write_all(fp, lenb, 8, tmp);
    if (st == MT_OK) st = st_write_all(fp, header, hlen, tmp);
    for (int i = 0; i < n && st == MT_OK; i++) st = st_write_tensor(fp, tensors[i], tmp);
    if (st == MT_OK && fflush(fp) != 0)
      st = mt__error(MT_ERR_IO, "safetensors: %s: write failed: %s", tmp, strerror(errno));
    if (st == MT_OK && fsync(fileno(fp)) != 0)
      st = mt__error(MT_ERR_IO, "safetensors: %s: fsync failed: %s", tmp, strerror(errno));
    /* renamed before the close drops the lock, so no sweeper ever sees it unlocked */
    if (st == MT_OK && rename(tmp, path) != 0)
      st = mt__error(MT_ERR_IO, "safetensors: %s: cannot rename %s over it: %s", path, tmp, strerror(errno));
    if (fclose(fp) != 0 && st == MT_OK) /* flushed and fsynced above: only a strange close fails here */
      st = mt__error(MT_ERR_IO, "safetensors: %s: close failed: %s", path, strerror(errno));
    if (st != MT_OK) unlink(tmp); /* a failed write leaves the old file as it was */
  }
  if (st == MT_OK) { /* make the rename itself durable */
    char *dir = strdup(path);
    if (dir) {
      char *slash = strrchr(dir, '/');
      const char *d = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
      int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
      }
      free(dir);
    }
  }
  free(tmp);
  free(header);
  return st;
}
