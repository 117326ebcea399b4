#!/usr/bin/env bash
# Installs what Herald needs to build, run and test on Debian 12, skipping what is already there (zlib1g-dev: gzip
# request bodies, through compress-nio; binutils: the deploy test reads the executables' shared libraries with readelf;
# openssl: the provider simulators' self-signed certificate;
# chromium: renders `herald campaign report --html` in the tests;
# python3-venv: the Python tools' virtual environment, .venv, with schemathesis for the API contract check and the
# Braze, Segment and RudderStack client libraries for the compatibility tests; promtool, Prometheus' metrics linter,
# goes there too).
# Needs root (or sudo) only when something is missing. Extra Debian packages (a benchmark's tools) may be named as
# arguments: scripts/setup.sh nghttp2-client
set -euo pipefail

packages=(librdkafka-dev libsqlite3-dev libcurl4-openssl-dev zlib1g-dev kcat pkg-config curl python3 python3-venv openssl docker-compose binutils chromium "$@")
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "setup: swift is not on PATH; Herald needs Swift 6.1 or newer (https://www.swift.org/install/linux/)" >&2
    exit 1
fi

# The Python tools, pinned (PyPI): made once, remade when the pins change. The second list is installed without its
# packages' own dependency pins (the first list holds what they need).
venv="$(dirname "$0")/../.venv"
requirements="$(dirname "$0")/python-requirements.txt"
nodeps="$(dirname "$0")/python-requirements-nodeps.txt"
if ! cat "$requirements" "$nodeps" | cmp -s - "$venv/requirements.txt" 2>/dev/null; then
    echo "setup: making .venv (scripts/python-requirements*.txt)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$nodeps"
    cat "$requirements" "$nodeps" > "$venv/requirements.txt"
fi

# promtool, Prometheus' own linter of the text format (the judge of the /metrics tests), taken out of Debian's prometheus
# package without installing it: installing it would also start a Prometheus server where systemd runs.
if [ ! -x "$venv/bin/promtool" ]; then
    echo "setup: extracting promtool from Debian's prometheus package into .venv/bin"
    package_dir="$(mktemp -d)"
    if ! (cd "$package_dir" && apt-get download -qq prometheus 2>/dev/null); then
        $sudo apt-get update -qq
        (cd "$package_dir" && apt-get download -qq prometheus)
    fi
    dpkg-deb -x "$package_dir"/prometheus_*.deb "$package_dir/files"
    cp "$package_dir/files/usr/bin/promtool" "$venv/bin/promtool"
    rm -rf "$package_dir"
fi
