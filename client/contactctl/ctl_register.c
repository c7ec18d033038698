/* ctl_register.c — contactctl register: build and cache one geometry, print its id. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

const char *const REGISTER_HELP =
    "usage: contactctl register SHAPE [OPTIONS]\n"
    "\n"
    "Register (build and cache) a geometry and print its id. The id is a hash of\n"
    "the content, so registering the same thing again costs nothing.\n"
    "\n"
    "shapes and their dimensions (m):\n"
    "  sphere     --radius R\n"
    "  box        --size X,Y,Z         (full edge lengths)\n"
    "  cylinder   --radius R --length L  (axis along body z)\n"
    "  capsule    --radius R --length L  (L = medial segment)\n"
    "  ellipsoid  --semi-axes A,B,C\n"
    "  half-space                      (z <= 0 of the body frame)\n"
    "  mesh FILE  [--format auto|obj|stl|vtk|msh]  (the file's bytes are sent)\n"
    "  heightfield FILE  [--c2]        rigid terrain (implies --rigid); FILE is text:\n"
    "             \"nx ny dx dy [ox oy oz]\" then nx*ny heights, x fastest (m)\n"
    "\n"
    "compliant surface meshes (OBJ, STL) are tetrahedralised by the server:\n"
    "  --edge-length H    target tet edge length, m (default: --hint)\n"
    "  --field laplace|distance   pressure field (default laplace)\n"
    "  --core-depth D     Laplace core: vertices at least D deep, m\n"
    "  --hull             use the convex hull of an open surface\n"
    "  --progress / --no-progress  progress bar on stderr (default: when a TTY)\n"
    "\n"
    "options:\n"
    "  --modulus E        hydroelastic modulus, Pa (required unless --rigid)\n"
    "  --rigid            rigid geometry (no pressure field)\n"
    "  --hint H           resolution hint for primitives: target edge length, m\n"
    "  --slab T           slab thickness of a compliant half space, m\n"
    "  --dissipation D    Hunt-Crossley dissipation, s/m\n"
    "  --friction MU      Coulomb friction coefficient\n"
    "  --name LABEL       label for the server's logs\n"
    "  --json             print the whole reply (id, cached, build statistics) as JSON\n";

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *b = malloc(cap);
  size_t k;
  while (b && (k = fread(b + len, 1, cap - len, f)) > 0) {
    len += k;
    if (len == cap) {
      char *nb = realloc(b, cap *= 2);
      if (!nb) {
        free(b);
        b = NULL;
      } else
        b = nb;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(b);
    return NULL;
  }
  *n = len;
  return b;
}

/* A heightfield text file: "nx ny dx dy [ox oy oz]" then nx*ny heights.
 * Returns the heights (malloc'd) and fills s, or NULL with a reason. */
static double *read_heightfield(const char *text, size_t n, cc_shape *s, char *why, size_t whylen) {
  char *buf = malloc(n + 1);
  if (!buf) return snprintf(why, whylen, "out of memory"), NULL;
  memcpy(buf, text, n);
  buf[n] = 0;
  char *p = buf, *nl = strchr(buf, '\n');
  if (nl) *nl = 0;
  double hd[7] = {0, 0, 0, 0, 0, 0, 0};
  int k = 0;
  for (char *e; k < 7; k++) {
    hd[k] = strtod(p, &e);
    if (e == p) break;
    p = e;
  }
  if (k != 4 && k != 7) {
    free(buf);
    snprintf(why, whylen, "line 1: expected \"nx ny dx dy [ox oy oz]\" (%d numbers found)", k);
    return NULL;
  }
  if (!(hd[0] >= 1 && hd[0] <= 1 << 20 && hd[1] >= 1 && hd[1] <= 1 << 20 && hd[0] == floor(hd[0]) &&
        hd[1] == floor(hd[1]))) {
    free(buf);
    snprintf(why, whylen, "line 1: nx and ny must be whole numbers in [1, 2^20]");
    return NULL;
  }
  size_t cnt = (size_t)hd[0] * (size_t)hd[1];
  double *h = malloc(cnt * sizeof *h);
  if (!h) {
    free(buf);
    snprintf(why, whylen, "out of memory for %zu heights", cnt);
    return NULL;
  }
  p = nl ? nl + 1 : buf + n;
  for (size_t i = 0; i < cnt; i++) {
    char *e;
    h[i] = strtod(p, &e);
    if (e == p) {
      free(buf);
      free(h);
      snprintf(why, whylen, "height %zu of %zu is missing or not a number", i, cnt);
      return NULL;
    }
    p = e;
  }
  free(buf);
  s->nx = (int)hd[0];
  s->ny = (int)hd[1];
  s->dx = hd[2];
  s->dy = hd[3];
  s->origin[0] = hd[4];
  s->origin[1] = hd[5];
  s->origin[2] = hd[6];
  return h;
}

typedef struct bar_state {
  int shown;
  char stage[32];
} bar_state;

/* A one-line progress bar on stderr, redrawn in place. */
static void progress_bar(void *user, double fraction, const char *stage) {
  bar_state *b = user;
  int w = 40, k = (int)(fraction * w + 0.5);
  if (k < 0) k = 0;
  if (k > w) k = w;
  char bar[41];
  memset(bar, '#', (size_t)k);
  memset(bar + k, '.', (size_t)(w - k));
  bar[w] = 0;
  fprintf(stderr, "\r[%s] %3.0f%% %-16s", bar, 100 * fraction, stage);
  fflush(stderr);
  b->shown = 1;
  snprintf(b->stage, sizeof b->stage, "%s", stage);
}

/* What the command line asks to register. */
typedef struct reg_args {
  cc_shape s;
  const char *kind_name; /* argv[0], for messages */
  const char *file;      /* mesh or heightfield file */
  int progress;          /* -1 = when stderr is a TTY */
  int have_radius, have_length, have_size, have_axes, have_modulus;
} reg_args;

/* An option with a value (f = argv[i], v = argv[i + 1]). */
static int register_value(reg_args *a, const char *f, const char *v) {
  cc_shape *s = &a->s;
  double d, t[3];
  if (strcmp(f, "--size") == 0 || strcmp(f, "--semi-axes") == 0) {
    if (ctl_parse_triple(v, t)) return ctl_usage("register: \"%s\" is not X,Y,Z", v);
    s->a = t[0], s->b = t[1], s->c = t[2];
    if (f[2] == 's' && f[3] == 'i') a->have_size = 1;
    else a->have_axes = 1;
    return CTL_GO_ON;
  }
  if (strcmp(f, "--name") == 0) {
    s->name = v;
    return CTL_GO_ON;
  }
  if (strcmp(f, "--format") == 0) {
    s->format = cc_mesh_format_parse(v); /* "ply" is passed on: the server says it is not supported */
    if (s->format < 0) return ctl_usage("register: --format \"%s\" is not auto, obj, stl, vtk or msh", v);
    return CTL_GO_ON;
  }
  if (ctl_parse_double(v, &d)) return ctl_usage("register: \"%s\" is not a number", v);
  if (strcmp(f, "--radius") == 0) {
    s->a = d;
    a->have_radius = 1;
  } else if (strcmp(f, "--length") == 0) {
    s->b = d;
    a->have_length = 1;
  } else if (strcmp(f, "--modulus") == 0) {
    s->modulus = d;
    a->have_modulus = 1;
  } else if (strcmp(f, "--hint") == 0) s->hint = d;
  else if (strcmp(f, "--slab") == 0) s->slab = d;
  else if (strcmp(f, "--dissipation") == 0) s->dissipation = d;
  else if (strcmp(f, "--friction") == 0) s->friction = d;
  else if (strcmp(f, "--edge-length") == 0) s->edge_length = d;
  else if (strcmp(f, "--core-depth") == 0) s->core_depth = d;
  else return ctl_usage("register: unknown option \"%s\"", f);
  return CTL_GO_ON;
}

/* The options after SHAPE (argv[1..]). */
static int register_parse(int argc, char **argv, common *co, reg_args *a) {
  cc_shape *s = &a->s;
  for (int i = 1; i < argc; i++) {
    int r = ctl_common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    const char *f = argv[i];
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      fputs(REGISTER_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(f, "--rigid") == 0) {
      s->rigid = 1;
      continue;
    }
    if (strcmp(f, "--c2") == 0) {
      s->continuity = 2;
      continue;
    }
    if (strcmp(f, "--hull") == 0) {
      s->hull_if_open = 1;
      continue;
    }
    if (strcmp(f, "--progress") == 0 || strcmp(f, "--no-progress") == 0) {
      a->progress = f[2] == 'p';
      continue;
    }
    if (strcmp(f, "--field") == 0 && i + 1 < argc) {
      const char *v = argv[++i];
      if (strcmp(v, "laplace") == 0) s->field = CONTACTD__V1__FIELD_KIND__FIELD_KIND_LAPLACE;
      else if (strcmp(v, "distance") == 0) s->field = CONTACTD__V1__FIELD_KIND__FIELD_KIND_DISTANCE;
      else return ctl_usage("register: --field \"%s\" is not laplace or distance", v);
      continue;
    }
    if (f[0] != '-' && (s->kind == CC_SHAPE_MESH_FILE || s->kind == CC_SHAPE_HEIGHT_FIELD) && !a->file) {
      a->file = f;
      continue;
    }
    if (f[0] != '-' || i + 1 >= argc) return ctl_usage("register: unexpected argument or missing value: \"%s\"", f);
    r = register_value(a, f, argv[++i]);
    if (r != CTL_GO_ON) return r;
  }
  return CTL_GO_ON;
}

/* The dimensions each shape needs, and a modulus unless rigid. */
static int register_check(reg_args *a) {
  switch (a->s.kind) {
    case CC_SHAPE_SPHERE:
      if (!a->have_radius) return ctl_usage("register sphere: --radius is required%s", "");
      break;
    case CC_SHAPE_BOX:
      if (!a->have_size) return ctl_usage("register box: --size X,Y,Z is required%s", "");
      break;
    case CC_SHAPE_CYLINDER:
    case CC_SHAPE_CAPSULE:
      if (!a->have_radius || !a->have_length)
        return ctl_usage("register %s: --radius and --length are required", a->kind_name);
      break;
    case CC_SHAPE_ELLIPSOID:
      if (!a->have_axes) return ctl_usage("register ellipsoid: --semi-axes A,B,C is required%s", "");
      break;
    case CC_SHAPE_MESH_FILE:
      if (!a->file) return ctl_usage("register mesh: missing FILE%s", "");
      break;
    case CC_SHAPE_HEIGHT_FIELD:
      if (!a->file) return ctl_usage("register heightfield: missing FILE%s", "");
      a->s.rigid = 1;
      break;
    default: break;
  }
  if (!a->s.rigid && !a->have_modulus)
    return ctl_usage("register: --modulus is required for a compliant geometry (or give --rigid)%s", "");
  return CTL_GO_ON;
}

/* The mesh file's bytes (*data), or a heightfield file's heights (*heights;
 * *data then holds its text). Both are the caller's to free. */
static int register_read_file(reg_args *a, char **data, double **heights) {
  cc_shape *s = &a->s;
  const char *file = a->file;
  size_t n = 0;
  *data = slurp(file, &n);
  if (!*data) {
    fprintf(stderr, "contactctl: cannot read mesh file \"%s\": %s\n", file, strerror(errno));
    return EX_INPUT;
  }
  s->data = *data;
  s->size = n;
  if (s->kind == CC_SHAPE_HEIGHT_FIELD) {
    s->data = NULL;
    s->size = 0;
    char why[200];
    *heights = read_heightfield(*data, n, s, why, sizeof why);
    if (!*heights) {
      fprintf(stderr, "contactctl: heightfield file \"%s\": %s\n", file, why);
      return EX_INPUT;
    }
    s->heights = *heights;
  }
  if (!s->name) {
    const char *slash = strrchr(file, '/');
    s->name = slash ? slash + 1 : file;
  }
  return CTL_GO_ON;
}

static void register_print(const common *co, const char *id, const Contactd__V1__RegisterReply *rep) {
  if (!co->json) {
    printf("%s\n", id);
    return;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "geometry_id", id);
  cJSON_AddBoolToObject(o, "already_cached", rep->already_cached);
  const Contactd__V1__GeometryStats *st = rep->stats;
  if (st) {
    cJSON *j = cJSON_AddObjectToObject(o, "stats");
    ctl_jadd(j, "vertices", st->vertices);
    ctl_jadd(j, "tetrahedra", st->tetrahedra);
    ctl_jadd(j, "triangles", st->triangles);
    ctl_jadd(j, "bvh_nodes", st->bvh_nodes);
    ctl_jadd(j, "bytes", (double)st->bytes);
    ctl_jadd(j, "build_time_us", (double)st->build_time_us);
    ctl_jadd(j, "min_pressure", st->min_pressure);
    ctl_jadd(j, "max_pressure", st->max_pressure);
    ctl_jadd(j, "volume", st->volume);
  }
  ctl_print_json(o);
}

/* Connect, send the geometry (with a progress bar if asked) and print the id. */
static int register_send(const common *co, reg_args *a) {
  cc_client *c;
  int rc = ctl_connect_or_report(co, &c);
  if (rc) return rc;
  char id[CC_ID_MAX];
  Contactd__V1__RegisterReply *rep;
  cc_error e;
  if (a->progress < 0) a->progress = isatty(2);
  bar_state bar = {0, ""};
  if (a->progress) {
    a->s.want_progress = 1;
    cc_set_progress(c, progress_bar, &bar);
  }
  rc = cc_register_shape(c, &a->s, id, &rep, &e);
  if (bar.shown && rc == 0) progress_bar(&bar, 1.0, "done"); /* progress is throttled: close the bar */
  if (bar.shown) fputs("\n", stderr);
  if (rc) {
    cc_close(c);
    return ctl_report("register", &e);
  }
  register_print(co, id, rep);
  cc_free(rep);
  cc_close(c);
  return EX_OK;
}

int cmd_register(int argc, char **argv, common *co) {
  if (argc == 0) return ctl_usage("register: missing SHAPE%s", "");
  if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
    fputs(REGISTER_HELP, stdout);
    return EX_OK;
  }
  reg_args a;
  memset(&a, 0, sizeof a);
  a.kind_name = argv[0];
  a.progress = -1;
  a.s.kind = cc_shape_kind_parse(argv[0]);
  if (!a.s.kind) return ctl_usage("register: unknown shape \"%s\"", argv[0]);
  int rc = register_parse(argc, argv, co, &a);
  if (rc == CTL_GO_ON) rc = register_check(&a);
  if (rc != CTL_GO_ON) return rc;
  char *data = NULL;
  double *heights = NULL;
  if (a.file) rc = register_read_file(&a, &data, &heights);
  if (rc == CTL_GO_ON) rc = register_send(co, &a);
  free(data);
  free(heights);
  return rc;
}
