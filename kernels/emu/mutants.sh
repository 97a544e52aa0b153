#!/usr/bin/env bash
# mutants.sh: the CUDA emulator's own check. Plants known bugs in the CUDA
# kernels (and gemm.c), one at a time, in a copy of kernels/ and core/,
# rebuilds kernels_emu (the kernel test on the emulator; AddressSanitizer
# build of the kernels' own CMake project) and checks that each mutant makes
# it fail, with the message that names the bug. The table of mutants and
# what caught each is in kernels/emu/README.md.
#
# Not a ctest entry: each mutant is a rebuild (about a minute in all on 2
# cores). Run it after changing the emulator:
#   bash kernels/emu/mutants.sh [--release] [work-dir]
# --release: a Release build instead, without AddressSanitizer (the
# emulator's own guard zones then catch the out-of-bounds writes).
# Exit 0 when every mutant was caught, 1 when one was missed (or did not
# apply: the source it patches changed), 2 when the build failed.
set -u
type=Asan
if [ "${1:-}" = --release ]; then
  type=Release
  shift
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
src=$work/src build=$work/build log=$work/log
rm -rf "$src" "$build" && mkdir -p "$src" && cp -r "$root/kernels" "$root/core" "$src/" || exit 2
asan="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
cmake -S "$src/kernels" -B "$build" -DCMAKE_BUILD_TYPE=$type \
  -DCMAKE_C_FLAGS_ASAN="$asan" -DCMAKE_EXE_LINKER_FLAGS_ASAN="-fsanitize=address,undefined" \
  >"$log" 2>&1 || { echo "mutants: cmake failed (see $log)"; exit 2; }
cmake --build "$build" --target kernels_emu -j2 >>"$log" 2>&1 ||
  { echo "mutants: the unchanged build failed (see $log)"; exit 2; }
"$build/emu/kernels_emu" >"$work/clean.out" 2>&1 ||
  { echo "mutants: kernels_emu fails without a mutant (see $work/clean.out)"; exit 2; }

missed=0
# mutant NAME FILE PERL-SUBSTITUTION EXPECTED-OUTPUT (an extended regex)
mutant() {
  local name=$1 file=$2 expr=$3 expect=$4 out=$work/$1.out
  cp "$root/kernels/$file" "$src/kernels/$file"
  perl -0pi -e "$expr" "$src/kernels/$file"
  if cmp -s "$root/kernels/$file" "$src/kernels/$file"; then
    echo "NOT APPLIED  $name ($file changed?)"
    missed=1
    return
  fi
  if ! cmake --build "$build" --target kernels_emu -j2 >>"$log" 2>&1; then
    echo "NO BUILD     $name (see $log)"
    missed=1
  else
    # in a shell of its own, whose "Aborted" goes to /dev/null
    bash -c '"$0" >"$1" 2>&1; exit $?' "$build/emu/kernels_emu" "$out" 2>/dev/null
    local rc=$?
    local why
    why=$(grep -E -m1 "$expect" "$out")
    if [ "$rc" -ne 0 ] && [ -n "$why" ]; then
      echo "caught       $name: ${why:0:150}"
    else
      echo "MISSED       $name (exit $rc; see $out)"
      missed=1
    fi
  fi
  cp "$root/kernels/$file" "$src/kernels/$file"
}

mutant bounds cuda/layernorm.cu \
  's/if \(row >= N\)(\s+return;\s+const float \*x = inp \+ row \* C;\s+float s)/if (row > N)$1/' \
  'heap-buffer-overflow|past its end|outside device memory'
mutant missing-sync-after-load cuda/flash_attention.cu \
  's/(fa_load_tile<BF16>\(vt, ks, vb, d\.rs, t0, d\.T, HS\);\n)\s+__syncthreads\(\);\n(\s+if \(!valid \|\| t0 > t\)\n\s+continue; \/\* the whole warp: its row)/$1$2/' \
  'FAILED'
mutant missing-sync-before-reuse cuda/flash_attention.cu \
  's/\s+__syncthreads\(\); \/\* the last tile is read \(and q is in\) \*\///' \
  'FAILED'
mutant short-butterfly cuda/common.cuh \
  's/(oc_warp_sum\(float x\)\n\{\n\s+for \(int o = )OC_WARP \/ 2/$1OC_WARP \/ 4/' \
  'FAILED'
mutant divergent-shuffle cuda/attention.cu \
  's/const float m = oc_warp_max\(lmax\);/const float m = lane < 16 ? oc_warp_max(lmax) : lmax;/' \
  'the warp diverged|never reach'
mutant skipped-barrier cuda/embedding.cu \
  's/if \(__syncthreads_or\(earlier\)\)/if (earlier)/' \
  'never reach'
mutant no-smem-opt-in cuda/flash_attention.cu \
  's/if \(bytes > 48 \* 1024\)(\s+cudaCheck\(cudaFuncSetAttribute\(kernel, cudaFuncAttributeMax)/if (0)$1/' \
  'CUDA error.*invalid argument'
mutant smem-too-small cuda/flash_attention.cu \
  's/(size_t smem = fa_smem\(\(const void \*\)fa_bwd_q_kernel<BF16>, )2, d\.HS\)/${1}1, d.HS)/' \
  'heap-buffer-overflow|dynamic shared memory written'
mutant leading-dimension cuda/gemm.c \
  's/(0\.0f, dinp, IC)(, ab,)/$1 + 1$2/' \
  'not inside one device allocation'

[ "$missed" -eq 0 ] && echo "mutants: every planted bug was caught"
exit "$missed"
