#!/usr/bin/env bash
# Issue 22 on a GPU: matmul peaks, fine-tuning / pretraining / SciERC throughput and MFU with --json.
# Run from the repository root on the device:  bash .gpu/run.sh            (OUT must be set)
# Locally, a CPU check of the code path:      DEVICE=cpu TINY=1 EXAMPLES=8 OUT=/tmp/gpuout bash .gpu/run.sh
# Env knobs: EXAMPLES (fine-tuning train+dev examples, default 1024), SCIERC_DOCS (160), EPOCHS (2: the benchmarks
# print MFU per epoch, so the first epoch's new shapes and the warm second are told apart), STEP_TIMEOUT (120 s),
# ONLY (space-separated step names to run; default all), SITE (wheels' --target, default /tmp/site).
set -u
set -o pipefail
: "${OUT:?OUT must be set}"
mkdir -p "$OUT/json"
exec > >(tee -a "$OUT/log.txt") 2>&1

REPO=$(pwd)
SITE=${SITE:-/tmp/site}
WHEELS=${WHEELS:-.whl}
MODELS=${MODELS:-/tmp/medibio-models}
EXAMPLES=${EXAMPLES:-1024}
SCIERC_DOCS=${SCIERC_DOCS:-160}
EPOCHS=${EPOCHS:-2}
STEP_TIMEOUT=${STEP_TIMEOUT:-120}
DEVICE=${DEVICE:-cuda}
TINY=${TINY:-}
ONLY=${ONLY:-}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
       HF_DATASETS_OFFLINE=1 HF_DATASETS_DISABLE_PROGRESS_BARS=1 TQDM_DISABLE=1 MEDIBIO_PROGRESS=0 \
       MEDIBIO_DATA="$REPO/.gpu/data" MEDIBIO_CACHE=/tmp/medibio-cache MEDIBIO_RESULTS=/tmp/medibio-results \
       HF_HOME=/tmp/hf-home
if [ "$DEVICE" = cpu ]; then export CUDA_VISIBLE_DEVICES=""; fi

stamp() { echo; echo "=== $(date -u +%H:%M:%S) $*"; }
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
# step NAME JSONFILE CMD...: run CMD under a timeout, stdout to $OUT/json/JSONFILE (and the log), stderr to the log
step() {
  local name=$1 file=$2; shift 2
  want "$name" || return 0
  stamp "step $name: $*"
  local t0=$SECONDS
  if [ -n "$file" ]; then
    timeout "$STEP_TIMEOUT" "$@" > "$OUT/json/$file" && cat "$OUT/json/$file" || echo "FAILED $name (rc $?)"
  else
    timeout "$STEP_TIMEOUT" "$@" || echo "FAILED $name (rc $?)"
  fi
  echo "--- step $name took $((SECONDS - t0)) s"
}

stamp "start on $(hostname)"
nvidia-smi || echo "no nvidia-smi"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv 2>/dev/null || true
python3 -V
python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "| transformers", transformers.__version__)'

if [ -d "$WHEELS" ] && ls "$WHEELS"/*.whl >/dev/null 2>&1 && [ "$SITE" != none ]; then
  stamp "install wheels into $SITE"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl \
    || echo "FAILED wheels"
fi
export PYTHONPATH="$REPO${SITE:+:$SITE}${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import datasets, seqeval, dill, multiprocess; import benchmarks.finetune_engine, benchmarks.scierc_speed, benchmarks.pretrain_speed; print("imports ok: datasets", datasets.__version__)' \
  || echo "FAILED imports"

step models "" python3 .gpu/make_models.py "$MODELS" ${TINY:+--tiny}
cat "$MODELS/models.json" 2>/dev/null

step peaks peaks.json python3 .gpu/peaks.py "$DEVICE" ${TINY:+--sizes 256 --seconds 0.2}

# Fine-tuning: the engine's real loop (bucketed dynamic padding), gpu profile (batch 32, eval batch 128, bf16,
# the registry's max lengths), one sequence / token / relation task, each model shape in one process.
# Each task trains EPOCHS epochs: the first is cold (every new padded length is a new shape for the GPU
# libraries), the second meets the same shapes again (the steady state of a multi-epoch run).
TASKS=${TASKS:-GAD,BC5-chem,ChemProt}
for m in bert-base-shape deberta-v3-base-shape minilm-shape; do
  step "ft-$m" "finetune-$m.json" python3 -m benchmarks.finetune_engine --only padding --modes dynamic \
    --profile gpu --tasks "$TASKS" --examples "$EXAMPLES" --epochs "$EPOCHS" --model "$MODELS/$m" --same-process --json
done
# The runs and benchmarks leave cuDNN's attention out themselves since commit 0c8fcab
# (medibio.core.precision.attention_kernels), so the ft-bert-nocudnn and scierc-nocudnn steps of the H200 runs,
# which switched it off from outside (with_sdpa.py), would only repeat ft-bert-base-shape and scierc: removed.

# Pretraining (masked LM, random token blocks): the gpu profile's config, then the paper's DeBERTa-v2-base shape
# (scideberta-v2: 128K vocabulary, 512 tokens) at a batch that fits one GPU.
if [ -n "$TINY" ]; then PT_MAIN="--configs smoke --steps 2 --warmup 1"; PT_BASE="--configs smoke --batch 2 --steps 2 --warmup 1"
else PT_MAIN="--configs gpu-mini --steps 30 --warmup 3"; PT_BASE="--configs scideberta-v2 --batch 32 --steps 10 --warmup 3"; fi
step pretrain-gpu-mini pretrain-gpu-mini.json python3 -m benchmarks.pretrain_speed --device "$DEVICE" $PT_MAIN --json
step pretrain-base pretrain-deberta-base.json python3 -m benchmarks.pretrain_speed --device "$DEVICE" $PT_BASE --json

# SciERC span model on the BERT-base shape, gpu profile (joint mode, all layers, bf16)
step scierc scierc-bert-base.json python3 -m benchmarks.scierc_speed --profile gpu --model "$MODELS/bert-base-shape" \
  --docs "$SCIERC_DOCS" --epochs "$EPOCHS"

# fp32 (no autocast) against the fp32 peak, one task, BERT-base shape
step ft-fp32 finetune-bert-base-shape-fp32.json python3 -m benchmarks.finetune_engine --only padding --modes dynamic \
  --profile gpu --tasks "$TASKS" --examples "$EXAMPLES" --epochs "$EPOCHS" --model "$MODELS/bert-base-shape" \
  --same-process --fp32 --json

stamp "bundle"
python3 - "$OUT" <<'EOF' || echo "FAILED bundle"
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
bundle = {}
for f in sorted((out / "json").glob("*.json")):
    text = f.read_text().strip()
    try:
        bundle[f.stem] = json.loads(text)
    except json.JSONDecodeError:
        try:
            bundle[f.stem] = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            bundle[f.stem] = {"unparsed": text[-4000:]}
(out / "results.json").write_text(json.dumps(bundle, indent=2))
for f in (out / "json").glob("*.json"):
    f.unlink()
(out / "json").rmdir()
print("wrote", out / "results.json", "with", ", ".join(bundle))
EOF
stamp "done"
nvidia-smi --query-gpu=name,memory.used,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv 2>/dev/null || true
sleep 1
