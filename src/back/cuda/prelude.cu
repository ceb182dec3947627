// ---- msclc device library (fixed text; the plan-specific code follows) ----
//
// Compiles with NVRTC and nvcc with no headers at all, and as plain C++17
// (MSCL_HOST), where every thread of a block is a host thread: msclc's
// tests execute generated kernels that way, under ThreadSanitizer too, on
// machines with no GPU.

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define MSCL_DEV __device__ __forceinline__
#define MSCL_TID ((u32)threadIdx.x)
#define MSCL_NT ((u32)blockDim.x)
#define MSCL_BLOCK_ID ((u64)blockIdx.x)
#define MSCL_SYNC() __syncthreads()
// One function per distinct block shape, kept out of line.
#define MSCL_SHAPE static __device__ __noinline__
// Data movers and waits stay out of line too: a plan calls them thousands
// of times, and a call costs little next to the bytes each moves or the
// time each waits.
#define MSCL_MOVER __device__ __noinline__
#define MSCL_TABLE static __device__ const
// Every rank runs on this GPU, so device scope orders all of them; a mode
// with one rank per GPU would need "sys".
#define MSCL_SCOPE "gpu"
#define MSCL_UNROLL _Pragma("unroll")
#else
#define MSCL_HOST 1
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#define MSCL_DEV inline
#define MSCL_MOVER inline
#define MSCL_SHAPE static
#define MSCL_TABLE static const
// The threads of one host "block": each knows its index, the block's width
// and the block's barrier (set by the driver before mscl_run_block).
struct mscl_host_barrier {
  std::mutex m;
  std::condition_variable cv;
  u32 width = 1, arrived = 0, generation = 0;
  void sync() {
    if (width == 1) return;
    std::unique_lock<std::mutex> lock(m);
    u32 g = generation;
    if (++arrived == width) {
      arrived = 0;
      generation++;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != g; });
    }
  }
};
static thread_local u32 mscl_host_tid = 0;
static thread_local u32 mscl_host_nt = 1;
static thread_local u64 mscl_host_block = 0;
static thread_local mscl_host_barrier* mscl_host_bar = nullptr;
#define MSCL_TID mscl_host_tid
#define MSCL_NT mscl_host_nt
#define MSCL_BLOCK_ID mscl_host_block
// No barrier: a block of one thread (as width 1 is), which nothing waits for.
static inline void mscl_host_sync() {
  if (mscl_host_bar) mscl_host_bar->sync();
}
#define MSCL_SYNC() mscl_host_sync()
// Host loops are the compiler's to unroll.
#define MSCL_UNROLL
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

// An op's pointers, passed by value so that they live in registers (an
// empty list still has one slot: C++ has no empty arrays).
template <int N> struct mscl_ptrs { char* p[N > 0 ? N : 1]; };
template <int N> struct mscl_cptrs { const char* p[N > 0 ? N : 1]; };

// What every block of a launch receives: the buffers of every rank, the
// synchronization words, the chunk size of this message size, the packet
// flag of this launch, the double-scratch half in use and how long any
// one wait may spin.
struct MsclArgs {
  char* const* bufs;  // bufs[3 * rank + k], k = 0 input, 1 output, 2 scratch
  u64* sync;          // channel counters, barriers, semaphores, the report
  u64 chunk;          // bytes per chunk
  u64 soff;           // byte offset of the scratch half of this launch
  u64 budget;         // nanoseconds one wait may spin before giving up
  u32 flag;           // LL packet flag of this launch (1, 2, 3, ...)
};

// A block's row of the parameter table. The table is stored in the
// narrowest unsigned type that holds every entry (MSCL_PARAM, from the
// header): NVRTC's time and memory grow with its bytes (allreduce at 64
// ranks: 1.8 s and 0.43 GB with 8-byte entries, 1.4 s and 0.23 GB with 2).
// Entries read as u64 whatever the width, so that no arithmetic on them
// narrows; a list of entries (`P + k`) is passed as it is stored.
typedef MSCL_PARAM mscl_param;
struct mscl_row {
  const mscl_param* p;
  MSCL_DEV u64 operator[](u32 k) const { return p[k]; }
  MSCL_DEV const mscl_param* operator+(u32 k) const { return p + k; }
};

#define MSCL_IN(r) (a.bufs[3 * (r) + 0])
#define MSCL_OUT(r) (a.bufs[3 * (r) + 1])
#define MSCL_SCR(r) (a.bufs[3 * (r) + 2] + a.soff)
// Where an op sits in its block: top-level index, and 1 + index in its
// pipeline's body (0 outside pipelines). Spins report it when they give up.
#define MSCL_AT(op, body) (((u64)(op) << 32) | (u64)(body))

// ---- memory ordering --------------------------------------------------------

#ifdef MSCL_HOST
MSCL_DEV u64 mscl_load_acquire(const u64* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
MSCL_DEV u64 mscl_load_relaxed(const u64* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
MSCL_DEV void mscl_add_release(u64* p, u64 v) { __atomic_fetch_add(p, v, __ATOMIC_RELEASE); }
MSCL_DEV u64 mscl_add_acq_rel(u64* p, u64 v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); }
MSCL_DEV u64 mscl_add_relaxed(u64* p, u64 v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
MSCL_DEV bool mscl_claim(u64* p, u64 v) {
  u64 zero = 0;
  return __atomic_compare_exchange_n(p, &zero, v, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
MSCL_DEV u64 mscl_now() {
  return (u64)std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}
MSCL_DEV void mscl_pause() { std::this_thread::yield(); }
#else
MSCL_DEV u64 mscl_load_acquire(const u64* p) {
  u64 v;
  asm volatile("ld.acquire." MSCL_SCOPE ".global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
MSCL_DEV u64 mscl_load_relaxed(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed." MSCL_SCOPE ".global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// One release reduction: publishes this thread's writes and what the block
// synchronized into it (a nop before the op), with no separate fence.
MSCL_DEV void mscl_add_release(u64* p, u64 v) {
  asm volatile("red.release." MSCL_SCOPE ".global.add.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
MSCL_DEV u64 mscl_add_acq_rel(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.acq_rel." MSCL_SCOPE ".global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
MSCL_DEV u64 mscl_add_relaxed(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.relaxed." MSCL_SCOPE ".global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
MSCL_DEV bool mscl_claim(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.acq_rel." MSCL_SCOPE ".global.cas.b64 %0, [%1], 0, %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old == 0;
}
MSCL_DEV u64 mscl_now() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
MSCL_DEV void mscl_pause() {}
#endif

// ---- never hang: every spin has a budget --------------------------------------
//
// The report, words MSCL_REPORT.. of `sync`: what gave up (0 nothing yet,
// then one of the MSCL_GAVE_UP_* below), the grid block, MSCL_AT of the op,
// the lane (channel or semaphore of the op, or packet index), the value seen
// and the value waited for, the claim word, and the launch's flag (which
// launch of a run stopped). The first spin to run out claims it; every
// other spin then stops waiting, so the launch ends and the host reads it.

#define MSCL_GAVE_UP_WAIT 1
#define MSCL_GAVE_UP_BARRIER 2
#define MSCL_GAVE_UP_SEMAPHORE 3
#define MSCL_GAVE_UP_PACKET 4
#define MSCL_GAVE_UP_MISALIGNED 5

MSCL_DEV bool mscl_given_up(const MsclArgs& a) { return mscl_load_relaxed(a.sync + MSCL_REPORT) != 0; }

MSCL_DEV void mscl_give_up(const MsclArgs& a, u64 what, u64 at, u64 lane, u64 seen, u64 wanted) {
  u64* r = a.sync + MSCL_REPORT;
  if (!mscl_claim(r + 6, 1)) return;  // another spin reported first
  r[1] = MSCL_BLOCK_ID;
  r[2] = at;
  r[3] = lane;
  r[4] = seen;
  r[5] = wanted;
  r[7] = a.flag;
  mscl_add_release(r, what);
}

// Until *word >= want (signed); false when it gave up instead.
MSCL_MOVER bool mscl_await(const MsclArgs& a, const u64* word, long long want, u64 what, u64 at, u64 lane) {
  if ((long long)mscl_load_acquire(word) >= want) return true;
  const u64 start = mscl_now();
  for (;;) {
    long long seen = (long long)mscl_load_acquire(word);
    if (seen >= want) return true;
    if (mscl_given_up(a)) return false;
    if (mscl_now() - start > a.budget) {
      mscl_give_up(a, what, at, lane, (u64)seen, (u64)want);
      return false;
    }
    mscl_pause();
  }
}

// ---- element arithmetic --------------------------------------------------------

#ifdef MSCL_HOST
MSCL_DEV u32 mscl_bits(float f) { u32 u; std::memcpy(&u, &f, 4); return u; }
MSCL_DEV float mscl_float(u32 u) { float f; std::memcpy(&f, &u, 4); return f; }
#else
MSCL_DEV u32 mscl_bits(float f) { return __float_as_uint(f); }
MSCL_DEV float mscl_float(u32 u) { return __uint_as_float(u); }
#endif

// IEEE half through float, rounding to nearest even: plain integer code,
// for the host branch's arithmetic and, on both, the runner's checks.
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

// Per element type: the scalar element E, adding two of them, adding two
// 32-bit words of packed elements, and an element's value.
template <typename T> struct mscl_elem;

template <> struct mscl_elem<mscl_f32> {
  typedef u32 E;
  static MSCL_DEV u32 add(u32 a, u32 b) { return mscl_bits(mscl_float(a) + mscl_float(b)); }
  static MSCL_DEV u32 add_word(u32 a, u32 b) { return add(a, b); }
  static MSCL_DEV float value(u32 a) { return mscl_float(a); }
};

#ifdef MSCL_HOST
template <> struct mscl_elem<mscl_f16> {
  typedef u16 E;
  static MSCL_DEV float value(u16 a) { return mscl_f16_to_float(a); }
  static MSCL_DEV u16 add(u16 a, u16 b) {
    return (u16)mscl_float_to_f16(mscl_f16_to_float(a) + mscl_f16_to_float(b));
  }
  static MSCL_DEV u32 add_word(u32 a, u32 b) {
    return add(a & 0xffff, b & 0xffff) | ((u32)add(a >> 16, b >> 16) << 16);
  }
};
template <> struct mscl_elem<mscl_bf16> {
  typedef u16 E;
  static MSCL_DEV float value(u16 a) { return mscl_float((u32)a << 16); }
  static MSCL_DEV u16 add(u16 a, u16 b) {
    u32 s = mscl_bits(mscl_float((u32)a << 16) + mscl_float((u32)b << 16));
    if ((s & 0x7fffffffu) > 0x7f800000u) return (u16)((s >> 16) | 0x40u);  // NaN stays NaN
    return (u16)((s + 0x7fffu + ((s >> 16) & 1)) >> 16);
  }
  static MSCL_DEV u32 add_word(u32 a, u32 b) {
    return add(a & 0xffff, b & 0xffff) | ((u32)add(a >> 16, b >> 16) << 16);
  }
};
#else
template <> struct mscl_elem<mscl_f16> {
  typedef u16 E;
  // One instruction, exact for every half (min and max compare the values
  // and keep an operand as it is, so the result is the host path's).
  static MSCL_DEV float value(u16 a) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(a));
    return f;
  }
  static MSCL_DEV u16 add(u16 a, u16 b) {
    u16 d;
    asm("add.rn.f16 %0, %1, %2;" : "=h"(d) : "h"(a), "h"(b));
    return d;
  }
  static MSCL_DEV u32 add_word(u32 a, u32 b) {
    u32 d;
    asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
  }
};
template <> struct mscl_elem<mscl_bf16> {
  // a * 1.0 + b: fma.bf16(x2) runs on sm_80 and later.
  typedef u16 E;
  static MSCL_DEV float value(u16 a) { return mscl_float((u32)a << 16); }
  static MSCL_DEV u16 add(u16 a, u16 b) {
    u16 d;
    asm("fma.rn.bf16 %0, %1, %2, %3;" : "=h"(d) : "h"(a), "h"((u16)0x3f80u), "h"(b));
    return d;
  }
  static MSCL_DEV u32 add_word(u32 a, u32 b) {
    u32 d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(0x3f803f80u), "r"(b));
    return d;
  }
};
#endif

// The reductions an op names (its `reduce_op`), each over elements of T:
// `of` combines two elements, `of_words` two 32-bit words of packed ones.
// Min and max compare the elements' values and keep one of the two as it
// is, so they are exact in every type.
template <typename T> struct mscl_sum {
  typedef typename mscl_elem<T>::E E;
  static MSCL_DEV E of(E a, E b) { return mscl_elem<T>::add(a, b); }
  static MSCL_DEV u32 of_words(u32 a, u32 b) { return mscl_elem<T>::add_word(a, b); }
};
template <typename T, bool LARGER> struct mscl_pick {
  typedef typename mscl_elem<T>::E E;
  static MSCL_DEV E of(E a, E b) {
    const float x = mscl_elem<T>::value(a), y = mscl_elem<T>::value(b);
    return (LARGER ? y > x : y < x) ? b : a;
  }
  static MSCL_DEV u32 of_words(u32 a, u32 b) {
    if (sizeof(E) == 4) return (u32)of((E)a, (E)b);
    return (u32)of((E)(a & 0xffff), (E)(b & 0xffff)) | ((u32)of((E)(a >> 16), (E)(b >> 16)) << 16);
  }
};
template <typename T> struct mscl_min : mscl_pick<T, false> {};
template <typename T> struct mscl_max : mscl_pick<T, true> {};

template <typename R> MSCL_DEV mscl_v16 mscl_reduce16(mscl_v16 a, mscl_v16 b) {
  return {R::of_words(a.x, b.x), R::of_words(a.y, b.y), R::of_words(a.z, b.z), R::of_words(a.w, b.w)};
}
template <typename R> MSCL_DEV mscl_v8 mscl_reduce8(mscl_v8 a, mscl_v8 b) {
  return {R::of_words(a.x, b.x), R::of_words(a.y, b.y)};
}

// ---- 16-byte global loads and stores --------------------------------------------

#ifdef MSCL_HOST
// A GPU traps on a misaligned vector access; the host stops the same way.
MSCL_DEV void mscl_aligned16(const char* p) {
  if ((u64)p & 15) {
    std::fprintf(stderr, "msclc host kernel: misaligned 16-byte access at %p\n", (const void*)p);
    std::abort();
  }
}
MSCL_DEV mscl_v16 mscl_ld16(const char* p) { mscl_aligned16(p); mscl_v16 v; std::memcpy(&v, p, 16); return v; }
MSCL_DEV void mscl_st16(char* p, mscl_v16 v) { mscl_aligned16(p); std::memcpy(p, &v, 16); }
#else
// Global, not generic, and kept in the written order: a thread's loads are
// all issued before its stores, so several are in flight at once.
MSCL_DEV mscl_v16 mscl_ld16(const char* p) {
  mscl_v16 v;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
MSCL_DEV void mscl_st16(char* p, mscl_v16 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
#endif

// Bytes a vector path can start from: 16 when every pointer has the same
// offset modulo 16 (the bytes before the first boundary go one unit at a
// time), else none.
MSCL_DEV u64 mscl_head(u64 first, u64 mixed, u64 bytes) {
  if (mixed & 15) return bytes;
  u64 head = (16 - (first & 15)) & 15;
  return head < bytes ? head : bytes;
}

// ---- Simple transfers and reductions --------------------------------------------

// Copies units of U bytes [from, to) of dst/src, thread-strided.
template <typename U>
MSCL_DEV void mscl_copy_units(char* dst, const char* src, u64 from, u64 to) {
  for (u64 i = from / sizeof(U) + MSCL_TID; i < to / sizeof(U); i += MSCL_NT)
    ((U*)dst)[i] = ((const U*)src)[i];
}

// Any alignment: a head up to the first 16-byte boundary, 16-byte vectors
// with four loads in flight per thread, then a tail. Source and destination
// that disagree modulo 16 go by 4-byte words (or bytes).
MSCL_MOVER void mscl_copy(char* __restrict__ dst, const char* __restrict__ src, u64 bytes) {
  const u64 head = mscl_head((u64)dst, (u64)dst ^ (u64)src, bytes);
  if (head == bytes) {
    if ((((u64)dst | (u64)src) & 3) == 0) {
      mscl_copy_units<u32>(dst, src, 0, bytes);
      mscl_copy_units<char>(dst, src, bytes & ~(u64)3, bytes);
    } else {
      mscl_copy_units<char>(dst, src, 0, bytes);
    }
    return;
  }
  mscl_copy_units<char>(dst, src, 0, head);
  char* d = dst + head;
  const char* s = src + head;
  const u32 n = (u32)((bytes - head) / 16), tid = MSCL_TID, nt = MSCL_NT;
  u32 i = tid;
  for (; i + 3 * nt < n; i += 4 * nt) {
    mscl_v16 v0 = mscl_ld16(s + 16 * (u64)i), v1 = mscl_ld16(s + 16 * (u64)(i + nt));
    mscl_v16 v2 = mscl_ld16(s + 16 * (u64)(i + 2 * nt)), v3 = mscl_ld16(s + 16 * (u64)(i + 3 * nt));
    mscl_st16(d + 16 * (u64)i, v0);
    mscl_st16(d + 16 * (u64)(i + nt), v1);
    mscl_st16(d + 16 * (u64)(i + 2 * nt), v2);
    mscl_st16(d + 16 * (u64)(i + 3 * nt), v3);
  }
  for (; i < n; i += nt) mscl_st16(d + 16 * (u64)i, mscl_ld16(s + 16 * (u64)i));
  mscl_copy_units<char>(d, s, 16 * (u64)n, bytes - head);
}

// dst[k] = ((src[0] + src[1]) + src[2]) + ... for every k < ND, where `+`
// is the reduction R (mscl_sum<T>, mscl_min<T>, mscl_max<T>) over elements
// of T: vectors where all pointers agree modulo 16, single elements before
// and after (and everywhere when they do not).
template <typename R, int NS, int ND>
MSCL_DEV void mscl_reduce_elems(const mscl_ptrs<ND>& d, const mscl_cptrs<NS>& s, u64 from, u64 to) {
  typedef typename R::E E;
  for (u64 i = from / sizeof(E) + MSCL_TID; i < to / sizeof(E); i += MSCL_NT) {
    E acc = ((const E*)s.p[0])[i];
    MSCL_UNROLL
    for (int k = 1; k < NS; k++) acc = R::of(acc, ((const E*)s.p[k])[i]);
    MSCL_UNROLL
    for (int k = 0; k < ND; k++) ((E*)d.p[k])[i] = acc;
  }
}

template <typename R, int NS, int ND>
MSCL_MOVER void mscl_reduce(mscl_ptrs<ND> d, mscl_cptrs<NS> s, u64 bytes) {
  u64 mixed = 0;
  MSCL_UNROLL
  for (int k = 1; k < NS; k++) mixed |= (u64)s.p[k] ^ (u64)s.p[0];
  MSCL_UNROLL
  for (int k = 0; k < ND; k++) mixed |= (u64)d.p[k] ^ (u64)s.p[0];
  const u64 head = mscl_head((u64)s.p[0], mixed, bytes);
  mscl_reduce_elems<R, NS, ND>(d, s, 0, head);
  if (head == bytes) return;
  const u32 n = (u32)((bytes - head) / 16), tid = MSCL_TID, nt = MSCL_NT;
  u32 i = tid;
  for (; i + nt < n; i += 2 * nt) {
    const u64 o0 = head + 16 * (u64)i, o1 = head + 16 * (u64)(i + nt);
    mscl_v16 a0 = mscl_ld16(s.p[0] + o0), a1 = mscl_ld16(s.p[0] + o1);
    MSCL_UNROLL
    for (int k = 1; k < NS; k++) {
      mscl_v16 b0 = mscl_ld16(s.p[k] + o0), b1 = mscl_ld16(s.p[k] + o1);
      a0 = mscl_reduce16<R>(a0, b0);
      a1 = mscl_reduce16<R>(a1, b1);
    }
    MSCL_UNROLL
    for (int k = 0; k < ND; k++) {
      mscl_st16(d.p[k] + o0, a0);
      mscl_st16(d.p[k] + o1, a1);
    }
  }
  for (; i < n; i += nt) {
    const u64 o = head + 16 * (u64)i;
    mscl_v16 acc = mscl_ld16(s.p[0] + o);
    MSCL_UNROLL
    for (int k = 1; k < NS; k++) acc = mscl_reduce16<R>(acc, mscl_ld16(s.p[k] + o));
    MSCL_UNROLL
    for (int k = 0; k < ND; k++) mscl_st16(d.p[k] + o, acc);
  }
  mscl_reduce_elems<R, NS, ND>(d, s, head + 16 * (u64)n, bytes);
}

// ---- LL16 packets: 16 bytes = {data_lo, flag, data_hi, flag}, 8 payload bytes --

#ifdef MSCL_HOST
MSCL_DEV void mscl_store_packet(char* p, mscl_v8 v, u32 flag) {
  u64* w = (u64*)p;
  __atomic_store_n(&w[0], (u64)v.x | ((u64)flag << 32), __ATOMIC_RELEASE);
  __atomic_store_n(&w[1], (u64)v.y | ((u64)flag << 32), __ATOMIC_RELEASE);
}
MSCL_DEV bool mscl_try_packet(const char* p, u32 flag, mscl_v8* v, u32* seen) {
  const u64* w = (const u64*)p;
  u64 lo = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE), hi = __atomic_load_n(&w[1], __ATOMIC_ACQUIRE);
  *v = {(u32)lo, (u32)hi};
  *seen = (u32)(lo >> 32) != flag ? (u32)(lo >> 32) : (u32)(hi >> 32);
  return (u32)(lo >> 32) == flag && (u32)(hi >> 32) == flag;
}
#else
MSCL_DEV void mscl_store_packet(char* p, mscl_v8 v, u32 flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};"
               :: "l"(p), "r"(v.x), "r"(flag), "r"(v.y), "r"(flag) : "memory");
}
MSCL_DEV bool mscl_try_packet(const char* p, u32 flag, mscl_v8* v, u32* seen) {
  u32 x, f1, y, f2;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(x), "=r"(f1), "=r"(y), "=r"(f2) : "l"(p) : "memory");
  *v = {x, y};
  *seen = f1 != flag ? f1 : f2;
  return f1 == flag && f2 == flag;
}
#endif

// Packet j of `p`, once its flags say this launch wrote it.
MSCL_DEV mscl_v8 mscl_load_packet(const MsclArgs& a, const char* p, u64 j, u64 at) {
  mscl_v8 v;
  u32 seen;
  if (mscl_try_packet(p + 16 * j, a.flag, &v, &seen)) return v;
  const u64 start = mscl_now();
  while (!mscl_try_packet(p + 16 * j, a.flag, &v, &seen)) {
    if (mscl_given_up(a)) break;
    if (mscl_now() - start > a.budget) {
      mscl_give_up(a, MSCL_GAVE_UP_PACKET, at, j, seen, a.flag);
      break;
    }
    mscl_pause();
  }
  return v;
}

// Packets are whole 16-byte slots carrying 8-byte payloads: a region that
// starts elsewhere (an alignment or split the plan chose) is reported, not
// trapped on.
MSCL_DEV bool mscl_packets_aligned(const MsclArgs& a, u64 packets, u64 raw, u64 bytes, u64 at) {
  if (bytes == 0 || ((packets & 15) == 0 && (raw & 7) == 0)) return true;
  mscl_give_up(a, MSCL_GAVE_UP_MISALIGNED, at, 0, (packets & 15) | (raw & 7) << 8, 0);
  return false;
}

// Raw data -> packets in every destination (copy_packets, put_packets).
template <int ND>
MSCL_MOVER void mscl_put_packets(const MsclArgs& a, mscl_ptrs<ND> d, const char* src, u64 bytes, u64 at) {
  u64 mixed = 0;
  MSCL_UNROLL
  for (int k = 0; k < ND; k++) mixed |= (u64)d.p[k];
  if (!mscl_packets_aligned(a, mixed, (u64)src, bytes, at)) return;
  for (u32 j = MSCL_TID; j < bytes / 8; j += MSCL_NT) {
    mscl_v8 v = ((const mscl_v8*)src)[j];
    MSCL_UNROLL
    for (int k = 0; k < ND; k++) mscl_store_packet(d.p[k] + 16 * (u64)j, v, a.flag);
  }
}

// Packets -> packets re-stamped in every destination (read_put_packets, gstorepkt).
template <int ND>
MSCL_MOVER void mscl_forward_packets(const MsclArgs& a, mscl_ptrs<ND> d, const char* src, u64 bytes, u64 at) {
  u64 mixed = (u64)src;
  MSCL_UNROLL
  for (int k = 0; k < ND; k++) mixed |= (u64)d.p[k];
  if (!mscl_packets_aligned(a, mixed, 0, bytes, at)) return;
  for (u32 j = MSCL_TID; j < bytes / 8; j += MSCL_NT) {
    mscl_v8 v = mscl_load_packet(a, src, j, at);
    MSCL_UNROLL
    for (int k = 0; k < ND; k++) mscl_store_packet(d.p[k] + 16 * (u64)j, v, a.flag);
  }
}

// Packets -> raw data (unpack_packets).
MSCL_MOVER void mscl_unpack_packets(const MsclArgs& a, char* dst, const char* src, u64 bytes, u64 at) {
  if (!mscl_packets_aligned(a, (u64)src, (u64)dst, bytes, at)) return;
  for (u32 j = MSCL_TID; j < bytes / 8; j += MSCL_NT) ((mscl_v8*)dst)[j] = mscl_load_packet(a, src, j, at);
}

// acc = pkt[0] + pkt[1] + ... + raw; raw result to `dst`, packets of it to `out`
// (the repkt family: re, res, rec and recs packets).
template <typename R, int NP, int NO>
MSCL_MOVER void mscl_reduce_packets(const MsclArgs& a, char* dst, mscl_ptrs<NO> out, const char* raw,
                                    mscl_cptrs<NP> pkt, u64 bytes, u64 at) {
  u64 packets = 0;
  MSCL_UNROLL
  for (int k = 0; k < NP; k++) packets |= (u64)pkt.p[k];
  MSCL_UNROLL
  for (int k = 0; k < NO; k++) packets |= (u64)out.p[k];
  if (!mscl_packets_aligned(a, packets, (u64)dst | (u64)raw, bytes, at)) return;
  for (u32 j = MSCL_TID; j < bytes / 8; j += MSCL_NT) {
    mscl_v8 acc = mscl_load_packet(a, pkt.p[0], j, at);
    MSCL_UNROLL
    for (int k = 1; k < NP; k++) acc = mscl_reduce8<R>(acc, mscl_load_packet(a, pkt.p[k], j, at));
    acc = mscl_reduce8<R>(acc, ((const mscl_v8*)raw)[j]);
    ((mscl_v8*)dst)[j] = acc;
    MSCL_UNROLL
    for (int k = 0; k < NO; k++) mscl_store_packet(out.p[k] + 16 * (u64)j, acc, a.flag);
  }
}

// ---- synchronization -------------------------------------------------------------
//
// An op over n channels or semaphores runs them in n lanes at once (thread
// k serves the k-th; a block narrower than n goes round), each lane one
// release or one acquire, as the executor's `if (tid < n)` does. `words`
// are the sync words of the lanes, from the block's parameter table.

// Adds one to each lane's word with release: a signal (the word is the
// peer's inbound counter of the paired channel) or a semaphore release.
template <int N>
MSCL_MOVER void mscl_release(const MsclArgs& a, const mscl_param* words) {
  for (u32 k = MSCL_TID; k < N; k += MSCL_NT) mscl_add_release(a.sync + words[k], 1);
}

// Waits for one more signal than each channel has consumed so far. The
// count consumed is the word after the inbound one; a relaxed add takes the
// ticket, because two ops of a block may wait on one channel in different
// lanes with no nop between them.
template <int N>
MSCL_MOVER void mscl_wait(const MsclArgs& a, const mscl_param* words, u64 at) {
  for (u32 k = MSCL_TID; k < N; k += MSCL_NT) {
    u64* inbound = a.sync + words[k];
    const u64 want = mscl_add_relaxed(inbound + 1, 1) + 1;
    mscl_await(a, inbound, (long long)want, MSCL_GAVE_UP_WAIT, at, k);
  }
}

// Barrier of k blocks over one monotonic counter: each use adds k arrivals.
MSCL_MOVER void mscl_barrier(const MsclArgs& a, u64 word, u64 k, u64 at) {
  MSCL_SYNC();
  if (MSCL_TID == 0) {
    u64* counter = a.sync + word;
    const u64 target = (mscl_add_acq_rel(counter, 1) / k + 1) * k;
    mscl_await(a, counter, (long long)target, MSCL_GAVE_UP_BARRIER, at, 0);
  }
  MSCL_SYNC();
}

// Counting semaphores: passes = initial value + releases (mscl_release).
template <int N>
MSCL_MOVER void mscl_sem_acquire(const MsclArgs& a, const mscl_param* words, u64 at) {
  for (u32 k = MSCL_TID; k < N; k += MSCL_NT) {
    u64* sem = a.sync + words[k];
    const long long old = (long long)mscl_add_acq_rel(sem, (u64)-1);
    if (old <= 0) mscl_await(a, sem, old, MSCL_GAVE_UP_SEMAPHORE, at, k);
  }
}

// Part `j` of `g` of a byte range, in units of the plan's buffer alignment.
MSCL_DEV u64 mscl_tbg_start(u64 bytes, u64 j, u64 g) {
  const u64 n = bytes / MSCL_ALIGN;
  return (j * (n / g) + (j < n % g ? j : n % g)) * MSCL_ALIGN;
}
MSCL_DEV u64 mscl_tbg_size(u64 bytes, u64 j, u64 g) {
  return mscl_tbg_start(bytes, j + 1, g) - mscl_tbg_start(bytes, j, g);
}

// Bytes a pipeline iteration at `offset` covers of a `bytes`-long region.
MSCL_DEV u64 mscl_unit(u64 bytes, u64 offset, u64 unit) {
  return bytes > offset ? (bytes - offset < unit ? bytes - offset : unit) : 0;
}

// ---- the runner's inputs and checks ----------------------------------------
//
// `msclc run` makes every rank's input and checks every rank's result on
// the GPU: only the counts of wrong elements (and where the first few are)
// come back. A "part" is a block of the launch (on the host: of the
// driver's loop); its threads go through the elements in strides.

// Element e of `rank`'s input for `seed`: a multiple of 1/64 in [0, 1),
// exact in every element type, from a hash so that no two nearby chunks or
// ranks look alike (the same as src/measure/workload.rs `fill_value`).
MSCL_DEV float mscl_fill_value(u32 rank, u64 e, u32 seed) {
  u64 x = ((u64)rank << 40) ^ e ^ ((u64)seed << 56);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return (float)(x % 64) / 64.0f;
}

// One element of the run's type, as a float and back (bf16: the top half
// of a float, exact for the fill's values and rounded to nearest even).
template <typename T> struct mscl_value;
template <> struct mscl_value<mscl_f32> {
  static const u32 bytes = 4;
  static MSCL_DEV float load(const char* p) { return mscl_float(*(const u32*)p); }
  static MSCL_DEV void store(char* p, float v) { *(u32*)p = mscl_bits(v); }
  static MSCL_DEV double eps() { return 1.1920928955078125e-7; }
};
template <> struct mscl_value<mscl_f16> {
  static const u32 bytes = 2;
  static MSCL_DEV float load(const char* p) { return mscl_f16_to_float(*(const u16*)p); }
  static MSCL_DEV void store(char* p, float v) { *(u16*)p = (u16)mscl_float_to_f16(v); }
  static MSCL_DEV double eps() { return 1.0 / 1024.0; }
};
template <> struct mscl_value<mscl_bf16> {
  static const u32 bytes = 2;
  static MSCL_DEV float load(const char* p) { return mscl_float((u32)*(const u16*)p << 16); }
  static MSCL_DEV void store(char* p, float v) {
    u32 s = mscl_bits(v);
    *(u16*)p = (u16)((s + 0x7fffu + ((s >> 16) & 1)) >> 16);
  }
  static MSCL_DEV double eps() { return 1.0 / 128.0; }
};

// Writes every rank's input (bufs as MsclArgs has them).
struct MsclFill {
  char* const* bufs;
  u64 elements;  // input elements per rank
  u32 ranks;
  u32 seed;
};

MSCL_DEV void mscl_fill_part(const MsclFill& f, u64 part, u64 parts) {
  typedef mscl_value<mscl_T> V;
  const u64 total = f.elements * f.ranks;
  for (u64 i = part * MSCL_NT + MSCL_TID; i < total; i += parts * MSCL_NT) {
    const u32 r = (u32)(i / f.elements);
    const u64 e = i % f.elements;
    V::store(f.bufs[3 * r] + e * V::bytes, mscl_fill_value(r, e, f.seed));
  }
}

// How many wrong elements kept by position.
#define MSCL_FIRST_WRONG 8

// Checks every rank's output against the collective's definition, given
// as entries of four u32: the rank, its output chunk, the rank it comes
// from (0xffffffff: the sum over every rank; 0xfffffffe their min,
// 0xfffffffd their max) and that rank's input chunk.
// `found` gets per rank the count of wrong elements, then how many were
// wrong in all, then the first MSCL_FIRST_WRONG positions, each
// rank << 40 | element of its output.
struct MsclCheck {
  char* const* bufs;
  const u32* entries;
  u64* found;
  u64 nentries;
  u64 per_chunk;  // elements per chunk
  u32 ranks;
  u32 seed;
};

MSCL_DEV void mscl_check_part(const MsclCheck& c, u64 part, u64 parts) {
  typedef mscl_value<mscl_T> V;
  const u64 total = c.nentries * c.per_chunk;
  for (u64 i = part * MSCL_NT + MSCL_TID; i < total; i += parts * MSCL_NT) {
    const u32* entry = c.entries + 4 * (i / c.per_chunk);
    const u64 e = i % c.per_chunk;
    const u32 rank = entry[0], from = entry[2];
    const u64 out = (u64)entry[1] * c.per_chunk + e, in = (u64)entry[3] * c.per_chunk + e;
    const double got = V::load(c.bufs[3 * rank + 1] + out * V::bytes);
    bool ok;
    if (from == 0xffffffffu) {
      double want = 0;
      for (u32 s = 0; s < c.ranks; s++) want += mscl_fill_value(s, in, c.seed);
      const double diff = got > want ? got - want : want - got;
      ok = diff <= V::eps() * c.ranks * (1.0 + (want < 0 ? -want : want));
    } else if (from >= 0xfffffffdu) {
      // Min or max: one of the values, exactly.
      double want = mscl_fill_value(0, in, c.seed);
      for (u32 s = 1; s < c.ranks; s++) {
        const double v = mscl_fill_value(s, in, c.seed);
        if (from == 0xfffffffeu ? v < want : v > want) want = v;
      }
      ok = got == want;
    } else {
      ok = got == (double)mscl_fill_value(from, in, c.seed);
    }
    if (!ok) {
      mscl_add_relaxed(c.found + rank, 1);
      const u64 slot = mscl_add_relaxed(c.found + c.ranks, 1);
      if (slot < MSCL_FIRST_WRONG) c.found[c.ranks + 1 + slot] = (u64)rank << 40 | out;
    }
  }
}

#ifndef MSCL_HOST
extern "C" __global__ void mscl_fill(MsclFill f) { mscl_fill_part(f, blockIdx.x, gridDim.x); }
extern "C" __global__ void mscl_check(MsclCheck c) { mscl_check_part(c, blockIdx.x, gridDim.x); }
#endif

// ---- the plan ----------------------------------------------------------------------
