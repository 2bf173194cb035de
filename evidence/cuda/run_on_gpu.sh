#!/usr/bin/env bash
# The recorded CUDA run (issue 11): the gate with --require cuda, the diagnostic on the GPU with --host-check,
# the checkpoint-resume verification (CPU by its specification) on the GPU machine, and one negative control
# (no visible GPU: --require cuda must fail). Everything is tarred into $OUT (8 files at most come back).
set -u
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
echo /.devrun/ >> .git/info/exclude   # the runner script itself must not make the tree dirty
git status --porcelain | head -5
R=$OUT/cuda; N=$OUT/negative; mkdir -p $R $N
t() { local s=$(date +%s%N); "$@"; local rc=$?; echo "rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms: $*"; }
t timeout 300 python3 -B scripts/platform_runtime_check.py --device cuda --require cuda --output $R/platform-runtime-cuda.json > $R/gate.stdout 2> $R/gate.stderr
t timeout 120 python3 -B scripts/kernodeck_diagnostic.py --device gpu --host-check --output $R/kernodeck-diagnostic-gpu.json > $R/diagnostic.stdout 2>&1
(cd scripts/reprise && t timeout 300 python3 -B verify_resume.py --output $R/reprise-verification > $R/reprise.stdout 2>&1)
t env CUDA_VISIBLE_DEVICES= timeout 300 python3 -B scripts/platform_runtime_check.py --device cuda --require cuda --output $N/platform-runtime-no-visible-gpu.json > $N/gate.stdout 2> $N/gate.stderr
t env CUDA_VISIBLE_DEVICES= timeout 120 python3 -B scripts/kernodeck_diagnostic.py --device gpu --output $N/kernodeck-diagnostic-no-visible-gpu.json > $N/diagnostic.stdout 2>&1
cat $R/gate.stderr $N/gate.stderr; tail -1 $R/reprise.stdout
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 -c "import torch,sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)"; } > $R/machine.txt 2>&1
cd $OUT && tar czf cuda-run.tgz cuda negative && rm -rf cuda negative
