/* cc_client.h — the contactd C client library (prefix cc_).
 *
 * A blocking client for the contactd wire protocol (proto/contactd.proto,
 * package contactd.v1): delimited protobuf over TCP ("host:port",
 * "[v6addr]:port") or a Unix socket ("unix:/path").
 *
 *   cc_client *c;
 *   cc_error err;
 *   if (cc_connect("127.0.0.1:7411", NULL, &c, &err)) { ...err.message... }
 *   cc_shape s = {.kind = CC_SHAPE_SPHERE, .a = 0.05, .modulus = 1e5, .hint = 0.01};
 *   char id[CC_ID_MAX];
 *   cc_register_shape(c, &s, id, NULL, &err);
 *   ...
 *   Contactd__V1__ContactReply *rep;
 *   cc_query_bodies(c, bodies, 2, pairs, 1, NULL, &rep, &err);
 *   ... rep->results[0]->wrench_a->force->z ...
 *   cc_free(rep);
 *   cc_close(c);
 *
 * Conventions:
 *  - Every call returns 0 on success, else a gRPC canonical code (the numbers
 *    of contactd.v1.ErrorCode, CC_E* below) and fills *err (err may be NULL).
 *    err->remote says whether the server sent the error (its code, message
 *    and field verbatim) or the client raised it (connection refused or lost
 *    = CC_EUNAVAILABLE, timeout = CC_EDEADLINE_EXCEEDED, a malformed or
 *    unexpected reply = CC_EINTERNAL, bad arguments = CC_EINVALID_ARGUMENT).
 *  - Memory: requests are borrowed (never freed or kept by the library);
 *    every reply is a protobuf-c message (contactd.pb-c.h) owned by the
 *    caller, released with cc_free(). Replies are never shared between calls.
 *  - Timeouts: cc_options.connect_timeout_ms bounds connect();
 *    cc_options.timeout_ms bounds each wait for a reply (and each blocked
 *    write). After a timeout the late reply, if it ever comes, is discarded.
 *  - A lost connection: calls fail with CC_EUNAVAILABLE and err->retryable;
 *    the next call reconnects (address lists, backoff), registrations the
 *    server lacks are sent again and open streams reopened (client/README.md,
 *    "Surviving the server").
 *  - A cc_client is not thread-safe: use one per thread (connections are
 *    cheap; the daemon's geometry cache is shared by all of them).
 *  - Streams: cc_stream_update() only sends; results arrive in order and are
 *    read with cc_stream_recv(). Results that arrive while another call waits
 *    for its reply are queued and handed out by cc_stream_recv() later. Keep
 *    the number of unanswered updates below the server's max_inflight_per_conn limit
 *    (HelloReply.config_limits), or use CC latest-only mode.
 */
#ifndef CC_CLIENT_H
#define CC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "contactd.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CC_VERSION "0.1.0"
#define CC_PROTOCOL_VERSION 1
#define CC_DEFAULT_ADDR "127.0.0.1:7411"
#define CC_ID_MAX 128 /* buffer size that holds any geometry id */

/* gRPC canonical codes (contactd.v1.ErrorCode). */
enum {
  CC_OK = 0,
  CC_ECANCELLED = 1,
  CC_EUNKNOWN = 2,
  CC_EINVALID_ARGUMENT = 3,
  CC_EDEADLINE_EXCEEDED = 4,
  CC_ENOT_FOUND = 5,
  CC_EALREADY_EXISTS = 6,
  CC_EPERMISSION_DENIED = 7,
  CC_ERESOURCE_EXHAUSTED = 8,
  CC_EFAILED_PRECONDITION = 9,
  CC_EABORTED = 10,
  CC_EOUT_OF_RANGE = 11,
  CC_EUNIMPLEMENTED = 12,
  CC_EINTERNAL = 13,
  CC_EUNAVAILABLE = 14,
  CC_EDATA_LOSS = 15,
  CC_EUNAUTHENTICATED = 16,
};

typedef struct cc_error {
  int code;          /* CC_OK or a CC_E* code */
  int remote;        /* 1 = sent by the server, 0 = raised by the client */
  char field[256];   /* offending field path from the server ("" if none) */
  char message[512]; /* human-readable */
  /* A stream's computation failed (from cc_stream_recv): the stream and
   * the sequence number of the update it answers; 0 otherwise. */
  uint64_t stream_id, sequence;
  /* 1 = the connection broke (remote is 0, code CC_EUNAVAILABLE): the
   * request may or may not have run and may be sent again; with reopened,
   * a stream was reopened on a new connection (stream_id is the caller's
   * id, sequence the last result handed out before the break; results of
   * later updates sent before the break never come: send them again). A
   * server's own errors never set it. */
  int retryable, reopened;
} cc_error;

/* "INVALID_ARGUMENT", ... ("OK" for 0, "UNKNOWN" for codes out of range). */
const char *cc_code_name(int code);

typedef struct cc_options {
  int connect_timeout_ms;  /* default 5000; < 0 = wait forever */
  int timeout_ms;          /* per reply; default 60000; < 0 = wait forever */
  size_t max_frame_bytes;  /* largest reply accepted; default 256 MiB (the server's max_reply_bytes) */
  /* Recovery (client/README.md, "Surviving the server"). */
  int reconnect;           /* 1 (default) = reconnect at the next call after a break */
  int backoff_initial_ms;  /* first wait between rounds over the address list; default 50 */
  int backoff_max_ms;      /* the doubling wait's cap; default 2000 */
  int reconnect_timeout_ms; /* give up (CC_EUNAVAILABLE, retryable) after this; default 30000; < 0 = never */
  int retry_queries;       /* 1 = a ContactQuery, HasGeometry, Stats or Hello lost in a break is
                            * sent once more on the new connection; default 0 */
  size_t keep_registrations; /* registrations kept to re-register; default 1024, 0 = none */
  size_t keep_bytes;        /* ... and their packed bytes at most; default 64 MiB */
  /* TLS on TCP addresses (docs/security.md; the Unix socket stays
   * plaintext). The server's certificate is always verified: against
   * tls_ca_file, else the system's CAs, and for tls_server_name, else the
   * address's host (a name or an IP address). The strings are copied. */
  int tls;                     /* 1 = TLS 1.3 (1.2 if the server allows only that); default 0 */
  const char *tls_ca_file;     /* PEM CA certificates that sign the server's; NULL = the system's */
  const char *tls_cert_file;   /* PEM client certificate (chain) for mutual TLS; NULL = none */
  const char *tls_key_file;    /* its private key; NULL = in tls_cert_file */
  const char *tls_server_name; /* name for SNI and verification; NULL = the address's host */
  /* A bearer token sent in Hello on every connection and reconnection
   * (never logged, never put in an error). Taken from token, else the file
   * token_file, else the file $CONTACTD_TOKEN_FILE, else $CONTACTD_TOKEN;
   * a file's trailing whitespace is not part of the token. Prefer a file
   * (mode 0600): a variable can leak through /proc and crash reports. */
  const char *token;
  const char *token_file;
} cc_options;

void cc_options_default(cc_options *o);
/* The connection flags every contactd command line shares, at argv[*i]:
 *   --tls, --ca FILE, --cert FILE, --key FILE, --server-name NAME,
 *   --token-file FILE  (--ca, --cert and --server-name imply --tls).
 * There is no flag for the token itself: a command line is visible to
 * every user of the machine. Returns 1 when it consumed the flag (and *i
 * points at its last word), 0 when argv[*i] is none of them, or
 * CC_EINVALID_ARGUMENT with *err naming the flag that lacks a value.
 * Values are borrowed from argv. */
int cc_options_flag(cc_options *o, int argc, char **argv, int *i, cc_error *err);
#define CC_OPTIONS_FLAGS_HELP                                                                       \
  "  --tls                 TLS to a TCP address (the server's certificate is verified)\n"           \
  "  --ca FILE             CA certificates (PEM) that sign the server's (default: the system's)\n"  \
  "  --cert FILE --key FILE  client certificate and key (mutual TLS)\n"                             \
  "  --server-name NAME    name the server's certificate must carry (default: the address's host)\n"\
  "  --token-file FILE     bearer token sent in Hello (default: $CONTACTD_TOKEN_FILE, $CONTACTD_TOKEN)\n"

typedef struct cc_client cc_client;

/* The address to use when none is given: $CONTACTD_ADDR, else
 * CC_DEFAULT_ADDR. */
const char *cc_default_addr(void);

/* Connect to addr ("host:port", "[::1]:port", "unix:/path"; NULL = the
 * default address), or to the first that answers of a comma-separated list
 * of them (replicas): each is tried once, in turn. opt may be NULL
 * (defaults). */
int cc_connect(const char *addr, const cc_options *opt, cc_client **out, cc_error *err);
/* With a token (cc_options.token), every connection begins with a Hello
 * carrying it: cc_connect fails with the server's CC_EUNAUTHENTICATED when
 * the token matches no principal (and reconnecting stops there too). A
 * server certificate that does not verify is CC_EUNAUTHENTICATED as well,
 * with OpenSSL's reason. */
/* Close the connection and free everything (NULL is fine). The server then
 * drops this session's geometry references and streams. */
void cc_close(cc_client *c);
/* Change the per-reply timeout (ms, < 0 = forever). */
void cc_set_timeout(cc_client *c, int timeout_ms);
/* The socket, e.g. for poll() (readable = cc_stream_recv will not block
 * long). */
int cc_fd(const cc_client *c);

/* What recovery did, told as it happens (cc_set_event). */
typedef enum cc_event_kind {
  CC_EVENT_RECONNECTED = 1, /* a new connection after a break: addr, attempts */
  CC_EVENT_REREGISTERED,    /* registrations sent again: registered */
  CC_EVENT_STREAM_REOPENED, /* stream_id reopened with the same bodies; last_sequence */
} cc_event_kind;

typedef struct cc_event {
  cc_event_kind kind;
  const char *addr;       /* the address now connected */
  int attempts;           /* connection attempts the reconnect took */
  size_t registered;      /* REREGISTERED: how many */
  uint64_t stream_id;     /* STREAM_REOPENED: the caller's id (unchanged) */
  uint64_t last_sequence; /* STREAM_REOPENED: last result handed out before the break */
} cc_event;
typedef void (*cc_event_fn)(void *user, const cc_event *ev);
/* fn NULL = no callback (cc_stream_recv still reports each reopened
 * stream once, see cc_error.reopened). */
void cc_set_event(cc_client *c, cc_event_fn fn, void *user);
/* The address of the current connection. */
const char *cc_addr(const cc_client *c);

/* Free any message returned by this library (NULL is fine). */
void cc_free(void *msg);

/* ---- one blocking call per request ------------------------------------ */

/* Generic call: sends req (its request_id is overwritten) and waits for the
 * reply with the same id; RegisterProgress messages are skipped, an Error
 * reply becomes the return code. *reply is the whole Envelope. */
int cc_call(cc_client *c, Contactd__V1__Envelope *req, Contactd__V1__Envelope **reply,
            cc_error *err);
/* cc_call waiting at most timeout_ms for this call's reply (< 0 = forever);
 * the client's own timeout (cc_set_timeout) is unchanged. Every other call
 * waits cc_set_timeout's; the stream readers take their own. */
int cc_call_timeout(cc_client *c, Contactd__V1__Envelope *req, Contactd__V1__Envelope **reply, int timeout_ms,
                    cc_error *err);

int cc_hello(cc_client *c, const char *client_name, Contactd__V1__HelloReply **out, cc_error *err);
int cc_register(cc_client *c, const Contactd__V1__RegisterGeometry *req,
                Contactd__V1__RegisterReply **out, cc_error *err);
/* Called for every RegisterProgress of the request a call is waiting for
 * (set want_progress in the RegisterGeometry); fn NULL = ignore them. */
typedef void (*cc_progress_fn)(void *user, double fraction, const char *stage);
void cc_set_progress(cc_client *c, cc_progress_fn fn, void *user);
/* *out lists the ids the server does not hold. */
int cc_has(cc_client *c, const char *const *ids, size_t n, Contactd__V1__HasGeometryReply **out,
           cc_error *err);
int cc_release(cc_client *c, const char *const *ids, size_t n, Contactd__V1__ReleaseReply **out,
               cc_error *err);
int cc_query(cc_client *c, const Contactd__V1__ContactQuery *q, Contactd__V1__ContactReply **out,
             cc_error *err);
int cc_stats(cc_client *c, Contactd__V1__StatsReply **out, cc_error *err);

/* ---- streams ------------------------------------------------------------ */

int cc_stream_open(cc_client *c, const Contactd__V1__OpenStream *m, uint64_t *stream_id,
                   cc_error *err);
/* Send one update (no reply is awaited). */
int cc_stream_update(cc_client *c, const Contactd__V1__StreamUpdate *u, cc_error *err);
/* The next stream result of any stream on this connection, waiting up to
 * timeout_ms (< 0 = the client's timeout). An Error the server sent for an
 * update (or for a stream computation) is returned as its code. A timeout is
 * CC_EDEADLINE_EXCEEDED with the connection still usable. After a break the
 * client reconnects and reopens its streams, and returns CC_EUNAVAILABLE
 * once per reopened stream with err->retryable and err->reopened set. */
int cc_stream_recv(cc_client *c, int timeout_ms, Contactd__V1__StreamResult **out, cc_error *err);
/* Where a result handed out by cc_stream_next / cc_stream_latest stands. */
typedef struct cc_stream_info {
  uint64_t sequence;    /* the update it answers */
  uint64_t newest_sent; /* the stream's last update sent when it was handed out */
  int stale;            /* sequence < newest_sent: a newer update was sent */
  size_t queued;        /* this stream's newer results (or errors) already received */
  size_t skipped;       /* older results discarded for it: overtaken (latest), or older
                         * than one handed out before (never handed out as new) */
} cc_stream_info;
/* Stream stream_id's own next result, in increasing sequence: results of
 * other streams that arrive meanwhile stay queued for them. timeout_ms as
 * cc_stream_recv (< 0 = the client's timeout); a timeout is
 * CC_EDEADLINE_EXCEEDED and a result that comes later is handed out in
 * order, saying it is stale. An Error about one of its updates is returned
 * as its code (err->stream_id, err->sequence name the update) in its
 * place. info may be NULL. */
int cc_stream_next(cc_client *c, uint64_t stream_id, int timeout_ms, Contactd__V1__StreamResult **out,
                   cc_stream_info *info, cc_error *err);
/* Its newest result received: waits as cc_stream_next until there is one,
 * then discards the older ones (info->skipped). */
int cc_stream_latest(cc_client *c, uint64_t stream_id, int timeout_ms, Contactd__V1__StreamResult **out,
                     cc_stream_info *info, cc_error *err);
/* Close a stream. Results of updates sent before are delivered first (they
 * are queued for cc_stream_recv). *out may be NULL. */
int cc_stream_close(cc_client *c, uint64_t stream_id, Contactd__V1__CloseStreamReply **out,
                    cc_error *err);

/* ---- plain-struct conveniences ----------------------------------------- */

typedef enum cc_shape_kind {
  CC_SHAPE_SPHERE = 1,  /* a = radius */
  CC_SHAPE_BOX,         /* a, b, c = full edge lengths along x, y, z */
  CC_SHAPE_CYLINDER,    /* a = radius, b = length along z */
  CC_SHAPE_CAPSULE,     /* a = radius, b = length of the medial segment */
  CC_SHAPE_ELLIPSOID,   /* a, b, c = semi-axes */
  CC_SHAPE_HALF_SPACE,  /* z <= 0 of the body frame */
  CC_SHAPE_MESH_FILE,   /* data/size = a mesh file's bytes */
  CC_SHAPE_HEIGHT_FIELD, /* rigid terrain: heights, nx, ny, dx, dy, origin, continuity */
} cc_shape_kind;

typedef struct cc_shape {
  cc_shape_kind kind;
  double a, b, c;       /* dimensions, see cc_shape_kind */
  int rigid;            /* 1 = rigid, 0 = compliant */
  double modulus;       /* hydroelastic modulus, Pa (compliant) */
  double hint;          /* resolution hint, m (primitives) */
  double slab;          /* compliant half space slab thickness, m; 0 = default */
  double dissipation;   /* Hunt-Crossley d, s/m */
  double friction;      /* Coulomb mu */
  const void *data;     /* CC_SHAPE_MESH_FILE: the file's bytes ... */
  size_t size;          /* ... and their count */
  int format;           /* Contactd__V1__MeshFormat; 0 = detect */
  const char *name;     /* label / file name (may be NULL) */
  /* CC_SHAPE_HEIGHT_FIELD: z[j * nx + i] at (origin + (i dx, j dy)), m */
  const double *heights;
  int nx, ny;
  double dx, dy, origin[3];
  int continuity;       /* 1 = C1 (default), 2 = C2 */
  /* compliant surface meshes (tetrahedralised by the server) */
  double edge_length;   /* target tet edge length, m; 0 = hint */
  int field;            /* Contactd__V1__FieldKind; 0 = Laplace */
  double core_depth;    /* Laplace core depth, m; 0 = deepest vertices */
  int hull_if_open;     /* open surface: use its convex hull */
  int want_progress;    /* ask for RegisterProgress (see cc_set_progress) */
  /* Margin delta, m (RegisterGeometry.margin; 0 = none): compliant
   * geometries with a tet mesh (primitives but the half space, tet and
   * surface meshes, mesh files). Pairs apart but within their
   * bodies' margins come back CONTACT_STATUS_SPECULATIVE (zero force; read
   * them with cc_pair_speculative). docs/physics.md, "Margins". */
  double margin;
} cc_shape;

/* Register a shape; copies the geometry id into id[CC_ID_MAX]. out (the full
 * reply with build statistics) may be NULL. */
int cc_register_shape(cc_client *c, const cc_shape *s, char id[CC_ID_MAX],
                      Contactd__V1__RegisterReply **out, cc_error *err);

/* Register these shapes unless the server holds them already: ids[i]
 * non-empty is the id of shapes[i] from an earlier registration (on this
 * server or on another replica sharing its geometry store); one HasGeometry
 * asks for all of those, and only the shapes the server lacks, and those
 * with no id yet, are registered (filling ids[i]). A client that
 * reconnects to another replica so recovers in one round trip when the
 * store holds its geometry. *registered (may be NULL) counts the
 * registrations sent. */
int cc_ensure_shapes(cc_client *c, const cc_shape *const *shapes, char *const *ids, size_t n, size_t *registered,
                     cc_error *err);

/* Name of a cc_shape_kind for a command line ("sphere", ..., "half-space",
 * "mesh"); cc_shape_kind_parse is the inverse (0 if unknown). */
const char *cc_shape_kind_name(cc_shape_kind k);
cc_shape_kind cc_shape_kind_parse(const char *s);
/* The MeshFormat value for "auto", "obj", "stl", "ply", "vtk" or "msh"
 * (-1 if unknown). The server refuses PLY (UNIMPLEMENTED). */
int cc_mesh_format_parse(const char *s);

typedef struct cc_body {
  uint32_t id;
  const char *geometry_id;
  double p[3];  /* position of the body origin, m */
  double q[4];  /* orientation w, x, y, z; all zero = identity */
  double w[3];  /* angular velocity, rad/s, world */
  double v[3];  /* linear velocity of the origin, m/s, world */
} cc_body;

/* A ContactQuery over plain bodies and explicit pairs (pairs[i][0] = A,
 * pairs[i][1] = B; npairs = 0 = all pairs by the broad phase). opt may be
 * NULL (server defaults); opt->want_energy adds each pair's and patch's
 * strain energy (PairResult.strain_energy, .energy; docs/energy.md);
 * opt->reduced_contacts = K (1 to 64) adds at most K point contacts per
 * patch whose forces and moments add up to the patch's
 * (PairResult.reduced_contacts, ReducedContact; docs/physics.md, "Reduced
 * contacts"), read as plain structs with cc_pair_reduced. */
int cc_query_bodies(cc_client *c, const cc_body *bodies, size_t n, const uint32_t (*pairs)[2],
                    size_t npairs, const Contactd__V1__QueryOptions *opt,
                    Contactd__V1__ContactReply **out, cc_error *err);

/* The wrench Jacobians of a result queried with QueryOptions.want_jacobian
 * (proto/contactd.proto, WrenchJacobian, documents the convention): copies
 * d_pose_a, d_pose_b, d_velocity_a, d_velocity_b (36 row-major values
 * each) into out[0..3] and returns 0; returns -1 with *why (may be NULL)
 * set to the server's reason, or to "not requested", when the result has
 * none. */
int cc_pair_jacobian(const Contactd__V1__PairResult *r, double out[4][36], const char **why);

/* One reduced contact (ReducedContact) as plain values, world frame. */
typedef struct cc_reduced_contact {
  int32_t patch;        /* index of its patch (PairResult.patches) */
  double position[3];   /* m */
  double normal[3];     /* unit, out of B into A */
  double force[3];      /* on A, N */
  double couple[3];     /* pure moment on A carried with the point, N m */
  double stiffness;     /* N/m */
  double dissipation;   /* Hunt-Crossley d, s/m */
  double separation;    /* phi, m: stiffness * (-phi) = the point's elastic normal force */
} cc_reduced_contact;
/* Copies the first min(max, count) reduced contacts of a result queried
 * with QueryOptions.reduced_contacts into out (may be NULL when max is 0)
 * and returns their count (0 when none were asked for or the pair does not
 * touch). Sum of force = wrench_a.force; sum of (position - c) x force +
 * couple = the moment about c. */
size_t cc_pair_reduced(const Contactd__V1__PairResult *r, cc_reduced_contact *out, size_t max);

/* A speculative pair (status CONTACT_STATUS_SPECULATIVE: apart, within
 * their bodies' margins; zero force) as plain values, world frame. */
typedef struct cc_speculative {
  double separation;  /* m, > 0: how far the bodies must approach to touch */
  double normal[3];   /* unit, out of B into A */
  double point[3];    /* m: where the separation is least */
  double stiffness;   /* N/m: the contact's stiffness at touch */
  int32_t faces;      /* faces of the speculative surface */
} cc_speculative;
/* Fills *out and returns 0 when r is speculative; returns -1 (out
 * untouched) otherwise. */
int cc_pair_speculative(const Contactd__V1__PairResult *r, cc_speculative *out);

/* OpenStream over plain bodies/pairs (as cc_query_bodies). */
int cc_stream_open_bodies(cc_client *c, const cc_body *bodies, size_t n, const uint32_t (*pairs)[2],
                          size_t npairs, const Contactd__V1__QueryOptions *opt, int latest_only,
                          uint64_t *stream_id, cc_error *err);
/* StreamUpdate with the pose and velocity of each listed body. */
int cc_stream_send(cc_client *c, uint64_t stream_id, uint64_t sequence, const cc_body *states,
                   size_t n, cc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* CC_CLIENT_H */
