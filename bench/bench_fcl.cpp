/* bench_fcl.cpp — a reference for the finest compliant-compliant case: how
 * long FCL 0.7 (Debian's libfcl) takes to list every intersecting triangle
 * pair of two level-4 icospheres, against the engine's own triangle-pair
 * query on the same pose, timed in the same run (this VM's speed drifts by
 * tens of percent within an hour, so numbers from different runs do not
 * compare).
 *
 * Why C++: FCL's API is C++ templates (BVHModel<BV>, collide) with no C
 * binding; this is the project's only C++ file and it is built only when
 * FCL is installed (bench/CMakeLists.txt). The engine's side lives in
 * bench_fcl_ours.c because the engine's internal header is C11.
 *
 * Pose: spheres R = 0.1 m, centres 0.18 m apart along x, identity
 * rotations (the finest `cc` pose; the meshes mirror each other
 * across x = 0.09).
 *
 * Variants, timed interleaved (one query of each per round, so drift hits
 * all alike), >= 20 warm-up rounds, then `runs` timed rounds:
 *   fcl-obbrss, fcl-obb, fcl-aabb: fcl::collide on two BVHModel<BV> of a
 *       level-4 icosphere (5,120 triangles, built below), with a request
 *       that lists every intersecting pair (num_max_contacts large,
 *       enable_contact false: no contact points or normals);
 *   ours-rigid: two CE_RIGID engine spheres at a hint giving level 4:
 *       ce_bvh_collide_surfaces (OBB traversal for rigid meshes) then
 *       ce_triangles_meet on each proposed pair;
 *   ours-bnd: the same on the boundary hierarchies of two CE_COMPLIANT
 *       spheres (cylinder bounds), the seed search of the `cc` row;
 *   ours-cc: the whole `cc` query of bench_contact on those spheres
 *       (seeds, traced surface, 1,180 polygons, wrench): its "pairs" are
 *       its polygons, and it lists no triangle pairs to compare.
 * Per variant: triangles, pairs, and median / p90 microseconds with
 * CLOCK_THREAD_CPUTIME_ID (cpu) and CLOCK_MONOTONIC (wall). The pair lists
 * are then compared with the first variant's (triangles matched by their
 * vertex positions).
 *
 * Usage: bench_fcl [runs [bv [mesh [distance]]]]
 *   runs: timed rounds (default 500, at least 300 is sensible);
 *   bv:   all (default), obbrss, obb, aabb, ours (engine only);
 *   mesh: own (default: this file's icosphere) or engine (FCL gets the
 *         engine's rigid sphere triangles, so both sides test the very
 *         same triangles);
 *   distance: centre distance in m (default 0.18). */
#include <time.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fcl/fcl.h>

#include "bench_fcl.h"

namespace {

const double kRadius = 0.1;

double clock_us(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

struct Mesh {
  std::vector<fcl::Vector3d> v;
  std::vector<fcl::Triangle> f;
};

/* Icosphere of the given level on a sphere of radius r: the regular
 * icosahedron (vertices the cyclic permutations of (0, +-1, +-phi), faces
 * the triples at mutual distance 2, turned counter-clockwise seen from
 * outside), each level splitting every triangle into four at its edge
 * midpoints pushed out to the unit sphere; scaled by r at the end. */
Mesh icosphere(int level, double r) {
  const double phi = (1 + std::sqrt(5.0)) / 2;
  Mesh m;
  for (int c = 0; c < 3; c++)
    for (int s1 = -1; s1 <= 1; s1 += 2)
      for (int s2 = -1; s2 <= 1; s2 += 2) {
        double q[3] = {0, 0, 0};
        q[(c + 1) % 3] = s1;
        q[(c + 2) % 3] = s2 * phi;
        m.v.push_back(fcl::Vector3d(q[0], q[1], q[2]).normalized());
      }
  const double edge2 = 4 / (1 + phi * phi); /* squared edge on the unit sphere */
  auto adjacent = [&](int i, int j) { return std::fabs((m.v[i] - m.v[j]).squaredNorm() - edge2) < 1e-9; };
  for (int i = 0; i < 12; i++)
    for (int j = i + 1; j < 12; j++)
      for (int k = j + 1; k < 12; k++)
        if (adjacent(i, j) && adjacent(j, k) && adjacent(i, k)) {
          const bool ccw = (m.v[j] - m.v[i]).cross(m.v[k] - m.v[i]).dot(m.v[i] + m.v[j] + m.v[k]) > 0;
          m.f.push_back(ccw ? fcl::Triangle(i, j, k) : fcl::Triangle(i, k, j));
        }
  for (int l = 0; l < level; l++) {
    std::map<std::pair<size_t, size_t>, size_t> mid;
    auto midpoint = [&](size_t a, size_t b) {
      auto key = std::make_pair(std::min(a, b), std::max(a, b));
      auto it = mid.find(key);
      if (it != mid.end()) return it->second;
      m.v.push_back((0.5 * (m.v[a] + m.v[b])).normalized());
      mid.emplace(key, m.v.size() - 1);
      return m.v.size() - 1;
    };
    std::vector<fcl::Triangle> next;
    for (const fcl::Triangle &t : m.f) {
      size_t a = t[0], b = t[1], c = t[2], ab = midpoint(a, b), bc = midpoint(b, c), ca = midpoint(c, a);
      next.emplace_back(a, ab, ca);
      next.emplace_back(b, bc, ab);
      next.emplace_back(c, ca, bc);
      next.emplace_back(ab, bc, ca);
    }
    m.f.swap(next);
  }
  for (fcl::Vector3d &x : m.v) x *= r;
  return m;
}

Mesh engine_mesh(const bfo_ctx *c) {
  int nv, nf;
  const double *v;
  const int32_t *f;
  bfo_mesh(c, &nv, &v, &nf, &f);
  Mesh m;
  for (int i = 0; i < nv; i++) m.v.emplace_back(v[3 * i], v[3 * i + 1], v[3 * i + 2]);
  for (int i = 0; i < nf; i++) m.f.emplace_back(f[3 * i], f[3 * i + 1], f[3 * i + 2]);
  return m;
}

/* A triangle's identity across meshes: its three vertices rounded to
 * 1e-10 m, sorted. */
using TriKey = std::array<long long, 9>;
TriKey tri_key(const Mesh &m, size_t t) {
  std::array<std::array<long long, 3>, 3> p;
  for (int k = 0; k < 3; k++)
    for (int d = 0; d < 3; d++) p[k][d] = std::llround(m.v[m.f[t][k]][d] * 1e10);
  std::sort(p.begin(), p.end());
  TriKey key;
  for (int k = 0; k < 3; k++)
    for (int d = 0; d < 3; d++) key[3 * k + d] = p[k][d];
  return key;
}

using PairSet = std::set<std::pair<TriKey, TriKey>>;

struct Variant {
  std::string name;
  long triangles = 0;
  long pairs = -1;
  std::vector<double> cpu, wall;
  virtual ~Variant() {}
  virtual long run() = 0;            /* one query; the number of pairs */
  virtual PairSet pair_set() = 0;    /* the last query's pairs */
  virtual bool lists_pairs() const { return true; }
};

template <typename BV>
struct FclVariant : Variant {
  Mesh mesh;
  fcl::BVHModel<BV> a, b;
  fcl::Transform3d ta = fcl::Transform3d::Identity(), tb = fcl::Transform3d::Identity();
  fcl::CollisionRequestd req;
  fcl::CollisionResultd res;
  FclVariant(const std::string &n, const Mesh &m, double dx) : mesh(m) {
    name = n;
    triangles = (long)m.f.size();
    for (fcl::BVHModel<BV> *x : {&a, &b}) {
      x->beginModel((int)m.f.size(), (int)m.v.size());
      x->addSubModel(m.v, m.f);
      x->endModel();
    }
    tb.translation() = fcl::Vector3d(dx, 0, 0);
    req.num_max_contacts = 1000000; /* every pair */
    req.enable_contact = false;     /* pairs only: no points, normals, depths */
  }
  long run() override {
    res.clear();
    fcl::collide(&a, ta, &b, tb, req, res);
    return (long)res.numContacts();
  }
  PairSet pair_set() override {
    PairSet s;
    for (size_t i = 0; i < res.numContacts(); i++) {
      const fcl::Contactd &c = res.getContact(i);
      s.emplace(tri_key(mesh, (size_t)c.b1), tri_key(mesh, (size_t)c.b2));
    }
    return s;
  }
};

struct OursVariant : Variant {
  bfo_ctx *ctx;
  Mesh mesh;
  OursVariant(const std::string &n, bfo_ctx *c) : ctx(c), mesh(engine_mesh(c)) {
    name = n;
    triangles = bfo_triangles(c);
  }
  ~OursVariant() override { bfo_destroy(ctx); }
  long run() override { return bfo_query(ctx); }
  PairSet pair_set() override {
    PairSet s;
    const int32_t *p = bfo_pairs(ctx);
    for (long i = 0; i < pairs; i++) s.emplace(tri_key(mesh, (size_t)p[2 * i]), tri_key(mesh, (size_t)p[2 * i + 1]));
    return s;
  }
};

/* The whole contact query, for scale against the pair listings. */
struct ContactVariant : Variant {
  bfo_ctx *ctx;
  ContactVariant(const std::string &n, bfo_ctx *c) : ctx(c) {
    name = n;
    triangles = bfo_triangles(c);
  }
  long run() override { return bfo_contact(ctx); }
  PairSet pair_set() override { return PairSet(); }
  bool lists_pairs() const override { return false; }
};

double percentile(std::vector<double> t, double q) {
  std::sort(t.begin(), t.end());
  return t[(size_t)(q * (double)t.size())];
}

} // namespace

int main(int argc, char **argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 500;
  if (runs < 10) runs = 10;
  const std::string bv = argc > 2 ? argv[2] : "all", mesh_src = argc > 3 ? argv[3] : "own";
  if (mesh_src != "own" && mesh_src != "engine") {
    std::fprintf(stderr, "mesh must be own or engine\n");
    return 2;
  }
  const double dx = argc > 4 ? std::atof(argv[4]) : 0.18;
  /* A hint giving level 4 (ce_icosphere_level: ceil(log2(1.0515 R / h))),
   * the finest hint of bench_contact. */
  const double hint = 0.0066;
  const int level = bfo_level(kRadius, hint);
  bfo_ctx *rigid = bfo_create(kRadius, hint, dx, 0), *bnd = bfo_create(kRadius, hint, dx, 1);
  if (!rigid || !bnd) return 1;
  const Mesh fmesh = mesh_src == "own" ? icosphere(4, kRadius) : engine_mesh(rigid);

  std::vector<std::unique_ptr<Variant>> vs;
  if (bv == "all" || bv == "obbrss") vs.emplace_back(new FclVariant<fcl::OBBRSSd>("fcl-obbrss", fmesh, dx));
  if (bv == "all" || bv == "obb") vs.emplace_back(new FclVariant<fcl::OBBd>("fcl-obb", fmesh, dx));
  if (bv == "all" || bv == "aabb") vs.emplace_back(new FclVariant<fcl::AABBd>("fcl-aabb", fmesh, dx));
  if (vs.empty() && bv != "ours") {
    std::fprintf(stderr, "bv must be all, obbrss, obb, aabb or ours\n");
    return 2;
  }
  vs.emplace_back(new OursVariant("ours-rigid", rigid));
  vs.emplace_back(new OursVariant("ours-bnd", bnd));
  vs.emplace_back(new ContactVariant("ours-cc", bnd)); /* bnd owns the spheres (OursVariant frees them) */

  std::printf("bench_fcl: spheres R = %g m, centres %g m apart; FCL mesh: %s icosphere level 4 (%zu vertices, %zu "
              "triangles); engine level %d at hint %g; %d timed rounds\n",
              kRadius, dx, mesh_src.c_str(), fmesh.v.size(), fmesh.f.size(), level, hint, runs);
  for (int i = 0; i < 20; i++)
    for (auto &v : vs) v->pairs = v->run();
  for (int i = 0; i < runs; i++)
    for (auto &v : vs) {
      const double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), w0 = clock_us(CLOCK_MONOTONIC);
      const long n = v->run();
      const double w1 = clock_us(CLOCK_MONOTONIC), c1 = clock_us(CLOCK_THREAD_CPUTIME_ID);
      v->cpu.push_back(c1 - c0);
      v->wall.push_back(w1 - w0);
      if (n != v->pairs) {
        std::fprintf(stderr, "%s: %ld pairs, then %ld\n", v->name.c_str(), v->pairs, n);
        return 1;
      }
    }
  const PairSet ref = vs[0]->pair_set();
  for (auto &v : vs) {
    std::printf("%-11s tris %5ld  %s %4ld | cpu median %7.1f us p90 %7.1f us | wall median %7.1f us p90 %7.1f us",
                v->name.c_str(), v->triangles, v->lists_pairs() ? "pairs" : "polys", v->pairs,
                percentile(v->cpu, 0.5), percentile(v->cpu, 0.9), percentile(v->wall, 0.5),
                percentile(v->wall, 0.9));
    if (!v->lists_pairs()) {
      std::printf(" | %.2f x %s's cpu median\n", percentile(v->cpu, 0.5) / percentile(vs[0]->cpu, 0.5),
                  vs[0]->name.c_str());
      continue;
    }
    const PairSet s = v->pair_set();
    size_t common = 0;
    for (const auto &p : s) common += ref.count(p);
    std::printf(" | vs %s: %zu common, %zu only here, %zu only there\n", vs[0]->name.c_str(), common,
                s.size() - common, ref.size() - common);
  }
  return 0;
}
