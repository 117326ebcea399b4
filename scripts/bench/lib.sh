# Sourced by the benchmark scripts (from the repository's root).

# Runs benchmark tests (release, with testing enabled) straight from the test binary, so that every benchmark shares
# one release build (the executables the process benchmarks start are built with the same flags).
#   bench_tests <filter>
bench_tests() {
    swift build -c release -Xswiftc -enable-testing --build-tests >&2 || return 1
    "$(swift build -c release -Xswiftc -enable-testing --show-bin-path)/heraldPackageTests.xctest" \
        --testing-library swift-testing --filter "$1"
}

# Prints one figure as `scripts/bench/all` collects it.
#   figure <name> <value> <unit> <ceiling or -> <goal>
figure() {
    python3 - "$@" <<'PY'
import sys
name, value, unit, ceiling, goal = sys.argv[1:6]
def number(text):
    v = float(text)
    return str(round(v)) if v >= 100 else f"{v:.2f}"
ratio = "-" if ceiling == "-" or float(ceiling) == 0 else f"{float(value) / float(ceiling):.2f}"
print(f"figure={name} value={number(value)} unit={unit} ceiling={ceiling if ceiling == '-' else number(ceiling)} ratio={ratio} goal={goal}")
PY
}
