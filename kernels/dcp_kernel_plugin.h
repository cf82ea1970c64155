/* dcp-check kernel plugin ABI, version 1.
 *
 * The one header a kernel plugin includes. C11 (also valid C++); no CUDA types:
 * streams are passed as `void*` (a cudaStream_t). A plugin is a shared library
 * that exports one symbol, `dcpKernelPlugin_v1`, of type dcpKernelPlugin_v1.
 * The contract in prose, with a walkthrough: docs/plugins.md.
 *
 * Compatibility rules:
 *  - Every struct that is passed by pointer and may grow starts with
 *    `struct_size`, set by whoever fills it; such structs only ever grow at the
 *    end, and a reader uses a field only when struct_size covers it. The two
 *    fixed records (dcpWaitStatus_v1, dcpMutantInfo_v1) never change size in
 *    v1; a reserved word may gain a meaning behind a capability bit. A new ABI version gets a new symbol name
 *    (dcpKernelPlugin_v2, ...); dcp-check looks for the newest it knows first.
 *  - Strings handed to a plugin live until the call returns; strings a plugin
 *    returns (name, version, last_error) must stay valid until dlclose.
 *
 * Lifecycle on every rank of a DCP group (dcp-check drives it):
 *   1. get_workspace(config): the symmetric regions this group needs.
 *   2. dcp-check allocates every region on every rank, initialises it, maps the
 *      peers' copies, and builds the peer tables.
 *   3. init(config, regions, services, &context). Each rank's status is agreed
 *      across the group: all ranks continue, or all stop with the failing
 *      rank's message. init may allocate, synchronise and use the services.
 *   4. A group barrier (no rank calls before every rank finished init).
 *   5. call(context, args) any number of times, on up to max_slots slots.
 *   6. finalize(context) on every rank before the regions are unmapped.
 * Several contexts may live in one process at once (two groups, two
 * workspaces): keep no mutable global state.
 */
#ifndef DCP_KERNEL_PLUGIN_H_
#define DCP_KERNEL_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DCP_PLUGIN_ABI_VERSION 1
#define DCP_PLUGIN_SYMBOL_V1 "dcpKernelPlugin_v1"

/* Return codes of every plugin function. */
typedef enum dcpStatus {
  DCP_STATUS_OK = 0,
  DCP_STATUS_UNSUPPORTED = 1,      /* get_workspace/init: this group or geometry is not supported
                                      (a usage error, exit 2). Per-case support is declared in
                                      the table, never returned by call() */
  DCP_STATUS_INVALID_ARGUMENT = 2, /* refused the arguments (e.g. T > max_tokens); from call()
                                      a kernel failure, since peers may already be waiting,
                                      except in the capacity cases (T = max_tokens + 1), where
                                      every rank must return it before entering the exchange */
  DCP_STATUS_CUDA_ERROR = 3,       /* a CUDA call failed: a kernel failure */
  DCP_STATUS_INTERNAL = 4          /* anything else: a kernel failure */
} dcpStatus_t;

typedef enum dcpDtype { DCP_DTYPE_FP16 = 0, DCP_DTYPE_BF16 = 1, DCP_DTYPE_FP32 = 2 } dcpDtype_t;
#define DCP_DTYPE_MASK(d) (1u << (d))

typedef enum dcpLseBase { DCP_LSE_BASE_E = 0, DCP_LSE_BASE_2 = 1 } dcpLseBase_t;
#define DCP_LSE_BASE_MASK(b) (1u << (b))

/* Where the plugin's regions and inputs live and where its calls execute. */
typedef enum dcpMemory {
  DCP_MEMORY_DEVICE = 0, /* CUDA device memory; call() only enqueues on args->stream */
  DCP_MEMORY_HOST = 1    /* shared host memory (dcp-check --backend host); call() runs to
                            completion on the calling thread, stream is NULL */
} dcpMemory_t;

/* What the epoch counter of a slot is. Every kernel with set_epoch runs the
 * cases that start a few calls below 2^31 and below 2^32 (set_epoch gets that
 * count as a u64): for S32 the first crosses its overflow and the second
 * crosses -1 -> 0; for U32 the first crosses the sign bit (an ordered compare
 * of flags as int32 breaks there) and the second wraps to 0; for U64 the
 * second leaves the low word (a flag truncated to 32 bits breaks there). */
typedef enum dcpEpochKind {
  DCP_EPOCH_U32 = 0, /* unsigned 32-bit: wraps at 2^32 */
  DCP_EPOCH_S32 = 1, /* signed 32-bit: overflows at 2^31 */
  DCP_EPOCH_U64 = 2  /* 64-bit: no practical wrap */
} dcpEpochKind_t;

/* Capability bits (dcpKernelPlugin_v1.capabilities). A case that needs a bit the
 * plugin lacks is skipped, and the report names the bit. */
#define DCP_CAP_GRAPH_SAFE (1ull << 0)           /* calls may be captured and replayed in CUDA graphs */
#define DCP_CAP_EAGER_BEFORE_CAPTURE (1ull << 1) /* a slot needs one eager call before its capture */
#define DCP_CAP_MASKS_EMPTY_KV (1ull << 2)       /* honours seq_lens/query_start_loc (empty shards) */
#define DCP_CAP_NEEDS_DISTINCT_GPUS (1ull << 3)  /* cannot run with ranks sharing a GPU */
#define DCP_CAP_NEEDS_CORESIDENT (1ull << 4)     /* assumes its spinning blocks never starve the other
                                                    slot's kernels: two slots in flight are run only
                                                    when every rank has a GPU of its own */
#define DCP_CAP_TIMEOUT_HINT (1ull << 5)         /* bounds its device waits by args->timeout_ns */
#define DCP_CAP_COMBINED_LSE (1ull << 6)         /* writes args->combined_lse when it is not NULL */
#define DCP_CAP_WAIT_STATUS (1ull << 7)          /* writes config->wait_status while it waits */
#define DCP_CAP_PDL (1ull << 8)                  /* honours DCP_CALL_PDL in args->flags */
#define DCP_CAP_LAUNCH_RECORD (1ull << 9)        /* with DCP_CAP_WAIT_STATUS: also writes
                                                    wait_status->last_started_epoch */

/* Region kinds. */
typedef enum dcpRegionKind {
  DCP_REGION_PAYLOAD = 0, /* contents do not matter between calls: dcp-check may poison them
                             between cases (when every rank is idle) */
  DCP_REGION_CONTROL = 1, /* flags, FIFOs, epochs: never touched by dcp-check after init */
  DCP_REGION_LOCAL = 2    /* this rank only: not mapped by peers (peers[] holds only local) */
} dcpRegionKind_t;

/* Initial contents of a region, established before init() on every rank. */
typedef enum dcpRegionInit {
  DCP_REGION_INIT_ZERO = 0,  /* all bytes 0 */
  DCP_REGION_INIT_FILL = 1,  /* all bytes fill_byte */
  DCP_REGION_INIT_PLUGIN = 2 /* left as allocated: the plugin's init writes it */
} dcpRegionInit_t;

#define DCP_REGION_NAME_BYTES 32
#define DCP_MAX_REGIONS 16
#define DCP_WAIT_STATUS_SLOTS 2

/* One region asked for by get_workspace. */
typedef struct dcpRegionRequest_v1 {
  size_t struct_size;               /* set by dcp-check before get_workspace */
  char name[DCP_REGION_NAME_BYTES]; /* NUL-terminated, unique in the workspace */
  uint64_t bytes;                   /* per rank, > 0 */
  uint64_t alignment;               /* power of two <= 4096; 0 means 256 */
  int32_t kind;                     /* dcpRegionKind_t */
  int32_t init;                     /* dcpRegionInit_t */
  uint32_t fill_byte;               /* for DCP_REGION_INIT_FILL, 0..255 */
} dcpRegionRequest_v1;

/* One mapped region handed to init, in request order. */
typedef struct dcpRegion_v1 {
  size_t struct_size;
  const char* name;
  int32_t kind;
  uint64_t bytes;
  void* local;                 /* this rank's copy */
  void* const* peers;          /* host array [group_size]: every rank's copy as mapped here;
                                  peers[group_rank] == local. LOCAL regions: only that entry */
  const int64_t* peers_device; /* the same addresses as a device int64 table [group_size]
                                  (host memory for DCP_MEMORY_HOST plugins) */
  uint64_t peer_stride;        /* when nonzero, peers[i] == peers[0] + i * peer_stride */
} dcpRegion_v1;

/* Wait-status record: what this rank is waiting on. dcp-check reads it from the
 * host while the device spins (it is mapped pinned memory), so a hang names who
 * waits on whom. Write it with volatile stores. */
typedef struct dcpWaitStatus_v1 {
  volatile uint32_t waiting;         /* 1 while spinning on a flag, else 0 */
  volatile uint32_t wait_source;     /* group rank whose signal is awaited */
  volatile uint32_t wait_slot;
  volatile uint32_t wait_parity;
  volatile uint32_t wait_epoch;      /* value the flag must reach */
  volatile uint32_t wait_flag_value; /* what the flag held at the last read */
  volatile uint32_t last_signalled_epoch[DCP_WAIT_STATUS_SLOTS];
  volatile uint32_t last_completed_epoch[DCP_WAIT_STATUS_SLOTS];
  volatile uint32_t trapped; /* 1 once a bounded wait gave up */
  /* DCP_CAP_LAUNCH_RECORD: the epoch of the last call whose first kernel began
   * on each slot (so a hang tells "never started" from "waiting"). */
  volatile uint32_t last_started_epoch[DCP_WAIT_STATUS_SLOTS];
  uint32_t reserved[3];
} dcpWaitStatus_v1;

/* The group and workspace shape, handed to get_workspace and init. */
typedef struct dcpGroupConfig_v1 {
  size_t struct_size;
  int32_t group_rank; /* 0 .. group_size-1 */
  int32_t group_size; /* W, the DCP size */
  int32_t global_rank;
  int32_t device;             /* CUDA device ordinal (current when called); -1 for host plugins */
  const int32_t* members;     /* [group_size]: global rank of each group rank */
  int32_t max_tokens;         /* workspace capacity in tokens */
  int32_t heads_per_rank;     /* H */
  int32_t head_dim;           /* D, a multiple of 8 */
  int32_t num_slots;          /* ubatch slots dcp-check will use, <= max_slots */
  uint64_t timeout_ns;        /* the run's per-call deadline, as a default bound */
  dcpWaitStatus_v1* wait_status; /* device-writable record for DCP_CAP_WAIT_STATUS, or NULL */
  const char* mutant;         /* NULL, or (selftest) the name of one of the plugin's mutants */
} dcpGroupConfig_v1;

/* Services dcp-check offers during init (and only then). */
typedef struct dcpHostServices_v1 {
  size_t struct_size;
  void* handle; /* pass back as the first argument */
  /* Every group rank contributes `bytes` (the same on every rank); `recv` gets
   * group_size * bytes, in group-rank order. Blocks until all arrived. */
  dcpStatus_t (*allgather)(void* handle, const void* send, size_t bytes, void* recv);
  dcpStatus_t (*barrier)(void* handle);
  /* Lands in dcp-check's per-rank log. level: 0 debug, 1 info, 2 warning, 3 error. */
  void (*log)(void* handle, int32_t level, const char* message);
} dcpHostServices_v1;

/* One call. Inputs: partial_output [T, W*H, D] (token stride out_token_stride
 * elements, a multiple of 8, >= W*H*D), partial_lse [T, W*H] (stride
 * lse_token_stride >= W*H). Output [T, H, D] contiguous, out dtype. */
typedef struct dcpCallArgs_v1 {
  size_t struct_size;
  void* stream; /* cudaStream_t; NULL for host plugins */
  int32_t slot; /* 0 .. num_slots-1 */
  int32_t num_tokens;
  const void* partial_output;
  int64_t out_token_stride;
  int32_t out_dtype; /* dcpDtype_t: FP16 or BF16 */
  const void* partial_lse;
  int64_t lse_token_stride;
  int32_t lse_dtype; /* dcpDtype_t */
  int32_t lse_base;  /* dcpLseBase_t */
  /* Optional masking (all NULL / 0 when the case masks nothing): rows of sequence
   * s are tokens [query_start_loc[s], query_start_loc[s+1]); seq_lens[s] == 0
   * means this rank's KV shard of s is empty. */
  const int32_t* seq_lens;
  const int32_t* query_start_loc;
  int32_t num_seqs;
  void* output;
  float* combined_lse; /* [T, H] fp32 in the input's base, or NULL */
  uint64_t timeout_ns; /* bound for device waits (DCP_CAP_TIMEOUT_HINT) */
  /* Added after the first release of v1: read it only when DCP_CALL_HAS_FLAGS(args)
   * (a plugin built against the older struct never sees it and keeps working). */
  uint32_t flags; /* DCP_CALL_* bits */
} dcpCallArgs_v1;

/* Whether the writer's dcpCallArgs_v1 holds `flags` (struct_size covers it). */
#define DCP_CALL_HAS_FLAGS(args) \
  ((args)->struct_size >= offsetof(dcpCallArgs_v1, flags) + sizeof(uint32_t))

/* The inputs' producer (the kernel enqueued right before this call) triggered
 * programmatic completion early (griddepcontrol.launch_dependents): launch your
 * first kernel with cudaLaunchAttributeProgrammaticStreamSerialization and execute
 * griddepcontrol.wait (cudaGridDependencySynchronize) before reading any input
 * (partial_output, partial_lse, seq_lens, query_start_loc). Set only for a kernel
 * that declares DCP_CAP_PDL; others never get the cases that need it. */
#define DCP_CALL_PDL 1u

/* A deliberately broken variant, for `dcp-check selftest --kernel lib.so`. */
typedef struct dcpMutantInfo_v1 {
  const char* name;        /* passed back as config->mutant */
  const char* description; /* the mistake, in one sentence */
} dcpMutantInfo_v1;

/* Marks the exported table visible (build plugins with -fvisibility=hidden). */
#define DCP_PLUGIN_EXPORT __attribute__((visibility("default")))

/* The exported symbol's type. Every function pointer not marked optional is required. */
typedef struct dcpKernelPlugin_v1_t {
  size_t struct_size;   /* sizeof(dcpKernelPlugin_v1) as the plugin was built */
  uint32_t abi_version; /* DCP_PLUGIN_ABI_VERSION */
  const char* name;
  const char* version;
  int32_t memory;       /* dcpMemory_t */
  uint32_t out_dtypes;  /* DCP_DTYPE_MASK bits */
  uint32_t lse_dtypes;  /* DCP_DTYPE_MASK bits */
  uint32_t lse_bases;   /* DCP_LSE_BASE_MASK bits */
  int32_t max_group_size;
  int32_t max_slots;
  int32_t epoch_kind;   /* dcpEpochKind_t */
  uint64_t capabilities;
  const dcpMutantInfo_v1* mutants; /* optional array of num_mutants, or NULL */
  int32_t num_mutants;

  /* Fills up to `capacity` requests; sets *num_regions (0 .. DCP_MAX_REGIONS). */
  dcpStatus_t (*get_workspace)(const dcpGroupConfig_v1* config, dcpRegionRequest_v1* regions,
                               int32_t capacity, int32_t* num_regions);
  dcpStatus_t (*init)(const dcpGroupConfig_v1* config, const dcpRegion_v1* regions,
                      int32_t num_regions, const dcpHostServices_v1* services, void** context);
  /* Enqueues one call (device: no allocation, no host synchronisation, so it can
   * be captured). Returns INVALID_ARGUMENT for arguments it refuses. */
  dcpStatus_t (*call)(void* context, const dcpCallArgs_v1* args);
  dcpStatus_t (*finalize)(void* context);
  /* The last failure's message; context may be NULL (failures before init). */
  const char* (*last_error)(void* context);

  /* Optional (NULL = absent; cases needing it are skipped by name). At an idle
   * point (every rank between barriers, nothing in flight), make the next call on
   * `slot` behave as if `epoch` calls had already run on it, on this rank's side
   * of the protocol (its epoch and the flags it owns). */
  dcpStatus_t (*set_epoch)(void* context, int32_t slot, uint64_t epoch, void* stream);
} dcpKernelPlugin_v1_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DCP_KERNEL_PLUGIN_H_ */
