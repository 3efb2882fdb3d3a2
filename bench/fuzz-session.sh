#!/bin/sh
# The long run of tests/fuzz/fuzz-session (the stateful spicesink harness)
# and the line coverage of spicesink's files from the corpus it made.
#
#   bench/fuzz-session.sh run [options] [-- LIBFUZZER_ARGS_OR_CORPORA…]
#       --build DIR      the fuzzing build (CC=clang meson setup DIR
#                        -Dfuzzing=true -Db_sanitize=address,undefined
#                        -Db_lundef=false); default build-fuzz
#       --out DIR        corpus/, artifacts/, fuzz.log; default
#                        /tmp/fuzz-session
#       --time SECONDS | --runs N   default --time 900
#       --cpu N          the core it runs on (taskset); default 1
#       --ignore-crashes go on after a crash (libFuzzer -fork=1
#                        -ignore_crashes=1; each crash is an artifact)
#   bench/fuzz-session.sh coverage [options]
#       --build-cov DIR  a coverage build, set up here if missing (clang,
#                        -fprofile-instr-generate -fcoverage-mapping, no
#                        sanitizer); default build-cov
#       --corpus DIR…    corpora to replay (-runs=0); default OUT/corpus
#                        and the seeds
#       --out DIR        prof/ and coverage.txt; default /tmp/fuzz-session
#
# `run` prints the executions, exec/s and the crashes (each an artifact
# with its reproducer: `BUILD/tests/fuzz/fuzz-session ARTIFACT`).
# `coverage` prints llvm-cov's report restricted to the sink's connection,
# server, session and channel files, and the total of plugins/spicesink.
# A corpus input that crashes the coverage build stops the replay (its
# profile is lost): the report says so. Both run niced, on one core; the
# machine's load changes exec/s (a wake-up waits for the core).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
[ -n "$mode" ] && shift
build=$top/build-fuzz
build_cov=$top/build-cov
out=/tmp/fuzz-session
limit=-max_total_time=900
cpu=1
ignore=0
corpora=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --build-cov) build_cov=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --time) limit=-max_total_time=$2; shift 2 ;;
    --runs) limit=-runs=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --ignore-crashes) ignore=1; shift ;;
    --corpus) corpora="$corpora $2"; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1 (see the head of $0)" >&2; exit 2 ;;
  esac
done
seeds=$top/tests/fuzz/corpus/session
# the files whose coverage is reported (the issue's list)
SINK_FILES="sinkconn.c sinkserver.c sinksession.c sinkmain.c sinkdisplay.c
sinkinputs.c sinkcursor.c sinkplayback.c sinkrecord.c sinkagent.c"
mkdir -p "$out"
out=$(cd "$out" && pwd)

# the environment of the fuzz suite (tests/meson.build test_env)
use_build() {
  b=$(cd "$1" && pwd)
  export GST_PLUGIN_SYSTEM_PATH_1_0=
  export GST_PLUGIN_PATH_1_0="$b/plugins:$(pkg-config --variable=pluginsdir gstreamer-1.0)"
  export GST_REGISTRY_1_0="$b/tests/registry.bin"
  export GST_REGISTRY_FORK=no
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$top/tests/sanitizers/ubsan.supp}
  harness=$b/tests/fuzz/fuzz-session
  [ -x "$harness" ] || { echo "no $harness: ninja -C $1 tests/fuzz/fuzz-session" >&2; exit 2; }
}

case $mode in
run)
  use_build "$build"
  mkdir -p "$out/corpus" "$out/artifacts"
  flags="$limit -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=$out/artifacts/"
  [ $ignore -eq 1 ] && flags="$flags -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"
  echo "fuzz-session: $harness $flags on core $cpu, load $(cut -d' ' -f1-3 /proc/loadavg)"
  start=$(date +%s)
  set +e
  # shellcheck disable=SC2086
  taskset -c "$cpu" nice -n 10 "$harness" $flags "$out/corpus" "$@" "$seeds" \
    >"$out/fuzz.log" 2>&1
  rc=$?
  set -e
  end=$(date +%s)
  echo "exit $rc after $((end - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg); log $out/fuzz.log"
  # plain mode: the final stats; fork mode: the last status line
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$out/fuzz.log" || true
  if [ $ignore -eq 1 ]; then
    grep -E '^#[0-9]+' "$out/fuzz.log" | tail -1 || true
    grep -cE '^INFO: log from the inner process|ERROR: (AddressSanitizer|libFuzzer)|runtime error' \
      "$out/fuzz.log" | sed 's/^/crash reports in the log: /'
  fi
  echo "corpus: $(ls "$out/corpus" | wc -l) inputs"
  n=$(ls "$out/artifacts" | wc -l)
  echo "artifacts: $n"
  for a in "$out"/artifacts/*; do
    [ -e "$a" ] && echo "  $a"
  done
  exit $rc
  ;;
coverage)
  if [ ! -d "$build_cov" ]; then
    CC=clang meson setup "$build_cov" "$top" -Dfuzzing=true \
      -Dc_args="-fprofile-instr-generate -fcoverage-mapping" \
      -Dc_link_args="-fprofile-instr-generate" -Db_lundef=false
  fi
  nice ninja -C "$build_cov" plugins/libgstspice.so tests/fuzz/fuzz-session
  use_build "$build_cov"
  [ -n "$corpora" ] || corpora="$out/corpus $seeds"
  rm -rf "$out/prof"
  mkdir -p "$out/prof"
  set +e
  # shellcheck disable=SC2086
  LLVM_PROFILE_FILE="$out/prof/%m-%p.profraw" taskset -c "$cpu" nice -n 10 \
    "$harness" -runs=0 $corpora >"$out/coverage-run.log" 2>&1
  rc=$?
  set -e
  if [ $rc -ne 0 ]; then
    echo "the replay exited $rc: an input crashed, coverage incomplete (see $out/coverage-run.log)" >&2
  fi
  grep -E '^#[0-9]+ +DONE' "$out/coverage-run.log" || true
  llvm-profdata merge -sparse "$out"/prof/*.profraw -o "$out/merged.profdata"
  # llvm-cov 14 ignores SOURCES arguments here (every file is listed):
  # pick the rows of plugins/spicesink and add them up
  llvm-cov report "$build_cov/plugins/libgstspice.so" \
    -instr-profile="$out/merged.profdata" >"$out/coverage-all.txt"
  awk -v sel="$SINK_FILES" '
    BEGIN { n = split(sel, f, " "); for (i = 1; i <= n; i++) want[f[i]] = 1 }
    function row(name, r, mr, fn, mf, l, ml) {
      printf "%-16s lines %5d/%5d %6.2f%%  functions %3d/%3d  regions %5d/%5d %6.2f%%\n",
        name, l - ml, l, l ? 100 * (l - ml) / l : 0, fn - mf, fn, r - mr, r,
        r ? 100 * (r - mr) / r : 0
    }
    $1 ~ /plugins\/spicesink\/[a-z]+\.c$/ {
      name = $1; sub(/.*\//, "", name)
      if (want[name]) {
        row(name, $2, $3, $5, $6, $8, $9)
        R += $2; MR += $3; F += $5; MF += $6; L += $8; ML += $9
      }
      AR += $2; AMR += $3; AF += $5; AMF += $6; AL += $8; AML += $9
    }
    END {
      row("these files", R, MR, F, MF, L, ML)
      row("all of the sink", AR, AMR, AF, AMF, AL, AML)
    }' "$out/coverage-all.txt" | tee "$out/coverage.txt"
  src=$top/plugins/spicesink
  echo "line by line: llvm-cov show $build_cov/plugins/libgstspice.so -instr-profile=$out/merged.profdata $src/FILE.c"
  exit $rc
  ;;
*)
  sed -n '2,/^set -eu/p' "$0" | sed '$d' >&2
  exit 2
  ;;
esac
