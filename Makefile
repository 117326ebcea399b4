# Herald's two commands. Each installs what it needs (scripts/setup.sh) and skips what is there.
.PHONY: run test build setup clean

setup:
	@bash scripts/setup.sh

build: setup
	swift build

## Run the embedded broker and the three services in the foreground; Ctrl-C stops them.
run: build
	@bash scripts/dev-stack.sh

## Build everything and run the whole test suite.
test: setup
	swift build --build-tests
	swift test --skip-build --disable-xctest

clean:
	rm -rf .build .run
