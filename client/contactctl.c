/* contactctl — command line client for contactd (see client/README.md).
 *
 * Exit codes:
 *   0  success
 *   1  the server answered with an error (its code and message on stderr)
 *   2  usage error (bad command line)
 *   3  cannot reach the server (connect failed, connection lost, timeout)
 *   4  bad input file (scene or mesh file unreadable or invalid)
 *   5  negative answer: `has` found missing ids, `export` found no contact
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cc_client.h"
#include "cc_scene.h"

#ifndef CONTACTCTL_VERSION
#define CONTACTCTL_VERSION CC_VERSION
#endif

enum { EX_OK = 0, EX_SERVER = 1, EX_USAGE = 2, EX_CONN = 3, EX_INPUT = 4, EX_NEGATIVE = 5 };

/* ---- common options ------------------------------------------------------- */

typedef struct common {
  const char *addr;
  int timeout_ms;
  int json;
} common;

static const char *const MAIN_HELP =
    "usage: contactctl [--addr ADDR] [--timeout MS] COMMAND [ARGS]\n"
    "\n"
    "Talk to a contactd server.\n"
    "\n"
    "commands:\n"
    "  ping                      handshake, print the server version and round trip\n"
    "  stats                     server statistics (connections, requests, cache, latency)\n"
    "  register SHAPE [OPTIONS]  register a geometry, print its id\n"
    "  has ID...                 which geometry ids the server holds\n"
    "  query SCENE.json          contact wrenches, areas and equivalent points of a scene\n"
    "  stream SCENE.json         stream a scene's frames, live view with latency summary\n"
    "  export SCENE.json         write a pair's contact surface (VTK or PLY) with pressure\n"
    "  view SCENE.json           publish a scene (or stream it) for the browser viewer\n"
    "  help [COMMAND]            this text, or a command's\n"
    "\n"
    "options (accepted before or after the command):\n"
    "  --addr ADDR     host:port, [v6addr]:port or unix:/path\n"
    "                  (default: $CONTACTD_ADDR, else " CC_DEFAULT_ADDR ")\n"
    "  --timeout MS    connect and per-reply timeout (default 60000)\n"
    "  --json          machine-readable output (where it applies)\n"
    "  --help, -h      help;  --version  print the version\n"
    "\n"
    "exit codes: 0 ok, 1 server error, 2 usage, 3 cannot reach server or timeout,\n"
    "            4 bad input file, 5 negative answer (missing ids, no contact)\n";

static const char *const REGISTER_HELP =
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

static const char *const QUERY_HELP =
    "usage: contactctl query SCENE.json|- [--json] [--detail wrench|patches|surface] [--energy]\n"
    "                         [--jacobian]\n"
    "\n"
    "Register the scene's geometries, compute contact for its bodies and pairs, and\n"
    "print per pair: status, area, the wrench on A (about A's origin), the net\n"
    "normal force and the equivalent contact point of each patch. `-` reads the\n"
    "scene from stdin. The scene format is described in client/README.md.\n"
    "\n"
    "  --json          print the results as JSON\n"
    "  --detail LEVEL  override the scene's options.detail\n"
    "  --energy        also the strain energy of each pair and patch (J)\n"
    "  --jacobian      also the wrench Jacobians: d wrench_a / d (pose, velocity) of\n"
    "                  A and of B, four 6x6 matrices (rows torque, force; columns\n"
    "                  rotation, translation or angular, linear velocity; world frame)\n";

static const char *const STREAM_HELP =
    "usage: contactctl stream SCENE.json|- [--rate HZ] [--count N] [--latest] [--json]\n"
    "\n"
    "Open a stream over the scene's bodies and send its frames (cycled; the scene's\n"
    "initial state if it has none) at HZ updates per second. Each result prints the\n"
    "sequence, per-pair normal force and area, and a rolling latency summary (round\n"
    "trip p50/p99/max over the last 100 results). Stops after N updates (default:\n"
    "until interrupted) and prints a summary.\n"
    "\n"
    "  --rate HZ   updates per second (default 30; 0 = as fast as results return)\n"
    "  --count N   number of updates to send\n"
    "  --latest    latest-only mode: the server drops overtaken updates\n"
    "  --json      one JSON object per result, then a summary object\n";

static const char *const VIEW_HELP =
    "usage: contactctl view SCENE.json|- [--name NAME] [--stream [--rate HZ] [--count N] [--latest]]\n"
    "                       [--json] [--detail LEVEL]\n"
    "\n"
    "Like query (or, with --stream, like stream), with the result published under a\n"
    "scene name so that the viewer page on the server's HTTP port (contactd\n"
    "--http-port) shows it; prints the page's URL first. The server keeps the latest\n"
    "result of each published scene after the command ends.\n"
    "\n"
    "  --name NAME  scene name (default: the file's name without extension)\n"
    "  --stream     stream the scene's frames (options as for stream)\n";

static const char *const EXPORT_HELP =
    "usage: contactctl export SCENE.json|- --pair A,B [--format vtk|ply] -o FILE\n"
    "\n"
    "Compute the contact surface between bodies A and B of the scene (names or\n"
    "ids; the normal points out of B into A) and write it with per-vertex pressure\n"
    "(Pa): VTK legacy ASCII polydata (ParaView) or ASCII PLY (MeshLab, Blender).\n"
    "The format defaults to the file's extension. Exit code 5 if the pair is not in\n"
    "contact (nothing is written).\n";

static const char *const PING_HELP =
    "usage: contactctl ping [--count N] [--json]\n"
    "\n"
    "Send Hello and print the server's version, protocol and the round trip time.\n";

static const char *const STATS_HELP =
    "usage: contactctl stats [--json]\n"
    "\n"
    "Print the server's statistics: connections, requests, pairs, errors, streams,\n"
    "cache entries/bytes/builds/hits/evictions, worker utilisation and the request\n"
    "latency histogram (with estimated p50/p99).\n";

static const char *const HAS_HELP =
    "usage: contactctl has ID... [--json]\n"
    "\n"
    "Print `present` or `missing` for each geometry id. Exit code 5 if any is missing.\n";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int usage(const char *fmt, const char *arg) {
  fprintf(stderr, "contactctl: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (try --help)\n");
  return EX_USAGE;
}

static int report(const char *what, const cc_error *e) {
  fprintf(stderr, "contactctl: %s: %s: %s%s%s\n", what, cc_code_name(e->code), e->message,
          e->field[0] && !strstr(e->message, e->field) ? " [" : "", e->field[0] && !strstr(e->message, e->field) ? e->field : "");
  if (e->field[0] && !strstr(e->message, e->field)) fprintf(stderr, "]\n");
  return e->remote ? EX_SERVER : EX_CONN;
}

static int parse_double(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return *s && !*end && !errno ? 0 : -1;
}

static int parse_long(const char *s, long *v) {
  char *end;
  errno = 0;
  *v = strtol(s, &end, 10);
  return *s && !*end && !errno ? 0 : -1;
}

static int parse_triple(const char *s, double v[3]) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  char *save = NULL, *tok = strtok_r(buf, ",", &save);
  for (int i = 0; i < 3; i++) {
    if (!tok || parse_double(tok, &v[i])) return -1;
    tok = strtok_r(NULL, ",", &save);
  }
  return tok ? -1 : 0;
}

/* Common flag at argv[*i]: 1 = consumed, 0 = not common, < 0 = exit code. */
static int common_flag(int argc, char **argv, int *i, common *co) {
  const char *f = argv[*i];
  if (strcmp(f, "--addr") == 0 || strcmp(f, "--timeout") == 0) {
    if (*i + 1 >= argc) return -usage("%s needs a value", f);
    const char *v = argv[++*i];
    if (f[2] == 'a') co->addr = v;
    else {
      long t;
      if (parse_long(v, &t) || t <= 0 || t > 86400000) return -usage("--timeout: \"%s\" is not a positive number of ms", v);
      co->timeout_ms = (int)t;
    }
    return 1;
  }
  if (strncmp(f, "--addr=", 7) == 0) {
    co->addr = f + 7;
    return 1;
  }
  if (strcmp(f, "--json") == 0) {
    co->json = 1;
    return 1;
  }
  return 0;
}

static int connect_or_report(const common *co, cc_client **c) {
  cc_options o;
  cc_options_default(&o);
  if (co->timeout_ms > 0) o.connect_timeout_ms = o.timeout_ms = co->timeout_ms;
  cc_error e;
  const char *addr = co->addr ? co->addr : cc_default_addr();
  if (cc_connect(addr, &o, c, &e)) {
    fprintf(stderr, "contactctl: cannot connect to %s: %s\n", addr, e.message);
    return e.code == CC_EINVALID_ARGUMENT ? EX_USAGE : EX_CONN;
  }
  return 0;
}

static const char *enum_short(const ProtobufCEnumDescriptor *d, int v, const char *prefix, char *buf,
                              size_t n) {
  const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(d, v);
  if (!ev) {
    snprintf(buf, n, "%d", v);
    return buf;
  }
  const char *s = ev->name;
  size_t pl = strlen(prefix);
  if (strncmp(s, prefix, pl) == 0) s += pl;
  size_t i = 0;
  for (; s[i] && i + 1 < n; i++) buf[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
  buf[i] = 0;
  return buf;
}

static const char *status_name(int v, char *buf, size_t n) {
  return enum_short(&contactd__v1__contact_status__descriptor, v, "CONTACT_STATUS_", buf, n);
}

/* ---- JSON helpers ------------------------------------------------------- */

/* A double as the shortest decimal that reads back exactly (cJSON's own
 * printing only round-trips within a relative epsilon); non-finite values
 * as the strings "NaN", "Infinity", "-Infinity" (proto3 JSON). */
static cJSON *jnum(double v) {
  if (isnan(v)) return cJSON_CreateString("NaN");
  if (isinf(v)) return cJSON_CreateString(v > 0 ? "Infinity" : "-Infinity");
  char buf[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  return cJSON_CreateRaw(buf);
}

#define cJSON_AddNumberToObject(o, k, v) cJSON_AddItemToObject((o), (k), jnum((double)(v)))

static cJSON *jarray(const double *a, size_t n) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, jnum(a[i]));
  return arr;
}

static cJSON *jvec(const Contactd__V1__Vec3 *v) {
  double a[3] = {v ? v->x : 0, v ? v->y : 0, v ? v->z : 0};
  return jarray(a, 3);
}

static cJSON *jwrench(const Contactd__V1__Wrench *w) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "torque", jvec(w ? w->torque : NULL));
  cJSON_AddItemToObject(o, "force", jvec(w ? w->force : NULL));
  return o;
}

static cJSON *jpatch(const Contactd__V1__Patch *p) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "faces", p ? p->faces : 0);
  cJSON_AddNumberToObject(o, "area", p ? p->area : 0);
  cJSON_AddItemToObject(o, "normal_force", jvec(p ? p->normal_force : NULL));
  cJSON_AddNumberToObject(o, "normal_force_magnitude", p ? p->normal_force_magnitude : 0);
  cJSON_AddItemToObject(o, "point", jvec(p ? p->point : NULL));
  return o;
}

static const char *energy_name(int e) {
  static const char *const n[] = {"unspecified", "exact", "force_law", "unavailable"};
  return e >= 0 && e < 4 ? n[e] : "unknown";
}

/* The strain energies (query --energy) into a pair's JSON object. */
static void add_energy(cJSON *o, const Contactd__V1__PairResult *r) {
  cJSON_AddNumberToObject(o, "strain_energy", r->strain_energy);
  cJSON_AddStringToObject(o, "energy", energy_name((int)r->energy));
  cJSON *t = cJSON_GetObjectItem(o, "total"), *ps = cJSON_GetObjectItem(o, "patches");
  if (t && r->total) cJSON_AddNumberToObject(t, "strain_energy", r->total->strain_energy);
  for (size_t i = 0; i < r->n_patches; i++)
    cJSON_AddNumberToObject(cJSON_GetArrayItem(ps, (int)i), "strain_energy", r->patches[i]->strain_energy);
}

/* A WrenchJacobian: four 6x6 matrices as arrays of rows, or the reason it
 * is unavailable. */
static const char *const JAC_NAMES[4] = {"d_pose_a", "d_pose_b", "d_velocity_a", "d_velocity_b"};

static void jac_mats(const Contactd__V1__WrenchJacobian *j, const double *m[4], size_t n[4]) {
  m[0] = j->d_pose_a;
  n[0] = j->n_d_pose_a;
  m[1] = j->d_pose_b;
  n[1] = j->n_d_pose_b;
  m[2] = j->d_velocity_a;
  n[2] = j->n_d_velocity_a;
  m[3] = j->d_velocity_b;
  n[3] = j->n_d_velocity_b;
}

static cJSON *jjacobian(const Contactd__V1__WrenchJacobian *j) {
  cJSON *o = cJSON_CreateObject();
  if (j->unavailable && j->unavailable[0]) cJSON_AddStringToObject(o, "unavailable", j->unavailable);
  const double *m[4];
  size_t n[4];
  jac_mats(j, m, n);
  for (int k = 0; k < 4; k++) {
    if (n[k] != 36) continue;
    cJSON *rows = cJSON_AddArrayToObject(o, JAC_NAMES[k]);
    for (int i = 0; i < 6; i++) cJSON_AddItemToArray(rows, cJSON_CreateDoubleArray(m[k] + 6 * i, 6));
  }
  return o;
}

static cJSON *jpair(const cc_scene *s, const Contactd__V1__PairResult *r) {
  char sb[64];
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "a", r->a);
  cJSON_AddNumberToObject(o, "b", r->b);
  if (s) {
    cJSON_AddStringToObject(o, "a_name", cc_scene_body_name(s, r->a));
    cJSON_AddStringToObject(o, "b_name", cc_scene_body_name(s, r->b));
  }
  cJSON_AddStringToObject(o, "status", status_name(r->status, sb, sizeof sb));
  cJSON_AddNumberToObject(o, "area", r->area);
  cJSON_AddItemToObject(o, "centroid", jvec(r->centroid));
  cJSON_AddItemToObject(o, "wrench_a", jwrench(r->wrench_a));
  cJSON_AddItemToObject(o, "wrench_b", jwrench(r->wrench_b));
  cJSON_AddItemToObject(o, "wrench_a_centroid", jwrench(r->wrench_a_centroid));
  cJSON_AddItemToObject(o, "total", jpatch(r->total));
  cJSON *ps = cJSON_AddArrayToObject(o, "patches");
  for (size_t i = 0; i < r->n_patches; i++) cJSON_AddItemToArray(ps, jpatch(r->patches[i]));
  if (r->n_point_contacts) {
    cJSON *pc = cJSON_AddArrayToObject(o, "point_contacts");
    for (size_t i = 0; i < r->n_point_contacts; i++) {
      const Contactd__V1__PointContact *p = r->point_contacts[i];
      cJSON *e = cJSON_CreateObject();
      cJSON_AddNumberToObject(e, "face", p->face);
      cJSON_AddItemToObject(e, "position", jvec(p->position));
      cJSON_AddItemToObject(e, "normal", jvec(p->normal));
      cJSON_AddNumberToObject(e, "area", p->area);
      cJSON_AddNumberToObject(e, "pressure", p->pressure);
      cJSON_AddNumberToObject(e, "g", p->g);
      cJSON_AddNumberToObject(e, "stiffness", p->stiffness);
      cJSON_AddNumberToObject(e, "phi0", p->phi0);
      cJSON_AddItemToArray(pc, e);
    }
  }
  if (r->penetration) {
    cJSON *e = cJSON_AddObjectToObject(o, "penetration");
    cJSON_AddNumberToObject(e, "depth", r->penetration->depth);
    cJSON_AddItemToObject(e, "normal", jvec(r->penetration->normal));
  }
  if (r->energy != CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_UNSPECIFIED) add_energy(o, r);
  if (r->jacobian) cJSON_AddItemToObject(o, "jacobian", jjacobian(r->jacobian));
  cJSON_AddNumberToObject(o, "faces", r->total ? r->total->faces : 0);
  cJSON_AddNumberToObject(o, "compute_time_us", (double)r->compute_time_us);
  return o;
}

static void print_json(cJSON *o) {
  char *t = cJSON_PrintUnformatted(o);
  if (t) {
    puts(t);
    free(t);
  }
  cJSON_Delete(o);
}

/* ---- ping ----------------------------------------------------------------- */

static int cmd_ping(int argc, char **argv, common *co) {
  long count = 1;
  for (int i = 0; i < argc; i++) {
    int r = common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(PING_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
      if (parse_long(argv[++i], &count) || count < 1) return usage("--count: \"%s\" is not a positive integer", argv[i]);
      continue;
    }
    return usage("ping: unexpected argument \"%s\"", argv[i]);
  }
  cc_client *c;
  int rc = connect_or_report(co, &c);
  if (rc) return rc;
  double best = 1e300, sum = 0;
  Contactd__V1__HelloReply *hr = NULL;
  cc_error e;
  for (long k = 0; k < count; k++) {
    cc_free(hr);
    hr = NULL;
    double t0 = now_s();
    if (cc_hello(c, "contactctl", &hr, &e)) {
      cc_close(c);
      return report("ping", &e);
    }
    double dt = now_s() - t0;
    sum += dt;
    if (dt < best) best = dt;
  }
  if (co->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "server_version", hr->server_version);
    cJSON_AddNumberToObject(o, "protocol_version", hr->protocol_version);
    cJSON_AddStringToObject(o, "store", hr->store ? hr->store : "");
    cJSON_AddNumberToObject(o, "round_trip_ms_min", best * 1e3);
    cJSON_AddNumberToObject(o, "round_trip_ms_mean", sum / (double)count * 1e3);
    cJSON *caps = cJSON_AddArrayToObject(o, "capabilities");
    for (size_t i = 0; i < hr->n_capabilities; i++) cJSON_AddItemToArray(caps, cJSON_CreateString(hr->capabilities[i]));
    print_json(o);
  } else {
    printf("pong: contactd %s, protocol %u, round trip %.3f ms", hr->server_version, hr->protocol_version,
           best * 1e3);
    if (count > 1) printf(" (min of %ld, mean %.3f ms)", count, sum / (double)count * 1e3);
    printf("\n");
  }
  cc_free(hr);
  cc_close(c);
  return EX_OK;
}

/* ---- stats ---------------------------------------------------------------- */

static double hist_quantile(const Contactd__V1__StatsReply *s, double q) {
  uint64_t total = 0;
  for (size_t i = 0; i < s->n_latency; i++) total += s->latency[i]->count;
  if (!total) return 0;
  double target = q * (double)total, acc = 0;
  for (size_t i = 0; i < s->n_latency; i++) {
    acc += (double)s->latency[i]->count;
    if (acc >= target) return s->latency[i]->upper_bound_us;
  }
  return s->latency[s->n_latency - 1]->upper_bound_us;
}

static int cmd_stats(int argc, char **argv, common *co) {
  for (int i = 0; i < argc; i++) {
    int r = common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(STATS_HELP, stdout);
      return EX_OK;
    }
    return usage("stats: unexpected argument \"%s\"", argv[i]);
  }
  cc_client *c;
  int rc = connect_or_report(co, &c);
  if (rc) return rc;
  Contactd__V1__StatsReply *s;
  cc_error e;
  if (cc_stats(c, &s, &e)) {
    cc_close(c);
    return report("stats", &e);
  }
  double p50 = hist_quantile(s, 0.5), p99 = hist_quantile(s, 0.99);
  if (co->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "connections", (double)s->connections);
    cJSON_AddNumberToObject(o, "connections_total", (double)s->connections_total);
    cJSON_AddNumberToObject(o, "requests", (double)s->requests);
    cJSON_AddNumberToObject(o, "pairs", (double)s->pairs);
    cJSON_AddNumberToObject(o, "errors", (double)s->errors);
    cJSON_AddNumberToObject(o, "streams", (double)s->streams);
    cJSON_AddNumberToObject(o, "cache_entries", (double)s->cache_entries);
    cJSON_AddNumberToObject(o, "cache_bytes", (double)s->cache_bytes);
    cJSON_AddNumberToObject(o, "cache_builds", (double)s->cache_builds);
    cJSON_AddNumberToObject(o, "cache_hits", (double)s->cache_hits);
    cJSON_AddNumberToObject(o, "cache_evictions", (double)s->cache_evictions);
    cJSON_AddNumberToObject(o, "uptime_s", s->uptime_s);
    cJSON_AddItemToObject(o, "worker_utilisation", jarray(s->worker_utilisation, s->n_worker_utilisation));
    cJSON *h = cJSON_AddArrayToObject(o, "latency");
    for (size_t i = 0; i < s->n_latency; i++) {
      cJSON *b = cJSON_CreateObject();
      cJSON_AddNumberToObject(b, "upper_bound_us", s->latency[i]->upper_bound_us);
      cJSON_AddNumberToObject(b, "count", (double)s->latency[i]->count);
      cJSON_AddItemToArray(h, b);
    }
    if (!isinf(p50)) cJSON_AddNumberToObject(o, "latency_p50_us_at_most", p50);
    if (!isinf(p99)) cJSON_AddNumberToObject(o, "latency_p99_us_at_most", p99);
    print_json(o);
  } else {
    printf("uptime            %.1f s\n", s->uptime_s);
    printf("connections       %llu open, %llu total\n", (unsigned long long)s->connections,
           (unsigned long long)s->connections_total);
    printf("requests          %llu (%llu errors)\n", (unsigned long long)s->requests, (unsigned long long)s->errors);
    printf("pairs computed    %llu\n", (unsigned long long)s->pairs);
    printf("streams open      %llu\n", (unsigned long long)s->streams);
    printf("cache             %llu entries, %.3f MiB, %llu builds, %llu hits, %llu evictions\n",
           (unsigned long long)s->cache_entries, (double)s->cache_bytes / 1048576.0,
           (unsigned long long)s->cache_builds, (unsigned long long)s->cache_hits,
           (unsigned long long)s->cache_evictions);
    printf("workers           ");
    for (size_t i = 0; i < s->n_worker_utilisation; i++) printf("%s%.1f%%", i ? " " : "", 100 * s->worker_utilisation[i]);
    printf("%s\n", s->n_worker_utilisation ? " busy" : "-");
    printf("latency           p50 <= %g us, p99 <= %g us\n", p50, p99);
    for (size_t i = 0; i < s->n_latency; i++)
      if (s->latency[i]->count)
        printf("  <= %-12g us  %llu\n", s->latency[i]->upper_bound_us, (unsigned long long)s->latency[i]->count);
  }
  cc_free(s);
  cc_close(c);
  return EX_OK;
}

/* ---- register ------------------------------------------------------------- */

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

static int cmd_register(int argc, char **argv, common *co) {
  if (argc == 0) return usage("register: missing SHAPE%s", "");
  if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
    fputs(REGISTER_HELP, stdout);
    return EX_OK;
  }
  cc_shape s;
  memset(&s, 0, sizeof s);
  s.kind = cc_shape_kind_parse(argv[0]);
  if (!s.kind) return usage("register: unknown shape \"%s\"", argv[0]);
  const char *file = NULL;
  double *heights = NULL;
  int progress = -1; /* -1 = when stderr is a TTY */
  int have_radius = 0, have_length = 0, have_size = 0, have_axes = 0, have_modulus = 0;
  for (int i = 1; i < argc; i++) {
    int r = common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    const char *f = argv[i];
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      fputs(REGISTER_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(f, "--rigid") == 0) {
      s.rigid = 1;
      continue;
    }
    if (strcmp(f, "--c2") == 0) {
      s.continuity = 2;
      continue;
    }
    if (strcmp(f, "--hull") == 0) {
      s.hull_if_open = 1;
      continue;
    }
    if (strcmp(f, "--progress") == 0 || strcmp(f, "--no-progress") == 0) {
      progress = f[2] == 'p';
      continue;
    }
    if (strcmp(f, "--field") == 0 && i + 1 < argc) {
      const char *v = argv[++i];
      if (strcmp(v, "laplace") == 0) s.field = CONTACTD__V1__FIELD_KIND__FIELD_KIND_LAPLACE;
      else if (strcmp(v, "distance") == 0) s.field = CONTACTD__V1__FIELD_KIND__FIELD_KIND_DISTANCE;
      else return usage("register: --field \"%s\" is not laplace or distance", v);
      continue;
    }
    if (f[0] != '-' && (s.kind == CC_SHAPE_MESH_FILE || s.kind == CC_SHAPE_HEIGHT_FIELD) && !file) {
      file = f;
      continue;
    }
    if (f[0] != '-' || i + 1 >= argc) return usage("register: unexpected argument or missing value: \"%s\"", f);
    const char *v = argv[++i];
    double d, t[3];
    if (strcmp(f, "--size") == 0 || strcmp(f, "--semi-axes") == 0) {
      if (parse_triple(v, t)) return usage("register: \"%s\" is not X,Y,Z", v);
      s.a = t[0], s.b = t[1], s.c = t[2];
      if (f[2] == 's' && f[3] == 'i') have_size = 1;
      else have_axes = 1;
      continue;
    }
    if (strcmp(f, "--name") == 0) {
      s.name = v;
      continue;
    }
    if (strcmp(f, "--format") == 0) {
      s.format = cc_mesh_format_parse(v); /* "ply" is passed on: the server says it is not supported */
      if (s.format < 0) return usage("register: --format \"%s\" is not auto, obj, stl, vtk or msh", v);
      continue;
    }
    if (parse_double(v, &d)) return usage("register: \"%s\" is not a number", v);
    if (strcmp(f, "--radius") == 0) {
      s.a = d;
      have_radius = 1;
    } else if (strcmp(f, "--length") == 0) {
      s.b = d;
      have_length = 1;
    } else if (strcmp(f, "--modulus") == 0) {
      s.modulus = d;
      have_modulus = 1;
    } else if (strcmp(f, "--hint") == 0) s.hint = d;
    else if (strcmp(f, "--slab") == 0) s.slab = d;
    else if (strcmp(f, "--dissipation") == 0) s.dissipation = d;
    else if (strcmp(f, "--friction") == 0) s.friction = d;
    else if (strcmp(f, "--edge-length") == 0) s.edge_length = d;
    else if (strcmp(f, "--core-depth") == 0) s.core_depth = d;
    else return usage("register: unknown option \"%s\"", f);
  }
  switch (s.kind) {
    case CC_SHAPE_SPHERE:
      if (!have_radius) return usage("register sphere: --radius is required%s", "");
      break;
    case CC_SHAPE_BOX:
      if (!have_size) return usage("register box: --size X,Y,Z is required%s", "");
      break;
    case CC_SHAPE_CYLINDER:
    case CC_SHAPE_CAPSULE:
      if (!have_radius || !have_length) return usage("register %s: --radius and --length are required", argv[0]);
      break;
    case CC_SHAPE_ELLIPSOID:
      if (!have_axes) return usage("register ellipsoid: --semi-axes A,B,C is required%s", "");
      break;
    case CC_SHAPE_MESH_FILE:
      if (!file) return usage("register mesh: missing FILE%s", "");
      break;
    case CC_SHAPE_HEIGHT_FIELD:
      if (!file) return usage("register heightfield: missing FILE%s", "");
      s.rigid = 1;
      break;
    default: break;
  }
  if (!s.rigid && !have_modulus) return usage("register: --modulus is required for a compliant geometry (or give --rigid)%s", "");
  char *data = NULL;
  if (file) {
    size_t n = 0;
    data = slurp(file, &n);
    if (!data) {
      fprintf(stderr, "contactctl: cannot read mesh file \"%s\": %s\n", file, strerror(errno));
      return EX_INPUT;
    }
    s.data = data;
    s.size = n;
    if (s.kind == CC_SHAPE_HEIGHT_FIELD) {
      s.data = NULL;
      s.size = 0;
      char why[200];
      heights = read_heightfield(data, n, &s, why, sizeof why);
      if (!heights) {
        fprintf(stderr, "contactctl: heightfield file \"%s\": %s\n", file, why);
        free(data);
        return EX_INPUT;
      }
      s.heights = heights;
    }
    if (!s.name) {
      const char *slash = strrchr(file, '/');
      s.name = slash ? slash + 1 : file;
    }
  }
  cc_client *c;
  int rc = connect_or_report(co, &c);
  if (rc) {
    free(data);
    return rc;
  }
  char id[CC_ID_MAX];
  Contactd__V1__RegisterReply *rep;
  cc_error e;
  if (progress < 0) progress = isatty(2);
  bar_state bar = {0, ""};
  if (progress) {
    s.want_progress = 1;
    cc_set_progress(c, progress_bar, &bar);
  }
  rc = cc_register_shape(c, &s, id, &rep, &e);
  if (bar.shown && rc == 0) progress_bar(&bar, 1.0, "done"); /* progress is throttled: close the bar */
  if (bar.shown) fputs("\n", stderr);
  free(data);
  free(heights);
  if (rc) {
    cc_close(c);
    return report("register", &e);
  }
  if (co->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "geometry_id", id);
    cJSON_AddBoolToObject(o, "already_cached", rep->already_cached);
    const Contactd__V1__GeometryStats *st = rep->stats;
    if (st) {
      cJSON *j = cJSON_AddObjectToObject(o, "stats");
      cJSON_AddNumberToObject(j, "vertices", st->vertices);
      cJSON_AddNumberToObject(j, "tetrahedra", st->tetrahedra);
      cJSON_AddNumberToObject(j, "triangles", st->triangles);
      cJSON_AddNumberToObject(j, "bvh_nodes", st->bvh_nodes);
      cJSON_AddNumberToObject(j, "bytes", (double)st->bytes);
      cJSON_AddNumberToObject(j, "build_time_us", (double)st->build_time_us);
      cJSON_AddNumberToObject(j, "min_pressure", st->min_pressure);
      cJSON_AddNumberToObject(j, "max_pressure", st->max_pressure);
      cJSON_AddNumberToObject(j, "volume", st->volume);
    }
    print_json(o);
  } else {
    printf("%s\n", id);
  }
  cc_free(rep);
  cc_close(c);
  return EX_OK;
}

/* ---- has ------------------------------------------------------------------ */

static int cmd_has(int argc, char **argv, common *co) {
  const char **ids = calloc((size_t)argc + 1, sizeof *ids);
  size_t n = 0;
  for (int i = 0; i < argc; i++) {
    int r = common_flag(argc, argv, &i, co);
    if (r < 0) {
      free(ids);
      return -r;
    }
    if (r) continue;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(HAS_HELP, stdout);
      free(ids);
      return EX_OK;
    }
    if (argv[i][0] == '-') {
      free(ids);
      return usage("has: unknown option \"%s\"", argv[i]);
    }
    ids[n++] = argv[i];
  }
  if (!n) {
    free(ids);
    return usage("has: give at least one geometry id%s", "");
  }
  cc_client *c;
  int rc = connect_or_report(co, &c);
  if (rc) {
    free(ids);
    return rc;
  }
  Contactd__V1__HasGeometryReply *rep;
  cc_error e;
  if (cc_has(c, ids, n, &rep, &e)) {
    free(ids);
    cc_close(c);
    return report("has", &e);
  }
  cJSON *o = co->json ? cJSON_CreateObject() : NULL;
  cJSON *pres = o ? cJSON_AddArrayToObject(o, "present") : NULL;
  cJSON *miss = o ? cJSON_AddArrayToObject(o, "missing") : NULL;
  for (size_t i = 0; i < n; i++) {
    int missing = 0;
    for (size_t k = 0; k < rep->n_missing; k++) missing |= strcmp(rep->missing[k], ids[i]) == 0;
    if (o) cJSON_AddItemToArray(missing ? miss : pres, cJSON_CreateString(ids[i]));
    else printf("%s %s\n", ids[i], missing ? "missing" : "present");
  }
  if (o) print_json(o);
  rc = rep->n_missing ? EX_NEGATIVE : EX_OK;
  cc_free(rep);
  free(ids);
  cc_close(c);
  return rc;
}

/* ---- query ---------------------------------------------------------------- */

static void print_vec(const Contactd__V1__Vec3 *v) {
  printf("(%11.4e, %11.4e, %11.4e)", v ? v->x : 0, v ? v->y : 0, v ? v->z : 0);
}

/* The four matrices, rows (torque x, y, z, force x, y, z). */
static void print_jacobian(const Contactd__V1__WrenchJacobian *j) {
  if (j->unavailable && j->unavailable[0]) {
    printf("  jacobian unavailable: %s\n", j->unavailable);
    return;
  }
  static const char *const cols[2] = {"rx, ry, rz [rad], px, py, pz [m]", "wx, wy, wz [rad/s], vx, vy, vz [m/s]"};
  const double *m[4];
  size_t n[4];
  jac_mats(j, m, n);
  for (int k = 0; k < 4; k++) {
    if (n[k] != 36) continue;
    printf("  %s  (rows tx, ty, tz [N m], fx, fy, fz [N]; columns %s)\n", JAC_NAMES[k], cols[k / 2]);
    for (int i = 0; i < 6; i++) {
      printf("   ");
      for (int c = 0; c < 6; c++) printf(" %12.5e", m[k][6 * i + c]);
      printf("\n");
    }
  }
}

static void print_table(const cc_scene *s, const Contactd__V1__ContactReply *rep, double rtt) {
  char sb[64];
  for (size_t i = 0; i < rep->n_results; i++) {
    const Contactd__V1__PairResult *r = rep->results[i];
    printf("pair %s (%u) / %s (%u): %s", cc_scene_body_name(s, r->a), r->a, cc_scene_body_name(s, r->b), r->b,
           status_name(r->status, sb, sizeof sb));
    if (r->status == CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE)
      printf(", %d faces, area %.6e m^2", r->total ? r->total->faces : 0, r->area);
    if (r->penetration) printf(", depth %.6e m", r->penetration->depth);
    printf(", %llu us\n", (unsigned long long)r->compute_time_us);
    if (r->energy != CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_UNSPECIFIED)
      printf("  strain energy     [J]    %.6e (%s)\n", r->strain_energy, energy_name((int)r->energy));
    if (r->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE &&
        r->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT)
      continue;
    printf("  force on A        [N]    ");
    print_vec(r->wrench_a ? r->wrench_a->force : NULL);
    printf("\n  torque on A @A    [N m]  ");
    print_vec(r->wrench_a ? r->wrench_a->torque : NULL);
    printf("\n  torque on A @ctr  [N m]  ");
    print_vec(r->wrench_a_centroid ? r->wrench_a_centroid->torque : NULL);
    printf("\n  centroid          [m]    ");
    print_vec(r->centroid);
    if (r->total) {
      printf("\n  |normal force|    [N]    %.6e\n  equivalent point  [m]    ", r->total->normal_force_magnitude);
      print_vec(r->total->point);
    }
    printf("\n");
    for (size_t k = 0; k < r->n_patches; k++) {
      const Contactd__V1__Patch *p = r->patches[k];
      printf("  patch %-3zu %5d faces  area %.4e m^2  |Fn| %.4e N  point ", k, p->faces, p->area,
             p->normal_force_magnitude);
      print_vec(p->point);
      if (r->energy != CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_UNSPECIFIED) printf("  U %.4e J", p->strain_energy);
      printf("\n");
    }
    if (r->n_point_contacts)
      printf("  %zu point contacts (%d faces excluded)\n", r->n_point_contacts, r->points_excluded);
    if (r->jacobian) print_jacobian(r->jacobian);
  }
  printf("%zu pairs, server %llu us, round trip %.3f ms\n", rep->n_results,
         (unsigned long long)rep->compute_time_us, rtt * 1e3);
}

/* Connect and register a loaded scene (freed on failure). */
static int scene_connect(const common *co, cc_scene *s, cc_client **c) {
  int rc = connect_or_report(co, c);
  if (rc) {
    cc_scene_free(s);
    return rc;
  }
  cc_error e;
  if (cc_scene_register(*c, s, &e)) {
    rc = report("register", &e);
    cc_close(*c);
    cc_scene_free(s);
    return rc;
  }
  return 0;
}

/* view: the scene name the query or stream publishes under ("" = none). */
static char g_publish[65];

/* The viewer's URL for the scene: the server's HTTP port (from its Hello
 * capabilities) on the host contactctl connected to. */
static void print_view_url(const common *co, cc_client *c) {
  Contactd__V1__HelloReply *hr = NULL;
  cc_error e;
  int port = 0;
  if (cc_hello(c, "contactctl", &hr, &e) == 0) {
    for (size_t i = 0; i < hr->n_capabilities; i++)
      if (strncmp(hr->capabilities[i], "http_port:", 10) == 0) port = atoi(hr->capabilities[i] + 10);
    cc_free(hr);
  }
  const char *addr = co->addr ? co->addr : cc_default_addr();
  char host[128] = "127.0.0.1";
  const char *colon = strrchr(addr, ':');
  if (strncmp(addr, "unix:", 5) != 0 && colon && colon > addr && (size_t)(colon - addr) < sizeof host)
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
  char url[256];
  if (port > 0) snprintf(url, sizeof url, "http://%s:%d/#%s", host, port, g_publish);
  else snprintf(url, sizeof url, "(the server's HTTP port is off: start contactd with --http-port)");
  if (co->json) printf("{\"view_url\": \"%s\", \"scene\": \"%s\"}\n", url, g_publish);
  else printf("viewer: %s\n", url);
  fflush(stdout);
}

/* Load + connect + register. */
static int scene_setup(const char *path, const common *co, cc_scene *s, cc_client **c) {
  char err[1024];
  if (cc_scene_load(path, s, err, sizeof err)) {
    fprintf(stderr, "contactctl: %s\n", err);
    return EX_INPUT;
  }
  int rc = scene_connect(co, s, c);
  if (!rc && g_publish[0]) {
    s->options.publish = g_publish;
    print_view_url(co, *c);
  }
  return rc;
}

static int parse_detail(const char *v, int *d) {
  static const char *const dets[] = {"default", "wrench", "patches", "surface"};
  for (int i = 0; i < 4; i++)
    if (strcmp(v, dets[i]) == 0) {
      *d = i;
      return 0;
    }
  return -1;
}

static int cmd_query(int argc, char **argv, common *co) {
  const char *path = NULL;
  int detail = -1, energy = 0, jacobian = 0;
  for (int i = 0; i < argc; i++) {
    int r = common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(QUERY_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(argv[i], "--detail") == 0 && i + 1 < argc) {
      if (parse_detail(argv[++i], &detail)) return usage("query: --detail \"%s\" is not wrench, patches or surface", argv[i]);
      continue;
    }
    if (strcmp(argv[i], "--energy") == 0) {
      energy = 1;
      continue;
    }
    if (strcmp(argv[i], "--jacobian") == 0) {
      jacobian = 1;
      continue;
    }
    if ((argv[i][0] != '-' || strcmp(argv[i], "-") == 0) && !path) {
      path = argv[i];
      continue;
    }
    return usage("query: unexpected argument \"%s\"", argv[i]);
  }
  if (!path) return usage("query: missing SCENE.json (or - for stdin)%s", "");
  cc_scene s;
  cc_client *c;
  int rc = scene_setup(path, co, &s, &c);
  if (rc) return rc;
  if (detail >= 0) s.options.detail = (Contactd__V1__Detail)detail;
  if (energy) s.options.want_energy = 1;
  if (jacobian) s.options.want_jacobian = 1;
  cc_scene_msgs m;
  if (cc_scene_msgs_build(&s, NULL, NULL, 0, &m)) {
    fprintf(stderr, "contactctl: out of memory\n");
    cc_close(c);
    cc_scene_free(&s);
    return EX_INPUT;
  }
  Contactd__V1__ContactReply *rep;
  cc_error e;
  double t0 = now_s();
  rc = cc_query(c, &m.query, &rep, &e);
  double rtt = now_s() - t0;
  if (rc) {
    rc = report("query", &e);
  } else {
    if (co->json) {
      cJSON *o = cJSON_CreateObject();
      cJSON *ps = cJSON_AddArrayToObject(o, "pairs");
      for (size_t i = 0; i < rep->n_results; i++) cJSON_AddItemToArray(ps, jpair(&s, rep->results[i]));
      cJSON_AddNumberToObject(o, "compute_time_us", (double)rep->compute_time_us);
      cJSON_AddNumberToObject(o, "candidate_pairs", (double)rep->candidate_pairs);
      cJSON_AddNumberToObject(o, "round_trip_us", rtt * 1e6);
      print_json(o);
    } else {
      print_table(&s, rep, rtt);
    }
    cc_free(rep);
  }
  cc_scene_msgs_free(&m);
  cc_close(c);
  cc_scene_free(&s);
  return rc;
}

/* ---- stream --------------------------------------------------------------- */

static volatile sig_atomic_t g_stop;
static void on_sigint(int sig) {
  (void)sig;
  g_stop = 1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double quantile(const double *v, size_t n, double q) {
  if (!n) return 0;
  double *t = malloc(n * sizeof *t);
  if (!t) return 0;
  memcpy(t, v, n * sizeof *t);
  qsort(t, n, sizeof *t, cmp_double);
  size_t k = (size_t)ceil(q * (double)n);
  double r = t[k ? k - 1 : 0];
  free(t);
  return r;
}

#define ROLL 100

static void print_stream_result(const cc_scene *s, const Contactd__V1__StreamResult *res, double lat) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "sequence", (double)res->sequence);
  cJSON_AddNumberToObject(o, "dropped_updates", (double)res->dropped_updates);
  cJSON_AddNumberToObject(o, "compute_time_us", (double)res->compute_time_us);
  cJSON_AddNumberToObject(o, "round_trip_us", lat * 1e6);
  cJSON *ps = cJSON_AddArrayToObject(o, "pairs");
  for (size_t i = 0; i < res->n_results; i++) cJSON_AddItemToArray(ps, jpair(s, res->results[i]));
  print_json(o);
}

static int cmd_stream(int argc, char **argv, common *co) {
  const char *path = NULL;
  double rate = 30;
  long count = -1;
  int latest = 0;
  for (int i = 0; i < argc; i++) {
    int r = common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    const char *f = argv[i];
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      fputs(STREAM_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(f, "--latest") == 0) {
      latest = 1;
      continue;
    }
    if (strcmp(f, "--rate") == 0 && i + 1 < argc) {
      if (parse_double(argv[++i], &rate) || rate < 0) return usage("stream: --rate \"%s\" is not a rate >= 0", argv[i]);
      continue;
    }
    if (strcmp(f, "--count") == 0 && i + 1 < argc) {
      if (parse_long(argv[++i], &count) || count < 1) return usage("stream: --count \"%s\" is not a positive integer", argv[i]);
      continue;
    }
    if ((f[0] != '-' || strcmp(f, "-") == 0) && !path) {
      path = f;
      continue;
    }
    return usage("stream: unexpected argument \"%s\"", f);
  }
  if (!path) return usage("stream: missing SCENE.json (or - for stdin)%s", "");
  cc_scene s;
  cc_client *c;
  int rc = scene_setup(path, co, &s, &c);
  if (rc) return rc;
  cc_scene_msgs m;
  cc_error e;
  uint64_t sid = 0;
  if (cc_scene_msgs_build(&s, NULL, NULL, 0, &m)) {
    cc_close(c);
    cc_scene_free(&s);
    return EX_INPUT;
  }
  m.open.mode = latest ? CONTACTD__V1__STREAM_MODE__STREAM_MODE_LATEST_ONLY : CONTACTD__V1__STREAM_MODE__STREAM_MODE_QUEUE_ALL;
  rc = cc_stream_open(c, &m.open, &sid, &e);
  cc_scene_msgs_free(&m);
  if (rc) {
    rc = report("stream", &e);
    cc_close(c);
    cc_scene_free(&s);
    return rc;
  }
  signal(SIGINT, on_sigint);
  int tty = isatty(1) && !co->json;
  size_t nb = s.nbodies;
  cc_body *states = calloc(nb, sizeof *states);
  size_t ring_n = 4096;
  double *sent_at = calloc(ring_n, sizeof *sent_at); /* by sequence % ring_n */
  double roll[ROLL];
  size_t nroll = 0, iroll = 0;
  double *all_lat = NULL;
  size_t nall = 0, call = 0;
  uint64_t seq = 0, received = 0, dropped = 0, last_seq = 0;
  double t_start = now_s(), next_send = t_start;
  double period = rate > 0 ? 1.0 / rate : 0;
  /* Keep at most this many updates unanswered (below the server's limit). */
  const uint64_t window = latest ? 64 : 16;
  rc = EX_OK;
  int idle = 0; /* consecutive seconds without a result while waiting for one */
  while (!g_stop) {
    int done_sending = count > 0 && seq >= (uint64_t)count;
    if (done_sending && last_seq >= seq) break;
    double now = now_s();
    uint64_t answered = received + dropped;
    if (!done_sending && now >= next_send && seq - answered < window) {
      const cc_body *src = s.nframes ? &s.frames[(seq % s.nframes) * nb] : NULL;
      for (size_t i = 0; i < nb; i++) states[i] = src ? src[i] : s.bodies[i].state;
      seq++;
      sent_at[seq % ring_n] = now_s();
      if (cc_stream_send(c, sid, seq, states, nb, &e)) {
        rc = report("stream update", &e);
        break;
      }
      next_send = period > 0 ? next_send + period : now;
      if (period > 0 && next_send < now - 1.0) next_send = now; /* fell far behind: don't burst */
      continue;
    }
    int wait_ms = 1000;
    if (!done_sending && seq - answered < window) {
      double dt = next_send - now_s();
      wait_ms = dt > 0 ? (int)(dt * 1e3) : 0;
    }
    Contactd__V1__StreamResult *res;
    int r = cc_stream_recv(c, wait_ms, &res, &e);
    if (r == CC_EDEADLINE_EXCEEDED && !e.remote) {
      if (done_sending || seq - answered >= window) {
        /* waited a whole second for an answer with nothing else to do */
        if (++idle > 60) {
          fprintf(stderr, "contactctl: stream: no result for 60 s\n");
          rc = EX_CONN;
          break;
        }
      }
      continue;
    }
    if (r) {
      rc = report("stream", &e);
      break;
    }
    double lat = now_s() - sent_at[res->sequence % ring_n];
    idle = 0;
    received++;
    dropped += res->dropped_updates;
    last_seq = res->sequence;
    roll[iroll] = lat;
    iroll = (iroll + 1) % ROLL;
    if (nroll < ROLL) nroll++;
    if (nall == call) {
      call = call ? 2 * call : 1024;
      double *na = realloc(all_lat, call * sizeof *na);
      if (!na) break;
      all_lat = na;
    }
    all_lat[nall++] = lat;
    if (co->json) {
      print_stream_result(&s, res, lat);
    } else {
      printf("%sseq %6llu", tty ? "\r\033[K" : "", (unsigned long long)res->sequence);
      for (size_t i = 0; i < res->n_results && i < 4; i++) {
        const Contactd__V1__PairResult *pr = res->results[i];
        printf("  %s/%s |Fn| %.4e N area %.3e", cc_scene_body_name(&s, pr->a), cc_scene_body_name(&s, pr->b),
               pr->total ? pr->total->normal_force_magnitude : 0.0, pr->area);
      }
      if (res->n_results > 4) printf("  (+%zu pairs)", res->n_results - 4);
      printf("  | rtt %.2f ms  p50 %.2f p99 %.2f max %.2f ms  server %.2f ms  dropped %llu%s",
             lat * 1e3, quantile(roll, nroll, 0.5) * 1e3, quantile(roll, nroll, 0.99) * 1e3,
             quantile(roll, nroll, 1.0) * 1e3, (double)res->compute_time_us * 1e-3, (unsigned long long)dropped,
             tty ? "" : "\n");
      fflush(stdout);
    }
    cc_free(res);
  }
  if (tty) printf("\n");
  Contactd__V1__CloseStreamReply *cr = NULL;
  if (cc_stream_close(c, sid, &cr, &e)) {
    if (!rc) rc = report("close stream", &e);
  }
  /* drain results that the close reply overtook in our queue */
  Contactd__V1__StreamResult *res;
  while (cc_stream_recv(c, 0, &res, &e) == 0) {
    received++;
    dropped += res->dropped_updates;
    if (co->json) print_stream_result(&s, res, now_s() - sent_at[res->sequence % ring_n]);
    cc_free(res);
  }
  double elapsed = now_s() - t_start;
  double p50 = quantile(all_lat, nall, 0.5), p99 = quantile(all_lat, nall, 0.99), mx = quantile(all_lat, nall, 1.0);
  if (co->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON *sm = cJSON_AddObjectToObject(o, "summary");
    cJSON_AddNumberToObject(sm, "updates", (double)seq);
    cJSON_AddNumberToObject(sm, "results", (double)received);
    cJSON_AddNumberToObject(sm, "dropped_updates", (double)(cr ? cr->dropped_updates : dropped));
    cJSON_AddNumberToObject(sm, "elapsed_s", elapsed);
    cJSON_AddNumberToObject(sm, "round_trip_ms_p50", p50 * 1e3);
    cJSON_AddNumberToObject(sm, "round_trip_ms_p99", p99 * 1e3);
    cJSON_AddNumberToObject(sm, "round_trip_ms_max", mx * 1e3);
    print_json(o);
  } else {
    printf("%llu updates, %llu results, %llu dropped in %.2f s (%.1f results/s); round trip p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
           (unsigned long long)seq, (unsigned long long)received,
           (unsigned long long)(cr ? cr->dropped_updates : dropped), elapsed,
           elapsed > 0 ? (double)received / elapsed : 0.0, p50 * 1e3, p99 * 1e3, mx * 1e3);
  }
  cc_free(cr);
  free(states);
  free(sent_at);
  free(all_lat);
  cc_close(c);
  cc_scene_free(&s);
  return g_stop && rc == EX_OK ? EX_OK : rc;
}

/* ---- export --------------------------------------------------------------- */

static int write_vtk(FILE *f, const Contactd__V1__Surface *sf, const char *title) {
  size_t nv = sf->n_vertices / 3, nf = sf->n_face_offsets ? sf->n_face_offsets - 1 : 0;
  fprintf(f, "# vtk DataFile Version 3.0\n%s\nASCII\nDATASET POLYDATA\n", title);
  fprintf(f, "POINTS %zu double\n", nv);
  for (size_t i = 0; i < nv; i++)
    fprintf(f, "%.17g %.17g %.17g\n", sf->vertices[3 * i], sf->vertices[3 * i + 1], sf->vertices[3 * i + 2]);
  fprintf(f, "POLYGONS %zu %zu\n", nf, nf + sf->n_face_vertices);
  for (size_t k = 0; k < nf; k++) {
    int a = sf->face_offsets[k], b = sf->face_offsets[k + 1];
    fprintf(f, "%d", b - a);
    for (int j = a; j < b; j++) fprintf(f, " %d", sf->face_vertices[j]);
    fprintf(f, "\n");
  }
  fprintf(f, "POINT_DATA %zu\nSCALARS pressure double 1\nLOOKUP_TABLE default\n", nv);
  for (size_t i = 0; i < nv; i++) fprintf(f, "%.17g\n", i < sf->n_pressure ? sf->pressure[i] : 0.0);
  if (nf && sf->n_normals == 3 * nf) {
    fprintf(f, "CELL_DATA %zu\nNORMALS normal double\n", nf);
    for (size_t k = 0; k < nf; k++)
      fprintf(f, "%.17g %.17g %.17g\n", sf->normals[3 * k], sf->normals[3 * k + 1], sf->normals[3 * k + 2]);
    if (sf->n_areas == nf) {
      fprintf(f, "SCALARS area double 1\nLOOKUP_TABLE default\n");
      for (size_t k = 0; k < nf; k++) fprintf(f, "%.17g\n", sf->areas[k]);
    }
  }
  return ferror(f) ? -1 : 0;
}

static int write_ply(FILE *f, const Contactd__V1__Surface *sf, const char *title) {
  size_t nv = sf->n_vertices / 3, nf = sf->n_face_offsets ? sf->n_face_offsets - 1 : 0;
  fprintf(f, "ply\nformat ascii 1.0\ncomment %s\ncomment pressure in Pa, coordinates in m (world frame)\n", title);
  fprintf(f, "element vertex %zu\nproperty double x\nproperty double y\nproperty double z\nproperty double pressure\n", nv);
  fprintf(f, "element face %zu\nproperty list uchar int vertex_indices\nend_header\n", nf);
  for (size_t i = 0; i < nv; i++)
    fprintf(f, "%.17g %.17g %.17g %.17g\n", sf->vertices[3 * i], sf->vertices[3 * i + 1], sf->vertices[3 * i + 2],
            i < sf->n_pressure ? sf->pressure[i] : 0.0);
  for (size_t k = 0; k < nf; k++) {
    int a = sf->face_offsets[k], b = sf->face_offsets[k + 1];
    fprintf(f, "%d", b - a);
    for (int j = a; j < b; j++) fprintf(f, " %d", sf->face_vertices[j]);
    fprintf(f, "\n");
  }
  return ferror(f) ? -1 : 0;
}

static int cmd_export(int argc, char **argv, common *co) {
  const char *path = NULL, *pair = NULL, *format = NULL, *out = NULL;
  for (int i = 0; i < argc; i++) {
    int r = common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    const char *f = argv[i];
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      fputs(EXPORT_HELP, stdout);
      return EX_OK;
    }
    if ((strcmp(f, "--pair") == 0 || strcmp(f, "--format") == 0 || strcmp(f, "-o") == 0 ||
         strcmp(f, "--output") == 0) && i + 1 < argc) {
      const char *v = argv[++i];
      if (f[2] == 'p') pair = v;
      else if (f[2] == 'f') format = v;
      else out = v;
      continue;
    }
    if ((f[0] != '-' || strcmp(f, "-") == 0) && !path) {
      path = f;
      continue;
    }
    return usage("export: unexpected argument \"%s\"", f);
  }
  if (!path) return usage("export: missing SCENE.json (or - for stdin)%s", "");
  if (!pair) return usage("export: --pair A,B is required%s", "");
  if (!out) return usage("export: -o FILE is required%s", "");
  if (!format) {
    const char *dot = strrchr(out, '.');
    format = dot ? dot + 1 : "";
  }
  int vtk = strcmp(format, "vtk") == 0, ply = strcmp(format, "ply") == 0;
  if (!vtk && !ply) return usage("export: format \"%s\" is not vtk or ply (give --format)", format);
  char an[128], bn[128];
  const char *comma = strchr(pair, ',');
  if (!comma || comma == pair || !comma[1] || (size_t)(comma - pair) >= sizeof an || strlen(comma + 1) >= sizeof bn)
    return usage("export: --pair \"%s\" is not A,B", pair);
  snprintf(an, sizeof an, "%.*s", (int)(comma - pair), pair);
  snprintf(bn, sizeof bn, "%s", comma + 1);
  cc_scene s;
  char err[1024];
  if (cc_scene_load(path, &s, err, sizeof err)) {
    fprintf(stderr, "contactctl: %s\n", err);
    return EX_INPUT;
  }
  int ia = cc_scene_find_body(&s, an), ib = cc_scene_find_body(&s, bn);
  if (ia < 0 || ib < 0) {
    fprintf(stderr, "contactctl: export: the scene has no body \"%s\"\n", ia < 0 ? an : bn);
    cc_scene_free(&s);
    return EX_INPUT;
  }
  cc_client *c;
  int rc = scene_connect(co, &s, &c);
  if (rc) return rc;
  uint32_t pr[1][2] = {{s.bodies[ia].state.id, s.bodies[ib].state.id}};
  s.options.detail = CONTACTD__V1__DETAIL__DETAIL_SURFACE;
  cc_scene_msgs m;
  cc_scene_msgs_build(&s, NULL, (const uint32_t(*)[2])pr, 1, &m);
  Contactd__V1__ContactReply *rep = NULL;
  cc_error e;
  rc = cc_query(c, &m.query, &rep, &e);
  cc_scene_msgs_free(&m);
  cc_close(c);
  if (rc) {
    cc_scene_free(&s);
    return report("export", &e);
  }
  const Contactd__V1__PairResult *r = rep->n_results ? rep->results[0] : NULL;
  if (!r || !r->surface || r->surface->n_face_offsets < 2) {
    fprintf(stderr, "contactctl: export: %s and %s are not in contact (hydroelastic surface); nothing written\n", an, bn);
    cc_free(rep);
    cc_scene_free(&s);
    return EX_NEGATIVE;
  }
  FILE *f = fopen(out, "w");
  if (!f) {
    fprintf(stderr, "contactctl: export: cannot write \"%s\": %s\n", out, strerror(errno));
    cc_free(rep);
    cc_scene_free(&s);
    return EX_INPUT;
  }
  char title[400];
  snprintf(title, sizeof title, "contactd contact surface %s (A) / %s (B), pressure in Pa", an, bn);
  int wr = vtk ? write_vtk(f, r->surface, title) : write_ply(f, r->surface, title);
  if (fclose(f) || wr) {
    fprintf(stderr, "contactctl: export: error writing \"%s\"\n", out);
    rc = EX_INPUT;
  } else {
    size_t nf = r->surface->n_face_offsets - 1;
    if (co->json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "file", out);
      cJSON_AddStringToObject(o, "format", vtk ? "vtk" : "ply");
      cJSON_AddNumberToObject(o, "vertices", (double)(r->surface->n_vertices / 3));
      cJSON_AddNumberToObject(o, "faces", (double)nf);
      cJSON_AddNumberToObject(o, "area", r->area);
      print_json(o);
    } else {
      printf("wrote %s: %zu vertices, %zu faces, area %.6e m^2\n", out, r->surface->n_vertices / 3, nf, r->area);
    }
  }
  cc_free(rep);
  cc_scene_free(&s);
  return rc;
}

/* ---- view ----------------------------------------------------------------- */

/* query or stream with QueryOptions.publish set (scene_setup). */
static int cmd_view(int argc, char **argv, common *co) {
  int stream = 0;
  const char *name = NULL, *path = NULL;
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  int nrest = 0;
  if (!rest) return EX_INPUT;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      free(rest);
      fputs(VIEW_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(argv[i], "--stream") == 0) stream = 1;
    else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) name = argv[++i];
    else {
      if (!path && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) path = argv[i];
      rest[nrest++] = argv[i];
    }
  }
  if (!name && path) { /* the file's name without directory and extension */
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strcspn(b, ".");
    snprintf(g_publish, sizeof g_publish, "%.*s", (int)(n < 64 ? n : 64), b);
    for (char *p = g_publish; *p; p++)
      if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_') *p = '_';
    if (!g_publish[0] || strcmp(path, "-") == 0) snprintf(g_publish, sizeof g_publish, "scene");
  } else if (name) {
    snprintf(g_publish, sizeof g_publish, "%s", name);
  }
  int rc = stream ? cmd_stream(nrest, rest, co) : cmd_query(nrest, rest, co);
  free(rest);
  return rc;
}

/* ---- main ----------------------------------------------------------------- */

typedef struct command {
  const char *name;
  int (*fn)(int, char **, common *);
  const char *help;
} command;

static const command COMMANDS[] = {
    {"ping", cmd_ping, NULL},   {"stats", cmd_stats, NULL}, {"register", cmd_register, NULL},
    {"has", cmd_has, NULL},     {"query", cmd_query, NULL}, {"stream", cmd_stream, NULL},
    {"export", cmd_export, NULL}, {"view", cmd_view, NULL},
};

static const char *help_of(const char *name) {
  if (strcmp(name, "ping") == 0) return PING_HELP;
  if (strcmp(name, "stats") == 0) return STATS_HELP;
  if (strcmp(name, "register") == 0) return REGISTER_HELP;
  if (strcmp(name, "has") == 0) return HAS_HELP;
  if (strcmp(name, "query") == 0) return QUERY_HELP;
  if (strcmp(name, "stream") == 0) return STREAM_HELP;
  if (strcmp(name, "export") == 0) return EXPORT_HELP;
  if (strcmp(name, "view") == 0) return VIEW_HELP;
  return NULL;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  common co = {0};
  int i = 1;
  for (; i < argc; i++) {
    const char *f = argv[i];
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      fputs(MAIN_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(f, "--version") == 0 || strcmp(f, "version") == 0) {
      printf("contactctl %s (protocol %d)\n", CONTACTCTL_VERSION, CC_PROTOCOL_VERSION);
      return EX_OK;
    }
    int r = common_flag(argc, argv, &i, &co);
    if (r < 0) return -r;
    if (r) continue;
    break;
  }
  if (i >= argc) {
    fputs(MAIN_HELP, stderr);
    return EX_USAGE;
  }
  const char *cmd = argv[i];
  if (strcmp(cmd, "help") == 0) {
    const char *h = i + 1 < argc ? help_of(argv[i + 1]) : MAIN_HELP;
    if (!h) return usage("help: unknown command \"%s\"", argv[i + 1]);
    fputs(h, stdout);
    return EX_OK;
  }
  for (size_t k = 0; k < sizeof COMMANDS / sizeof *COMMANDS; k++)
    if (strcmp(cmd, COMMANDS[k].name) == 0) return COMMANDS[k].fn(argc - i - 1, argv + i + 1, &co);
  return usage("unknown command \"%s\"", cmd);
}
