# Herald's two commands. Each installs what it needs (scripts/setup.sh) and skips what is there.
.PHONY: run test build setup clean

setup:
	@bash scripts/setup.sh

# HERALD_BUILD=release builds (and `make run` runs) the optimised executables: about twice the first build's time, a
# third of the demo's CPU (docs/performance.md, "The demo").
HERALD_BUILD ?= debug
export HERALD_BUILD

build: setup
	swift build -c $(HERALD_BUILD)

## Run the embedded broker and the three services in the foreground; Ctrl-C stops them.
run: build
	@bash scripts/dev-stack.sh

## Build everything and run the whole test suite, then the API contract check.
# The heaviest process tests (four services and thousands of pushes each) run alone after the rest: beside the other suites
# on two cores, each starved the others past their time limits. The contract check (schemathesis against a running
# ingest, docs/openapi.yaml) runs between them, with a fixed seed so that a run is repeatable.
HEAVY_TESTS = NotifierRebalanceTests|StateMoveTests|JourneyKillTests

test: setup
	swift build --build-tests
	swift test --skip-build --disable-xctest --skip '$(HEAVY_TESTS)'
	bash scripts/contract-check --seed 1
	swift test --skip-build --disable-xctest --no-parallel --filter '$(HEAVY_TESTS)'

clean:
	rm -rf .build .run
