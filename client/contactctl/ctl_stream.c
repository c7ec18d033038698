/* ctl_stream.c — contactctl stream: send a scene's frames, live results and latency. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

const char *const STREAM_HELP =
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
  ctl_jadd(o, "sequence", (double)res->sequence);
  ctl_jadd(o, "dropped_updates", (double)res->dropped_updates);
  ctl_jadd(o, "compute_time_us", (double)res->compute_time_us);
  ctl_jadd(o, "round_trip_us", lat * 1e6);
  cJSON *ps = cJSON_AddArrayToObject(o, "pairs");
  for (size_t i = 0; i < res->n_results; i++) cJSON_AddItemToArray(ps, ctl_jpair(s, res->results[i]));
  ctl_print_json(o);
}

/* One stream command: its options, the open stream and the latencies. */
typedef struct stream_run {
  const char *path;
  double rate; /* updates per second, 0 = as fast as results return */
  long count;  /* updates to send, -1 = until interrupted */
  int latest;
  cc_scene s;
  cc_client *c;
  uint64_t sid;
  int tty;
  size_t nb;
  cc_body *states;
  size_t ring_n;
  double *sent_at; /* by sequence % ring_n */
  double roll[ROLL];
  size_t nroll, iroll;
  double *all_lat;
  size_t nall, call;
  uint64_t seq, received, dropped, last_seq;
  uint64_t reopened; /* times the library reopened the stream after a break */
  double t_start, next_send, period;
  uint64_t window; /* keep at most this many updates unanswered (below the server's limit) */
} stream_run;

static int stream_parse(int argc, char **argv, common *co, stream_run *st) {
  for (int i = 0; i < argc; i++) {
    int r = ctl_common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    const char *f = argv[i];
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      fputs(STREAM_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(f, "--latest") == 0) {
      st->latest = 1;
      continue;
    }
    if (strcmp(f, "--rate") == 0 && i + 1 < argc) {
      if (ctl_parse_double(argv[++i], &st->rate) || st->rate < 0)
        return ctl_usage("stream: --rate \"%s\" is not a rate >= 0", argv[i]);
      continue;
    }
    if (strcmp(f, "--count") == 0 && i + 1 < argc) {
      if (ctl_parse_long(argv[++i], &st->count) || st->count < 1)
        return ctl_usage("stream: --count \"%s\" is not a positive integer", argv[i]);
      continue;
    }
    if ((f[0] != '-' || strcmp(f, "-") == 0) && !st->path) {
      st->path = f;
      continue;
    }
    return ctl_usage("stream: unexpected argument \"%s\"", f);
  }
  if (!st->path) return ctl_usage("stream: missing SCENE.json (or - for stdin)%s", "");
  return CTL_GO_ON;
}

/* Load and register the scene, open a stream over its bodies. */
static int stream_open(const common *co, stream_run *st) {
  int rc = ctl_scene_setup(st->path, co, &st->s, &st->c);
  if (rc) return rc;
  cc_scene_msgs m;
  cc_error e;
  if (cc_scene_msgs_build(&st->s, NULL, NULL, 0, &m)) {
    cc_close(st->c);
    cc_scene_free(&st->s);
    return EX_INPUT;
  }
  m.open.mode = st->latest ? CONTACTD__V1__STREAM_MODE__STREAM_MODE_LATEST_ONLY
                           : CONTACTD__V1__STREAM_MODE__STREAM_MODE_QUEUE_ALL;
  rc = cc_stream_open(st->c, &m.open, &st->sid, &e);
  cc_scene_msgs_free(&m);
  if (rc) {
    rc = ctl_report("stream", &e);
    cc_close(st->c);
    cc_scene_free(&st->s);
    return rc;
  }
  return CTL_GO_ON;
}

/* The next update: the scene's next frame (cycled), or its initial state. */
static int stream_send(stream_run *st, double now) {
  cc_error e;
  size_t nb = st->nb;
  const cc_body *src = st->s.nframes ? &st->s.frames[(st->seq % st->s.nframes) * nb] : NULL;
  for (size_t i = 0; i < nb; i++) st->states[i] = src ? src[i] : st->s.bodies[i].state;
  st->seq++;
  st->sent_at[st->seq % st->ring_n] = ctl_now_s();
  if (cc_stream_send(st->c, st->sid, st->seq, st->states, nb, &e)) return ctl_report("stream update", &e);
  st->next_send = st->period > 0 ? st->next_send + st->period : now;
  if (st->period > 0 && st->next_send < now - 1.0) st->next_send = now; /* fell far behind: don't burst */
  return CTL_GO_ON;
}

/* Count a result and keep its round trip; -1 when out of memory. */
static int stream_record(stream_run *st, const Contactd__V1__StreamResult *res, double lat) {
  st->received++;
  st->dropped += res->dropped_updates;
  st->last_seq = res->sequence;
  st->roll[st->iroll] = lat;
  st->iroll = (st->iroll + 1) % ROLL;
  if (st->nroll < ROLL) st->nroll++;
  if (st->nall == st->call) {
    st->call = st->call ? 2 * st->call : 1024;
    double *na = realloc(st->all_lat, st->call * sizeof *na);
    if (!na) return -1;
    st->all_lat = na;
  }
  st->all_lat[st->nall++] = lat;
  return 0;
}

/* A result as a JSON line, or the live line (redrawn in place on a TTY). */
static void stream_print(const common *co, const stream_run *st, const Contactd__V1__StreamResult *res, double lat) {
  if (co->json) {
    print_stream_result(&st->s, res, lat);
    return;
  }
  const double *roll = st->roll;
  size_t nroll = st->nroll;
  printf("%sseq %6llu", st->tty ? "\r\033[K" : "", (unsigned long long)res->sequence);
  for (size_t i = 0; i < res->n_results && i < 4; i++) {
    const Contactd__V1__PairResult *pr = res->results[i];
    printf("  %s/%s |Fn| %.4e N area %.3e", cc_scene_body_name(&st->s, pr->a), cc_scene_body_name(&st->s, pr->b),
           pr->total ? pr->total->normal_force_magnitude : 0.0, pr->area);
  }
  if (res->n_results > 4) printf("  (+%zu pairs)", res->n_results - 4);
  printf("  | rtt %.2f ms  p50 %.2f p99 %.2f max %.2f ms  server %.2f ms  dropped %llu%s",
         lat * 1e3, quantile(roll, nroll, 0.5) * 1e3, quantile(roll, nroll, 0.99) * 1e3,
         quantile(roll, nroll, 1.0) * 1e3, (double)res->compute_time_us * 1e-3, (unsigned long long)st->dropped,
         st->tty ? "" : "\n");
  fflush(stdout);
}

/* Send at the rate while at most `window` updates are unanswered, and
 * receive results, until --count updates are answered or SIGINT. */
static int stream_loop(const common *co, stream_run *st) {
  cc_error e;
  int idle = 0; /* consecutive seconds without a result while waiting for one */
  while (!g_stop) {
    int done_sending = st->count > 0 && st->seq >= (uint64_t)st->count;
    if (done_sending && st->last_seq >= st->seq) break;
    double now = ctl_now_s();
    uint64_t answered = st->last_seq; /* updates after it are unanswered */
    if (!done_sending && now >= st->next_send && st->seq - answered < st->window) {
      int rc = stream_send(st, now);
      if (rc != CTL_GO_ON) return rc;
      continue;
    }
    int wait_ms = 1000;
    if (!done_sending && st->seq - answered < st->window) {
      double dt = st->next_send - ctl_now_s();
      wait_ms = dt > 0 ? (int)(dt * 1e3) : 0;
    }
    Contactd__V1__StreamResult *res;
    int r = cc_stream_recv(st->c, wait_ms, &res, &e);
    if (r == CC_EDEADLINE_EXCEEDED && !e.remote) {
      /* waited a whole second for an answer with nothing else to do */
      if ((done_sending || st->seq - answered >= st->window) && ++idle > 60) {
        fprintf(stderr, "contactctl: stream: no result for 60 s\n");
        return EX_CONN;
      }
      continue;
    }
    if (r && e.reopened) {
      /* The library reconnected and reopened the stream: updates after the
       * last result are lost with the old connection; send those frames
       * again (frames are cycled by sequence, so the same poses). */
      fprintf(stderr, "contactctl: stream: connection lost; reopened on %s, resending from update %llu\n",
              cc_addr(st->c), (unsigned long long)e.sequence + 1);
      st->reopened++;
      st->seq = e.sequence;
      st->last_seq = e.sequence;
      st->next_send = ctl_now_s();
      continue;
    }
    if (r) return ctl_report("stream", &e);
    double lat = ctl_now_s() - st->sent_at[res->sequence % st->ring_n];
    idle = 0;
    if (stream_record(st, res, lat)) {
      cc_free(res);
      break;
    }
    stream_print(co, st, res, lat);
    cc_free(res);
  }
  return EX_OK;
}

static void stream_summary(const common *co, const stream_run *st, const Contactd__V1__CloseStreamReply *cr) {
  double elapsed = ctl_now_s() - st->t_start;
  double p50 = quantile(st->all_lat, st->nall, 0.5), p99 = quantile(st->all_lat, st->nall, 0.99),
         mx = quantile(st->all_lat, st->nall, 1.0);
  uint64_t dropped = cr ? cr->dropped_updates : st->dropped;
  if (co->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON *sm = cJSON_AddObjectToObject(o, "summary");
    ctl_jadd(sm, "updates", (double)st->seq);
    ctl_jadd(sm, "results", (double)st->received);
    ctl_jadd(sm, "dropped_updates", (double)dropped);
    ctl_jadd(sm, "elapsed_s", elapsed);
    ctl_jadd(sm, "round_trip_ms_p50", p50 * 1e3);
    ctl_jadd(sm, "round_trip_ms_p99", p99 * 1e3);
    ctl_jadd(sm, "round_trip_ms_max", mx * 1e3);
    ctl_jadd(sm, "reopened", (double)st->reopened);
    ctl_print_json(o);
  } else {
    printf("%llu updates, %llu results, %llu dropped in %.2f s (%.1f results/s); round trip p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
           (unsigned long long)st->seq, (unsigned long long)st->received, (unsigned long long)dropped, elapsed,
           elapsed > 0 ? (double)st->received / elapsed : 0.0, p50 * 1e3, p99 * 1e3, mx * 1e3);
    if (st->reopened) printf("stream reopened %llu times after a lost connection\n", (unsigned long long)st->reopened);
  }
}

/* Close the stream, drain the results the close reply overtook, print the
 * summary and free everything. */
static int stream_finish(const common *co, stream_run *st, int rc) {
  if (st->tty) printf("\n");
  Contactd__V1__CloseStreamReply *cr = NULL;
  cc_error e;
  if (cc_stream_close(st->c, st->sid, &cr, &e)) {
    if (!rc) rc = ctl_report("close stream", &e);
  }
  Contactd__V1__StreamResult *res;
  while (cc_stream_recv(st->c, 0, &res, &e) == 0) {
    st->received++;
    st->dropped += res->dropped_updates;
    if (co->json) print_stream_result(&st->s, res, ctl_now_s() - st->sent_at[res->sequence % st->ring_n]);
    cc_free(res);
  }
  stream_summary(co, st, cr);
  cc_free(cr);
  free(st->states);
  free(st->sent_at);
  free(st->all_lat);
  cc_close(st->c);
  cc_scene_free(&st->s);
  return g_stop && rc == EX_OK ? EX_OK : rc;
}

int cmd_stream(int argc, char **argv, common *co) {
  stream_run st;
  memset(&st, 0, sizeof st);
  st.rate = 30;
  st.count = -1;
  int rc = stream_parse(argc, argv, co, &st);
  if (rc == CTL_GO_ON) rc = stream_open(co, &st);
  if (rc != CTL_GO_ON) return rc;
  signal(SIGINT, on_sigint);
  st.tty = isatty(1) && !co->json;
  st.nb = st.s.nbodies;
  st.states = calloc(st.nb, sizeof *st.states);
  st.ring_n = 4096;
  st.sent_at = calloc(st.ring_n, sizeof *st.sent_at);
  st.t_start = ctl_now_s();
  st.next_send = st.t_start;
  st.period = st.rate > 0 ? 1.0 / st.rate : 0;
  st.window = st.latest ? 64 : 16;
  rc = stream_loop(co, &st);
  return stream_finish(co, &st, rc);
}
