// ---- msclc device library (fixed text; the plan-specific code follows) ----
//
// Compiles with NVRTC and nvcc with no headers at all, and as plain C++17
// (MSCL_HOST), where each thread block runs as one host thread of width 1:
// msclc's tests execute generated kernels that way on machines with no GPU.

typedef unsigned long long u64;
typedef unsigned int u32;

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define MSCL_DEV __device__ __forceinline__
#define MSCL_TID ((u64)threadIdx.x)
#define MSCL_NT ((u64)blockDim.x)
#define MSCL_SYNC() __syncthreads()
// Thread k serves the op's k-th channel or semaphore.
#define MSCL_LANE(k) (threadIdx.x == (k))
// One function per thread block, kept out of line: a plan has thousands.
#define MSCL_BLOCK static __device__ __noinline__
// Data movers and waits stay out of line too: a plan calls them thousands
// of times (inlined, NVRTC takes minutes on the larger examples), and a
// call costs little next to the bytes each moves or the time each waits.
#define MSCL_MOVER __device__ __noinline__
#else
#define MSCL_HOST 1
#include <atomic>
#include <cstring>
#include <thread>
#define MSCL_DEV inline
#define MSCL_TID ((u64)0)
#define MSCL_NT ((u64)1)
#define MSCL_SYNC() ((void)0)
// The one host thread serves every channel, in order.
#define MSCL_LANE(k) 1
#define MSCL_BLOCK static
#define MSCL_MOVER inline
#endif

// The element types reductions add in. One is chosen per compilation
// (-DMSCL_DTYPE=mscl_f16); float32 when none is.
struct mscl_f32 {};
struct mscl_f16 {};
struct mscl_bf16 {};
#ifndef MSCL_DTYPE
#define MSCL_DTYPE mscl_f32
#endif
typedef MSCL_DTYPE mscl_T;

struct alignas(16) mscl_v16 { u32 x, y, z, w; };
struct alignas(8) mscl_v8 { u32 x, y; };

// What every block of a launch receives: the buffers of every rank, the
// synchronization words, the chunk size of this message size, the packet
// flag of this launch and the double-scratch half in use.
struct MsclArgs {
  char* const* bufs;  // bufs[3 * rank + k], k = 0 input, 1 output, 2 scratch
  u64* sync;          // channel counters, barriers, semaphores (persistent)
  u64 chunk;          // bytes per chunk
  u64 soff;           // byte offset of the scratch half of this launch
  u32 flag;           // LL packet flag of this launch (1, 2, 3, ...)
};

#define MSCL_IN(r) (a.bufs[3 * (r) + 0])
#define MSCL_OUT(r) (a.bufs[3 * (r) + 1])
#define MSCL_SCR(r) (a.bufs[3 * (r) + 2] + a.soff)

// ---- memory ordering --------------------------------------------------------

#ifdef MSCL_HOST
MSCL_DEV void mscl_fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
MSCL_DEV u64 mscl_load(const u64* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
MSCL_DEV u64 mscl_add(u64* p, u64 v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); }
MSCL_DEV void mscl_pause() { std::this_thread::yield(); }
#else
// Every rank runs on this GPU, so device scope orders all of them.
MSCL_DEV void mscl_fence() { __threadfence(); }
MSCL_DEV u64 mscl_load(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
MSCL_DEV u64 mscl_add(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
MSCL_DEV void mscl_pause() {}
#endif

// ---- element arithmetic: one 32-bit word of lanes at a time ------------------

#ifdef MSCL_HOST
MSCL_DEV u32 mscl_bits(float f) { u32 u; std::memcpy(&u, &f, 4); return u; }
MSCL_DEV float mscl_float(u32 u) { float f; std::memcpy(&f, &u, 4); return f; }
#else
MSCL_DEV u32 mscl_bits(float f) { return __float_as_uint(f); }
MSCL_DEV float mscl_float(u32 u) { return __uint_as_float(u); }
#endif

template <typename T> MSCL_DEV u32 mscl_add_word(u32 a, u32 b);

template <> MSCL_DEV u32 mscl_add_word<mscl_f32>(u32 a, u32 b) {
  return mscl_bits(mscl_float(a) + mscl_float(b));
}

#ifdef MSCL_HOST
// IEEE half and bfloat16 through float, rounding to nearest even.
MSCL_DEV float mscl_f16_to_float(u32 h) {
  u32 sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return mscl_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float f = (float)man / 16777216.0f;  // man * 2^-24
    return sign ? -f : f;
  }
  return mscl_float(sign | ((exp + 112) << 23) | (man << 13));
}
MSCL_DEV u32 mscl_float_to_f16(float f) {
  u32 u = mscl_bits(f), sign = (u >> 16) & 0x8000u;
  u32 absu = u & 0x7fffffffu;
  if (absu >= 0x7f800000u) return sign | 0x7c00u | (absu > 0x7f800000u ? 0x200u : 0);
  if (absu >= 0x477ff000u) return sign | 0x7c00u;  // overflows to infinity
  if (absu < 0x38800000u) {                        // subnormal half
    float a = mscl_float(absu) * 16777216.0f;      // in units of 2^-24
    u32 m = (u32)a;
    float rest = a - (float)m;
    if (rest > 0.5f || (rest == 0.5f && (m & 1))) m++;
    return sign | m;
  }
  u32 r = absu + 0xfffu + ((absu >> 13) & 1);
  return sign | ((r - 0x38000000u) >> 13);
}
MSCL_DEV u32 mscl_half_add(u32 a, u32 b) {
  return mscl_float_to_f16(mscl_f16_to_float(a) + mscl_f16_to_float(b));
}
MSCL_DEV u32 mscl_bf16_add(u32 a, u32 b) {
  u32 s = mscl_bits(mscl_float(a << 16) + mscl_float(b << 16));
  if ((s & 0x7fffffffu) > 0x7f800000u) return (s >> 16) | 0x40u;  // NaN stays NaN
  return (s + 0x7fffu + ((s >> 16) & 1)) >> 16;
}
template <> MSCL_DEV u32 mscl_add_word<mscl_f16>(u32 a, u32 b) {
  return mscl_half_add(a & 0xffff, b & 0xffff) | (mscl_half_add(a >> 16, b >> 16) << 16);
}
template <> MSCL_DEV u32 mscl_add_word<mscl_bf16>(u32 a, u32 b) {
  return mscl_bf16_add(a & 0xffff, b & 0xffff) | (mscl_bf16_add(a >> 16, b >> 16) << 16);
}
#else
template <> MSCL_DEV u32 mscl_add_word<mscl_f16>(u32 a, u32 b) {
  u32 d;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
template <> MSCL_DEV u32 mscl_add_word<mscl_bf16>(u32 a, u32 b) {
  // a * 1.0 + b: fma.bf16x2 runs on sm_80 and later.
  u32 d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(0x3f803f80u), "r"(b));
  return d;
}
#endif

template <typename T> MSCL_DEV mscl_v16 mscl_add16(mscl_v16 a, mscl_v16 b) {
  return {mscl_add_word<T>(a.x, b.x), mscl_add_word<T>(a.y, b.y), mscl_add_word<T>(a.z, b.z),
          mscl_add_word<T>(a.w, b.w)};
}
template <typename T> MSCL_DEV mscl_v8 mscl_add8(mscl_v8 a, mscl_v8 b) {
  return {mscl_add_word<T>(a.x, b.x), mscl_add_word<T>(a.y, b.y)};
}

// ---- Simple transfers and reductions (16-byte vectors, 4-byte tail) -----------

MSCL_MOVER void mscl_copy(char* dst, const char* src, u64 bytes) {
  u64 n16 = bytes / 16;
  for (u64 i = MSCL_TID; i < n16; i += MSCL_NT)
    ((mscl_v16*)dst)[i] = ((const mscl_v16*)src)[i];
  for (u64 i = n16 * 4 + MSCL_TID; i < bytes / 4; i += MSCL_NT) ((u32*)dst)[i] = ((const u32*)src)[i];
}

// dst[k] = ((src[0] + src[1]) + src[2]) + ... for every k < ND.
template <typename T, int NS, int ND>
MSCL_MOVER void mscl_reduce(char* const* dst, const char* const* src, u64 bytes) {
  u64 n16 = bytes / 16;
  for (u64 i = MSCL_TID; i < n16; i += MSCL_NT) {
    mscl_v16 acc = ((const mscl_v16*)src[0])[i];
    for (int s = 1; s < NS; s++) acc = mscl_add16<T>(acc, ((const mscl_v16*)src[s])[i]);
    for (int d = 0; d < ND; d++) ((mscl_v16*)dst[d])[i] = acc;
  }
  for (u64 i = n16 * 4 + MSCL_TID; i < bytes / 4; i += MSCL_NT) {
    u32 acc = ((const u32*)src[0])[i];
    for (int s = 1; s < NS; s++) acc = mscl_add_word<T>(acc, ((const u32*)src[s])[i]);
    for (int d = 0; d < ND; d++) ((u32*)dst[d])[i] = acc;
  }
}

// ---- LL16 packets: 16 bytes = {data_lo, flag, data_hi, flag}, 8 payload bytes --

#ifdef MSCL_HOST
MSCL_DEV void mscl_store_packet(char* p, mscl_v8 v, u32 flag) {
  u64* w = (u64*)p;
  __atomic_store_n(&w[0], (u64)v.x | ((u64)flag << 32), __ATOMIC_RELEASE);
  __atomic_store_n(&w[1], (u64)v.y | ((u64)flag << 32), __ATOMIC_RELEASE);
}
MSCL_DEV mscl_v8 mscl_load_packet(const char* p, u32 flag) {
  const u64* w = (const u64*)p;
  u64 lo, hi;
  while ((u32)((lo = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE)) >> 32) != flag) mscl_pause();
  while ((u32)((hi = __atomic_load_n(&w[1], __ATOMIC_ACQUIRE)) >> 32) != flag) mscl_pause();
  return {(u32)lo, (u32)hi};
}
#else
MSCL_DEV void mscl_store_packet(char* p, mscl_v8 v, u32 flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};"
               :: "l"(p), "r"(v.x), "r"(flag), "r"(v.y), "r"(flag) : "memory");
}
MSCL_DEV mscl_v8 mscl_load_packet(const char* p, u32 flag) {
  u32 x, f1, y, f2;
  do {
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(x), "=r"(f1), "=r"(y), "=r"(f2) : "l"(p) : "memory");
  } while (f1 != flag || f2 != flag);
  return {x, y};
}
#endif

// Raw data -> packets in every destination (copy_packets, put_packets).
template <int ND>
MSCL_MOVER void mscl_put_packets(char* const* dst, const char* src, u64 bytes, u32 flag) {
  for (u64 j = MSCL_TID; j < bytes / 8; j += MSCL_NT) {
    mscl_v8 v = ((const mscl_v8*)src)[j];
    for (int d = 0; d < ND; d++) mscl_store_packet(dst[d] + 16 * j, v, flag);
  }
}

// Packets -> packets re-stamped in every destination (read_put_packets, gstorepkt).
template <int ND>
MSCL_MOVER void mscl_forward_packets(char* const* dst, const char* src, u64 bytes, u32 flag) {
  for (u64 j = MSCL_TID; j < bytes / 8; j += MSCL_NT) {
    mscl_v8 v = mscl_load_packet(src + 16 * j, flag);
    for (int d = 0; d < ND; d++) mscl_store_packet(dst[d] + 16 * j, v, flag);
  }
}

// Packets -> raw data (unpack_packets).
MSCL_MOVER void mscl_unpack_packets(char* dst, const char* src, u64 bytes, u32 flag) {
  for (u64 j = MSCL_TID; j < bytes / 8; j += MSCL_NT)
    ((mscl_v8*)dst)[j] = mscl_load_packet(src + 16 * j, flag);
}

// acc = pkt[0] + pkt[1] + ... + raw; raw result to `dst`, packets of it to `out`
// (the repkt family: re, res, rec and recs packets).
template <typename T, int NP, int NO>
MSCL_MOVER void mscl_reduce_packets(char* dst, char* const* out, const char* raw,
                                  const char* const* pkt, u64 bytes, u32 flag) {
  for (u64 j = MSCL_TID; j < bytes / 8; j += MSCL_NT) {
    mscl_v8 acc = mscl_load_packet(pkt[0] + 16 * j, flag);
    for (int k = 1; k < NP; k++) acc = mscl_add8<T>(acc, mscl_load_packet(pkt[k] + 16 * j, flag));
    acc = mscl_add8<T>(acc, ((const mscl_v8*)raw)[j]);
    ((mscl_v8*)dst)[j] = acc;
    for (int o = 0; o < NO; o++) mscl_store_packet(out[o] + 16 * j, acc, flag);
  }
}

// ---- synchronization -------------------------------------------------------------

// Memory channel signal: publishes the block's writes (after a nop) and counts
// one on the peer's inbound word.
MSCL_MOVER void mscl_signal(u64* inbound) {
  mscl_fence();
  mscl_add(inbound, 1);
}

// Waits for one more signal than this channel has consumed so far.
MSCL_MOVER void mscl_wait(const u64* inbound, u64* expected) {
  u64 want = mscl_add(expected, 1) + 1;
  while (mscl_load(inbound) < want) mscl_pause();
  mscl_fence();
}

// Barrier of k blocks over one monotonic counter: each use adds k arrivals.
MSCL_MOVER void mscl_barrier(u64* counter, u64 k) {
  MSCL_SYNC();
  if (MSCL_TID == 0) {
    mscl_fence();
    u64 target = (mscl_add(counter, 1) / k + 1) * k;
    while (mscl_load(counter) < target) mscl_pause();
    mscl_fence();
  }
  MSCL_SYNC();
}

// Counting semaphore: passes = initial value + releases (SEMANTICS.md §5.5).
MSCL_MOVER void mscl_sem_release(u64* sem) {
  mscl_fence();
  mscl_add(sem, 1);
}
MSCL_MOVER void mscl_sem_acquire(u64* sem) {
  long long old = (long long)mscl_add(sem, (u64)-1);
  if (old <= 0)
    while ((long long)mscl_load(sem) < old) mscl_pause();
  mscl_fence();
}

// Part `j` of `g` of a byte range, in units of the plan's buffer alignment.
MSCL_DEV u64 mscl_tbg_start(u64 bytes, u64 j, u64 g, u64 align) {
  u64 n = bytes / align;
  return (j * (n / g) + (j < n % g ? j : n % g)) * align;
}
MSCL_DEV u64 mscl_tbg_size(u64 bytes, u64 j, u64 g, u64 align) {
  return mscl_tbg_start(bytes, j + 1, g, align) - mscl_tbg_start(bytes, j, g, align);
}

// Bytes a pipeline iteration at `offset` covers of a `bytes`-long region.
MSCL_DEV u64 mscl_unit(u64 bytes, u64 offset, u64 unit) {
  return bytes > offset ? (bytes - offset < unit ? bytes - offset : unit) : 0;
}

// ---- the plan ----------------------------------------------------------------------
