// polyprof calibrate: micro-kernels whose work is known exactly, so that a profiler's counters
// can be checked against it (docs/calibrate.md). polyprof writes this file into its calibration
// cache, compiles it with nvcc for the GPU's own architecture and runs it under ncu.
//
//   calibrate info                          device facts, one `key=value` per line
//   calibrate empty LAUNCHES                an empty kernel, LAUNCHES times (the launch floor)
//   calibrate copy BYTES                    BYTES read and BYTES written (BYTES % 16 == 0)
//   calibrate KERNEL BLOCKS THREADS ITERS   a compute kernel (below) on BLOCKS x THREADS
//
// Requests run in the order given, each kernel launched once: `calibrate empty 51 copy 1073741824
// fma_fp32 1056 256 16384`. Every compute kernel ends with an integer checksum of its registers
// written to global memory, so no work can be dropped, and no floating-point operation is done
// outside the counted loop (inits and checksums are integer operations).
//
// Known work per launch (the constants below must match src/results/calibration_kernels.rs; a
// unit test compares them):
//   fma_fp32, fma_fp64, fma_fp16   2 FLOPs per FMA: BLOCKS*THREADS*ITERS*VECTOR_CHAINS*2
//   fma_fp16x2                     a packed HFMA2 is 2 FMAs: BLOCKS*THREADS*ITERS*VECTOR_CHAINS*4
//   mma_fp16, mma_bf16             mma.sync m16n8k16: 2*16*8*16 = 4096 FLOPs per warp and mma
//   mma_tf32                       mma.sync m16n8k8: 2048 FLOPs per warp and mma
//   mma_fp8                        mma.sync m16n8k32 e4m3: 8192 FLOPs (sm_89, sm_120: native;
//                                  on sm_90 the compiler emulates it through FP16 MMA)
//   wgmma_fp8                      sm_90a wgmma m64n64k32 e4m3: 2*64*64*32 = 262144 FLOPs per
//                                  warpgroup and instruction, WGMMA_PER_GROUP per iteration
//   mma kernels: (BLOCKS*THREADS/32)*ITERS*MMA_CHAINS*FLOPs per mma
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define VECTOR_CHAINS 8
#define MMA_CHAINS 4
#define WGMMA_PER_GROUP 4

// ---- kernels ---------------------------------------------------------------------------------

extern "C" __global__ void calib_empty() {}

// A grid-stride copy of 16-byte words: every byte of `src` read once, every byte of `dst`
// written once (whole sectors, so no read for ownership).
extern "C" __global__ void calib_copy(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                      unsigned long long words) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < words; i += stride) {
    dst[i] = src[i];
  }
}

__device__ __forceinline__ unsigned global_thread() {
  return blockIdx.x * blockDim.x + threadIdx.x;
}

// Vector FMA loops: VECTOR_CHAINS independent dependency chains per thread, one PTX `fma` each
// per iteration (inline PTX: the compiler neither fuses, splits nor drops them).
extern "C" __global__ void calib_fma_fp32(int iters, unsigned seed, unsigned* out) {
  unsigned tid = global_thread();
  float x[VECTOR_CHAINS];
  float a = __uint_as_float(seed), b = __uint_as_float(seed ^ 0x00800000u);
#pragma unroll
  for (int c = 0; c < VECTOR_CHAINS; ++c) x[c] = __uint_as_float(seed ^ ((tid + c) & 0xffu));
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < VECTOR_CHAINS; ++c)
      asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[c]) : "f"(a), "f"(b));
  }
  unsigned sum = 0;
#pragma unroll
  for (int c = 0; c < VECTOR_CHAINS; ++c) sum ^= __float_as_uint(x[c]);
  out[tid] = sum;
}

extern "C" __global__ void calib_fma_fp64(int iters, unsigned seed, unsigned* out) {
  unsigned tid = global_thread();
  unsigned long long bits = ((unsigned long long)seed << 32);
  double x[VECTOR_CHAINS];
  double a = __longlong_as_double((long long)bits);
  double b = __longlong_as_double((long long)(bits ^ 0x0010000000000000ull));
#pragma unroll
  for (int c = 0; c < VECTOR_CHAINS; ++c)
    x[c] = __longlong_as_double((long long)(bits ^ ((tid + c) & 0xffu)));
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < VECTOR_CHAINS; ++c)
      asm volatile("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x[c]) : "d"(a), "d"(b));
  }
  unsigned sum = 0;
#pragma unroll
  for (int c = 0; c < VECTOR_CHAINS; ++c) {
    unsigned long long v = (unsigned long long)__double_as_longlong(x[c]);
    sum ^= (unsigned)v ^ (unsigned)(v >> 32);
  }
  out[tid] = sum;
}

// Scalar half: one FP16 FMA per instruction.
extern "C" __global__ void calib_fma_fp16(int iters, unsigned seed, unsigned* out) {
  unsigned tid = global_thread();
  unsigned short x[VECTOR_CHAINS];
  unsigned short a = (unsigned short)seed, b = (unsigned short)(seed >> 16);
#pragma unroll
  for (int c = 0; c < VECTOR_CHAINS; ++c) x[c] = (unsigned short)(a ^ ((tid + c) & 0xfu));
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < VECTOR_CHAINS; ++c)
      asm volatile("fma.rn.f16 %0, %0, %1, %2;" : "+h"(x[c]) : "h"(a), "h"(b));
  }
  unsigned sum = 0;
#pragma unroll
  for (int c = 0; c < VECTOR_CHAINS; ++c) sum ^= (unsigned)x[c] << (c & 1) * 16;
  out[tid] = sum;
}

// Packed half2: two FP16 FMAs per instruction.
extern "C" __global__ void calib_fma_fp16x2(int iters, unsigned seed, unsigned* out) {
  unsigned tid = global_thread();
  unsigned x[VECTOR_CHAINS];
  unsigned a = seed, b = seed ^ 0x04000400u;
#pragma unroll
  for (int c = 0; c < VECTOR_CHAINS; ++c) x[c] = seed ^ ((tid + c) & 0x000f000fu);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < VECTOR_CHAINS; ++c)
      asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x[c]) : "r"(a), "r"(b));
  }
  unsigned sum = 0;
#pragma unroll
  for (int c = 0; c < VECTOR_CHAINS; ++c) sum ^= x[c];
  out[tid] = sum;
}

// Warp-level tensor-core MMA loops: MMA_CHAINS independent accumulators per warp. The A and B
// fragments are the same every iteration; their values do not change the work.
#define MMA_LOOP(INSTRUCTION)                                                                  \
  unsigned tid = global_thread();                                                              \
  unsigned a0 = seed ^ (tid & 3u), a1 = seed ^ (tid & 5u), a2 = seed ^ (tid & 6u),             \
           a3 = seed ^ (tid & 7u), b0 = seed ^ (tid & 9u), b1 = seed ^ (tid & 10u);            \
  float d[MMA_CHAINS][4];                                                                      \
  _Pragma("unroll") for (int c = 0; c < MMA_CHAINS; ++c) {                                     \
    _Pragma("unroll") for (int k = 0; k < 4; ++k) d[c][k] = __uint_as_float((tid ^ c) & 7u);   \
  }                                                                                            \
  for (int i = 0; i < iters; ++i) {                                                            \
    _Pragma("unroll") for (int c = 0; c < MMA_CHAINS; ++c) asm volatile(                       \
        INSTRUCTION " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                   \
        : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])                           \
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                               \
  }                                                                                            \
  unsigned sum = 0;                                                                            \
  _Pragma("unroll") for (int c = 0; c < MMA_CHAINS; ++c) {                                     \
    _Pragma("unroll") for (int k = 0; k < 4; ++k) sum ^= __float_as_uint(d[c][k]);             \
  }                                                                                            \
  out[tid] = sum;

extern "C" __global__ void calib_mma_fp16(int iters, unsigned seed, unsigned* out) {
#if __CUDA_ARCH__ >= 800
  MMA_LOOP("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
#endif
}

extern "C" __global__ void calib_mma_bf16(int iters, unsigned seed, unsigned* out) {
#if __CUDA_ARCH__ >= 800
  MMA_LOOP("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
#endif
}

// m16n8k8 tf32 takes 4 A and 2 B registers too (one tf32 per register).
extern "C" __global__ void calib_mma_tf32(int iters, unsigned seed, unsigned* out) {
#if __CUDA_ARCH__ >= 800
  MMA_LOOP("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
#endif
}

extern "C" __global__ void calib_mma_fp8(int iters, unsigned seed, unsigned* out) {
#if __CUDA_ARCH__ >= 890
  MMA_LOOP("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")
#endif
}

// Hopper's FP8 tensor path is the warpgroup MMA (mma.sync e4m3 is emulated there): A and B
// from shared memory through matrix descriptors (no swizzle, 8x16-byte core matrices), an FP32
// accumulator of 64x64 (32 registers per thread), WGMMA_PER_GROUP instructions per commit.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ unsigned long long wgmma_descriptor(unsigned address) {
  const unsigned long long leading_byte_offset = 128, stride_byte_offset = 256;
  return (unsigned long long)((address & 0x3ffffu) >> 4) |
         ((leading_byte_offset >> 4) << 16) | ((stride_byte_offset >> 4) << 32);
}
#endif

extern "C" __global__ void calib_wgmma_fp8(int iters, unsigned seed, unsigned* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // A: 64 rows x 32 bytes, B: 64 rows x 32 bytes.
  __shared__ __align__(1024) unsigned tiles[1024];
  for (unsigned i = threadIdx.x; i < 1024; i += blockDim.x) tiles[i] = seed ^ (i & 0x03030303u);
  // The tiles were written through the generic proxy; wgmma reads them through the async one.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  unsigned base = (unsigned)__cvta_generic_to_shared(tiles);
  unsigned long long desc_a = wgmma_descriptor(base), desc_b = wgmma_descriptor(base + 2048);
  unsigned tid = global_thread();
  float d[32];
#pragma unroll
  for (int k = 0; k < 32; ++k) d[k] = __uint_as_float((tid ^ k) & 7u);
  for (int i = 0; i < iters; ++i) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int g = 0; g < WGMMA_PER_GROUP; ++g) {
      asm volatile(
          "{\n"
          ".reg .pred p;\n"
          "setp.ne.b32 p, %34, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
          "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
          "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
          "%32, %33, p, 1, 1;\n"
          "}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
            "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
            "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
            "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
            "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
            "+f"(d[30]), "+f"(d[31])
          : "l"(desc_a), "l"(desc_b), "r"(1));
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  unsigned sum = 0;
#pragma unroll
  for (int k = 0; k < 32; ++k) sum ^= __float_as_uint(d[k]);
  out[tid] = sum;
#endif
}

// ---- host ------------------------------------------------------------------------------------

static void fail(const char* what, cudaError_t error) {
  fprintf(stderr, "calibrate: %s: %s\n", what, cudaGetErrorString(error));
  exit(1);
}

static void check(const char* what, cudaError_t error) {
  if (error != cudaSuccess) fail(what, error);
}

static void usage(const char* why) {
  fprintf(stderr,
          "calibrate: %s\nusage: calibrate info | empty LAUNCHES | copy BYTES | "
          "KERNEL BLOCKS THREADS ITERS ...\n",
          why);
  exit(2);
}

static unsigned long long number(const char* text) {
  char* end = nullptr;
  unsigned long long value = strtoull(text, &end, 10);
  if (end == text || *end != '\0') usage("expected a number");
  return value;
}

static void info() {
  int device = 0;
  cudaDeviceProp prop;
  check("cudaGetDevice", cudaGetDevice(&device));
  check("cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, device));
  printf("name=%s\n", prop.name);
  printf("compute_capability=%d.%d\n", prop.major, prop.minor);
  printf("sm_count=%d\n", prop.multiProcessorCount);
  printf("l2_bytes=%d\n", prop.l2CacheSize);
  printf("memory_bytes=%llu\n", (unsigned long long)prop.totalGlobalMem);
  printf("uuid=GPU-");
  for (int i = 0; i < 16; ++i) {
    printf("%02x", (unsigned char)prop.uuid.bytes[i]);
    if (i == 3 || i == 5 || i == 7 || i == 9) printf("-");
  }
  printf("\n");
}

static void empty(unsigned long long launches) {
  for (unsigned long long i = 0; i < launches; ++i) {
    calib_empty<<<1, 1>>>();
    check("launch empty", cudaGetLastError());
  }
  check("empty", cudaDeviceSynchronize());
  printf("kernel=empty launches=%llu\n", launches);
}

static void copy(unsigned long long bytes) {
  if (bytes == 0 || bytes % 16 != 0) usage("copy BYTES must be a positive multiple of 16");
  int device = 0, sms = 0;
  check("cudaGetDevice", cudaGetDevice(&device));
  check("sm count", cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  void *src = nullptr, *dst = nullptr;
  check("cudaMalloc copy source", cudaMalloc(&src, bytes));
  check("cudaMalloc copy destination", cudaMalloc(&dst, bytes));
  check("cudaMemset", cudaMemset(src, 1, bytes));
  check("cudaMemset", cudaMemset(dst, 0, bytes));
  calib_copy<<<sms * 8, 512>>>((const uint4*)src, (uint4*)dst, bytes / 16);
  check("launch copy", cudaGetLastError());
  check("copy", cudaDeviceSynchronize());
  unsigned char last = 0;
  check("read back", cudaMemcpy(&last, (unsigned char*)dst + bytes - 1, 1, cudaMemcpyDeviceToHost));
  if (last != 1) {
    fprintf(stderr, "calibrate: the copy did not copy (last byte %u)\n", last);
    exit(1);
  }
  check("cudaFree", cudaFree(src));
  check("cudaFree", cudaFree(dst));
  printf("kernel=copy bytes_read=%llu bytes_written=%llu\n", bytes, bytes);
}

typedef void (*ComputeKernel)(int, unsigned, unsigned*);

struct Compute {
  const char* name;
  ComputeKernel kernel;
  unsigned seed;
  // Threads must come in multiples of this (a warp, a warpgroup).
  unsigned long long thread_multiple;
};

// Seeds: small normal values of each type, so the loops neither overflow nor go subnormal fast.
static const Compute COMPUTE[] = {
    {"fma_fp32", calib_fma_fp32, 0x3f7ff000u, 1},
    {"fma_fp64", calib_fma_fp64, 0x3feffe00u, 1},
    {"fma_fp16", calib_fma_fp16, 0x1c003bffu, 1},
    {"fma_fp16x2", calib_fma_fp16x2, 0x3bff3bffu, 1},
    {"mma_fp16", calib_mma_fp16, 0x2c002c00u, 32},
    {"mma_bf16", calib_mma_bf16, 0x3d803d80u, 32},
    {"mma_tf32", calib_mma_tf32, 0x3d800000u, 32},
    {"mma_fp8", calib_mma_fp8, 0x18181818u, 32},
    {"wgmma_fp8", calib_wgmma_fp8, 0x18181818u, 128},
};

static void compute(const Compute& k, unsigned long long blocks, unsigned long long threads,
                    unsigned long long iters) {
  if (blocks == 0 || threads == 0 || threads > 1024 || threads % k.thread_multiple != 0 ||
      iters == 0 || iters > 0x7fffffffull || blocks > 0x7fffffffull)
    usage("BLOCKS, THREADS (at most 1024, whole warps or warpgroups) and ITERS out of range");
  unsigned* out = nullptr;
  check("cudaMalloc", cudaMalloc(&out, blocks * threads * sizeof(unsigned)));
  k.kernel<<<(unsigned)blocks, (unsigned)threads>>>((int)iters, k.seed, out);
  check(k.name, cudaGetLastError());
  check(k.name, cudaDeviceSynchronize());
  unsigned first = 0;
  check("read back", cudaMemcpy(&first, out, sizeof(first), cudaMemcpyDeviceToHost));
  check("cudaFree", cudaFree(out));
  printf("kernel=%s blocks=%llu threads=%llu iters=%llu checksum=%08x\n", k.name, blocks,
         threads, iters, first);
}

int main(int argc, char** argv) {
  if (argc < 2) usage("nothing to run");
  for (int i = 1; i < argc;) {
    const char* what = argv[i++];
    if (strcmp(what, "info") == 0) {
      info();
      continue;
    }
    if (strcmp(what, "empty") == 0 || strcmp(what, "copy") == 0) {
      if (i >= argc) usage("missing the amount");
      unsigned long long amount = number(argv[i++]);
      if (what[0] == 'e') empty(amount); else copy(amount);
      continue;
    }
    const Compute* found = nullptr;
    for (const Compute& k : COMPUTE)
      if (strcmp(what, k.name) == 0) found = &k;
    if (!found) usage("unknown kernel");
    if (i + 3 > argc) usage("a compute kernel takes BLOCKS THREADS ITERS");
    unsigned long long blocks = number(argv[i]), threads = number(argv[i + 1]),
                       iters = number(argv[i + 2]);
    i += 3;
    compute(*found, blocks, threads, iters);
  }
  fflush(stdout);
  return 0;
}
