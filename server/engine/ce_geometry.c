/* ce_geometry.c — PLACEHOLDER: replaced by its owner; returns "not implemented". */
#include "ce_internal.h"

#include <stdlib.h>
ce_errno ce_geometry_finish_tetmesh(ce_shape_type shape, const ce_props *props, ce_vec3 *v,
                                    int32_t nv, int32_t (*tets)[4], int32_t nt, double *p,
                                    ce_geometry **out, ce_error *err) {
  (void)shape; (void)props; (void)nv; (void)nt;
  free(v); free(tets); free(p); *out = NULL;
  return ce_fail(err, CE_EUNSUPPORTED, "geometry: not implemented");
}
ce_errno ce_geometry_finish_trimesh(ce_shape_type shape, const ce_props *props, ce_vec3 *v,
                                    int32_t nv, int32_t (*tris)[3], int32_t nf,
                                    int require_closed, ce_geometry **out, ce_error *err) {
  (void)shape; (void)props; (void)nv; (void)nf; (void)require_closed;
  free(v); free(tris); *out = NULL;
  return ce_fail(err, CE_EUNSUPPORTED, "geometry: not implemented");
}
ce_errno ce_geometry_from_tetmesh(const double *vertices, int32_t nv, const int32_t *tets,
                                  int32_t nt, const double *pressure, const ce_props *props,
                                  ce_geometry **out, ce_error *err) {
  (void)vertices; (void)nv; (void)tets; (void)nt; (void)pressure; (void)props;
  *out = NULL;
  return ce_fail(err, CE_EUNSUPPORTED, "geometry: not implemented");
}
ce_errno ce_geometry_from_trimesh(const double *vertices, int32_t nv, const int32_t *tris,
                                  int32_t nf, int require_closed, const ce_props *props,
                                  ce_geometry **out, ce_error *err) {
  (void)vertices; (void)nv; (void)tris; (void)nf; (void)require_closed; (void)props;
  *out = NULL;
  return ce_fail(err, CE_EUNSUPPORTED, "geometry: not implemented");
}
void ce_geometry_free(ce_geometry *g) { (void)g; }
void ce_geometry_get_info(const ce_geometry *g, ce_geometry_info *info) { (void)g; (void)info; }
ce_errno ce_props_check(const ce_props *props, int need_hint, int need_slab, ce_error *err) {
  (void)props; (void)need_hint; (void)need_slab;
  return ce_fail(err, CE_EUNSUPPORTED, "geometry: not implemented");
}
ce_errno ce_build_halfspace(const ce_props *props, ce_geometry **out, ce_error *err) {
  (void)props; *out = NULL;
  return ce_fail(err, CE_EUNSUPPORTED, "geometry: not implemented");
}
