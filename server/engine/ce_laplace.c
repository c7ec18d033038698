/* ce_laplace.c — pressure fields for arbitrary tet meshes (Elandt et al. 2019,
 * section VI-A-2).
 *
 * Laplace field: eps = 0 on the boundary vertices (those of faces that
 * belong to one tet), eps = 1 on the core (vertices whose distance to the
 * boundary is >= core_depth, or, by default, >= 0.75 of the largest depth:
 * the deepest vertices, as a band thick enough to follow a ring-shaped core
 * such as a torus's),
 * harmonic in between: linear finite elements, K_ij = sum over tets of
 * V grad(phi_i) . grad(phi_j), solved for the free vertices with
 * Jacobi-preconditioned conjugate gradients. p = E eps.
 *
 * The depth of a vertex is the exact distance field of ce_geometry.c (the
 * default field of ce_geometry_from_tetmesh with pressure NULL, normalised
 * to its maximum): a temporary geometry of modulus 1 provides it, with the
 * boundary faces; the absolute scale comes from the deepest vertex's
 * distance to those faces. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_limits.h"
#include "ce_mesh.h"
#include "ce_predicates.h"
#include "ce_validate.h"

#define CORE_DEFAULT_FRACTION 0.75
#define PCG_MAX_ITER_FACTOR 4 /* at most 4 n + 100 iterations */
/* PCG calls the progress callback (its cancellation point) once this many
 * matrix entries and vector entries have been touched since the last call:
 * ~5-10 ms of work at any mesh size (a fixed iteration stride would be
 * seconds apart on a million-vertex mesh), counted in work, not time, so the
 * calls stay deterministic. */
#define PCG_PROGRESS_WORK (1 << 22)

/* Report progress; CE_ECANCELED when the callback asks the build to stop. */
static ce_errno report(const ce_field_options *o, double fraction, ce_error *err) {
  if (o->progress && o->progress(o->progress_user, fraction, "field"))
    return ce_fail(err, CE_ECANCELED, "laplace: build cancelled");
  return CE_OK;
}

static int cmp_i32(const void *pa, const void *pb) {
  int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
  return (a > b) - (a < b);
}

/* CSR matrix over nv rows; diagonal included. */
typedef struct csr {
  int32_t n;
  int64_t *off;
  int32_t *col;
  double *val;
} csr;

/* Frees the arrays and forgets them, so that a second call (csr_build's
 * error path, then its caller's) frees nothing twice. */
static void csr_free(csr *A) {
  free(A->off);
  free(A->col);
  free(A->val);
  A->off = NULL;
  A->col = NULL;
  A->val = NULL;
}

static ce_errno csr_build(csr *A, const ce_vec3 *v, int32_t nv, const int32_t (*tet)[4], int32_t nt, ce_error *err) {
  memset(A, 0, sizeof *A);
  A->n = nv;
  int32_t *vt_off = calloc((size_t)nv + 1, sizeof *vt_off), *vt = malloc((size_t)nt * 4 * sizeof *vt);
  int32_t *mark = malloc((size_t)nv * sizeof *mark);
  A->off = calloc((size_t)nv + 1, sizeof *A->off);
  ce_errno e = CE_OK;
  if (!vt_off || !vt || !mark || !A->off) {
    e = ce_fail(err, CE_ENOMEM, "laplace: out of memory for %d vertices", (int)nv);
    goto done;
  }
  for (int32_t q = 0; q < nt; q++)
    for (int r = 0; r < 4; r++) vt_off[tet[q][r] + 1]++;
  for (int32_t i = 0; i < nv; i++) vt_off[i + 1] += vt_off[i];
  {
    int32_t *fill = malloc((size_t)nv * sizeof *fill);
    if (!fill) {
      e = ce_fail(err, CE_ENOMEM, "laplace: out of memory");
      goto done;
    }
    memcpy(fill, vt_off, (size_t)nv * sizeof *fill);
    for (int32_t q = 0; q < nt; q++)
      for (int r = 0; r < 4; r++) vt[fill[tet[q][r]]++] = q;
    free(fill);
  }
  for (int32_t i = 0; i < nv; i++) mark[i] = -1;
  /* pass 1: counts; pass 2: columns */
  for (int pass = 0; pass < 2; pass++) {
    for (int32_t i = 0; i < nv; i++) {
      int64_t c = 0;
      int32_t *row = pass ? A->col + A->off[i] : NULL;
      if (vt_off[i + 1] == vt_off[i]) {
        /* unused vertex: keep a diagonal so the row is not empty */
        if (pass) row[0] = i;
        c = 1;
      }
      for (int32_t q = vt_off[i]; q < vt_off[i + 1]; q++)
        for (int r = 0; r < 4; r++) {
          int32_t j = tet[vt[q]][r];
          if (mark[j] == (pass ? -2 - i : i)) continue;
          mark[j] = pass ? -2 - i : i;
          if (pass) row[c] = j;
          c++;
        }
      if (pass) qsort(row, (size_t)c, sizeof *row, cmp_i32);
      else A->off[i + 1] = A->off[i] + c;
    }
    if (!pass) {
      A->col = malloc((size_t)A->off[nv] * sizeof *A->col);
      A->val = calloc((size_t)A->off[nv], sizeof *A->val);
      if (!A->col || !A->val) {
        e = ce_fail(err, CE_ENOMEM, "laplace: out of memory for %lld matrix entries", (long long)A->off[nv]);
        goto done;
      }
    }
  }
  /* assemble */
  for (int32_t q = 0; q < nt; q++) {
    ce_vec3 x[4];
    for (int r = 0; r < 4; r++) x[r] = v[tet[q][r]];
    ce_vec3 e1 = ce_sub(x[1], x[0]), e2 = ce_sub(x[2], x[0]), e3 = ce_sub(x[3], x[0]);
    double det = ce_dot(e1, ce_cross(e2, e3));
    double vol = fabs(det) / 6;
    if (!(vol > 0)) continue;
    /* gradients of the barycentric functions: rows of the inverse of [e1 e2 e3] */
    ce_vec3 g[4];
    g[1] = ce_scale(ce_cross(e2, e3), 1.0 / det);
    g[2] = ce_scale(ce_cross(e3, e1), 1.0 / det);
    g[3] = ce_scale(ce_cross(e1, e2), 1.0 / det);
    g[0] = ce_neg(ce_add(ce_add(g[1], g[2]), g[3]));
    for (int r = 0; r < 4; r++) {
      int32_t i = tet[q][r];
      for (int s = 0; s < 4; s++) {
        int32_t j = tet[q][s];
        int64_t lo = A->off[i], hi = A->off[i + 1] - 1;
        while (lo < hi) {
          int64_t mid = (lo + hi) / 2;
          if (A->col[mid] < j) lo = mid + 1;
          else hi = mid;
        }
        A->val[lo] += vol * ce_dot(g[r], g[s]);
      }
    }
  }
done:
  free(vt_off);
  free(vt);
  free(mark);
  if (e) csr_free(A);
  return e;
}

/* y = A x restricted to free rows (fixed rows give 0). */
static void spmv_free(const csr *A, const unsigned char *fixed, const double *x, double *y) {
  for (int32_t i = 0; i < A->n; i++) {
    if (fixed[i]) {
      y[i] = 0;
      continue;
    }
    double s = 0;
    for (int64_t k = A->off[i]; k < A->off[i + 1]; k++) s += A->val[k] * x[A->col[k]];
    y[i] = s;
  }
}

static ce_errno check_mesh(const double *vertices, int32_t nv, const int32_t *tets, int32_t nt, ce_error *err) {
  if (!vertices || !tets || nv < 4 || nt < 1)
    return ce_fail(err, CE_EINVAL, "laplace: needs >= 4 vertices and >= 1 tet (got %d, %d)", (int)nv, (int)nt);
  if (nv > CE_LIMIT_MESH_COUNT || nt > CE_LIMIT_MESH_COUNT) return ce_fail(err, CE_ELIMIT, "laplace: mesh too large");
  return CE_OK;
}

/* The solver's arrays: the matrix, per vertex 0 free / 1 fixed at 0
 * (boundary, unused) / 2 fixed at 1 (core), and the PCG vectors. */
typedef struct laplace_work {
  csr A;
  unsigned char *fixed;
  double *r, *z, *p, *q, *dinv;
} laplace_work;

/* Fix the boundary vertices (and unused ones) at 0 and the core at 1, from
 * the depths of the temporary geometry g; eps = those values, 0 elsewhere. */
static ce_errno fix_boundary_and_core(const ce_geometry *g, int32_t nv, const int32_t *tets, int32_t nt,
                                      const ce_field_options *opt, unsigned char *fixed, double *eps, int32_t *nbv_out,
                                      int32_t *ncore_out, ce_error *err) {
  const ce_tetmesh *m = &g->tet;
  /* deepest vertex and its absolute depth */
  int32_t deep = 0;
  for (int32_t i = 0; i < nv; i++)
    if (m->p[i] > m->p[deep]) deep = i;
  double dmax = INFINITY;
  const int32_t nb = g->bvh.bnd ? g->bvh.bnd->nelem : 0;
  for (int32_t f = 0; f < nb; f++) {
    const int32_t *t = g->bvh.bnd_face[f];
    ce_vec3 c = ce_closest_point_triangle(m->v[deep], m->v[t[0]], m->v[t[1]], m->v[t[2]]);
    dmax = fmin(dmax, ce_norm(ce_sub(c, m->v[deep])));
  }
  if (!(dmax > 0) || !isfinite(dmax)) return ce_fail(err, CE_EFIELD, "laplace: the mesh has no interior vertex");
  int32_t nbv = 0, ncore = 0;
  for (int32_t f = 0; f < nb; f++)
    for (int j = 0; j < 3; j++) fixed[g->bvh.bnd_face[f][j]] = 1;
  for (int32_t i = 0; i < nv; i++) {
    eps[i] = 0;
    if (fixed[i]) nbv++;
  }
  /* unused vertices: fixed at 0 */
  unsigned char *used = calloc((size_t)nv, 1);
  if (!used) return ce_fail(err, CE_ENOMEM, "laplace: out of memory");
  for (int64_t k = 0; k < (int64_t)nt * 4; k++) used[tets[k]] = 1;
  for (int32_t i = 0; i < nv; i++)
    if (!used[i]) fixed[i] = 1;
  free(used);
  for (int32_t i = 0; i < nv; i++) {
    if (fixed[i]) continue;
    double depth = m->p[i] * dmax;
    int core = opt->core_depth > 0 ? depth >= opt->core_depth * (1 - 1e-12) : m->p[i] >= CORE_DEFAULT_FRACTION;
    if (core) {
      fixed[i] = 2;
      eps[i] = 1;
      ncore++;
    }
  }
  if (ncore == 0)
    return ce_fail(err, CE_EFIELD, "laplace: no vertex at depth >= %g (the deepest, vertex %d, is at %g)",
                   opt->core_depth, (int)deep, dmax);
  *nbv_out = nbv;
  *ncore_out = ncore;
  return CE_OK;
}

/* Jacobi-preconditioned conjugate gradients for the free vertices of eps
 * (holding the fixed values), to relative residual tol; iterations and
 * the final residual into *it_out, *res_out. */
static ce_errno solve_pcg(laplace_work *w, int32_t nv, double tol, const ce_field_options *opt, double *eps,
                          int32_t *it_out, double *res_out, ce_error *err) {
  const csr *A = &w->A;
  const unsigned char *fixed = w->fixed;
  double *r = w->r, *z = w->z, *p = w->p, *q = w->q, *dinv = w->dinv;
  ce_errno e;
  /* r = b - A x with x = eps (fixed values, free = 0): b = 0 on free rows */
  spmv_free(A, fixed, eps, r);
  double bnorm = 0;
  for (int32_t i = 0; i < nv; i++) {
    r[i] = -r[i];
    bnorm += r[i] * r[i];
    double d = 0;
    if (!fixed[i])
      for (int64_t k = A->off[i]; k < A->off[i + 1]; k++)
        if (A->col[k] == i) d = A->val[k];
    dinv[i] = d > 0 ? 1 / d : 0;
  }
  bnorm = sqrt(bnorm);
  int32_t it = 0;
  double res = 0;
  *it_out = 0;
  *res_out = 0;
  if (!(bnorm > 0)) return CE_OK;
  double rz = 0;
  for (int32_t i = 0; i < nv; i++) {
    z[i] = dinv[i] * r[i];
    p[i] = z[i];
    rz += r[i] * z[i];
  }
  int64_t maxit = (int64_t)PCG_MAX_ITER_FACTOR * nv + 100;
  /* work per iteration: the matrix once, the vectors a few times */
  const int64_t iter_work = A->off[nv] + 8 * (int64_t)nv;
  int64_t work = 0;
  double shown = 0.15; /* reported fractions never go back (CG residuals may) */
  res = 1;
  while (it < maxit) {
    spmv_free(A, fixed, p, q);
    double pq = 0;
    for (int32_t i = 0; i < nv; i++) pq += p[i] * q[i];
    if (!(pq > 0)) break;
    double alpha = rz / pq, rr = 0;
    for (int32_t i = 0; i < nv; i++) {
      eps[i] += alpha * p[i];
      r[i] -= alpha * q[i];
      rr += r[i] * r[i];
    }
    it++;
    res = sqrt(rr) / bnorm;
    if (res <= tol) break;
    double rz2 = 0;
    for (int32_t i = 0; i < nv; i++) {
      z[i] = dinv[i] * r[i];
      rz2 += r[i] * z[i];
    }
    double beta = rz2 / rz;
    rz = rz2;
    for (int32_t i = 0; i < nv; i++) p[i] = z[i] + beta * p[i];
    if ((work += iter_work) >= PCG_PROGRESS_WORK) {
      work = 0;
      shown = fmax(shown, 0.15 + 0.8 * fmin(1.0, log(res) / log(tol)));
      if ((e = report(opt, shown, err)) != CE_OK) return e;
    }
  }
  if (!(res <= tol * 10))
    return ce_fail(err, CE_EFIELD, "laplace: conjugate gradients stalled at relative residual %.3g after %d iterations",
                   res, (int)it);
  *it_out = it;
  *res_out = res;
  return CE_OK;
}

ce_errno ce_tetmesh_laplace(const double *vertices, int32_t nv, const int32_t *tets, int32_t nt,
                            const ce_field_options *opt, double *eps, ce_field_report *rep, ce_error *err) {
  ce_errno e = check_mesh(vertices, nv, tets, nt, err);
  if (e) return e;
  if (!eps) return ce_fail(err, CE_EINVAL, "laplace: eps is NULL");
  ce_field_options dopt;
  if (!opt) {
    memset(&dopt, 0, sizeof dopt);
    opt = &dopt;
  }
  if (isnan(opt->core_depth)) return ce_fail(err, CE_EINVAL, "laplace: core depth is NaN");
  double tol = opt->tolerance > 0 ? opt->tolerance : 1e-10;

  /* temporary geometry: validation, exact distance field, boundary faces */
  ce_props props;
  memset(&props, 0, sizeof props);
  props.compliance = CE_COMPLIANT;
  props.modulus = 1;
  props.hint = 1;
  /* its build reports stage "geometry" and stops where the callback says */
  props.progress = opt->progress;
  props.progress_user = opt->progress_user;
  ce_geometry *g = NULL;
  if ((e = report(opt, 0.0, err)) != CE_OK) return e;
  if ((e = ce_geometry_from_tetmesh(vertices, nv, tets, nt, NULL, &props, &g, err)) != CE_OK) return e;

  laplace_work w;
  memset(&w, 0, sizeof w);
  w.fixed = calloc((size_t)nv, 1);
  w.r = malloc((size_t)nv * sizeof *w.r);
  w.z = malloc((size_t)nv * sizeof *w.z);
  w.p = malloc((size_t)nv * sizeof *w.p);
  w.q = malloc((size_t)nv * sizeof *w.q);
  w.dinv = malloc((size_t)nv * sizeof *w.dinv);
  int32_t nbv = 0, ncore = 0, it = 0;
  double res = 0;
  if (!w.fixed || !w.r || !w.z || !w.p || !w.q || !w.dinv)
    e = ce_fail(err, CE_ENOMEM, "laplace: out of memory for %d vertices", (int)nv);
  if (e == CE_OK) e = report(opt, 0.05, err);
  if (e == CE_OK) e = fix_boundary_and_core(g, nv, tets, nt, opt, w.fixed, eps, &nbv, &ncore, err);
  if (e == CE_OK) e = csr_build(&w.A, g->tet.v, nv, (const int32_t(*)[4])g->tet.tet, nt, err);
  if (e == CE_OK) e = report(opt, 0.15, err);
  if (e == CE_OK) e = solve_pcg(&w, nv, tol, opt, eps, &it, &res, err);
  if (e == CE_OK) {
    for (int32_t i = 0; i < nv; i++) {
      if (w.fixed[i] == 1) eps[i] = 0;
      else if (w.fixed[i] == 2) eps[i] = 1;
      else eps[i] = fmin(1.0, fmax(0.0, eps[i])); /* roundoff and obtuse tets */
    }
    if (rep) {
      rep->core_vertices = ncore;
      rep->boundary_vertices = nbv;
      rep->iterations = it;
      rep->residual = res;
    }
    e = report(opt, 0.95, err);
  }
  csr_free(&w.A);
  free(w.fixed);
  free(w.r);
  free(w.z);
  free(w.p);
  free(w.q);
  free(w.dinv);
  ce_geometry_free(g);
  return e;
}

ce_errno ce_geometry_from_tetmesh_field(const double *vertices, int32_t nv, const int32_t *tets, int32_t nt,
                                        const ce_field_options *field, const ce_props *props, ce_geometry **out,
                                        ce_field_report *rep, ce_error *err) {
  if (!out) return ce_fail(err, CE_EINVAL, "tet mesh field: out is NULL");
  *out = NULL;
  ce_field_options d;
  if (!field) {
    memset(&d, 0, sizeof d);
    field = &d;
  }
  ce_props pp; /* the margin's inflated copy is made after the build */
  ce_errno e = ce_margin_take(props, &pp, err);
  if (e || (e = ce_props_check(&pp, 0, 0, err))) return e;
  const double margin = props->margin;
  if (rep) memset(rep, 0, sizeof *rep);
  /* the geometry builds report to the field's callback unless the props
   * name their own */
  if (!pp.progress) {
    pp.progress = field->progress;
    pp.progress_user = field->progress_user;
  }
  props = &pp;
  switch (field->kind) {
    case CE_FIELD_DISTANCE:
      e = ce_geometry_from_tetmesh(vertices, nv, tets, nt, NULL, props, out, err);
      break;
    case CE_FIELD_USER:
      if (!field->user_field) return ce_fail(err, CE_EINVAL, "tet mesh field: USER field without values");
      /* ce_geometry_from_tetmesh checks: finite, >= 0, zero on the boundary */
      e = ce_geometry_from_tetmesh(vertices, nv, tets, nt, field->user_field, props, out, err);
      break;
    case CE_FIELD_LAPLACE: {
      if ((e = check_mesh(vertices, nv, tets, nt, err))) return e;
      double *eps = malloc((size_t)nv * sizeof *eps);
      if (!eps) return ce_fail(err, CE_ENOMEM, "tet mesh field: out of memory");
      e = ce_tetmesh_laplace(vertices, nv, tets, nt, field, eps, rep, err);
      if (e == CE_OK) {
        for (int32_t i = 0; i < nv; i++) eps[i] *= props->modulus;
        e = ce_geometry_from_tetmesh(vertices, nv, tets, nt, eps, props, out, err);
      }
      free(eps);
      break;
    }
    default:
      return ce_fail(err, CE_EINVAL, "tet mesh field: unknown field kind %d", (int)field->kind);
  }
  e = ce_margin_apply(e, margin, props, out, err);
  if (e == CE_OK && (e = report(field, 1.0, err)) != CE_OK) {
    ce_geometry_free(*out);
    *out = NULL;
  }
  return e;
}
