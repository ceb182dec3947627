// Runs a kernel that msclc generated on the CPU: the generated file is
// compiled as plain C++ (its prelude's MSCL_HOST branch) and included
// first with `-include`, and every thread of every block is a host thread.
//
//   driver IN OUT
// IN (little-endian u64s): nranks, chunk, scratch_bytes, scratch_half,
// launches, threads per block, spin budget (ns), sync word count, the sync
// words, then per rank: user_bytes, input_offset, output_offset,
// input_bytes, the input bytes. Before each launch every rank's input is
// written again; launch l (1, 2, ...) uses packet flag l and the second
// scratch half when l is even (as src/runner/gpu.rs launches). A launch
// whose report says a spin gave up is the last. Then a seed: when it is
// not 0, the inputs given are empty and the prelude's mscl_fill_part makes
// them instead, and after the launches its mscl_check_part checks every
// output, as `msclc run` does on a GPU; IN goes on with elements per chunk,
// input elements per rank, the number of check entries, the entries (four u32s each, one per u64)
// and an output element to spoil first (rank, element; rank 2^64 - 1:
// none). OUT: each rank's user allocation, the sync words, then with a
// seed the check's words.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

static u64 read_u64(FILE* f) {
  u64 v = 0;
  if (fread(&v, 8, 1, f) != 1) { fprintf(stderr, "driver: short input\n"); exit(2); }
  return v;
}

int main(int argc, char** argv) {
  if (argc != 3) { fprintf(stderr, "usage: driver IN OUT\n"); return 2; }
  FILE* in = fopen(argv[1], "rb");
  if (!in) { perror(argv[1]); return 2; }
  u64 nranks = read_u64(in), chunk = read_u64(in), scratch = read_u64(in), half = read_u64(in);
  u64 launches = read_u64(in), width = read_u64(in), budget = read_u64(in), words = read_u64(in);
  if (nranks != MSCL_NRANKS || words != MSCL_SYNC_WORDS || width == 0) {
    fprintf(stderr, "driver: input is for another plan\n");
    return 2;
  }
  std::vector<u64> sync(words);
  for (auto& w : sync) w = read_u64(in);
  struct Rank { std::vector<char> user, scratch, input; u64 input_offset, output_offset; };
  std::vector<Rank> ranks(nranks);
  std::vector<char*> bufs(3 * nranks);
  for (u64 r = 0; r < nranks; r++) {
    Rank& k = ranks[r];
    k.user.assign(read_u64(in) + 16, 0);
    k.input_offset = read_u64(in);
    k.output_offset = read_u64(in);
    k.input.resize(read_u64(in));
    if (fread(k.input.data(), 1, k.input.size(), in) != k.input.size()) return 2;
    k.scratch.assign(scratch + 16, 0);
    bufs[3 * r + 2] = k.scratch.data();
  }
  const u32 seed = (u32)read_u64(in);
  u64 per_chunk = 0, input_elements = 0, spoil_rank = ~0ull, spoil_element = 0;
  std::vector<u32> entries;
  if (seed != 0) {
    per_chunk = read_u64(in);
    input_elements = read_u64(in);
    entries.resize(4 * read_u64(in));
    for (auto& e : entries) e = (u32)read_u64(in);
    spoil_rank = read_u64(in);
    spoil_element = read_u64(in);
  }
  fclose(in);
  for (u64 r = 0; r < nranks; r++) {
    // Input and output pointers as the runner lays them out.
    bufs[3 * r + 0] = ranks[r].user.data() + ranks[r].input_offset;
    bufs[3 * r + 1] = ranks[r].user.data() + ranks[r].output_offset;
  }
  // Runs `part` on `width` host threads (the fill and the check).
  auto on_threads = [width](auto part) {
    std::vector<std::thread> threads;
    for (u32 t = 0; t < width; t++)
      threads.emplace_back([t, width, part] {
        mscl_host_tid = t;
        mscl_host_nt = (u32)width;
        part();
      });
    for (auto& t : threads) t.join();
  };
  for (u64 l = 1; l <= launches && sync[MSCL_REPORT] == 0; l++) {
    if (seed != 0) {
      MsclFill f{bufs.data(), input_elements, (u32)nranks, seed};
      on_threads([f] { mscl_fill_part(f, 0, 1); });
    }
    for (auto& k : ranks) std::copy(k.input.begin(), k.input.end(), k.user.begin() + k.input_offset);
    MsclArgs a{bufs.data(), sync.data(), chunk, l % 2 == 0 ? half : 0, budget, (u32)l};
    std::vector<std::unique_ptr<mscl_host_barrier>> barriers;
    std::vector<std::thread> threads;
    for (u32 b = 0; b < MSCL_NBLOCKS; b++) {
      barriers.emplace_back(new mscl_host_barrier());
      mscl_host_barrier* bar = barriers.back().get();
      bar->width = (u32)width;
      for (u32 t = 0; t < width; t++)
        threads.emplace_back([a, b, t, width, bar] {
          mscl_host_tid = t;
          mscl_host_nt = (u32)width;
          mscl_host_block = b;
          mscl_host_bar = bar;
          mscl_run_block(a, b);
        });
    }
    for (auto& t : threads) t.join();
  }
  std::vector<u64> found;
  if (seed != 0) {
    typedef mscl_value<mscl_T> V;
    if (spoil_rank < nranks) {
      char* p = bufs[3 * spoil_rank + 1] + spoil_element * V::bytes;
      V::store(p, V::load(p) + 1.0f);
    }
    found.assign(nranks + 1 + MSCL_FIRST_WRONG, 0);
    MsclCheck c{bufs.data(), entries.data(), found.data(), entries.size() / 4, per_chunk, (u32)nranks, seed};
    on_threads([c] { mscl_check_part(c, 0, 1); });
  }
  FILE* out = fopen(argv[2], "wb");
  for (auto& k : ranks) fwrite(k.user.data(), 1, k.user.size() - 16, out);
  fwrite(sync.data(), 8, sync.size(), out);
  fwrite(found.data(), 8, found.size(), out);
  fclose(out);
  return 0;
}
