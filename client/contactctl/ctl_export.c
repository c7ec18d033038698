/* ctl_export.c — contactctl export: a pair's contact surface as VTK or PLY. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

const char *const EXPORT_HELP =
    "usage: contactctl export SCENE.json|- --pair A,B [--format vtk|ply] -o FILE\n"
    "\n"
    "Compute the contact surface between bodies A and B of the scene (names or\n"
    "ids; the normal points out of B into A) and write it with per-vertex pressure\n"
    "(Pa): VTK legacy ASCII polydata (ParaView) or ASCII PLY (MeshLab, Blender).\n"
    "The format defaults to the file's extension. Exit code 5 if the pair is not in\n"
    "contact (nothing is written).\n";

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

int cmd_export(int argc, char **argv, common *co) {
  const char *path = NULL, *pair = NULL, *format = NULL, *out = NULL;
  for (int i = 0; i < argc; i++) {
    int r = ctl_common_flag(argc, argv, &i, co);
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
    return ctl_usage("export: unexpected argument \"%s\"", f);
  }
  if (!path) return ctl_usage("export: missing SCENE.json (or - for stdin)%s", "");
  if (!pair) return ctl_usage("export: --pair A,B is required%s", "");
  if (!out) return ctl_usage("export: -o FILE is required%s", "");
  if (!format) {
    const char *dot = strrchr(out, '.');
    format = dot ? dot + 1 : "";
  }
  int vtk = strcmp(format, "vtk") == 0, ply = strcmp(format, "ply") == 0;
  if (!vtk && !ply) return ctl_usage("export: format \"%s\" is not vtk or ply (give --format)", format);
  char an[128], bn[128];
  const char *comma = strchr(pair, ',');
  if (!comma || comma == pair || !comma[1] || (size_t)(comma - pair) >= sizeof an || strlen(comma + 1) >= sizeof bn)
    return ctl_usage("export: --pair \"%s\" is not A,B", pair);
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
  int rc = ctl_scene_connect(co, &s, &c);
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
    return ctl_report("export", &e);
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
      ctl_jadd(o, "vertices", (double)(r->surface->n_vertices / 3));
      ctl_jadd(o, "faces", (double)nf);
      ctl_jadd(o, "area", r->area);
      ctl_print_json(o);
    } else {
      printf("wrote %s: %zu vertices, %zu faces, area %.6e m^2\n", out, r->surface->n_vertices / 3, nf, r->area);
    }
  }
  cc_free(rep);
  cc_scene_free(&s);
  return rc;
}
