/* A host-memory (DCP_MEMORY_HOST) kernel plugin in plain C11: the direct
 * protocol of SPEC section 1 run on the CPU, so CI without a GPU can test
 * dcp-check's plugin loader and host plugin harness end to end.
 *
 * dcp-check's host backend maps every region as POSIX shared memory in every
 * rank's process (peers[i] are real pointers into the peers' copies) and calls
 * call() synchronously on one thread per rank process; stream is NULL.
 *
 * Workspace (per rank; W ranks, H heads per rank, D head dim, S slots, M tokens):
 *   out_recv  payload [S][2][W][M][H][D] uint16  raw fp16/bf16 output bits
 *   lse_recv  payload [S][2][W][M][H]    float   base 2, masked rows -inf
 *   flags     control [S][2][W]          uint32  zeroed; [slot][parity][source]
 *   epoch     local   [S]                uint64  zeroed; this rank's call count
 *
 * One call on slot s: epoch = ++epoch[s]; parity = epoch & 1. For every
 * destination d, write this rank's head slice [d*H, (d+1)*H) into d's
 * out_recv/lse_recv at [s][parity][r], then release-store (uint32)epoch into
 * d's flags[s][parity][r]. Then acquire-spin until every own flags[s][parity][*]
 * holds (uint32)epoch (bounded by timeout_ns) and combine. call() is
 * synchronous, so a rank starts call e+2 on a slot (which overwrites the half of
 * call e) only after its combine of e+1, which needed every peer's e+1 flag,
 * which each peer sent only after finishing its own combine of e.
 *
 * Faulty variants, one compile definition each (the same source; tests of
 * dcp-check's plugin handling build one library per variant):
 *   DCP_TEST_FP16_ONLY        declares fp16 output only (bf16 cases are skipped)
 *   DCP_TEST_FP32_LSE_ONLY    declares fp32 LSE only
 *   DCP_TEST_NO_MASKING       lacks masks-empty-kv (never given seq_lens)
 *   DCP_TEST_NEEDS_CORESIDENT declares needs-coresident
 *   DCP_TEST_CONSTRAINED      all three of the above
 *   DCP_TEST_INIT_FAILS_RANK=R init fails with DCP_STATUS_INTERNAL on group rank
 *                             R only, before the allgather
 *   DCP_TEST_INIT_LATE_RANK=R init on group rank R first sleeps 3 s (a rank that
 *                             arrives late: the others must wait, then pass)
 *   DCP_TEST_CRASH_IN_CALL    SIGSEGV inside call() on group rank 0's third call
 *   DCP_TEST_HUGE_REGION      get_workspace asks for a (1 << 50)-byte region
 *   DCP_TEST_WRONG_ABI        exports abi_version 99
 *   DCP_TEST_NO_SYMBOL        exports the table as dcpKernelPlugin_v0
 *   DCP_TEST_BAD_SHAPE        a broken kernel: the dispatch ignores
 *                             lse_token_stride (uses W*H), so padded-LSE
 *                             cases produce mismatches
 *   DCP_TEST_WRITE_PAST_OUTPUT a broken kernel: the combine also stores one
 *                             element past the end of the output (every
 *                             element is right; only a guard zone sees it)
 *   DCP_TEST_REVERSE_ORDER    a correct kernel that sums the weights and
 *                             accumulates the sources in reverse order: its
 *                             outputs differ from the source-order ones (the
 *                             built-in host model's) by rounding only, so
 *                             --against passes and --against-exact fails
 *   DCP_TEST_GLOBAL_RECV      a broken kernel: this rank's own receive buffers
 *                             are file-scope statics set by the first init in
 *                             the process (one workspace per process assumed),
 *                             so a second context's calls combine the first's
 *                             stale rows (the two-contexts cases, -ctx2)
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcp_kernel_plugin.h"

/* ------------------------------------------------------------------------ */
/* Variant selection                                                         */
/* ------------------------------------------------------------------------ */

#if defined(DCP_TEST_FP16_ONLY) + defined(DCP_TEST_INIT_FAILS_RANK) + \
        defined(DCP_TEST_INIT_LATE_RANK) + \
        defined(DCP_TEST_CRASH_IN_CALL) + defined(DCP_TEST_HUGE_REGION) + \
        defined(DCP_TEST_WRONG_ABI) + defined(DCP_TEST_NO_SYMBOL) + defined(DCP_TEST_BAD_SHAPE) + \
        defined(DCP_TEST_WRITE_PAST_OUTPUT) + defined(DCP_TEST_GLOBAL_RECV) + \
        defined(DCP_TEST_FP32_LSE_ONLY) + defined(DCP_TEST_NO_MASKING) + \
        defined(DCP_TEST_NEEDS_CORESIDENT) + defined(DCP_TEST_CONSTRAINED) + \
        defined(DCP_TEST_REVERSE_ORDER) > 1
#error "define at most one DCP_TEST_* variant"
#endif

#if defined(DCP_TEST_FP16_ONLY)
#define HP_VARIANT "-fp16-only"
#define HP_OUT_DTYPES DCP_DTYPE_MASK(DCP_DTYPE_FP16)
#else
#define HP_OUT_DTYPES (DCP_DTYPE_MASK(DCP_DTYPE_FP16) | DCP_DTYPE_MASK(DCP_DTYPE_BF16))
#endif

/* Declaration-only variants (correct kernels that declare less): what the
 * suites generated from a declaration are tested with. */
#if defined(DCP_TEST_FP32_LSE_ONLY)
#define HP_VARIANT "-fp32-lse-only"
#endif
#if defined(DCP_TEST_NO_MASKING)
#define HP_VARIANT "-no-masking"
#endif
#if defined(DCP_TEST_NEEDS_CORESIDENT)
#define HP_VARIANT "-needs-coresident"
#endif
#if defined(DCP_TEST_CONSTRAINED)
#define HP_VARIANT "-constrained"
#endif
#if defined(DCP_TEST_FP32_LSE_ONLY) || defined(DCP_TEST_CONSTRAINED)
#define HP_LSE_DTYPES DCP_DTYPE_MASK(DCP_DTYPE_FP32)
#else
#define HP_LSE_DTYPES \
  (DCP_DTYPE_MASK(DCP_DTYPE_FP32) | DCP_DTYPE_MASK(DCP_DTYPE_FP16) | DCP_DTYPE_MASK(DCP_DTYPE_BF16))
#endif
#if defined(DCP_TEST_NO_MASKING) || defined(DCP_TEST_CONSTRAINED)
#define HP_CAP_MASKING 0 /* never given seq_lens: dcp-check skips or adapts those cases */
#else
#define HP_CAP_MASKING DCP_CAP_MASKS_EMPTY_KV
#endif
#if defined(DCP_TEST_NEEDS_CORESIDENT) || defined(DCP_TEST_CONSTRAINED)
#define HP_CAP_CORESIDENT DCP_CAP_NEEDS_CORESIDENT
#else
#define HP_CAP_CORESIDENT 0
#endif

#if defined(DCP_TEST_INIT_FAILS_RANK)
#define HP_VARIANT "-init-fails"
#endif

#if defined(DCP_TEST_INIT_LATE_RANK)
#define HP_VARIANT "-init-late"
#endif

#if defined(DCP_TEST_CRASH_IN_CALL)
#define HP_VARIANT "-crash"
#define HP_CRASH_RANK 0
#define HP_CRASH_CALL 3 /* 1-based: the third call() of the context */
#endif

#if defined(DCP_TEST_HUGE_REGION)
#define HP_VARIANT "-huge-region"
#define HP_HUGE_BYTES (1ull << 50)
#endif

#if defined(DCP_TEST_WRONG_ABI)
#define HP_VARIANT "-wrong-abi"
#define HP_ABI_VERSION 99u
#else
#define HP_ABI_VERSION ((uint32_t)DCP_PLUGIN_ABI_VERSION)
#endif

#if defined(DCP_TEST_NO_SYMBOL)
#define HP_VARIANT "-no-symbol"
#define HP_TABLE_NAME dcpKernelPlugin_v0
#else
#define HP_TABLE_NAME dcpKernelPlugin_v1
#endif

#if defined(DCP_TEST_BAD_SHAPE)
#define HP_VARIANT "-bad-shape"
#endif

#if defined(DCP_TEST_REVERSE_ORDER)
#define HP_VARIANT "-reverse-order"
/* Source s of W in the order the sums visit it. */
#define HP_SOURCE(s, W) ((W) - 1 - (s))
#else
#define HP_SOURCE(s, W) (s)
#endif

#if defined(DCP_TEST_GLOBAL_RECV)
#define HP_VARIANT "-global-recv"
/* The mistake: per-process state where per-context state belongs. */
static uint16_t* g_own_out_recv;
static float* g_own_lse_recv;
#endif

#ifndef HP_VARIANT
#define HP_VARIANT ""
#endif

/* ------------------------------------------------------------------------ */
/* Constants and small helpers                                               */
/* ------------------------------------------------------------------------ */

#define HP_MAX_GROUP 8
#define HP_MAX_SLOTS 2
#define HP_NUM_REGIONS 4
#define HP_ERROR_BYTES 512
#define HP_DEFAULT_TIMEOUT_NS (60ull * 1000000000ull) /* when neither bound is set */
#define HP_LOG2E 1.4426950408889634f                  /* log2(e) rounded to fp32 */

/* A reader uses a field only when the writer's struct_size covers it. */
#define HP_HAS_FIELD(p, type, field) \
  ((p)->struct_size >= offsetof(type, field) + sizeof(((const type*)0)->field))

_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "atomic u32 must be plain-sized");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "flags in shared memory need lock-free atomics");

enum { HP_OUT_RECV = 0, HP_LSE_RECV = 1, HP_FLAGS = 2, HP_EPOCH = 3 };
static const char* const kRegionNames[HP_NUM_REGIONS] = {"out_recv", "lse_recv", "flags",
                                                         "epoch"};
static const int32_t kRegionKinds[HP_NUM_REGIONS] = {DCP_REGION_PAYLOAD, DCP_REGION_PAYLOAD,
                                                     DCP_REGION_CONTROL, DCP_REGION_LOCAL};

typedef struct HostContext {
  int32_t rank; /* group rank */
  int32_t size; /* W */
  int32_t global_rank;
  int32_t members[HP_MAX_GROUP]; /* global rank of each group rank */
  int32_t max_tokens;
  int32_t heads; /* H */
  int32_t dim;   /* D */
  int32_t num_slots;
  uint64_t timeout_ns;      /* config default */
  dcpWaitStatus_v1* status; /* may be NULL */
  uint16_t* out_recv[HP_MAX_GROUP]; /* every rank's copy, as mapped here */
  float* lse_recv[HP_MAX_GROUP];
  uint32_t* flags[HP_MAX_GROUP];
  uint64_t* epoch; /* local */
  uint64_t num_calls;
  char error[HP_ERROR_BYTES];
} HostContext;

/* Failures with no context (get_workspace, a failed init, bad handles). */
static _Thread_local char tls_error[HP_ERROR_BYTES];

static dcpStatus_t fail(HostContext* ctx, dcpStatus_t status, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

static dcpStatus_t fail(HostContext* ctx, dcpStatus_t status, const char* fmt, ...) {
  char* buf = ctx ? ctx->error : tls_error;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, HP_ERROR_BYTES, fmt, ap);
  va_end(ap);
  return status;
}

/* a * b into *out; false on uint64 overflow. */
static int mul_u64(uint64_t a, uint64_t b, uint64_t* out) {
  if (a != 0 && b > UINT64_MAX / a) return 0;
  *out = a * b;
  return 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

static _Atomic uint32_t* as_atomic(uint32_t* p) { return (_Atomic uint32_t*)p; }

/* ------------------------------------------------------------------------ */
/* 16-bit float conversions (round to nearest, ties to even; exact widening) */
/* ------------------------------------------------------------------------ */

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float fp16_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0) { /* zero or subnormal: man * 2^-24, exact in fp32 */
    const float mag = (float)man * 5.9604644775390625e-08f;
    return sign ? -mag : mag;
  }
  if (exp == 31) return bits_float(sign | 0x7F800000u | (man << 13)); /* inf, NaN */
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

static uint16_t float_to_fp16(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);  /* NaN: a quiet NaN */
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 (or inf): inf */
  const uint32_t e = a >> 23;                              /* biased fp32 exponent */
  if (e < 102) return sign; /* below 2^-25: rounds to zero */
  uint32_t man = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 13, base = 0;
  if (e < 113) { /* fp16 subnormal: count units of 2^-24 */
    shift = 126 - e;
  } else { /* normal: rebias the exponent, keep 10 fraction bits */
    base = (e - 112) << 10;
    man &= 0x7FFFFFu;
  }
  uint32_t r = man >> shift;
  const uint32_t rem = man & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1u))) ++r; /* a carry moves into the exponent */
  return (uint16_t)(sign | (base + r));
}

static float bf16_to_float(uint16_t b) { return bits_float((uint32_t)b << 16); }

static uint16_t float_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

static float half_to_float(int32_t dtype, uint16_t bits) {
  return dtype == DCP_DTYPE_BF16 ? bf16_to_float(bits) : fp16_to_float(bits);
}

static uint16_t float_to_half(int32_t dtype, float f) {
  return dtype == DCP_DTYPE_BF16 ? float_to_bf16(f) : float_to_fp16(f);
}

/* ------------------------------------------------------------------------ */
/* LSE and masking                                                           */
/* ------------------------------------------------------------------------ */

static float load_lse(int32_t dtype, const void* row, int head) {
  if (dtype == DCP_DTYPE_FP32) {
    float f;
    memcpy(&f, (const char*)row + (size_t)head * 4, sizeof f);
    return f;
  }
  uint16_t b;
  memcpy(&b, (const char*)row + (size_t)head * 2, sizeof b);
  return dtype == DCP_DTYPE_BF16 ? bf16_to_float(b) : fp16_to_float(b);
}

/* Base e -> base 2 by one fp32 multiply; NaN and +inf count as -inf. */
static float lse_to_base2(float raw, int base_e) {
  const float l = base_e ? raw * HP_LOG2E : raw;
  return (l < INFINITY) ? l : -INFINITY;
}

/* True when `token` belongs to a sequence whose seq_lens entry is 0 on this
 * rank. Sequence s owns tokens [qsl[s], qsl[s+1]); a token outside every
 * sequence is not masked. */
static int token_masked(const int32_t* seq_lens, const int32_t* qsl, int num_seqs, int token) {
  if (seq_lens == NULL || qsl == NULL || num_seqs <= 0) return 0;
  if (token < qsl[0] || token >= qsl[num_seqs]) return 0;
  int lo = 0, hi = num_seqs; /* qsl[lo] <= token < qsl[hi] */
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (qsl[mid] <= token) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return seq_lens[lo] == 0;
}

/* ------------------------------------------------------------------------ */
/* Workspace layout                                                          */
/* ------------------------------------------------------------------------ */

/* Index of (slot, parity, source) in flags; rows of the receive buffers follow. */
static size_t flag_index(const HostContext* c, int slot, int parity, int src) {
  return ((size_t)slot * 2 + (size_t)parity) * (size_t)c->size + (size_t)src;
}

static size_t row_index(const HostContext* c, int slot, int parity, int src, int token,
                        int head) {
  return (flag_index(c, slot, parity, src) * (size_t)c->max_tokens + (size_t)token) *
             (size_t)c->heads +
         (size_t)head;
}

/* Bytes of each region for a config; a payload region's entry is 0 when its
 * size overflows 64 bits. */
static void region_bytes(const dcpGroupConfig_v1* config, uint64_t bytes[HP_NUM_REGIONS]) {
  const uint64_t halves = (uint64_t)config->num_slots * 2u * (uint64_t)config->group_size;
  uint64_t rows = 0, out = 0, lse = 0; /* rows: [S][2][W][M][H] */
  const int ok = mul_u64(halves, (uint64_t)config->max_tokens, &rows) &&
                 mul_u64(rows, (uint64_t)config->heads_per_rank, &rows);
  bytes[HP_OUT_RECV] = (ok && mul_u64(rows, (uint64_t)config->head_dim, &out) &&
                        mul_u64(out, sizeof(uint16_t), &out))
                           ? out
                           : 0;
  bytes[HP_LSE_RECV] = (ok && mul_u64(rows, sizeof(float), &lse)) ? lse : 0;
  bytes[HP_FLAGS] = halves * sizeof(uint32_t);
  bytes[HP_EPOCH] = (uint64_t)config->num_slots * sizeof(uint64_t);
}

static dcpStatus_t check_config(const dcpGroupConfig_v1* config) {
  if (config == NULL) return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "config is NULL");
  if (!HP_HAS_FIELD(config, dcpGroupConfig_v1, num_slots)) {
    return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "config struct_size %zu is too small",
                config->struct_size);
  }
  if (HP_HAS_FIELD(config, dcpGroupConfig_v1, mutant) && config->mutant != NULL) {
    return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "host-plugin has no mutant named '%s'",
                config->mutant);
  }
  if (config->group_size < 1 || config->group_size > HP_MAX_GROUP) {
    return fail(NULL, DCP_STATUS_UNSUPPORTED, "group size %d outside [1, %d]",
                config->group_size, HP_MAX_GROUP);
  }
  if (config->group_rank < 0 || config->group_rank >= config->group_size) {
    return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "group rank %d outside [0, %d)",
                config->group_rank, config->group_size);
  }
  if (config->num_slots < 1 || config->num_slots > HP_MAX_SLOTS) {
    return fail(NULL, DCP_STATUS_UNSUPPORTED, "%d slots outside [1, %d]", config->num_slots,
                HP_MAX_SLOTS);
  }
  if (config->max_tokens < 1 || config->heads_per_rank < 1 || config->head_dim < 8 ||
      config->head_dim % 8 != 0) {
    return fail(NULL, DCP_STATUS_INVALID_ARGUMENT,
                "bad shape: max_tokens %d, heads_per_rank %d, head_dim %d (a multiple of 8)",
                config->max_tokens, config->heads_per_rank, config->head_dim);
  }
  uint64_t bytes[HP_NUM_REGIONS];
  region_bytes(config, bytes);
  if (bytes[HP_OUT_RECV] == 0 || bytes[HP_LSE_RECV] == 0) {
    return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "workspace size overflows 64 bits");
  }
  return DCP_STATUS_OK;
}

/* ------------------------------------------------------------------------ */
/* Plugin functions                                                          */
/* ------------------------------------------------------------------------ */

static dcpStatus_t hp_get_workspace(const dcpGroupConfig_v1* config, dcpRegionRequest_v1* regions,
                                    int32_t capacity, int32_t* num_regions) {
  const dcpStatus_t st = check_config(config);
  if (st != DCP_STATUS_OK) return st;
  if (regions == NULL || num_regions == NULL) {
    return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "regions or num_regions is NULL");
  }
  if (capacity < HP_NUM_REGIONS) {
    return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "needs %d region requests, capacity is %d",
                HP_NUM_REGIONS, capacity);
  }
  uint64_t bytes[HP_NUM_REGIONS];
  region_bytes(config, bytes);
#if defined(DCP_TEST_HUGE_REGION)
  bytes[HP_OUT_RECV] = HP_HUGE_BYTES; /* more than any machine can map */
#endif
  for (int i = 0; i < HP_NUM_REGIONS; ++i) {
    dcpRegionRequest_v1* r = &regions[i];
    if (!HP_HAS_FIELD(r, dcpRegionRequest_v1, fill_byte)) {
      return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "region request struct_size %zu is too small",
                  r->struct_size);
    }
    memset(r->name, 0, sizeof r->name);
    strncpy(r->name, kRegionNames[i], sizeof r->name - 1);
    r->bytes = bytes[i];
    r->alignment = 256;
    r->kind = kRegionKinds[i];
    r->init = DCP_REGION_INIT_ZERO;
    r->fill_byte = 0;
  }
  *num_regions = HP_NUM_REGIONS;
  return DCP_STATUS_OK;
}

static dcpStatus_t hp_init(const dcpGroupConfig_v1* config, const dcpRegion_v1* regions,
                           int32_t num_regions, const dcpHostServices_v1* services,
                           void** context) {
  if (context == NULL) return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "context is NULL");
  *context = NULL;
  dcpStatus_t st = check_config(config);
  if (st != DCP_STATUS_OK) return st;
#if defined(DCP_TEST_INIT_FAILS_RANK)
  /* Fail before the allgather: the other ranks would wait in it alone unless
   * dcp-check agrees the init status across the group. */
  if (config->group_rank == (DCP_TEST_INIT_FAILS_RANK)) {
    return fail(NULL, DCP_STATUS_INTERNAL, "injected init failure on group rank %d",
                config->group_rank);
  }
#endif
#if defined(DCP_TEST_INIT_LATE_RANK)
  /* The injected fault is the delay itself (before the allgather): the
   * peers wait in it, and the run must pass. */
  if (config->group_rank == (DCP_TEST_INIT_LATE_RANK)) {
    const struct timespec late = {3, 0};
    nanosleep(&late, NULL);
  }
#endif
  if (services == NULL || !HP_HAS_FIELD(services, dcpHostServices_v1, log) ||
      services->allgather == NULL || services->log == NULL) {
    return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "host services missing or incomplete");
  }
  if (num_regions != HP_NUM_REGIONS || regions == NULL) {
    return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "expected %d regions, got %d",
                HP_NUM_REGIONS, num_regions);
  }

  HostContext* ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL) return fail(NULL, DCP_STATUS_INTERNAL, "out of host memory");
  ctx->rank = config->group_rank;
  ctx->size = config->group_size;
  ctx->global_rank = config->global_rank;
  for (int i = 0; i < ctx->size; ++i) {
    ctx->members[i] = config->members ? config->members[i] : i;
  }
  ctx->max_tokens = config->max_tokens;
  ctx->heads = config->heads_per_rank;
  ctx->dim = config->head_dim;
  ctx->num_slots = config->num_slots;
  ctx->timeout_ns =
      HP_HAS_FIELD(config, dcpGroupConfig_v1, timeout_ns) ? config->timeout_ns : 0;
  ctx->status =
      HP_HAS_FIELD(config, dcpGroupConfig_v1, wait_status) ? config->wait_status : NULL;

  /* Regions by name, whatever their order. */
  uint64_t bytes[HP_NUM_REGIONS];
  region_bytes(config, bytes);
  void* const* peers[HP_NUM_REGIONS] = {NULL};
  for (int want = 0; want < HP_NUM_REGIONS; ++want) {
    const dcpRegion_v1* found = NULL;
    for (int i = 0; i < num_regions; ++i) {
      if (regions[i].name != NULL && strcmp(regions[i].name, kRegionNames[want]) == 0) {
        found = &regions[i];
      }
    }
    if (found == NULL) {
      st = fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "no region named '%s'", kRegionNames[want]);
      goto error;
    }
    if (found->bytes < bytes[want] || found->kind != kRegionKinds[want] ||
        found->local == NULL || found->peers == NULL ||
        found->peers[ctx->rank] != found->local) {
      st = fail(NULL, DCP_STATUS_INVALID_ARGUMENT,
                "region '%s': %llu bytes of kind %d (want >= %llu of kind %d), local %p",
                kRegionNames[want], (unsigned long long)found->bytes, found->kind,
                (unsigned long long)bytes[want], kRegionKinds[want], found->local);
      goto error;
    }
    if (kRegionKinds[want] != DCP_REGION_LOCAL) {
      for (int r = 0; r < ctx->size; ++r) {
        if (found->peers[r] == NULL) {
          st = fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "region '%s' has no mapping of rank %d",
                    kRegionNames[want], r);
          goto error;
        }
      }
    }
    peers[want] = found->peers;
  }
  for (int r = 0; r < ctx->size; ++r) {
    ctx->out_recv[r] = (uint16_t*)peers[HP_OUT_RECV][r];
    ctx->lse_recv[r] = (float*)peers[HP_LSE_RECV][r];
    ctx->flags[r] = (uint32_t*)peers[HP_FLAGS][r];
  }
  ctx->epoch = (uint64_t*)peers[HP_EPOCH][ctx->rank];
#if defined(DCP_TEST_GLOBAL_RECV)
  if (g_own_out_recv == NULL) {
    g_own_out_recv = ctx->out_recv[ctx->rank];
    g_own_lse_recv = ctx->lse_recv[ctx->rank];
  }
  ctx->out_recv[ctx->rank] = g_own_out_recv;
  ctx->lse_recv[ctx->rank] = g_own_lse_recv;
#endif

  /* Smoke test of the services: every rank contributes its group rank. */
  {
    const int32_t mine = ctx->rank;
    int32_t all[HP_MAX_GROUP];
    st = services->allgather(services->handle, &mine, sizeof mine, all);
    if (st != DCP_STATUS_OK) {
      st = fail(NULL, DCP_STATUS_INTERNAL, "allgather failed with status %d", (int)st);
      goto error;
    }
    for (int i = 0; i < ctx->size; ++i) {
      if (all[i] != i) {
        st = fail(NULL, DCP_STATUS_INTERNAL, "allgather: slot %d holds %d, want %d", i,
                  (int)all[i], i);
        goto error;
      }
    }
    char line[96];
    snprintf(line, sizeof line, "host-plugin: init ok on rank %d", ctx->rank);
    services->log(services->handle, 1, line);
  }
  *context = ctx;
  return DCP_STATUS_OK;

error:
  free(ctx);
  return st;
}

/* Spin until own flags[slot][parity][src] == want for every src; 0 on time-out
 * (the context's error then names the wait). */
static int wait_for_flags(HostContext* c, int slot, int parity, uint32_t want,
                          uint64_t timeout_ns) {
  dcpWaitStatus_v1* ws = c->status;
  const uint64_t start = now_ns();
  const uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
  for (int src = 0; src < c->size; ++src) {
    _Atomic uint32_t* f = as_atomic(&c->flags[c->rank][flag_index(c, slot, parity, src)]);
    uint32_t v = atomic_load_explicit(f, memory_order_acquire);
    if (v == want) continue;
    if (ws) {
      ws->wait_source = (uint32_t)src;
      ws->wait_slot = (uint32_t)slot;
      ws->wait_parity = (uint32_t)parity;
      ws->wait_epoch = want;
      ws->wait_flag_value = v;
      ws->waiting = 1;
    }
    /* Backoff: ranks may share cores, so a spinning rank yields the CPU to the
     * peer it waits for, and sleeps once the wait is clearly not short. */
    for (uint64_t i = 1; (v = atomic_load_explicit(f, memory_order_acquire)) != want; ++i) {
      if (i < 64) continue;
      if (ws) ws->wait_flag_value = v;
      if (now_ns() > deadline) {
        v = atomic_load_explicit(f, memory_order_acquire);
        if (v == want) break;
        if (ws) {
          ws->wait_flag_value = v;
          ws->trapped = 1; /* `waiting` stays set: dcp-check reports from it */
        }
        fail(c, DCP_STATUS_INTERNAL,
             "rank %d waits for rank %d (slot %d, parity %d, epoch %u; flag holds %u): timed out",
             c->global_rank, c->members[src], slot, parity, want, v);
        return 0;
      }
      if (i < 1024) {
        sched_yield();
      } else {
        sleep_ns(i < 4096 ? 20000 : 200000);
      }
    }
    if (ws) ws->waiting = 0;
  }
  return 1;
}

static dcpStatus_t hp_call(void* context, const dcpCallArgs_v1* a) {
  HostContext* c = (HostContext*)context;
  if (c == NULL) return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "call on a NULL context");
  if (a == NULL || !HP_HAS_FIELD(a, dcpCallArgs_v1, output)) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "call args missing or struct_size too small");
  }
  const int W = c->size, H = c->heads, D = c->dim, T = a->num_tokens, slot = a->slot;
  float* combined_lse = HP_HAS_FIELD(a, dcpCallArgs_v1, combined_lse) ? a->combined_lse : NULL;
  uint64_t timeout_ns = HP_HAS_FIELD(a, dcpCallArgs_v1, timeout_ns) ? a->timeout_ns : 0;
  if (timeout_ns == 0) timeout_ns = c->timeout_ns;
  if (timeout_ns == 0) timeout_ns = HP_DEFAULT_TIMEOUT_NS;

  if (slot < 0 || slot >= c->num_slots) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "slot %d outside [0, %d)", slot, c->num_slots);
  }
  if (T < 1 || T > c->max_tokens) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "num_tokens %d outside [1, %d]", T,
                c->max_tokens);
  }
  if (a->partial_output == NULL || a->partial_lse == NULL || a->output == NULL) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "partial_output, partial_lse or output is NULL");
  }
  if (a->out_dtype != DCP_DTYPE_FP16 && a->out_dtype != DCP_DTYPE_BF16) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "output dtype %d is not fp16 or bf16",
                a->out_dtype);
  }
  if (!(HP_OUT_DTYPES & DCP_DTYPE_MASK(a->out_dtype))) {
    return fail(c, DCP_STATUS_UNSUPPORTED, "output dtype %d not supported", a->out_dtype);
  }
  if (a->lse_dtype != DCP_DTYPE_FP16 && a->lse_dtype != DCP_DTYPE_BF16 &&
      a->lse_dtype != DCP_DTYPE_FP32) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "LSE dtype %d unknown", a->lse_dtype);
  }
  if (a->lse_base != DCP_LSE_BASE_E && a->lse_base != DCP_LSE_BASE_2) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "LSE base %d unknown", a->lse_base);
  }
  if (a->out_token_stride < (int64_t)W * H * D || a->out_token_stride % 8 != 0) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT,
                "out_token_stride %lld: must be a multiple of 8 and >= W*H*D = %d",
                (long long)a->out_token_stride, W * H * D);
  }
  if (a->lse_token_stride < (int64_t)W * H) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "lse_token_stride %lld < W*H = %d",
                (long long)a->lse_token_stride, W * H);
  }
  if (a->seq_lens != NULL && (a->num_seqs < 0 || (a->num_seqs > 0 && a->query_start_loc == NULL))) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "seq_lens without query_start_loc (%d seqs)",
                a->num_seqs);
  }

#if defined(DCP_TEST_CRASH_IN_CALL)
  /* A plugin that crashes: SIGSEGV on group rank 0's third call. The pointer
   * itself is volatile, so the compiler cannot see that it is NULL and turn the
   * store into a trap instruction. */
  if (++c->num_calls == HP_CRASH_CALL && c->rank == HP_CRASH_RANK) {
    volatile int* volatile null_pointer = NULL;
    *null_pointer = 1;
  }
#else
  ++c->num_calls;
#endif

  const uint64_t epoch = ++c->epoch[slot];
  const uint32_t epoch32 = (uint32_t)epoch;
  const int parity = (int)(epoch & 1u);
  const int base_e = a->lse_base == DCP_LSE_BASE_E;
  const size_t lse_elem = a->lse_dtype == DCP_DTYPE_FP32 ? 4 : 2;
#if defined(DCP_TEST_BAD_SHAPE)
  /* The broken kernel: assumes packed LSE rows, ignoring lse_token_stride. */
  const size_t lse_stride = (size_t)W * (size_t)H;
#else
  const size_t lse_stride = (size_t)a->lse_token_stride;
#endif
  const size_t out_stride = (size_t)a->out_token_stride;
  const uint16_t* src_out = (const uint16_t*)a->partial_output;
  const char* src_lse = (const char*)a->partial_lse;

  /* Dispatch: this rank's slice for every destination, then its flag. */
  for (int k = 1; k <= W; ++k) {
    const int dest = (c->rank + k) % W; /* start with the next rank: spreads contention */
    float* lse = c->lse_recv[dest];
    uint16_t* out = c->out_recv[dest];
    for (int t = 0; t < T; ++t) {
      const int masked = token_masked(a->seq_lens, a->query_start_loc, a->num_seqs, t);
      const char* lse_row = src_lse + (size_t)t * lse_stride * lse_elem;
      for (int h = 0; h < H; ++h) {
        const int head = dest * H + h;
        const size_t row = row_index(c, slot, parity, c->rank, t, h);
        /* An empty KV shard: its rows are garbage, so send -inf and no payload. */
        lse[row] = masked ? -INFINITY : lse_to_base2(load_lse(a->lse_dtype, lse_row, head), base_e);
        if (!masked) {
          memcpy(out + row * (size_t)D, src_out + (size_t)t * out_stride + (size_t)head * D,
                 (size_t)D * sizeof(uint16_t));
        }
      }
    }
    atomic_store_explicit(as_atomic(&c->flags[dest][flag_index(c, slot, parity, c->rank)]),
                          epoch32, memory_order_release); /* publishes the payload above */
  }
  if (c->status && slot < DCP_WAIT_STATUS_SLOTS) c->status->last_signalled_epoch[slot] = epoch32;

  if (!wait_for_flags(c, slot, parity, epoch32, timeout_ns)) return DCP_STATUS_INTERNAL;

  /* Combine: w_s = 2^(l_s - m) / sum, fp32 fused multiply-add in source order
   * (HP_SOURCE), one rounding; a source of weight 0 is never read. */
  const float* lse = c->lse_recv[c->rank];
  const uint16_t* recv = c->out_recv[c->rank];
  uint16_t* dst = (uint16_t*)a->output;
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) {
      float l2[HP_MAX_GROUP], w[HP_MAX_GROUP];
      const uint16_t* rows[HP_MAX_GROUP];
      float m = -INFINITY;
      for (int s = 0; s < W; ++s) {
        const size_t row = row_index(c, slot, parity, s, t, h);
        const float l = lse[row];
        l2[s] = (l < INFINITY) ? l : -INFINITY; /* already sanitised; NaN-proof anyway */
        rows[s] = recv + row * (size_t)D;
        if (l2[s] > m) m = l2[s];
      }
      float sum = 0.0f;
      for (int i = 0; i < W; ++i) {
        const int s = HP_SOURCE(i, W);
        w[s] = (m > -INFINITY && l2[s] > -INFINITY) ? exp2f(l2[s] - m) : 0.0f;
        sum += w[s];
      }
      uint16_t* o = dst + ((size_t)t * H + h) * (size_t)D;
      if (sum == 0.0f) { /* every source empty: exactly zero */
        memset(o, 0, (size_t)D * sizeof(uint16_t));
        if (combined_lse) combined_lse[(size_t)t * H + h] = -INFINITY;
        continue;
      }
      for (int s = 0; s < W; ++s) w[s] = w[s] / sum;
      for (int d = 0; d < D; ++d) {
        float acc = 0.0f;
        for (int i = 0; i < W; ++i) {
          const int s = HP_SOURCE(i, W);
          if (w[s] == 0.0f) continue;
          acc = fmaf(w[s], half_to_float(a->out_dtype, rows[s][d]), acc);
        }
        o[d] = float_to_half(a->out_dtype, acc);
      }
      if (combined_lse) {
        const float lse2 = m + log2f(sum);
        combined_lse[(size_t)t * H + h] = base_e ? lse2 / HP_LOG2E : lse2;
      }
    }
  }
#if defined(DCP_TEST_WRITE_PAST_OUTPUT)
  dst[(size_t)T * H * (size_t)D] = 0x3C00; /* the bug: one element past the end */
#endif
  if (c->status && slot < DCP_WAIT_STATUS_SLOTS) c->status->last_completed_epoch[slot] = epoch32;
  return DCP_STATUS_OK;
}

static dcpStatus_t hp_set_epoch(void* context, int32_t slot, uint64_t epoch, void* stream) {
  (void)stream;
  HostContext* c = (HostContext*)context;
  if (c == NULL) return fail(NULL, DCP_STATUS_INVALID_ARGUMENT, "set_epoch on a NULL context");
  if (slot < 0 || slot >= c->num_slots) {
    return fail(c, DCP_STATUS_INVALID_ARGUMENT, "set_epoch: slot %d outside [0, %d)", slot,
                c->num_slots);
  }
  /* Idle point: every flag this rank receives on the slot takes the restarted
   * epoch, so the next call (epoch + 1, either parity) cannot match a stale one. */
  c->epoch[slot] = epoch;
  for (int p = 0; p < 2; ++p) {
    for (int src = 0; src < c->size; ++src) {
      atomic_store_explicit(as_atomic(&c->flags[c->rank][flag_index(c, slot, p, src)]),
                            (uint32_t)epoch, memory_order_release);
    }
  }
  if (c->status && slot < DCP_WAIT_STATUS_SLOTS) {
    c->status->last_signalled_epoch[slot] = (uint32_t)epoch;
    c->status->last_completed_epoch[slot] = (uint32_t)epoch;
  }
  return DCP_STATUS_OK;
}

static dcpStatus_t hp_finalize(void* context) {
  free(context);
  return DCP_STATUS_OK;
}

static const char* hp_last_error(void* context) {
  return context ? ((const HostContext*)context)->error : tls_error;
}

/* ------------------------------------------------------------------------ */
/* The exported table                                                        */
/* ------------------------------------------------------------------------ */

/* The symbol dcp-check looks up (dcpKernelPlugin_v0 in the no-symbol variant). */
DCP_PLUGIN_EXPORT const dcpKernelPlugin_v1_t HP_TABLE_NAME = {
    .struct_size = sizeof(dcpKernelPlugin_v1_t),
    .abi_version = HP_ABI_VERSION,
    .name = "dcp-host-plugin" HP_VARIANT,
    .version = "1.0",
    .memory = DCP_MEMORY_HOST,
    .out_dtypes = HP_OUT_DTYPES,
    .lse_dtypes = HP_LSE_DTYPES,
    .lse_bases = DCP_LSE_BASE_MASK(DCP_LSE_BASE_E) | DCP_LSE_BASE_MASK(DCP_LSE_BASE_2),
    .max_group_size = HP_MAX_GROUP,
    .max_slots = HP_MAX_SLOTS,
    .epoch_kind = DCP_EPOCH_U64,
    /* No DCP_CAP_GRAPH_SAFE: CUDA graphs mean nothing on the host. */
    .capabilities = HP_CAP_MASKING | HP_CAP_CORESIDENT | DCP_CAP_TIMEOUT_HINT |
                    DCP_CAP_WAIT_STATUS | DCP_CAP_COMBINED_LSE,
    .mutants = NULL,
    .num_mutants = 0,
    .get_workspace = hp_get_workspace,
    .init = hp_init,
    .call = hp_call,
    .finalize = hp_finalize,
    .last_error = hp_last_error,
    .set_epoch = hp_set_epoch,
};
