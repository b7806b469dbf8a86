/* folder.c: the ImageFolder layout root/<class>/<file>, as torchvision reads it: classes are the
 * sorted names of the root's subfolders, a class's files are those with one of the given
 * extensions, sorted by name (strcmp, so the order does not depend on the locale). Hidden
 * entries (leading '.') are skipped; symbolic links are followed. Subfolders of a class folder
 * are not descended into. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "dataset.h"
#include "../core/error.h"

typedef struct strlist {
  char **v;
  size_t n, cap;
} strlist;

static int list_push(strlist *l, const char *s) {
  if (l->n == l->cap) {
    size_t c = l->cap ? l->cap * 2 : 64;
    char **p = realloc(l->v, c * sizeof *p);
    if (!p) return -1;
    l->v = p;
    l->cap = c;
  }
  if (!(l->v[l->n] = strdup(s))) return -1;
  l->n++;
  return 0;
}

static void list_free(strlist *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = l->cap = 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

/* does the token [t, t + tlen) (an extension, maybe with a leading dot) name ext? */
static int ext_equal(const char *t, size_t tlen, const char *ext) {
  while (tlen && (*t == ' ' || *t == '.')) t++, tlen--;
  while (tlen && t[tlen - 1] == ' ') tlen--;
  if (!tlen || strlen(ext) != tlen) return 0;
  for (size_t i = 0; i < tlen; i++)
    if (lower((unsigned char)t[i]) != lower((unsigned char)ext[i])) return 0;
  return 1;
}

/* 1 when the file's extension (after its last '.') is one of the comma-separated list */
static int ext_match(const char *file, const char *exts) {
  const char *dot = strrchr(file, '.');
  if (!dot || dot == file || !dot[1]) return 0;
  for (const char *t = exts;;) {
    const char *comma = strchr(t, ',');
    size_t tlen = comma ? (size_t)(comma - t) : strlen(t);
    if (ext_equal(t, tlen, dot + 1)) return 1;
    if (!comma) return 0;
    t = comma + 1;
  }
}

/* at least one non-empty extension in the list */
static int ext_valid(const char *exts) {
  for (const char *p = exts; *p; p++)
    if (*p != ',' && *p != ' ' && *p != '.') return 1;
  return 0;
}

/* 'd' directory, 'f' regular file, 'x' a link that cannot be followed, 'o' anything else;
 * readdir's type avoids a stat per file except for links and file systems that do not say */
static char entry_kind(DIR *dir, const struct dirent *e) {
  if (e->d_type == DT_DIR) return 'd';
  if (e->d_type == DT_REG) return 'f';
  if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) return 'o';
  struct stat sb;
  if (fstatat(dirfd(dir), e->d_name, &sb, 0) != 0) return 'x';
  return S_ISDIR(sb.st_mode) ? 'd' : S_ISREG(sb.st_mode) ? 'f' : 'o';
}

/* the visible entries of a folder: subfolders (want 'd') or files with a matching extension.
 * Files whose link cannot be followed are kept, so that reading them names them. */
static mt_status list_dir(mt_dataset *d, const char *path, char want, const char *exts, strlist *out) {
  DIR *dir = opendir(path);
  if (!dir) return mt__error(MT_ERR_IO, "ImageFolder: cannot open folder %s: %s", path, strerror(errno));
  mt_status st = MT_OK;
  for (;;) {
    errno = 0;
    struct dirent *e = readdir(dir);
    if (!e) {
      if (errno) st = mt__error(MT_ERR_IO, "ImageFolder: cannot list folder %s: %s", path, strerror(errno));
      break;
    }
    if (e->d_name[0] == '.') continue;
    if (want == 'f' && !ext_match(e->d_name, exts)) continue;
    char kind = entry_kind(dir, e);
    if (want == 'd' && kind == 'x') {
      st = mt__dataset_warn(d, "ImageFolder %s: skipping '%s', a link that cannot be followed", path, e->d_name);
      if (st != MT_OK) break;
      continue;
    }
    if (kind != want && !(want == 'f' && kind == 'x')) continue;
    if (list_push(out, e->d_name) != 0) {
      st = mt__error(MT_ERR_MEMORY, "ImageFolder: out of memory listing %s", path);
      break;
    }
  }
  closedir(dir);
  if (st == MT_OK && out->n > 1) qsort(out->v, out->n, sizeof(char *), cmp_str);
  return st;
}

/* path = prefix + "/" + name in a reusable buffer */
static mt_status join(char **buf, size_t *cap, const char *prefix, const char *name) {
  size_t need = strlen(prefix) + strlen(name) + 2;
  if (need > *cap) {
    char *p = realloc(*buf, need * 2);
    if (!p) return mt__error(MT_ERR_MEMORY, "ImageFolder: out of memory for the path of %s/%s", prefix, name);
    *buf = p;
    *cap = need * 2;
  }
  strcpy(*buf, prefix);
  if (!(*prefix && prefix[strlen(prefix) - 1] == '/')) strcat(*buf, "/");
  strcat(*buf, name);
  return MT_OK;
}

mt_status mt_dataset_add_folder(mt_dataset *d, const char *root, const char *extensions) {
  if (!d) return mt__error(MT_ERR_ARG, "dataset_add_folder: dataset is NULL");
  if (!root || !*root) return mt__error(MT_ERR_ARG, "dataset_add_folder: root is NULL or empty");
  if (!extensions) extensions = "jpg,jpeg,png";
  if (!ext_valid(extensions))
    return mt__error(MT_ERR_ARG, "dataset_add_folder: %s: the extension list '%s' names no extension", root,
                     extensions);
  /* "root/" and "root" give the same sample names */
  char *top = strdup(root);
  if (!top) return mt__error(MT_ERR_MEMORY, "ImageFolder: out of memory");
  for (size_t l = strlen(top); l > 1 && top[l - 1] == '/'; l--) top[l - 1] = 0;

  strlist classes = {0}, files = {0};
  char *cdir = NULL, *path = NULL;
  size_t cdir_cap = 0, path_cap = 0;
  int64_t n0 = d->n;
  int c0 = d->nclasses, w0 = d->nwarnings;
  mt_status st = list_dir(d, top, 'd', NULL, &classes);
  if (st == MT_OK && classes.n == 0)
    st = mt__error(MT_ERR_IO, "ImageFolder %s: no class folders (the layout is root/<class>/<image>)", top);
  if (st == MT_OK && classes.n > (size_t)(INT32_MAX - c0))
    st = mt__error(MT_ERR_ARG, "ImageFolder %s: too many classes", top);
  for (size_t k = 0; st == MT_OK && k < classes.n; k++) {
    int32_t label = c0 + (int32_t)k;
    st = mt__dataset_push_class(d, classes.v[k]);
    if (st == MT_OK) st = join(&cdir, &cdir_cap, top, classes.v[k]);
    if (st == MT_OK) st = list_dir(d, cdir, 'f', extensions, &files);
    if (st == MT_OK && files.n == 0)
      st = mt__dataset_warn(d,
                            "ImageFolder %s: class '%s' has no files with extensions %s (the class is kept "
                            "so that labels stay aligned)",
                            top, classes.v[k], extensions);
    for (size_t i = 0; st == MT_OK && i < files.n; i++) {
      st = join(&path, &path_cap, cdir, files.v[i]);
      if (st == MT_OK) st = mt__dataset_push(d, path, label, -1, 0, 0);
    }
    list_free(&files);
  }
  if (st != MT_OK) mt__dataset_truncate(d, n0, c0, w0);
  list_free(&classes);
  list_free(&files);
  free(cdir);
  free(path);
  free(top);
  return st;
}
