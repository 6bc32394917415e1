#!/usr/bin/env bash
# Times the five paper studies (issue "Speed", part 2) with one build or two
# side by side, the builds' order swapped from one study to the next, each run
# into a fresh folder with `--workers 2`; nothing else should run meanwhile.
#
#   bench/time_studies.sh OUT LABEL=THINWIRE [LABEL=THINWIRE]
#   bench/time_studies.sh /tmp/t plain=target/regress/venv-worktree/bin/thinwire \
#       pgo=target/regress/venv-worktree-pgo/bin/thinwire
#
# (`bench/regress.py --base worktree --head worktree --pgo --rounds 1` makes
# both venvs.) Each line of OUT/times.txt: label, study, wall and user seconds,
# peak memory. Compare the builds' outputs afterwards: they must be identical
# but for `wall_s` and `timing.json` (bench/RESULTS.md, 2026-12-07, fourth session).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OUT LABEL=THINWIRE [LABEL=THINWIRE]" >&2
  exit 2
fi
out=$1
shift
builds=("$@")
for b in "${builds[@]}"; do
  bin=${b#*=}
  if [ "$bin" = "$b" ] || [ ! -x "$bin" ]; then
    echo "$0: $b: want LABEL=PATH to a thinwire executable" >&2
    exit 2
  fi
done
mkdir -p "$out"
i=0
for study in shared-link-arq is707-idle-frames gsm-multilayer gprs-tcp gprs-proxy; do
  order=("${builds[@]}")
  if [ $((i % 2)) -eq 1 ] && [ ${#builds[@]} -eq 2 ]; then
    order=("${builds[1]}" "${builds[0]}")
  fi
  for b in "${order[@]}"; do
    label=${b%%=*}
    bin=${b#*=}
    rm -rf "${out:?}/$label-$study"
    /usr/bin/time -f "$label $study wall %e s user %U s maxrss %M KB" \
      "$bin" reproduce "$study" --out "$out/$label-$study" --workers 2 >"$out/$label-$study.log" 2>&1
    tail -1 "$out/$label-$study.log" | tee -a "$out/times.txt"
  done
  i=$((i + 1))
done
