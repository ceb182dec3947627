"""Times NVRTC on CUDA files that `msclc --emit cuda` wrote, the way
`msclc run` compiles them (sm_90 cubin, C++17, float32), and prints one line
per file: source bytes, seconds (best of N), cubin bytes. Calls NVRTC
through ctypes, so it measures NVRTC alone.

    python3 nvrtc_time.py LIBNVRTC ROUNDS FILE.cu...
"""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
rounds = int(sys.argv[2])
options = [b"--gpu-architecture=sm_90", b"-std=c++17", b"-DMSCL_DTYPE=mscl_f32"]
for path in sys.argv[3:]:
    source = open(path, "rb").read()
    best, cubin = None, 0
    for _ in range(rounds):
        program = ctypes.c_void_p()
        assert lib.nvrtcCreateProgram(ctypes.byref(program), source, b"k.cu", 0, None, None) == 0
        array = (ctypes.c_char_p * len(options))(*options)
        start = time.perf_counter()
        status = lib.nvrtcCompileProgram(program, len(options), array)
        seconds = time.perf_counter() - start
        if status != 0:
            sys.exit(f"{path}: NVRTC rejected it (status {status})")
        size = ctypes.c_size_t()
        lib.nvrtcGetCUBINSize(program, ctypes.byref(size))
        cubin = size.value
        lib.nvrtcDestroyProgram(ctypes.byref(program))
        best = seconds if best is None else min(best, seconds)
    print(f"{path}\t{len(source)}\t{best:.2f}\t{cubin}", flush=True)
