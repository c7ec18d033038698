/* ce_meshio_msh.c — Gmsh MSH 2.2 and 4.1, ASCII and binary: nodes and
 * tets (element type 4); elements of other types are counted as skipped. */
#include "ce_meshio_reader.h"

typedef struct idmap {
  int64_t id;
  int32_t index;
} idmap;

static int idmap_cmp(const void *pa, const void *pb) {
  const idmap *a = pa, *b = pb;
  return (a->id > b->id) - (a->id < b->id);
}
static int32_t idmap_find(const idmap *m, int32_t n, int64_t id) {
  int32_t lo = 0, hi = n - 1;
  while (lo <= hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (m[mid].id == id) return m[mid].index;
    if (m[mid].id < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* How an MSH file stores its numbers: ASCII tokens (file type 0), or
 * binary (file type 1): ints of 4 bytes, size_t of `dsize` bytes (4 or 8)
 * and doubles of 8, in the writer's byte order, which the int 1 written
 * after the format line tells (swap: the reverse of ours). Binary errors
 * name the byte offset. */
typedef struct msh_io {
  int bin, swap, dsize;
} msh_io;

static ce_errno msh_fail(rd *r, const msh_io *f, ce_errno code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ce_errno msh_fail(rd *r, const msh_io *f, ce_errno code, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (f->bin) return ce_fail(r->err, code, "MSH byte offset %zu: %s", r->pos, msg);
  return ce_fail(r->err, code, "MSH line %lld: %s", (long long)r->line, msg);
}

/* The next `w` binary bytes as an unsigned integer in the file's order. */
static int msh_raw(rd *r, const msh_io *f, int w, uint64_t *out) {
  if (rd_left(r) < (size_t)w) return 0;
  const unsigned char *p = (const unsigned char *)r->s + r->pos;
  uint64_t v = 0;
  int little = 1;
  little = *(const unsigned char *)&little; /* our own order */
  if (f->swap) little = !little;
  for (int i = 0; i < w; i++) v |= (uint64_t)p[little ? i : w - 1 - i] << (8 * i);
  r->pos += (size_t)w;
  *out = v;
  return 1;
}

/* An integer in [lo, hi]: a token on the current line (line_only) or
 * anywhere, or a binary int (w = 4) or size_t (w = 0: dsize). */
static ce_errno msh_long(rd *r, const msh_io *f, int line_only, int w, const char *what, long long lo, long long hi,
                         long long *out) {
  if (!f->bin) return rd_long(r, line_only, what, lo, hi, out);
  uint64_t u;
  int width = w ? w : f->dsize;
  if (!msh_raw(r, f, width, &u)) return msh_fail(r, f, CE_EINVAL, "expected %s, found end of file (truncated)", what);
  long long x;
  if (width == 4) x = (int32_t)(uint32_t)u; /* ints are signed, size_t values fit */
  else if (u > (uint64_t)INT64_MAX) return msh_fail(r, f, CE_ERANGE, "%s %llu is out of range", what, (unsigned long long)u);
  else x = (long long)u;
  if (x < lo || x > hi)
    return msh_fail(r, f, lo == 0 && hi == CE_LIMIT_MESH_COUNT ? CE_ELIMIT : CE_ERANGE, "%s %lld is out of range [%lld, %lld]",
                    what, x, lo, hi);
  *out = x;
  return CE_OK;
}

/* A v4 node or element block's header: its entity dimension and tag, then
 * `third` in [lo3, hi3] (the parametric flag, the element type) into *v3
 * and its count in [0, most] into *count. whose ("a node block's", "an
 * element block's") and the field names make the messages. */
static ce_errno msh_block_head(rd *r, const msh_io *f, const char *whose, const char *third, long long lo3,
                               long long hi3, long long *v3, const char *count_name, long long most,
                               long long *count) {
  char what[4][64];
  snprintf(what[0], sizeof what[0], "%s entity dimension", whose);
  snprintf(what[1], sizeof what[1], "%s entity tag", whose);
  snprintf(what[2], sizeof what[2], "%s %s", whose, third);
  snprintf(what[3], sizeof what[3], "%s %s", whose, count_name);
  long long dim, tag;
  ce_errno e;
  if ((e = msh_long(r, f, 0, 4, what[0], 0, 3, &dim)) ||
      (e = msh_long(r, f, 0, 4, what[1], INT32_MIN, INT32_MAX, &tag)) ||
      (e = msh_long(r, f, 0, 4, what[2], lo3, hi3, v3)) || (e = msh_long(r, f, 0, 0, what[3], 0, most, count)))
    return e;
  return CE_OK;
}

static ce_errno msh_double(rd *r, const msh_io *f, const char *what, double *out) {
  if (!f->bin) return rd_double(r, 0, what, out);
  uint64_t u;
  if (!msh_raw(r, f, 8, &u)) return msh_fail(r, f, CE_EINVAL, "expected %s, found end of file (truncated)", what);
  double x;
  memcpy(&x, &u, sizeof x);
  if (!isfinite(x)) return msh_fail(r, f, CE_ENONFINITE, "%s is not finite", what);
  *out = x;
  return CE_OK;
}

/* A count, checked like rd_count: each item takes at least `ascii_bytes`
 * (ASCII) or `bin_bytes` (binary) of what remains. */
static ce_errno msh_count(rd *r, const msh_io *f, int w, const char *what, double ascii_bytes, double bin_bytes,
                          long long *out) {
  if (!f->bin) return rd_count(r, what, ascii_bytes, out);
  long long n = 0;
  ce_errno e = msh_long(r, f, 0, w, what, 0, CE_LIMIT_MESH_COUNT, &n);
  if (e) return e;
  if ((double)n * bin_bytes > (double)rd_left(r))
    return msh_fail(r, f, CE_EINVAL, "%s %lld needs at least %.0f bytes but only %zu remain (truncated?)", what, n,
                    (double)n * bin_bytes, rd_left(r));
  *out = n;
  return CE_OK;
}

/* Nodes of each Gmsh element type (1..31): a binary file gives no line
 * ends, so an element of a type that is skipped is stepped over by its
 * node count. 0 = not a fixed-size type. */
static const int8_t msh_type_nodes[32] = {0,  2,  3, 4, 4,  8,  6,  5,  3,  6,  9,  10, 27, 18, 14, 1,
                                          8,  20, 15, 13, 9, 10, 12, 15, 15, 21, 4,  5,  6,  20, 35, 56};

/* Skips to the line after `name` ("$Nodes"), stepping over other sections
 * by their "$End..." line (found by search, since a binary section's bytes
 * are not tokens). */
static ce_errno msh_seek_section(rd *r, const char *name) {
  char t[TOKMAX];
  for (;;) {
    if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected section '%s', found end of file", name);
    if (tok_is(t, name)) {
      rd_next_line(r);
      return CE_OK;
    }
    if (t[0] == '$' && strncmp(t, "$End", 4) != 0) {
      /* skip another section */
      char end[TOKMAX + 8];
      snprintf(end, sizeof end, "\n$End%s", t + 1);
      size_t k = strlen(end);
      const char *hit = NULL;
      for (size_t i = r->pos; i + k <= r->n && !hit; i++)
        if (r->s[i] == '\n' && memcmp(r->s + i, end, k) == 0) hit = r->s + i;
      if (!hit) return rd_fail(r, CE_EINVAL, "expected '%s', found end of file", end + 1);
      for (const char *c = r->s + r->pos; c < hit; c++) r->line += *c == '\n';
      r->pos = (size_t)(hit - r->s) + k;
    }
  }
}

/* The 4 node tags of tet element `id` (read as msh_long reads them, w = 4
 * or 0), mapped to vertex indices and appended to T. */
static ce_errno msh_tet(rd *r, const msh_io *f, int line_only, int w, long long id, const idmap *ids, long long nn,
                        dyn *T) {
  for (int j = 0; j < 4; j++) {
    long long nid;
    ce_errno e = msh_long(r, f, line_only, w, "a tet node tag", 0, w == 4 ? INT32_MAX : INT64_MAX, &nid);
    if (e) return e;
    int32_t ix = idmap_find(ids, (int32_t)nn, nid);
    if (ix < 0) return msh_fail(r, f, CE_ERANGE, "element %lld refers to node %lld, which is not defined", id, nid);
    if (T->len / 4 >= CE_LIMIT_MESH_COUNT) return msh_fail(r, f, CE_ELIMIT, "more than %d tets", CE_LIMIT_MESH_COUNT);
    if (!dyn_push(T, &ix)) return ce_fail(r->err, CE_ENOMEM, "MSH: out of memory");
  }
  return CE_OK;
}

/* After a binary block: the newline that ends it. */
static void msh_end_binary(rd *r, const msh_io *f) {
  if (f->bin) rd_skip_ws(r);
}

/* One MSH parse: the reader, the output, how the file stores its numbers,
 * its version, the node tags (sorted by tag, for msh_tet) and the tets so
 * far. */
typedef struct msh_parse {
  rd *r;
  ce_mesh_data *m;
  msh_io f;
  int v4, bin; /* format 4.1 (else 2.2); file type 1 (binary) */
  idmap *ids;  /* nn of them */
  long long nn, ne;
  dyn T; /* 4 vertex indices per tet */
} msh_parse;

/* $MeshFormat ... $EndMeshFormat: the version, the file type, the data
 * size and, in a binary file, the byte order. */
static ce_errno msh_format(msh_parse *p) {
  rd *r = p->r;
  msh_io *f = &p->f;
  ce_errno e;
  if ((e = rd_expect(r, "$MeshFormat", "at the start"))) return e;
  double ver = 0;
  if ((e = rd_double(r, 0, "the format version", &ver))) return e;
  long long ftype = 0, dsize = 0;
  if ((e = rd_long(r, 0, "the file type", 0, 1, &ftype))) return e;
  if ((e = rd_long(r, 0, "the data size", 0, 64, &dsize))) return e;
  if (ver >= 2.0 && ver < 3.0) p->v4 = 0;
  else if (ver >= 4.0 && ver < 5.0) p->v4 = 1;
  else return rd_fail(r, CE_EINVAL, "expected format version 2.2 or 4.1, found %g", ver);
  if (ftype == 1) {
    if (dsize != 4 && dsize != 8)
      return rd_fail(r, CE_EINVAL, "expected data size 4 or 8 (bytes of size_t) in a binary file, found %lld", dsize);
    rd_next_line(r);
    f->dsize = (int)dsize;
    f->bin = 1;
    uint64_t one;
    if (!msh_raw(r, f, 4, &one)) return msh_fail(r, f, CE_EINVAL, "expected the binary int 1, found end of file");
    if (one != 1) {
      f->swap = 1;
      if (one != UINT64_C(0x01000000))
        return msh_fail(r, f, CE_EINVAL, "expected the binary int 1 (byte order), found 0x%08llx",
                        (unsigned long long)one);
    }
    f->bin = 0; /* the section keywords are text */
  }
  if ((e = rd_expect(r, "$EndMeshFormat", "after the format line"))) return e;
  p->bin = ftype == 1;
  return CE_OK;
}

/* $Nodes ... $EndNodes: the vertices and their tags, sorted by tag and
 * checked for duplicates. */
static ce_errno msh_nodes(msh_parse *p) {
  rd *r = p->r;
  msh_io *f = &p->f;
  ce_mesh_data *m = p->m;
  const int v4 = p->v4, bin = p->bin;
  ce_errno e;
  if ((e = msh_seek_section(r, "$Nodes"))) return e;
  /* the binary bytes of a node: 4.1 a tag and 3 doubles, 2.2 an int and 3 */
  const double node_bin = v4 ? 24.0 + (double)f->dsize : 28.0;
  long long nn = 0, nblocks = 1;
  f->bin = bin && v4; /* 2.2 binary gives its counts as text */
  if (v4) {
    if ((e = msh_count(r, f, 0, "entity block count", 8, 16.0, &nblocks))) return e;
    if ((e = msh_count(r, f, 0, "node count", 8, node_bin, &nn))) return e;
    long long dummy;
    if ((e = msh_long(r, f, 0, 0, "the min node tag", 0, INT64_MAX, &dummy)) ||
        (e = msh_long(r, f, 0, 0, "the max node tag", 0, INT64_MAX, &dummy)))
      return e;
  } else if ((e = msh_count(r, f, 0, "node count", 8, node_bin, &nn)))
    return e;
  if (bin && !v4) rd_next_line(r);
  f->bin = bin;
  p->nn = nn;
  m->vertices = malloc((size_t)(nn > 0 ? nn : 1) * 3 * sizeof(double));
  idmap *ids = p->ids = malloc((size_t)(nn > 0 ? nn : 1) * sizeof *ids);
  if (!m->vertices || !ids) return ce_fail(r->err, CE_ENOMEM, "MSH: out of memory for %lld nodes", nn);
  long long got = 0;
  for (long long b = 0; b < nblocks; b++) {
    long long inb = nn, param = 0;
    if (v4) {
      if ((e = msh_block_head(r, f, "a node block's", "parametric flag", 0, 1, &param, "node count", nn - got, &inb)))
        return e;
      if (param) return msh_fail(r, f, CE_EINVAL, "expected non-parametric nodes (parametric 0), found 1");
      for (long long i = 0; i < inb; i++) {
        long long id;
        if ((e = msh_long(r, f, 0, 0, "a node tag", 1, INT64_MAX, &id))) return e;
        ids[got + i].id = id;
        ids[got + i].index = (int32_t)(got + i);
      }
    }
    for (long long i = 0; i < inb; i++) {
      long long k = got + i;
      if (!v4) {
        long long id;
        if ((e = msh_long(r, f, 0, 4, "a node number", 1, INT64_MAX, &id))) return e;
        ids[k].id = id;
        ids[k].index = (int32_t)k;
      }
      for (int c = 0; c < 3; c++)
        if ((e = msh_double(r, f, "a node coordinate", &m->vertices[3 * k + c]))) return e;
    }
    got += inb;
  }
  msh_end_binary(r, f);
  f->bin = 0;
  if (got != nn) return rd_fail(r, CE_EINVAL, "expected %lld nodes in the blocks, found %lld", nn, got);
  if ((e = rd_expect(r, "$EndNodes", "after the nodes"))) return e;
  m->nv = (int32_t)nn;
  qsort(ids, (size_t)nn, sizeof *ids, idmap_cmp);
  for (long long i = 1; i < nn; i++)
    if (ids[i].id == ids[i - 1].id)
      return ce_fail(r->err, CE_EINVAL, "MSH: node tag %lld appears twice", (long long)ids[i].id);
  return CE_OK;
}

/* $Elements and its counts: *nblocks entity blocks (4.1) of p->ne elements
 * in all. */
static ce_errno msh_element_count(msh_parse *p, long long *nblocks) {
  rd *r = p->r;
  msh_io *f = &p->f;
  const int v4 = p->v4;
  ce_errno e;
  if ((e = msh_seek_section(r, "$Elements"))) return e;
  *nblocks = 1;
  /* the fewest binary bytes of an element: a tag and one node */
  const double elem_bin = v4 ? 2.0 * f->dsize : 8.0;
  f->bin = p->bin && v4;
  if (v4) {
    long long dummy;
    if ((e = msh_count(r, f, 0, "entity block count", 8, 16.0, nblocks)) ||
        (e = msh_count(r, f, 0, "element count", 4, elem_bin, &p->ne)) ||
        (e = msh_long(r, f, 0, 0, "the min element tag", 0, INT64_MAX, &dummy)) ||
        (e = msh_long(r, f, 0, 0, "the max element tag", 0, INT64_MAX, &dummy)))
      return e;
  } else if ((e = msh_count(r, f, 0, "element count", 6, elem_bin, &p->ne)))
    return e;
  f->bin = p->bin;
  return CE_OK;
}

/* 2.2 binary elements: a header (type, count, tag count) then that many
 * elements of ints: number, tags, nodes. */
static ce_errno msh_elements_binary22(msh_parse *p) {
  rd *r = p->r;
  msh_io *f = &p->f;
  const long long ne = p->ne;
  ce_errno e;
  rd_next_line(r);
  long long seen = 0;
  while (seen < ne) {
    long long type, cnt, ntags;
    if ((e = msh_long(r, f, 0, 4, "an element header's type", 1, 31, &type)) ||
        (e = msh_long(r, f, 0, 4, "an element header's element count", 1, ne - seen, &cnt)) ||
        (e = msh_long(r, f, 0, 4, "an element header's tag count", 0, 64, &ntags)))
      return e;
    const int nodes = msh_type_nodes[type];
    if (!nodes) return msh_fail(r, f, CE_EINVAL, "element type %lld has no fixed node count", type);
    const size_t per = (size_t)(1 + ntags + nodes) * 4;
    if ((double)cnt * (double)per > (double)rd_left(r))
      return msh_fail(r, f, CE_EINVAL, "%lld elements of %zu bytes need more than the %zu bytes that remain (truncated?)",
                      cnt, per, rd_left(r));
    for (long long i = 0; i < cnt; i++) {
      long long id, x;
      if ((e = msh_long(r, f, 0, 4, "an element number", 0, INT32_MAX, &id))) return e;
      if (type != 4) {
        r->pos += per - 4;
        p->m->skipped_cells++;
        continue;
      }
      for (long long k = 0; k < ntags; k++)
        if ((e = msh_long(r, f, 0, 4, "an element tag value", INT32_MIN, INT32_MAX, &x))) return e;
      if ((e = msh_tet(r, f, 0, 4, id, p->ids, p->nn, &p->T))) return e;
    }
    seen += cnt;
  }
  return CE_OK;
}

/* The elements of 4.1 (nblocks entity blocks of one type each; binary
 * blocks of other types are stepped over whole) and of 2.2 ASCII (one
 * block, an element a line). */
static ce_errno msh_element_blocks(msh_parse *p, long long nblocks) {
  rd *r = p->r;
  msh_io *f = &p->f;
  ce_mesh_data *m = p->m;
  const int v4 = p->v4, bin = p->bin;
  const long long ne = p->ne;
  ce_errno e;
  long long seen = 0;
  for (long long b = 0; b < nblocks; b++) {
    long long inb = ne, btype = -1;
    if (v4) {
      if ((e = msh_block_head(r, f, "an element block's", "element type", 1, 1000, &btype, "element count",
                              ne - seen, &inb)))
        return e;
    }
    if (bin) {
      const int nodes = btype < 32 ? msh_type_nodes[btype] : 0;
      if (!nodes) return msh_fail(r, f, CE_EINVAL, "element type %lld has no fixed node count", btype);
      if (btype != 4) { /* step over the block */
        const double bytes = (double)inb * (1.0 + nodes) * f->dsize;
        if (bytes > (double)rd_left(r))
          return msh_fail(r, f, CE_EINVAL, "a block of %lld elements of type %lld needs %.0f bytes, only %zu remain",
                          inb, btype, bytes, rd_left(r));
        r->pos += (size_t)bytes;
        m->skipped_cells += inb;
        seen += inb;
        continue;
      }
    } else {
      rd_next_line(r);
    }
    for (long long i = 0; i < inb; i++) {
      long long id, type = btype;
      if ((e = msh_long(r, f, 0, 0, "an element tag", 0, INT64_MAX, &id))) return e;
      if (!v4) {
        long long ntags = 0, tag;
        if ((e = rd_long(r, 1, "an element type", 1, 1000, &type)) ||
            (e = rd_long(r, 1, "a tag count", 0, 64, &ntags)))
          return e;
        for (long long k = 0; k < ntags; k++)
          if ((e = rd_long(r, 1, "an element tag value", INT64_MIN, INT64_MAX, &tag))) return e;
      }
      if (type == 4) {
        if ((e = msh_tet(r, f, 1, 0, id, p->ids, p->nn, &p->T))) return e;
        if (!bin && !rd_eol(r))
          return rd_fail(r, CE_EINVAL, "expected end of line after the 4 nodes of tet element %lld", id);
      } else {
        m->skipped_cells++;
      }
      if (!bin) rd_next_line(r);
    }
    seen += inb;
  }
  if (seen != ne) return msh_fail(r, f, CE_EINVAL, "expected %lld elements in the blocks, found %lld", ne, seen);
  return CE_OK;
}

ce_errno ce_mesh_parse_msh(rd *r, ce_mesh_data *m) {
  msh_parse p = {r, m, {0, 0, 8}, 0, 0, NULL, 0, 0, {0, 0, 0, sizeof(int32_t)}};
  long long nblocks = 1;
  ce_errno e;
  if ((e = msh_format(&p)) || (e = msh_nodes(&p)) || (e = msh_element_count(&p, &nblocks))) goto done;
  e = !p.v4 && p.bin ? msh_elements_binary22(&p) : msh_element_blocks(&p, nblocks);
  if (e) goto done;
  msh_end_binary(r, &p.f);
  p.f.bin = 0;
  if ((e = rd_expect(r, "$EndElements", "after the elements"))) goto done;
  if (p.T.len == 0) {
    e = ce_fail(r->err, CE_EEMPTY, "MSH: no tetrahedra (element type 4) among %lld elements", p.ne);
    goto done;
  }
  m->ntet = (int32_t)(p.T.len / 4);
  m->tets = p.T.d;
  p.T.d = NULL;
done:
  free(p.ids);
  free(p.T.d);
  return e;
}
