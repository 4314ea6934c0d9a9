#!/usr/bin/env bash
# CI smoke run of every zerorx-stress scenario: a few seconds each with a small load.
# Fails if any run's verdict is FAIL (a wrong or missing reply, a failed connection,
# memory growth) or the harness cannot run; the JSON reports are compared at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet -p zerorx-stress
# Ask cargo where it puts binaries: CARGO_TARGET_DIR or a config may move target/.
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
bin="$target_dir/debug/zerorx-stress"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for scenario in rpc stream churn fabric; do
  echo "-- zerorx-stress --scenario ${scenario}"
  "$bin" --scenario "$scenario" --duration 3s --connections 8 --json "$out/$scenario.json"
done
for scenario in rpc stream; do
  echo "-- zerorx-stress --scenario ${scenario} --faults all:2/s"
  "$bin" --scenario "$scenario" --duration 3s --connections 8 --faults all:2/s --fault-hold 300ms \
    --burst-conns 40 --json "$out/$scenario-faults.json"
done
"$bin" --compare "$out/rpc.json" "$out/stream.json"

# A minute's soak: rpc, stream and churn in turn with every fault kind at 20/s each
# against two long-lived servers whose fds, tasks, pool chunks and RSS must stay flat.
echo "-- zerorx-stress --soak 60s"
"$bin" --soak 60s --connections 8 --fault-hold 300ms --burst-conns 40 --json "$out/soak.json"

# The receive pool under pressure, in release (whose timing finds what debug's hides):
# stream and churn with bursts at the default size (128 connections × 60 KiB, more than
# a worker's 4 MiB pool) and every other fault at 20/s, then a soak at the default
# connection count. These lost requests and left connections stuck before the
# runtime stopped waiting for buffers the application held (docs/operations.md).
cargo build --quiet --release -p zerorx-stress
rel="$target_dir/release/zerorx-stress"
for scenario in stream churn; do
  echo "-- zerorx-stress (release) --scenario ${scenario} --faults all:20/s"
  "$rel" --scenario "$scenario" --duration 5s --faults all:20/s --json "$out/$scenario-release.json"
done
echo "-- zerorx-stress (release) --soak 60s"
"$rel" --soak 60s --json "$out/soak-release.json"

# Hostile load: 10,000 slowloris and 16 never-reading connections beside the rpc load;
# the server's memory stays under its bound and its timeouts reclaim everything.
echo "-- zerorx-stress --hostile"
# As many slowloris connections as the fd limit allows, 10,000 at most (a machine
# whose hard limit is lower still runs the check, with the figure it can hold).
hard=$(ulimit -Hn)
slow=10000
if [ "$hard" != unlimited ] && [ "$hard" -lt 10400 ]; then slow=$((hard - 400)); fi
"$bin" --hostile --slowloris "$slow" --duration 2s --connections 8 --json "$out/hostile.json"
