#!/usr/bin/env bash
# GPU check of `hwadvisor bench`: one prepared script for a machine with an NVIDIA GPU.
#
# Installs nothing: it uses the machine's own python and torch, with hwadvisor from this
# checkout's src/ on PYTHONPATH. Writes into $OUT (default ./gpu_check_out):
#   env.txt            nvidia-smi, torch build, which of hwadvisor's dependencies are present
#   check.json/.err    `hwadvisor check --json`
#   bench.json/.err    `hwadvisor bench --device all --json` (default budget: ~8 s CPU + 6 s per GPU)
#   bench_gpu.json     `hwadvisor bench --device cuda:0 --budget 20 --json` (longer, GPU only)
#   anchors.txt/.json  benchmarks/gpu_anchors.py --measure: eager steps on this GPU beside the
#                      estimate, and the host's seconds per launch
#   pytest_gpu.txt     the gpu-marked tests of tests/bench, when pytest is there
#   summary.txt        the figures, one line each
# Usage: OUT=/some/dir bash benchmarks/gpu_check.sh    (about 3 minutes)
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-./gpu_check_out}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

{
  date -u
  nvidia-smi --query-gpu=name,uuid,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
  "$PY" - <<'EOF'
import importlib, sys
print("python", sys.version.split()[0])
for mod in ("torch", "typer", "rich", "pydantic", "psutil", "pynvml", "yaml", "pytest", "jsonschema"):
    try:
        m = importlib.import_module(mod)
        print(mod, getattr(m, "__version__", "present"))
    except Exception as exc:  # report, do not install
        print(mod, "MISSING:", exc)
try:
    import torch
    print("cuda", torch.version.cuda, "available", torch.cuda.is_available(), "devices", torch.cuda.device_count())
    for i in range(torch.cuda.device_count()):
        print(" ", i, torch.cuda.get_device_name(i))
except Exception as exc:
    print("torch check failed:", exc)
EOF
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

timeout 120 "$PY" -m hwadvisor check --json > "$OUT/check.json" 2> "$OUT/check.err"
echo "check rc=$?"
timeout 240 "$PY" -m hwadvisor bench --device all --json > "$OUT/bench.json" 2> "$OUT/bench.err"
echo "bench --device all rc=$?"
timeout 120 "$PY" -m hwadvisor bench --device cuda:0 --budget 20 --json > "$OUT/bench_gpu.json" 2> "$OUT/bench_gpu.err"
echo "bench --device cuda:0 --budget 20 rc=$?"
timeout 300 "$PY" benchmarks/gpu_anchors.py --measure --json "$OUT/anchors.json" > "$OUT/anchors.txt" 2>&1
echo "gpu_anchors --measure rc=$? (the measured rows and host per launch at the end of anchors.txt)"
if "$PY" -c "import pytest, jsonschema" 2> /dev/null; then
  timeout 180 "$PY" -m pytest tests/bench -q -m gpu -p no:cacheprovider > "$OUT/pytest_gpu.txt" 2>&1
  echo "pytest -m gpu rc=$?"
fi

"$PY" - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for name in ("bench.json", "bench_gpu.json"):
    try:
        doc = json.loads((out / name).read_text())
    except Exception as exc:
        print(f"{name}: unreadable ({exc})")
        continue
    print(f"== {name}: {doc.get('elapsed_s')} s of {doc.get('budget_s')} s, torch {doc.get('torch_version')}")
    for r in doc.get("results", []):
        eff = f"{r['efficiency']:.0%}" if r.get("efficiency") is not None else "?"
        print(f"{r['device']:<7} {r['kernel']:<7} {r['dtype']:<5} {str(r['shape']):<22} {r['value']:>12,.1f} {r['unit']:<8} runs {r['runs']:<4} of peak {eff}")
    for s in doc.get("skipped", []):
        print(f"skipped {s['device']} {s['kernel']} {s['dtype']}: {s['reason']}")
    for d in doc.get("derived", []):
        print("-", d["text"])
EOF
